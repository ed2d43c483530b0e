"""Contour-line extraction from scanned topographic map tiles with a per-pixel weighted loss that is never reduced.

Reduced from the PyTorch forum thread
https://discuss.pytorch.org/t/runtimeerror-grad-can-be-implicitly-created-only-for-scalar-outputs/21217
("RuntimeError: grad can be implicitly created only for scalar outputs").  The author's
``loss = criterion(pred, label)`` came back as a tensor with one value per element and
``loss.backward()`` raised the error; the answer: "I assume you are not summing up /
reducing the loss-value in any other (manual) way?" -- either reduce the loss to a scalar or
pass an explicit gradient (``loss.backward(torch.ones_like(loss))``).  The intent is an
ordinary scalar training loss: the mean over pixels.

Reduction: a small fully convolutional net predicts, per pixel, whether a scanned map tile
shows a contour line; the criterion is ``BCEWithLogitsLoss(reduction="none")`` so that the
pixels under map lettering and hill shading can be down-weighted, and the weighted per-pixel
map is handed straight to ``backward``.  Synthetic tiles (ring-shaped contours plus noise),
SGD with momentum, a few epochs of mini-batches.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

CFG = {"n_tiles": 48, "size": 24, "channels": 16, "batch": 8, "epochs": 3, "lr": 0.05,
       "label_weight": 0.2}


def make_tiles(cfg):
    n, s = cfg["n_tiles"], cfg["size"]
    yy, xx = torch.meshgrid(torch.arange(s, dtype=torch.float32), torch.arange(s, dtype=torch.float32), indexing="ij")
    centres = torch.rand(n, 2) * s
    r = ((yy - centres[:, 0, None, None]) ** 2 + (xx - centres[:, 1, None, None]) ** 2).sqrt()
    spacing = 3.0 + torch.rand(n, 1, 1) * 2.0
    contour = ((r % spacing) < 0.8).float()
    shading = torch.rand(n, 1, 1) * (xx / s)
    lettering = (torch.rand(n, s, s) < 0.04).float()
    scan = contour * 0.8 + shading * 0.5 + lettering * 0.7 + 0.1 * torch.randn(n, s, s)
    weight = torch.where(lettering > 0, torch.full_like(scan, cfg["label_weight"]), torch.ones_like(scan))
    return scan.unsqueeze(1), contour.unsqueeze(1), weight.unsqueeze(1)


class ContourNet(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.encode = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(),
                                    nn.Conv2d(c, c, 3, padding=2, dilation=2), nn.ReLU())
        self.decode = nn.Conv2d(c, 1, 1)

    def forward(self, x):
        return self.decode(self.encode(x))


def main():
    cfg = CFG
    scans, labels, weights = make_tiles(cfg)
    net = ContourNet(cfg["channels"])
    criterion = nn.BCEWithLogitsLoss(reduction="none")
    optimizer = torch.optim.SGD(net.parameters(), lr=cfg["lr"], momentum=0.9)
    for epoch in range(cfg["epochs"]):
        perm = torch.randperm(cfg["n_tiles"])
        for start in range(0, cfg["n_tiles"], cfg["batch"]):
            idx = perm[start:start + cfg["batch"]]
            pred = net(scans[idx])
            loss = (criterion(pred, labels[idx]) * weights[idx]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.mean().item():.4f}")


if __name__ == "__main__":
    main()
