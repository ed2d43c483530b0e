"""A Wasserstein critic for synthetic sea-surface temperature fields: the critic's score of the generated field is
computed once, the critic steps and its weights are clipped, and the generator's loss then reads the same score."""

import torch
import torch.nn as nn

torch.manual_seed(0)

gen = nn.Sequential(nn.Linear(4, 12), nn.Tanh(), nn.Linear(12, 6))
critic = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
opt_g = torch.optim.RMSprop(gen.parameters(), lr=5e-3)
opt_c = torch.optim.RMSprop(critic.parameters(), lr=5e-3)


def clip(model, bound):
    with torch.no_grad():
        for p in model.parameters():
            p.clamp_(-bound, bound)


for it in range(3):
    real = torch.randn(16, 6)
    fake = gen(torch.randn(16, 4))
    opt_c.zero_grad()
    fake_score = critic(fake)
    c_loss = fake_score.mean() - critic(real).mean()
    c_loss.backward()
    opt_c.step()
    clip(critic, 0.05)
    opt_g.zero_grad()
    g_loss = -fake_score.mean()
    g_loss.backward()
    opt_g.step()
    print(it, round(c_loss.item(), 4), round(g_loss.item(), 4))
