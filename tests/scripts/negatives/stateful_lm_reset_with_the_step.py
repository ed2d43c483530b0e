"""A stateful LSTM language model trained on long sequences, each cut into 3 chunks (truncated BPTT) with one
optimizer step per sequence: the gradients of the 3 chunks accumulate, and the hidden state carries the context from
chunk to chunk. The state is reset when a new sequence starts (in the branch that steps); the author forgot to
detach it between chunks, so the second chunk's backward runs into the first chunk's freed graph."""

import torch
import torch.nn.functional as F
from torch import nn


class StatefulLM(nn.Module):
    def __init__(self, vocab=12, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)
        self.state = None

    def reset_state(self):
        self.state = None

    def forward(self, tokens):
        h, self.state = self.rnn(self.emb(tokens), self.state)
        return self.out(h)


torch.manual_seed(0)
lm = StatefulLM()
opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
chunks_per_seq, chunk = 3, 8
data = torch.randint(0, 12, (4, 1 + 6 * chunks_per_seq * chunk))
for i in range(6 * chunks_per_seq):
    s = (i % (6 * chunks_per_seq)) * chunk
    x, y = data[:, s : s + chunk], data[:, s + 1 : s + chunk + 1]
    loss = F.cross_entropy(lm(x).reshape(-1, 12), y.reshape(-1)) / chunks_per_seq
    loss.backward()
    if (i + 1) % chunks_per_seq == 0:
        opt.step()
        opt.zero_grad()
        lm.reset_state()
print(f"{lm.out.weight.sum().item():.6f}")
