"""Dense passage retrieval with a compressed index: a DPR-style dual encoder (separate query and
passage towers, one-layer Transformer encoders with mean pooling) trained with in-batch
negatives plus one hard negative per question, where the passage embeddings go through a
4-bit uniform quantizer with straight-through rounding during training, so the encoder learns
embeddings that survive the int4 index. The quantizer's scale and zero point are set lazily
from the first batch it sees, with the LAPQ-style search for the clipping range that
minimises the L_p quantisation error.

Report: https://github.com/yhhhli/BRECQ/issues/30 -- computing the Fisher-diagonal gradients
over the calibration set (``save_grad_data`` -> ``get_grad`` on one mini-batch after another)
worked on the first batch and raised "Trying to backward through the graph a second time" on
the second. BRECQ's ``UniformAffineQuantizer`` initialises ``delta``/``zero_point`` on its
first forward; with ``scale_method='mse'`` (the non-channel-wise path used for activations)
they are computed from ``x.max()``/``x.min()`` of the live activations, without the
``.detach()`` the channel-wise path applies, and stored on the module. The report is
post-training quantisation of image classifiers; the retrieval setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, Q_LEN, P_LEN, BATCH = 50, 32, 6, 12, 8


def round_ste(x):
    return (x.round() - x).detach() + x


class UniformAffineQuantizer(nn.Module):
    def __init__(self, n_bits=4):
        super().__init__()
        self.n_bits, self.n_levels = n_bits, 2 ** n_bits
        self.delta, self.zero_point, self.inited = None, None, False

    def forward(self, x):
        if not self.inited:
            self.delta, self.zero_point = self.init_quantization_scale(x)
            self.inited = True
        x_int = round_ste(x / self.delta) + self.zero_point
        return (torch.clamp(x_int, 0, self.n_levels - 1) - self.zero_point) * self.delta

    def init_quantization_scale(self, x):
        x = x.detach()
        x_max, x_min = x.max(), x.min()
        best_score, delta, zero_point = 1e10, None, None
        for i in range(40):
            new_max, new_min = x_max * (1.0 - i * 0.02), x_min * (1.0 - i * 0.02)
            score = (x - self.quantize(x, new_max, new_min)).abs().pow(2.4).mean()
            if score < best_score:
                best_score = score
                delta = (new_max - new_min) / (self.n_levels - 1)
                zero_point = (-new_min / delta).round()
        return delta, zero_point

    def quantize(self, x, max_val, min_val):
        delta = (max_val - min_val) / (self.n_levels - 1)
        zero_point = (-min_val / delta).round()
        x_quant = torch.clamp(torch.round(x / delta) + zero_point, 0, self.n_levels - 1)
        return (x_quant - zero_point) * delta


class Encoder(nn.Module):
    def __init__(self, max_len):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(max_len, DIM) * 0.02)
        self.layer = nn.TransformerEncoderLayer(DIM, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, ids):
        mask = ids == 0
        h = self.layer(self.tok(ids) + self.pos[: ids.shape[1]], src_key_padding_mask=mask)
        h = h.masked_fill(mask[..., None], 0.0).sum(1) / (~mask).sum(1, keepdim=True)
        return self.proj(h)


class BiEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_encoder = Encoder(Q_LEN)
        self.p_encoder = Encoder(P_LEN)
        self.index_quant = UniformAffineQuantizer(n_bits=4)

    def forward(self, questions, passages):
        q = self.q_encoder(questions)
        p = self.index_quant(self.p_encoder(passages))
        return q, p


def make_batch():
    """Each question shares a few 'topic' tokens with its gold passage; the hard negative shares one."""
    topics = torch.randint(1, VOCAB, (BATCH, 3))
    questions = torch.cat([topics, torch.randint(1, VOCAB, (BATCH, Q_LEN - 3))], 1)
    gold = torch.cat([topics, torch.randint(1, VOCAB, (BATCH, P_LEN - 3))], 1)
    hard = torch.cat([topics[:, :1], torch.randint(1, VOCAB, (BATCH, P_LEN - 1))], 1)
    gold[:, -2:] = 0  # padding
    return questions, torch.cat([gold, hard], 0)


model = BiEncoder()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

for step in range(30):
    questions, passages = make_batch()
    q, p = model(questions, passages)
    scores = q @ p.t()  # (B, 2B): in-batch gold passages and hard negatives
    loss = F.cross_entropy(scores, torch.arange(BATCH))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
    optimizer.step()
    if step % 10 == 0:
        acc = (scores.argmax(1) == torch.arange(BATCH)).float().mean()
        print(f"step {step}: loss {loss.item():.3f} top-1 {acc.item():.2f}")
