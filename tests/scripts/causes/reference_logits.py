"""Policy refinement with a KL penalty to the policy as it was at the start of the round."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(5)
policy = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 4))
optim = torch.optim.SGD(policy.parameters(), lr=0.1)
states = torch.randn(32, 3)


def refine(policy, optim, states, reference_logits, n_updates=3):
    for k in range(n_updates):
        logits = policy(states)
        kl = F.kl_div(F.log_softmax(logits, -1), F.softmax(reference_logits, -1), reduction="batchmean")
        objective = -logits.max(-1).values.mean() + 2.0 * kl
        optim.zero_grad()
        objective.backward()
        optim.step()


for rnd in range(2):
    reference_logits = policy(states)
    refine(policy, optim, states, reference_logits)
