"""Snow-plough route planning: a small CNN predicts a per-cell clearing-cost map of a
district grid from snowfall, traffic and slope rasters; each map is min-max normalised
before a soft route cost is scored against the depot's recorded plough times.

Source: https://github.com/pytorch/pytorch/issues/48149 ("torchvision/utils.py modify
grad_fn of the tensor, throw exception 'Output X of UnbindBackward is a view and is being
modified inplace'"). torchvision's ``make_grid(..., normalize=True, scale_each=True)``
iterated ``for t in tensor`` and normalised each ``t`` in place; given a tensor that
requires grad, the iteration unbinds it into views and the in-place ``clamp_``/``sub_``/
``div_`` on those views raises.

Reduction (the writer's): the per-item in-place normalisation loop is moved into the
training step, applied to the network's cost maps (which require grad). Synthetic
rasters, small sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

GRID = 12
PARAMS = {"n_districts": 48, "rasters": 3, "batch": 8, "lr": 1e-3, "epochs": 2, "temp": 0.5}


def district_rasters(n, rasters):
    maps = torch.rand(n, rasters, GRID, GRID)
    route_mask = (torch.rand(n, 1, GRID, GRID) < 0.3).float()
    hours = (maps[:, :1] * 2 + maps[:, 2:3]) * route_mask
    return maps, route_mask, hours.sum(dim=(1, 2, 3))


class CostNet(nn.Module):
    def __init__(self, rasters):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(rasters, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 1, 1),
        )
        self.scale = nn.Parameter(torch.tensor(5.0))

    def forward(self, x):
        return F.softplus(self.body(x))


def normalise_each(costs, eps=1e-6):
    out = []
    for c in costs:
        lo, hi = float(c.min()), float(c.max())
        c = c.clamp(min=lo, max=hi)
        out.append(c.sub(lo).div(max(hi - lo, eps)))
    return torch.stack(out)


def route_hours(costs, route_mask, scale, temp):
    weights = torch.sigmoid((route_mask - 0.5) / temp)
    return scale * (costs * weights).sum(dim=(1, 2, 3)) / GRID


def train_step(net, optimizer, maps, mask, hours):
    costs = normalise_each(net(maps))
    pred_hours = route_hours(costs, mask, net.scale, PARAMS["temp"])
    route_loss = F.mse_loss(pred_hours, hours)
    optimizer.zero_grad()
    route_loss.backward()
    optimizer.step()
    return route_loss.item()


def main():
    maps, mask, hours = district_rasters(PARAMS["n_districts"], PARAMS["rasters"])
    cost_net = CostNet(PARAMS["rasters"])
    optimizer = torch.optim.Adam(cost_net.parameters(), lr=PARAMS["lr"])
    for epoch in range(PARAMS["epochs"]):
        perm = torch.randperm(maps.shape[0])
        for start in range(0, maps.shape[0], PARAMS["batch"]):
            idx = perm[start:start + PARAMS["batch"]]
            loss_value = train_step(cost_net, optimizer, maps[idx], mask[idx], hours[idx])
        print(f"epoch {epoch}: route mse {loss_value:.3f}")


if __name__ == "__main__":
    main()
