"""Soft actor-critic with a learned entropy temperature: the temperature is exponentiated once, in __init__.

Report: https://github.com/rail-berkeley/softlearning/issues/163
The author re-implemented SAC's automatic temperature tuning in PyTorch. Their snippet sets
``self.log_alpha = torch.tensor(0.0, requires_grad=True)``, then ``self.alpha = self.log_alpha.exp()``
once in the constructor, with an Adam optimizer over ``[self.log_alpha]``, and reports that "no matter
how I implement the temperature it crashes". Reduced here to a twin-critic SAC agent on a synthetic
replay buffer: ``self.alpha`` is one graph node made before training; the first actor loss backpropagates
through it and frees its saved result, and the second update's actor loss goes through the same node.
(The environment and network sizes are the writer's; the temperature code is the report's.)
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

OBS_DIM, ACT_DIM, HIDDEN = 8, 2, 64
GAMMA, TAU, BATCH = 0.99, 0.005, 32


def mlp(inp, out):
    return nn.Sequential(nn.Linear(inp, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, out))


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = mlp(OBS_DIM, HIDDEN)
        self.mu = nn.Linear(HIDDEN, ACT_DIM)
        self.log_std = nn.Linear(HIDDEN, ACT_DIM)

    def forward(self, obs):
        h = F.relu(self.trunk(obs))
        mu, log_std = self.mu(h), self.log_std(h).clamp(-20, 2)
        dist = torch.distributions.Normal(mu, log_std.exp())
        u = dist.rsample()
        action = torch.tanh(u)
        logp = dist.log_prob(u).sum(-1) - torch.log(1 - action.pow(2) + 1e-6).sum(-1)
        return action, logp


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = mlp(OBS_DIM + ACT_DIM, 1)

    def forward(self, obs, act):
        return self.q(torch.cat([obs, act], -1)).squeeze(-1)


class ReplayBuffer:
    def __init__(self, size=512):
        self.obs = torch.randn(size, OBS_DIM)
        self.act = torch.rand(size, ACT_DIM) * 2 - 1
        self.rew = torch.randn(size)
        self.next_obs = torch.randn(size, OBS_DIM)
        self.done = (torch.rand(size) < 0.05).float()

    def sample(self, n):
        idx = torch.randint(0, len(self.obs), (n,))
        return self.obs[idx], self.act[idx], self.rew[idx], self.next_obs[idx], self.done[idx]


class SAC:
    def __init__(self):
        self.actor = Actor()
        self.q1, self.q2 = Critic(), Critic()
        self.q1_targ, self.q2_targ = copy.deepcopy(self.q1), copy.deepcopy(self.q2)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=3e-4)
        self.critic_opt = torch.optim.Adam(list(self.q1.parameters()) + list(self.q2.parameters()), lr=3e-4)
        self.target_entropy = -float(ACT_DIM)
        self.log_alpha = torch.tensor(0.0, requires_grad=True)
        self.alpha = self.log_alpha.exp()
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=3e-4)

    def update(self, batch):
        obs, act, rew, next_obs, done = batch
        with torch.no_grad():
            next_act, next_logp = self.actor(next_obs)
            q_next = torch.min(self.q1_targ(next_obs, next_act), self.q2_targ(next_obs, next_act))
            target = rew + GAMMA * (1 - done) * (q_next - self.alpha * next_logp)
        critic_loss = F.mse_loss(self.q1(obs, act), target) + F.mse_loss(self.q2(obs, act), target)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        new_act, logp = self.actor(obs)
        q_pi = torch.min(self.q1(obs, new_act), self.q2(obs, new_act))
        actor_loss = (self.alpha * logp - q_pi).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()

        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()

        with torch.no_grad():
            for net, targ in ((self.q1, self.q1_targ), (self.q2, self.q2_targ)):
                for p, tp in zip(net.parameters(), targ.parameters()):
                    tp.mul_(1 - TAU).add_(TAU * p)
        return critic_loss.item(), actor_loss.item(), alpha_loss.item()


def main():
    agent = SAC()
    buffer = ReplayBuffer()
    for it in range(20):
        losses = agent.update(buffer.sample(BATCH))
        if it % 5 == 0:
            print(it, ["%.3f" % v for v in losses])


if __name__ == "__main__":
    main()
