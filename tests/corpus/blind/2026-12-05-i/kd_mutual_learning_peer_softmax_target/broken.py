"""Deep Mutual Learning: two classifiers trained together, each distilling from the other's predictions.

Source: https://github.com/chxy95/Deep-Mutual-Learning/issues/5

The author reproduces the repository's Deep Mutual Learning procedure in their own code, laid out like
the repository's ``Trainer``: ``model_num`` networks, one SGD (with a StepLR scheduler) per network. In
every batch all networks run forward once; then, for each network in turn, its loss is its
cross-entropy plus the KL divergence from the other networks' softmax outputs, and its own optimizer
is zeroed, backwarded and stepped.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def accuracy(output, target):
    return (output.argmax(dim=1) == target).float().mean() * 100.0


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        self.block = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
        )
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        out = F.relu(self.bn(self.conv(x)))
        out = F.relu(out + self.block(out))
        return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))


class Trainer:
    def __init__(self, models, optimizers, train_loader):
        self.train_loader = train_loader
        self.model_num = len(models)
        self.models, self.optimizers = models, optimizers
        self.schedulers = [optim.lr_scheduler.StepLR(opt, step_size=60, gamma=0.1) for opt in optimizers]
        self.loss_kl = nn.KLDivLoss(reduction="batchmean")
        self.loss_ce = nn.CrossEntropyLoss()

    def train_one_epoch(self, epoch):
        losses = [AverageMeter() for _ in range(self.model_num)]
        accs = [AverageMeter() for _ in range(self.model_num)]
        for net in self.models:
            net.train()
        for images, labels in self.train_loader:
            outputs = []
            for net in self.models:
                outputs.append(net(images))
            for i in range(self.model_num):
                ce_loss = self.loss_ce(outputs[i], labels)
                kl_loss = 0
                for j in range(self.model_num):
                    if i != j:
                        kl_loss += self.loss_kl(F.log_softmax(outputs[i], dim=1),
                                                F.softmax(outputs[j], dim=1))
                loss = ce_loss + kl_loss / (self.model_num - 1)
                losses[i].update(loss.item(), images.size(0))
                accs[i].update(accuracy(outputs[i].data, labels.data).item(), images.size(0))

                self.optimizers[i].zero_grad()
                loss.backward()
                self.optimizers[i].step()
        return losses, accs

    def train(self, epochs):
        for epoch in range(epochs):
            losses, accs = self.train_one_epoch(epoch)
            for scheduler in self.schedulers:
                scheduler.step()
            for i in range(self.model_num):
                print(f"epoch {epoch} model_{i + 1}: loss {losses[i].avg:.3f} acc {accs[i].avg:.1f}")


config = {"model_num": 2, "num_classes": 10, "lr": 0.1}
data = TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,)))
train_loader = DataLoader(data, batch_size=16, shuffle=True)
models = [SmallResNet(config["num_classes"]) for _ in range(config["model_num"])]
optimizers = [
    optim.SGD(net.parameters(), lr=config["lr"], momentum=0.9, weight_decay=5e-4, nesterov=True)
    for net in models
]
trainer = Trainer(models, optimizers, train_loader)
trainer.train(epochs=2)
