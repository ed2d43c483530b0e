"""Dog agility course timing with Meta-Weight-Net reweighting of noisy clock readings.

Source: https://github.com/ShiYunyi/Meta-Weight-Net_Code-Optimization/issues/5. With
their own model, the reporter's Meta-Weight-Net step failed at
``pseudo_grads = torch.autograd.grad(pseudo_loss, pseudo_net.parameters(), create_graph=True)``
with "One of the differentiated Tensors appears to not have been used in the graph":
their model owns parameters that the training forward never touches. Here the
regressor predicts a run's course time from the course and the dog; it also owns a
fault-count head used only by the judging report, not by ``forward``. Manual
stopwatch readings are noisy (some runs carry a restart delay), so a small weighting
net maps each run's loss to a weight, trained through a one-step look-ahead on a
small set of runs timed by electronic gates.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(8)

ARGS = {
    "n_features": 9,          # course length, obstacles, weaves, contacts, jumps, height class x3, handler years
    "hidden": 32,
    "meta_lr": 1e-3,
    "lr": 0.05,
    "inner_lr": 0.05,
    "batch_size": 32,
    "meta_batch_size": 16,
    "iterations": 4,
    "noise_rate": 0.3,
}


def agility_runs(n, noise_rate=0.0):
    x = torch.randn(n, ARGS["n_features"])
    true_time = 35.0 + 4.0 * x[:, 0] + 2.0 * x[:, 1] + 1.5 * x[:, 2] - 1.0 * x[:, 8]
    time = true_time + 0.5 * torch.randn(n)
    delayed = torch.rand(n) < noise_rate
    time = time + delayed.float() * (5.0 + 10.0 * torch.rand(n))
    return x, time / 10.0


class CourseTimeNet(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.time_head = nn.Linear(hidden, 1)
        self.fault_head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.time_head(self.trunk(x)).squeeze(-1)

    def predict_faults(self, x):
        return F.softplus(self.fault_head(self.trunk(x))).squeeze(-1)


class WeightNet(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, cost):
        return torch.sigmoid(self.net(cost))


def meta_step(model, vnet, optimizer_vnet, x, y, meta_x, meta_y, args):
    pseudo_net = CourseTimeNet(args["n_features"], args["hidden"])
    pseudo_net.load_state_dict(model.state_dict())
    pseudo_out = pseudo_net(x)
    pseudo_cost = F.smooth_l1_loss(pseudo_out, y, reduction="none").unsqueeze(1)
    pseudo_weight = vnet(pseudo_cost.detach())
    pseudo_loss = (pseudo_weight * pseudo_cost).mean()
    pseudo_grads = torch.autograd.grad(pseudo_loss, pseudo_net.parameters(), create_graph=True)
    fast_params = {
        name: param - args["inner_lr"] * grad
        for (name, param), grad in zip(pseudo_net.named_parameters(), pseudo_grads)
    }
    meta_out = functional_call(pseudo_net, fast_params, (meta_x,))
    meta_loss = F.smooth_l1_loss(meta_out, meta_y)
    optimizer_vnet.zero_grad()
    meta_loss.backward()
    optimizer_vnet.step()
    return meta_loss.item()


def main():
    x_train, y_train = agility_runs(256, ARGS["noise_rate"])
    x_meta, y_meta = agility_runs(48)
    model = CourseTimeNet(ARGS["n_features"], ARGS["hidden"])
    vnet = WeightNet()
    optimizer_model = torch.optim.SGD(model.parameters(), lr=ARGS["lr"], momentum=0.9)
    optimizer_vnet = torch.optim.Adam(vnet.parameters(), lr=ARGS["meta_lr"], weight_decay=1e-4)

    for it in range(ARGS["iterations"]):
        idx = torch.randint(0, x_train.size(0), (ARGS["batch_size"],))
        midx = torch.randint(0, x_meta.size(0), (ARGS["meta_batch_size"],))
        x, y = x_train[idx], y_train[idx]
        meta_loss = meta_step(model, vnet, optimizer_vnet, x, y, x_meta[midx], y_meta[midx], ARGS)

        outputs = model(x)
        cost = F.smooth_l1_loss(outputs, y, reduction="none").unsqueeze(1)
        with torch.no_grad():
            weight = vnet(cost)
        loss = (weight * cost).mean()
        optimizer_model.zero_grad()
        loss.backward()
        optimizer_model.step()
        print(f"iter {it}: weighted loss {loss.item():.4f}  meta loss {meta_loss:.4f}  mean weight {weight.mean().item():.3f}")

    with torch.no_grad():
        faults = model.predict_faults(x_meta)
    print("judging report: mean predicted faults", round(faults.mean().item(), 3))


if __name__ == "__main__":
    main()
