"""Neural machine translation, fairseq layout: an encoder returning `encoder_out = (x, y)`
(keys for the attention and keys plus source embeddings as values, as fairseq's
convolutional encoder does) and an attentional GRU decoder with teacher forcing.

Reduced from https://github.com/facebookresearch/fairseq/issues/251: the author wanted to
change some channels of `encoder_out` at decode time, `encoder_out[0][:, :, j] =
do_something(encoder_out[0][:, :, j])`; here `do_something` is a learned per-channel
gate on a few channels. Synthetic source/target token ids, cross-entropy, Adam.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SRC_VOCAB, TGT_VOCAB, EMBED, HIDDEN = 40, 40, 16, 32
BATCH, SRC_LEN, TGT_LEN = 8, 7, 6
PAD, BOS = 0, 1


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(SRC_VOCAB, EMBED, padding_idx=PAD)
        self.rnn = nn.GRU(EMBED, HIDDEN, batch_first=True)
        self.fc_out = nn.Linear(HIDDEN, EMBED)

    def forward(self, src_tokens):
        embedded = self.embed_tokens(src_tokens)
        x, _ = self.rnn(embedded)
        x = self.fc_out(x)
        y = x + embedded
        return x, y


class AttentionDecoder(nn.Module):
    def __init__(self, rescaled_channels=(0, 3, 5)):
        super().__init__()
        self.embed_tokens = nn.Embedding(TGT_VOCAB, EMBED, padding_idx=PAD)
        self.rnn = nn.GRUCell(2 * EMBED, HIDDEN)
        self.query_proj = nn.Linear(HIDDEN, EMBED)
        self.channel_gate = nn.Parameter(torch.zeros(EMBED))
        self.rescaled_channels = rescaled_channels
        self.fc_out = nn.Linear(HIDDEN + EMBED, TGT_VOCAB)

    def do_something(self, channel, j):
        return torch.sigmoid(self.channel_gate[j]) * 2.0 * channel

    def forward(self, prev_output_tokens, encoder_out):
        keys, values = encoder_out
        keys = keys.clone()
        for j in self.rescaled_channels:
            keys[:, :, j] = self.do_something(encoder_out[0][:, :, j], j)
        bsz, tgt_len = prev_output_tokens.shape
        h = keys.new_zeros(bsz, HIDDEN)
        context = keys.new_zeros(bsz, EMBED)
        logits = []
        for t in range(tgt_len):
            emb = self.embed_tokens(prev_output_tokens[:, t])
            h = self.rnn(torch.cat([emb, context], dim=-1), h)
            scores = torch.bmm(keys, self.query_proj(h).unsqueeze(2)).squeeze(2)
            attn = F.softmax(scores, dim=-1)
            context = torch.bmm(attn.unsqueeze(1), values).squeeze(1)
            logits.append(self.fc_out(torch.cat([h, context], dim=-1)))
        return torch.stack(logits, dim=1)


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = AttentionDecoder()

    def forward(self, src_tokens, prev_output_tokens):
        encoder_out = self.encoder(src_tokens)
        return self.decoder(prev_output_tokens, encoder_out)


def make_batch():
    src = torch.randint(2, SRC_VOCAB, (BATCH, SRC_LEN))
    tgt = torch.randint(2, TGT_VOCAB, (BATCH, TGT_LEN))
    prev = torch.cat([torch.full((BATCH, 1), BOS), tgt[:, :-1]], dim=1)
    return src, prev, tgt


def train_step(model, optimizer, batch):
    src, prev, tgt = batch
    optimizer.zero_grad()
    logits = model(src, prev)
    loss = F.cross_entropy(logits.reshape(-1, TGT_VOCAB), tgt.reshape(-1), ignore_index=PAD)
    loss.backward()
    optimizer.step()
    return loss.item()


model = Seq2Seq()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for update in range(5):
    print(f"update {update}: loss {train_step(model, optimizer, make_batch()):.4f}")
