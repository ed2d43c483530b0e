"""Protein language model: masked-token fine-tuning of an ESM-style encoder with added PTM tokens.

Source: https://github.com/allenai/OLMo-core/pull/834
The review of that pull request points out that the model gathers its embedding
table (a ``SplitVocabEmbedding``: the base vocabulary's weight concatenated with the
weight of the extra tokens) once and keeps it in a per-step cache; when a batch is
split into micro-batches, the next micro-batch reuses that autograd-connected tensor
after the first micro-batch's ``loss.backward()`` and fails with the second-backward
error; the review asks to cache only data, not a tensor with a graph. The training
setting is the writer's: an ESM-style encoder fine-tuned with masked-token prediction
on sequences with post-translational-modification tokens, whose embeddings are a
learned mixture of the amino-acid embeddings plus a learned offset; the training
loop builds the full table once per optimizer step and reuses it for every
micro-batch of the gradient accumulation, with a small property head trained on the
pooled representation.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_BASE, N_EXTRA, D, SEQ_LEN = 25, 4, 64, 24
MASK_ID, PAD_ID = 24, 0
ACCUM_STEPS, MICRO_BATCH = 2, 8


class SplitVocabEmbedding(nn.Module):
    """Pretrained amino-acid vocabulary plus PTM tokens initialised from the residues they modify."""

    def __init__(self):
        super().__init__()
        self.base = nn.Embedding(N_BASE, D)
        self.mix_logits = nn.Parameter(torch.randn(N_EXTRA, N_BASE))
        self.extra_offset = nn.Parameter(torch.zeros(N_EXTRA, D))

    def full_weight(self):
        mix = torch.softmax(self.mix_logits, -1)
        extra = mix @ self.base.weight + self.extra_offset
        return torch.cat([self.base.weight, extra], 0)


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, pad_mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, key_padding_mask=pad_mask, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class ProteinLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = SplitVocabEmbedding()
        self.pos = nn.Parameter(0.02 * torch.randn(SEQ_LEN, D))
        self.layers = nn.ModuleList([EncoderLayer() for _ in range(2)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_bias = nn.Parameter(torch.zeros(N_BASE + N_EXTRA))

    def forward(self, tokens, table):
        pad_mask = tokens.eq(PAD_ID)
        x = F.embedding(tokens, table) + self.pos
        for layer in self.layers:
            x = layer(x, pad_mask)
        x = self.ln_f(x)
        logits = x @ table.t() + self.lm_bias           # tied output projection
        return logits, x


class PropertyHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(D, D), nn.Tanh(), nn.Linear(D, 1))

    def forward(self, x, tokens):
        keep = tokens.ne(PAD_ID).unsqueeze(-1).float()
        pooled = (x * keep).sum(1) / keep.sum(1)
        return self.net(pooled).squeeze(-1)


def make_micro_batch():
    tokens = torch.randint(1, N_BASE - 1, (MICRO_BATCH, SEQ_LEN))
    ptm = torch.rand(MICRO_BATCH, SEQ_LEN) < 0.05
    tokens = torch.where(ptm, torch.randint(N_BASE, N_BASE + N_EXTRA, tokens.shape), tokens)
    tokens[:, -3:] = PAD_ID
    target_prop = (tokens >= N_BASE).float().sum(1) / 4.0
    mask = (torch.rand(MICRO_BATCH, SEQ_LEN) < 0.15) & tokens.ne(PAD_ID)
    inputs = tokens.masked_fill(mask, MASK_ID)
    labels = tokens.masked_fill(~mask, -100)
    return inputs, labels, target_prop


model = ProteinLM()
head = PropertyHead()
optimizer = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=3e-4)

for step in range(1, 5):
    optimizer.zero_grad()
    table = model.embed.full_weight()      # gathered once per step, reused by each micro-batch
    for micro in range(ACCUM_STEPS):
        inputs, labels, target_prop = make_micro_batch()
        logits, hidden = model(inputs, table)
        mlm_loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        prop_loss = F.mse_loss(head(hidden, inputs), target_prop)
        loss = (mlm_loss + 0.5 * prop_loss) / ACCUM_STEPS
        loss.backward()
    optimizer.step()
    print(f"step {step}: mlm {mlm_loss.item():.3f} prop {prop_loss.item():.3f}")
