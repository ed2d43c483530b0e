"""Linear regression written by hand: the prediction is computed once, before the loop."""

import torch

torch.manual_seed(16)
X = torch.randn(50, 3)
true_w = torch.tensor([[2.0], [-1.0], [0.5]])
Y = X @ true_w + 0.3

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = torch.nn.MSELoss()

y_pred = model(X)
for epoch in range(20):
    loss = criterion(y_pred, Y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if epoch % 5 == 0:
        print(epoch, loss.item())
