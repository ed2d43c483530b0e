"""Audio-driven talking head: a GRU maps mel frames to mouth landmarks, a total-variation
smoother (Chambolle-Pock prox of the temporal TV norm, warm-started between calls) removes
jitter, and a SyncNet-style audio-visual expert scores lip sync. The expert is trained on real
aligned / shifted pairs; the generator on L1 to the landmarks plus the expert's sync loss.

Report: https://github.com/deepinv/deepinv/issues/194 -- backpropagating through deepinv's TV
prior (the TV denoiser used as a proximal operator) fails on the second call with "Trying to
backward through the graph a second time": the denoiser keeps its primal and dual iterates on
the module for a warm restart, and the next call starts from them, so it reaches into the graph
of the previous call (fixed in deepinv PR #196; the denoiser now stores ``x2.detach()`` and
``u2.detach()``). The training setting is the writer's; the warm-started TV prox is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_MEL, N_LMK, T, BATCH, N_CLIPS = 16, 10, 24, 4, 16


def make_clips():
    """Synthetic clips: mouth landmarks follow a smoothed projection of the mel energy."""
    mel = torch.randn(N_CLIPS, T, N_MEL).cumsum(1) * 0.2
    proj = torch.randn(N_MEL, 2 * N_LMK) * 0.3
    lmk = torch.tanh(mel @ proj)
    lmk = F.avg_pool1d(lmk.transpose(1, 2), 3, 1, 1).transpose(1, 2)
    return mel, lmk


class TemporalTV(nn.Module):
    """Prox of lambda * TV over time (Chambolle-Pock), warm-started from the previous call."""

    def __init__(self, lam=0.05, tau=0.25, rho=1.9, n_iter=15):
        super().__init__()
        self.lam, self.tau, self.rho, self.n_iter = lam, tau, rho, n_iter
        self.x2 = None
        self.u2 = None

    @staticmethod
    def nabla(x):
        return F.pad(x[:, 1:] - x[:, :-1], (0, 0, 0, 1))

    @staticmethod
    def nabla_adjoint(u):
        return F.pad(u[:, :-1], (0, 0, 1, 0)) - F.pad(u[:, :-1], (0, 0, 0, 1))

    def forward(self, y):
        if self.x2 is None or self.x2.shape != y.shape:
            x2, u2 = y.clone(), torch.zeros_like(y)
        else:
            x2, u2 = self.x2.clone(), self.u2.clone()
        sigma = 1.0 / self.tau / 4.0
        for _ in range(self.n_iter):
            x = (x2 - self.tau * self.nabla_adjoint(u2) + self.tau * y) / (1 + self.tau)
            u = u2 + sigma * self.nabla(2 * x - x2)
            u = u / torch.clamp(u.abs() / self.lam, min=1.0)
            x2 = x2 + self.rho * (x - x2)
            u2 = u2 + self.rho * (u - u2)
        self.x2 = x2
        self.u2 = u2
        return x2


class Audio2Landmark(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.gru = nn.GRU(N_MEL, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2 * N_LMK)

    def forward(self, mel):
        h, _ = self.gru(mel)
        return torch.tanh(self.head(h))


class SyncExpert(nn.Module):
    """SyncNet-style: audio and landmark windows embedded, cosine similarity -> P(in sync)."""

    def __init__(self, dim=16):
        super().__init__()
        self.audio = nn.Sequential(nn.Conv1d(N_MEL, dim, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1))
        self.face = nn.Sequential(nn.Conv1d(2 * N_LMK, dim, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1))

    def forward(self, mel, lmk):
        a = F.normalize(self.audio(mel.transpose(1, 2)).squeeze(-1), dim=-1)
        v = F.normalize(self.face(lmk.transpose(1, 2)).squeeze(-1), dim=-1)
        return ((a * v).sum(-1) + 1) / 2


def main():
    mel, lmk = make_clips()
    generator = Audio2Landmark()
    smoother = TemporalTV()
    syncnet = SyncExpert()
    gen_opt = torch.optim.Adam(generator.parameters(), lr=1e-3)
    sync_opt = torch.optim.Adam(syncnet.parameters(), lr=1e-3)
    for epoch in range(2):
        for i in range(0, N_CLIPS, BATCH):
            m, l = mel[i:i + BATCH], lmk[i:i + BATCH]
            # expert: real aligned pairs vs. landmarks shifted in time
            shifted = torch.roll(l, shifts=5, dims=1)
            p_pos, p_neg = syncnet(m, l), syncnet(m, shifted)
            loss_sync_d = F.binary_cross_entropy(p_pos.clamp(1e-6, 1 - 1e-6), torch.ones_like(p_pos)) + \
                F.binary_cross_entropy(p_neg.clamp(1e-6, 1 - 1e-6), torch.zeros_like(p_neg))
            sync_opt.zero_grad()
            loss_sync_d.backward()
            sync_opt.step()
            # generator: L1 on smoothed landmarks + sync loss from the expert
            pred = smoother(generator(m))
            p_gen = syncnet(m, pred)
            loss_g = F.l1_loss(pred, l) + 0.1 * F.binary_cross_entropy(
                p_gen.clamp(1e-6, 1 - 1e-6), torch.ones_like(p_gen))
            gen_opt.zero_grad()
            loss_g.backward()
            gen_opt.step()
        print(f"epoch {epoch} loss_g {loss_g.item():.4f} loss_sync_d {loss_sync_d.item():.4f}")


if __name__ == "__main__":
    main()
