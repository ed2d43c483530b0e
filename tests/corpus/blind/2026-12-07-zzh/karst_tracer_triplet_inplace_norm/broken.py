"""Karst water tracing: a triplet-trained embedding of dye breakthrough curves, L2-normalised in place.

Source: https://github.com/adambielski/siamese-triplet/issues/51

The report: the repository's ``EmbeddingNetL2`` subclass normalises the embedding with
``output /= output.pow(2).sum(1, keepdim=True).sqrt()``. Swapping it in for the plain
``EmbeddingNet`` in triplet training raised "one of the variables needed for gradient
computation has been modified by an inplace operation: [..., which is output 0 of
AddmmBackward, is at version 1; expected version 0": ``pow`` saved the embedding for its
backward, and the in-place division then overwrote it. The author reported having a fix
(normalising out of place).

The setting here is the writer's: a karst hydrology group injects fluorescent dye at
several sinkholes and records breakthrough curves (concentration against time) at
springs. Curves that come from the same injection point should embed close together, so
a 1-D conv encoder is trained with a triplet margin loss on (anchor, positive, negative)
curves; its L2-normalising subclass divides in place. The backward runs inside the
closure handed to ``optimizer.step``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HP = dict(curve_len=48, n_sources=5, curves_per_source=12, embed_dim=8, margin=0.3,
          triplets_per_step=24, steps=5, lr=2e-3)


def breakthrough_curve(t, arrival, spread, peak):
    """Advection-dispersion-like pulse arriving at a spring."""
    t = t.clamp(min=1e-3)
    return peak * torch.exp(-((t - arrival) ** 2) / (2 * spread ** 2)) * (t / arrival).sqrt()


def tracer_library(hp, gen):
    t = torch.linspace(0.05, 1.0, hp["curve_len"])
    curves, source_ids = [], []
    for s in range(hp["n_sources"]):
        arrival = 0.15 + 0.12 * s
        spread = 0.04 + 0.01 * s
        for _ in range(hp["curves_per_source"]):
            jitter = 1 + 0.1 * torch.randn(3, generator=gen)
            c = breakthrough_curve(t, arrival * jitter[0], spread * jitter[1].abs(), jitter[2].abs())
            curves.append(c + 0.02 * torch.randn(hp["curve_len"], generator=gen))
            source_ids.append(s)
    return torch.stack(curves).unsqueeze(1), torch.tensor(source_ids)


def sample_triplets(source_ids, count, gen):
    anchors, positives, negatives = [], [], []
    n = source_ids.shape[0]
    while len(anchors) < count:
        a, p, q = torch.randint(0, n, (3,), generator=gen).tolist()
        if a != p and source_ids[a] == source_ids[p] and source_ids[a] != source_ids[q]:
            anchors.append(a)
            positives.append(p)
            negatives.append(q)
    return torch.tensor(anchors), torch.tensor(positives), torch.tensor(negatives)


class CurveEncoder(nn.Module):
    def __init__(self, curve_len, embed_dim):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(1, 8, 5, padding=2), nn.PReLU(), nn.MaxPool1d(2),
            nn.Conv1d(8, 16, 5, padding=2), nn.PReLU(), nn.MaxPool1d(2),
        )
        self.fc = nn.Sequential(nn.Linear(16 * (curve_len // 4), 32), nn.PReLU(), nn.Linear(32, embed_dim))

    def forward(self, x):
        h = self.conv(x)
        return self.fc(h.flatten(1))


class CurveEncoderL2(CurveEncoder):
    def forward(self, x):
        output = super().forward(x)
        output /= output.pow(2).sum(1, keepdim=True).sqrt()
        return output


class TripletNet(nn.Module):
    def __init__(self, embedding_net):
        super().__init__()
        self.embedding_net = embedding_net

    def forward(self, a, p, n):
        return self.embedding_net(a), self.embedding_net(p), self.embedding_net(n)


def main():
    torch.manual_seed(3)
    gen = torch.Generator().manual_seed(3)
    curves, source_ids = tracer_library(HP, gen)
    encoder = CurveEncoderL2(HP["curve_len"], HP["embed_dim"])
    triplet_net = TripletNet(encoder)
    optimizer = torch.optim.Adam(triplet_net.parameters(), lr=HP["lr"])
    criterion = nn.TripletMarginLoss(margin=HP["margin"])

    for step in range(HP["steps"]):
        ia, ip, ineg = sample_triplets(source_ids, HP["triplets_per_step"], gen)

        def closure():
            optimizer.zero_grad()
            emb_a, emb_p, emb_n = triplet_net(curves[ia], curves[ip], curves[ineg])
            triplet_loss = criterion(emb_a, emb_p, emb_n)
            triplet_loss.backward()
            return triplet_loss

        loss_value = optimizer.step(closure)
        print(f"step {step}: triplet loss {loss_value.item():.4f}")

    with torch.no_grad():
        emb = encoder(curves)
        centroid_gap = F.pdist(torch.stack([emb[source_ids == s].mean(0) for s in range(HP["n_sources"])]))
    print("min centroid gap", round(centroid_gap.min().item(), 4))


if __name__ == "__main__":
    main()
