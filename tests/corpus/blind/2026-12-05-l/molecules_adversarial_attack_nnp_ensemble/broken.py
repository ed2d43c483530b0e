"""Adversarial sampling of an ensemble of neural network interatomic potentials.

Reduced from https://github.com/learningmatter-mit/Atomistic-Adversarial-Attacks/issues/1: the author
follows the repository's attack (Schwalbe-Koda et al., "Differentiable sampling of molecular geometries
with uncertainty-based adversarial attacks") with a potential of their own instead of the repository's
NeuralFF: the model predicts the energy of a molecule from its atomic positions and returns the forces
(the energy's gradient with respect to the positions) from its forward. An ensemble of such potentials
is attacked: a displacement `delta` of the atoms is optimised with Adam so that the ensemble's force
variance, weighted by the Boltzmann probability of the predicted energy, grows.
"""

import torch
from torch import nn

torch.manual_seed(0)

N_ATOMS = 6
N_MODELS = 3
TEMPERATURE = 0.5
EPOCHS = 5


class RadialPotential(nn.Module):
    """Atomic energies from Gaussian radial features of all pair distances; forces by autograd."""

    def __init__(self, n_rbf: int = 16, hidden: int = 32, cutoff: float = 3.0):
        super().__init__()
        self.register_buffer("centers", torch.linspace(0.5, cutoff, n_rbf))
        self.gamma = 4.0
        self.atomwise = nn.Sequential(
            nn.Linear(n_rbf, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def atomic_energies(self, xyz):
        diff = xyz[:, None, :] - xyz[None, :, :]
        dist = (diff.pow(2).sum(-1) + 1e-9).sqrt()
        not_self = ~torch.eye(len(xyz), dtype=torch.bool)
        rbf = torch.exp(-self.gamma * (dist[..., None] - self.centers) ** 2) * not_self[..., None]
        return self.atomwise(rbf.sum(1)).squeeze(-1)

    def forward(self, batch):
        xyz = batch["nxyz"][:, 1:]
        energy = self.atomic_energies(xyz).sum()
        energy_grad = torch.autograd.grad(energy, xyz, grad_outputs=torch.ones_like(energy))[0]
        return {"energy": energy, "energy_grad": energy_grad}


class Ensemble:
    def __init__(self, models):
        self.models = models


class AdvLoss:
    """Force uncertainty of the ensemble times the Boltzmann probability of its mean energy."""

    def __init__(self, train_energies, temperature=1.0):
        self.e = train_energies
        self.temperature = temperature

    def boltzmann_probability(self, e):
        return torch.exp(-e / self.temperature)

    @property
    def partition_fn(self):
        return self.boltzmann_probability(self.e).mean()

    def probability_fn(self, yp):
        return self.boltzmann_probability(yp) / self.partition_fn

    def loss_fn(self, e, f):
        return -f.var(-1).mean(-1, keepdim=True) * self.probability_fn(e.mean(-1).reshape(-1, 1))


class Attacker:
    def __init__(self, initial_nxyz, ensemble, adv_loss, delta_init=0.01, epsilon=0.5, optim_lr=1e-2):
        self.initial = initial_nxyz
        self.ensemble = ensemble
        self.loss_fn = adv_loss
        self.delta_init = delta_init
        self.epsilon = epsilon
        self.optim_lr = optim_lr

    @property
    def num_atoms(self):
        return len(self.initial)

    def initialize_translation(self):
        delta = self.delta_init * torch.randn((self.num_atoms, 3))
        delta.requires_grad = True
        opt = torch.optim.Adam([delta], lr=self.optim_lr)
        return delta, opt

    def attack(self, epochs):
        delta, opt = self.initialize_translation()
        results = []
        for epoch in range(epochs):
            results.append({"epoch": epoch, **self.attack_epoch(opt, delta)})
        return results

    def prepare_attack(self, delta):
        nxyz = self.initial.clone()
        translation = torch.cat([torch.zeros((self.num_atoms, 1)), delta], dim=1)
        nxyz.requires_grad = True
        return {"nxyz": nxyz + translation, "delta": delta}

    def attack_epoch(self, opt, delta):
        opt.zero_grad()
        batch = self.prepare_attack(delta)
        results = [m(batch) for m in self.ensemble.models]
        forces = torch.stack([r["energy_grad"] for r in results], dim=-1)
        energy = torch.stack([r["energy"] for r in results], dim=-1)
        energy_per_atom = energy / self.num_atoms
        loss = self.loss_fn.loss_fn(e=energy_per_atom, f=forces).sum()
        loss_item = loss.item()

        opt.zero_grad()
        loss.backward()
        opt.step()
        delta.data.clamp_(-self.epsilon, self.epsilon)
        return {"energy": energy.detach(), "forces": forces.detach(), "loss": loss_item}


def main():
    # the geometry to attack: atomic numbers and positions, as the repository's `nxyz`
    numbers = torch.tensor([[8.0], [1.0], [1.0], [6.0], [1.0], [1.0]])
    positions = torch.randn(N_ATOMS, 3) * 0.8
    initial = torch.cat([numbers, positions], dim=1)
    train_energies = 0.1 * torch.randn(64)

    models = []
    for _ in range(N_MODELS):
        models.append(RadialPotential())
    ensemble = Ensemble(models)

    attacker = Attacker(initial, ensemble, AdvLoss(train_energies, temperature=TEMPERATURE))
    results = attacker.attack(epochs=EPOCHS)
    for r in results:
        print(f"epoch {r['epoch']}: adversarial loss {r['loss']:.5f}")


if __name__ == "__main__":
    main()
