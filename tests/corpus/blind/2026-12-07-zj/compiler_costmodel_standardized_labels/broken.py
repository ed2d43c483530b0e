"""Learned cost model for tensor-program schedules with a pairwise ranking loss.

Source: https://github.com/meta-pytorch/botorch/issues/2253 ("Fitting gpytorch
model fails when the training data has requires_grad=True"): the model's training
data came out of a differentiable computation and still required grad; the model
normalises its training data once, when it is built, and the fit's repeated
backward passes then run through that normalisation graph again: "Trying to
backward through the graph a second time". Fitting works once the data are
detached. The training setting is the writer's: schedule candidates (tile sizes,
unroll, vector width) come out of a gradient-based search over relaxed, continuous
knobs against an analytical roofline model; their simulated latencies label a
dataset on which a small MLP cost model is trained to rank candidates, with a
pairwise logistic loss weighted by the latency gap and a small regression term.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CAND, N_KNOBS = 96, 4  # tile_m, tile_n, unroll, vector width (log2, relaxed)
PEAK_FLOPS, BANDWIDTH = 8.0, 2.0


def analytic_latency(knobs):
    """Smooth roofline: max(compute, memory) plus a penalty for spilling registers."""
    tm, tn, unroll, vec = knobs.unbind(-1)
    compute = 64.0 / (PEAK_FLOPS * torch.sigmoid(vec - 1.5) * torch.sigmoid(unroll - 1.0))
    traffic = 16.0 * (1.0 / torch.exp2(tm) + 1.0 / torch.exp2(tn))
    memory = traffic / BANDWIDTH
    spill = F.softplus(tm + tn + unroll - 9.0)
    return torch.logsumexp(torch.stack([compute, memory], -1) * 4, -1) / 4 + spill


def featurize(knobs):
    tm, tn, unroll, vec = knobs.unbind(-1)
    footprint = torch.exp2(tm) * torch.exp2(tn) / 64.0
    return torch.stack([tm, tn, unroll, vec, tm + tn, torch.log1p(footprint), unroll * vec], -1)


class CostModel(nn.Module):
    def __init__(self, feats, latency, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(feats.shape[1], hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        # normalise the training set once, when the model is built
        self.mu, self.sigma = feats.mean(0), feats.std(0) + 1e-6
        self.train_x = (feats - self.mu) / self.sigma
        self.train_y = (latency - latency.mean()) / latency.std()

    def forward(self, x):
        return self.net(x).squeeze(-1)


def pairwise_rank_loss(score, target):
    diff_s = score.unsqueeze(0) - score.unsqueeze(1)
    diff_t = target.unsqueeze(0) - target.unsqueeze(1)
    weight = diff_t.abs()
    return (weight * F.softplus(-torch.sign(diff_t) * diff_s)).sum() / weight.sum()


# 1) gradient-based schedule search on relaxed knobs (proposes the candidates)
knobs = (torch.rand(N_CAND, N_KNOBS) * torch.tensor([5.0, 5.0, 3.0, 3.0])).requires_grad_()
for it in range(6):
    search_loss = analytic_latency(knobs).mean()
    (g,) = torch.autograd.grad(search_loss, knobs)
    with torch.no_grad():  # projected gradient step inside the legal knob box
        knobs -= 0.1 * g
        knobs.clamp_(min=0.0, max=5.0)

# 2) label the candidates and train the cost model to rank them
feats = featurize(knobs)
latency = analytic_latency(knobs) + 0.05 * torch.randn(N_CAND)
model = CostModel(feats, latency)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(4):
    batch = torch.randperm(N_CAND)[:48]
    score = model(model.train_x[batch])
    target = model.train_y[batch]
    loss = pairwise_rank_loss(score, target) + 0.1 * F.mse_loss(score, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
