"""A character LSTM read chunk by chunk from one long text: a reader object serves the chunks and keeps the LSTM's
(h, c) between them, set back by an assignment in the training loop."""

import torch
import torch.nn as nn

torch.manual_seed(3)
VOCAB, CHUNK, ROWS = 12, 5, 2


class ChunkReader:
    def __init__(self, text: torch.Tensor) -> None:
        self.text = text
        self.hidden = None

    def chunks(self):
        for start in range(0, self.text.shape[1] - CHUNK, CHUNK):
            yield self.text[:, start : start + CHUNK], self.text[:, start + 1 : start + CHUNK + 1]


class CharLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.head = nn.Linear(12, VOCAB)

    def forward(self, chars, hidden):
        out, hidden = self.lstm(self.emb(chars), hidden)
        return self.head(out), hidden


reader = ChunkReader(torch.randint(0, VOCAB, (ROWS, 4 * CHUNK + 1)))
net = CharLSTM()
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
for chars, targets in reader.chunks():
    logits, hc = net(chars, reader.hidden)
    reader.hidden = tuple(s.detach() for s in hc)
    nll = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    sgd.zero_grad()
    nll.backward()
    sgd.step()
print(round(nll.item(), 4))
