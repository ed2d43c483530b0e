"""Multi-endpoint DeepSurv trained with SAM: the second pass sums its losses from zero.

Reduced from https://github.com/davda54/sam/issues/10 . With the SAM optimizer (two forward-backward
passes per step: `first_step` climbs to the sharpness-aware point, `second_step` restores the
weights and updates them with the gradient taken there), a user got "Trying to backward through
the graph a second time". The code posted in the thread, a multi-task model, set `loss = 0`
once, summed the per-task losses into it for the first pass, called `loss.backward()` and
`first_step`, then ran a fresh forward pass but summed the second pass's per-task losses into the
same `loss` variable, so the second `loss.backward()` also walked the first pass's graph, already
freed. The poster's own diagnosis points to the freed graph; the fix is to start the second
pass's total from zero. The report is a multi-task image classifier; the training setting is the
writer's: a DeepSurv network with one risk head per endpoint (overall and progression-free
survival), each trained with the negative Cox partial log-likelihood over the risk sets of the
mini-batch, optimised with SAM over SGD, and evaluated with Harrell's C-index.

Synthetic right-censored clinical data (12 covariates, two endpoints), CPU.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

N_TRAIN, N_VAL, N_COV = 96, 48, 12
ENDPOINTS = ("os", "pfs")
BATCH = 32
EPOCHS = 2


def simulate(n, beta):
    """Exponential event times with log-hazard x @ beta[:, k], uniform censoring."""
    x = torch.randn(n, N_COV)
    log_hazard = x @ beta
    event_time = torch.distributions.Exponential(log_hazard.exp()).sample()
    censor_time = torch.rand(n, len(ENDPOINTS)) * 3.0
    time = torch.minimum(event_time, censor_time)
    event = (event_time <= censor_time).float()
    return x, time, event


class SAM:
    """Sharpness-aware minimisation around a base optimizer (two forward-backward passes per step)."""

    def __init__(self, base_optimizer, rho=0.05):
        self.base_optimizer, self.rho, self.e_w = base_optimizer, rho, {}

    def _params(self):
        return [p for group in self.base_optimizer.param_groups for p in group["params"] if p.grad is not None]

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        params = self._params()
        grad_norm = torch.norm(torch.stack([p.grad.norm(2) for p in params]), 2)
        scale = self.rho / (grad_norm + 1e-12)
        for p in params:
            self.e_w[p] = p.grad * scale
            p.add_(self.e_w[p])
        if zero_grad:
            self.base_optimizer.zero_grad()

    def _restore(self):
        for p, e_w in self.e_w.items():
            p.sub_(e_w)

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        self._restore()  # back to w, then step with the gradient taken at w + e(w)
        self.base_optimizer.step()
        if zero_grad:
            self.base_optimizer.zero_grad()


class DeepSurv(nn.Module):
    def __init__(self, n_in, n_endpoints, hidden=32, dropout=0.1):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(n_in, hidden), nn.BatchNorm1d(hidden), nn.SELU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.SELU(),
        )
        self.risk_heads = nn.Linear(hidden, n_endpoints, bias=False)

    def forward(self, x):
        return self.risk_heads(self.trunk(x))


def cox_ph_loss(log_risk, time, event, eps=1e-7):
    """Negative partial log-likelihood (Breslow, no ties): risk sets from sorting by time, descending."""
    order = torch.argsort(time, descending=True)
    log_risk, event = log_risk[order], event[order]
    log_cum_hazard = torch.logcumsumexp(log_risk, dim=0)
    return -((log_risk - log_cum_hazard) * event).sum() / (event.sum() + eps)


def get_loss(output, time, event, t):
    return cox_ph_loss(output[:, t], time[:, t], event[:, t])


@torch.no_grad()
def concordance_index(risk, time, event):
    """Harrell's C: among comparable pairs (i had the event first), how often risk_i > risk_j."""
    earlier = (time[:, None] < time[None, :]) & (event[:, None] > 0)
    higher = (risk[:, None] > risk[None, :]).float() + 0.5 * (risk[:, None] == risk[None, :]).float()
    return (higher * earlier).sum().item() / max(earlier.sum().item(), 1)


beta = torch.randn(N_COV, len(ENDPOINTS)) * 0.5
x_train, t_train, e_train = simulate(N_TRAIN, beta)
x_val, t_val, e_val = simulate(N_VAL, beta)

model = DeepSurv(N_COV, len(ENDPOINTS))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
sam = SAM(optimizer, rho=0.05)

for epoch in range(EPOCHS):
    model.train()
    loss_sum = [0.0] * len(ENDPOINTS)
    perm = torch.randperm(N_TRAIN)
    for i in range(0, N_TRAIN, BATCH):
        idx = perm[i:i + BATCH]
        x, time, event = x_train[idx], t_train[idx], e_train[idx]

        # first forward-backward pass
        output = model(x)
        loss = 0
        for t in range(len(ENDPOINTS)):
            loss_t = get_loss(output, time, event, t)
            loss += loss_t
            loss_sum[t] += loss_t.item()
        optimizer.zero_grad()
        loss.backward()
        sam.first_step(zero_grad=True)

        # second forward-backward pass, at the perturbed weights
        output = model(x)
        loss = 0
        for t in range(len(ENDPOINTS)):
            loss_t = get_loss(output, time, event, t)
            loss += loss_t
            loss_sum[t] += loss_t.item()
        loss.backward()
        sam.second_step(zero_grad=True)

    model.eval()
    risk = model(x_val)
    c_index = [concordance_index(risk[:, t], t_val[:, t], e_val[:, t]) for t in range(len(ENDPOINTS))]
    print(f"epoch {epoch}: " + "  ".join(f"{name} loss {s:.3f} C {c:.3f}" for name, s, c in zip(ENDPOINTS, loss_sum, c_index)))
