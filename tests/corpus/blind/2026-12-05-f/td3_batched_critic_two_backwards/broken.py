"""Reduced from https://github.com/pytorch/rl/issues/1187

The author took a working DDPG script with separate actor and critic optimizers and repurposed
it for TD3: loss = loss_module(batch); loss["loss_actor"].backward() and the actor's step, then
loss["loss_qvalue"].backward() and the critic's step. The second backward raised "Trying to
backward through the graph a second time". TD3Loss at the time computed both losses from one
batched (vmapped) evaluation of the twin Q-networks over the replay actions and the actor's
actions, so the two losses shared the critic's graph. The fix (torchrl PR #1240 and the split
into actor_loss / value_loss) evaluates the critic separately for each loss, as the DDPG script
the author started from did.

Here the same TD3 written without torchrl: a loss module that evaluates the twin critic once on
the replay actions and the policy's actions stacked together, a synthetic replay buffer, two
optimizers.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

OBS_DIM, ACT_DIM = 6, 2


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                                 nn.Linear(32, ACT_DIM), nn.Tanh())

    def forward(self, obs):
        return self.net(obs)


class TwinQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.q1 = nn.Sequential(nn.Linear(OBS_DIM + ACT_DIM, 32), nn.ReLU(), nn.Linear(32, 1))
        self.q2 = nn.Sequential(nn.Linear(OBS_DIM + ACT_DIM, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs, act):
        sa = torch.cat([obs, act], dim=-1)
        return self.q1(sa).squeeze(-1), self.q2(sa).squeeze(-1)


class TD3Loss:
    def __init__(self, actor_network, qvalue_network, gamma=0.99, policy_noise=0.2, noise_clip=0.5):
        self.actor_network = actor_network
        self.qvalue_network = qvalue_network
        self.target_actor_network = copy.deepcopy(actor_network).requires_grad_(False)
        self.target_qvalue_network = copy.deepcopy(qvalue_network).requires_grad_(False)
        self.gamma, self.policy_noise, self.noise_clip = gamma, policy_noise, noise_clip

    def __call__(self, batch):
        obs, act, rew, next_obs, done = batch
        noise = (torch.randn_like(act) * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
        with torch.no_grad():
            next_act = (self.target_actor_network(next_obs) + noise).clamp(-1.0, 1.0)
            next_q1, next_q2 = self.target_qvalue_network(next_obs, next_act)
            target_value = rew + self.gamma * (1.0 - done) * torch.min(next_q1, next_q2)

        actor_act = self.actor_network(obs)
        # one critic evaluation for both losses: replay actions and the actor's actions stacked
        q1, q2 = self.qvalue_network(torch.cat([obs, obs]), torch.cat([act, actor_act]))
        n = obs.shape[0]
        loss_actor = -q1[n:].mean()
        loss_qvalue = F.smooth_l1_loss(q1[:n], target_value) + F.smooth_l1_loss(q2[:n], target_value)
        return {"loss_actor": loss_actor, "loss_qvalue": loss_qvalue}

    @torch.no_grad()
    def update_targets(self, tau=0.005):
        for net, target in ((self.actor_network, self.target_actor_network),
                            (self.qvalue_network, self.target_qvalue_network)):
            for p, p_t in zip(net.parameters(), target.parameters()):
                p_t.mul_(1 - tau).add_(tau * p)


class ReplayBuffer:
    def __init__(self, size=512):
        self.obs = torch.randn(size, OBS_DIM)
        self.act = torch.rand(size, ACT_DIM) * 2 - 1
        self.rew = -(self.obs[:, :ACT_DIM] - self.act).pow(2).sum(-1)
        self.next_obs = self.obs + 0.1 * torch.randn(size, OBS_DIM)
        self.done = (torch.rand(size) < 0.05).float()

    def sample(self, batch_size):
        idx = torch.randint(0, self.obs.shape[0], (batch_size,))
        return self.obs[idx], self.act[idx], self.rew[idx], self.next_obs[idx], self.done[idx]


actor = Actor()
qvalue = TwinQ()
loss_module = TD3Loss(actor, qvalue)
actor_optim = torch.optim.Adam(actor.parameters(), lr=3e-4)
qvalue_optim = torch.optim.Adam(qvalue.parameters(), lr=3e-4)
rb = ReplayBuffer()

for i in range(200):
    batch = rb.sample(64)
    loss = loss_module(batch)

    actor_optim.zero_grad()
    loss["loss_actor"].backward()
    actor_optim.step()

    qvalue_optim.zero_grad()
    loss["loss_qvalue"].backward()
    qvalue_optim.step()

    loss_module.update_targets()
    if i % 100 == 0:
        print(i, loss["loss_actor"].item(), loss["loss_qvalue"].item())
