"""A siamese matcher for bird-song snippets: a shared whitening layer refreshes its running centre and scale in
place at every call, reads them through local names, and runs on both snippets before the loss's backward."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Whiten(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("centre", torch.zeros(dim))
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.centre.copy_(0.9 * self.centre + 0.1 * x.mean(0))
                self.scale.copy_(0.9 * self.scale + 0.1 * x.std(0))
        c, s = self.centre.clone(), self.scale.clone()
        return (x - c) / s


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 6)
        self.white = Whiten(6)

    def forward(self, a, b):
        return F.cosine_similarity(self.white(self.embed(a)), self.white(self.embed(b)))


model = Matcher()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for it in range(3):
    a, b, same = torch.randn(8, 6), torch.randn(8, 6), torch.randint(0, 2, (8,)).float()
    loss = F.mse_loss(model(a, b), 2 * same - 1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
