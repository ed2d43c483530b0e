"""Learned simulator for a 1-D periodic "atmosphere", trained on a multi-step rollout loss.

Source: https://github.com/facebookresearch/fairseq/issues/251
The author rewrote one slice of a tensor with a function of that same slice,
in place (``encoder_out[0][:, :, j] = do_something(encoder_out[0][:, :, j])``),
and the backward failed with "one of the variables needed for gradient
computation has been modified by an inplace operation". The maintainer's answer:
the tensor takes part in the gradient computation, so copy it and modify the
copy. Here the same write sits in an autoregressive rollout: after each predicted
step, the humidity channel is made positive with
``state[:, Q] = F.softplus(state[:, Q])``; softplus saves the slice it reads, and
the write into the same tensor changes it. The report is a sequence-to-sequence
decoder; the training setting is the writer's.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_GRID = 64
CHANNELS = 3  # wind, temperature, humidity
Q = 2  # humidity channel, must stay positive
ROLLOUT = 4
DT = 0.1


def reference_step(state):
    """Ground-truth solver: advection by the wind plus diffusion, periodic grid."""
    u = state[:, 0:1]
    lap = torch.roll(state, 1, -1) - 2 * state + torch.roll(state, -1, -1)
    grad = 0.5 * (torch.roll(state, -1, -1) - torch.roll(state, 1, -1))
    nxt = state + DT * (0.3 * lap - u * grad)
    nxt[:, Q] = nxt[:, Q].clamp_min(0.0)
    return nxt


def make_trajectories(n, steps):
    x = torch.linspace(0, 2 * torch.pi, N_GRID)
    phase = torch.rand(n, CHANNELS, 1) * 2 * torch.pi
    amp = 0.5 + torch.rand(n, CHANNELS, 1)
    state = amp * torch.sin(x + phase)
    state[:, Q] = state[:, Q].abs()
    traj = [state]
    for _ in range(steps):
        traj.append(reference_step(traj[-1]))
    return torch.stack(traj, dim=1)  # n, steps+1, C, N


class Stepper(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(CHANNELS, width, 5, padding=2, padding_mode="circular"), nn.GELU(),
            nn.Conv1d(width, width, 5, padding=2, padding_mode="circular"), nn.GELU(),
            nn.Conv1d(width, CHANNELS, 1),
        )

    def forward(self, state):
        return state + DT * self.net(state)


def rollout(model, state, steps):
    preds = []
    for _ in range(steps):
        state = model(state)
        state[:, Q] = F.softplus(state[:, Q])  # humidity is non-negative
        preds.append(state)
    return torch.stack(preds, dim=1)


model = Stepper()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20)
data = make_trajectories(128, ROLLOUT)
step_weights = torch.linspace(1.0, 0.5, ROLLOUT)

for it in range(10):
    idx = torch.randint(0, data.shape[0], (16,))
    traj = data[idx]
    preds = rollout(model, traj[:, 0], ROLLOUT)
    per_step = ((preds - traj[:, 1:]) ** 2).mean(dim=(0, 2, 3))
    loss = (step_weights * per_step).sum() / step_weights.sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    if it % 3 == 0:
        print(f"iter {it} rollout mse {loss.item():.4f}")
