"""A machine-learned potential trained on energies and forces, with forces as minus the energy's gradient.

Training calls ``forces`` with grad on; the validation pass wraps everything in ``torch.no_grad()``, where the
positions record no graph and the gradient inside ``forces`` has nothing to differentiate.
"""

import torch
from torch import nn

torch.manual_seed(7)


class Potential(nn.Module):
    def __init__(self, atoms=4, hidden=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3 * atoms, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, pos):
        return self.mlp(pos.flatten(1)).squeeze(-1)

    @torch.enable_grad()  # a derivative is part of what forces computes, wherever it is called
    def forces(self, pos, train=False):
        pos = pos.clone().requires_grad_(True)
        energy = self(pos)
        (grad,) = torch.autograd.grad(energy.sum(), pos, create_graph=train)
        return energy, -grad


def reference(pos):
    """A toy pair potential: energies and forces to fit."""
    pos = pos.clone().requires_grad_(True)
    e = (torch.cdist(pos, pos) ** 2).sum((1, 2)) * 0.1
    return e.detach(), -torch.autograd.grad(e.sum(), pos)[0]


model = Potential()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
train_pos, val_pos = torch.randn(32, 4, 3), torch.randn(8, 4, 3)
train_e, train_f = reference(train_pos)
val_e, val_f = reference(val_pos)

for epoch in range(4):
    e, f = model.forces(train_pos, train=True)
    loss = nn.functional.mse_loss(e, train_e) + nn.functional.mse_loss(f, train_f)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        _, vf = model.forces(val_pos)
        print(f"epoch {epoch}: loss {loss.item():.4f} val force error {(vf - val_f).abs().mean().item():.4f}")
