"""Which sweeping signals drive a curling stone? Neural Granger causality with a component-wise MLP.

Source: https://github.com/iancovert/Neural-GC/issues/14 -- a reader of ``train_model_ista()`` in
``cLSTM.py`` asks why the smooth error (prediction loss plus ``ridge_regularize`` over every
network) is computed once before ``for it in range(max_iter):`` and then recomputed at the end of
each iteration, and whether it could simply be computed at the top of the loop. This script is a
writer's version of that proximal training loop for curling telemetry (stone x/y velocity, spin,
and the broom force and stroke rate of two sweepers): the prediction loss is computed inside the
loop, the ridge term once before it, and a torch optimizer takes the gradient step followed by a
group-lasso proximal step on each network's input layer.
"""
import torch
import torch.nn as nn

CHANNELS = ["vx", "vy", "spin", "force_a", "rate_a", "force_b", "rate_b"]
OPTS = {"lag": 5, "hidden": 16, "T": 120, "lr": 5e-3, "lam": 2e-3, "lam_ridge": 1e-2, "max_iter": 6}


class ComponentMLP(nn.Module):
    """One small MLP per target channel, each reading the lagged window of every channel."""

    def __init__(self, p, lag, hidden):
        super().__init__()
        self.p, self.lag = p, lag
        self.networks = nn.ModuleList(
            nn.Sequential(nn.Conv1d(p, hidden, lag), nn.ReLU(), nn.Conv1d(hidden, 1, 1)) for _ in range(p)
        )

    def forward(self, x):
        # x: (batch, T, p) -> (batch, T - lag + 1, p)
        x = x.transpose(1, 2)
        return torch.cat([net(x) for net in self.networks], dim=1).transpose(1, 2)


def ridge_regularize(net, lam):
    return lam * sum(torch.sum(layer.weight ** 2) for layer in net[1:] if hasattr(layer, "weight"))


@torch.no_grad()
def prox_update(net, lam, lr):
    w = net[0].weight  # (hidden, p, lag): group per input channel
    norm = w.norm(dim=(0, 2), keepdim=True)
    w.mul_(torch.clamp(1 - lr * lam / norm.clamp(min=lr * lam), min=0.0))


def apply_prox(model, lam, lr):
    for net in model.networks:
        prox_update(net, lam, lr)


def simulate_end(T, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.zeros(T, len(CHANNELS))
    X[0, :2] = torch.tensor([0.0, 2.2])
    for t in range(1, T):
        sweep = torch.rand(4, generator=g)
        X[t, 3:] = sweep
        X[t, 0] = 0.97 * X[t - 1, 0] + 0.05 * X[t - 1, 2] + 0.01 * torch.randn(1, generator=g)
        X[t, 1] = 0.98 * X[t - 1, 1] + 0.03 * (X[t - 1, 3] + X[t - 1, 5]) - 0.02
        X[t, 2] = 0.9 * X[t - 1, 2] + 0.01 * torch.randn(1, generator=g)
    return X


def train_ista(model, X, opts):
    lag = opts["lag"]
    inputs, targets = X[:, :-1], X[:, lag:]
    optimizer = torch.optim.SGD(model.parameters(), lr=opts["lr"])
    mse = nn.MSELoss()
    ridge = sum(ridge_regularize(net, opts["lam_ridge"]) for net in model.networks)
    for it in range(opts["max_iter"]):
        pred = model(inputs)
        loss = sum(mse(pred[..., i], targets[..., i]) for i in range(model.p))
        smooth = loss + ridge
        optimizer.zero_grad()
        smooth.backward()
        optimizer.step()
        apply_prox(model, opts["lam"], opts["lr"])
        print(f"iter {it}: smooth {smooth.item():.4f}")
    return model


def granger_matrix(model):
    return torch.stack([net[0].weight.norm(dim=(0, 2)) for net in model.networks]).detach()


if __name__ == "__main__":
    torch.manual_seed(21)
    X = torch.stack([simulate_end(OPTS["T"], s) for s in range(4)])
    cmlp = ComponentMLP(len(CHANNELS), OPTS["lag"], OPTS["hidden"])
    train_ista(cmlp, X, OPTS)
    print(granger_matrix(cmlp))
