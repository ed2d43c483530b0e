import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)

for it in range(2):
    real, z = torch.randn(16, 2), torch.randn(16, 4)
    fake = G(z)
    d_loss = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(D(fake), ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
