"""(Intended) Deep Graph Infomax on a synthetic graph: a GCN encoder, a mean readout, a bilinear discriminator.

Source: https://github.com/HazyResearch/hgcn/issues/50 -- training the hgcn link-prediction model
with the Euclidean manifold failed in backward with "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [2708, 16]], which is
output 0 of ReluBackward0". The decoder projected the encoder's node embeddings onto the unit ball
with ``p.view(-1, dim).renorm_(2, 0, 1.)`` before scoring, in place, on the ReLU output that ReLU's
backward needs. The training setting (DGI with corruption by feature shuffling) is the writer's; the
mechanism (an in-place renorm of the encoder output inside the scoring function) is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_NODES, N_FEAT, HID = 40, 12, 16


def normalized_adjacency(n, p=0.15):
    a = (torch.rand(n, n) < p).float()
    a = ((a + a.t()) > 0).float()
    a.fill_diagonal_(1.0)
    d = a.sum(1).pow(-0.5)
    return d[:, None] * a * d[None, :]


class GCNEncoder(nn.Module):
    def __init__(self, in_dim, hid):
        super().__init__()
        self.lin = nn.Linear(in_dim, hid, bias=False)

    def forward(self, x, adj):
        return F.relu(adj @ self.lin(x))


class UnitBall:
    """Keeps node embeddings inside the unit ball (as the Euclidean manifold did)."""

    def normalize(self, p):
        return torch.renorm(p, 2, 0, 1.0)


class Discriminator(nn.Module):
    def __init__(self, hid):
        super().__init__()
        self.bil = nn.Bilinear(hid, hid, 1)
        self.ball = UnitBall()

    def score(self, h, s):
        h = self.ball.normalize(h)
        return self.bil(h, s.expand_as(h)).squeeze(-1)


def readout(h):
    return torch.sigmoid(h.mean(0, keepdim=True))


x = torch.randn(N_NODES, N_FEAT)
adj = normalized_adjacency(N_NODES)

encoder = GCNEncoder(N_FEAT, HID)
disc = Discriminator(HID)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(disc.parameters()), lr=1e-3)
labels = torch.cat([torch.ones(N_NODES), torch.zeros(N_NODES)])

for epoch in range(5):
    optimizer.zero_grad()
    perm = torch.randperm(N_NODES)
    h_pos = encoder(x, adj)
    h_neg = encoder(x[perm], adj)
    s = readout(h_pos)
    logits = torch.cat([disc.score(h_pos, s), disc.score(h_neg, s)])
    loss = F.binary_cross_entropy_with_logits(logits, labels)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} dgi loss {loss.item():.4f}")
