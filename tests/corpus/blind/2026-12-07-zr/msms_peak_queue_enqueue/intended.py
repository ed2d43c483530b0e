"""Contrastive pre-training of a peak-window encoder for mass-spectrometry peak picking.

Source: https://github.com/facebookresearch/moco/issues/21
The reporter asked why MoCo's builder reads the negatives as
``self.queue.clone().detach()`` when computing ``l_neg``; the maintainer's
answer is that ``_dequeue_and_enqueue`` overwrites ``self.queue`` in place
before the backward, so without the copy PyTorch raises an error.

Reduction: the writer's setting is centroiding/peak picking on profile-mode
spectra. Windows of 48 intensity samples around candidate local maxima are
embedded by a query encoder and a momentum key encoder (two augmented views:
m/z jitter and intensity noise); a queue of past keys supplies negatives, and a
small head scores "true peak vs. noise spike". The module reads the queue
straight into the negative logits and enqueues the new keys inside
``forward``, as MoCo's builder does.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

HP = dict(window=48, dim=32, queue_size=256, momentum=0.99, temperature=0.1,
          peak_weight=0.5, lr=1e-3, batch=32, steps=6)


def synth_windows(n, width):
    """Profile-mode windows: a Gaussian peak of random width/height, or only chemical noise."""
    mz = torch.linspace(-1.0, 1.0, width)
    is_peak = (torch.rand(n) < 0.6).float()
    sigma = 0.05 + 0.1 * torch.rand(n, 1)
    height = 0.5 + torch.rand(n, 1)
    centre = 0.1 * torch.randn(n, 1)
    peak = height * torch.exp(-0.5 * ((mz - centre) / sigma) ** 2)
    baseline = 0.1 * torch.rand(n, 1) + 0.05 * torch.randn(n, width)
    return is_peak.unsqueeze(1) * peak + baseline, is_peak


def augment(x):
    shift = int(torch.randint(-2, 3, (1,)))
    x = torch.roll(x, shift, dims=1)
    return x * (1.0 + 0.1 * torch.randn(x.shape[0], 1)) + 0.02 * torch.randn_like(x)


class WindowEncoder(nn.Module):
    def __init__(self, window, dim):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(1, 8, 5, padding=2), nn.ReLU(),
            nn.Conv1d(8, 16, 5, padding=2, stride=2), nn.ReLU(),
        )
        self.proj = nn.Linear(16 * (window // 2), dim)

    def forward(self, x):
        h = self.conv(x.unsqueeze(1)).flatten(1)
        return self.proj(h)


class PeakMoCo(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hp = hp
        self.encoder_q = WindowEncoder(hp["window"], hp["dim"])
        self.encoder_k = copy.deepcopy(self.encoder_q)
        for p in self.encoder_k.parameters():
            p.requires_grad_(False)
        self.peak_head = nn.Linear(hp["dim"], 1)
        self.register_buffer("queue", F.normalize(torch.randn(hp["dim"], hp["queue_size"]), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        m = self.hp["momentum"]
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.mul_(m).add_(pq.detach(), alpha=1.0 - m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        n = keys.shape[0]
        ptr = int(self.queue_ptr)
        self.queue[:, ptr:ptr + n] = keys.T
        self.queue_ptr[0] = (ptr + n) % self.queue.shape[1]

    def forward(self, view_q, view_k):
        feat = self.encoder_q(view_q)
        q = F.normalize(feat, dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            k = F.normalize(self.encoder_k(view_k), dim=1)
        l_pos = (q * k).sum(dim=1, keepdim=True)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / self.hp["temperature"]
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        self._dequeue_and_enqueue(k)
        return logits, labels, self.peak_head(feat).squeeze(1)


def main():
    hp = HP
    windows, is_peak = synth_windows(hp["batch"] * hp["steps"], hp["window"])
    model = PeakMoCo(hp)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=hp["lr"])
    for step in range(hp["steps"]):
        sl = slice(step * hp["batch"], (step + 1) * hp["batch"])
        x, y = windows[sl], is_peak[sl]
        logits, labels, peak_logit = model(augment(x), augment(x))
        nce_loss = F.cross_entropy(logits, labels)
        peak_loss = F.binary_cross_entropy_with_logits(peak_logit, y)
        loss = nce_loss + hp["peak_weight"] * peak_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: nce {nce_loss.item():.3f} peak {peak_loss.item():.3f}")


if __name__ == "__main__":
    main()
