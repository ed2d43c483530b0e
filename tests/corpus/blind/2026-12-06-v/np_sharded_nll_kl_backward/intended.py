"""Corrected: the KL term joins the single deferred backward through the encoders
(``loss = (rep * rep_grad).sum() + kl``) instead of being back-propagated on its own first, as the
sharded loss requires of any extra term that shares the encoder graph.

Neural process (Garnelo et al. 2018) with a deterministic path (mean-aggregated context encoding r)
and a latent path (global z, KL between the posterior from the targets and the prior from the context),
trained on random 1-D sine functions. To bound memory over many target points, the target likelihood
is computed in shards: the decoder runs shard by shard on a detached copy of the representation
[r, z], each shard's loss is back-propagated at once, and the gradient gathered on the representation
is back-propagated through the encoders a single time at the end (OpenNMT's sharded loss trick).

Reduced from https://github.com/OpenNMT/OpenNMT-py/issues/2153: the author needed an extra loss (a
classification head on the encoder) in OpenNMT's sharded loss computation, which back-propagates each
shard itself and then runs one ``torch.autograd.backward(inputs, grads)`` through the decoder and the
encoder. They added ``class_loss.backward()`` in that loss computation and training crashed in the
backward pass: the extra loss's own backward frees the encoder graph that the deferred backward then
goes through again ("Trying to backward through the graph a second time" in this reduction). Here
the extra term is the KL of the latent path, back-propagated on its own before the sharded
likelihood; the report is a translation model, the training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, kl_divergence

torch.manual_seed(0)

B, N_POINTS, R_DIM, Z_DIM, H = 16, 64, 32, 16, 64
SHARD = 16


def sample_functions(b, n):
    x = torch.rand(b, n, 1) * 4 - 2
    amp = torch.rand(b, 1, 1) * 1.5 + 0.5
    phase = torch.rand(b, 1, 1) * 3.14
    y = amp * torch.sin(2 * x + phase) + 0.05 * torch.randn(b, n, 1)
    return x, y


def mlp(i, o):
    return nn.Sequential(nn.Linear(i, H), nn.ReLU(), nn.Linear(H, H), nn.ReLU(), nn.Linear(H, o))


class DeterministicEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(2, R_DIM)

    def forward(self, x, y):
        return self.net(torch.cat([x, y], dim=-1)).mean(dim=1)


class LatentEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(2, H)
        self.mu = nn.Linear(H, Z_DIM)
        self.log_sigma = nn.Linear(H, Z_DIM)

    def forward(self, x, y):
        s = F.relu(self.net(torch.cat([x, y], dim=-1)).mean(dim=1))
        return Normal(self.mu(s), 0.1 + 0.9 * torch.sigmoid(self.log_sigma(s)))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(1 + R_DIM + Z_DIM, 2)

    def forward(self, x, rep):
        h = self.net(torch.cat([x, rep.unsqueeze(1).expand(-1, x.shape[1], -1)], dim=-1))
        mu, raw_sigma = h.chunk(2, dim=-1)
        return Normal(mu, 0.1 + 0.9 * F.softplus(raw_sigma))


def sharded_target_nll(decoder, rep, x_target, y_target, shard_size):
    """Back-propagates the target NLL shard by shard into the decoder; returns d NLL / d rep and the NLL."""
    rep_leaf = rep.detach().requires_grad_()
    n, total = x_target.shape[1], 0.0
    for s in range(0, n, shard_size):
        dist = decoder(x_target[:, s:s + shard_size], rep_leaf)
        loss = -dist.log_prob(y_target[:, s:s + shard_size]).sum() / (x_target.shape[0] * n)
        loss.backward()
        total += loss.item()
    return rep_leaf.grad, total


det_encoder = DeterministicEncoder()
lat_encoder = LatentEncoder()
decoder = Decoder()
params = list(det_encoder.parameters()) + list(lat_encoder.parameters()) + list(decoder.parameters())
optimizer = torch.optim.Adam(params, lr=1e-3)

for step in range(5):
    x, y = sample_functions(B, N_POINTS)
    n_ctx = int(torch.randint(3, 20, ()).item())
    ctx = torch.randperm(N_POINTS)[:n_ctx]
    x_c, y_c = x[:, ctx], y[:, ctx]

    optimizer.zero_grad()
    r = det_encoder(x_c, y_c)
    prior = lat_encoder(x_c, y_c)
    posterior = lat_encoder(x, y)
    z = posterior.rsample()
    rep = torch.cat([r, z], dim=-1)

    kl = kl_divergence(posterior, prior).sum(dim=-1).mean()

    rep_grad, nll = sharded_target_nll(decoder, rep, x, y, SHARD)
    loss = (rep * rep_grad).sum() + kl  # deferred likelihood backward and the KL, through the encoders once
    loss.backward()
    optimizer.step()
    print(f"step {step}: nll {nll:.4f} kl {kl.item():.4f} (context {n_ctx})")
