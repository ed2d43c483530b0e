"""Seq2seq: a GRU encoder-decoder learns to reverse token sequences, trained with teacher forcing; models in a dict."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, SOS, LENGTH, HIDDEN = 10, 0, 6, 32


def make_pairs(n=96):
    src = torch.randint(1, VOCAB, (n, LENGTH))
    return src, src.flip(1)


class EncoderRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, HIDDEN)
        self.gru = nn.GRU(HIDDEN, HIDDEN, batch_first=True)

    def forward(self, src):
        outputs, hidden = self.gru(self.embedding(src))
        return outputs, hidden


class AttnDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, HIDDEN)
        self.cell = nn.GRUCell(2 * HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, token, hidden, enc_outputs):
        scores = torch.bmm(enc_outputs, hidden.unsqueeze(2)).squeeze(2)
        weights = F.softmax(scores, dim=1)
        context = torch.bmm(weights.unsqueeze(1), enc_outputs).squeeze(1)
        emb = self.embedding(token)
        hidden = self.cell(torch.cat([emb, context], dim=1), hidden)
        return self.out(hidden), hidden


def train_batch(models, optimizers, src, tgt):
    enc_outputs, hidden = models["encoder"](src)
    hidden = hidden.squeeze(0)
    token = torch.full((src.shape[0],), SOS, dtype=torch.long)
    loss = 0.0
    for t in range(tgt.shape[1]):
        logits, hidden = models["decoder"](token, hidden, enc_outputs)
        loss = loss + F.cross_entropy(logits, tgt[:, t])
        token = tgt[:, t]  # teacher forcing: the next input is the true token
    loss = loss / tgt.shape[1]
    for optimizer in optimizers.values():
        optimizer.zero_grad()
    loss.backward()
    for name, optimizer in optimizers.items():
        nn.utils.clip_grad_norm_(models[name].parameters(), 1.0)
        optimizer.step()
    return loss.item()


def main():
    src, tgt = make_pairs()
    models = {"encoder": EncoderRNN(), "decoder": AttnDecoder()}
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=5e-3) for name, m in models.items()}
    for epoch in range(2):
        losses = [train_batch(models, optimizers, s, t) for s, t in zip(src.split(24), tgt.split(24))]
        print(f"epoch {epoch}: loss {sum(losses) / len(losses):.3f}")


if __name__ == "__main__":
    main()
