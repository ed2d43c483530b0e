"""Intended: music transcription, piano roll from a log-frequency spectrogram, onset and frame heads, compressed by IHT.

The script of broken.py corrected as the fix of https://github.com/microsoft/EdgeML/issues/119 did: the
snapshot of each thresholded matrix is taken as ``thrsd.detach().clone()`` instead of through ``np.copy``,
so the hard-thresholding step no longer asks a tensor that requires grad for a numpy array. Same seeds,
data and order of random draws.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

N_BINS, N_PITCH, N_FRAMES, HIDDEN = 48, 24, 64, 32


def synth_clip():
    """A clip of a few notes: harmonic templates on a log-frequency axis, decaying from each onset."""
    onsets, frames = torch.zeros(N_FRAMES, N_PITCH), torch.zeros(N_FRAMES, N_PITCH)
    spec = 0.05 * torch.rand(N_FRAMES, N_BINS)
    for _ in range(int(torch.randint(3, 7, ()))):
        p, start, length = int(torch.randint(0, N_PITCH, ())), int(torch.randint(0, N_FRAMES - 8, ())), int(torch.randint(4, 16, ()))
        end = min(start + length, N_FRAMES)
        onsets[start, p], frames[start:end, p] = 1.0, 1.0
        envelope = torch.exp(-0.15 * torch.arange(end - start, dtype=torch.float32))
        for harmonic, amp in ((0, 1.0), (12, 0.5), (19, 0.3)):
            if p + 4 + harmonic < N_BINS:
                spec[start:end, p + 4 + harmonic] += amp * envelope
    return torch.log1p(10 * spec), onsets, frames


class Transcriber(nn.Module):
    def __init__(self):
        super().__init__()
        self.onset_in = nn.Linear(N_BINS, HIDDEN)
        self.onset_rnn = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.onset_head = nn.Linear(HIDDEN, N_PITCH)
        self.acoustic = nn.Linear(N_BINS, HIDDEN)
        self.frame_rnn = nn.GRU(HIDDEN + N_PITCH, HIDDEN, batch_first=True)
        self.frame_head = nn.Linear(HIDDEN, N_PITCH)

    def forward(self, spec):
        onset_logits = self.onset_head(self.onset_rnn(F.relu(self.onset_in(spec)))[0])
        act = F.relu(self.acoustic(spec))
        combined = torch.cat([torch.sigmoid(onset_logits).detach(), act], dim=-1)  # no gradient into the onset stack
        frame_logits = self.frame_head(self.frame_rnn(combined)[0])
        return onset_logits, frame_logits


def hard_threshold(A, s):
    """Keep the fraction s of entries of largest magnitude (EdgeML utils.hardThreshold)."""
    A_ = A.data.cpu().detach().numpy().ravel()
    if len(A_) > 0:
        th = np.percentile(np.abs(A_), (1 - s) * 100.0, method="higher")
        A_[np.abs(A_) < th] = 0.0
    A_ = A_.reshape(A.shape)
    return torch.tensor(A_, requires_grad=True)


class SparseTrainer:
    """Dense warm-up, then hard thresholding after each IHT epoch, then retraining on the final support."""

    def __init__(self, model, sparsity):
        self.model, self.sparsity = model, sparsity
        self.support = {}

    def matrices(self):
        return {name: getattr(self.model, name).weight for name in self.sparsity}

    def run_hard_threshold(self):
        for name, weight in self.matrices().items():
            thrsd = hard_threshold(weight.data, self.sparsity[name])
            weight.data = torch.FloatTensor(thrsd)
            self.support[name] = torch.FloatTensor(thrsd.detach().clone())

    def run_sparse_training(self):
        for name, weight in self.matrices().items():
            weight.data[self.support[name] == 0] = 0.0

    def density(self):
        return {name: round((w != 0).float().mean().item(), 2) for name, w in self.matrices().items()}


clips = [synth_clip() for _ in range(32)]
specs, onset_rolls, frame_rolls = (torch.stack(t) for t in zip(*clips))

model = Transcriber()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
trainer = SparseTrainer(model, {"onset_in": 0.3, "onset_head": 0.5, "acoustic": 0.3, "frame_head": 0.5})
DENSE_EPOCHS, IHT_EPOCHS, EPOCHS = 1, 2, 5

for epoch in range(EPOCHS):
    perm = torch.randperm(32)
    for start in range(0, 32, 16):
        idx = perm[start:start + 16]
        onset_logits, frame_logits = model(specs[idx])
        onset_loss = F.binary_cross_entropy_with_logits(onset_logits, onset_rolls[idx])
        frame_loss = F.binary_cross_entropy_with_logits(frame_logits, frame_rolls[idx])
        loss = onset_loss + frame_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if epoch >= DENSE_EPOCHS + IHT_EPOCHS:
            trainer.run_sparse_training()
    if epoch < DENSE_EPOCHS + IHT_EPOCHS:
        trainer.run_hard_threshold()
    frame_f1 = 2 * ((frame_logits > 0) * frame_rolls[idx]).sum() / ((frame_logits > 0).sum() + frame_rolls[idx].sum())
    print(f"epoch {epoch}: onset {onset_loss.item():.3f} frame {frame_loss.item():.3f} "
          f"frame F1 {frame_f1.item():.3f} density {trainer.density()}")
