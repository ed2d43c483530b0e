"""Event-camera direction classification from learned voxel-grid event tensors (intended version).

Report: https://github.com/pytorch/pytorch/issues/21469. The voxel grid is allocated for each batch
instead of being kept as a buffer and refilled in place, so each batch's graph starts at its own
scatter and the previous batch's freed graph is never reached.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

H = W = 12
BINS = 5
BATCH = 8
N_EVENTS = 300
N_CLASSES = 4  # edge moving left, right, up, down
STEPS = 6


def synth_events(batch):
    """A bright edge sweeping across the sensor; ON events at its front, a few noisy OFF events."""
    labels = torch.randint(0, N_CLASSES, (batch,))
    ts = torch.rand(batch, N_EVENTS).sort(dim=1).values
    along = (ts * (W - 1)).round().long()
    across = torch.randint(0, H, (batch, N_EVENTS))
    xs = torch.where((labels < 2).unsqueeze(1), along, across)
    ys = torch.where((labels < 2).unsqueeze(1), across, along)
    flip = (labels % 2 == 1).unsqueeze(1)
    xs = torch.where(flip & (labels < 2).unsqueeze(1), W - 1 - xs, xs)
    ys = torch.where(flip & (labels >= 2).unsqueeze(1), H - 1 - ys, ys)
    ps = torch.where(torch.rand(batch, N_EVENTS) < 0.85, 1.0, -1.0)
    return xs, ys, ts, ps, labels


class LearnedVoxelGrid(nn.Module):
    """Event Spike Tensor style: each event adds p * k(t - t_bin) to every time bin of its pixel."""

    def __init__(self, bins, height, width, batch):
        super().__init__()
        self.kernel = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.1), nn.Linear(16, 1))
        self.bins, self.height, self.width = bins, height, width
        self.register_buffer("centres", torch.linspace(0.0, 1.0, bins))

    def forward(self, xs, ys, ts, ps):
        b, n = xs.shape
        dt = ts.unsqueeze(-1) - self.centres  # (b, n, bins)
        values = self.kernel(dt.reshape(-1, 1)).view(b, n, self.bins) * ps.unsqueeze(-1)
        bi = torch.arange(b).view(b, 1, 1).expand(b, n, self.bins)
        ti = torch.arange(self.bins).view(1, 1, -1).expand(b, n, self.bins)
        yi = ys.unsqueeze(-1).expand(b, n, self.bins)
        xi = xs.unsqueeze(-1).expand(b, n, self.bins)
        # a fresh grid for every batch: its history starts with this batch's scatter
        grid = values.new_zeros(b, self.bins, self.height, self.width)
        grid.index_put_((bi.reshape(-1), ti.reshape(-1), yi.reshape(-1), xi.reshape(-1)),
                        values.reshape(-1), accumulate=True)
        return grid


class ConvGRUCell(nn.Module):
    def __init__(self, cin, hidden):
        super().__init__()
        self.gates = nn.Conv2d(cin + hidden, 2 * hidden, 3, padding=1)
        self.cand = nn.Conv2d(cin + hidden, hidden, 3, padding=1)

    def forward(self, x, h):
        z, r = torch.sigmoid(self.gates(torch.cat([x, h], 1))).chunk(2, dim=1)
        n = torch.tanh(self.cand(torch.cat([x, r * h], 1)))
        return (1 - z) * h + z * n


class RecurrentEncoder(nn.Module):
    """Reads the voxel grid bin by bin; the state starts at zero for every sample."""

    def __init__(self, hidden=12):
        super().__init__()
        self.hidden = hidden
        self.cell = ConvGRUCell(1, hidden)

    def forward(self, grid):
        h = grid.new_zeros(grid.shape[0], self.hidden, grid.shape[2], grid.shape[3])
        for t in range(grid.shape[1]):
            h = self.cell(grid[:, t : t + 1], h)
        return h


class Head(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.conv = nn.Conv2d(hidden, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, N_CLASSES)

    def forward(self, h):
        return self.fc(F.relu(self.conv(h)).mean(dim=(2, 3)))


voxel = LearnedVoxelGrid(BINS, H, W, BATCH)
encoder = RecurrentEncoder()
head = Head()

rep_opt = torch.optim.Adam(voxel.parameters(), lr=1e-3)
net_opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=2e-3)

for step in range(STEPS):
    xs, ys, ts, ps, labels = synth_events(BATCH)
    grid = voxel(xs, ys, ts, ps)
    logits = head(encoder(grid))
    loss = F.cross_entropy(logits, labels)

    rep_opt.zero_grad()
    net_opt.zero_grad()
    loss.backward()
    rep_opt.step()
    net_opt.step()
    acc = (logits.argmax(1) == labels).float().mean().item()
    print(f"step {step}: loss {loss.item():.4f} acc {acc:.2f}")
