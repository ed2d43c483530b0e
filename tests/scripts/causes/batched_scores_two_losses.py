"""A GAN whose discriminator scores the real and the generated batch in one forward; the generator's loss is
backwarded and stepped first, then the discriminator's loss on the same scores."""

import torch
from torch import nn

torch.manual_seed(3)


def build():
    maker = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 6))
    scorer = nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    return maker, scorer


maker, scorer = build()
opt_maker = torch.optim.Adam(maker.parameters(), lr=1e-3)
opt_scorer = torch.optim.Adam(scorer.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
data = torch.randn(64, 6) * 0.5 + 1.0

for it in range(3):
    real = data[torch.randint(0, 64, (16,))]
    fake = maker(torch.randn(16, 4))
    scores = scorer(torch.cat([real, fake]))
    gen_loss = bce(scores[16:], torch.ones(16, 1))
    opt_maker.zero_grad()
    gen_loss.backward()
    opt_maker.step()
    critic_loss = bce(scores[:16], torch.ones(16, 1)) + bce(scores[16:], torch.zeros(16, 1))
    opt_scorer.zero_grad()
    critic_loss.backward()
    opt_scorer.step()
