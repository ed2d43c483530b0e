"""Linear regression fitted with torch.optim.LBFGS and a closure.

Source: https://github.com/pytorch/pytorch/issues/111369 "torch.optim.LBFGS error".
The author tried LBFGS on a simple linear regression in Colab and could not get a single
optimizer step to run. The report's code, with its step put in a function called once per epoch.
Corrected: the prediction is computed inside the closure, which LBFGS calls several times per step.
"""

import torch
from torch import nn, optim

torch.manual_seed(0)

x = torch.rand(size=(100, 10))
y = torch.rand(size=(100, 1))


class LinearRegression(nn.Module):
    def __init__(self, p):
        super().__init__()

        self.p = p
        self.lin = nn.Linear(p, 1)

    def forward(self, x):
        output = self.lin(x)
        return output


model = LinearRegression(x.size(1))
optimizer = optim.LBFGS(model.parameters())
criterion = nn.MSELoss()


def train_step():
    def closure():
        optimizer.zero_grad()
        pred = model(x)
        loss = criterion(pred, y.view(pred.shape))
        loss.backward()
        return loss

    return optimizer.step(closure)


for epoch in range(5):
    loss = train_step()
    print(epoch, loss.item())
