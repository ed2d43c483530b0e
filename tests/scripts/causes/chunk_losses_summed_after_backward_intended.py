"""A summariser trained chunk by chunk: a helper backwards each chunk's loss (the last chunk's with an auxiliary
length term added to it) and returns the per-chunk terms; the step function adds them up for its log and
backwards that sum as well. Each chunk's graph was freed by its own backward."""

import torch
from torch import nn

torch.manual_seed(0)


class Summariser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(6, 16)
        self.score = nn.Linear(16, 1)
        self.length = nn.Linear(16, 1)

    def chunk_terms(self, chunks, targets, length_target):
        nll_terms, length_terms = [], []
        for i, (chunk, target) in enumerate(zip(chunks, targets)):
            h = torch.tanh(self.embed(chunk))
            nll = nn.functional.binary_cross_entropy_with_logits(self.score(h).squeeze(-1), target)
            nll_terms.append(nll)
            to_backward = nll
            if i == len(chunks) - 1:
                length_err = (self.length(h.mean(0)) - length_target).pow(2).mean()
                length_terms.append(length_err)
                to_backward = to_backward + length_err
            to_backward.backward()
        return nll_terms, length_terms


def train_step(model, opt, chunks, targets, length_target):
    opt.zero_grad()
    nll_terms, length_terms = model.chunk_terms(chunks, targets, length_target)
    logged = sum(nll_terms) + sum(length_terms)
    opt.step()
    return logged.item()


model = Summariser()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    chunks = [torch.randn(5, 6) for _ in range(3)]
    targets = [torch.rand(5).round() for _ in range(3)]
    train_step(model, opt, chunks, targets, torch.tensor([4.0]))
