"""Zoo enclosure monitoring: identify individual animals in keeper-camera crops, with a per-animal memory.

Source: https://github.com/fangwei123456/spikingjelly/issues/607 ("how to keep the neuron state"). The
author did not want to reset a stateful network between batches and instead carried the previous state
over (read through a monitor and written back into the neurons' ``v``); the next backward then failed with
"Trying to backward through the graph a second time", because the state kept from the last batch still
belonged to the last batch's graph, which that batch's backward had freed.

Reduction: the state kept between batches is a per-individual memory held on a tracker object (the last
embedding seen of each animal in the enclosure), not a neuron potential; the training setting is the
writer's. An embedding CNN over small crops, an identity classifier, and a temporal consistency term that
pulls each animal's embedding towards the one the tracker remembers for it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

SETTINGS = dict(n_animals=8, crop=16, embed_dim=24, batch=32, n_batches=6, lr=3e-3, consistency_weight=0.5)


def keeper_camera_stream(n_batches, batch, n_animals, crop):
    """Crops of animals in an enclosure: each individual has its own coat pattern plus lighting noise."""
    patterns = torch.randn(n_animals, 3, crop, crop)
    for _ in range(n_batches):
        ids = torch.randint(0, n_animals, (batch,))
        light = 0.6 + 0.8 * torch.rand(batch, 1, 1, 1)
        crops = light * patterns[ids] + 0.4 * torch.randn(batch, 3, crop, crop)
        yield crops, ids


class CropEmbedder(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.proj = nn.Linear(32, embed_dim)

    def forward(self, x):
        return F.normalize(self.proj(self.features(x).flatten(1)), dim=1)


class IdentityTracker:
    """Remembers the last embedding seen of every individual in the enclosure."""

    def __init__(self):
        self.memory = {}

    def consistency(self, emb, ids):
        terms = []
        for j, animal in enumerate(ids.tolist()):
            if animal in self.memory:
                terms.append(1.0 - (emb[j] * self.memory[animal]).sum())
        if not terms:
            return emb.sum() * 0.0
        return torch.stack(terms).mean()

    def update(self, emb, ids):
        for j, animal in enumerate(ids.tolist()):
            self.memory[animal] = emb[j]


def train():
    s = SETTINGS
    embedder = CropEmbedder(s["embed_dim"])
    id_head = nn.Linear(s["embed_dim"], s["n_animals"])
    opt = torch.optim.AdamW(list(embedder.parameters()) + list(id_head.parameters()), lr=s["lr"])
    tracker = IdentityTracker()

    stream = keeper_camera_stream(s["n_batches"], s["batch"], s["n_animals"], s["crop"])
    for i, (crops, ids) in enumerate(stream):
        emb = embedder(crops)
        id_loss = F.cross_entropy(id_head(emb) * 10.0, ids)
        consistency_loss = tracker.consistency(emb, ids)
        loss = id_loss + s["consistency_weight"] * consistency_loss

        opt.zero_grad()
        loss.backward()
        opt.step()
        tracker.update(emb, ids)

        print(f"batch {i}: id {id_loss.item():.3f}  consistency {consistency_loss.item():.3f}")


if __name__ == "__main__":
    train()
