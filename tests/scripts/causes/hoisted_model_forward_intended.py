import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(5, 8)
        self.b = nn.Linear(8, 3)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


torch.manual_seed(73)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
features, labels = torch.randn(20, 5), torch.randint(0, 3, (20,))
for _ in range(3):
    model.train()
    out = model(features)
    loss = nn.functional.cross_entropy(out, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
