"""A Transformer encoder-decoder for grammatical error correction, with fairseq's MultiheadAttention.

Source: https://github.com/kanyun-inc/fairseq-gec/issues/45 "bash train.sh got error"
(fix given in https://github.com/kanyun-inc/fairseq-gec/issues/41).
The reporter ran the repository's ``train.sh`` (a copy-augmented Transformer on a recent
PyTorch); its attention layer is fairseq's 2019 ``MultiheadAttention``.
Reduced: one encoder and one decoder layer, no copy mechanism, random "noisy" and "corrected"
token sequences, a plain cross-entropy loss.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter


class MultiheadAttention(nn.Module):
    """Multi-headed attention (fairseq, 2019)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == self.embed_dim, "embed_dim must be divisible by num_heads"
        self.scaling = self.head_dim**-0.5

        self.in_proj_weight = Parameter(torch.Tensor(3 * embed_dim, embed_dim))
        if bias:
            self.in_proj_bias = Parameter(torch.Tensor(3 * embed_dim))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if self.in_proj_bias is not None:
            nn.init.constant_(self.in_proj_bias, 0.0)
            nn.init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None):
        """Input shape: Time x Batch x Channel"""
        qkv_same = query.data_ptr() == key.data_ptr() == value.data_ptr()
        kv_same = key.data_ptr() == value.data_ptr()

        tgt_len, bsz, embed_dim = query.size()

        if qkv_same:
            # self-attention
            q, k, v = self.in_proj_qkv(query)
        elif kv_same:
            # encoder-decoder attention
            q = self.in_proj_q(query)
            k, v = self.in_proj_kv(key)
        else:
            q = self.in_proj_q(query)
            k = self.in_proj_k(key)
            v = self.in_proj_v(value)
        q *= self.scaling

        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        src_len = k.size(1)

        attn_weights = torch.bmm(q, k.transpose(1, 2))
        if attn_mask is not None:
            attn_weights += attn_mask.unsqueeze(0)
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2), float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)

        attn_weights = F.softmax(attn_weights.float(), dim=-1).type_as(attn_weights)
        attn_weights = F.dropout(attn_weights, p=self.dropout, training=self.training)

        attn = torch.bmm(attn_weights, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        attn = self.out_proj(attn)
        return attn

    def in_proj_qkv(self, query):
        return self._in_proj(query).chunk(3, dim=-1)

    def in_proj_kv(self, key):
        return self._in_proj(key, start=self.embed_dim).chunk(2, dim=-1)

    def in_proj_q(self, query):
        return self._in_proj(query, end=self.embed_dim)

    def in_proj_k(self, key):
        return self._in_proj(key, start=self.embed_dim, end=2 * self.embed_dim)

    def in_proj_v(self, value):
        return self._in_proj(value, start=2 * self.embed_dim)

    def _in_proj(self, input, start=0, end=None):
        weight = self.in_proj_weight
        bias = self.in_proj_bias
        weight = weight[start:end, :]
        if bias is not None:
            bias = bias[start:end]
        return F.linear(input, weight, bias)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = MultiheadAttention(dim, heads)
        self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x, pad_mask):
        x = self.ln1(x + self.self_attn(query=x, key=x, value=x, key_padding_mask=pad_mask))
        return self.ln2(x + self.fc2(F.relu(self.fc1(x))))


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = MultiheadAttention(dim, heads)
        self.encoder_attn = MultiheadAttention(dim, heads)
        self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x, enc, enc_pad_mask, future_mask):
        x = self.ln1(x + self.self_attn(query=x, key=x, value=x, attn_mask=future_mask))
        x = self.ln2(x + self.encoder_attn(query=x, key=enc, value=enc, key_padding_mask=enc_pad_mask))
        return self.ln3(x + self.fc2(F.relu(self.fc1(x))))


class TransformerGEC(nn.Module):
    def __init__(self, vocab, dim=32, heads=4, pad=0):
        super().__init__()
        self.pad = pad
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad)
        self.embed_scale = math.sqrt(dim)
        self.encoder = EncoderLayer(dim, heads)
        self.decoder = DecoderLayer(dim, heads)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src_tokens, prev_output_tokens):
        enc_pad = src_tokens.eq(self.pad)
        enc = self.encoder(self.embed_scale * self.embed(src_tokens).transpose(0, 1), enc_pad)
        t = prev_output_tokens.size(1)
        future_mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        dec = self.decoder(self.embed_scale * self.embed(prev_output_tokens).transpose(0, 1), enc, enc_pad, future_mask)
        return self.out(dec.transpose(0, 1))


def make_sample(bsz=6, length=9, vocab=30, bos=1):
    target = torch.randint(3, vocab, (bsz, length))
    noise = torch.rand(bsz, length) < 0.15
    source = torch.where(noise, torch.randint(3, vocab, (bsz, length)), target)
    prev_output_tokens = torch.cat([torch.full((bsz, 1), bos), target[:, :-1]], dim=1)
    return {"net_input": {"src_tokens": source, "prev_output_tokens": prev_output_tokens}, "target": target}


def train_step(model, optimizer, sample):
    model.train()
    logits = model(**sample["net_input"])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), sample["target"].reshape(-1), ignore_index=0)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    model = TransformerGEC(vocab=30)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98))
    for epoch in range(1, 3):
        for _ in range(3):
            print(epoch, train_step(model, optimizer, make_sample()))


if __name__ == "__main__":
    main()
