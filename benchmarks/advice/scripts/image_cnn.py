"""Image classifier: a small CNN with a squeeze-excitation gate on synthetic 12x12 images of four classes."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_dataset(n=96):
    """Class k has a bright 6x6 square in corner k; everything else is noise."""
    labels = torch.randint(0, 4, (n,))
    images = 0.3 * torch.randn(n, 1, 12, 12)
    for i, k in enumerate(labels.tolist()):
        r, c = divmod(k, 2)
        images[i, 0, r * 6 : r * 6 + 6, c * 6 : c * 6 + 6] += 1.0
    return images, labels


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=2):
        super().__init__()
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)

    def forward(self, x):
        w = x.mean(dim=(2, 3))
        w = F.relu(self.fc1(w))
        w = torch.sigmoid(self.fc2(w))
        x = x * w[:, :, None, None]
        return x


class SmallCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv_res = nn.Conv2d(8, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.se = SqueezeExcite(16)
        self.dropout = nn.Dropout(0.25)
        self.head = nn.Linear(16 * 3 * 3, n_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        y = F.relu(self.conv_res(x))
        y = y + x
        x = torch.tanh(self.conv2(y))
        x = self.se(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout(x.flatten(1))
        return self.head(x)


def train_one_epoch(model, batches, optimizer):
    model.train()
    total = 0.0
    for images, labels in batches:
        optimizer.zero_grad()
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(batches)


@torch.no_grad()
def accuracy(model, images, labels):
    model.eval()
    return (model(images).argmax(1) == labels).float().mean().item()


def main():
    images, labels = make_dataset()
    batches = list(zip(images.split(32), labels.split(32)))
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(3):
        loss = train_one_epoch(model, batches, optimizer)
        print(f"epoch {epoch}: loss {loss:.3f} accuracy {accuracy(model, images, labels):.2f}")


if __name__ == "__main__":
    main()
