"""A character-level LM whose output layer is tied to an embedding with max_norm, the table bound to a local name
once per forward: each step's lookup renormalises rows in place that an earlier step's F.linear saved."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
VOCAB, WIDTH, STEPS = 24, 8, 5


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH, max_norm=1.0)
        self.cell = nn.GRUCell(WIDTH, WIDTH)
        self.out_bias = nn.Parameter(torch.zeros(VOCAB))

    def forward(self, chars):
        out_w = self.embed.weight
        h = torch.zeros(chars.shape[0], WIDTH)
        logits = []
        for t in range(STEPS):
            h = self.cell(self.embed(chars[:, t]), h)
            step_logits = F.linear(h, out_w.clone(), self.out_bias)
            logits.append(step_logits)
        return torch.stack(logits, dim=1)


def fit(lm, batches):
    opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
    for chars in batches:
        logits = lm(chars[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), chars[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()


fit(CharLM(), [torch.randint(0, VOCAB, (6, STEPS + 1)) for _ in range(3)])
