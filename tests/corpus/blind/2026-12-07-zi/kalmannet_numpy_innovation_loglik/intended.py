"""Learned Kalman filtering (KalmanNet-style): a GRU reads the innovation and the state update
of a linear state-space model and outputs the Kalman gain inside the predict/update recursion.
Trained on the state error plus the Gaussian negative log-likelihood of the innovations.

Report: https://github.com/GuHY777/SS-VAE-pytorch/issues/1 -- in a PyTorch VAE the Gaussian
log-density helper ``log_q_z = log_Gaussian_pro(z, z_mu, z_var)`` fails with "Can't call numpy()
on Variable that requires grad": the helper evaluates the density with NumPy functions on
tensors that are part of the graph. Here the same kind of NumPy log-density helper scores the
filter's innovations against a learned observation-noise variance; the intended helper uses the
torch functions so the likelihood trains the variance and the gain network. The training
setting is the writer's.
"""
import math

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

STATE, OBS, T, N_SEQ = 2, 1, 20, 8
DT = 0.1
F_MAT = torch.tensor([[1.0, DT], [0.0, 1.0]])
H_MAT = torch.tensor([[1.0, 0.0]])


def simulate():
    """Constant-velocity target observed in position with noise."""
    xs, ys = [], []
    for _ in range(N_SEQ):
        x = torch.randn(STATE)
        traj, obs = [], []
        for _ in range(T):
            x = F_MAT @ x + 0.05 * torch.randn(STATE)
            traj.append(x)
            obs.append(H_MAT @ x + 0.3 * torch.randn(OBS))
        xs.append(torch.stack(traj))
        ys.append(torch.stack(obs))
    return torch.stack(xs), torch.stack(ys)  # (N, T, STATE), (N, T, OBS)


def log_gaussian(y, mu, var):
    """Elementwise log N(y; mu, var)."""
    return -0.5 * (torch.log(2 * math.pi * var) + (y - mu) ** 2 / var)


class GainNet(nn.Module):
    """GRU over innovation features -> flattened Kalman gain (STATE x OBS)."""

    def __init__(self, hidden=16):
        super().__init__()
        self.inp = nn.Linear(OBS + STATE, hidden)
        self.gru = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, STATE * OBS)
        self.hidden = hidden

    def forward(self, innov, dx, h):
        h = self.gru(torch.relu(self.inp(torch.cat([innov, dx], dim=-1))), h)
        return self.out(h).view(-1, STATE, OBS), h


class KalmanNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = GainNet()
        self.log_r = nn.Parameter(torch.zeros(OBS))  # observation-noise variance (log)

    def forward(self, ys):
        n = ys.shape[0]
        x_post = torch.zeros(n, STATE)
        dx = torch.zeros(n, STATE)
        h = torch.zeros(n, self.gain.hidden)
        estimates, innovations = [], []
        for t in range(ys.shape[1]):
            x_prior = x_post @ F_MAT.T
            innov = ys[:, t] - x_prior @ H_MAT.T
            K, h = self.gain(innov, dx, h)
            x_new = x_prior + (K @ innov.unsqueeze(-1)).squeeze(-1)
            dx = x_new - x_post
            x_post = x_new
            estimates.append(x_post)
            innovations.append(innov)
        return torch.stack(estimates, 1), torch.stack(innovations, 1)


def main():
    xs, ys = simulate()
    filt = KalmanNet()
    optimizer = torch.optim.Adam(filt.parameters(), lr=3e-3)
    for epoch in range(4):
        est, innov = filt(ys)
        mse = ((est - xs) ** 2).mean()
        var = filt.log_r.exp()
        nll = -log_gaussian(innov, torch.zeros_like(innov), var).mean()
        loss = mse + 0.1 * nll
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(filt.parameters(), 1.0)
        optimizer.step()
        print(f"epoch {epoch} mse {mse.item():.4f} nll {nll.item():.4f} "
              f"R {var.item():.3f} (true {0.09:.3f}) rmse_dB {10 * math.log10(mse.item()):.2f}")


if __name__ == "__main__":
    main()
