"""Juggling patterns: a GRU policy that writes siteswap throw sequences, tuned by REINFORCE.

Source: https://github.com/isayev/ReLeaSE/issues/39 ("Weights are not updating").
The user changed ReLeaSE's reinforcement step to accumulate
``rl_loss -= log_probs[0, top_i].item() * discounted_reward`` (and a
``.cpu().detach().numpy()`` variant) to get round a CUDA-to-numpy error; the
gradients of every layer then came back as None. The maintainer answered that
this detaches ``rl_loss`` from the graph and leaves nothing to backpropagate.

Reduction: the same reinforcement step on a smaller generator. The setting is the
writer's: instead of SMILES strings the generator writes vanilla siteswaps (throw
heights 0-7 over a fixed period), and the reward scores a pattern as juggleable
(no two throws land on the same beat) with a bonus for using the target number of
balls. The loss accumulator starts as a zero tensor, so the detached sum reaches
``backward()`` as a tensor that does not require grad.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

MAX_THROW = 8
PERIOD = 5
SETUP = {"hidden": 32, "n_patterns": 6, "gamma": 0.97, "target_balls": 3, "lr": 5e-3, "iterations": 4}


class SiteswapGenerator(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.embed = nn.Embedding(MAX_THROW + 1, 16)
        self.rnn = nn.GRUCell(16, hidden)
        self.out = nn.Linear(hidden, MAX_THROW)
        self.hidden = hidden

    def init_state(self):
        return torch.zeros(1, self.hidden), torch.tensor([MAX_THROW])

    def step(self, token, h):
        h = self.rnn(self.embed(token), h)
        return torch.log_softmax(self.out(h), dim=-1), h


def juggleability(pattern, target_balls):
    n = len(pattern)
    landings = {(i + t) % n for i, t in enumerate(pattern)}
    collisions = n - len(landings)
    balls = sum(pattern) / n
    reward = 1.0 - 0.4 * collisions
    if collisions == 0 and abs(balls - target_balls) < 1e-6:
        reward += 1.0
    return reward


def sample_pattern(generator):
    h, token = generator.init_state()
    throws, log_probs = [], []
    for _ in range(PERIOD):
        logp, h = generator.step(token, h)
        token = torch.multinomial(logp.exp(), 1).squeeze(-1)
        throws.append(int(token))
        log_probs.append(logp)
    return throws, torch.cat(log_probs, dim=0)


def policy_gradient_step(generator, optimizer, cfg):
    rl_loss = torch.tensor(0.0)
    total_reward = 0.0
    for _ in range(cfg["n_patterns"]):
        throws, log_probs = sample_pattern(generator)
        reward = juggleability(throws, cfg["target_balls"])
        total_reward += reward
        discounted_reward = reward
        for p in range(PERIOD - 1, -1, -1):
            top_i = throws[p]
            rl_loss = rl_loss - log_probs[p, top_i] * discounted_reward
            discounted_reward = discounted_reward * cfg["gamma"]
    rl_loss = rl_loss / cfg["n_patterns"]
    optimizer.zero_grad()
    rl_loss.backward()
    optimizer.step()
    return total_reward / cfg["n_patterns"], rl_loss.item()


def main():
    cfg = SETUP
    generator = SiteswapGenerator(cfg["hidden"])
    optimizer = torch.optim.Adam(generator.parameters(), lr=cfg["lr"])
    for it in range(cfg["iterations"]):
        mean_reward, loss_value = policy_gradient_step(generator, optimizer, cfg)
        print(f"iteration {it}: mean reward {mean_reward:.3f} loss {loss_value:.3f}")


if __name__ == "__main__":
    main()
