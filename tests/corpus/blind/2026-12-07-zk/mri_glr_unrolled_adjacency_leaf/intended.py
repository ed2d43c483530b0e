"""Unrolled MRI reconstruction with a graph-Laplacian-regularised (GLR) denoiser.

Source: https://github.com/huyvd7/pytorch-deepglr/issues/4 -- training DeepGLR
("python train_GLR.py ...") stops in ``supporting_matrix`` at ``A[p[1], p[0]] = 1``
with "a view of a leaf Variable that requires grad is being used in an in-place
operation". The helper that builds the fixed pixel-grid connectivity marks the 0/1
adjacency matrix ``requires_grad_(True)`` (it is stored on the options object as
``connectivity_full``) and then fills in the symmetric entries one by one.

The report is an image denoiser; the training setting (an unrolled reconstruction
that alternates a learned GLR denoising step with k-space data consistency on
undersampled single-coil MRI) is the writer's. The mechanism is the report's: a
structural constant marked as requiring grad before it is finished being written.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

WIDTH = 8          # image side; the graph has WIDTH*WIDTH nodes
BATCH = 4
N_ITERS = 2        # unrolled iterations


class Opt:
    """Options shared by the GLR blocks (as in the report's ``opt`` object)."""

    def __init__(self, width):
        self.width = width
        self.edges = 0
        self.pairs = None
        self.H = None
        self.connectivity_full = None
        self.connectivity_idx = None


def supporting_matrix(opt):
    """4-neighbour grid graph: edge list, incidence matrix H and adjacency A."""
    n = opt.width ** 2
    pairs = []
    for r in range(opt.width):
        for c in range(opt.width):
            i = r * opt.width + c
            if c + 1 < opt.width:
                pairs.append((i, i + 1))
            if r + 1 < opt.width:
                pairs.append((i, i + opt.width))
    opt.edges = len(pairs)
    H = torch.zeros(opt.edges, n)
    A = torch.zeros(n, n)
    for e, p in enumerate(pairs):
        H[e, p[0]] = 1
        H[e, p[1]] = -1
        A[p[0], p[1]] = 1
    opt.pairs = pairs
    opt.H = H
    opt.connectivity_full = A  # grid structure: a constant, not a parameter
    opt.connectivity_idx = torch.where(A > 0)
    for e, p in enumerate(pairs):
        A[p[1], p[0]] = 1


class FeatureCNN(nn.Module):
    def __init__(self, feats=6):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, feats, 3, padding=1),
        )

    def forward(self, x):
        return self.net(x)


class WeightCNN(nn.Module):
    """Predicts the regularisation strength u of the GLR step per image."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        h = F.relu(self.conv(x)).mean(dim=(2, 3))
        return F.softplus(self.fc(h)) + 0.01


class GLRDenoiser(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.cnnf = FeatureCNN()
        self.cnnu = WeightCNN()
        n = opt.width ** 2
        self.register_buffer("eye", torch.eye(n))

    def forward(self, x):
        b = x.shape[0]
        n = self.opt.width ** 2
        E = self.cnnf(x).view(b, -1, n, 1)
        Fs = (self.opt.H.matmul(E)) ** 2              # b, feats, edges, 1
        w = torch.exp(-Fs.sum(dim=1).squeeze(-1) / 2)  # b, edges
        W = x.new_zeros(b, n, n)
        i0, i1 = self.opt.connectivity_idx
        W = W.index_put((torch.arange(b)[:, None], i0[None], i1[None]), w)
        W = W + W.transpose(1, 2)
        L = torch.diag_embed(W.sum(-1)) - W
        u = self.cnnu(x).view(b, 1, 1)
        y = x.view(b, n, 1)
        out = torch.linalg.solve(self.eye + u * L, y)
        return out.view_as(x)


def data_consistency(x, k0, mask):
    k = torch.fft.fft2(x)
    k = torch.where(mask, k0, k)
    return torch.fft.ifft2(k).real


class UnrolledRecon(nn.Module):
    def __init__(self, opt, n_iters):
        super().__init__()
        self.blocks = nn.ModuleList([GLRDenoiser(opt) for _ in range(n_iters)])

    def forward(self, k0, mask):
        x = torch.fft.ifft2(k0).real
        for block in self.blocks:
            x = block(x)
            x = data_consistency(x, k0, mask)
        return x


def make_batch():
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, WIDTH), torch.linspace(-1, 1, WIDTH), indexing="ij")
    centres = torch.rand(BATCH, 2) - 0.5
    radius = 0.3 + 0.3 * torch.rand(BATCH)
    img = ((xx[None] - centres[:, 0, None, None]) ** 2 + (yy[None] - centres[:, 1, None, None]) ** 2
           < radius[:, None, None] ** 2).float().unsqueeze(1)
    mask = torch.rand(1, 1, WIDTH, WIDTH) < 0.4
    mask[..., 0, 0] = True
    k0 = torch.fft.fft2(img + 0.05 * torch.randn_like(img)) * mask
    return img, k0, mask


opt = Opt(WIDTH)
supporting_matrix(opt)
model = UnrolledRecon(opt, N_ITERS)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(4):
    target, k0, mask = make_batch()
    recon = model(k0, mask)
    loss = F.mse_loss(recon, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
