"""Mosquito species classification from wingbeat recordings, per-clip weighted loss.

Source: https://stackoverflow.com/questions/70246575 ("Backward function in PyTorch")
The asker called ``backward()`` on a tensor with several elements and did not
understand what PyTorch expected; the accepted answer explains that ``backward()``
with no argument is meant for the scalar loss at the end of the network, and that for
a non-scalar output one must either reduce it to a scalar or pass the upstream
gradient ``out.backward(g)``.

Reduction: a small 1-D CNN over wingbeat spectra (Aedes / Anopheles / Culex), with a
per-clip cross-entropy (``reduction="none"``) weighted by each recording's
signal-to-noise confidence. The trainer's step calls ``backward()`` on the weighted
per-clip vector.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(8)

CFG = {"bins": 96, "species": 3, "batch": 16, "steps": 6, "lr": 1e-3}


def wingbeat_spectra(cfg, n=200):
    freqs = torch.linspace(200, 1200, cfg["bins"])
    species = torch.randint(0, cfg["species"], (n,))
    fundamental = torch.tensor([480.0, 390.0, 560.0])[species] + 20 * torch.randn(n)
    spec = torch.zeros(n, cfg["bins"])
    for harmonic in (1, 2):
        spec += torch.exp(-((freqs - harmonic * fundamental.unsqueeze(1)) / 25.0) ** 2) / harmonic
    snr = torch.rand(n) * 0.8 + 0.2
    spec = spec * snr.unsqueeze(1) + 0.05 * torch.randn_like(spec)
    return spec.unsqueeze(1), species, snr


class WingbeatNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, 8, 9, padding=4), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(8, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8),
        )
        self.classify = nn.Linear(16 * 8, cfg["species"])

    def forward(self, x):
        return self.classify(self.features(x).flatten(1))


class Trainer:
    def __init__(self, model, cfg):
        self.model = model
        self.optim = torch.optim.Adam(model.parameters(), lr=cfg["lr"])

    def clip_losses(self, spec, species, snr):
        logits = self.model(spec)
        per_clip = F.cross_entropy(logits, species, reduction="none")
        return per_clip * snr / snr.mean()

    def step(self, spec, species, snr):
        weighted = self.clip_losses(spec, species, snr).mean()
        self.optim.zero_grad()
        weighted.backward()
        self.optim.step()
        return weighted.item()


def main(cfg):
    spec, species, snr = wingbeat_spectra(cfg)
    net = WingbeatNet(cfg)
    trainer = Trainer(net, cfg)
    for step in range(cfg["steps"]):
        idx = torch.randint(0, spec.shape[0], (cfg["batch"],))
        print(f"step {step}: {trainer.step(spec[idx], species[idx], snr[idx]):.4f}")


if __name__ == "__main__":
    main(CFG)
