"""A word-level LSTM language model over one long token stream, read in consecutive chunks (truncated
backpropagation through time): the model keeps the LSTM's (h, c) on itself between chunks."""

import torch
import torch.nn as nn

torch.manual_seed(5)
VOCAB, CHUNK, STREAMS = 20, 6, 3


class StreamLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 10)
        self.lstm = nn.LSTM(10, 16, batch_first=True)
        self.proj = nn.Linear(16, VOCAB)
        self.memory = (torch.zeros(1, STREAMS, 16), torch.zeros(1, STREAMS, 16))

    def forward(self, tokens):
        states, self.memory = self.lstm(self.emb(tokens), self.memory)
        return self.proj(states)


corpus = torch.randint(0, VOCAB, (STREAMS, 4 * CHUNK + 1))
lm = StreamLM()
adam = torch.optim.Adam(lm.parameters(), lr=1e-2)
for start in range(0, 4 * CHUNK, CHUNK):
    x, y = corpus[:, start : start + CHUNK], corpus[:, start + 1 : start + CHUNK + 1]
    lm_loss = nn.functional.cross_entropy(lm(x).reshape(-1, VOCAB), y.reshape(-1))
    adam.zero_grad()
    lm_loss.backward()
    adam.step()
    print(f"{lm_loss.item():.4f}")
