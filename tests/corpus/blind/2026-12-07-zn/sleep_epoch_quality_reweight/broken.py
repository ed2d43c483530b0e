"""Sleep staging from polysomnography: epoch encoder over 30-s EEG/EOG epochs, GRU over the night.

Reduced from https://github.com/AUTOMATIC1111/stable-diffusion-webui/pull/6465: the prompt
encoder weighted its token embeddings by per-token emphasis multipliers and then restored the
original mean, both in place (``z *= multipliers``; ``z *= original_mean / new_mean``).  Once
the webui trained through that path (embeddings, hypernetworks) on newer PyTorch builds, the
backward failed with "one of the variables needed for gradient computation has been modified
by an inplace operation"; the PR made both multiplications out of place.  Here the author
down-weights epochs flagged by a simple artifact detector (movement, electrode pops) before the
sequence model, with the same mean restoration written the same way, on an epoch encoder whose
last activation is a tanh.  The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_STAGES = 5          # W, N1, N2, N3, REM
SEQ = 10              # epochs per training sequence
CHANNELS = 2          # Fpz-Cz EEG, horizontal EOG
SAMPLES = 300         # one 30-s epoch at 10 Hz (downsampled for the example)


def make_night_batch(batch):
    stages = torch.randint(0, N_STAGES, (batch, SEQ))
    t = torch.linspace(0, 30, SAMPLES)
    freq = torch.tensor([10.0, 6.0, 13.0, 1.5, 7.0])[stages]            # dominant rhythm per stage
    eeg = torch.sin(2 * torch.pi * freq[..., None] * t / 10) + 0.3 * torch.randn(batch, SEQ, SAMPLES)
    eog = (stages == 4).float()[..., None] * torch.randn(batch, SEQ, SAMPLES) + 0.2 * torch.randn(batch, SEQ, SAMPLES)
    x = torch.stack([eeg, eog], dim=2)                                    # (B, SEQ, C, SAMPLES)
    artifact = torch.rand(batch, SEQ) < 0.15
    x = x + artifact[..., None, None] * 4 * torch.randn_like(x)
    return x, stages


def epoch_quality(x, clip=3.0):
    """Per-epoch signal quality in (0, 1]: epochs with large amplitude excursions count less."""
    peak = x.abs().amax(dim=(-1, -2))
    return torch.clamp(clip / peak, max=1.0)


class EpochEncoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(CHANNELS, 16, 7, stride=2), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, 32, 5, stride=2), nn.BatchNorm1d(32), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(),
        )
        self.proj = nn.Linear(32, dim)

    def forward(self, x):
        b, s = x.shape[:2]
        z = self.conv(x.reshape(b * s, CHANNELS, SAMPLES))
        return torch.tanh(self.proj(z)).reshape(b, s, -1)


class SleepStager(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.encoder = EpochEncoder(dim)
        self.gru = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * dim, N_STAGES)

    def forward(self, x):
        z = self.encoder(x)
        multipliers = epoch_quality(x)
        # emphasis by signal quality, then keep the overall scale the sequence model was trained on
        original_mean = z.mean()
        z *= multipliers[..., None].expand(z.shape)
        new_mean = z.mean()
        z *= original_mean / new_mean
        out, _ = self.gru(z)
        return self.head(out)


model = SleepStager()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
class_weights = torch.tensor([1.0, 1.5, 1.0, 1.0, 1.2])   # N1 is rare and hard

for step in range(4):
    x, stages = make_night_batch(batch=4)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, N_STAGES), stages.reshape(-1), weight=class_weights)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    acc = (logits.argmax(-1) == stages).float().mean()
    print(f"step {step}: loss {loss.item():.4f} acc {acc.item():.2f}")
