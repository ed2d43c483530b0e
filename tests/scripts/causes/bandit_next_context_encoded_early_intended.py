"""A contextual bandit whose policy acts on encoded contexts; the next context is encoded as soon as it arrives.

The encoding of the next context runs before this round's update and is carried into the next round, whose
policy loss backpropagates through it into the encoder's weights that the update has since changed.
"""

import torch
from torch import nn

torch.manual_seed(9)
ARMS = 3

encoder = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 16))
policy = nn.Linear(16, ARMS)
optimizer = torch.optim.Adam([*encoder.parameters(), *policy.parameters()], lr=1e-2)
best_arm = torch.randn(5, ARMS)


def pull(context, arm):
    return float((context @ best_arm).argmax() == arm)


context = torch.randn(5)
features = encoder(context)
for round_ in range(6):
    dist = torch.distributions.Categorical(logits=policy(features))
    arm = dist.sample()
    reward = pull(context, int(arm))
    context = torch.randn(5)
    loss = -dist.log_prob(arm) * (reward - 0.5)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    features = encoder(context)  # the next round's features, from the updated encoder
    print(f"round {round_}: arm {int(arm)} reward {reward}")
