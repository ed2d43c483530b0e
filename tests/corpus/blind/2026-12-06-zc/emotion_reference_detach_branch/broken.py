"""Speech emotion recognition: a wav2vec-style encoder, attentive statistics pooling, and a consistency loss.

Source: https://github.com/Mayukhdeb/torch-dreams/issues/38 -- torch-dreams' caricature loss compares
the layer outputs of every optimisation step with "ideal" layer outputs computed once, before the
loop. Its helper detached the ideal output only inside the branch that resizes it to the current
shape; when the shapes already matched (the ``static`` setting) the ideal output stayed attached, so
the second ``loss.backward()`` ran through its freed graph: "Trying to backward through the graph a
second time". The fix detaches it on both paths. Here the reference frame features of the clean
utterance are computed once per batch and reused by several augmented views, each with its own
backward and step; the helper detaches the reference only when a speed-perturbed view has a different
number of frames. The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

EMOTIONS, DIM = 4, 32


class FeatureEncoder(nn.Module):
    """Strided 1-D convolutions over the waveform, then one self-attention layer."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, DIM, 10, stride=5), nn.GELU(),
                                  nn.Conv1d(DIM, DIM, 4, stride=2), nn.GELU())
        self.layer = nn.TransformerEncoderLayer(DIM, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, wav):  # (B, samples) -> (B, frames, DIM)
        return self.layer(self.conv(wav.unsqueeze(1)).transpose(1, 2))


class AttentiveStatsPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.att = nn.Sequential(nn.Linear(DIM, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, h):
        w = self.att(h).softmax(dim=1)
        mean = (w * h).sum(1)
        std = ((w * h * h).sum(1) - mean ** 2).clamp(min=1e-5).sqrt()
        return torch.cat([mean, std], -1)


def speed_perturb(wav, factor):
    if factor == 1.0:
        return wav
    n = int(wav.shape[-1] / factor)
    return F.interpolate(wav.unsqueeze(1), size=n, mode="linear", align_corners=False).squeeze(1)


def add_noise(wav, snr_db=20.0):
    noise = torch.randn_like(wav)
    scale = wav.pow(2).mean(-1, keepdim=True).sqrt() / (10 ** (snr_db / 20))
    return wav + scale * noise


def match_reference(feats, ref):
    """Bring the reference frames to the view's frame rate."""
    if feats.shape[1] != ref.shape[1]:
        ref = F.interpolate(ref.detach().transpose(1, 2), size=feats.shape[1], mode="linear",
                            align_corners=False).transpose(1, 2)
    return ref


encoder, pool, classifier = FeatureEncoder(), AttentiveStatsPool(), nn.Linear(2 * DIM, EMOTIONS)
params = list(encoder.parameters()) + list(pool.parameters()) + list(classifier.parameters())
optimizer = torch.optim.Adam(params, lr=1e-3)
views = [("noise", 1.0), ("speed", 1.1), ("noise", 1.0)]

for step in range(3):
    wav = torch.randn(4, 1600) * 0.1
    labels = torch.randint(0, EMOTIONS, (4,))
    ref_feats = encoder(wav)  # clean reference, shared by all views of this batch
    for kind, factor in views:
        view = add_noise(wav) if kind == "noise" else speed_perturb(wav, factor)
        feats = encoder(view)
        logits = classifier(pool(feats))
        ce = F.cross_entropy(logits, labels)
        consistency = 1 - F.cosine_similarity(feats, match_reference(feats, ref_feats), dim=-1).mean()
        loss = ce + 0.5 * consistency
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"step {step} ce {ce.item():.4f} cons {consistency.item():.4f}")
