"""County-level crop-yield regression with a hand-written L2 penalty.

Source: https://discuss.pytorch.org/t/how-does-one-implement-weight-regularization-l1-or-l2-manually-without-optimum/7951
The author implemented L2 weight regularization by hand, summing ``W.norm(2)``
over ``mdl.parameters()`` into ``l2_reg`` and adding ``reg_lambda * l2_reg`` to
the batch loss before ``backward()``; the replies discuss how that term must be
an autograd expression of the weights.

Reduction: the same manual penalty on an MLP that regresses yield (t/ha) from
soil, weather and management features. The penalty is a value built from the
weights and then added to every batch loss of an epoch; the regressor is
trained with SGD with momentum.
"""
import torch
import torch.nn as nn

torch.manual_seed(11)

FEATURES = ["soil_n", "soil_p", "soil_k", "ph", "gdd", "rain_mm", "heat_days", "seed_rate", "n_fert"]
HPARAMS = dict(n_counties=240, hidden=48, batch_size=20, epochs=3, lr=1e-2, momentum=0.9, reg_lambda=1e-3)


def synth_counties(n):
    x = torch.randn(n, len(FEATURES))
    w = torch.tensor([0.4, 0.2, 0.1, -0.15, 0.8, 0.5, -0.6, 0.25, 0.35])
    yield_t_ha = 6.0 + x @ w + 0.3 * torch.tanh(x[:, 4] * x[:, 5]) + 0.2 * torch.randn(n)
    return x, yield_t_ha.unsqueeze(1)


class YieldRegressor(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_in, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
        )
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.out(self.body(x))


def l2_penalty(model):
    l2_reg = None
    for name, W in model.named_parameters():
        if not name.endswith("weight"):
            continue
        l2_reg = W.norm(2) if l2_reg is None else l2_reg + W.norm(2)
    return l2_reg


def run_epoch(model, optimizer, x, y, hp):
    model.train()
    n = x.size(0)
    order = torch.randperm(n)
    total = 0.0
    for start in range(0, n, hp["batch_size"]):
        idx = order[start:start + hp["batch_size"]]
        pred = model(x[idx])
        reg = hp["reg_lambda"] * l2_penalty(model)
        batch_loss = ((pred - y[idx]) ** 2).mean() + reg
        optimizer.zero_grad()
        batch_loss.backward()
        optimizer.step()
        total += batch_loss.item() * idx.numel()
    return total / n


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    return ((model(x) - y) ** 2).mean().sqrt().item()


def main():
    x, y = synth_counties(HPARAMS["n_counties"])
    split = int(0.8 * x.size(0))
    regressor = YieldRegressor(len(FEATURES), HPARAMS["hidden"])
    optimizer = torch.optim.SGD(regressor.parameters(), lr=HPARAMS["lr"], momentum=HPARAMS["momentum"])
    for epoch in range(HPARAMS["epochs"]):
        train_loss = run_epoch(regressor, optimizer, x[:split], y[:split], HPARAMS)
        rmse = evaluate(regressor, x[split:], y[split:])
        print(f"epoch {epoch}: train {train_loss:.3f}  val rmse {rmse:.3f} t/ha")


if __name__ == "__main__":
    main()
