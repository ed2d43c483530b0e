"""Intended: Koopman autoencoder with a continuous-time generator, latent rollout by an Adams-Bashforth stepper.

The script of broken.py with the stepper's history reset at the start of every rollout, as a multistep
scheduler is reset (or created anew) for each run rather than carried over
(https://github.com/tejank10/null-text-inversion/issues/1 trains once the stepping keeps no outputs of an
earlier iteration). Each batch's latent trajectory then depends only on its own initial condition and the
generator L, and the reconstruction, prediction and linearity losses train the encoder, decoder and L.
Same seeds, data and order of random draws.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

DT, STEPS, OBS, LATENT = 0.1, 16, 16, 4


def duffing(x):
    """Unforced, lightly damped Duffing oscillator."""
    pos, vel = x[..., 0], x[..., 1]
    return torch.stack([vel, -0.1 * vel + pos - pos ** 3], dim=-1)


@torch.no_grad()
def simulate(n):
    """RK4 trajectories of the Duffing oscillator, observed through a fixed random nonlinear lift."""
    x = 2.0 * torch.rand(n, 2) - 1.0
    states = [x]
    for _ in range(STEPS - 1):
        k1 = duffing(x)
        k2 = duffing(x + 0.5 * DT * k1)
        k3 = duffing(x + 0.5 * DT * k2)
        k4 = duffing(x + DT * k3)
        x = x + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        states.append(x)
    lift_w, lift_b = torch.randn(2, OBS), torch.randn(OBS)
    return torch.tanh(torch.stack(states, dim=1) @ lift_w + lift_b)


class AdamsBashforth:
    """Linear multistep integrator; lower orders while its history fills up (like PNDM's warm-up)."""

    COEFFS = {1: [1.0], 2: [1.5, -0.5], 3: [23 / 12, -16 / 12, 5 / 12]}

    def __init__(self, order=3, dt=DT):
        self.order, self.dt = order, dt
        self.history = []  # derivative evaluations, newest last

    def reset(self):
        self.history = []

    def step(self, f, z):
        self.history = (self.history + [f(z)])[-self.order:]
        coeffs = self.COEFFS[len(self.history)]
        return z + self.dt * sum(c * d for c, d in zip(coeffs, reversed(self.history)))


class KoopmanAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, LATENT))
        self.decoder = nn.Sequential(nn.Linear(LATENT, 32), nn.Tanh(), nn.Linear(32, OBS))
        skew = torch.randn(LATENT, LATENT)
        self.L = nn.Parameter(0.5 * (skew - skew.T) - 0.05 * torch.eye(LATENT))  # near-oscillatory generator

    def generator(self, z):
        return z @ self.L.T


def rollout(model, stepper, z0, steps):
    stepper.reset()  # each rollout starts its own history: no derivatives left from the previous batch
    zs = [z0]
    for _ in range(steps - 1):
        zs.append(stepper.step(model.generator, zs[-1]))
    return torch.stack(zs, dim=1)


trajectories = simulate(64)
model = KoopmanAE()
stepper = AdamsBashforth(order=3)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(4):
    perm = torch.randperm(64)
    for start in range(0, 64, 16):
        x = trajectories[perm[start:start + 16]]
        z_enc = model.encoder(x)
        z_roll = rollout(model, stepper, z_enc[:, 0], STEPS)
        recon_loss = F.mse_loss(model.decoder(z_enc), x)
        pred_loss = F.mse_loss(model.decoder(z_roll), x)
        lin_loss = F.mse_loss(z_roll, z_enc)
        loss = recon_loss + pred_loss + 0.1 * lin_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    eig = torch.linalg.eigvals(model.L.detach())
    print(f"epoch {epoch}: recon {recon_loss.item():.4f} pred {pred_loss.item():.4f} lin {lin_loss.item():.4f} "
          f"max Re(eig L) {eig.real.max().item():+.3f}")
