import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.log_scale = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return self.lin(x) / self.log_scale.exp()


torch.manual_seed(61)
model = Scaled()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(8, 3), torch.randn(8, 3)
for _ in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
