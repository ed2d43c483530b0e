import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(encoder.parameters(), lr=0.05)
bank = torch.empty(0, 8)
for it in range(5):
    x = torch.randn(16, 12)
    x_aug = x + 0.1 * torch.randn_like(x)
    q = F.normalize(encoder(x), dim=1)
    k = F.normalize(encoder(x_aug), dim=1)
    pos = (q * k).sum(1, keepdim=True)
    if len(bank):
        neg = q @ bank.t()
        logits = torch.cat([pos, neg], 1) / 0.1
    else:
        logits = pos / 0.1
    loss = F.cross_entropy(logits, torch.zeros(16, dtype=torch.long))
    opt.zero_grad()
    loss.backward()
    opt.step()
    bank = torch.cat([bank, k])[-64:]  # enqueue keys
