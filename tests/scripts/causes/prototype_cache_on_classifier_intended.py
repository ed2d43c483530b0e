"""The prototypes computed again at each batch, from the label table as the step left it."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(9)


class ProtoClassifier(nn.Module):
    def __init__(self, n_labels=5, dim=6):
        super().__init__()
        self.labels = nn.Embedding(n_labels, dim)
        self.mix = nn.Linear(dim, dim)
        self.encoder = nn.Linear(4, dim)
        self._protos = {}

    def prototypes(self, task):
        return torch.tanh(self.mix(self.labels.weight))

    def forward(self, x, task="train"):
        return self.encoder(x) @ self.prototypes(task).t()


clf = ProtoClassifier()
adam = torch.optim.Adam(clf.parameters(), lr=1e-2)


def step(x, y):
    ce = F.cross_entropy(clf(x), y)
    adam.zero_grad()
    ce.backward()
    adam.step()


for _ in range(3):
    step(torch.randn(8, 4), torch.randint(0, 5, (8,)))
