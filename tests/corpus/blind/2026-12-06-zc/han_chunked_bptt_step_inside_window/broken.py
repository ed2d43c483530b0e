"""Long-document classification: a hierarchical attention network read in chunks of sentences.

Source: https://github.com/maximilianigl/DVRL/issues/2. DVRL updates every ``num_steps`` steps but
backpropagates over ``multiplier_backprop_length`` times as many: the recurrent state is detached
only every few updates, each update's loss is backwarded with ``retain_graph=True`` in between, and
``optimizer.step()`` runs at every update. The reporter: "you are doing a gradient step in the case
of BPTT. This alters the weights while still backprop through the last iterations which yield an
error". The training setting is the writer's.

The author classifies long documents with a HAN (word GRU + word attention -> sentence vectors,
sentence GRU + sentence attention -> document vector). A document is too long for one pass, so it is
read CHUNK sentences at a time; the sentence GRU's state is carried from chunk to chunk and detached
every BPTT_CHUNKS chunks, so that a chunk's loss also trains what the earlier chunks of its window
contributed. The optimizer steps after every chunk.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, N_CLASSES = 200, 3
N_SENT, N_WORDS = 12, 10
CHUNK, BPTT_CHUNKS = 3, 2


def make_documents(n):
    labels = torch.randint(0, N_CLASSES, (n,))
    docs = torch.randint(0, VOCAB, (n, N_SENT, N_WORDS))
    cue = 1 + labels * 10  # a few class-specific words scattered through each document
    for s in range(0, N_SENT, 2):
        docs[:, s, 0] = cue + torch.randint(0, 10, (n,))
    return docs, labels


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.context = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, h):                       # (B, L, dim)
        scores = torch.tanh(self.proj(h)) @ self.context
        weights = F.softmax(scores, dim=1)
        return (weights.unsqueeze(-1) * h).sum(1)


class WordEncoder(nn.Module):
    def __init__(self, emb=32, hid=16):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, emb)
        self.gru = nn.GRU(emb, hid, batch_first=True, bidirectional=True)
        self.attn = Attention(2 * hid)

    def forward(self, sents):                   # (B, S, W) -> (B, S, 2*hid)
        B, S, W = sents.shape
        h, _ = self.gru(self.embed(sents.reshape(B * S, W)))
        return self.attn(h).view(B, S, -1)


class SentenceEncoder(nn.Module):
    def __init__(self, inp=32, hid=32):
        super().__init__()
        self.gru = nn.GRU(inp, hid, batch_first=True)
        self.attn = Attention(hid)

    def forward(self, sent_vecs, state):
        h, state = self.gru(sent_vecs, state)
        return self.attn(h), state


word_encoder, sent_encoder = WordEncoder(), SentenceEncoder()
classifier = nn.Linear(32, N_CLASSES)
params = [*word_encoder.parameters(), *sent_encoder.parameters(), *classifier.parameters()]
optimizer = torch.optim.Adam(params, lr=2e-3)
docs, labels = make_documents(32)

for epoch in range(1):
    for b in range(0, len(docs), 16):
        batch, y = docs[b:b + 16], labels[b:b + 16]
        state = None
        for c, start in enumerate(range(0, N_SENT, CHUNK)):
            sent_vecs = word_encoder(batch[:, start:start + CHUNK])
            doc_vec, state = sent_encoder(sent_vecs, state)
            loss = F.cross_entropy(classifier(doc_vec), y)
            end_of_window = (c + 1) % BPTT_CHUNKS == 0
            optimizer.zero_grad()
            loss.backward(retain_graph=not end_of_window)
            nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            if end_of_window:
                state = state.detach()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
