"""Bowling shot prediction: a release encoder feeds a trajectory head (entry board and angle at the
pin deck) and a pinfall head (which of the ten pins fall), each with its own optimizer.

Source: https://github.com/HsinYingLee/DRIT/issues/62 ("RuntimeError: one of the variables needed
for gradient computation has been modified by an inplace operation"). DRIT's update_EG backwards the
encoder/generator loss with retain_graph, steps the encoder and generator optimizers, and then
backwards a second generator loss built from the same forward; the optimizer steps rewrite the
weights that forward saved. The answer in the thread: update, then run a forward pass again.

This script reduces it to the same two-stage update on a bowling model: the trajectory loss is
backwarded and the encoder and trajectory optimizers step, then the pinfall loss, built from the
encoder output of the first forward, is backwarded.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = {"release_dim": 10, "latent": 24, "batch": 32, "iters": 5, "lr_enc": 1e-3, "lr_head": 3e-3}


def simulate_shots(n, dim):
    """Release features (speed, rev rate, axis tilt, axis rotation, launch angle, board, oil pattern)."""
    x = torch.randn(n, dim)
    entry = torch.stack([x[:, 5] * 0.8 - x[:, 3] * 0.4, 0.3 * x[:, 1] + 0.2 * x[:, 2]], dim=1)
    pocket = torch.exp(-((entry[:, 0] - 0.2) ** 2) - (entry[:, 1] - 0.5) ** 2)
    pin_probs = torch.sigmoid(4.0 * pocket.unsqueeze(1) - torch.linspace(0.0, 3.0, 10))
    pins = torch.bernoulli(pin_probs)
    return x, entry, pins


class ReleaseEncoder(nn.Module):
    def __init__(self, dim, latent):
        super().__init__()
        self.fc1 = nn.Linear(dim, latent)
        self.fc2 = nn.Linear(latent, latent)

    def forward(self, x):
        return torch.tanh(self.fc2(torch.relu(self.fc1(x))))


class ShotModel:
    def __init__(self, s):
        self.encoder = ReleaseEncoder(s["release_dim"], s["latent"])
        self.trajectory_head = nn.Linear(s["latent"], 2)
        self.pinfall_head = nn.Linear(s["latent"], 10)
        self.enc_opt = torch.optim.Adam(self.encoder.parameters(), lr=s["lr_enc"])
        self.traj_opt = torch.optim.Adam(self.trajectory_head.parameters(), lr=s["lr_head"])
        self.pin_opt = torch.optim.Adam(self.pinfall_head.parameters(), lr=s["lr_head"])

    def forward(self, x):
        self.z = self.encoder(x)

    def backward_trajectory(self, entry):
        self.loss_traj = F.mse_loss(self.trajectory_head(self.z), entry)
        self.loss_traj.backward(retain_graph=True)

    def backward_pinfall(self, pins):
        self.loss_pin = F.binary_cross_entropy_with_logits(self.pinfall_head(self.z), pins)
        self.loss_pin.backward()

    def update(self, x, entry, pins):
        self.forward(x)
        self.enc_opt.zero_grad()
        self.traj_opt.zero_grad()
        self.backward_trajectory(entry)
        self.enc_opt.step()
        self.traj_opt.step()
        self.pin_opt.zero_grad()
        self.backward_pinfall(pins)
        self.pin_opt.step()
        return self.loss_traj.item(), self.loss_pin.item()


def main():
    torch.manual_seed(300)
    s = SETTINGS
    x, entry, pins = simulate_shots(s["batch"] * s["iters"], s["release_dim"])
    model = ShotModel(s)
    for it in range(s["iters"]):
        sl = slice(it * s["batch"], (it + 1) * s["batch"])
        lt, lp = model.update(x[sl], entry[sl], pins[sl])
        print(f"iter {it}: trajectory {lt:.4f} pinfall {lp:.4f}")


if __name__ == "__main__":
    main()
