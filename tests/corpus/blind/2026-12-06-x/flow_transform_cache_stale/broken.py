"""Tabular anomaly detection: a RealNVP-style normalising flow fitted to normal transactions.

Reduced from https://github.com/pyro-ppl/pyro/issues/2564 ("TransformModule cache is invalid after
optimizer step"), observed while writing Pyro's normalising-flow tutorial (pyro-ppl/pyro#2542). The
tutorial built ``flow_dist = TransformedDistribution(base_dist, [spline_transform])`` once and trained
it with a torch optimizer on the same data tensor at every step. The transforms cache their last
(x, y) pair (``cache_size=1``) and ``Transform._inv_call`` returns the cached x when it is handed the
same y object again, so from the second step on ``log_prob`` reused the x computed at the previous
step, whose graph the previous backward had freed: "Trying to backward through the graph a second
time". The fix was to call ``flow_dist.clear_cache()`` after ``optimizer.step()``.

The training setting is the writer's: the flow's coupling layers are ``torch.distributions.Transform``
subclasses that are also ``nn.Module`` (as Pyro's ``TransformModule`` is), the normal-class table is
small enough to be fitted full-batch, and points are scored as anomalies by their negative
log-likelihood.
"""
import torch
import torch.nn as nn
from torch.distributions import Independent, Normal, Transform, TransformedDistribution, constraints

torch.manual_seed(0)
D = 8
MIX = torch.randn(3, D)  # the latent factors behind normal transactions


def make_transactions(n, anomalous=False):
    """Correlated features of normal transactions; anomalies break the correlation structure."""
    z = torch.randn(n, 3)
    x = z @ MIX + 0.1 * torch.randn(n, D)
    x[:, 0] = torch.log1p(x[:, 0].abs()) * 2.0  # amount-like, skewed
    if anomalous:
        x = x[:, torch.randperm(D)] + 0.5 * torch.randn(n, D)
    return x


class TransformModule(Transform, nn.Module):
    """A parametrised, cached bijection (Pyro's TransformModule)."""

    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True

    def __init__(self):
        nn.Module.__init__(self)
        Transform.__init__(self, cache_size=1)

    __hash__ = nn.Module.__hash__


class AffineCoupling(TransformModule):
    def __init__(self, dim, mask, hidden=32):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2 * dim))
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def _params(self, x_cond):
        log_s, t = self.net(x_cond).chunk(2, -1)
        return torch.tanh(log_s) * (1 - self.mask), t * (1 - self.mask)

    def _call(self, x):
        log_s, t = self._params(x * self.mask)
        return x * torch.exp(log_s) + t

    def _inverse(self, y):
        log_s, t = self._params(y * self.mask)
        return (y - t) * torch.exp(-log_s)

    def log_abs_det_jacobian(self, x, y):
        log_s, _ = self._params(x * self.mask)
        return log_s.sum(-1)


class ActNormTransform(TransformModule):
    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))

    def _call(self, x):
        return x * self.log_scale.exp() + self.loc

    def _inverse(self, y):
        return (y - self.loc) * torch.exp(-self.log_scale)

    def log_abs_det_jacobian(self, x, y):
        return self.log_scale.sum().expand(x.shape[:-1])


class Flow(nn.ModuleList):
    def clear_cache(self):
        for t in self:
            t._cached_x_y = None, None


masks = [(torch.arange(D) % 2 == i % 2).float() for i in range(4)]
flow = Flow([m for mask in masks for m in (ActNormTransform(D), AffineCoupling(D, mask))])
base_dist = Independent(Normal(torch.zeros(D), torch.ones(D)), 1)
flow_dist = TransformedDistribution(base_dist, list(flow), validate_args=False)

X_train = make_transactions(512)
X_test = torch.cat([make_transactions(128), make_transactions(32, anomalous=True)])
is_anomaly = torch.cat([torch.zeros(128), torch.ones(32)])
mean, std = X_train.mean(0), X_train.std(0)
X_train, X_test = (X_train - mean) / std, (X_test - mean) / std

optimizer = torch.optim.Adam(flow.parameters(), lr=5e-3)

for step in range(201):
    loss = -flow_dist.log_prob(X_train).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        with torch.no_grad():
            score = -flow_dist.log_prob(X_test)
            flagged = score.topk(32).indices
            precision = is_anomaly[flagged].mean()
        print(f"step {step}: train nll {loss.item():.3f} precision@32 {precision:.2f}")
