"""Keystroke-dynamics user verification with running per-user typing templates.

Source: https://discuss.pytorch.org/t/exponential-moving-average-with-backward/93219
The author wanted an exponential moving average of a tensor produced by a network and
used it inside the loss; the "straightforward implementation" keeps every past value's
graph inside the average, so the average drags the previous iterations' graphs along.
The reply points to batch norm, whose running statistics are buffers updated without
autograd.

Reduction: a GRU encodes hold/flight-time sequences; a template bank keeps an EMA of
each user's embedding and a center loss pulls embeddings towards their user's template.
The bank's update is written as the straightforward EMA of the live embeddings, so the
template tensor kept on the bank carries the previous step's (already freed) graph and
the second step's backward fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

SETTINGS = dict(
    n_users=8,
    seq_len=20,
    feat=3,  # hold time, down-down latency, up-down latency
    embed=16,
    batch=32,
    steps=6,
    momentum=0.9,
    center_weight=0.3,
    lr=2e-3,
)


def typing_sessions(cfg, n=256):
    users = torch.randint(0, cfg["n_users"], (n,))
    style = torch.randn(cfg["n_users"], 1, cfg["feat"]) * 0.4
    base = torch.tensor([0.11, 0.19, 0.08]).view(1, 1, -1)
    jitter = 0.05 * torch.randn(n, cfg["seq_len"], cfg["feat"])
    return (base + style[users] + jitter).abs(), users


class RhythmEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gru = nn.GRU(cfg["feat"], 32, batch_first=True)
        self.out = nn.Linear(32, cfg["embed"])

    def forward(self, x):
        _, h = self.gru(torch.log1p(x * 10.0))
        return F.normalize(self.out(h[-1]), dim=-1)


class TemplateBank(nn.Module):
    def __init__(self, n_users, dim, momentum):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("templates", torch.zeros(n_users, dim))
        self.register_buffer("seen", torch.zeros(n_users, dtype=torch.bool))

    def update(self, emb, users):
        sums = torch.zeros_like(self.templates).index_add(0, users, emb)
        counts = torch.bincount(users, minlength=self.templates.shape[0]).clamp(min=1)
        means = sums / counts.unsqueeze(1)
        present = torch.zeros_like(self.seen)
        present[users] = True
        m = torch.where(self.seen, self.momentum, 0.0).unsqueeze(1)
        blended = m * self.templates + (1 - m) * means
        self.templates = torch.where(present.unsqueeze(1), blended, self.templates)
        self.seen = self.seen | present

    def center_loss(self, emb, users):
        return (emb - self.templates[users]).pow(2).sum(-1).mean()


def train(cfg):
    sessions, labels = typing_sessions(cfg)
    encoder = RhythmEncoder(cfg)
    classifier = nn.Linear(cfg["embed"], cfg["n_users"])
    bank = TemplateBank(cfg["n_users"], cfg["embed"], cfg["momentum"])
    opt = torch.optim.AdamW(list(encoder.parameters()) + list(classifier.parameters()), lr=cfg["lr"])

    for step in range(cfg["steps"]):
        idx = torch.randperm(sessions.shape[0])[: cfg["batch"]]
        x, users = sessions[idx], labels[idx]
        emb = encoder(x)
        bank.update(emb, users)
        id_loss = F.cross_entropy(classifier(emb), users)
        center = bank.center_loss(emb, users)
        total = id_loss + cfg["center_weight"] * center
        opt.zero_grad()
        total.backward()
        opt.step()
        print(f"step {step}: id {id_loss.item():.3f} center {center.item():.4f}")


if __name__ == "__main__":
    train(SETTINGS)
