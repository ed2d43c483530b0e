"""Keyframe in-betweening with a hand-written stacked Elman RNN, corrected: layer states are collected in lists and stacked.

Source: pytorch/pytorch pull request #173888, "[docs] Fix RNN example to support backward
pass" (https://github.com/pytorch/pytorch/pull/173888).

The PR reports that the reference implementation shown in the `nn.RNN` docstring, which
people copy to write their own recurrent layers, cannot be trained: it keeps the hidden
state of all layers in one tensor and fills it layer by layer,

    h_t_minus_1 = hx.clone()
    h_t = hx.clone()
    for t in range(seq_len):
        for layer in range(rnn.num_layers):
            h_t[layer] = torch.tanh(...)   # in-place modification
        output.append(h_t[-1].clone())
        h_t_minus_1 = h_t.clone()

so the slot written for layer l overwrites the tensor whose previous slot (layer l-1's
output, the input of layer l) was saved by the matmul; `backward()` then fails with "one
of the variables needed for gradient computation has been modified by an inplace
operation". The fix merged in the PR builds each time step's states as a Python list,
appends, and stacks at the end, which is the evident intent (a differentiable unrolled
RNN).

Reduction: an animation in-betweening model: a 2-layer tanh RNN written as in the
docstring (ParameterLists of per-layer weights, one state tensor per step filled slot by
slot) reads a character's keyframe pose vectors and a linear readout predicts the next
pose; MSE against synthetic sinusoidal joint-angle clips, Adam. The forward here follows
the PR's fix: per-step lists of layer states, stacked at the end.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "joints": 12,
    "hidden": 32,
    "num_layers": 2,
    "frames": 16,
    "batch_size": 8,
    "epochs": 2,
    "batches_per_epoch": 3,
    "lr": 3e-3,
}


def make_clips(batch_size, frames, joints):
    """Walk-cycle-like joint-angle curves with random phase and amplitude per joint."""
    t = torch.arange(frames + 1).float()[None, :, None]
    phase = torch.rand(batch_size, 1, joints) * 2 * math.pi
    amp = torch.rand(batch_size, 1, joints) * 0.8 + 0.2
    freq = torch.rand(batch_size, 1, 1) * 0.3 + 0.2
    poses = amp * torch.sin(freq * t + phase)
    return poses[:, :-1], poses[:, 1:]   # current keyframe -> next keyframe


class StackedTanhRNN(nn.Module):
    """Multi-layer Elman RNN unrolled by hand, following the nn.RNN docstring recipe."""

    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.weight_ih = nn.ParameterList()
        self.weight_hh = nn.ParameterList()
        self.bias_ih = nn.ParameterList()
        self.bias_hh = nn.ParameterList()
        k = 1.0 / math.sqrt(hidden_size)
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size
            self.weight_ih.append(nn.Parameter(torch.empty(hidden_size, in_size).uniform_(-k, k)))
            self.weight_hh.append(nn.Parameter(torch.empty(hidden_size, hidden_size).uniform_(-k, k)))
            self.bias_ih.append(nn.Parameter(torch.empty(hidden_size).uniform_(-k, k)))
            self.bias_hh.append(nn.Parameter(torch.empty(hidden_size).uniform_(-k, k)))

    def forward(self, x, hx=None):
        # x: (seq_len, batch, input_size)
        seq_len, batch_size, _ = x.shape
        if hx is None:
            hx = torch.zeros(self.num_layers, batch_size, self.hidden_size)
        h_t_minus_1 = list(hx.unbind(0))
        output = []
        for t in range(seq_len):
            h_t = []   # fresh list of layer states each time step, no slot writes
            for layer in range(self.num_layers):
                inp = x[t] if layer == 0 else h_t[layer - 1]
                h_t.append(torch.tanh(
                    inp @ self.weight_ih[layer].T + self.bias_ih[layer]
                    + h_t_minus_1[layer] @ self.weight_hh[layer].T + self.bias_hh[layer]
                ))
            output.append(h_t[-1])
            h_t_minus_1 = h_t
        return torch.stack(output), torch.stack(h_t)


class InBetweener(nn.Module):
    def __init__(self, joints, hidden, num_layers):
        super().__init__()
        self.rnn = StackedTanhRNN(joints, hidden, num_layers)
        self.readout = nn.Linear(hidden, joints)

    def forward(self, poses):
        out, _ = self.rnn(poses.transpose(0, 1))
        return poses + self.readout(out).transpose(0, 1)   # predict the pose delta


def main():
    torch.manual_seed(3)
    hp = HPARAMS
    model = InBetweener(hp["joints"], hp["hidden"], hp["num_layers"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        for step in range(hp["batches_per_epoch"]):
            cur, nxt = make_clips(hp["batch_size"], hp["frames"], hp["joints"])
            pred = model(cur)
            loss = F.mse_loss(pred, nxt)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} step {step} pose mse {loss.item():.5f}")


if __name__ == "__main__":
    main()
