"""Language model (recurrent): a character-level GRU on a synthetic text, hidden state repackaged between batches."""

import torch
import torch.nn as nn

torch.manual_seed(0)

TEXT = "the cat sat on the mat. the dog sat on the log. " * 6
CHARS = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(CHARS)}
BATCH, SEQ, EMB, HIDDEN = 4, 8, 12, 32


def batchify(text):
    ids = torch.tensor([STOI[c] for c in text])
    n = len(ids) // BATCH
    return ids[: n * BATCH].view(BATCH, n)


class CharRNN(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, EMB)
        self.gru = nn.GRU(EMB, HIDDEN, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.decoder = nn.Linear(HIDDEN, vocab)

    def forward(self, x, hidden):
        out, hidden = self.gru(self.embed(x), hidden)
        return self.decoder(self.drop(out)), hidden


data = batchify(TEXT)
model = CharRNN(len(CHARS))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1.0)

for epoch in range(2):
    hidden = torch.zeros(1, BATCH, HIDDEN)
    total = 0.0
    for i in range(0, data.shape[1] - 1 - SEQ, SEQ):
        x, y = data[:, i : i + SEQ], data[:, i + 1 : i + 1 + SEQ]
        hidden = hidden.detach()
        logits, hidden = model(x, hidden)
        loss = criterion(logits.reshape(-1, len(CHARS)), y.reshape(-1))
        model.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / (data.shape[1] // SEQ):.3f}")
