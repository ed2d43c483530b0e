"""The classifier's loss scores the features again, detached: the encoder's loss keeps its adversarial term."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(17)
enc = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 4))
task_head = nn.Linear(4, 3)
clf = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_e = torch.optim.Adam([*enc.parameters(), *task_head.parameters()], lr=1e-3)
opt_c = torch.optim.Adam(clf.parameters(), lr=1e-3)


def batches(n):
    for _ in range(n):
        x = torch.randn(16, 6)
        yield x, torch.randint(0, 3, (16,)), (torch.rand(16, 1) > 0.5).float()


for x, y, domain in batches(3):
    feat = enc(x)
    dom = clf(feat)
    enc_loss = F.cross_entropy(task_head(feat), y) - 0.1 * F.binary_cross_entropy_with_logits(dom, domain)
    opt_e.zero_grad()
    enc_loss.backward(retain_graph=True)
    opt_e.step()
    clf_loss = F.binary_cross_entropy_with_logits(clf(feat.detach()), domain)
    opt_c.zero_grad()
    clf_loss.backward()
    opt_c.step()
