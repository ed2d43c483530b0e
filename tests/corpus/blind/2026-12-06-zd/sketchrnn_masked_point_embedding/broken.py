"""SketchRNN-style VAE over pen strokes, with padded points zeroed after a ReLU embedding.

Report: https://github.com/dd-iuonac/object-detector-in-carla/issues/61
Training the VoxelNet detector of that repository raised "one of the variables
needed for gradient computation has been modified by an inplace operation:
[torch.cuda.FloatTensor [17661, 35, 128]], which is output 0 of ReluBackward0".
The voxel feature encoder passed each voxel's padded point list through a
linear layer and a ReLU and then zeroed the padded points with ``x *= mask``; the
in-place multiplication overwrote the ReLU output that ReLU's backward needs.
The reporter fixed it by writing ``x = x * mask`` (the three ``x *= mask`` lines
of ``voxelnet.py``).

The training setting is the writer's: a SketchRNN (Ha & Eck) on synthetic
sketches in stroke-5 format. Sketches have different lengths, so the encoder
first embeds every point with a linear layer and a ReLU and zeroes the padded
points in place, the same way, before its bidirectional LSTM; the decoder is an
LSTM conditioned on the latent code that outputs a bivariate Gaussian mixture
over pen offsets and a categorical over pen states.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_MAX, N_SKETCH, BATCH = 24, 48, 16
EMB, ENC_H, DEC_H, Z_DIM, N_MIX = 16, 24, 32, 8, 3
W_KL, KL_MIN, ETA_MIN, R = 0.5, 0.2, 0.01, 0.95


def make_sketch(n_points):
    """A random closed loop drawn in one or two strokes, as stroke-3 (dx, dy, lift)."""
    t = torch.linspace(0, 2 * math.pi, n_points)
    radius = 1 + 0.3 * torch.randn(1) + 0.2 * torch.sin(3 * t + torch.rand(1) * 6)
    xy = torch.stack([radius * torch.cos(t), radius * torch.sin(t)], 1)
    deltas = torch.diff(xy, dim=0, prepend=xy[:1])
    lift = torch.zeros(n_points)
    lift[n_points // 2] = float(torch.rand(1) < 0.5)
    lift[-1] = 1.0
    return torch.cat([deltas, lift[:, None]], 1)


def to_stroke5(s3):
    """Pad to N_MAX points: (dx, dy, pen down, pen up, end of sketch)."""
    out = torch.zeros(N_MAX, 5)
    n = s3.shape[0]
    out[:n, :2] = s3[:, :2]
    out[:n, 3] = s3[:, 2]
    out[:n, 2] = 1 - s3[:, 2]
    out[n:, 4] = 1
    return out


lengths = torch.randint(10, N_MAX - 1, (N_SKETCH,))
strokes = torch.stack([to_stroke5(make_sketch(int(n))) for n in lengths])
strokes[:, :, :2] /= strokes[:, :, :2].std()
point_mask = (torch.arange(N_MAX)[None, :] < lengths[:, None]).float()


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(5, EMB)
        self.lstm = nn.LSTM(EMB, ENC_H, batch_first=True, bidirectional=True)
        self.mu = nn.Linear(2 * ENC_H, Z_DIM)
        self.sigma = nn.Linear(2 * ENC_H, Z_DIM)

    def forward(self, s, mask):
        x = F.relu(self.embed(s))
        x *= mask.unsqueeze(-1)  # padded points contribute nothing
        _, (h, _) = self.lstm(x)
        h = torch.cat([h[0], h[1]], -1)
        mu, sigma_hat = self.mu(h), self.sigma(h)
        z = mu + torch.exp(sigma_hat / 2) * torch.randn_like(mu)
        return z, mu, sigma_hat


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.init = nn.Linear(Z_DIM, 2 * DEC_H)
        self.lstm = nn.LSTM(5 + Z_DIM, DEC_H, batch_first=True)
        self.out = nn.Linear(DEC_H, 6 * N_MIX + 3)

    def forward(self, inputs, z):
        h0, c0 = torch.tanh(self.init(z)).split(DEC_H, -1)
        z_seq = z.unsqueeze(1).expand(-1, inputs.shape[1], -1)
        out, _ = self.lstm(torch.cat([inputs, z_seq], -1), (h0.unsqueeze(0).contiguous(), c0.unsqueeze(0).contiguous()))
        y = self.out(out)
        pi, mu_x, mu_y, sx, sy, rho = y[..., : 6 * N_MIX].split(N_MIX, -1)
        return F.softmax(pi, -1), mu_x, mu_y, torch.exp(sx), torch.exp(sy), torch.tanh(rho), F.log_softmax(y[..., 6 * N_MIX :], -1)


def bivariate_normal(dx, dy, mu_x, mu_y, sx, sy, rho):
    zx, zy = (dx - mu_x) / sx, (dy - mu_y) / sy
    one_m_rho2 = 1 - rho**2
    z = zx**2 + zy**2 - 2 * rho * zx * zy
    return torch.exp(-z / (2 * one_m_rho2)) / (2 * math.pi * sx * sy * torch.sqrt(one_m_rho2))


def reconstruction_loss(target, mask, params):
    pi, mu_x, mu_y, sx, sy, rho, log_q = params
    dx, dy = target[..., 0:1], target[..., 1:2]
    density = (pi * bivariate_normal(dx, dy, mu_x, mu_y, sx, sy, rho)).sum(-1)
    l_s = -(mask * torch.log(density + 1e-5)).sum() / target.shape[0] / N_MAX
    l_p = -(target[..., 2:] * log_q).sum() / target.shape[0] / N_MAX
    return l_s + l_p


encoder, decoder = Encoder(), Decoder()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=2e-3)
start_token = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0])

step = 0
for epoch in range(4):
    order = torch.randperm(N_SKETCH)
    for i in range(0, N_SKETCH, BATCH):
        idx = order[i : i + BATCH]
        s, mask = strokes[idx], point_mask[idx]
        z, mu, sigma_hat = encoder(s, mask)
        dec_in = torch.cat([start_token.expand(s.shape[0], 1, 5), s[:, :-1]], 1)
        params = decoder(dec_in, z)
        l_r = reconstruction_loss(s, mask, params)
        kl = -0.5 * torch.mean(1 + sigma_hat - mu**2 - torch.exp(sigma_hat))
        eta = 1 - (1 - ETA_MIN) * R**step
        loss = l_r + W_KL * eta * torch.clamp(kl, min=KL_MIN)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(list(encoder.parameters()) + list(decoder.parameters()), 1.0)
        optimizer.step()
        step += 1
    print(f"epoch {epoch}: reconstruction {l_r.item():.3f}  KL {kl.item():.3f}")
