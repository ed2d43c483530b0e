"""Neural turbulence closure: a learned eddy viscosity inside a differentiable channel-flow step.

Source: https://github.com/lululxvi/deepxde/issues/1046
The author was fitting a compressible-flow model whose outputs include an eddy
viscosity nu, with a no-penetration wall condition n . v = 0 written as an
operator boundary condition. The condition called `geometry.boundary_normal(x)`
on the network's input points x; those points require grad (the residual takes
derivatives with respect to them) and the geometry routine is NumPy code, so it
raised "Can't call numpy() on Tensor that requires grad". The fix is to hand the
geometry routine the plain point coordinates (deepxde's X) instead of the
differentiated tensor. Here the training setting is the writer's: a coordinate-based
closure nu_t(x, y, |grad u|) inside an explicit solver step, its wall-normal
derivative taken with autograd (hence coordinates that require grad), a rollout loss
against filtered reference snapshots and a no-penetration penalty at the walls.
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

NX, NY, DT, NU = 16, 12, 0.01, 0.02
dx, dy = 1.0 / NX, 1.0 / (NY - 1)


class ChannelGeometry:
    """Periodic in x, walls at y = 0 and y = 1 (NumPy code, as geometry helpers usually are)."""

    ymin, ymax = 0.0, 1.0

    def on_wall(self, pts):
        return np.isclose(pts[:, 1], self.ymin) | np.isclose(pts[:, 1], self.ymax)

    def boundary_normal(self, pts):
        lower = np.isclose(pts[:, 1:2], self.ymin)
        upper = np.isclose(pts[:, 1:2], self.ymax)
        return np.concatenate([np.zeros_like(lower, dtype=np.float32), upper.astype(np.float32) - lower.astype(np.float32)], axis=1)


class EddyViscosity(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, coords, grad_mag):
        return 0.01 * nn.functional.softplus(self.net(torch.cat([coords, grad_mag], dim=-1)))


def laplacian(f):
    fxx = (torch.roll(f, -1, 0) - 2 * f + torch.roll(f, 1, 0)) / dx ** 2
    fyy = torch.zeros_like(f)
    fyy[:, 1:-1] = (f[:, 2:] - 2 * f[:, 1:-1] + f[:, :-2]) / dy ** 2
    return fxx + fyy


def solver_step(vel, nu_t, dnu_dy):
    """Explicit step of a diffusion-dominated channel flow with variable eddy viscosity."""
    out = []
    for c in range(2):
        u = vel[..., c]
        du_dy = torch.zeros_like(u)
        du_dy[:, 1:-1] = (u[:, 2:] - u[:, :-2]) / (2 * dy)
        out.append(u + DT * ((NU + nu_t) * laplacian(u) + dnu_dy * du_dy))
    return torch.stack(out, dim=-1)


geometry = ChannelGeometry()
xs, ys = torch.meshgrid(torch.arange(NX) * dx, torch.linspace(0, 1, NY), indexing="ij")
grid_pts = torch.stack([xs, ys], dim=-1).reshape(-1, 2)
wall_mask = torch.from_numpy(geometry.on_wall(grid_pts.numpy()))

closure = EddyViscosity()
optimizer = torch.optim.Adam(closure.parameters(), lr=1e-3)

# reference snapshots: filtered high-resolution flow, here a synthetic decaying channel flow
y_profile = torch.sin(torch.pi * ys)
vel0 = torch.stack([y_profile * (1 + 0.1 * torch.cos(2 * torch.pi * xs)), 0.05 * y_profile * torch.sin(2 * torch.pi * xs)], dim=-1)
reference = [vel0 * (0.97 ** (k + 1)) + 0.002 * torch.randn(NX, NY, 2) for k in range(4)]

for epoch in range(3):
    coords = grid_pts.clone().requires_grad_(True)
    vel = vel0
    rollout_loss = 0.0
    wall_loss = 0.0
    for k in range(4):
        grad_mag = (vel[..., 0] - torch.roll(vel[..., 0], 1, 0)).abs().reshape(-1, 1) / dx
        nu_t = closure(coords, grad_mag)
        dnu = torch.autograd.grad(nu_t.sum(), coords, create_graph=True)[0]
        vel = solver_step(vel, nu_t.reshape(NX, NY), dnu[:, 1].reshape(NX, NY))
        rollout_loss = rollout_loss + ((vel - reference[k]) ** 2).mean()
        # no-penetration at the walls: v . n = 0
        normals = torch.as_tensor(geometry.boundary_normal(grid_pts[wall_mask].numpy()))
        v_wall = vel.reshape(-1, 2)[wall_mask]
        wall_loss = wall_loss + ((v_wall * normals).sum(-1) ** 2).mean()
    loss = rollout_loss + 10.0 * wall_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} rollout {rollout_loss.item():.5f} wall {wall_loss.item():.5f}")
