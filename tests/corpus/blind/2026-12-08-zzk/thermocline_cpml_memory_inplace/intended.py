"""Acoustic full-waveform inversion of a sound-speed section across a thermocline, with a CPML absorbing boundary.

Source: https://github.com/ar4/deepwave/issues/48
("A question of gradient calculation when backward with CPML").

The author had written a pure-PyTorch version of Deepwave-style full-waveform inversion
(time-stepping a staggered-grid wave equation and letting autograd produce the model
gradient).  It worked without an absorbing boundary, but once a CPML was added the
auxiliary memory variables (``cpml_dpdx``, ``cpml_dvxdx`` ...) were updated in place every
time step and ``backward`` failed with "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [160]] is at
version 60; expected version 59 instead".  The author had first tried writing the update
through ``.data`` (``cpml_dpdx.data = bx * cpml_dpdx.data + ax * dpdx.data``), which runs
but, in their words, "its gradient is not accurate".  The evident intent -- and how
Deepwave itself formulates it -- is a functional memory-variable update, a new tensor
each time step (``psi = b * psi + a * dpdx``), so that every step's saved value survives
until the backward pass.

Reduction: a 2-D velocity-pressure acoustic propagator in pure PyTorch over a small
ocean section (sea surface at the top, CPML on the sides and bottom).  As in many FWI
scripts, the CPML damping profile is scaled by the maximum of the current model speed,
so the ``a``/``b`` coefficients are part of the graph: ``a * dpdx`` saves the derivative
that the in-place CPML helper (``cpml_absorb``, the report's ``rs_cpml_absorb``) then
overwrites with ``deriv.div_(k).add_(psi)``.  The trainable sound-speed
section sits in an ``nn.Module`` and is fitted with Adam to synthetic hydrophone records
made from a "true" section with a sharp thermocline.
"""
import math

import torch
import torch.nn as nn

HPARAMS = {
    "nz": 20,
    "nx": 28,
    "dx": 5.0,           # m
    "dt": 1.0e-3,        # s
    "nt": 70,
    "npml": 5,
    "f0": 40.0,          # Hz
    "n_shots": 4,
    "shots_per_batch": 2,
    "epochs": 2,
    "lr": 2.0,
}


def ricker(f0, nt, dt):
    t = torch.arange(nt) * dt - 1.2 / f0
    arg = (math.pi * f0 * t) ** 2
    return (1 - 2 * arg) * torch.exp(-arg)


def cpml_profile(n, npml, dx, dt, vmax, f0, side_lo=True, side_hi=True, R=1e-3):
    """1-D CPML coefficients (a, b) along an axis of n cells."""
    L = npml * dx
    d0 = -3.0 * vmax * math.log(R) / (2.0 * L)
    dist = torch.zeros(n)
    idx = torch.arange(n).float()
    if side_lo:
        dist = torch.maximum(dist, (npml - idx).clamp(min=0) / npml)
    if side_hi:
        dist = torch.maximum(dist, (idx - (n - 1 - npml)).clamp(min=0) / npml)
    d = d0 * dist ** 2
    alpha = math.pi * f0 * (1 - dist)
    b = torch.exp(-(d + alpha) * dt)
    a = d / (d + alpha + 1e-12) * (b - 1)
    return a, b


def cpml_absorb(deriv, psi, a, b, k):
    """Update the CPML memory variable and correct the spatial derivative with it."""
    psi = b * psi + a * deriv          # a new tensor every step (functional update)
    deriv = deriv / k + psi
    return deriv, psi


class SoundSpeedSection(nn.Module):
    def __init__(self, c_init):
        super().__init__()
        self.c = nn.Parameter(c_init.clone())


