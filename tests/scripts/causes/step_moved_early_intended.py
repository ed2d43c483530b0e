import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.1)
x = torch.randn(8, 3)


def main() -> None:
    for _ in range(3):
        opt.zero_grad(set_to_none=False)
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()


main()
