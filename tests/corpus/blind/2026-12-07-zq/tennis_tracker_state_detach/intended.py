"""Tennis player tracking: a recurrent court-position tracker trained with truncated BPTT.

Source: https://github.com/OpenNMT/OpenNMT-py/issues/403

In the report, OpenNMT-py's trainer ran the decoder over a long target in truncated chunks
and carried the decoder state object (the LSTM hidden tuple and the input-feed vector)
from one chunk to the next, calling ``dec_state.detach()`` between them. Under PyTorch 0.4
``h.detach_()`` on the state's tensors failed on views; replacing it by ``h.detach()``
inside the loop over the state's tensors "is equivalent to doing nothing" (the maintainer's
words), so the next chunk's backward reached into the previous chunk's freed graph and
raised "Trying to backward through the graph a second time". The fix assigned the
detached tensors back onto the state object (``self.hidden = tuple(h.detach() ...)``,
``self.input_feed = self.input_feed.detach()``).

Reduction: the decoder becomes a tennis player tracker. An LSTMCell reads per-frame
detection features together with the player's previous predicted court position (the
input feed) and predicts the next position. Rallies are long, so each rally batch is cut
into chunks; a ``TrackerState`` object carries the hidden tuple and the last position
across chunks and its ``detach()`` rebinds a loop variable, as in the report.
"""

import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_rallies": 6,
    "rally_len": 32,
    "chunk": 8,
    "feat_dim": 10,
    "hidden": 32,
    "lr": 2e-3,
    "epochs": 2,
}


def make_rallies(cfg):
    """Synthetic rallies: detector features per frame and the player's court position (x, y)."""
    t = torch.linspace(0, 6.28, cfg["rally_len"])
    phase = torch.rand(cfg["n_rallies"], 1) * 6.28
    x = 0.5 * torch.sin(t + phase)
    y = 0.3 * torch.cos(0.5 * t + phase)
    pos = torch.stack([x, y], dim=-1).transpose(0, 1)  # [T, B, 2]
    noise = 0.05 * torch.randn(cfg["rally_len"], cfg["n_rallies"], cfg["feat_dim"])
    proj = torch.randn(2, cfg["feat_dim"])
    feats = pos @ proj + noise
    return feats, pos


class TrackerState:
    """What the tracker carries from one chunk of a rally to the next."""

    def __init__(self, hidden, last_pos):
        self.hidden = hidden
        self.last_pos = last_pos

    @property
    def _all(self):
        return (*self.hidden, self.last_pos)

    def detach(self):
        self.hidden = tuple(h.detach() for h in self.hidden)
        self.last_pos = self.last_pos.detach()


class PlayerTracker(nn.Module):
    def __init__(self, feat_dim, hidden):
        super().__init__()
        self.hidden = hidden
        self.encoder = nn.Sequential(nn.Linear(feat_dim + 2, hidden), nn.ReLU())
        self.cell = nn.LSTMCell(hidden, hidden)
        self.head = nn.Linear(hidden, 2)

    def init_state(self, batch):
        zeros = torch.zeros(batch, self.hidden)
        return TrackerState((zeros, zeros.clone()), torch.zeros(batch, 2))

    def forward(self, frames, state):
        h, c = state.hidden
        pos = state.last_pos
        preds = []
        for frame in frames:
            z = self.encoder(torch.cat([frame, pos], dim=-1))
            h, c = self.cell(z, (h, c))
            pos = self.head(h)
            preds.append(pos)
        state.hidden = (h, c)
        state.last_pos = pos
        return torch.stack(preds)


def train_rally_batch(tracker, tracker_opt, feats, pos, cfg):
    state = tracker.init_state(feats.shape[1])
    total = 0.0
    for start in range(0, cfg["rally_len"], cfg["chunk"]):
        frames = feats[start : start + cfg["chunk"]]
        target = pos[start : start + cfg["chunk"]]
        pred = tracker(frames, state)
        track_loss = nn.functional.smooth_l1_loss(pred, target)
        tracker_opt.zero_grad()
        track_loss.backward()
        nn.utils.clip_grad_norm_(tracker.parameters(), 1.0)
        tracker_opt.step()
        state.detach()
        total += track_loss.item()
    return total


def main():
    cfg = CONFIG
    feats, pos = make_rallies(cfg)
    tracker = PlayerTracker(cfg["feat_dim"], cfg["hidden"])
    tracker_opt = torch.optim.Adam(tracker.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        total = train_rally_batch(tracker, tracker_opt, feats, pos, cfg)
        print(f"epoch {epoch}: track loss {total:.4f}")


if __name__ == "__main__":
    main()
