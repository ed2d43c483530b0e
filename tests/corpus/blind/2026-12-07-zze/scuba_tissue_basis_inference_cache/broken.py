"""Scuba dive-profile safety: predict the decompression-stress score of a dive from its sampled depth
profile, through learned per-sample gas loading convolved with fixed tissue-compartment kernels
(Buhlmann-style half-times), cached on the model per profile length.

Source: https://github.com/pytorch/pytorch/pull/58513 ("Add no-grad inference mode note"). The note
explains the trade-off of ``torch.inference_mode`` against ``torch.no_grad``: tensors created in
inference mode cannot be used in computations recorded by autograd after leaving it, so no-grad is
the mode to use when such outputs will be used later in grad mode. The reduction: a baseline report
runs before training under ``@torch.inference_mode()``; its first forward builds the model's cached
tissue kernel, and the first training forward saves that cached kernel for backward and fails.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

HALF_TIMES_MIN = [4.0, 8.0, 12.5, 18.5, 27.0, 38.3, 54.3, 77.0]
SAMPLE_MIN = 1.0
SETTINGS = {"dives": 48, "samples": 30, "batch": 12, "lr": 1e-3, "epochs": 3}


def synth_dives(n, samples):
    t = torch.linspace(0, 1, samples)
    max_depth = 10 + 30 * torch.rand(n, 1)
    bottom = (0.3 + 0.4 * torch.rand(n, 1))
    profile = max_depth * torch.clamp(torch.minimum(t / 0.1, (1 - t) / (1 - bottom)), 0, 1)
    profile = profile + 0.3 * torch.randn(n, samples)
    stress = (profile.mean(1) / 40) ** 1.5 + 0.5 * (profile[:, -5:].mean(1) / 10)
    return profile.unsqueeze(-1), stress


class DiveSafetyNet(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.loading = nn.Sequential(nn.Linear(2, hidden), nn.Softplus(), nn.Linear(hidden, 1), nn.Softplus())
        self.risk = nn.Sequential(nn.Linear(len(HALF_TIMES_MIN), hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self._kernels = {}

    def tissue_kernel(self, samples):
        if samples not in self._kernels:
            age = torch.arange(samples, dtype=torch.float32).flip(0) * SAMPLE_MIN
            k = torch.tensor(HALF_TIMES_MIN)
            self._kernels[samples] = torch.exp(-age.unsqueeze(1) * math.log(2) / k)  # (T, K)
        return self._kernels[samples]

    def forward(self, profile):
        ascent = F.pad(profile[:, 1:] - profile[:, :-1], (0, 0, 1, 0))
        gas = self.loading(torch.cat([profile / 40, ascent], dim=-1)).squeeze(-1)  # (B, T)
        tissues = gas @ self.tissue_kernel(profile.shape[1])                     # (B, K)
        return self.risk(tissues).squeeze(-1)


@torch.inference_mode()
def baseline_report(safety_net, profile, stress):
    pred = safety_net(profile)
    return F.mse_loss(pred, stress).item()


def main():
    profile, stress = synth_dives(SETTINGS["dives"], SETTINGS["samples"])
    safety_net = DiveSafetyNet()
    print(f"untrained stress error {baseline_report(safety_net, profile[:12], stress[:12]):.4f}")
    dive_opt = torch.optim.Adam(safety_net.parameters(), lr=SETTINGS["lr"])
    for epoch in range(SETTINGS["epochs"]):
        perm = torch.randperm(SETTINGS["dives"])
        for i in range(0, SETTINGS["dives"], SETTINGS["batch"]):
            idx = perm[i:i + SETTINGS["batch"]]
            risk_loss = F.mse_loss(safety_net(profile[idx]), stress[idx])
            dive_opt.zero_grad()
            risk_loss.backward()
            dive_opt.step()
        print(f"epoch {epoch}: last batch risk loss {risk_loss.item():.4f}")


if __name__ == "__main__":
    main()
