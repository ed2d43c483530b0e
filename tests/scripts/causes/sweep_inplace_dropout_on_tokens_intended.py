"""A token tagger whose builder turns its activations and dropouts in place after making them (to save memory):
in the feed-forward the in-place dropout overwrites the ReLU output that ReLU's backward reads. The
Linear's output over (batch, tokens, width) is a view, so ReLU's record sits inside a CopySlices node."""

import torch
from torch import nn

torch.manual_seed(0)


class FeedForward(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.2)
        self.down = nn.Linear(hidden, width)

    def forward(self, tokens):
        return tokens + self.down(self.drop(self.act(self.up(tokens))))


def build_tagger(width=12, tags=5):
    tagger = nn.Sequential(FeedForward(width, 24), FeedForward(width, 24), nn.Linear(width, tags))
    for module in tagger.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = True
    return tagger


tagger = build_tagger()
opt = torch.optim.Adam(tagger.parameters(), lr=1e-2)
for batch in range(3):
    tokens = torch.randn(4, 7, 12)
    gold = torch.randint(0, 5, (4, 7))
    scores = tagger(tokens)
    loss = nn.functional.cross_entropy(scores.reshape(-1, 5), gold.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
