"""Prototypical network for 5-way 5-shot classification, trained episode by episode.

Report: https://github.com/IceLab-X/MiniGP/issues/13 (the stgp demo's kernel module sets
``self.length_scale = torch.exp(nn.Parameter(torch.log(torch.tensor(length_scale))))``: the
parameter is never registered, only the result of ``exp`` is kept on the module, and the second
``loss.backward()`` fails with "Trying to backward through the graph a second time"; the fix was to
keep the log-value as an ``nn.Parameter`` and take its exponential inside ``forward``). The report is a
spatio-temporal Gaussian process; the training setting is the writer's: the author keeps a learnable
softmax temperature for the prototype distances (TADAM-style metric scaling) and builds it the same way.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES = 20
FEAT_DIM = 24
N_WAY, K_SHOT, N_QUERY = 5, 5, 6
EPISODES = 30


def make_dataset(per_class=30):
    centers = torch.randn(N_CLASSES, FEAT_DIM) * 2.0
    xs, ys = [], []
    for c in range(N_CLASSES):
        xs.append(centers[c] + 0.8 * torch.randn(per_class, FEAT_DIM))
        ys.append(torch.full((per_class,), c, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


def sample_episode(x, y):
    classes = torch.randperm(N_CLASSES)[:N_WAY]
    support, query, query_labels = [], [], []
    for label, c in enumerate(classes):
        idx = (y == c).nonzero().squeeze(1)
        idx = idx[torch.randperm(idx.numel())[: K_SHOT + N_QUERY]]
        support.append(x[idx[:K_SHOT]])
        query.append(x[idx[K_SHOT:]])
        query_labels.append(torch.full((N_QUERY,), label, dtype=torch.long))
    return torch.stack(support), torch.cat(query), torch.cat(query_labels)


class Encoder(nn.Module):
    def __init__(self, in_dim, hidden=64, out_dim=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, x):
        return self.net(x)


class ScaledEuclidean(nn.Module):
    """Negative squared distance to each prototype, times a learned temperature."""

    def __init__(self, init_temperature=10.0):
        super().__init__()
        self.log_temperature = nn.Parameter(torch.log(torch.tensor(init_temperature)))

    def forward(self, queries, prototypes):
        d = torch.cdist(queries, prototypes).pow(2)
        return -d / torch.exp(self.log_temperature)


class ProtoNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder(FEAT_DIM)
        self.metric = ScaledEuclidean()

    def forward(self, support, query):
        n_way, k_shot, dim = support.shape
        emb = self.encoder(torch.cat([support.reshape(-1, dim), query]))
        s_emb, q_emb = emb[: n_way * k_shot], emb[n_way * k_shot:]
        prototypes = s_emb.reshape(n_way, k_shot, -1).mean(1)
        return self.metric(q_emb, prototypes)


def train():
    x, y = make_dataset()
    model = ProtoNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for episode in range(EPISODES):
        support, query, labels = sample_episode(x, y)
        logits = model(support, query)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        acc = (logits.argmax(1) == labels).float().mean().item()
        if episode % 10 == 0:
            print(f"episode {episode} loss {loss.item():.3f} acc {acc:.2f}")


if __name__ == "__main__":
    train()
