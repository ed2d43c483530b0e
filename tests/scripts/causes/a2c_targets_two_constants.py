"""An advantage actor-critic update over minibatches of one batch of transitions: the critic's values, computed
once before the minibatch loop, give both the advantages and the value targets."""

import torch
from torch import nn

torch.manual_seed(0)
OBS, ACTS, N = 6, 3, 48

policy = nn.Sequential(nn.Linear(OBS, 16), nn.Tanh(), nn.Linear(16, ACTS))
critic = nn.Sequential(nn.Linear(OBS, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam([*policy.parameters(), *critic.parameters()], lr=3e-3)

for round_ in range(2):
    states = torch.randn(N, OBS)
    actions = torch.randint(0, ACTS, (N,))
    rewards = torch.randn(N)
    baseline = critic(states).squeeze(-1)
    adv_all, target_all = (rewards - baseline), (rewards + 0.9 * baseline)
    for start in range(0, N, 16):
        idx = torch.arange(start, start + 16)
        logp = torch.log_softmax(policy(states[idx]), -1).gather(1, actions[idx, None]).squeeze(1)
        pg = -(logp * adv_all[idx]).mean()
        vf = (critic(states[idx]).squeeze(-1) - target_all[idx]).pow(2).mean()
        opt.zero_grad()
        (pg + 0.5 * vf).backward()
        opt.step()
