"""Reduced from https://github.com/idiap/fast-transformers/pull/10

fast-transformers' RecurrentLinearAttention (the causal linear attention run as an RNN, one time step
per call, its state [Si, Zi] handed back as `memory`) updated its state in place:
`Zi += K` and `Si += torch.einsum("nhd,nhm->nhdm", K, value)`. The PR's author chained the recurrent
transformer's outputs to other modules and trained through them, and got "one of the variables needed
for gradient computation has been modified by an inplace operation": the previous step's output
einsums saved Si and Zi, and the next step's `+=` overwrote them. The PR replaced the updates with
`Zi = Zi + K` and `Si = Si + ...` (the maintainers kept the in-place path only for inference).

Here a character-level language model built from the recurrent transformer (as in
fast_transformers.recurrent) and trained step by step with teacher forcing on synthetic sequences.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, D_MODEL, N_HEADS, N_LAYERS, SEQ_LEN, BATCH = 12, 32, 4, 2, 8, 8


def elu_feature_map(x):
    return F.elu(x) + 1


class RecurrentLinearAttention(nn.Module):
    def __init__(self, feature_map=None, eps=1e-6):
        super().__init__()
        self.feature_map = feature_map or elu_feature_map
        self.eps = eps

    def forward(self, query, key, value, memory=None):
        Q = self.feature_map(query)
        K = self.feature_map(key)
        N, H, D = Q.shape
        _, _, M = value.shape
        if memory is None:
            Si = query.new_zeros((N, H, D, M))
            Zi = query.new_zeros((N, H, D))
        else:
            Si, Zi = memory
        # Update the internal state
        Zi += K
        Si += torch.einsum("nhd,nhm->nhdm", K, value)
        # Compute the output
        Z = 1. / (torch.einsum("nhd,nhd->nh", Q, Zi) + self.eps)
        V = torch.einsum("nhd,nhdm,nh->nhm", Q, Si, Z)
        return V, [Si, Zi]


class RecurrentAttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads):
        super().__init__()
        d_keys = d_model // n_heads
        self.inner_attention = attention
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_keys * n_heads)
        self.out_projection = nn.Linear(d_keys * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, query, key, value, memory=None):
        N, _ = query.shape
        H = self.n_heads
        query = self.query_projection(query).view(N, H, -1)
        key = self.key_projection(key).view(N, H, -1)
        value = self.value_projection(value).view(N, H, -1)
        new_value, memory = self.inner_attention(query, key, value, memory)
        return self.out_projection(new_value.view(N, -1)), memory


class RecurrentTransformerEncoderLayer(nn.Module):
    def __init__(self, attention, d_model, d_ff=None, dropout=0.1):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = attention
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory=None):
        x2, memory = self.attention(x, x, x, memory)
        x = x + self.dropout(x2)
        y = x = self.norm1(x)
        y = self.dropout(F.relu(self.linear1(y)))
        y = self.dropout(self.linear2(y))
        return self.norm2(x + y), memory


class RecurrentTransformerEncoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x, memory=None):
        if memory is None:
            memory = [None] * len(self.layers)
        for i, layer in enumerate(self.layers):
            x, memory[i] = layer(x, memory[i])
        return x, memory


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.encoder = RecurrentTransformerEncoder([
            RecurrentTransformerEncoderLayer(
                RecurrentAttentionLayer(RecurrentLinearAttention(), D_MODEL, N_HEADS), D_MODEL)
            for _ in range(N_LAYERS)
        ])
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        memory = None
        logits = []
        for t in range(tokens.shape[1]):
            y, memory = self.encoder(self.embed(tokens[:, t]), memory)
            logits.append(self.head(y))
        return torch.stack(logits, dim=1)


def make_batch():
    # sequences that count up by a per-sequence stride, modulo VOCAB
    start = torch.randint(0, VOCAB, (BATCH, 1))
    stride = torch.randint(1, 4, (BATCH, 1))
    return (start + stride * torch.arange(SEQ_LEN + 1)) % VOCAB


model = CharLM()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(10):
    seq = make_batch()
    inputs, targets = seq[:, :-1], seq[:, 1:]
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 3 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
