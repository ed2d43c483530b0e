"""Poincare embeddings of a small taxonomy, with a hyperbolic multinomial logistic regression
head, both trained by a Riemannian SGD written by hand.

Reduces https://github.com/ferrine/hyrnn/issues/11. The reporter ran hyrnn, whose hyperbolic
MLR layer (MobiusDist2Hyperplane) puts its normal vector on the unit sphere in its constructor
with ``geoopt.ManifoldParameter(tangent, manifold=sphere).proj_()``. ``proj_`` copies the
projection into the parameter in place, outside ``torch.no_grad()``, and PyTorch refuses:
"a leaf Variable that requires grad has been used in an in-place operation". The geoopt
maintainer's answer: in-place projections of leaf parameters now need a no_grad context.

Here the author embeds a 40-node tree in the Poincare ball (Nickel & Kiela loss on
ancestor pairs with sampled negatives) and classifies every node by its top-level subtree with
a gyroplane MLR head whose points live on the ball and whose normals live on the sphere; a
small ManifoldParameter class mimics geoopt's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
EPS = 1e-5


class PoincareBall:
    def projx(self, x):
        norm = x.norm(dim=-1, keepdim=True).clamp_min(EPS)
        return torch.where(norm > 1 - 1e-3, x / norm * (1 - 1e-3), x)

    def mobius_add(self, x, y):
        xy = (x * y).sum(-1, keepdim=True)
        x2 = (x * x).sum(-1, keepdim=True)
        y2 = (y * y).sum(-1, keepdim=True)
        num = (1 + 2 * xy + y2) * x + (1 - x2) * y
        return num / (1 + 2 * xy + x2 * y2).clamp_min(EPS)

    def dist(self, x, y):
        return 2 * torch.atanh(self.mobius_add(-x, y).norm(dim=-1).clamp(max=1 - EPS))

    def egrad2rgrad(self, x, grad):
        return grad * ((1 - (x * x).sum(-1, keepdim=True)) ** 2 / 4)

    def retr(self, x, u):
        return self.projx(x + u)


class Sphere:
    def projx(self, x):
        return x / x.norm(dim=-1, keepdim=True).clamp_min(EPS)

    def egrad2rgrad(self, x, grad):
        return grad - (x * grad).sum(-1, keepdim=True) * x

    def retr(self, x, u):
        return self.projx(x + u)


class ManifoldParameter(nn.Parameter):
    def __new__(cls, data, manifold, requires_grad=True):
        param = super().__new__(cls, data, requires_grad)
        param.manifold = manifold
        return param

    def proj_(self):
        return self.copy_(self.manifold.projx(self))


class RiemannianSGD(torch.optim.Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                manifold = getattr(p, "manifold", None)
                if manifold is None:
                    p.add_(p.grad, alpha=-group["lr"])
                else:
                    rgrad = manifold.egrad2rgrad(p, p.grad)
                    p.copy_(manifold.retr(p, -group["lr"] * rgrad))


class PoincareEmbedding(nn.Module):
    def __init__(self, n_nodes, dim, ball):
        super().__init__()
        self.ball = ball
        self.weight = ManifoldParameter(torch.empty(n_nodes, dim).uniform_(-1e-3, 1e-3), ball)

    def forward(self, idx):
        return self.weight[idx]


class HyperbolicMLR(nn.Module):
    """One gyroplane per class: a point on the ball and a unit normal (hyrnn's MobiusDist2Hyperplane)."""

    def __init__(self, dim, n_classes, ball):
        super().__init__()
        self.ball = ball
        self.point = ManifoldParameter(torch.randn(n_classes, dim) * 1e-2, ball)
        self.tangent = ManifoldParameter(torch.randn(n_classes, dim), Sphere())
        with torch.no_grad():
            self.tangent.proj_()
        self.scale = nn.Parameter(torch.ones(n_classes))

    def forward(self, x):
        diff = self.ball.mobius_add(-self.point.unsqueeze(0), x.unsqueeze(1))  # (B, K, D)
        num = 2 * (diff * self.tangent).sum(-1)
        den = (1 - (diff * diff).sum(-1)).clamp_min(EPS)
        return self.scale * torch.asinh(num / den)


def taxonomy(branching=3, depth=3):
    parent, frontier, top = [-1], [0], [0]
    for _ in range(depth):
        new = []
        for node in frontier:
            for _ in range(branching):
                parent.append(node)
                top.append(len(parent) - 1 if node == 0 else top[node])
                new.append(len(parent) - 1)
        frontier = new
    pairs = []
    for child in range(1, len(parent)):
        anc = parent[child]
        while anc != -1:
            pairs.append((child, anc))
            anc = parent[anc]
    tops = sorted(set(top[1:]))
    labels = torch.tensor([tops.index(t) for t in top[1:]])
    return len(parent), torch.tensor(pairs), labels


n_nodes, pairs, labels = taxonomy()
ball = PoincareBall()
embedding = PoincareEmbedding(n_nodes, 2, ball)
head = HyperbolicMLR(2, 3, ball)
emb_opt = RiemannianSGD(embedding.parameters(), lr=0.3)
head_opt = RiemannianSGD(head.parameters(), lr=0.05)

N_NEG = 8
for it in range(80):
    batch = pairs[torch.randint(len(pairs), (32,))]
    negs = torch.randint(n_nodes, (32, N_NEG))
    u = embedding(batch[:, 0])
    cands = embedding(torch.cat([batch[:, 1:], negs], dim=1))
    dists = ball.dist(u.unsqueeze(1), cands)
    emb_loss = F.cross_entropy(-dists, torch.zeros(32, dtype=torch.long))

    nodes = torch.randint(1, n_nodes, (32,))
    cls_loss = F.cross_entropy(head(embedding(nodes)), labels[nodes - 1])

    emb_opt.zero_grad()
    head_opt.zero_grad()
    (emb_loss + 0.5 * cls_loss).backward()
    emb_opt.step()
    head_opt.step()
    if it % 20 == 0:
        print(f"it {it}: emb {emb_loss.item():.3f} cls {cls_loss.item():.3f}")
