"""Wildfire spread forecasting with an attention-over-history recurrent encoder.

Source: https://github.com/Seanny123/da-rnn/issues/14
The report: running main.py of the dual-stage attention RNN (DA-RNN) repository
fails with "one of the variables needed for gradient computation has been modified
by an inplace operation"; the author tried changing a ``+=`` item update without
success. The repository's encoder preallocates ``input_encoded`` and fills it by index
assignment inside its time loop (``input_encoded[:, t, :] = hidden``), and its
decoder attends over that tensor with ``torch.bmm``.

Reduction (the writer's): a recurrent encoder over a sequence of burn-grid snapshots
that preallocates its state history, attends over the filled part of it at every step
(bmm saves the history for the attention-weight gradient) and writes each new
hidden state into the next slot by index assignment; the head forecasts which cells
burn next.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(31)

GRID = 6            # 6 x 6 landscape cells
T_STEPS = 5         # past snapshots per sample
HIDDEN = 32
BATCH = 8


def simulate_fire_sequences(n_samples):
    """Burning cells spread to neighbours with wind-biased probability."""
    fuel = torch.rand(n_samples, GRID, GRID)
    wind = torch.randn(n_samples, 2)
    burning = torch.zeros(n_samples, GRID, GRID)
    burning[:, GRID // 2, GRID // 2] = 1.0
    frames = []
    for _ in range(T_STEPS + 1):
        frames.append(burning.clone())
        spread = F.max_pool2d(burning[:, None], 3, stride=1, padding=1)[:, 0]
        p = spread * fuel * torch.sigmoid(wind[:, :1, None] + 0.5)
        burning = torch.maximum(burning, (torch.rand_like(p) < p).float())
    seq = torch.stack(frames[:-1], dim=1).flatten(2)          # (n, T, cells)
    weather = wind[:, None, :].expand(-1, T_STEPS, -1)
    return torch.cat([seq, weather], dim=2), frames[-1].flatten(1)


class HistoryAttentionEncoder(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(n_in + hidden, hidden)
        self.query = nn.Linear(hidden, hidden)

    def forward(self, seq):
        n, steps, _ = seq.shape
        h = seq.new_zeros(n, self.hidden)
        encoded = seq.new_zeros(n, steps, self.hidden)
        for t in range(steps):
            if t == 0:
                context = torch.zeros_like(h)
            else:
                past = encoded[:, :t]
                scores = torch.bmm(past, self.query(h).unsqueeze(2)).squeeze(2)
                weights = torch.softmax(scores / self.hidden ** 0.5, dim=1)
                context = torch.bmm(weights.unsqueeze(1), past).squeeze(1)
            h = self.cell(torch.cat([seq[:, t], context], dim=1), h)
            encoded[:, t, :] = h
        return encoded


class SpreadForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = HistoryAttentionEncoder(GRID * GRID + 2, HIDDEN)
        self.head = nn.Linear(HIDDEN, GRID * GRID)

    def forward(self, seq):
        encoded = self.encoder(seq)
        return self.head(encoded[:, -1])


def fit(forecaster, loader, epochs=2):
    opt = torch.optim.RMSprop(forecaster.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for seq, next_burn in loader:
            logits = forecaster(seq)
            spread_loss = F.binary_cross_entropy_with_logits(logits, next_burn)
            opt.zero_grad()
            spread_loss.backward()
            opt.step()
        print(f"epoch {epoch}: spread loss {spread_loss.item():.4f}")


if __name__ == "__main__":
    loader = [simulate_fire_sequences(BATCH) for _ in range(4)]
    forecaster = SpreadForecaster()
    fit(forecaster, loader)
