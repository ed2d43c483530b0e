"""Multi-stage bean-temperature curve model for a drum coffee roaster.

Source: https://github.com/MC-E/Deep-Generalized-Unfolding-Networks-for-Image-Restoration/issues/6
The repository's training loop sums the per-stage losses of its multi-stage
restoration network with ``np.sum([criterion_char(restored[j], target) for j
in range(len(restored))])`` (and the same for the edge loss). The reporter's
run stops there with a tensor-to-numpy conversion error; their own rewrite,
``torch.tensor([...], requires_grad=True).sum()``, ran but no longer trained.
The stage losses have to be summed as tensors.

Reduction: the writer's setting is roast profiling. From the charge conditions
(charge temperature, batch mass, moisture, ambient) and the operator's gas
schedule, three stages successively refine a 60-point bean-temperature curve;
every stage is supervised with a Charbonnier loss on the curve and one on its
rate of rise (RoR), the roaster's analogue of the edge loss, summed over
stages with ``np.sum`` as in the report.
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(5)

ROAST = {
    "n_points": 60,
    "n_cond": 4,
    "hidden": 64,
    "n_stages": 3,
    "ror_weight": 0.05,
    "lr": 2e-3,
    "batch": 32,
    "epochs": 4,
}


def simulate_roasts(n, cfg):
    """Charge conditions, gas schedule (per point) and the resulting bean temperature in deg C / 100."""
    t = torch.linspace(0.0, 1.0, cfg["n_points"])
    charge = 1.9 + 0.2 * torch.rand(n, 1)
    mass = 0.5 + 0.5 * torch.rand(n, 1)
    moisture = 0.09 + 0.03 * torch.rand(n, 1)
    ambient = 0.15 + 0.1 * torch.rand(n, 1)
    gas = 0.4 + 0.4 * torch.sigmoid(8 * (t - 0.3 - 0.2 * torch.rand(n, 1)))
    turning = charge * torch.exp(-12 * t) + 0.9 * (1 - torch.exp(-12 * t))
    heating = torch.cumsum(gas, dim=1) / cfg["n_points"] * (1.6 - mass - 3 * moisture)
    bean = turning + heating + 0.2 * ambient + 0.01 * torch.randn(n, cfg["n_points"])
    cond = torch.cat([charge, mass, moisture, ambient], dim=1)
    return cond, gas, bean


class CharbonnierLoss(nn.Module):
    def __init__(self, eps=1e-3):
        super().__init__()
        self.eps = eps

    def forward(self, pred, target):
        return torch.mean(torch.sqrt((pred - target) ** 2 + self.eps ** 2))


class RateOfRiseLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.char = CharbonnierLoss()

    def forward(self, pred, target):
        return self.char(pred[:, 1:] - pred[:, :-1], target[:, 1:] - target[:, :-1])


class RefineStage(nn.Module):
    def __init__(self, n_points, n_cond, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * n_points + n_cond, hidden), nn.GELU(),
                                 nn.Linear(hidden, n_points))

    def forward(self, curve, gas, cond):
        return curve + self.net(torch.cat([curve, gas, cond], dim=1))


class RoastCurveNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.init_curve = nn.Linear(cfg["n_cond"] + cfg["n_points"], cfg["n_points"])
        self.stages = nn.ModuleList(RefineStage(cfg["n_points"], cfg["n_cond"], cfg["hidden"])
                                    for _ in range(cfg["n_stages"]))

    def forward(self, cond, gas):
        curve = self.init_curve(torch.cat([cond, gas], dim=1))
        restored = []
        for stage in self.stages:
            curve = stage(curve, gas, cond)
            restored.append(curve)
        return restored[::-1]


def run_epoch(model, optimizer, data, cfg, criterion_char, criterion_ror):
    cond, gas, bean = data
    perm = torch.randperm(cond.shape[0])
    total = 0.0
    for start in range(0, cond.shape[0], cfg["batch"]):
        idx = perm[start:start + cfg["batch"]]
        target = bean[idx]
        restored = model(cond[idx], gas[idx])
        loss_char = np.sum([criterion_char(restored[j], target) for j in range(len(restored))])
        loss_ror = np.sum([criterion_ror(restored[j], target) for j in range(len(restored))])
        loss = loss_char + cfg["ror_weight"] * loss_ror
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * idx.numel()
    return total / cond.shape[0]


def main():
    cfg = ROAST
    data = simulate_roasts(160, cfg)
    model = RoastCurveNet(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    criterion_char, criterion_ror = CharbonnierLoss(), RateOfRiseLoss()
    for epoch in range(cfg["epochs"]):
        print(f"epoch {epoch}: loss {run_epoch(model, optimizer, data, cfg, criterion_char, criterion_ror):.4f}")


if __name__ == "__main__":
    main()
