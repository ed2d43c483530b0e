"""Speaker-invariant features: an adversary learns to tell the speaker from the pooled features, then the
encoder and the task head take a few steps on the task from the same features.

The features are computed once per batch, before the adversary's update; the task steps reuse them, so the
second task step backpropagates into the encoder's weights that the first step changed in place.
"""

import torch
from torch import nn

torch.manual_seed(5)

encoder = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16))
head = nn.Linear(16, 4)
adversary = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
opt_task = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.05)
opt_adv = torch.optim.SGD(adversary.parameters(), lr=0.05)
TASK_STEPS = 2

for it in range(3):
    frames = torch.randn(8, 5, 20)
    labels, speakers = torch.randint(0, 4, (8,)), torch.randint(0, 3, (8,))

    feats = encoder(frames)
    pooled = feats.mean(dim=1)
    guess = adversary(pooled.detach())
    adv_loss = nn.functional.cross_entropy(guess, speakers)
    opt_adv.zero_grad()
    adv_loss.backward()
    opt_adv.step()

    for _ in range(TASK_STEPS):
        task_loss = nn.functional.cross_entropy(head(feats).mean(dim=1), labels)
        opt_task.zero_grad()
        task_loss.backward(retain_graph=True)
        opt_task.step()
    print(f"it {it}: adversary {adv_loss.item():.3f} task {task_loss.item():.3f}")
