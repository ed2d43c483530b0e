"""Drum-pattern generation: an autoregressive GRU over 16th-note steps.

Source: https://discuss.pytorch.org/t/how-pytorch-treat-with-inplace-operation-in-backward/220839
The author ran a forward with an in-place ``mul_`` on an intermediate tensor
(c1 -> c2 after the in-place multiply) and asked how ``MulBackward0`` can still
compute the gradient once the tensor it may need has been overwritten, i.e.
when autograd keeps a copy and when the in-place op on a saved tensor fails.

Reduction: a drum-machine pattern model (kick, snare, closed hat, open hat,
clap, tom) that predicts per-step hit probabilities and hit velocities from the
previous bar. The velocity head's output is scaled by a per-step accent profile
with ``mul_``, as the report does; training is driven by a ``fit`` helper with
a per-batch step function.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

VOICES = ["kick", "snare", "hat_closed", "hat_open", "clap", "tom"]
STEPS = 16
CFG = {"n_bars": 64, "hidden": 40, "batch": 8, "epochs": 2, "lr": 3e-3, "vel_weight": 0.5}


def synth_bars(n_bars):
    hits = torch.zeros(n_bars, STEPS, len(VOICES))
    hits[:, 0::4, 0] = 1.0
    hits[:, 4::8, 1] = 1.0
    hits[:, 0::2, 2] = (torch.rand(n_bars, STEPS // 2) > 0.2).float()
    hits[:, 14, 3] = (torch.rand(n_bars) > 0.5).float()
    hits[:, :, 4:] = (torch.rand(n_bars, STEPS, 2) > 0.9).float()
    velocity = hits * (0.5 + 0.5 * torch.rand(n_bars, STEPS, len(VOICES)))
    return hits, velocity


class DrumPatternGenerator(nn.Module):
    def __init__(self, n_voices, hidden):
        super().__init__()
        self.inp = nn.Linear(2 * n_voices, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.hit_head = nn.Linear(hidden, n_voices)
        self.vel_head = nn.Linear(hidden, n_voices)
        accents = torch.ones(STEPS, 1)
        accents[0::4] = 1.25
        accents[2::4] = 1.1
        self.register_buffer("accent_profile", accents / accents.max())

    def forward(self, prev_hits, prev_vel):
        h, _ = self.gru(torch.tanh(self.inp(torch.cat([prev_hits, prev_vel], dim=-1))))
        hit_logits = self.hit_head(h)
        velocity = torch.sigmoid(self.vel_head(h))
        velocity.mul_(self.accent_profile)
        return hit_logits, velocity


def pattern_loss(hit_logits, velocity, hits, target_vel, vel_weight):
    onset = F.binary_cross_entropy_with_logits(hit_logits, hits)
    mask = hits > 0
    vel = F.mse_loss(velocity[mask], target_vel[mask]) if mask.any() else velocity.sum() * 0
    return onset + vel_weight * vel


def fit(generator, hits, velocity, cfg):
    optim = torch.optim.RMSprop(generator.parameters(), lr=cfg["lr"])

    def train_step(prev_h, prev_v, next_h, next_v):
        optim.zero_grad()
        hit_logits, vel = generator(prev_h, prev_v)
        total = pattern_loss(hit_logits, vel, next_h, next_v, cfg["vel_weight"])
        total.backward()
        optim.step()
        return total.item()

    for epoch in range(cfg["epochs"]):
        losses = []
        for b in range(0, hits.size(0) - 1 - cfg["batch"], cfg["batch"]):
            sl = slice(b, b + cfg["batch"])
            nx = slice(b + 1, b + 1 + cfg["batch"])
            losses.append(train_step(hits[sl], velocity[sl], hits[nx], velocity[nx]))
        print(f"epoch {epoch}: {sum(losses) / len(losses):.4f}")


def main():
    hits, velocity = synth_bars(CFG["n_bars"])
    generator = DrumPatternGenerator(len(VOICES), CFG["hidden"])
    fit(generator, hits, velocity, CFG)


if __name__ == "__main__":
    main()
