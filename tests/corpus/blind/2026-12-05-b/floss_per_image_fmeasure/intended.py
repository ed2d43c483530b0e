"""Salient object detection trained with the F-measure loss (FLoss) of "Optimizing the F-measure for Threshold-free Salient Object Detection".

Source: https://github.com/zeakey/iccv2019-fmeasure/issues/1 "floss how to backward?".
The reporter trained a saliency network with the repository's PyTorch ``FLoss`` module
(``pytorch/floss.py``) in place of a cross-entropy loss: ``loss = fl(output, target);
loss.backward()``. Reduced: a 4-layer encoder-decoder with a sigmoid output, random 32x32 images and
binary masks.
Corrected as the thread settles it: the per-image F-measure losses are averaged
(``loss.mean().backward()``).
"""

import torch
from torch import nn


class FLoss(nn.Module):
    def __init__(self, beta=0.3, log_like=False):
        super().__init__()
        self.beta = beta
        self.log_like = log_like

    def forward(self, prediction, target):
        EPS = 1e-10
        N = prediction.size(0)
        TP = (prediction * target).view(N, -1).sum(dim=1)
        H = self.beta * target.view(N, -1).sum(dim=1) + prediction.view(N, -1).sum(dim=1)
        fmeasure = (1 + self.beta) * TP / (H + EPS)
        floss = -torch.log(fmeasure) if self.log_like else 1 - fmeasure
        return floss


class SaliencyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 2, stride=2),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 2, stride=2),
        )

    def forward(self, x):
        return torch.sigmoid(self.decoder(self.encoder(x)))


def train_epoch(model, fl, optimizer, images, masks, batch_size=4):
    model.train()
    for i in range(0, images.size(0), batch_size):
        output = model(images[i : i + batch_size])
        target = masks[i : i + batch_size]
        loss = fl(output, target).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(i, loss.detach().mean().item())


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SaliencyNet()
    fl = FLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(12, 3, 32, 32)
    masks = (torch.rand(12, 1, 32, 32) > 0.7).float()
    for _epoch in range(2):
        train_epoch(model, fl, optimizer, images, masks)
