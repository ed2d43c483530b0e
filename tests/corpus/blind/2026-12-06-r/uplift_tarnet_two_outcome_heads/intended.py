"""Uplift modelling with a two-head outcome network (TARNet layout), reduced from a public report.

Source: https://github.com/kuangliu/pytorch-retinanet/issues/38 ("Specify retain_graph=True when
calling backward the first time"): the report's script runs a network with a shared trunk and two
output heads and backpropagates a gradient into each head's output. The training setting is the
writer's: a TARNet-style uplift model for a marketing campaign (shared representation of customer
features, one conversion head for the control group and one for the treated group), each head
fitted on the customers of its own arm, with Adam, and the uplift read off as the difference of
the two heads. Synthetic tabular data, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_FEATURES = 10


class OutcomeHead(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(hidden, hidden // 2), nn.ELU(), nn.Linear(hidden // 2, 1))

    def forward(self, phi):
        return self.net(phi).squeeze(-1)


class TARNet(nn.Module):
    def __init__(self, num_features=NUM_FEATURES, hidden=32):
        super().__init__()
        self.representation = nn.Sequential(
            nn.Linear(num_features, hidden), nn.ELU(), nn.Linear(hidden, hidden), nn.ELU()
        )
        self.control_head = OutcomeHead(hidden)
        self.treated_head = OutcomeHead(hidden)

    def forward(self, x):
        phi = self.representation(x)
        return self.control_head(phi), self.treated_head(phi)

    @torch.no_grad()
    def uplift(self, x):
        logit0, logit1 = self(x)
        return torch.sigmoid(logit1) - torch.sigmoid(logit0)


def make_campaign(n):
    x = torch.randn(n, NUM_FEATURES)
    treatment = torch.bernoulli(torch.full((n,), 0.5))
    base = x[:, 0] - 0.5 * x[:, 1]
    effect = 0.8 * (x[:, 2] > 0).float()
    converted = torch.bernoulli(torch.sigmoid(base + treatment * effect))
    return x, treatment, converted


def arm_losses(logit0, logit1, treatment, converted):
    control = treatment == 0
    treated = treatment == 1
    control_loss = F.binary_cross_entropy_with_logits(logit0[control], converted[control])
    treated_loss = F.binary_cross_entropy_with_logits(logit1[treated], converted[treated])
    return control_loss, treated_loss


def train(model, loader, epochs=2):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    for epoch in range(epochs):
        for x, treatment, converted in loader:
            optimizer.zero_grad()
            logit0, logit1 = model(x)
            control_loss, treated_loss = arm_losses(logit0, logit1, treatment, converted)
            (control_loss + treated_loss).backward()
            optimizer.step()
        print(f"epoch {epoch}: control {control_loss.item():.4f} treated {treated_loss.item():.4f}")


if __name__ == "__main__":
    x, treatment, converted = make_campaign(256)
    loader = [(x[i : i + 64], treatment[i : i + 64], converted[i : i + 64]) for i in range(0, 256, 64)]
    model = TARNet()
    train(model, loader)
    print("mean predicted uplift:", model.uplift(x).mean().item())
