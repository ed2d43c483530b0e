"""Streaming seismic trace denoiser and first-break picker with a causal 1-D convolutional encoder.

Report: https://github.com/NX-AI/xlstm/issues/51
("In-Place Operation Causes Gradient Error in conv1d_step Function"). xLSTM's step-wise causal
convolution keeps its left context in ``conv_state`` and updates it with
``conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=1))`` and ``conv_state[:, -1:, :] = x``;
the product ``conv_state * conv1d_weight`` of earlier steps saved that buffer, so training through
the step function failed with "one of the variables needed for gradient computation has been
modified by an inplace operation". The fix (NX-AI/xlstm PR #82) builds a new state each step.
Here the training setting is the writer's: a seismic-trace model meant to run sample by sample on
a live geophone stream (a lifted input, two causal depthwise convolutions in step form, a GRU
cell, a denoising head and a first-break head) is trained in the same step-wise form, with a
reconstruction loss against the clean trace and a pick loss; the step convolution is xLSTM's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

T, CH, KS = 64, 16, 4


def synthetic_traces(n):
    t = torch.arange(T).float()
    onset = torch.randint(12, 44, (n,)).float()
    freq = 0.15 + 0.1 * torch.rand(n)
    env = torch.exp(-((t[None] - onset[:, None]).clamp(min=0)) / 25.0) * (t[None] >= onset[:, None])
    clean = env * torch.sin(2 * math.pi * freq[:, None] * (t[None] - onset[:, None]))
    noisy = clean + 0.15 * torch.randn(n, T)
    pick = torch.zeros(n, T)
    pick[torch.arange(n), onset.long()] = 1.0
    return noisy, clean, pick


def conv1d_step(x, conv_state, conv1d_weight, conv1d_bias=None):
    """One step of a causal depthwise convolution. x: (B, 1, D), conv_state: (B, KS, D)."""
    assert x.shape[1] == 1
    conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=1))
    conv_state[:, -1:, :] = x
    y = torch.sum(conv_state * conv1d_weight, dim=1, keepdim=True)
    if conv1d_bias is not None:
        y = y + conv1d_bias
    return y, conv_state


class CausalConv1d(nn.Module):
    def __init__(self, dim, kernel_size=KS):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(kernel_size, dim) / math.sqrt(kernel_size))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.kernel_size = kernel_size

    def empty_state(self, batch):
        return torch.zeros(batch, self.kernel_size, self.weight.shape[1])

    def step(self, x, state):
        return conv1d_step(x, state, self.weight, self.bias)


class StreamingTraceNet(nn.Module):
    def __init__(self, dim=CH, hidden=32):
        super().__init__()
        self.lift = nn.Linear(1, dim)
        self.conv1 = CausalConv1d(dim)
        self.conv2 = CausalConv1d(dim)
        self.cell = nn.GRUCell(dim, hidden)
        self.denoise_head = nn.Linear(hidden, 1)
        self.pick_head = nn.Linear(hidden, 1)

    def init_state(self, batch):
        return self.conv1.empty_state(batch), self.conv2.empty_state(batch), torch.zeros(batch, self.cell.hidden_size)

    def step(self, sample, state):
        s1, s2, h = state
        x = self.lift(sample.view(-1, 1, 1))
        y1, s1 = self.conv1.step(x, s1)
        y2, s2 = self.conv2.step(F.gelu(y1), s2)
        h = self.cell(F.gelu(y2).squeeze(1), h)
        return self.denoise_head(h).squeeze(-1), self.pick_head(h).squeeze(-1), (s1, s2, h)


noisy, clean, pick = synthetic_traces(64)
model = StreamingTraceNet()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
pos_weight = torch.tensor(float(T))

for epoch in range(3):
    perm = torch.randperm(noisy.shape[0])
    for start in range(0, noisy.shape[0], 16):
        idx = perm[start:start + 16]
        state = model.init_state(len(idx))
        denoised, pick_logits = [], []
        for t in range(T):
            d, p, state = model.step(noisy[idx, t], state)
            denoised.append(d)
            pick_logits.append(p)
        denoised = torch.stack(denoised, dim=1)
        pick_logits = torch.stack(pick_logits, dim=1)
        recon = F.mse_loss(denoised, clean[idx])
        pick_loss = F.binary_cross_entropy_with_logits(pick_logits, pick[idx], pos_weight=pos_weight)
        loss = recon + 0.1 * pick_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} recon {recon.item():.4f} pick {pick_loss.item():.4f}")
