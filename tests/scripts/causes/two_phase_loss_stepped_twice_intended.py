"""A sparse autoencoder trained in two phases per batch from one forward: the reconstruction loss first, then the
reconstruction with a sparsity penalty, one optimizer over the whole model."""

import torch
import torch.nn.functional as F
from torch import nn


class SparseAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 6))
        self.dec = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x):
        code = self.enc(x)
        return code, self.dec(code)


def fit(model, opt, batches):
    for xb in batches:
        opt.zero_grad()
        code, recon = model(xb)
        rec = F.mse_loss(recon, xb)
        penalised = rec + 0.05 * code.abs().mean()
        rec.backward(retain_graph=True)
        penalised.backward()  # both phases' gradients, one step
        opt.step()


torch.manual_seed(6)
ae = SparseAE()
sgd = torch.optim.SGD(ae.parameters(), lr=0.05, momentum=0.9)
fit(ae, sgd, [torch.randn(16, 10) for _ in range(4)])
