"""The intended training of functional_relu_after_inplace_module.py: the helper rectifies out of place.

A conv block that ends in nn.ReLU(inplace=True), then a pooling helper that rectifies its input again with
F.relu_: the second write overwrites the output the first ReLU saved for its backward."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm1d(8)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


def pooled(features):
    features = F.relu(features)
    return features.mean(dim=-1)


block = Block()
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.05)
for it in range(3):
    x, y = torch.randn(6, 3, 10), torch.randn(6, 1)
    score = F.mse_loss(head(pooled(block(x))), y)
    opt.zero_grad()
    score.backward()
    opt.step()
    print(it, round(score.item(), 4))
