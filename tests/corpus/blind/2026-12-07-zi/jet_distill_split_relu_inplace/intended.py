"""Jet tagging with a particle-flow (Deep Sets) network over jet constituents: per-particle
information-distillation blocks, energy-weighted pooling, a top-vs-QCD classifier.

Report: https://github.com/hellloxiaotian/ESRGCNN/issues/9 -- ESRGCNN's distillation block splits
a feature map with ``torch.split`` into a distilled and a remaining part and passes the remaining
part through ``nn.ReLU(inplace=True)``; training fails in ``torch.relu_`` with "Output 1 of
SplitWithSizesBackward0 is a view and is being modified inplace". The remaining part is meant to
be rectified out of place (``nn.ReLU()``), as the error says. The training setting (particle-flow
jet tagging on synthetic constituents) is the writer's; the split-then-in-place-ReLU distillation
block is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_JETS = 64
N_PART = 16
N_FEAT = 6  # log pT, eta-rel, phi-rel, log E, charge, pid flag
BATCH = 16


def make_jets():
    """Synthetic jets: 'top' jets have three hard prongs, QCD jets one core; padded constituents."""
    x = torch.randn(N_JETS, N_PART, N_FEAT) * 0.5
    y = (torch.arange(N_JETS) % 2).float()
    energy = torch.rand(N_JETS, N_PART).pow(3)
    prong = torch.zeros(N_JETS, N_PART)
    prong[y == 1, :3] = 1.0
    energy = energy + prong
    x[..., 0] = energy.log1p()
    x[..., 3] = energy.log1p() + 0.1 * torch.randn(N_JETS, N_PART)
    n_real = torch.randint(8, N_PART + 1, (N_JETS,))
    mask = torch.arange(N_PART)[None, :] < n_real[:, None]
    energy = energy * mask
    x = x * mask[..., None]
    return x, energy, mask, y


class DistillBlock(nn.Module):
    """Per-particle distillation: keep part of the features, refine the rest."""

    def __init__(self, dim, keep):
        super().__init__()
        self.keep = keep
        self.expand = nn.Linear(dim, dim)
        self.refine = nn.Linear(dim - keep, dim - keep)
        self.act = nn.ReLU()
        self.fuse = nn.Linear(dim, dim)

    def forward(self, h):
        out = self.expand(h)
        distilled, remain = torch.split(out, (self.keep, out.shape[-1] - self.keep), dim=-1)
        remain = self.refine(self.act(remain))
        return h + self.fuse(torch.cat([distilled, remain], dim=-1))


class ParticleFlowNet(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.phi_in = nn.Linear(N_FEAT, dim)
        self.blocks = nn.ModuleList([DistillBlock(dim, dim // 4) for _ in range(2)])
        self.rho = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, x, energy, mask):
        h = F.relu(self.phi_in(x))
        for blk in self.blocks:
            h = blk(h)
        # energy-weighted pooling over the real constituents
        w = energy * mask
        w = w / w.sum(dim=1, keepdim=True).clamp_min(1e-6)
        jet = (w.unsqueeze(-1) * h).sum(dim=1)
        return self.rho(jet).squeeze(-1)


def main():
    x, energy, mask, y = make_jets()
    tagger = ParticleFlowNet()
    optimizer = torch.optim.AdamW(tagger.parameters(), lr=1e-3, weight_decay=1e-2)
    for epoch in range(3):
        perm = torch.randperm(N_JETS)
        running = 0.0
        for i in range(0, N_JETS, BATCH):
            idx = perm[i:i + BATCH]
            logits = tagger(x[idx], energy[idx], mask[idx])
            loss = F.binary_cross_entropy_with_logits(logits, y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item() * len(idx)
        with torch.no_grad():
            acc = ((tagger(x, energy, mask) > 0).float() == y).float().mean().item()
        print(f"epoch {epoch} loss {running / N_JETS:.4f} acc {acc:.3f}")


if __name__ == "__main__":
    main()
