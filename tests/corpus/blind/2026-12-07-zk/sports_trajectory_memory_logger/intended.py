"""Player trajectory forecasting from tracking data, with an in-memory metric logger.

Source: https://github.com/meta-pytorch/tnt/pull/551 ("Add `.detach()` in `scalar_to_float()`"):
torchtnt's loggers turn each logged scalar into a float with ``scalar_to_float``, which read a
tensor through ``.numpy()``; a full training loop that logged its loss tensor to the in-memory
logger raised "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy()
instead." The PR detaches the tensor inside ``scalar_to_float``. The training setting is the
writer's: forecasting the next positions of ten players and the ball from a window of
(x, y) tracking frames with a per-agent LSTM encoder, attention between agents and an MLP
decoder of displacements, logging loss, ADE and FDE every step to an in-memory logger.
"""
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

N_AGENTS, T_OBS, T_PRED = 11, 8, 4


def scalar_to_float(scalar):
    if isinstance(scalar, float):
        return scalar
    if isinstance(scalar, torch.Tensor):
        if scalar.numel() != 1:
            raise ValueError(f"expected a scalar, got shape {tuple(scalar.shape)}")
        return scalar.detach().cpu().numpy().item()
    if isinstance(scalar, np.ndarray):
        return scalar.item()
    return float(scalar)


class InMemoryLogger:
    """Keeps every logged scalar in a dict of lists, like torchtnt's InMemoryLogger."""

    def __init__(self):
        self.log_buffer = defaultdict(list)

    def log(self, name, value, step):
        self.log_buffer[name].append((step, scalar_to_float(value)))

    def log_dict(self, payload, step):
        for name, value in payload.items():
            self.log(name, value, step)


def synthetic_plays(n_plays):
    """Agents drifting toward a moving focus point (the ball) with some inertia; positions in metres."""
    plays = []
    for _ in range(n_plays):
        pos = torch.rand(N_AGENTS, 2) * torch.tensor([105.0, 68.0])
        vel = torch.randn(N_AGENTS, 2) * 0.5
        ball_vel = torch.randn(2) * 1.5
        frames = []
        for _ in range(T_OBS + T_PRED):
            pull = (pos[-1:] - pos) * 0.02
            pull[-1] = 0.0
            vel = 0.85 * vel + pull + 0.1 * torch.randn(N_AGENTS, 2)
            vel[-1] = ball_vel
            pos = pos + vel
            frames.append(pos.clone())
        plays.append(torch.stack(frames))
    return torch.stack(plays)  # (plays, time, agents, 2)


class TrajectoryForecaster(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.embed = nn.Linear(4, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.agent_type = nn.Embedding(2, hidden)
        self.attn = nn.MultiheadAttention(hidden, num_heads=4, batch_first=True)
        self.decoder = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, T_PRED * 2))

    def forward(self, obs):
        b, t, a, _ = obs.shape
        disp = torch.diff(obs, dim=1, prepend=obs[:, :1])
        feats = torch.cat([obs / 50.0, disp], -1).permute(0, 2, 1, 3).reshape(b * a, t, 4)
        _, (h, _) = self.encoder(torch.relu(self.embed(feats)))
        h = h[-1].reshape(b, a, -1)
        kinds = torch.zeros(a, dtype=torch.long)
        kinds[-1] = 1
        h = h + self.agent_type(kinds)
        ctx, _ = self.attn(h, h, h)
        steps = self.decoder(torch.cat([h, ctx], -1)).reshape(b, a, T_PRED, 2)
        return obs[:, -1].unsqueeze(2) + torch.cumsum(steps, dim=2)  # (b, a, T_PRED, 2)


plays = synthetic_plays(24)
obs_all, fut_all = plays[:, :T_OBS], plays[:, T_OBS:].permute(0, 2, 1, 3)
model = TrajectoryForecaster()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
logger = InMemoryLogger()

step = 0
for epoch in range(3):
    for start in range(0, 24, 6):
        obs, fut = obs_all[start:start + 6], fut_all[start:start + 6]
        pred = model(obs)
        dist = (pred - fut).norm(dim=-1)  # (b, agents, T_PRED)
        loss = dist.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        logger.log_dict({"train/loss": loss, "train/ade": dist.mean(), "train/fde": dist[..., -1].mean()}, step)
    print(f"epoch {epoch}: ade {logger.log_buffer['train/ade'][-1][1]:.3f}")
