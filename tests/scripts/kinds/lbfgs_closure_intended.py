import torch
from torch import nn

torch.manual_seed(37)
curve = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
lbfgs = torch.optim.LBFGS(curve.parameters(), lr=0.5, max_iter=4)
t = torch.linspace(-1, 1, 30).unsqueeze(1)
target = torch.sin(3 * t)
for it in range(3):
    fitted = curve(t)

    def closure():
        lbfgs.zero_grad()
        fitted = curve(t)
        err = ((fitted - target) ** 2).mean()
        err.backward()
        return err

    lbfgs.step(closure)
