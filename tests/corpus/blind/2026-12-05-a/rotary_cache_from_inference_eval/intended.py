"""A small GPT with rotary embeddings: a sanity-check evaluation runs before training.

Source: https://github.com/Dao-AILab/flash-attention/pull/299
"rotary: update cos/sin cache when switching from inference mode".
The author trained a language model whose attention uses a rotary embedding with a cos/sin
cache; evaluation ran under ``torch.inference_mode()`` before a training phase started.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 40
    dim: int = 32
    n_heads: int = 4
    seq_len: int = 12
    batch_size: int = 8
    epochs: int = 2
    steps_per_epoch: int = 4
    lr: float = 3e-3


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_emb(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._seq_len_cached = 0
        self._cos_cached = None
        self._sin_cached = None

    def _update_cos_sin_cache(self, seqlen, device, dtype):
        # Reset the tables if the sequence length has changed,
        # or if we're on a new device (possibly due to tracing for instance)
        if (
            seqlen > self._seq_len_cached
            or self._cos_cached.device != device
            or self._cos_cached.dtype != dtype
            or (self.training and self._cos_cached.is_inference())
        ):
            self._seq_len_cached = seqlen
            t = torch.arange(seqlen, device=device, dtype=self.inv_freq.dtype)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self._cos_cached = emb.cos().to(dtype)
            self._sin_cached = emb.sin().to(dtype)

    def forward(self, q, k):
        seqlen = q.shape[-2]
        self._update_cos_sin_cache(seqlen, q.device, q.dtype)
        cos, sin = self._cos_cached[:seqlen], self._sin_cached[:seqlen]
        return apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.dim)
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)
        self.proj = nn.Linear(cfg.dim, cfg.dim)
        self.rotary = RotaryEmbedding(cfg.dim // cfg.n_heads)
        self.ln2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, 4 * cfg.dim), nn.GELU(), nn.Linear(4 * cfg.dim, cfg.dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2) for z in (q, k, v))
        q, k = self.rotary(q, k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.blocks = nn.ModuleList([Block(cfg), Block(cfg)])
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def forward(self, idx):
        x = self.tok_emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def get_batch(data, cfg):
    ix = torch.randint(0, data.numel() - cfg.seq_len - 1, (cfg.batch_size,))
    x = torch.stack([data[i : i + cfg.seq_len] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + cfg.seq_len] for i in ix])
    return x, y


@torch.inference_mode()
def evaluate(model, data, cfg, n_batches=2):
    model.eval()
    losses = []
    for _ in range(n_batches):
        x, y = get_batch(data, cfg)
        logits = model(x)
        losses.append(F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)).item())
    model.train()
    return sum(losses) / len(losses)


def train(cfg):
    torch.manual_seed(0)
    train_data = torch.randint(0, cfg.vocab_size, (2000,))
    val_data = torch.randint(0, cfg.vocab_size, (500,))
    model = TinyGPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

    print(f"sanity check val loss {evaluate(model, val_data, cfg):.3f}")
    for epoch in range(cfg.epochs):
        for _ in range(cfg.steps_per_epoch):
            x, y = get_batch(train_data, cfg)
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} train loss {loss.item():.3f} val loss {evaluate(model, val_data, cfg):.3f}")


if __name__ == "__main__":
    train(Config())
