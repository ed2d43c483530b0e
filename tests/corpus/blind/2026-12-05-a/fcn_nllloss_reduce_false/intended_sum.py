"""A fully convolutional network for semantic segmentation, trained with a per-pixel NLL loss.

Source: https://github.com/pytorch/pytorch/issues/6166
"3D loss from Fully Convolution Network (for Segmentation) backward error".
The author applied LogSoftmax(dim=1) to the (batch, classes, height, width) output of an FCN and
used NLLLoss(reduce=False) against the label maps, then called loss.backward().
Reduced: a 3-layer FCN, random 16x16 images and label maps.
Corrected, second reading: the per-pixel losses are summed into a scalar before backward.
"""

import torch
import torch.nn as nn


class FCN(nn.Module):
    def __init__(self, in_channels=3, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.classifier = nn.Conv2d(16, num_classes, 1)

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    torch.manual_seed(0)
    model = FCN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    logsoftmax = nn.LogSoftmax(dim=1)
    criterion = torch.nn.NLLLoss(reduce=False)

    images = torch.randn(12, 3, 16, 16)
    masks = torch.randint(0, 4, (12, 16, 16))
    for epoch in range(2):
        for i in range(0, 12, 4):
            inputs, labels = images[i : i + 4], masks[i : i + 4]
            optimizer.zero_grad()
            outputs = model(inputs)
            outputs = logsoftmax(outputs)
            loss = criterion(outputs, labels).sum()
            loss.backward()
            optimizer.step()
            print(epoch, i, float(loss.mean()))


if __name__ == "__main__":
    main()
