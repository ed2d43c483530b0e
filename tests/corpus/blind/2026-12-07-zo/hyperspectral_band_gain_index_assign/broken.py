"""Hyperspectral pixel classification with an iterative per-abundance band-gain refinement.

Source: https://www.yongfengli.tk/2018/04/13/inplace-operation-in-pytorch.html -- a blog
post on the "one of the variables needed for gradient computation has been modified by
an inplace operation" error, built around the author's own forward:
``b = torch.mm(self.param, a)``, then a loop ``b[i] = b[i] + 1`` followed by
``y = y + torch.mm(self.param, b)``; the post explains that the assignment to ``b[i]``
changes data a matmul needs for its gradient, and rewrites it out of place
(``b = b + bione`` with a one-hot ``bione``) or with ``clone()``.

Reduction: the toy forward becomes a spectral model on synthetic Indian-Pines-like
patches: the centre spectrum is projected to endmember abundances, each abundance in turn
gets a learned gain from its band group, and the mixed features of every refinement step
are summed before the land-cover classifier.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

N_BANDS = 64
N_ENDMEMBERS = 8
N_CLASSES = 5
PATCH = 5


def make_scene(n_pixels=256):
    """Synthetic patches (N, bands, 5, 5) drawn from class-specific endmember mixtures."""
    endmembers = torch.rand(N_ENDMEMBERS, N_BANDS)
    labels = torch.randint(0, N_CLASSES, (n_pixels,))
    class_mix = torch.softmax(2.0 * torch.randn(N_CLASSES, N_ENDMEMBERS), dim=1)
    abund = class_mix[labels] + 0.05 * torch.rand(n_pixels, N_ENDMEMBERS)
    spectra = abund @ endmembers
    cube = spectra.view(n_pixels, N_BANDS, 1, 1).expand(-1, -1, PATCH, PATCH)
    cube = cube + 0.02 * torch.randn(n_pixels, N_BANDS, PATCH, PATCH)
    return cube, labels


class SpectralRefiner(nn.Module):
    def __init__(self, n_bands, n_end, n_classes, n_refine=4):
        super().__init__()
        self.n_refine = n_refine
        self.group = n_bands // n_end
        self.unmix = nn.Linear(n_bands, n_end)
        self.band_gain = nn.Parameter(0.1 * torch.ones(n_end))
        self.mix = nn.Linear(n_end, 32)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(32, n_classes))

    def band_groups(self, spectrum):
        return spectrum.view(spectrum.shape[0], -1, self.group).mean(-1)

    def forward(self, cube):
        centre = cube[:, :, PATCH // 2, PATCH // 2]
        groups = self.band_groups(centre)
        z = self.unmix(centre)
        feats = 0
        for k in range(self.n_refine):
            z[:, k] = z[:, k] + self.band_gain[k] * groups[:, k]
            feats = feats + self.mix(z)
        return self.head(feats / self.n_refine)


def train(model, opt, cube, labels, epochs=2, batch=64):
    for epoch in range(epochs):
        perm = torch.randperm(cube.shape[0])
        for i in range(0, cube.shape[0], batch):
            idx = perm[i:i + batch]
            logits = model(cube[idx])
            ce = F.cross_entropy(logits, labels[idx])
            opt.zero_grad()
            ce.backward()
            opt.step()
        print(f"epoch {epoch}: ce={ce.item():.4f}")


if __name__ == "__main__":
    cube, labels = make_scene()
    model = SpectralRefiner(N_BANDS, N_ENDMEMBERS, N_CLASSES)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    train(model, opt, cube, labels)
