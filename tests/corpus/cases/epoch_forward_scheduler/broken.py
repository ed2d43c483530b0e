"""Mini-batch training with a OneCycle schedule; the logits of the whole training set are computed once per epoch."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(20)
N, D, C, BS, EPOCHS = 96, 10, 4, 24, 3
X_train = torch.randn(N, D)
y_train = torch.randint(0, C, (N,))

mlp = nn.Sequential(nn.Linear(D, 48), nn.SiLU(), nn.Linear(48, C))
optimizer = torch.optim.AdamW(mlp.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=EPOCHS * (N // BS))

for epoch in range(EPOCHS):
    logits = mlp(X_train)
    for start in range(0, N, BS):
        batch_loss = F.cross_entropy(logits[start : start + BS], y_train[start : start + BS])
        optimizer.zero_grad()
        batch_loss.backward()
        optimizer.step()
        scheduler.step()
    print(epoch, batch_loss.item(), scheduler.get_last_lr())
