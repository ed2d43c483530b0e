"""DeepAR-style probabilistic demand forecaster whose Gaussian head is chunked and rescaled in place.

Source: https://github.com/pytorch/pytorch/issues/46820 ("simple v *= v_scale error") -- the author
split a network output with ``u, v = flow.chunk(2, dim=1)`` and rescaled the halves in place
(``u *= u_scale``, ``v *= v_scale``). Outputs of chunk are views of one multi-output function, and
autograd forbids modifying them in place ("Output 0 of SplitBackward0 is a view and is being modified
inplace"); the fix was to rescale out of place (``u = u_scale * u``). The training setting is the
writer's: a DeepAR-like LSTM forecasts daily store-item demand; sales are divided by a per-series
scale before entering the network and the head's (mu, sigma) halves are scaled back to units in place.
The model is trained by Gaussian negative log-likelihood with teacher forcing; P50/P90 quantile
(pinball) losses of sampled paths are reported for the newsvendor order quantity.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_SERIES, T_CTX, T_PRED, N_COV = 32, 28, 7, 3


def make_demand():
    t = torch.arange(T_CTX + T_PRED, dtype=torch.float32)
    level = 5.0 + 20.0 * torch.rand(N_SERIES, 1)
    weekly = 1.0 + 0.3 * torch.sin(2 * torch.pi * t / 7.0)[None, :]
    promo = (torch.rand(N_SERIES, T_CTX + T_PRED) < 0.1).float()
    sales = torch.poisson(level * weekly * (1.0 + 0.8 * promo))
    dow = torch.stack([torch.sin(2 * torch.pi * t / 7), torch.cos(2 * torch.pi * t / 7)], -1)
    cov = torch.cat([dow.expand(N_SERIES, -1, -1), promo[..., None]], dim=-1)
    return sales, cov


class DeepARLite(nn.Module):
    def __init__(self, n_items, hidden=40):
        super().__init__()
        self.item_emb = nn.Embedding(n_items, 8)
        self.rnn = nn.LSTM(1 + N_COV + 8, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, lagged_scaled, cov, item, scale):
        emb = self.item_emb(item)[:, None, :].expand(-1, lagged_scaled.shape[1], -1)
        h, _ = self.rnn(torch.cat([lagged_scaled[..., None], cov, emb], dim=-1))
        mu, sigma = self.head(h).chunk(2, dim=-1)
        mu *= scale[:, None, None]
        sigma = F.softplus(sigma) + 1e-3
        sigma *= scale[:, None, None]
        return mu.squeeze(-1), sigma.squeeze(-1)


def pinball(y, q_pred, q):
    diff = y - q_pred
    return torch.maximum(q * diff, (q - 1) * diff).mean()


sales, cov = make_demand()
items = torch.arange(N_SERIES)
scale = 1.0 + sales[:, :T_CTX].mean(dim=1)
model = DeepARLite(N_SERIES)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(5):
    perm = torch.randperm(N_SERIES)
    for b in range(0, N_SERIES, 16):
        idx = perm[b:b + 16]
        y = sales[idx]
        lagged = torch.cat([torch.zeros(len(idx), 1), y[:, :-1]], dim=1) / scale[idx, None]
        mu, sigma = model(lagged, cov[idx], items[idx], scale[idx])
        nll = -torch.distributions.Normal(mu, sigma).log_prob(y).mean()
        optimizer.zero_grad()
        nll.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()

with torch.no_grad():
    y = sales
    lagged = torch.cat([torch.zeros(N_SERIES, 1), y[:, :-1]], dim=1) / scale[:, None]
    mu, sigma = model(lagged, cov, items, scale)
    draws = torch.distributions.Normal(mu[:, -T_PRED:], sigma[:, -T_PRED:]).sample((50,))
    p50, p90 = draws.quantile(0.5, dim=0), draws.quantile(0.9, dim=0)
    print(f"nll {nll.item():.3f}  P50 {pinball(y[:, -T_PRED:], p50, 0.5):.3f}  P90 {pinball(y[:, -T_PRED:], p90, 0.9):.3f}")
