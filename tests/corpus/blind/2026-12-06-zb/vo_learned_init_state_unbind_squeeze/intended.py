"""Intended version of broken.py: the per-layer initial states are squeezed out of place (squeeze, not squeeze_).

Source: https://github.com/alibaba/TinyNeuralNetwork/issues/238
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

B, T, H_IMG, W_IMG = 4, 5, 32, 32
HIDDEN, LAYERS = 64, 2


def euler_to_matrix(angles):
    """Rotation matrices from (roll, pitch, yaw), angles: (..., 3)."""
    r, p, y = angles.unbind(-1)
    cr, sr, cp, sp, cy, sy = r.cos(), r.sin(), p.cos(), p.sin(), y.cos(), y.sin()
    one, zero = torch.ones_like(r), torch.zeros_like(r)
    rx = torch.stack([one, zero, zero, zero, cr, -sr, zero, sr, cr], -1).reshape(*r.shape, 3, 3)
    ry = torch.stack([cp, zero, sp, zero, one, zero, -sp, zero, cp], -1).reshape(*r.shape, 3, 3)
    rz = torch.stack([cy, -sy, zero, sy, cy, zero, zero, zero, one], -1).reshape(*r.shape, 3, 3)
    return rz @ ry @ rx


def compose_trajectory(rel):
    """Compose relative 6-DoF poses (B, T, 6) into absolute positions (B, T, 3)."""
    rot = torch.eye(3).expand(rel.shape[0], 3, 3)
    pos = torch.zeros(rel.shape[0], 3)
    positions = []
    for t in range(rel.shape[1]):
        pos = pos + (rot @ rel[:, t, 3:].unsqueeze(-1)).squeeze(-1)
        rot = rot @ euler_to_matrix(rel[:, t, :3])
        positions.append(pos)
    return torch.stack(positions, 1)


class FlowEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(6, 16, 5, stride=2, padding=2), nn.LeakyReLU(0.1),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
            nn.AdaptiveAvgPool2d(2), nn.Flatten())

    def forward(self, pairs):
        b, t = pairs.shape[:2]
        return self.net(pairs.flatten(0, 1)).view(b, t, -1)


class StackedLSTM(nn.Module):
    def __init__(self, input_size, hidden, layers):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.cells = nn.ModuleList(
            [nn.LSTMCell(input_size if i == 0 else hidden, hidden) for i in range(layers)])

    def forward(self, x, state):
        h0, c0 = state
        b = x.shape[1]
        hx = h0.reshape(self.layers, 1, b, self.hidden).unbind(0)
        hx = [hx[i].squeeze(0) for i in range(self.layers)]
        cx = c0.reshape(self.layers, 1, b, self.hidden).unbind(0)
        cx = [cx[i].squeeze(0) for i in range(self.layers)]
        outs = []
        for t in range(x.shape[0]):
            inp = x[t]
            for i, cell in enumerate(self.cells):
                hx[i], cx[i] = cell(inp, (hx[i], cx[i]))
                inp = hx[i]
            outs.append(inp)
        return torch.stack(outs, 0)


class DeepVO(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = FlowEncoder()
        self.rnn = StackedLSTM(128, HIDDEN, LAYERS)
        self.h0 = nn.Parameter(torch.zeros(LAYERS, 1, HIDDEN))
        self.c0 = nn.Parameter(torch.zeros(LAYERS, 1, HIDDEN))
        self.head = nn.Linear(HIDDEN, 6)

    def forward(self, frames):
        pairs = torch.cat([frames[:, :-1], frames[:, 1:]], dim=2)   # (B, T, 6, H, W)
        feats = self.encoder(pairs).transpose(0, 1)                   # (T, B, 128)
        b = frames.shape[0]
        state = (self.h0.expand(-1, b, -1), self.c0.expand(-1, b, -1))
        out = self.rnn(feats, state)
        return self.head(out).transpose(0, 1)                         # (B, T, 6)


def make_batch():
    frames = torch.rand(B, T + 1, 3, H_IMG, W_IMG)
    rel = torch.cat([0.05 * torch.randn(B, T, 3), 0.5 * torch.randn(B, T, 3)], -1)
    return frames, rel


model = DeepVO()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
ROT_WEIGHT = 100.0

for step in range(1, 7):
    frames, rel_gt = make_batch()
    rel_pred = model(frames)
    rel_loss = F.mse_loss(rel_pred[..., 3:], rel_gt[..., 3:]) + \
        ROT_WEIGHT * F.mse_loss(rel_pred[..., :3], rel_gt[..., :3])
    abs_loss = F.mse_loss(compose_trajectory(rel_pred), compose_trajectory(rel_gt))
    loss = rel_loss + 0.1 * abs_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 3 == 0:
        print(f"step {step}: rel {rel_loss.item():.4f} abs {abs_loss.item():.4f}")
