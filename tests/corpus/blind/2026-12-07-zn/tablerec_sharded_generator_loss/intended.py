"""Table-structure recognition: image-to-markup decoder whose generator loss is computed in shards.

Source: https://github.com/OpenNMT/OpenNMT-py/pull/713 ("pytorch 0.4"): in
`sharded_compute_loss`, each shard's loss is backwarded inside the shard loop
(`loss.div(normalization).backward()`); under PyTorch 0.4 the shards were no longer cut off from the
decoder graph, so the second shard's backward ran into the graph the first one had freed. The PR
changed it to `.backward(retain_graph=True)`.

What the author was doing: recognising the structure of a table from its image as a sequence of
HTML-like tokens (<tr>, <td>, </td>, </tr>, span tokens), OpenNMT-style: a CNN encodes the image into
a feature grid, a GRU decoder with attention runs with teacher forcing, and the generator
(projection + log-softmax over the structure vocabulary) is applied shard by shard along time to keep
the logits small, each shard's loss backwarded as it is computed. The training setting is the
writer's; the shard-by-shard backward through a shared decoder graph is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

PAD, BOS, EOS, TR, TR_END, TD, TD_END = range(7)
VOCAB, HID, SHARD = 7, 32, 6


def render_table(rows, cols, size=32):
    img = torch.zeros(1, size, size)
    for r in range(rows + 1):
        img[0, min(r * (size - 1) // rows, size - 1), :] = 1.0
    for c in range(cols + 1):
        img[0, :, min(c * (size - 1) // cols, size - 1)] = 1.0
    return img + 0.05 * torch.randn(1, size, size)


def structure_tokens(rows, cols, max_len=28):
    toks = [BOS] + ([TR] + [TD, TD_END] * cols + [TR_END]) * rows + [EOS]
    return torch.tensor(toks + [PAD] * (max_len - len(toks)))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(),
                                 nn.Conv2d(16, HID, 3, 2, 1), nn.ReLU())

    def forward(self, img):
        return self.cnn(img).flatten(2).transpose(1, 2)      # (B, 64 cells, HID)


class AttnDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HID)
        self.cell = nn.GRUCell(2 * HID, HID)
        self.attn = nn.Linear(HID, HID, bias=False)

    def forward(self, memory, tgt_in):
        h = memory.mean(1)
        ctx = torch.zeros_like(h)
        outs = []
        for t in range(tgt_in.shape[1]):
            h = self.cell(torch.cat([self.emb(tgt_in[:, t]), ctx], -1), h)
            score = torch.einsum("bd,bnd->bn", self.attn(h), memory)
            ctx = torch.einsum("bn,bnd->bd", score.softmax(-1), memory)
            outs.append(h + ctx)
        return torch.stack(outs, dim=1)                       # (B, T, HID)


encoder, decoder = Encoder(), AttnDecoder()
generator = nn.Sequential(nn.Linear(HID, VOCAB), nn.LogSoftmax(dim=-1))
params = list(encoder.parameters()) + list(decoder.parameters()) + list(generator.parameters())
optimizer = torch.optim.Adam(params, lr=2e-3)


def sharded_compute_loss(dec_out, target, normalization):
    total = 0.0
    for out_shard, tgt_shard in zip(torch.split(dec_out, SHARD, dim=1), torch.split(target, SHARD, dim=1)):
        scores = generator(out_shard)
        loss = F.nll_loss(scores.reshape(-1, VOCAB), tgt_shard.reshape(-1), ignore_index=PAD, reduction="sum")
        loss.div(normalization).backward(retain_graph=True)
        total += loss.item()
    return total / normalization


shapes = [(r, c) for r in range(1, 4) for c in range(1, 4)]
for step in range(6):
    batch = [shapes[i] for i in torch.randint(0, len(shapes), (8,)).tolist()]
    imgs = torch.stack([render_table(r, c) for r, c in batch])
    seqs = torch.stack([structure_tokens(r, c) for r, c in batch])
    tgt_in, tgt_out = seqs[:, :-1], seqs[:, 1:]
    optimizer.zero_grad()
    dec_out = decoder(encoder(imgs), tgt_in)
    nll = sharded_compute_loss(dec_out, tgt_out, normalization=float((tgt_out != PAD).sum()))
    optimizer.step()
    print(f"step {step} token nll {nll:.3f}")
