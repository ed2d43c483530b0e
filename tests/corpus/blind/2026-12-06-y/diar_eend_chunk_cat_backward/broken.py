"""End-to-end neural speaker diarization (SA-EEND style) with recording-level permutation-invariant training.

Reduced from https://github.com/ai2cm/ace/issues/544 ("Gradient accumulation incompatible with
current order of operations"). In that climate emulator the per-step predictions of a rollout were
concatenated along time into one tensor, and the training loop then took one time slice of it per
step, computed that step's loss and called ``loss.backward()`` to accumulate gradients. Even with
the steps detached from each other, "if we take these detached steps and concatenate them into a
single tensor, all steps now depend on all steps even if we slice that resulting tensor in time
later": the backward of the first slice goes through the concatenation into every step's graph
and frees it, and the second ``backward()`` fails with "Trying to backward through the graph a
second time". The proposed fix returns the steps as a list of separate tensors.

The training setting is the writer's: a self-attentive EEND model applied to long recordings chunk
by chunk (self-attention is quadratic in the length); the chunk posteriors are stitched along time
so that the speaker permutation is chosen once for the whole recording (chunk-level PIT would let
the speaker order flip between chunks), and the binary cross-entropy is then back-propagated chunk
by chunk, one slice of the stitched posteriors at a time, to accumulate the gradient.
"""

import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SPK, N_FEAT, T, CHUNK = 2, 16, 160, 40


def make_recordings(n):
    """Two speakers talking in turns with some overlap; frames are speaker-embedding mixtures."""
    spk_emb = torch.randn(8, N_FEAT)
    feats, labels = [], []
    for _ in range(n):
        who = torch.randperm(8)[:N_SPK]
        act = torch.zeros(T, N_SPK)
        for s in range(N_SPK):
            state, t = int(torch.rand(1) < 0.5), 0
            while t < T:
                dur = int(torch.randint(8, 30, (1,)))
                act[t:t + dur, s] = state
                state, t = 1 - state, t + dur
        x = act @ spk_emb[who] + 0.3 * torch.randn(T, N_FEAT)
        feats.append(x)
        labels.append(act)
    return torch.stack(feats), torch.stack(labels)


class EEND(nn.Module):
    def __init__(self, d=32, layers=2, heads=4):
        super().__init__()
        self.inp = nn.Linear(N_FEAT, d)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(d, N_SPK)

    def forward(self, x):
        return self.out(self.encoder(self.inp(x)))  # frame-wise speaker-activity logits


def diarize_recording(model, feats):
    """Run the model on each chunk and stitch the chunk posteriors back along time."""
    return torch.cat([model(feats[:, s:s + CHUNK]) for s in range(0, T, CHUNK)], dim=1)


def best_permutation(logits, labels):
    """Recording-level PIT: reorder each recording's reference speakers to match the outputs."""
    perms = list(itertools.permutations(range(N_SPK)))
    losses = torch.stack([
        F.binary_cross_entropy_with_logits(logits, labels[..., list(p)], reduction="none").mean((1, 2))
        for p in perms
    ], 1)
    best = losses.argmin(1)
    return torch.stack([labels[b][..., list(perms[int(k)])] for b, k in enumerate(best)])


@torch.no_grad()
def frame_error(logits, labels):
    ref = best_permutation(logits, labels)
    return ((logits > 0).float() != ref).float().mean().item()


feats, labels = make_recordings(24)
eend = EEND()
optimizer = torch.optim.Adam(eend.parameters(), lr=2e-3)

for step in range(6):
    idx = torch.randint(0, 24, (6,))
    x, y = feats[idx], labels[idx]
    logits = diarize_recording(eend, x)
    y_perm = best_permutation(logits.detach(), y)
    optimizer.zero_grad()
    for s in range(0, T, CHUNK):  # accumulate the gradient one chunk at a time
        chunk_loss = F.binary_cross_entropy_with_logits(logits[:, s:s + CHUNK], y_perm[:, s:s + CHUNK]) * CHUNK / T
        chunk_loss.backward()
    optimizer.step()
    print(f"step {step}: frame error {frame_error(logits.detach(), y):.3f}")
