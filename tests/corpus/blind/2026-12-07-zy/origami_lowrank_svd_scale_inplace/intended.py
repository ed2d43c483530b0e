"""Origami crease-pattern recognition with a classifier kept low-rank by a truncated SVD in the forward.

Reduced from jcmgray/symmray pull request #2
(https://github.com/jcmgray/symmray/pull/2), "change in-place operation x*=y to
x = x*y in truncated-SVD": symmray's truncated SVD absorbed the singular
values into the singular vectors with an in-place multiply, so with the torch
backend the backward through the SVD failed (torch's SVD backward needs the
U it returned, unchanged). The PR replaced ``x *= y`` by ``x = x * y``.

The writer's setting: rasterised crease patterns (mountain/valley folds on a
16x16 grid) are classified into base families (bird, frog, waterbomb, ...);
the classifier weight is projected to rank ``k`` every forward by a truncated
SVD whose singular values are split between the two factors, as symmray's
``absorb`` option does (the report is a tensor-network library, the training
setting is the writer's).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

N_BASES, GRID, RANK = 6, 16, 3


class TruncatedLinear(nn.Module):
    def __init__(self, d_in, d_out, rank):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_out, d_in) / d_in ** 0.5)
        self.bias = nn.Parameter(torch.zeros(d_out))
        self.rank = rank

    def factors(self):
        U, S, Vh = torch.linalg.svd(self.weight, full_matrices=False)
        U, S, Vh = U[:, : self.rank], S[: self.rank], Vh[: self.rank]
        s_half = S.sqrt()
        U = U * s_half
        Vh = s_half[:, None] * Vh
        return U, Vh

    def forward(self, x):
        U, Vh = self.factors()
        return (x @ Vh.T) @ U.T + self.bias


class CreaseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(2, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
        )
        self.classifier = TruncatedLinear(64, N_BASES, RANK)

    def forward(self, creases):
        return self.classifier(self.features(creases).flatten(1))


def synth_patterns(n):
    labels = torch.randint(0, N_BASES, (n,))
    yy, xx = torch.meshgrid(torch.arange(GRID), torch.arange(GRID), indexing="ij")
    angle = labels.float()[:, None, None] * 0.5
    mountain = (torch.sin(xx * angle.cos() + yy * angle.sin()) > 0.6).float()
    valley = (torch.cos(xx - yy + labels[:, None, None].float()) > 0.7).float()
    creases = torch.stack([mountain, valley], dim=1) + 0.1 * torch.randn(n, 2, GRID, GRID)
    return creases, labels


def fit(model, data, epochs=3, batch=32):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    creases, labels = data
    for epoch in range(epochs):
        for i in range(0, len(labels), batch):
            logits = model(creases[i:i + batch])
            base_loss = F.cross_entropy(logits, labels[i:i + batch])
            optimizer.zero_grad()
            base_loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: {base_loss.item():.3f}")


if __name__ == "__main__":
    fit(CreaseNet(), synth_patterns(96))
