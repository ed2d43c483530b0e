"""Charity appeal targeting: a lapsed-donor response model trained with a per-donor,
gift-weighted loss that is never reduced to a scalar before ``backward()``.

Source: PyTorch forum, "Grad can be implicitly created only for scalar outputs"
https://discuss.pytorch.org/t/grad-can-be-implicitly-created-only-for-scalar-outputs/116234/2

The answer in that thread: the error "grad can be implicitly created only for scalar
outputs" is raised when ``.backward()`` is called on a tensor with more than one
element; either pass the gradient explicitly (``loss.backward(gradient=
torch.ones_like(loss))``) or, the usual training case, reduce the loss first, e.g.
``loss.mean().backward()``.

Reduction (the charity setting and the weighting are mine): a fundraiser scores which
lapsed donors will answer a mail appeal. The loss is built with ``reduction='none'``
so each donor's error can be weighted by their past gift size, and the weighted
per-donor vector goes straight into ``backward()`` instead of being reduced. The
intended script reduces it to the weighted mean, as the answer says, so every donor
counts in proportion to their weight.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(41)

HPARAMS = {
    "n_donors": 256,
    "n_features": 12,
    "hidden": 32,
    "batch_size": 64,
    "epochs": 2,
    "lr": 2e-3,
}

CONFIG = {"gift_weight_cap": 5.0}


class ResponseModel(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, donors):
        return self.net(donors).squeeze(-1)


def make_donor_file(hp):
    """Recency, frequency, past gift, tenure, channel flags... as standardised features."""
    features = torch.randn(hp["n_donors"], hp["n_features"])
    last_gift = torch.exp(torch.randn(hp["n_donors"]) * 0.7 + 3.0)
    propensity = features[:, 0] * 0.8 - features[:, 1] * 0.5 + 0.3 * torch.randn(hp["n_donors"])
    responded = (propensity > 0.2).float()
    return features, last_gift, responded


def gift_weights(last_gift):
    w = last_gift / last_gift.median()
    return torch.clamp(w, max=CONFIG["gift_weight_cap"])


def train_epoch(model, optimizer, data, hp):
    features, last_gift, responded = data
    for start in range(0, hp["n_donors"], hp["batch_size"]):
        sl = slice(start, start + hp["batch_size"])
        optimizer.zero_grad()
        logits = model(features[sl])
        per_donor = F.binary_cross_entropy_with_logits(logits, responded[sl], reduction="none")
        response_loss = per_donor * gift_weights(last_gift[sl])
        response_loss.backward()
        optimizer.step()
    return response_loss


def main():
    hp = HPARAMS
    data = make_donor_file(hp)
    model = ResponseModel(hp["n_features"], hp["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        last = train_epoch(model, optimizer, data, hp)
        print(f"epoch {epoch} weighted response loss {last.item():.4f}")


if __name__ == "__main__":
    main()
