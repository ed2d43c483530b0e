"""Fog forecasting: will radiation fog form at an airfield in the next three hours?

Source: https://github.com/pytorch/pytorch/issues/66363 ("torch.nn.utils.parametrizations.spectral_norm cannot
use twice"). The author wrapped a convolution in spectral_norm and called it twice in one forward; backward
failed with "modified by an inplace operation" on a vector of the layer's size: the power-iteration vectors
are refreshed in place on every call, and the first call's normalised weight still needs them. (The same
problem in the older hook-based spectral_norm was fixed in pytorch/pytorch#13350 by cloning u and v before
using them.) This script writes the spectrally normalised layer by hand, as research code often does: a
station encoder shared between the airfield's own sensor window and the upwind station's window, so the
encoder (and its power iteration) runs twice per forward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = dict(window=12, features=5, hidden=24, stations=64, batch=16, epochs=2, lr=1e-3)


class SpectralLinear(nn.Module):
    """Linear layer whose weight is divided by a one-step power-iteration estimate of its spectral norm."""

    def __init__(self, fan_in, fan_out, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(fan_out, fan_in) / fan_in ** 0.5)
        self.bias = nn.Parameter(torch.zeros(fan_out))
        self.eps = eps
        self.register_buffer("u", F.normalize(torch.randn(fan_out), dim=0))
        self.register_buffer("v", F.normalize(torch.randn(fan_in), dim=0))

    def normalised_weight(self):
        w = self.weight
        if self.training:
            with torch.no_grad():
                self.v.copy_(F.normalize(w.t() @ self.u, dim=0, eps=self.eps))
                self.u.copy_(F.normalize(w @ self.v, dim=0, eps=self.eps))
        u, v = self.u.clone(), self.v.clone()
        sigma = torch.dot(u, w @ v)
        return w / sigma

    def forward(self, x):
        return F.linear(x, self.normalised_weight(), self.bias)


class StationEncoder(nn.Module):
    def __init__(self, window, features, hidden):
        super().__init__()
        self.proj = SpectralLinear(window * features, hidden)
        self.mix = nn.Linear(hidden, hidden)

    def forward(self, series):
        return torch.tanh(self.mix(F.gelu(self.proj(series.flatten(1)))))


class FogNowcaster(nn.Module):
    def __init__(self, window, features, hidden):
        super().__init__()
        self.encoder = StationEncoder(window, features, hidden)
        self.head = nn.Linear(2 * hidden, 1)

    def forward(self, local, upwind):
        h_local = self.encoder(local)
        h_upwind = self.encoder(upwind)
        return self.head(torch.cat([h_local, h_upwind], dim=1)).squeeze(1)


def make_observations(n, window, features):
    """Temperature, dew point, wind, cloud, visibility; fog when the dew-point depression closes at night."""
    local = torch.randn(n, window, features)
    upwind = local + 0.3 * torch.randn(n, window, features)
    depression = (local[:, -3:, 0] - local[:, -3:, 1]).mean(1)
    calm = local[:, -3:, 2].abs().mean(1)
    fog = ((depression < 0.0) & (calm < 0.9)).float()
    return local, upwind, fog


def train(model, fog_opt, data):
    local, upwind, fog = data
    for epoch in range(SETTINGS["epochs"]):
        for i in range(0, local.shape[0], SETTINGS["batch"]):
            sl = slice(i, i + SETTINGS["batch"])
            fog_opt.zero_grad()
            logits = model(local[sl], upwind[sl])
            fog_loss = F.binary_cross_entropy_with_logits(logits, fog[sl])
            fog_loss.backward()
            fog_opt.step()
        print(f"epoch {epoch}: fog loss {fog_loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(2718)
    data = make_observations(SETTINGS["stations"], SETTINGS["window"], SETTINGS["features"])
    nowcaster = FogNowcaster(SETTINGS["window"], SETTINGS["features"], SETTINGS["hidden"])
    fog_opt = torch.optim.AdamW(nowcaster.parameters(), lr=SETTINGS["lr"])
    train(nowcaster, fog_opt, data)
