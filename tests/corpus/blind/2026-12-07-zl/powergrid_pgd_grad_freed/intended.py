"""Power-grid state estimation with a GNN, a power-flow residual loss and PGD adversarial training.

Report: https://github.com/goodfire-ai/spd/pull/252 ("fix: Graph freed by pgd loss before
backward"): after a refactor, the PGD losses returned ``(loss, n_examples, grad)`` so that one
central helper computed the gradient; that helper also ran ``torch.autograd.grad`` on the final
forward pass, whose loss is then used in ``.backward()``. ``autograd.grad`` frees the graph, so
the training step fails with "RuntimeError: Trying to backward through the graph a second time".
The fix rearranges the computation so the final loss is not passed through ``autograd.grad``.
Here the PGD attack is a bounded false-data injection on the bus measurements, and the
adversarial loss is added to the clean loss of a graph state estimator (buses as nodes, lines as
edges, physics residual of the DC power-flow equations). The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_BUS = 14
LINES = torch.tensor([[0, 1], [0, 4], [1, 2], [1, 3], [1, 4], [2, 3], [3, 4], [3, 6], [3, 8],
                      [4, 5], [5, 10], [5, 11], [5, 12], [6, 7], [6, 8], [8, 9], [8, 13],
                      [9, 10], [11, 12], [12, 13]]).t()
SUSCEPT = 5.0 + 10.0 * torch.rand(LINES.size(1))


def laplacian(b):
    B = torch.zeros(N_BUS, N_BUS)
    B.index_put_((LINES[0], LINES[1]), -b, accumulate=True)
    B.index_put_((LINES[1], LINES[0]), -b, accumulate=True)
    return B - torch.diag(B.sum(1))


B_BUS = laplacian(SUSCEPT)


class GridConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.msg = nn.Linear(2 * d_in + 1, d_out)
        self.upd = nn.Linear(d_in + d_out, d_out)

    def forward(self, h, edge_feat):
        src, dst = torch.cat([LINES, LINES.flip(0)], 1)
        e = torch.cat([edge_feat, edge_feat])[:, None]
        m = F.silu(self.msg(torch.cat([h[:, src], h[:, dst], e.expand(h.size(0), -1, -1)], -1)))
        agg = torch.zeros(h.size(0), N_BUS, m.size(-1)).index_add(1, dst, m)
        return F.silu(self.upd(torch.cat([h, agg], -1)))


class StateEstimator(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.inp = nn.Linear(3, hidden)
        self.convs = nn.ModuleList(GridConv(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, 1)

    def forward(self, meas):  # B x N x 3: P injection, angle PMU, PMU flag
        h = F.silu(self.inp(meas))
        for conv in self.convs:
            h = h + conv(h, SUSCEPT / 10)
        theta = self.out(h).squeeze(-1)
        return theta - theta[:, :1]  # bus 0 is the slack/reference


def estimation_loss(model, meas, theta_true):
    theta = model(meas)
    residual = theta @ B_BUS.T - meas[..., 0]  # DC power flow: P = B theta
    return F.mse_loss(theta, theta_true) + 0.1 * residual.pow(2).mean()


def pgd_loss(model, meas, theta_true, eps=0.05, steps=3, alpha=0.02):
    """False-data injection on P measurements; returns (loss, n, grad) as the other losses do."""
    delta = torch.zeros_like(meas[..., :1], requires_grad=True)
    grad = None
    for _ in range(steps):
        loss = estimation_loss(model, meas + F.pad(delta, (0, 2)), theta_true)
        grad, = torch.autograd.grad(loss, delta)
        delta = (delta + alpha * grad.sign()).clamp(-eps, eps).detach().requires_grad_(True)
    # the final loss is trained on: no autograd.grad on it (that would free its graph)
    loss = estimation_loss(model, meas + F.pad(delta.detach(), (0, 2)), theta_true)
    return loss, meas.size(0), grad


def make_data(n):
    p = torch.randn(n, N_BUS) * 0.5
    p[:, 0] = -p[:, 1:].sum(1)
    theta = torch.linalg.lstsq(B_BUS[1:, 1:], p[:, 1:].T).solution.T
    theta = torch.cat([torch.zeros(n, 1), theta], 1)
    pmu = (torch.rand(n, N_BUS) < 0.3).float()
    meas = torch.stack([p + 0.01 * torch.randn_like(p), theta * pmu, pmu], -1)
    return meas, theta


model = StateEstimator()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
meas_all, theta_all = make_data(64)

for epoch in range(2):
    for k in range(0, 64, 16):
        meas, theta_true = meas_all[k:k + 16], theta_all[k:k + 16]
        clean_loss = estimation_loss(model, meas, theta_true)
        adv_loss, n_adv, _ = pgd_loss(model, meas, theta_true)
        loss = clean_loss + adv_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} clean {clean_loss.item():.4f} adv {adv_loss.item():.4f}")
