"""Stock return forecasting with an ensemble of LSTMs, one per horizon, each with its own optimizer.

Reduced from the PyTorch forum thread "Loss error when using a list for ensemble of network",
https://discuss.pytorch.org/t/loss-error-when-using-a-list-for-ensemble-of-network/120497 : the
author keeps ``list_of_model``, ``list_of_opt`` and ``list_of_loss``; inside the batch loop each
member's loss is appended to ``list_of_loss`` (created once, before the epochs) and the member is
updated with ``list_of_loss[i].backward()``. The first batch trains; on the second batch
``list_of_loss[i]`` is still the first batch's loss, whose graph was freed, and backward fails
with "Trying to backward through the graph a second time". The training setting is the writer's:
three LSTM forecasters over the same price windows, for 1-, 5- and 20-day forward returns, each
trained on MSE plus a pairwise ranking loss across the stocks of the day.

Corrected: each member back-propagates the loss it just computed (``loss.backward()``), the
author's evident intent; the list keeps detached values for logging only.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_STOCKS, WINDOW, N_FEAT = 16, 20, 5          # open/high/low/close/volume, z-scored per window
HORIZONS = [1, 5, 20]


class ReturnLSTM(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(N_FEAT, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).squeeze(-1)


def pairwise_rank_loss(pred, target):
    """Hinge on every pair of stocks whose realised returns are ordered (RankNet-style margin)."""
    dp = pred[:, None] - pred[None, :]
    dt = torch.sign(target[:, None] - target[None, :])
    return F.relu(0.01 - dp * dt).mean()


def make_days(n_days):
    """Synthetic cross-section: log prices with a shared market factor; targets are forward returns."""
    days = []
    for _ in range(n_days):
        market = torch.randn(WINDOW + max(HORIZONS)).cumsum(0) * 0.01
        idio = torch.randn(N_STOCKS, WINDOW + max(HORIZONS)).cumsum(1) * 0.02
        logp = market + idio
        close = logp[:, :WINDOW]
        feats = torch.stack([close + 0.002 * torch.randn_like(close), close + 0.01, close - 0.01, close,
                             torch.rand_like(close)], dim=-1)
        feats = (feats - feats.mean(1, keepdim=True)) / (feats.std(1, keepdim=True) + 1e-6)
        targets = {h: logp[:, WINDOW - 1 + h] - logp[:, WINDOW - 1] for h in HORIZONS}
        days.append((feats, targets))
    return days


train_days = make_days(6)

list_of_model = [ReturnLSTM() for _ in HORIZONS]
list_of_opt = [torch.optim.Adam(m.parameters(), lr=1e-3) for m in list_of_model]
list_of_loss = []
rank_weight = 0.5

for epoch in range(2):
    for feats, targets in train_days:
        for i, h in enumerate(HORIZONS):
            model = list_of_model[i]
            pred = model(feats)
            y = targets[h] / (h ** 0.5)                   # volatility-scale by horizon
            loss = F.mse_loss(pred, y) + rank_weight * pairwise_rank_loss(pred, y)
            list_of_loss.append(loss.detach())         # kept for logging only

            list_of_opt[i].zero_grad()
            loss.backward()                            # this batch's loss of member i
            list_of_opt[i].step()
    print(f"epoch {epoch}: " + " ".join(f"h{h}={l.item():.4f}" for h, l in zip(HORIZONS, list_of_loss[-3:])))
