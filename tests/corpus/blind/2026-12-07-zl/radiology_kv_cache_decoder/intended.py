"""Radiology report generation: CNN image encoder and a transformer text decoder with a KV cache.

Report: https://github.com/meta-llama/llama-cookbook/issues/247 ("Cache mechanism would result
in Error while training?"): fine-tuning with the reference ``Attention`` module fails with
"RuntimeError: Trying to backward through the graph a second time" at the second iteration.
The module keeps ``self.cache_k`` / ``self.cache_v`` as persistent tensors and writes each
forward's keys and values into them by slice assignment
(``self.cache_k[:bsz, start_pos:start_pos + seqlen] = xk``), then attends over the cache. The
cache therefore carries the previous step's graph into the next step; the author's fix is
``self.cache_k = self.cache_k.to(xq).detach()`` before writing. The training setting (chest X-ray
report generation with teacher forcing, the same decoder later used for greedy decoding) is the
writer's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, HEADS, MAX_LEN, MAX_BATCH = 40, 32, 4, 12, 8
BOS, EOS = 1, 2


class CachedSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.hd = DIM // HEADS
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(DIM, DIM, bias=False) for _ in range(4))
        self.cache_k = torch.zeros(MAX_BATCH, MAX_LEN, HEADS, self.hd)
        self.cache_v = torch.zeros(MAX_BATCH, MAX_LEN, HEADS, self.hd)

    def forward(self, x, start_pos, mask):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, HEADS, self.hd)
        xk = self.wk(x).view(bsz, seqlen, HEADS, self.hd)
        xv = self.wv(x).view(bsz, seqlen, HEADS, self.hd)
        self.cache_k = self.cache_k.to(xq).detach()  # do not carry the last step's graph
        self.cache_v = self.cache_v.to(xq).detach()
        self.cache_k[:bsz, start_pos:start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos:start_pos + seqlen] = xv
        keys = self.cache_k[:bsz, :start_pos + seqlen].transpose(1, 2)
        values = self.cache_v[:bsz, :start_pos + seqlen].transpose(1, 2)
        scores = xq.transpose(1, 2) @ keys.transpose(2, 3) / math.sqrt(self.hd)
        if mask is not None:
            scores = scores + mask
        out = torch.softmax(scores, -1) @ values
        return self.wo(out.transpose(1, 2).reshape(bsz, seqlen, DIM))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = CachedSelfAttention()
        self.cross_attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))
        self.n1, self.n2, self.n3 = nn.LayerNorm(DIM), nn.LayerNorm(DIM), nn.LayerNorm(DIM)

    def forward(self, x, memory, start_pos, mask):
        x = x + self.self_attn(self.n1(x), start_pos, mask)
        x = x + self.cross_attn(self.n2(x), memory, memory, need_weights=False)[0]
        return x + self.ffn(self.n3(x))


class ReportGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 4, stride=4), nn.ReLU(), nn.Conv2d(16, DIM, 2, stride=2))
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(MAX_LEN, DIM) * 0.02)
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(2))
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, xray, tokens, start_pos=0):
        memory = self.encoder(xray).flatten(2).transpose(1, 2)  # B x patches x DIM
        seqlen = tokens.size(1)
        h = self.tok(tokens) + self.pos[start_pos:start_pos + seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf")).triu(1)
            mask = torch.cat([torch.zeros(seqlen, start_pos), mask], 1)
        for layer in self.layers:
            h = layer(h, memory, start_pos, mask)
        return self.out(h)

    @torch.no_grad()
    def generate(self, xray, max_new=6):
        tokens = torch.full((xray.size(0), 1), BOS)
        for pos in range(max_new):
            logits = self(xray, tokens[:, -1:], start_pos=pos)
            tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], 1)
        return tokens


xrays = torch.rand(16, 1, 32, 32)
reports = torch.randint(3, VOCAB, (16, MAX_LEN))
reports[:, 0] = BOS
reports[:, -1] = EOS

model = ReportGenerator()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

for epoch in range(2):
    model.train()
    for k in range(0, 16, 8):
        img, rep = xrays[k:k + 8], reports[k:k + 8]
        logits = model(img, rep[:, :-1])  # teacher forcing
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), rep[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    print(f"epoch {epoch} loss {loss.item():.4f} sample {model.generate(xrays[:1])[0].tolist()}")
