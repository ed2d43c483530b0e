"""Marked temporal point process (RNN intensity, Monte Carlo intensity integral), maximum likelihood.

Report: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/109
The author got "Trying to backward through the graph a second time" on the second training step and
found the cause himself: "I use a conv1D() to convert my data to the shape of the network's input,
which is out of the training loop." A trainable layer applied to the data once, before the loop,
leaves one graph that every step's loss backpropagates into; the first backward frees it.

The report is a diffusion trainer; the training setting is the writer's: a neural point process over
event sequences of several marks. The marks are embedded by the model's trainable ``mark_emb`` and
concatenated with the log inter-event times "once, to build the input tensor", and the training loop
then slices mini-batches out of that tensor. The negative log-likelihood is the log intensity of the
observed events minus the integral of the total intensity over each gap, estimated with uniform
samples inside the gap.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SEQ, L, N_MARKS, H, EMB, MC = 32, 20, 4, 32, 8, 10


def synthetic_sequences(n, length):
    """Self-exciting-ish sequences: gaps shrink after mark 0, marks follow a sticky chain."""
    marks = torch.zeros(n, length, dtype=torch.long)
    gaps = torch.zeros(n, length)
    marks[:, 0] = torch.randint(0, N_MARKS, (n,))
    gaps[:, 0] = torch.rand(n) + 0.1
    for i in range(1, length):
        stay = torch.rand(n) < 0.6
        marks[:, i] = torch.where(stay, marks[:, i - 1], torch.randint(0, N_MARKS, (n,)))
        rate = torch.where(marks[:, i - 1] == 0, torch.full((n,), 3.0), torch.full((n,), 1.0))
        gaps[:, i] = torch.distributions.Exponential(rate).sample() + 1e-3
    return marks, gaps


class NeuralPointProcess(nn.Module):
    def __init__(self):
        super().__init__()
        self.mark_emb = nn.Embedding(N_MARKS, EMB)
        self.rnn = nn.GRU(EMB + 1, H, batch_first=True)
        self.base = nn.Linear(H, N_MARKS)
        self.decay = nn.Parameter(torch.full((N_MARKS,), -0.5))

    def embed(self, marks, gaps):
        return torch.cat([self.mark_emb(marks), torch.log(gaps).unsqueeze(-1)], -1)

    def intensity(self, h, dt):
        # h: (..., H), dt: (..., S) -> (..., S, N_MARKS)
        return F.softplus(self.base(h).unsqueeze(-2) + self.decay * dt.unsqueeze(-1))

    def nll(self, inputs, marks, gaps):
        h, _ = self.rnn(inputs[:, :-1])  # history up to event i predicts event i + 1
        next_marks, next_gaps = marks[:, 1:], gaps[:, 1:]
        lam_event = self.intensity(h, next_gaps.unsqueeze(-1)).squeeze(-2)
        log_event = torch.log(lam_event.gather(-1, next_marks.unsqueeze(-1)).squeeze(-1) + 1e-8)
        u = torch.rand(*next_gaps.shape, MC)
        lam_mc = self.intensity(h, u * next_gaps.unsqueeze(-1)).sum(-1)
        integral = next_gaps * lam_mc.mean(-1)
        return -(log_event - integral).sum(1).mean()


marks, gaps = synthetic_sequences(N_SEQ, L)
model = NeuralPointProcess()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

# build the network's input once: embedded marks and log gaps, (N_SEQ, L, EMB + 1)
inputs = model.embed(marks, gaps)

BATCH = 8
for epoch in range(2):
    perm = torch.randperm(N_SEQ)
    for start in range(0, N_SEQ, BATCH):
        idx = perm[start : start + BATCH]
        loss = model.nll(inputs[idx], marks[idx], gaps[idx])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
    print(f"epoch {epoch}: nll {loss.item():.3f}")
