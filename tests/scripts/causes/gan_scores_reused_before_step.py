import torch
from torch import nn

torch.manual_seed(4)
maker = nn.Sequential(nn.Linear(3, 10), nn.ELU(), nn.Linear(10, 6))
judge = nn.Sequential(nn.Linear(6, 10), nn.ELU(), nn.Linear(10, 1))
opt_judge = torch.optim.RMSprop(judge.parameters(), lr=1e-3)
opt_maker = torch.optim.RMSprop(maker.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(12, 1), torch.zeros(12, 1)
for step in range(3):
    real_batch = torch.randn(12, 6) + 2.0
    fake_batch = maker(torch.randn(12, 3))
    judge.zero_grad()
    score_fake = judge(fake_batch)
    judge_loss = bce(judge(real_batch), ones) + bce(score_fake, zeros)
    judge_loss.backward(retain_graph=True)
    opt_maker.zero_grad()
    maker_loss = bce(score_fake, ones)
    maker_loss.backward(inputs=list(maker.parameters()))
    opt_judge.step()
    opt_maker.step()
