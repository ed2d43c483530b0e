"""Welding-seam inspection from laser line-scan profiles with a hand-written norm layer.

Source: https://discuss.pytorch.org/t/how-does-batchnorm-keeps-track-of-running-mean/40084
The author was writing batch norm from scratch in Python (for a complex-valued
network) and could not see where ``running_mean`` is updated, since the built-in layer
does it in ATen. The reply: register the affine weights as parameters and the running
estimates as buffers, like nn.BatchNorm, and update the estimates manually.

Reduction: a 1-D CNN classifies seam profiles (ok / porosity / undercut / burn-through).
Its hand-written ``SeamNorm`` keeps a running mean and a running inverse standard
deviation as buffers, normalises with them, and then updates them in place with
``mul_``/``add_`` inside forward, after the multiplication has saved the buffer for
backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

HP = {"points": 64, "classes": 4, "channels": 12, "batch": 20, "epochs": 2, "iters": 4, "lr": 0.05}


def scan_profiles(hp, n=160):
    x = torch.linspace(-1, 1, hp["points"])
    labels = torch.randint(0, hp["classes"], (n,))
    bead = 0.8 * torch.exp(-(x / 0.35) ** 2)
    profiles = bead.expand(n, -1).clone()
    profiles += 0.15 * (labels == 1).float().unsqueeze(1) * torch.sin(25 * x)
    profiles -= 0.30 * (labels == 2).float().unsqueeze(1) * torch.exp(-((x - 0.4) / 0.1) ** 2)
    profiles -= 0.50 * (labels == 3).float().unsqueeze(1) * torch.exp(-(x / 0.15) ** 2)
    profiles += 0.03 * torch.randn_like(profiles)
    return profiles.unsqueeze(1), labels


class SeamNorm(nn.Module):
    def __init__(self, channels, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(1, channels, 1))
        self.bias = nn.Parameter(torch.zeros(1, channels, 1))
        self.register_buffer("running_mean", torch.zeros(1, channels, 1))
        self.register_buffer("running_invstd", torch.ones(1, channels, 1))

    def forward(self, h):
        y = (h - self.running_mean) * self.running_invstd
        if self.training:
            mean = h.mean(dim=(0, 2), keepdim=True)
            invstd = torch.rsqrt(h.var(dim=(0, 2), keepdim=True, unbiased=False) + self.eps)
            self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
            self.running_invstd.mul_(1 - self.momentum).add_(self.momentum * invstd)
        return y * self.weight + self.bias


class SeamInspector(nn.Module):
    def __init__(self, hp):
        super().__init__()
        c = hp["channels"]
        self.conv1 = nn.Conv1d(1, c, 7, padding=3)
        self.norm1 = SeamNorm(c)
        self.conv2 = nn.Conv1d(c, c, 5, padding=2)
        self.norm2 = SeamNorm(c)
        self.head = nn.Linear(c, hp["classes"])

    def forward(self, x):
        h = F.relu(self.norm1(self.conv1(x)))
        h = F.relu(self.norm2(self.conv2(h)))
        return self.head(h.mean(dim=2))


def run_epoch(model, sgd, profiles, labels, hp):
    model.train()
    for _ in range(hp["iters"]):
        idx = torch.randint(0, profiles.shape[0], (hp["batch"],))
        logits = model(profiles[idx])
        defect_loss = F.cross_entropy(logits, labels[idx])
        sgd.zero_grad()
        defect_loss.backward()
        sgd.step()
    return defect_loss.item()


def main():
    profiles, labels = scan_profiles(HP)
    inspector = SeamInspector(HP)
    sgd = torch.optim.SGD(inspector.parameters(), lr=HP["lr"], momentum=0.9)
    for epoch in range(HP["epochs"]):
        print(f"epoch {epoch}: defect loss {run_epoch(inspector, sgd, profiles, labels, HP):.4f}")


if __name__ == "__main__":
    main()
