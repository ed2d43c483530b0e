"""Heads-up limit poker agent with an opponent-profile context, trained by REINFORCE.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/14497 -- Lightning
began running evaluation under ``torch.inference_mode()``; the reporter needed the
tensors evaluation produced in later gradient computations, and inference tensors
cannot take part in autograd ("Inference tensors cannot be saved for backward"),
so they asked for evaluation under plain no-grad instead (the ``inference_mode``
flag of the Trainer came from this request).

Here a poker agent re-profiles the opponents at each table in an evaluation pass
that is decorated with ``torch.inference_mode()`` and keeps the resulting table
context on the agent; the policy-gradient step then feeds that context to the
policy.  Synthetic hand features and payoffs stand in for a simulator.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

N_TABLES = 32
OBS_DIM = 18        # hole cards, board, pot odds, position
HIST_DIM = 24       # opponent betting-history summary
CTX_DIM = 8
N_ACTIONS = 3       # fold, call, raise
HANDS_PER_EPOCH = 4


class OpponentProfiler(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(HIST_DIM, 32), nn.ReLU(), nn.Linear(32, CTX_DIM))
        self.freq_head = nn.Linear(CTX_DIM, N_ACTIONS)

    def forward(self, hist):
        return self.body(hist)


class PokerPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.obs_enc = nn.Sequential(nn.Linear(OBS_DIM, 48), nn.ReLU())
        self.ctx_proj = nn.Linear(CTX_DIM, 48)
        self.logits = nn.Linear(48, N_ACTIONS)

    def forward(self, obs, ctx):
        h = self.obs_enc(obs) + torch.tanh(self.ctx_proj(ctx))
        return self.logits(F.relu(h))


class Agent:
    def __init__(self):
        self.policy = PokerPolicy()
        self.profiler = OpponentProfiler()
        self.policy_opt = torch.optim.Adam(self.policy.parameters(), lr=1e-3)
        self.profiler_opt = torch.optim.Adam(self.profiler.parameters(), lr=1e-3)
        self.table_ctx = None

    @torch.inference_mode()
    def evaluate_tables(self, hist):
        self.table_ctx = self.profiler(hist)
        win_rate = torch.softmax(self.profiler.freq_head(self.table_ctx), -1)[:, 0].mean()
        return win_rate.item()

    def fit_profiler(self, hist, opp_actions):
        logits = self.profiler.freq_head(self.profiler(hist))
        profile_loss = F.cross_entropy(logits, opp_actions)
        self.profiler_opt.zero_grad()
        profile_loss.backward()
        self.profiler_opt.step()
        return profile_loss.item()

    def play_and_update(self, obs, payoff_table):
        logits = self.policy(obs, self.table_ctx)
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample()
        chips = payoff_table.gather(1, actions[:, None]).squeeze(1)
        advantage = chips - chips.mean()
        pg_loss = -(dist.log_prob(actions) * advantage).mean() - 0.01 * dist.entropy().mean()
        self.policy_opt.zero_grad()
        pg_loss.backward()
        self.policy_opt.step()
        return chips.mean().item()


def synthetic_tables():
    hist = torch.randn(N_TABLES, HIST_DIM)
    opp_actions = torch.randint(0, N_ACTIONS, (N_TABLES,))
    return hist, opp_actions


def synthetic_hand():
    obs = torch.randn(N_TABLES, OBS_DIM)
    strength = obs[:, :2].sum(1, keepdim=True)
    payoff = torch.cat([torch.full((N_TABLES, 1), -0.5), strength, 2 * strength], dim=1)
    return obs, payoff


def main():
    agent = Agent()
    for epoch in range(3):
        hist, opp_actions = synthetic_tables()
        agent.fit_profiler(hist, opp_actions)
        score = agent.evaluate_tables(hist)
        total = 0.0
        for _ in range(HANDS_PER_EPOCH):
            obs, payoff = synthetic_hand()
            total += agent.play_and_update(obs, payoff)
        print(f"epoch {epoch}: eval {score:.3f} chips/hand {total / HANDS_PER_EPOCH:.3f}")


if __name__ == "__main__":
    main()
