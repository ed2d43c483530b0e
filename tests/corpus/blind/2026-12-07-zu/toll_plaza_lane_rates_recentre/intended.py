"""Toll-plaza lane control: a demand predictor plus learnable per-lane service-rate offsets.

Source: https://discuss.pytorch.org/t/simple-understanding-of-backprop-gradient-descent/73588
The author trains a raw tensor ``a = torch.tensor([-5., 5.], requires_grad=True)`` by hand
(``loss.backward()`` then ``a.sub_(lr * a.grad)`` inside ``torch.no_grad()``) and asks what
``requires_grad`` and ``is_leaf`` mean; the answer explains that ``a`` is a leaf that
requires grad, which is why in-place changes to it belong under ``no_grad``. The writer
reduces a project that keeps such a raw leaf tensor beside a module: per-lane rate offsets
trained by the optimizer and re-centred in place after every step (their mean is not
identifiable), with the re-centring written outside ``torch.no_grad()``. The setting
(queue length per lane predicted from arrivals and lane configuration) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(19)

PLAZA = {"lanes": 8, "intervals": 240, "feat": 6, "hidden": 24, "batch": 30, "epochs": 2, "lr": 1e-2}


def make_plaza_log(n, lanes, d):
    """Per interval: traffic features (arrivals, heavy-vehicle share, hour...) -> queue length per lane."""
    feats = torch.randn(n, d)
    true_offsets = torch.linspace(-0.6, 0.6, lanes)
    load = F.softplus(feats[:, :1] * 0.8 + feats[:, 1:2] * 0.3 + 1.0)
    queues = load * torch.exp(-true_offsets).unsqueeze(0) + 0.05 * torch.randn(n, lanes)
    return feats, queues


class DemandPredictor(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return F.softplus(self.net(x))


def expected_queues(predictor, lane_rates, feats):
    return predictor(feats) * torch.exp(-lane_rates).unsqueeze(0)


def recentre(rates):
    with torch.no_grad():
        rates -= rates.mean()


def main():
    feats, queues = make_plaza_log(PLAZA["intervals"], PLAZA["lanes"], PLAZA["feat"])
    predictor = DemandPredictor(PLAZA["feat"], PLAZA["hidden"])
    lane_rates = torch.zeros(PLAZA["lanes"], requires_grad=True)
    optimizer = torch.optim.Adam(list(predictor.parameters()) + [lane_rates], lr=PLAZA["lr"])
    for epoch in range(PLAZA["epochs"]):
        order = torch.randperm(feats.shape[0])
        for i in range(0, feats.shape[0], PLAZA["batch"]):
            idx = order[i:i + PLAZA["batch"]]
            queue_loss = F.mse_loss(expected_queues(predictor, lane_rates, feats[idx]), queues[idx])
            optimizer.zero_grad()
            queue_loss.backward()
            optimizer.step()
            recentre(lane_rates)
        print(f"epoch {epoch}: queue loss {queue_loss.item():.4f} rates {lane_rates.detach().numpy().round(2)}")


if __name__ == "__main__":
    main()
