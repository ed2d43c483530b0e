"""Thermal finding for hang-gliders / paragliders: predicting climb efficiency from vario and GPS windows.

Source: https://github.com/zju3dv/RelightableAvatar/issues/3 ("BUG in safe_divide").
The reporter used the project's ``safe_divide`` helper, which keeps numerator and
denominator away from zero by writing ``eps`` into the small entries with masked
assignments (``a[(a < eps) & (a >= 0)] = eps`` and the same for ``b``), and hit
"one of the variables needed for gradient computation has been modified by an
inplace operation" in training; rewriting the masks with ``torch.where`` fixed it.

Reduction: the same helper divides two network outputs here. The setting is the
writer's: a small 1-D conv net reads a window of vario (vertical speed), ground
speed and turn-rate samples circling in a thermal, predicts the core's climb
rate and the glider's sink rate (an ``exp`` of a log-rate head), and is trained on
the climb-to-sink efficiency ratio and on the climb rate itself.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

EPS = 1e-2
HPARAMS = {"window": 24, "channels": 3, "batch": 32, "lr": 1e-3, "steps": 5, "ratio_weight": 0.5}


def safe_divide(a, b, eps=EPS):
    a[(a < eps) & (a >= 0)] = eps
    a[(a > -eps) & (a <= 0)] = -eps
    b[(b < eps) & (b >= 0)] = eps
    b[(b > -eps) & (b <= 0)] = -eps
    return a / b


class ThermalWindowNet(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(channels, 16, 5, padding=2), nn.GELU(),
            nn.Conv1d(16, 16, 5, padding=2, stride=2), nn.GELU(),
        )
        self.climb_head = nn.Linear(16, 1)
        self.log_sink_head = nn.Linear(16, 1)

    def forward(self, window):
        h = self.conv(window).mean(dim=-1)
        climb = self.climb_head(h).squeeze(-1)
        sink = self.log_sink_head(h).squeeze(-1).exp()
        return climb, sink


def synth_flight_windows(n, window, channels):
    t = torch.linspace(0, 6.28, window)
    strength = torch.rand(n, 1) * 3.0
    vario = strength * (0.6 + 0.4 * torch.sin(t + torch.rand(n, 1) * 6.28)) + 0.2 * torch.randn(n, window)
    gspeed = 9.0 + torch.randn(n, window)
    turn = 0.3 * torch.randn(n, window) + 0.5
    x = torch.stack([vario, gspeed, turn], dim=1)[:, :channels]
    climb_true = strength.squeeze(-1) * 0.8
    sink_true = 1.0 + 0.1 * (gspeed.mean(dim=-1) - 9.0) ** 2
    return x, climb_true, sink_true


def train_step(model, optimizer, batch, hp):
    x, climb_true, sink_true = batch
    climb, sink = model(x)
    efficiency = safe_divide(climb, sink)
    ratio_loss = F.smooth_l1_loss(efficiency, climb_true / sink_true)
    climb_loss = F.mse_loss(climb, climb_true)
    loss = climb_loss + hp["ratio_weight"] * ratio_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return climb_loss.item(), ratio_loss.item()


def main():
    hp = HPARAMS
    thermal_net = ThermalWindowNet(hp["channels"])
    optimizer = torch.optim.AdamW(thermal_net.parameters(), lr=hp["lr"], weight_decay=1e-4)
    for step in range(hp["steps"]):
        batch = synth_flight_windows(hp["batch"], hp["window"], hp["channels"])
        c, r = train_step(thermal_net, optimizer, batch, hp)
        print(f"step {step}: climb {c:.4f} ratio {r:.4f}")


if __name__ == "__main__":
    main()
