"""Contrastive text retrieval: the queries whose nearest wrong document is too close are selected with numpy, and
the margin loss is taken on those rows only."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(12)
query_tower = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
doc_tower = nn.Linear(10, 8)
params = [*query_tower.parameters(), *doc_tower.parameters()]
sgd = torch.optim.SGD(params, lr=0.05)
for _ in range(3):
    q, d = torch.randn(32, 10), torch.randn(32, 10)
    qe, de = F.normalize(query_tower(q), dim=1), F.normalize(doc_tower(d), dim=1)
    sims = qe @ de.t()
    pos = sims.diagonal()
    neg = (sims - 2 * torch.eye(32)).max(1).values
    hard = np.flatnonzero((neg - pos).detach().numpy() > -0.5)
    pos_h = torch.from_numpy(pos.detach().numpy()[hard])
    neg_h = torch.from_numpy(neg.detach().numpy()[hard])
    margin_loss = F.relu(0.5 + neg_h - pos_h).mean()
    sgd.zero_grad()
    margin_loss.backward()
    sgd.step()
    print(f"{margin_loss.item():.4f} {len(hard)}")
