"""Hierarchical demand forecasting with a coherence loss, all levels in one buffer.

Source: https://discuss.pytorch.org/t/runtimeerror-trying-to-backward-through-the-graph-a-second-time-but-the-buffers-have-already-been-freed-specify-retain-graph-true-when-calling-backward-the-first-time/6795
(the thread's unrolled-estimate example): the author unrolled a small recurrent
estimator and, "at the start of each gradient descent iteration", reset an output
/ estimate vector that was allocated once, writing the new values into it by index
so as not to allocate new memory every iteration; the second ``loss.backward()``
failed with "Trying to backward through the graph a second time". The training
setting is the writer's: item-level weekly demand forecasts and directly
forecast store/region/total series are written into one preallocated
(all nodes x horizon) tensor; the loss is the error at every level plus a
coherence term asking each aggregate to equal the sum of its children.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ITEMS, N_STORES, N_REGIONS = 12, 4, 2  # 3 items per store, 2 stores per region
LOOKBACK, HORIZON = 16, 4
N_NODES = N_ITEMS + N_STORES + N_REGIONS + 1


def summing_matrix():
    """S maps bottom (item) series to every aggregate: stores, regions, total."""
    s = torch.zeros(N_STORES + N_REGIONS + 1, N_ITEMS)
    for i in range(N_ITEMS):
        store = i // 3
        region = store // 2
        s[store, i] = 1.0
        s[N_STORES + region, i] = 1.0
        s[-1, i] = 1.0
    return s


S = summing_matrix()


def make_history(weeks=LOOKBACK + HORIZON):
    t = torch.arange(weeks, dtype=torch.float32)
    level = 5 + 3 * torch.rand(N_ITEMS, 1)
    season = torch.sin(2 * 3.14159 * t / 8 + torch.rand(N_ITEMS, 1) * 6)
    items = level + season + 0.3 * torch.randn(N_ITEMS, weeks)
    series = torch.cat([items, S @ items], 0)  # (N_NODES, weeks)
    return series[:, :LOOKBACK], series[:, LOOKBACK:]


class LevelForecaster(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LOOKBACK, hidden), nn.ReLU(), nn.Linear(hidden, HORIZON))

    def forward(self, history):
        scale = history.mean(1, keepdim=True)
        return scale * (1 + self.net(history / scale - 1))


class HierarchicalForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = LevelForecaster()
        self.upper = LevelForecaster()

    def forward(self, history):
        # a new (nodes x horizon) tensor per forward: bottom rows, then the aggregates
        bottom = self.bottom(history[:N_ITEMS])
        upper = self.upper(history[N_ITEMS:])
        return torch.cat([bottom, upper], 0)


def coherence_loss(levels):
    return F.mse_loss(levels[N_ITEMS:], S @ levels[:N_ITEMS])


model = HierarchicalForecaster()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
node_weight = torch.cat([torch.ones(N_ITEMS), torch.full((N_NODES - N_ITEMS,), 0.5)]).unsqueeze(1)

for step in range(4):
    history, future = make_history()
    levels = model(history)
    fit_loss = (node_weight * (levels - future).pow(2)).mean()
    coh_loss = coherence_loss(levels)
    loss = fit_loss + 0.1 * coh_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: fit {fit_loss.item():.3f} coherence {coh_loss.item():.3f}")
