"""An evaluation-style no_grad block left around the training steps."""

import torch
from torch import nn


def fit(model, optimizer, batches):
    with torch.no_grad():
        for x, y in batches:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()


torch.manual_seed(7)
classifier = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1, momentum=0.9)
batches = [(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(3)]
fit(classifier, optimizer, batches)
