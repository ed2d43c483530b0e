"""scVI-style VAE over counts (negative binomial likelihood) conditioned on batch summaries.

Source: https://github.com/yinizhizhu/GNMOT/issues/12
The report: GNMOT's training raised "Trying to backward through the graph a second time".
In its second stage the global vertex summary ``V`` is aggregated once per epoch from the
detections' appearance features (``V_CON.append(torch.mean(vs, 0))``, which, unlike the
edge and vertex outputs next to it, is not taken with ``.data``; the appearance features
come from a ResNet run without no_grad), and then every candidate in the loop computes
``u1 = self.Uphi(E, V, self.u)`` and calls backward and ``optimizer2.step()``: the first
candidate's backward frees the graph under ``V`` and the second fails. Here the author
trains an scVI-like model for batch correction: once per epoch, a frozen reference-atlas
encoder summarises each sequencing batch as the mean embedding of its cells, and every
minibatch's encoder and decoder read that per-batch summary. The training setting is the
writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CELLS, N_GENES, N_BATCHES, N_LATENT, CTX, MINIBATCH, EPOCHS = 96, 40, 3, 6, 8, 32, 2


def nb_log_likelihood(x, mu, theta, eps=1e-8):
    log_theta_mu = torch.log(theta + mu + eps)
    return (theta * (torch.log(theta + eps) - log_theta_mu) + x * (torch.log(mu + eps) - log_theta_mu)
            + torch.lgamma(x + theta) - torch.lgamma(theta) - torch.lgamma(x + 1))


class ReferenceEncoder(nn.Module):
    """A pretrained atlas embedding of log-normalised expression (kept frozen)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_GENES, 32), nn.ReLU(), nn.Linear(32, CTX))

    def forward(self, x):
        return self.net(torch.log1p(x / x.sum(1, keepdim=True) * 1e4))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(N_GENES + CTX, 64), nn.BatchNorm1d(64), nn.ReLU())
        self.mean = nn.Linear(64, N_LATENT)
        self.logvar = nn.Linear(64, N_LATENT)

    def forward(self, x, ctx):
        h = self.body(torch.cat([torch.log1p(x), ctx], dim=1))
        return self.mean(h), self.logvar(h)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(N_LATENT + CTX, 64), nn.ReLU())
        self.scale = nn.Linear(64, N_GENES)
        self.log_theta = nn.Parameter(torch.zeros(N_GENES))  # gene-wise dispersion

    def forward(self, z, ctx, library):
        px_scale = torch.softmax(self.scale(self.body(torch.cat([z, ctx], dim=1))), dim=-1)
        return library * px_scale, self.log_theta.exp()


# synthetic counts: two cell types, a multiplicative batch effect per gene
cell_type = torch.randint(0, 2, (N_CELLS,))
batch = torch.randint(0, N_BATCHES, (N_CELLS,))
programs = torch.rand(2, N_GENES) * 3
batch_effect = torch.exp(0.5 * torch.randn(N_BATCHES, N_GENES))
rate = programs[cell_type] * batch_effect[batch] * torch.randint(5, 20, (N_CELLS, 1))
counts = torch.poisson(rate)

reference = ReferenceEncoder()
encoder = Encoder()
decoder = Decoder()
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)


def batch_summaries():
    """Mean reference embedding of each sequencing batch."""
    with torch.no_grad():  # a fixed summary, like the .data taken for the other aggregates
        emb = reference(counts)
    return torch.stack([emb[batch == b].mean(0) for b in range(N_BATCHES)])


for epoch in range(EPOCHS):
    context = batch_summaries()
    order = torch.randperm(N_CELLS)
    for start in range(0, N_CELLS, MINIBATCH):
        idx = order[start:start + MINIBATCH]
        x, ctx = counts[idx], context[batch[idx]]
        library = x.sum(1, keepdim=True)

        qz_mean, qz_logvar = encoder(x, ctx)
        z = qz_mean + torch.randn_like(qz_mean) * torch.exp(0.5 * qz_logvar)
        mu, theta = decoder(z, ctx, library)
        reconst = -nb_log_likelihood(x, mu, theta).sum(1).mean()
        kl = 0.5 * (qz_mean.pow(2) + qz_logvar.exp() - 1 - qz_logvar).sum(1).mean()
        loss = reconst + kl

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: reconst {reconst.item():.2f} kl {kl.item():.3f}")
