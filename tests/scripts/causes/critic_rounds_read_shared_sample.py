"""Conditional sequence GAN with several critic rounds per generator step: the trainer samples once per batch and
both the critic rounds and the generator's loss read that sample."""

import torch
import torch.nn as nn

torch.manual_seed(9)


class Sampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, cond):
        return torch.tanh(self.net(cond))


class Pair:
    def __init__(self) -> None:
        self.sampler = Sampler()
        self.judge = nn.Sequential(nn.Linear(16, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.opt_s = torch.optim.Adam(self.sampler.parameters(), lr=1e-3)
        self.opt_j = torch.optim.Adam(self.judge.parameters(), lr=1e-3)

    def judge_round(self, cond, real):
        real_score = self.judge(torch.cat([cond, real], 1)).mean()
        fake_score = self.judge(torch.cat([cond, self.sample], 1)).mean()
        self.w_loss = fake_score - real_score
        self.w_loss.backward()

    def step(self, cond, real):
        self.sample = self.sampler(cond)
        for _ in range(2):
            self.opt_j.zero_grad()
            self.judge_round(cond, real)
            self.opt_j.step()
        self.opt_s.zero_grad()
        self.s_loss = -self.judge(torch.cat([cond, self.sample], 1)).mean()
        self.s_loss.backward()
        self.opt_s.step()


pair = Pair()
for _ in range(3):
    c, x = torch.randn(12, 8), torch.randn(12, 8)
    pair.step(c, x)
    print(f"{pair.w_loss.item():.4f} {pair.s_loss.item():.4f}")
