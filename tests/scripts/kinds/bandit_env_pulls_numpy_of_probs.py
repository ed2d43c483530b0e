"""A contextual bandit: the policy's arm probabilities go to a pure-numpy environment as one array, which returns
the reward of a sampled arm; the policy gradient uses the log-probability of that arm and the reward as a weight."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


class ArmEnvironment:
    def __init__(self, arms):
        self.payout = rng.uniform(0.1, 0.9, size=arms)

    def pull(self, probabilities):
        arm = int(rng.choice(len(self.payout), p=probabilities / probabilities.sum()))
        return arm, float(rng.random() < self.payout[arm])


policy = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 4))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
env = ArmEnvironment(4)
for round_ in range(5):
    context = torch.randn(3)
    probs = torch.softmax(policy(context), dim=-1)
    arm, reward = env.pull(np.asarray(probs, dtype=np.float64))
    surrogate = -reward * torch.log(probs[arm])
    opt.zero_grad()
    surrogate.backward()
    opt.step()
