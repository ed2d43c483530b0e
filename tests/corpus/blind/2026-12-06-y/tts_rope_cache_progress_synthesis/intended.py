"""Tacotron-style TTS on a toy phoneme-to-mel task: a text encoder (embedding,
convolution, one rotary self-attention block), an autoregressive attention
decoder with a prenet, a stop-token head and a convolutional postnet. After each
epoch the trainer synthesises a fixed, longer progress sentence, as TTS recipes do
to plot the spectrogram.

Reduced from https://github.com/DigitalPhonetics/IMS-Toucan/issues/188: training
failed with "Inference tensors cannot be saved for backward"; the maintainer
traced it to the rotary-embedding cache of the attention, which is built lazily
and was (re)built while the progress plot ran under ``torch.inference_mode()``.
The next training forward multiplies the queries by a slice of that cache and
autograd must save it. Here the progress sentence is longer than the training
sentences, so the cache grows during the first progress synthesis and the first
step of epoch 2 fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SYMBOLS, TEXT_LEN, FRAMES_PER_SYMBOL, N_MELS = 32, 16, 2, 20
N_UTTS, BATCH, EPOCHS = 16, 8, 3
PROGRESS_TEXT_LEN = 28


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        self.dim, self.base = dim, base
        self.cos_cached = None
        self.sin_cached = None

    def _build_cache(self, n):
        if self.cos_cached is not None and n <= self.cos_cached.shape[0]:
            return
        theta = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float() / self.dim))
        idx_theta = torch.outer(torch.arange(n).float(), theta)
        idx_theta2 = torch.cat([idx_theta, idx_theta], dim=-1)
        self.cos_cached = idx_theta2.cos()
        self.sin_cached = idx_theta2.sin()

    def forward(self, x):  # x: (batch, time, dim)
        n = x.shape[1]
        self._build_cache(n)
        half = self.dim // 2
        neg_half_x = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos_cached[:n] + neg_half_x * self.sin_cached[:n]


class TextEncoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.embed = nn.Embedding(N_SYMBOLS, dim)
        self.conv = nn.Conv1d(dim, dim, 5, padding=2)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.rope = RotaryEmbedding(dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens):
        x = self.embed(tokens)
        x = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k = self.rope(q), self.rope(k)
        att = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)
        return self.norm(x + att @ v)


class AttentionDecoder(nn.Module):
    def __init__(self, enc_dim=64, dim=96):
        super().__init__()
        self.prenet = nn.Sequential(nn.Linear(N_MELS, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.rnn = nn.GRUCell(32 + enc_dim, dim)
        self.query = nn.Linear(dim, enc_dim)
        self.to_mel = nn.Linear(dim + enc_dim, N_MELS)
        self.to_stop = nn.Linear(dim + enc_dim, 1)
        self.dim = dim

    def forward(self, memory, n_frames, teacher=None):
        b = memory.shape[0]
        h = memory.new_zeros(b, self.dim)
        context = memory.new_zeros(b, memory.shape[-1])
        frame = memory.new_zeros(b, N_MELS)
        mels, stops = [], []
        for t in range(n_frames):
            p = F.dropout(self.prenet(frame), 0.5, training=True)
            h = self.rnn(torch.cat([p, context], dim=-1), h)
            scores = (memory @ self.query(h).unsqueeze(-1)).squeeze(-1)
            context = (torch.softmax(scores, dim=-1).unsqueeze(-1) * memory).sum(dim=1)
            out = torch.cat([h, context], dim=-1)
            mels.append(self.to_mel(out))
            stops.append(self.to_stop(out).squeeze(-1))
            frame = teacher[:, t] if teacher is not None else mels[-1]
        return torch.stack(mels, dim=1), torch.stack(stops, dim=1)


class Postnet(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(N_MELS, dim, 5, padding=2), nn.Tanh(), nn.Conv1d(dim, N_MELS, 5, padding=2))

    def forward(self, mel):
        return mel + self.net(mel.transpose(1, 2)).transpose(1, 2)


class Tacotron(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = TextEncoder()
        self.decoder = AttentionDecoder()
        self.postnet = Postnet()

    def forward(self, tokens, n_frames, teacher=None):
        memory = self.encoder(tokens)
        mel, stop = self.decoder(memory, n_frames, teacher)
        return mel, self.postnet(mel), stop


def make_corpus():
    symbol_mels = torch.randn(N_SYMBOLS, N_MELS)
    tokens = torch.randint(0, N_SYMBOLS, (N_UTTS, TEXT_LEN))
    mels = symbol_mels[tokens].repeat_interleave(FRAMES_PER_SYMBOL, dim=1)
    mels = mels + 0.05 * torch.randn_like(mels)
    stop = torch.zeros(N_UTTS, mels.shape[1])
    stop[:, -1] = 1.0
    return tokens, mels, stop


@torch.no_grad()
def plot_progress(model, tokens, max_frames=60):
    mel_before, mel_after, stop = model(tokens, max_frames)
    above = (torch.sigmoid(stop[0]) > 0.5).nonzero()
    n = int(above[0]) + 1 if len(above) else max_frames
    return mel_after[0, :n]


model = Tacotron()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
tokens, mels, stop_targets = make_corpus()
progress_sentence = torch.randint(0, N_SYMBOLS, (1, PROGRESS_TEXT_LEN))

for epoch in range(EPOCHS):
    perm = torch.randperm(N_UTTS)
    for i in range(0, N_UTTS, BATCH):
        idx = perm[i:i + BATCH]
        mel_before, mel_after, stop_logits = model(tokens[idx], mels.shape[1], teacher=mels[idx])
        mel_loss = F.l1_loss(mel_before, mels[idx]) + F.l1_loss(mel_after, mels[idx])
        stop_loss = F.binary_cross_entropy_with_logits(stop_logits, stop_targets[idx], pos_weight=torch.tensor(5.0))
        loss = mel_loss + stop_loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    spec = plot_progress(model, progress_sentence)
    print(f"epoch {epoch}  mel {mel_loss.item():.3f}  stop {stop_loss.item():.3f}  progress frames {spec.shape[0]}")
