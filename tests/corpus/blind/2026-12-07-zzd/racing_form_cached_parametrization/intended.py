"""Greyhound / horse-racing form comparison: a siamese scorer says which of two runners finishes ahead.

Source: https://github.com/pytorch/pytorch/issues/72041 -- the author trains a feed-forward network
with a siamese branch whose layers carry a weight-standardisation parametrization
(``torch.nn.utils.parametrize.register_parametrization``) and turns on
``torch.nn.utils.parametrize.cached()`` to avoid recomputing the standardised weights, and training
fails with "Trying to backward through the graph a second time". Inside the cached context the
parametrized weight is computed once, with its graph, and every later use returns that same tensor.

Reduction: the runners' recent-form vectors go through a shared encoder of weight-standardised
linear layers; the whole epoch loop runs inside ``parametrize.cached()`` (to save the
standardisation on each forward), so the cached weights of step 1 are backpropagated again at step 2.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P

torch.manual_seed(7)

CONFIG = {
    "form_features": 12,  # last-5 finishing positions, weight carried, going, draw, days since run ...
    "hidden": 32,
    "embed": 16,
    "pairs": 96,
    "batch": 32,
    "epochs": 2,
    "lr": 3e-3,
}


class WeightStandardization(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, w):
        mean = w.mean(dim=1, keepdim=True)
        std = w.std(dim=1, keepdim=True)
        return (w - mean) / (std + self.eps)


def ws_linear(n_in, n_out):
    layer = nn.Linear(n_in, n_out)
    P.register_parametrization(layer, "weight", WeightStandardization())
    return layer


class FormEncoder(nn.Module):
    def __init__(self, n_in, hidden, embed):
        super().__init__()
        self.fc1 = ws_linear(n_in, hidden)
        self.fc2 = ws_linear(hidden, embed)

    def forward(self, x):
        return self.fc2(F.leaky_relu(self.fc1(x), 0.1))


class PairwiseHead(nn.Module):
    def __init__(self, embed):
        super().__init__()
        self.out = nn.Linear(2 * embed, 1)

    def forward(self, za, zb):
        return self.out(torch.cat([za - zb, za * zb], dim=1)).squeeze(1)


def make_race_pairs(n, d):
    ability = torch.randn(d)
    runner_a = torch.randn(n, d)
    runner_b = torch.randn(n, d)
    a_ahead = ((runner_a - runner_b) @ ability + 0.3 * torch.randn(n) > 0).float()
    return runner_a, runner_b, a_ahead


def batches(a, b, y, size):
    for i in range(0, len(y), size):
        yield a[i:i + size], b[i:i + size], y[i:i + size]


def main():
    cfg = CONFIG
    runner_a, runner_b, a_ahead = make_race_pairs(cfg["pairs"], cfg["form_features"])
    encoder = FormEncoder(cfg["form_features"], cfg["hidden"], cfg["embed"])
    head = PairwiseHead(cfg["embed"])
    optimizer = torch.optim.AdamW(list(encoder.parameters()) + list(head.parameters()), lr=cfg["lr"])

    for epoch in range(cfg["epochs"]):
        total = 0.0
        for xa, xb, y in batches(runner_a, runner_b, a_ahead, cfg["batch"]):
            with P.cached():
                logits = head(encoder(xa), encoder(xb))
            ranking_loss = F.binary_cross_entropy_with_logits(logits, y)
            optimizer.zero_grad()
            ranking_loss.backward()
            optimizer.step()
            total += ranking_loss.item()
        print(f"epoch {epoch}: ranking loss {total:.4f}")


if __name__ == "__main__":
    main()