class AcousticPropagator:
    def __init__(self, hp, rho=1025.0):
        self.hp = hp
        self.rho = rho
        nz, nx = hp["nz"], hp["nx"]
        self.src_z, self.rec_z = 2, 3
        self.src_x = torch.linspace(hp["npml"] + 1, nx - hp["npml"] - 2, hp["n_shots"]).long()
        self.rec_x = torch.arange(hp["npml"], nx - hp["npml"])
        self.wavelet = ricker(hp["f0"], hp["nt"], hp["dt"]) * 1e3

    def __call__(self, c, shots):
        hp = self.hp
        nz, nx, dx, dt, npml = hp["nz"], hp["nx"], hp["dx"], hp["dt"], hp["npml"]
        nb = len(shots)
        kappa = self.rho * c ** 2                   # bulk modulus from the model
        vmax = c.max()
        ax, bx = cpml_profile(nx, npml, dx, dt, vmax, hp["f0"])
        az, bz = cpml_profile(nz, npml, dx, dt, vmax, hp["f0"], side_lo=False)
        ax, bx = ax.view(1, 1, nx), bx.view(1, 1, nx)
        az, bz = az.view(1, nz, 1), bz.view(1, nz, 1)
        kx = torch.ones(1, 1, nx)
        kz = torch.ones(1, nz, 1)

        p = torch.zeros(nb, nz, nx)
        vx = torch.zeros(nb, nz, nx)
        vz = torch.zeros(nb, nz, nx)
        psi_px = torch.zeros(nb, nz, nx)
        psi_pz = torch.zeros(nb, nz, nx)
        psi_vx = torch.zeros(nb, nz, nx)
        psi_vz = torch.zeros(nb, nz, nx)
        records = []
        for it in range(hp["nt"]):
            dpdx = torch.zeros_like(p)
            dpdx[..., :-1] = (p[..., 1:] - p[..., :-1]) / dx
            dpdz = torch.zeros_like(p)
            dpdz[:, :-1, :] = (p[:, 1:, :] - p[:, :-1, :]) / dx
            dpdx, psi_px = cpml_absorb(dpdx, psi_px, ax, bx, kx)      # CPML memory variables
            dpdz, psi_pz = cpml_absorb(dpdz, psi_pz, az, bz, kz)
            vx = vx - dt / self.rho * dpdx
            vz = vz - dt / self.rho * dpdz

            dvxdx = torch.zeros_like(vx)
            dvxdx[..., 1:] = (vx[..., 1:] - vx[..., :-1]) / dx
            dvzdz = torch.zeros_like(vz)
            dvzdz[:, 1:, :] = (vz[:, 1:, :] - vz[:, :-1, :]) / dx
            dvxdx, psi_vx = cpml_absorb(dvxdx, psi_vx, ax, bx, kx)
            dvzdz, psi_vz = cpml_absorb(dvzdz, psi_vz, az, bz, kz)
            p = p - dt * kappa * (dvxdx + dvzdz)

            src = torch.zeros_like(p)
            src[torch.arange(nb), self.src_z, self.src_x[shots]] = self.wavelet[it] * dt
            p = p + src
            p = torch.cat([torch.zeros_like(p[:, :1]), p[:, 1:]], dim=1)   # pressure-release sea surface
            records.append(p[:, self.rec_z, self.rec_x])
        return torch.stack(records, dim=-1)                   # (shots, receivers, nt)


def ocean_section(hp, thermocline=True):
    z = torch.arange(hp["nz"]).float().unsqueeze(1).expand(hp["nz"], hp["nx"])
    c = 1500.0 + 0.4 * z
    if thermocline:
        c = c + 30.0 * torch.sigmoid((9.0 - z) * 1.5)           # warm mixed layer over the thermocline
        c = c + 3.0 * torch.randn(hp["nz"], hp["nx"])
    return c


def main():
    torch.manual_seed(3)
    hp = HPARAMS
    propagator = AcousticPropagator(hp)
    c_true = ocean_section(hp, thermocline=True)
    with torch.no_grad():
        observed = propagator(c_true, torch.arange(hp["n_shots"]))

    model = SoundSpeedSection(ocean_section(hp, thermocline=False))
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    loss_fn = nn.MSELoss()

    for epoch in range(hp["epochs"]):
        perm = torch.randperm(hp["n_shots"])
        epoch_loss = 0.0
        for start in range(0, hp["n_shots"], hp["shots_per_batch"]):
            shots = perm[start:start + hp["shots_per_batch"]]
            optimizer.zero_grad()
            predicted = propagator(model.c, shots)
            loss = 1e6 * loss_fn(predicted, observed[shots])
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        print(f"epoch {epoch}: misfit {epoch_loss:.6f}")


if __name__ == "__main__":
    main()
