"""Reduced from https://github.com/lucidrains/flamingo-pytorch/issues/10

flamingo-pytorch's MaskedCrossAttention zeroes the attention of text tokens that have no
preceding media after the softmax, but wrote `attn.masked_fill(mask, 0.)` without assigning
the result, so the line had no effect. The issue's author pointed out the out-of-place call and
suggested the in-place `masked_fill_`. Taking that suggestion literally, as here, the text model
is trained with `attn.masked_fill_(text_without_media_mask, 0.)` on the output of softmax,
which softmax saved for its backward; loss.backward() raises the in-place RuntimeError.
The maintainer's fix assigns the out-of-place result: `attn = attn.masked_fill(...)`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MaskedCrossAttention(nn.Module):
    def __init__(self, dim, dim_head=8, heads=2):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        inner = dim_head * heads
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x, media, text_without_media_mask):
        b, n, _ = x.shape
        h = self.heads
        q = self.to_q(x).view(b, n, h, -1).transpose(1, 2) * self.scale
        k, v = self.to_kv(media).chunk(2, dim=-1)
        m = media.shape[1]
        k = k.view(b, m, h, -1).transpose(1, 2)
        v = v.view(b, m, h, -1).transpose(1, 2)
        sim = q @ k.transpose(-1, -2)
        attn = sim.softmax(dim=-1)
        attn = attn.masked_fill(text_without_media_mask[:, None, :, None], 0.)
        out = (attn @ v).transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class TinyFlamingo(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.xattn = MaskedCrossAttention(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, media, mask):
        x = self.embed(tokens)
        x = x + self.xattn(x, media, mask)
        return self.head(x)


model = TinyFlamingo()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

tokens = torch.randint(0, 20, (8, 10))
media = torch.randn(8, 3, 16)
media_pos = torch.randint(0, 5, (8, 1))
text_without_media_mask = torch.arange(10)[None, :] < media_pos

for it in range(5):
    logits = model(tokens[:, :-1], media, text_without_media_mask[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 20), tokens[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, loss.item())
