"""Aquarium / fish-farm water quality: forecasting next-day ammonia from tank sensors.

Reduced from https://discuss.pytorch.org/t/how-computation-graph-in-pytorch-is-created-and-freed/3515
The author asked whether the graph built once could be treated as static: build
``y = torch.sum(a)`` once with ``a`` as a placeholder, then in the loop only
replace ``a.data`` with new values and call ``y.backward()`` again. The answer is
that it cannot: each backward frees the graph it ran through, and a graph is
not re-run by changing a tensor's data. Here a trainer object builds its
objective once in ``compile()`` around placeholder reading and target buffers,
and each ``step()`` copies the new batch into the placeholders' ``.data`` and
calls ``backward()`` on the stored objective.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

SENSORS = ["temp_c", "ph", "dissolved_o2", "nitrite", "nitrate", "feed_g", "stock_kg", "turnover"]
HPARAMS = {"hidden": 24, "batch": 16, "steps_per_epoch": 6, "epochs": 2, "lr": 2e-3}


def simulate_tanks(n_days):
    """Daily sensor summaries and next-day total ammonia nitrogen (mg/L)."""
    x = torch.randn(n_days, len(SENSORS))
    w = torch.tensor([0.30, 0.45, -0.55, 0.20, 0.05, 0.60, 0.40, -0.35])
    tan = 0.4 + 0.25 * torch.tanh(x @ w) + 0.05 * torch.randn(n_days)
    return x, tan.unsqueeze(-1)


class AmmoniaForecaster(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        return nn.functional.softplus(self.out(self.body(x)))


class TankTrainer:
    def __init__(self, model, batch, lr):
        self.model = model
        self.optimizer = torch.optim.RMSprop(model.parameters(), lr=lr)
        self.readings = torch.zeros(batch, len(SENSORS))
        self.targets = torch.zeros(batch, 1)
        self.criterion = nn.SmoothL1Loss(beta=0.1)
        self.objective = None

    def compile(self):
        self.objective = self.criterion(self.model(self.readings), self.targets)

    def step(self, xb, yb):
        self.readings.data = xb
        self.targets.data = yb
        self.optimizer.zero_grad()
        self.objective.backward()
        self.optimizer.step()
        return self.objective.item()


def batches(x, y, size, n):
    for _ in range(n):
        idx = torch.randint(0, x.shape[0], (size,))
        yield x[idx], y[idx]


def main():
    x, y = simulate_tanks(200)
    forecaster = AmmoniaForecaster(len(SENSORS), HPARAMS["hidden"])
    trainer = TankTrainer(forecaster, HPARAMS["batch"], HPARAMS["lr"])
    trainer.compile()
    for epoch in range(HPARAMS["epochs"]):
        losses = [trainer.step(xb, yb) for xb, yb in batches(x, y, HPARAMS["batch"], HPARAMS["steps_per_epoch"])]
        print(f"epoch {epoch}: mean objective {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
