"""A neural potential trained on energies; after each epoch an evaluation, decorated with torch.no_grad(),
reports the error of the forces the potential predicts (minus the energy's gradient with respect to the
positions)."""

import torch
from torch import nn


class Potential(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3, 32), nn.SiLU(), nn.Linear(32, 1))

    def forward(self, pos):
        return self.mlp(pos).sum(dim=(1, 2))


def predicted_forces(potential, pos):
    with torch.enable_grad():  # the evaluation turns grad off; the forces need it
        pos.requires_grad_(True)
        energy = potential(pos)
        dE = torch.autograd.grad(energy.sum(), pos)[0]
    return -dE


@torch.no_grad()
def force_error(potential, pos, true_forces):
    return (predicted_forces(potential, pos) - true_forces).abs().mean().item()


torch.manual_seed(4)
potential = Potential()
opt = torch.optim.Adam(potential.parameters(), lr=1e-2)
train_pos = [torch.randn(8, 5, 3) for _ in range(3)]
train_energy = [p.pow(2).sum(dim=(1, 2)) for p in train_pos]
val_pos = torch.randn(8, 5, 3)
val_forces = -2 * val_pos
for epoch in range(3):
    for pos, e_true in zip(train_pos, train_energy):
        loss = (potential(pos) - e_true).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: force error {force_error(potential, val_pos, val_forces):.4f}")
