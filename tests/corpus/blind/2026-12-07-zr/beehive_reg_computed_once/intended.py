"""Beehive acoustic state classifier with an L2 penalty on the hive embeddings.

Source: https://github.com/shenweichen/DeepCTR-Torch/issues/69
In early DeepCTR-Torch the model's ``BaseModel.__init__`` computed the
regularisation term over the embedding weights once (``self.reg_loss``) and
``fit`` added that same tensor to every batch's loss, so ``backward`` had to be
called with ``retain_graph=True``; the maintainers later changed the library to
compute the penalty inside the batch loop (v0.2.2) and dropped the flag.

Reduction: the writer's setting is a hive-monitoring classifier (band energies
from a microphone in the brood box, a learned embedding per hive, three states:
queenright, queenless, pre-swarm). The model builds its penalty in ``__init__``
the way the library did and ``fit`` adds it to each batch's cross entropy, with
a plain ``backward()``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CONFIG = {
    "n_hives": 12,
    "n_bands": 24,
    "hive_dim": 6,
    "hidden": 48,
    "n_states": 3,
    "l2_hive": 1e-3,
    "l2_head": 1e-4,
    "lr": 3e-3,
    "batch_size": 32,
    "epochs": 3,
}


def synth_recordings(n, n_hives, n_bands, n_states):
    """Log band energies of 10 s clips, a hive id per clip, and the colony state."""
    hive = torch.randint(0, n_hives, (n,))
    state = torch.randint(0, n_states, (n,))
    base = torch.linspace(-1.0, 1.0, n_bands)
    bands = base.unsqueeze(0) + 0.3 * torch.randn(n, n_bands)
    # queenless colonies hum higher, pre-swarm colonies get louder overall
    bands[state == 1, n_bands // 2:] += 0.8
    bands[state == 2] += 0.5
    return bands, hive, state


class HiveSoundNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.hive_embedding = nn.Embedding(cfg["n_hives"], cfg["hive_dim"])
        self.encoder = nn.Sequential(
            nn.Linear(cfg["n_bands"], cfg["hidden"]),
            nn.ReLU(),
            nn.Linear(cfg["hidden"], cfg["hidden"]),
            nn.ReLU(),
        )
        self.head = nn.Linear(cfg["hidden"] + cfg["hive_dim"], cfg["n_states"])
        self.regularization_weight = [
            (list(self.hive_embedding.parameters()), cfg["l2_hive"]),
            ([self.head.weight], cfg["l2_head"]),
        ]

    def add_regularization_loss(self):
        total = torch.zeros(())
        for params, weight in self.regularization_weight:
            for p in params:
                total = total + weight * torch.sum(p * p)
        return total

    def forward(self, bands, hive):
        h = self.encoder(bands)
        e = self.hive_embedding(hive)
        return self.head(torch.cat([h, e], dim=-1))

    def fit(self, bands, hive, state, cfg):
        optim = torch.optim.Adam(self.parameters(), lr=cfg["lr"])
        n = bands.shape[0]
        history = []
        for epoch in range(cfg["epochs"]):
            perm = torch.randperm(n)
            epoch_loss = 0.0
            for start in range(0, n, cfg["batch_size"]):
                idx = perm[start:start + cfg["batch_size"]]
                logits = self(bands[idx], hive[idx])
                optim.zero_grad()
                loss = F.cross_entropy(logits, state[idx])
                reg_loss = self.add_regularization_loss()
                total_loss = loss + reg_loss
                total_loss.backward()
                optim.step()
                epoch_loss += total_loss.item() * idx.numel()
            history.append(epoch_loss / n)
            print(f"epoch {epoch}: loss {history[-1]:.4f}")
        return history


def evaluate(model, bands, hive, state):
    model.eval()
    with torch.no_grad():
        pred = model(bands, hive).argmax(dim=-1)
    model.train()
    return (pred == state).float().mean().item()


def main():
    cfg = CONFIG
    bands, hive, state = synth_recordings(256, cfg["n_hives"], cfg["n_bands"], cfg["n_states"])
    val = synth_recordings(64, cfg["n_hives"], cfg["n_bands"], cfg["n_states"])
    model = HiveSoundNet(cfg)
    model.fit(bands, hive, state, cfg)
    print(f"validation accuracy {evaluate(model, *val):.3f}")


if __name__ == "__main__":
    main()
