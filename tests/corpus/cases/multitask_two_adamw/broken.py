"""Multi-task learning: a shared encoder, a classification head and a regression head, two AdamW optimizers."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(8)

encoder = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU())
cls_head = nn.Linear(32, 5)
reg_head = nn.Linear(32, 1)

# the regression task owns the shared encoder; the classification head has its own optimizer
opt_reg = torch.optim.AdamW(list(encoder.parameters()) + list(reg_head.parameters()), lr=1e-3, weight_decay=0.01)
opt_cls = torch.optim.AdamW(cls_head.parameters(), lr=3e-3, weight_decay=0.01)

X = torch.randn(96, 16)
y_cls = torch.randint(0, 5, (96,))
y_reg = X[:, :3].sum(dim=1, keepdim=True)


def batches(bs=32):
    perm = torch.randperm(X.size(0))
    for i in range(0, X.size(0), bs):
        idx = perm[i : i + bs]
        yield X[idx], y_cls[idx], y_reg[idx]


for epoch in range(3):
    for xb, yc, yr in batches():
        feats = encoder(xb)
        cls_loss = F.cross_entropy(cls_head(feats), yc)
        reg_loss = F.smooth_l1_loss(reg_head(feats), yr)

        opt_cls.zero_grad()
        cls_loss.backward()
        opt_cls.step()

        opt_reg.zero_grad()
        reg_loss.backward()
        opt_reg.step()
    print(f"epoch {epoch}: cls {cls_loss.item():.3f} reg {reg_loss.item():.3f}")
