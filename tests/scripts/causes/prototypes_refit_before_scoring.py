"""Few-shot classification with a prototype bank refit online: a helper first fits the prototypes to each
episode's support set with the bank's own optimizer, then scores the episode's queries against them."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
N_WAY, SHOT, QUERIES, FEATURES = 4, 3, 6, 12


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x):
        return F.normalize(self.body(x), dim=-1)


class PrototypeBank(nn.Module):
    def __init__(self, n_way: int, dim: int) -> None:
        super().__init__()
        self.raw = nn.Parameter(0.1 * torch.randn(n_way, dim))
        self.log_temp = nn.Parameter(torch.zeros(()))


def episode():
    centres = torch.randn(N_WAY, FEATURES)
    support_y = torch.arange(N_WAY).repeat_interleave(SHOT)
    query_y = torch.arange(N_WAY).repeat_interleave(QUERIES)
    support = centres[support_y] + 0.3 * torch.randn(len(support_y), FEATURES)
    query = centres[query_y] + 0.3 * torch.randn(len(query_y), FEATURES)
    return support, support_y, query, query_y


def score_queries(bank, bank_opt, support, support_y, query):
    protos = F.normalize(bank.raw, dim=1)
    bank_opt.zero_grad()
    fit = F.cross_entropy(10.0 * support.detach() @ protos.t(), support_y)
    fit.backward()
    bank_opt.step()
    scale = bank.log_temp.exp() * 10.0
    return scale * (query @ protos.t())


encoder = Encoder()
bank = PrototypeBank(N_WAY, 16)
bank_opt = torch.optim.SGD([bank.raw], lr=0.5)
opt = torch.optim.Adam([*encoder.parameters(), bank.log_temp], lr=1e-3)

for step in range(3):
    support, support_y, query, query_y = episode()
    logits = score_queries(bank, bank_opt, encoder(support), support_y, encoder(query))
    loss = F.cross_entropy(logits, query_y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"episode {step}: loss {loss.item():.4f}")
