"""Antibody CDR design with discrete structure tokens: residue encoder, affine-reparameterised VQ codebook, sequence/structure decoder.

Reduced from https://github.com/minyoungg/vqtorch/issues/3: with vqtorch's ``inplace_optimizer``
the VQ layer updates its codebook *inside* the forward pass, running
``((z_q - z.detach()) ** 2).mean().backward()`` and an optimizer step on the codebook, then
looking the codes up again ("forward pass again with the updated codebook").  The author's
training, which worked without ``inplace_optimizer``, then failed at its own ``loss.backward()``
with "Trying to backward through the graph a second time".  The codebook that is looked up is
the affine-reparameterised one (vqtorch's ``affine_lr``): it is computed once before the inner
backward, which frees its graph, and the second lookup reuses it, so the outer loss's path to
the codebook runs through freed buffers.  The training setting (residue-level structure tokens
for antibody CDRs with sequence-recovery and distance losses) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

L = 16            # residues: CDR-H3 with a few framework anchors
N_AA = 20
N_CODES = 32
DIM = 24


def make_antibody_batch(batch):
    seq = torch.randint(0, N_AA, (batch, L))
    phi_psi = torch.rand(batch, L, 2) * 2 * torch.pi - torch.pi
    steps = torch.stack([torch.cos(phi_psi[..., 0]), torch.sin(phi_psi[..., 0]), 0.5 * torch.sin(phi_psi[..., 1])], -1)
    ca = torch.cumsum(3.8 * F.normalize(steps, dim=-1), dim=1)                # CA trace
    feats = torch.cat([F.one_hot(seq, N_AA).float(), torch.cos(phi_psi), torch.sin(phi_psi)], -1)
    return feats, seq, ca


class AffineCodebook(nn.Module):
    """Learned scale and shift applied to the raw codebook (vqtorch's affine reparameterisation)."""

    def __init__(self, dim, lr_scale=10.0):
        super().__init__()
        self.lr_scale = lr_scale
        self.scale = nn.Parameter(torch.zeros(dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, codebook):
        return codebook * (1 + self.lr_scale * self.scale) + self.lr_scale * self.shift


class VectorQuant(nn.Module):
    def __init__(self, dim, num_codes, inplace_optimizer=None):
        super().__init__()
        self.codebook = nn.Embedding(num_codes, dim)
        self.affine = AffineCodebook(dim)
        if inplace_optimizer is not None:
            self.inplace_codebook_optimizer = inplace_optimizer(self.codebook.parameters())

    def quantize(self, z):
        codebook = self.affine(self.codebook.weight)
        with torch.no_grad():
            q = torch.cdist(z.reshape(-1, z.shape[-1]), codebook).argmin(-1).view(z.shape[:-1])
        z_q = F.embedding(q, codebook)
        if self.training and hasattr(self, "inplace_codebook_optimizer"):
            # update the codebook in place, then look the codes up again
            ((z_q - z.detach()) ** 2).mean().backward()
            self.inplace_codebook_optimizer.step()
            self.inplace_codebook_optimizer.zero_grad()
            z_q = F.embedding(q, codebook)
        return z_q, q

    def forward(self, z):
        z_q, q = self.quantize(z)
        vq_loss = F.mse_loss(z_q, z.detach())          # beta = 1: the codebook term only
        z_q = z + (z_q - z).detach()                    # straight-through to the encoder
        return z_q, q, vq_loss


class StructureTokenizer(nn.Module):
    def __init__(self, vq):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(N_AA + 4, 64), nn.GELU(), nn.Linear(64, DIM))
        self.vq = vq
        self.context = nn.Conv1d(DIM, 64, 5, padding=2)
        self.aa_head = nn.Linear(64, N_AA)
        self.coord_head = nn.Linear(64, 3)

    def forward(self, feats):
        z = self.encoder(feats)
        z_q, codes, vq_loss = self.vq(z)
        h = F.gelu(self.context(z_q.transpose(1, 2))).transpose(1, 2)
        return self.aa_head(h), self.coord_head(h), vq_loss


def distance_loss(pred_ca, true_ca):
    return F.smooth_l1_loss(torch.cdist(pred_ca, pred_ca), torch.cdist(true_ca, true_ca))


inplace_sgd = lambda params: torch.optim.SGD(params, lr=10.0, momentum=0.9)
vq = VectorQuant(DIM, N_CODES, inplace_optimizer=inplace_sgd)
model = StructureTokenizer(vq)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

for step in range(4):
    feats, seq, ca = make_antibody_batch(batch=8)
    aa_logits, pred_ca, vq_loss = model(feats)
    seq_loss = F.cross_entropy(aa_logits.reshape(-1, N_AA), seq.reshape(-1))
    struct_loss = distance_loss(pred_ca, ca)
    loss = seq_loss + 0.1 * struct_loss + 10.0 * vq_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: seq {seq_loss.item():.3f} dist {struct_loss.item():.3f} vq {vq_loss.item():.4f}")
