"""Dairy herd monitoring: milk-yield regression trained with a hand-written SAM step.

Source: https://github.com/google-research/sam/issues/17

The report ("Something wrong before the second loss backward") trains with
sharpness-aware minimisation and fails at the second backward with "one of the
variables needed for gradient computation has been modified by an inplace
operation: [torch.cuda.FloatTensor [64, 1]], which is output 0 of TBackward, is at
version 2; expected version 1". SAM's first step moves every weight in place to
w + e(w); the second loss must come from a new forward at the moved weights.
This script reduces that to a dairy setting: per-cow sensor features (rumination,
activity, parlour conductivity, days in milk) go through a small MLP to predict
next-day milk yield. The trainer writes the SAM ascent and descent by hand,
and builds the sharpness loss from the predictions of the forward it already ran,
after the in-place ascent on the weights.
"""
import torch
import torch.nn as nn

HERD = {
    "cows": 64,
    "features": 6,
    "hidden": 64,
    "rho": 0.05,
    "lr": 0.05,
    "days": 3,
}


def simulate_parlour_day(n_cows, n_feat):
    sensors = torch.randn(n_cows, n_feat)
    base = 28.0 + 3.0 * sensors[:, 0] - 2.0 * sensors[:, 3].abs()
    yield_kg = (base + 0.5 * torch.randn(n_cows)).unsqueeze(1) / 30.0
    return sensors, yield_kg


class YieldNet(nn.Module):
    def __init__(self, n_feat, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_feat, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.body(x)


class HandSAM:
    def __init__(self, params, lr, rho):
        self.params = [p for p in params if p.requires_grad]
        self.base = torch.optim.SGD(self.params, lr=lr, momentum=0.9)
        self.rho = rho
        self.offsets = {}

    def _grad_norm(self):
        return torch.norm(torch.stack([p.grad.norm(2) for p in self.params if p.grad is not None]), 2)

    @torch.no_grad()
    def ascend(self):
        scale = self.rho / (self._grad_norm() + 1e-12)
        for p in self.params:
            if p.grad is None:
                continue
            e_w = p.grad * scale
            p.add_(e_w)
            self.offsets[p] = e_w
        self.base.zero_grad()

    @torch.no_grad()
    def _restore(self):
        for p, e_w in self.offsets.items():
            p.sub_(e_w)
        self.offsets.clear()

    def descend(self):
        self._restore()
        self.base.step()
        self.base.zero_grad()


def run_day(model, sam, sensors, yield_kg, criterion):
    pred = model(sensors)
    fit_loss = criterion(pred, yield_kg)
    fit_loss.backward(retain_graph=True)
    sam.ascend()

    sharp_loss = criterion(pred, yield_kg)
    sharp_loss.backward()
    sam.descend()
    return fit_loss.item(), sharp_loss.item()


def main():
    torch.manual_seed(11)
    model = YieldNet(HERD["features"], HERD["hidden"])
    sam = HandSAM(model.parameters(), lr=HERD["lr"], rho=HERD["rho"])
    criterion = nn.SmoothL1Loss()
    for day in range(HERD["days"]):
        sensors, yield_kg = simulate_parlour_day(HERD["cows"], HERD["features"])
        fit, sharp = run_day(model, sam, sensors, yield_kg, criterion)
        print(f"day {day}: fit {fit:.4f} sharp {sharp:.4f}")


if __name__ == "__main__":
    main()
