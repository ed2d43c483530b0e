"""A character-level GRU language model that keeps its hidden state on the module between batches."""

import torch
import torch.nn as nn


class CharModel(nn.Module):
    def __init__(self, vocab=12, emb=8, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.gru = nn.GRU(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)
        self.state = None

    def forward(self, tokens):
        out, state = self.gru(self.embed(tokens), self.state)
        self.state = state.detach()
        return self.out(out)


def stream(gen, batches=6, batch=4, length=7, vocab=12):
    text = torch.randint(0, vocab, (batch, batches * length + 1), generator=gen)
    for i in range(batches):
        chunk = text[:, i * length : (i + 1) * length + 1]
        yield chunk[:, :-1], chunk[:, 1:]


torch.manual_seed(21)
model = CharModel()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
for inputs, targets in stream(torch.Generator().manual_seed(22)):
    logits = model(inputs)
    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(loss.item())
