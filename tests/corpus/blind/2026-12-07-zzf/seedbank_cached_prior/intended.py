"""Seed-bank imaging: viability from X-ray crops of stored seeds, with a learned Gaussian prior on the embedding.

Source: https://github.com/pytorch/pytorch/pull/7708

The report: "[distributions] Always enable grad when calculating lazy_property"
(fixing #7705): a distribution's cached properties are computed with grad enabled
and kept on the instance, so a ``torch.distributions`` object built from tensors
that require grad carries their graph for as long as the object lives. This
script builds a learned ``MultivariateNormal`` prior (location and Cholesky factor
from parameters) once, when the trainer is set up, and keeps the distribution
object on the trainer. Every step scores the seed embeddings under it; the second
step's backward runs into the graph that made the prior's scale, freed by the
first step.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal

HP = {"n_seeds": 80, "side": 8, "latent": 4, "hidden": 40, "batch": 20, "lr": 1e-3, "epochs": 2}


class SeedEncoder(nn.Module):
    def __init__(self, side, hidden, latent):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(side * side, hidden), nn.ReLU(), nn.Linear(hidden, latent))

    def forward(self, crops):
        return self.net(crops)


class LearnedPrior(nn.Module):
    def __init__(self, latent):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(latent))
        self.raw_diag = nn.Parameter(torch.zeros(latent))
        self.offdiag = nn.Parameter(torch.zeros(latent, latent))

    def distribution(self):
        tril = torch.tril(self.offdiag, diagonal=-1) + torch.diag(F.softplus(self.raw_diag) + 1e-3)
        return MultivariateNormal(self.loc, scale_tril=tril)


class ViabilityTrainer:
    def __init__(self, encoder, prior_net, classifier, hp):
        self.encoder, self.prior_net, self.classifier = encoder, prior_net, classifier
        self.hp = hp
        params = list(encoder.parameters()) + list(prior_net.parameters()) + list(classifier.parameters())
        self.optimizer = torch.optim.Adam(params, lr=hp["lr"])

    def step(self, crops, viable):
        self.optimizer.zero_grad()
        z = self.encoder(crops)
        viability_loss = F.binary_cross_entropy_with_logits(self.classifier(z).squeeze(-1), viable)
        prior = self.prior_net.distribution()
        prior_loss = -prior.log_prob(z).mean()
        (viability_loss + 0.05 * prior_loss).backward()
        self.optimizer.step()
        return viability_loss.item(), prior_loss.item()


def xray_crops(hp):
    crops = torch.rand(hp["n_seeds"], hp["side"], hp["side"])
    density = crops[:, 2:6, 2:6].mean(dim=(1, 2))
    viable = (density + 0.1 * torch.randn(hp["n_seeds"]) > 0.5).float()
    return crops, viable


def main():
    torch.manual_seed(73)
    hp = HP
    crops, viable = xray_crops(hp)
    encoder = SeedEncoder(hp["side"], hp["hidden"], hp["latent"])
    prior_net = LearnedPrior(hp["latent"])
    classifier = nn.Linear(hp["latent"], 1)
    trainer = ViabilityTrainer(encoder, prior_net, classifier, hp)
    for epoch in range(hp["epochs"]):
        for start in range(0, hp["n_seeds"], hp["batch"]):
            sl = slice(start, start + hp["batch"])
            v_loss, p_loss = trainer.step(crops[sl], viable[sl])
        print(f"epoch {epoch}: viability {v_loss:.4f} prior {p_loss:.4f}")


if __name__ == "__main__":
    main()
