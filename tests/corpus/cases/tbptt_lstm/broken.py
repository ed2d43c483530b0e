"""Truncated BPTT language-model style loop: an LSTM's (h, c) is carried from chunk to chunk."""

import torch
import torch.nn as nn

torch.manual_seed(4)
VOCAB, EMB, HID, BPTT = 20, 8, 16, 6

data = torch.randint(0, VOCAB, (4, 60))  # 4 streams of 60 tokens


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMB)
        self.lstm = nn.LSTM(EMB, HID, batch_first=True)
        self.decoder = nn.Linear(HID, VOCAB)

    def forward(self, tokens, hidden):
        out, hidden = self.lstm(self.embed(tokens), hidden)
        return self.decoder(out), hidden


lm = LM()
opt = torch.optim.SGD(lm.parameters(), lr=0.5)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    hidden = (torch.zeros(1, 4, HID), torch.zeros(1, 4, HID))
    for start in range(0, data.size(1) - 1 - BPTT, BPTT):
        inp = data[:, start : start + BPTT]
        target = data[:, start + 1 : start + 1 + BPTT]
        logits, hidden = lm(inp, hidden)
        loss = loss_fn(logits.reshape(-1, VOCAB), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), 0.25)
        opt.step()
    print(epoch, loss.item())
