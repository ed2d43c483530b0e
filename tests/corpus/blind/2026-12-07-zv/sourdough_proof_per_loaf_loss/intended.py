"""Bakery fermentation: predicting sourdough bulk-proof time per loaf.

Reduced from https://discuss.pytorch.org/t/why-doesnt-backward-work-on-nonscalar-outputs/47777
The author computed an element-wise tensor (``t2 = t1 * t1``) and called
``t2.backward()``, which fails ("grad can be implicitly created only for scalar
outputs"), and asked why PyTorch does not just put the Jacobian in ``.grad``.
The reply: training sums (or averages) the per-element error into one number
and minimises that. Here a bakery's proof-time regressor builds a per-loaf,
dough-weight-weighted error inside an optimizer closure and calls backward on
that per-loaf vector.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

DOUGH_FEATURES = ["hydration", "starter_pct", "salt_pct", "flour_protein", "room_temp", "starter_age_h", "dough_kg"]
SETTINGS = {"width": 20, "lr": 0.05, "momentum": 0.9, "rounds": 8, "batch": 32}


def bake_log(n):
    """Synthetic production log: dough features and observed bulk-proof hours."""
    x = torch.rand(n, len(DOUGH_FEATURES))
    temp = 18 + 10 * x[:, 4]
    q10_rate = 2.0 ** ((temp - 24) / 10)
    hours = (4.5 + 2.0 * (1 - x[:, 1]) + 0.8 * x[:, 2]) / q10_rate + 0.2 * torch.randn(n)
    return x, hours


class ProofTimeModel(nn.Module):
    def __init__(self, n_in, width):
        super().__init__()
        self.hidden = nn.Linear(n_in, width)
        self.rate = nn.Linear(width, 1)

    def forward(self, x):
        return F.softplus(self.rate(torch.relu(self.hidden(x)))).squeeze(-1) * 4.0


def dough_weights(x):
    kg = 0.5 + x[:, DOUGH_FEATURES.index("dough_kg")]
    return kg / kg.mean()


def run(model, sgd, x, hours):
    for r in range(SETTINGS["rounds"]):
        idx = torch.randperm(x.shape[0])[: SETTINGS["batch"]]
        xb, yb = x[idx], hours[idx]
        w = dough_weights(xb)

        def closure():
            sgd.zero_grad()
            pred = model(xb)
            proof_loss = (F.mse_loss(pred, yb, reduction="none") * w).mean()
            proof_loss.backward()
            return proof_loss

        out = sgd.step(closure)
        print(f"round {r}: weighted mse {out.item():.3f}")


def main():
    x, hours = bake_log(256)
    model = ProofTimeModel(len(DOUGH_FEATURES), SETTINGS["width"])
    sgd = torch.optim.SGD(model.parameters(), lr=SETTINGS["lr"], momentum=SETTINGS["momentum"])
    run(model, sgd, x, hours)


if __name__ == "__main__":
    main()
