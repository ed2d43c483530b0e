"""A classifier trained by a train_one_epoch function; the optimizer step sits between the forward and the backward."""

import torch
import torch.nn as nn


def make_loader(n=64, bs=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 6, generator=g)
    y = (X[:, 0] > 0).long()
    return [(X[i : i + bs], y[i : i + bs]) for i in range(0, n, bs)]


def train_one_epoch(model, optimizer, loader, criterion):
    model.train()
    total = 0.0
    for inputs, labels in loader:
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


def main():
    torch.manual_seed(17)
    classifier = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    loader = make_loader()
    for epoch in range(3):
        print(epoch, train_one_epoch(classifier, optimizer, loader, criterion))


if __name__ == "__main__":
    main()
