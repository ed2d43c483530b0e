import torch
from torch import nn


class Inverter(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(6, 4)
        self.mapping = nn.Sequential(nn.Linear(4, 4), nn.LeakyReLU(0.2), nn.Linear(4, 4))
        self.latent_avg = self.mapping(torch.randn(64, 4)).mean(0).detach()

    def forward(self, x):
        return self.encoder(x) + self.latent_avg


torch.manual_seed(67)
net = Inverter()
opt = torch.optim.Adam(net.encoder.parameters(), lr=1e-2)
x, target = torch.randn(8, 6), torch.randn(8, 4)
for _ in range(3):
    loss = nn.functional.mse_loss(net(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
