"""Face recognition with a CurricularFace margin head: the hard-example re-weighting built out of place.

Reduced from https://github.com/HuangYG123/CurricularFace/issues/2 . The author trained the
repository's face-recognition heads (ArcFace and CurricularFace, both on L2-normalised embeddings
and an L2-normalised class kernel) on their own data and got "one of the variables needed for
gradient computation has been modified by an inplace operation". The head reads the hard examples
out of the cosine matrix through a boolean mask and then writes the re-weighted values back into
that same matrix in place (`cos_theta[mask] = hard_example * (t + hard_example)`), followed by a
`scatter_` of the margin-adjusted target logits. With the PyTorch of the report the write
invalidated a saved copy of `cos_theta`; with today's PyTorch, boolean indexing no longer saves
the matrix and the head as posted trains, so the masked read is written here as
`torch.masked_select`, which does save its input, and the in-place write then fails the same way.
The fix the reporter found in the thread (and the maintainer confirmed gives the same loss)
builds the output out of place with `torch.where`.

Synthetic 8x8 "face crops" of 10 identities, a small CNN backbone, one SGD optimizer with a
parameter group per module, CPU.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_IDS = 10
EMB_DIM = 16
BATCH = 20
EPOCHS = 3


def l2_norm(x, axis=1):
    return x / torch.norm(x, 2, axis, True)


class Backbone(nn.Module):
    """A tiny IR-style backbone: conv stages, BN, PReLU, flattened to an embedding."""

    def __init__(self, emb_dim):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.PReLU(8),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.PReLU(16),
        )
        self.output_layer = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, emb_dim), nn.BatchNorm1d(emb_dim))

    def forward(self, x):
        return self.output_layer(self.body(x))


class CurricularFace(nn.Module):
    def __init__(self, in_features, out_features, m=0.5, s=64.0):
        super().__init__()
        self.m, self.s = m, s
        self.cos_m, self.sin_m = math.cos(m), math.sin(m)
        self.threshold = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m
        self.kernel = nn.Parameter(torch.empty(in_features, out_features))
        self.register_buffer("t", torch.zeros(1))
        nn.init.normal_(self.kernel, std=0.01)

    def forward(self, embeddings, label):
        embeddings = l2_norm(embeddings, axis=1)
        kernel_norm = l2_norm(self.kernel, axis=0)
        cos_theta = torch.mm(embeddings, kernel_norm).clamp(-1, 1)
        with torch.no_grad():
            origin_cos = cos_theta.clone()
        target_logit = cos_theta[torch.arange(embeddings.size(0)), label].view(-1, 1)

        sin_theta = torch.sqrt(1.0 - torch.pow(target_logit, 2))
        cos_theta_m = target_logit * self.cos_m - sin_theta * self.sin_m
        mask = cos_theta > cos_theta_m
        final_target_logit = torch.where(target_logit > self.threshold, cos_theta_m, target_logit - self.mm)

        with torch.no_grad():
            self.t = target_logit.mean() * 0.01 + (1 - 0.01) * self.t
        hard_value = cos_theta * (self.t + cos_theta)
        cos_theta = torch.where(mask, hard_value, cos_theta)
        cos_theta = cos_theta.scatter(1, label.view(-1, 1).long(), final_target_logit)
        return cos_theta * self.s, origin_cos * self.s


def make_faces(n_per_id):
    """Each identity is a fixed 8x8 template plus pixel noise and a random brightness shift."""
    templates = torch.randn(NUM_IDS, 1, 8, 8)
    labels = torch.arange(NUM_IDS).repeat_interleave(n_per_id)
    images = templates[labels] + 0.3 * torch.randn(len(labels), 1, 8, 8) + 0.1 * torch.randn(len(labels), 1, 1, 1)
    return images, labels


@torch.no_grad()
def verification_accuracy(backbone, images, labels):
    backbone.eval()
    emb = l2_norm(backbone(images))
    sim = emb @ emb.t()
    same = labels[:, None] == labels[None, :]
    off_diag = ~torch.eye(len(labels), dtype=torch.bool)
    pred = sim > 0.5
    backbone.train()
    return (pred == same)[off_diag].float().mean().item()


images, labels = make_faces(n_per_id=8)
val_images, val_labels = make_faces(n_per_id=2)

backbone = Backbone(EMB_DIM)
head = CurricularFace(EMB_DIM, NUM_IDS)
optimizer = torch.optim.SGD(
    [{"params": backbone.parameters(), "weight_decay": 5e-4}, {"params": head.parameters(), "weight_decay": 5e-4}],
    lr=0.05, momentum=0.9,
)

for epoch in range(EPOCHS):
    perm = torch.randperm(len(labels))
    for i in range(0, len(labels), BATCH):
        idx = perm[i:i + BATCH]
        x, y = images[idx], labels[idx]
        features = backbone(x)
        outputs, original_logits = head(features, y)
        loss = F.cross_entropy(outputs, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}  verification acc {verification_accuracy(backbone, val_images, val_labels):.3f}")
