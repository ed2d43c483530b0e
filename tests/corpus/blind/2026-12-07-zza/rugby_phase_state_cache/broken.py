"""Rugby union phase-outcome prediction over long possession streams, processed in chunks.

Source: https://github.com/fla-org/flash-linear-attention/issues/73 -- running backward through a
gated recurrent layer "with caches" fails with "one of the variables needed for gradient
computation has been modified by an inplace operation ... output 0 of CopyBackwards, is at
version 1; expected version 0", while everything is fine without the cache. The layer writes its
recurrent state into a cache tensor in place between calls. This script reduces it to a
chunked recurrent model for match analytics: a match's event stream (carries, rucks, kicks,
set pieces) is fed in chunks of phases, the recurrent state is carried between chunks in a
state buffer on the module, and one loss over the whole match is backpropagated at the end.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = {
    "matches": 8,
    "phases": 48,
    "chunk": 12,
    "event_dim": 10,
    "hidden": 24,
    "outcomes": 4,  # retained, turnover, penalty, try
    "lr": 3e-3,
    "epochs": 4,
}


class GatedPhaseCell(nn.Module):
    def __init__(self, in_dim, hidden):
        super().__init__()
        self.inp = nn.Linear(in_dim, 2 * hidden)
        self.rec = nn.Linear(hidden, 2 * hidden, bias=False)

    def forward(self, x, h):
        gate, cand = (self.inp(x) + self.rec(h)).chunk(2, dim=-1)
        gate = torch.sigmoid(gate)
        return gate * h + (1 - gate) * torch.tanh(cand)


class ChunkedPhaseModel(nn.Module):
    def __init__(self, event_dim, hidden, outcomes, batch):
        super().__init__()
        self.cell = GatedPhaseCell(event_dim, hidden)
        self.head = nn.Linear(hidden, outcomes)
        self.register_buffer("state", torch.zeros(batch, hidden))

    def reset_state(self):
        self.state.zero_()

    def forward(self, chunk):
        h = self.state
        logits = []
        for t in range(chunk.shape[1]):
            h = self.cell(chunk[:, t], h)
            logits.append(self.head(h))
        self.state.copy_(h)
        return torch.stack(logits, dim=1)


def synthetic_season(cfg):
    events = torch.randn(cfg["matches"], cfg["phases"], cfg["event_dim"])
    pressure = events[..., :3].sum(-1).cumsum(1) / 4
    outcome = torch.bucketize(pressure, torch.tensor([-1.0, 0.5, 2.0]))
    return events, outcome


def match_loss(model, events, outcome, chunk_len):
    model.reset_state()
    total = 0.0
    for start in range(0, events.shape[1], chunk_len):
        logits = model(events[:, start:start + chunk_len])
        target = outcome[:, start:start + chunk_len]
        total = total + F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    return total / (events.shape[1] // chunk_len)


def train(cfg):
    torch.manual_seed(5)
    events, outcome = synthetic_season(cfg)
    model = ChunkedPhaseModel(cfg["event_dim"], cfg["hidden"], cfg["outcomes"], cfg["matches"])
    opt = torch.optim.RMSprop(model.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        phase_loss = match_loss(model, events, outcome, cfg["chunk"])
        opt.zero_grad()
        phase_loss.backward()
        opt.step()
        print(f"epoch {epoch} phase loss {phase_loss.item():.4f}")


if __name__ == "__main__":
    train(SETTINGS)
