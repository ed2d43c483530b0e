"""DeepSDF-style auto-decoder with an eikonal regulariser, trained with two backward calls.

Report: https://github.com/sdv-dev/CTGAN/issues/37
In CTGAN the WGAN-GP gradient penalty is backpropagated on its own (``pen.backward(...)``) before
the critic loss (``loss_d.backward()``); the two share the generator's forward graph, and the
maintainer explains the penalty's backward keeps the graph with ``retain_graph=True`` because the
critic loss still has to go through it. Without it the second backward fails. The training
setting is the writer's: the shared part is the per-shape latent-code lookup and its expansion
to the sampled points, the penalty is an eikonal term (|grad_x f| = 1, taken with
``autograd.grad(create_graph=True)``) on off-surface points, backpropagated before the clamped
L1 SDF loss; the penalty's backward is written without ``retain_graph``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SHAPES, CODE, PTS, CLAMP = 6, 8, 64, 0.1


class SDFDecoder(nn.Module):
    def __init__(self, code_dim, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(code_dim + 3, hidden), nn.Softplus(beta=100),
            nn.Linear(hidden, hidden), nn.Softplus(beta=100),
            nn.Linear(hidden, 1),
        )

    def forward(self, codes, xyz):
        return self.net(torch.cat([codes, xyz], dim=-1)).squeeze(-1)


def sphere_sdf(xyz, radius):
    return xyz.norm(dim=-1) - radius


# synthetic shapes: spheres of different radii, points sampled near the surface
radii = torch.linspace(0.3, 0.8, N_SHAPES)


def sample_batch(shape_ids):
    dirs = F.normalize(torch.randn(len(shape_ids), PTS, 3), dim=-1)
    r = radii[shape_ids][:, None, None] + 0.05 * torch.randn(len(shape_ids), PTS, 1)
    xyz = dirs * r
    sdf = sphere_sdf(xyz, radii[shape_ids][:, None])
    return xyz, sdf


decoder = SDFDecoder(CODE)
lat_vecs = nn.Embedding(N_SHAPES, CODE)
nn.init.normal_(lat_vecs.weight, 0.0, 0.01)
optimizer = torch.optim.Adam([
    {"params": decoder.parameters(), "lr": 1e-3},
    {"params": lat_vecs.parameters(), "lr": 1e-3},
])
eik_weight, code_reg = 0.1, 1e-4

for it in range(4):
    shape_ids = torch.randint(0, N_SHAPES, (4,))
    xyz, sdf_gt = sample_batch(shape_ids)
    codes = lat_vecs(shape_ids)                      # shared by both terms
    codes_pts = codes[:, None, :].expand(-1, PTS, -1)

    optimizer.zero_grad()

    # eikonal term on uniformly sampled space points
    space = (torch.rand(len(shape_ids), PTS, 3) * 2 - 1).requires_grad_(True)
    f_space = decoder(codes_pts, space)
    grad_x, = torch.autograd.grad(f_space.sum(), space, create_graph=True)
    eikonal = ((grad_x.norm(dim=-1) - 1) ** 2).mean()
    (eik_weight * eikonal).backward()

    # clamped L1 SDF loss + latent code regulariser
    pred = decoder(codes_pts, xyz)
    sdf_loss = (pred.clamp(-CLAMP, CLAMP) - sdf_gt.clamp(-CLAMP, CLAMP)).abs().mean()
    sdf_loss = sdf_loss + code_reg * codes.pow(2).sum(-1).mean()
    sdf_loss.backward()
    optimizer.step()
    print(f"iter {it} sdf {sdf_loss.item():.4f} eik {eikonal.item():.4f}")
