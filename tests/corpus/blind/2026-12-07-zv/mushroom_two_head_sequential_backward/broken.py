"""Mushroom identification: a shared trunk with a species head and an edibility head.

Reduced from https://stackoverflow.com/questions/46774641/what-does-the-parameter-retain-graph-mean-in-the-variables-backward-method
The answer there describes a network with shared convolutional layers feeding two
classification branches ("does the image contain a cat / a car"), trained by
back-propagating through one branch and then through the other: the first
backward frees the shared layers' graph, so the second one fails unless the first
retains it. Here the trunk encodes cap, gill and spore-print measurements, and a
helper back-propagates the species loss and then the edibility loss one after
the other before the optimizer step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "n_features": 14,
    "n_species": 6,
    "hidden": 32,
    "batch_size": 24,
    "epochs": 3,
    "lr": 3e-3,
    "toxic_weight": 2.0,
}


def make_specimens(n, n_features, n_species):
    """Synthetic field records: morphology features, species id, edible flag."""
    centres = torch.randn(n_species, n_features) * 1.5
    species = torch.randint(0, n_species, (n,))
    feats = centres[species] + 0.6 * torch.randn(n, n_features)
    toxic_species = torch.tensor([0, 3])
    edible = (~torch.isin(species, toxic_species)).float()
    return feats, species, edible


class MorphologyTrunk(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
        )

    def forward(self, x):
        return self.net(x)


class SpeciesHead(nn.Module):
    def __init__(self, hidden, n_species):
        super().__init__()
        self.fc = nn.Linear(hidden, n_species)

    def forward(self, z):
        return self.fc(z)


class EdibilityHead(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(hidden, hidden // 2)
        self.fc2 = nn.Linear(hidden // 2, 1)

    def forward(self, z):
        return self.fc2(torch.tanh(self.fc1(z))).squeeze(-1)


def backprop_branches(species_loss, edible_loss):
    species_loss.backward()
    edible_loss.backward()


def train_epoch(trunk, species_head, edible_head, optimizer, data, cfg):
    feats, species, edible = data
    perm = torch.randperm(feats.shape[0])
    total = 0.0
    for start in range(0, feats.shape[0], cfg["batch_size"]):
        idx = perm[start:start + cfg["batch_size"]]
        optimizer.zero_grad()
        shared = trunk(feats[idx])
        species_logits = species_head(shared)
        edible_logits = edible_head(shared)
        species_loss = F.cross_entropy(species_logits, species[idx])
        weight = 1.0 + (cfg["toxic_weight"] - 1.0) * (1.0 - edible[idx])
        edible_loss = F.binary_cross_entropy_with_logits(edible_logits, edible[idx], weight=weight)
        backprop_branches(species_loss, edible_loss)
        optimizer.step()
        total += species_loss.item() + edible_loss.item()
    return total


def main():
    cfg = CONFIG
    data = make_specimens(144, cfg["n_features"], cfg["n_species"])
    trunk = MorphologyTrunk(cfg["n_features"], cfg["hidden"])
    species_head = SpeciesHead(cfg["hidden"], cfg["n_species"])
    edible_head = EdibilityHead(cfg["hidden"])
    params = list(trunk.parameters()) + list(species_head.parameters()) + list(edible_head.parameters())
    optimizer = torch.optim.Adam(params, lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        total = train_epoch(trunk, species_head, edible_head, optimizer, data, cfg)
        print(f"epoch {epoch}: summed loss {total:.3f}")


if __name__ == "__main__":
    main()
