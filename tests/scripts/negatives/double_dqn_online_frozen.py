"""Double DQN fine-tuning from a checkpoint. The online network is loaded with the helper the evaluation script uses,
which freezes it (eval mode, requires_grad_(False)); the target network is a frozen copy, as usual. The target picks
the next action with the online network's argmax and scores it with the target network (gather). The loss has no
graph because the online network is frozen: the argmax is the standard Double DQN target, not a cut."""

import copy

import torch
import torch.nn.functional as F
from torch import nn


def load_policy(state_dict=None):
    net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    if state_dict is not None:
        net.load_state_dict(state_dict)
    return net.eval().requires_grad_(False)


torch.manual_seed(0)
online = load_policy()
target = copy.deepcopy(online).requires_grad_(False)
opt = torch.optim.Adam(online.parameters(), lr=1e-3)
gamma = 0.99
for _step in range(3):
    s, a = torch.randn(32, 4), torch.randint(0, 2, (32, 1))
    r, s2, done = torch.randn(32, 1), torch.randn(32, 4), torch.zeros(32, 1)
    q = online(s).gather(1, a)
    next_a = online(s2).argmax(1, keepdim=True)
    next_q = target(s2).gather(1, next_a)
    y = r + gamma * (1 - done) * next_q
    loss = F.smooth_l1_loss(q, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
