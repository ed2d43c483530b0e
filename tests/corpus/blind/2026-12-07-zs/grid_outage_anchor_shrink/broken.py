"""Power-grid outage forecasting with learnable per-feeder risk offsets anchored after each step.

Source: https://stackoverflow.com/questions/73616963/runtimeerror-a-view-of-a-leaf-variable-that-requires-grad-is-being-used-in-an
The question reports "a view of a leaf Variable that requires grad is being used in an in-place
operation" when part of a tensor that requires grad is updated in place by hand (a slice of a
weight vector multiplied by a factor) in the training code, outside any no-grad context. The
answer: a hand-written update of a tensor the optimizer owns has to happen under
torch.no_grad() (or on its data), since autograd will not record an in-place write to a leaf.

Reduction: a daily outage-count model for distribution feeders adds a learnable risk offset per
feeder (a raw tensor given to the optimizer next to the network). The first feeders are
reference feeders whose offsets are anchored towards zero: after every optimizer step a helper
shrinks that slice of the offset vector in place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_feeders": 10,
    "n_reference": 3,
    "n_days": 60,
    "n_weather": 5,
    "batch_size": 100,
    "epochs": 2,
    "lr": 1e-2,
    "anchor_shrink": 0.5,
}


def synth_outages(cfg, gen):
    f, d, w = cfg["n_feeders"], cfg["n_days"], cfg["n_weather"]
    weather = torch.randn(d, w, generator=gen)
    wind = weather[:, 0].clamp(min=0)
    ice = (weather[:, 1] > 1.0).float()
    true_risk = torch.linspace(-0.5, 0.8, f)
    true_risk[: cfg["n_reference"]] = 0.0
    rate = torch.exp(-1.0 + true_risk[:, None] + 0.7 * wind[None, :] + 0.9 * ice[None, :])
    counts = torch.poisson(rate, generator=gen)
    feeder = torch.arange(f).repeat_interleave(d)
    day_weather = weather.repeat(f, 1)
    return feeder, day_weather, counts.reshape(-1)


class WeatherOutageNet(nn.Module):
    def __init__(self, n_weather, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_weather, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, weather):
        return self.net(weather).squeeze(1)


def shrink_reference(feeder_risk, n_reference, factor):
    feeder_risk[:n_reference].mul_(factor)


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(5)
    feeder, weather, counts = synth_outages(CONFIG, gen)
    weather_net = WeatherOutageNet(CONFIG["n_weather"])
    feeder_risk = torch.zeros(CONFIG["n_feeders"], requires_grad=True)
    optimizer = torch.optim.Adam(list(weather_net.parameters()) + [feeder_risk], lr=CONFIG["lr"])
    n, bs = len(counts), CONFIG["batch_size"]
    for epoch in range(CONFIG["epochs"]):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, bs):
            idx = order[start:start + bs]
            log_rate = weather_net(weather[idx]) + feeder_risk[feeder[idx]]
            outage_loss = F.poisson_nll_loss(log_rate, counts[idx])
            optimizer.zero_grad()
            outage_loss.backward()
            optimizer.step()
            shrink_reference(feeder_risk, CONFIG["n_reference"], CONFIG["anchor_shrink"])
        print(f"epoch {epoch}: outage nll {outage_loss.item():.3f}")


if __name__ == "__main__":
    main()
