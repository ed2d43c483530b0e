"""GAIL with a state-dependent Gaussian policy whose log-std head is clamped in place.

Report: https://github.com/toshikwa/gail-airl-ppo.pytorch/issues/13
In the GAIL/AIRL repository the policy network computes ``means, log_stds = self.net(states).chunk(2,
dim=-1)`` and then ``log_stds.clamp_(-20, 2)``; the reporter got "Output 1 of SplitBackward0 is a view
and is being modified inplace. This view is the output of a function that returns multiple views"
and found that ``clamp`` instead of ``clamp_`` makes it run. In the report the error came from the
repository's expert-training script; here the same policy class is the learner of a GAIL loop (the
training setting is the writer's): rollouts are collected under no_grad, which does not raise, and the
first policy update, which evaluates the log-probability with gradients, does.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

STATE_DIM, ACTION_DIM, HIDDEN = 6, 2, 64
ROLLOUT, EXPERT_N = 128, 512


def mlp(inp, out):
    return nn.Sequential(nn.Linear(inp, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, out))


class StateDependentPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(STATE_DIM, 2 * ACTION_DIM)

    def dist(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        log_stds = log_stds.clamp(-20, 2)
        return torch.distributions.Normal(means, log_stds.exp())

    def sample(self, states):
        return self.dist(states).sample()

    def evaluate_log_pi(self, states, actions):
        return self.dist(states).log_prob(actions).sum(-1)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(STATE_DIM + ACTION_DIM, 1)

    def forward(self, states, actions):
        return self.net(torch.cat([states, actions], -1)).squeeze(-1)

    def reward(self, states, actions):
        with torch.no_grad():
            return -F.logsigmoid(-self(states, actions))


def expert_demonstrations(n):
    states = torch.randn(n, STATE_DIM)
    actions = torch.tanh(states[:, :ACTION_DIM] - 0.5 * states[:, ACTION_DIM:2 * ACTION_DIM])
    return states, actions + 0.05 * torch.randn(n, ACTION_DIM)


def collect_rollout(policy, n):
    states = torch.randn(n, STATE_DIM)
    with torch.no_grad():
        actions = policy.sample(states)
    return states, actions


def main():
    exp_states, exp_actions = expert_demonstrations(EXPERT_N)
    policy, disc = StateDependentPolicy(), Discriminator()
    optim_actor = torch.optim.Adam(policy.parameters(), lr=3e-4)
    optim_disc = torch.optim.Adam(disc.parameters(), lr=3e-4)

    for it in range(10):
        states, actions = collect_rollout(policy, ROLLOUT)

        idx = torch.randint(0, EXPERT_N, (ROLLOUT,))
        logits_pi = disc(states, actions)
        logits_exp = disc(exp_states[idx], exp_actions[idx])
        loss_disc = F.binary_cross_entropy_with_logits(logits_pi, torch.zeros_like(logits_pi)) + \
            F.binary_cross_entropy_with_logits(logits_exp, torch.ones_like(logits_exp))
        optim_disc.zero_grad()
        loss_disc.backward()
        optim_disc.step()

        rewards = disc.reward(states, actions)
        advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-8)
        log_pis = policy.evaluate_log_pi(states, actions)
        loss_actor = -(log_pis * advantages).mean()
        optim_actor.zero_grad()
        loss_actor.backward()
        optim_actor.step()
        if it % 5 == 0:
            print(it, loss_disc.item(), loss_actor.item())


if __name__ == "__main__":
    main()
