import torch

torch.manual_seed(17)
features = torch.randn(40, 3)
labels = (features[:, :1] > 0).float()
weight = torch.zeros(3, 1, requires_grad=True)
bias = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([weight, bias], lr=0.0)  # only to count the steps: the update is by hand
for it in range(4):
    opt.zero_grad()
    prob = torch.sigmoid(features @ weight + bias)
    nll = torch.nn.functional.binary_cross_entropy(prob, labels)
    nll.backward()
    with torch.no_grad():
        weight -= 0.5 * weight.grad
        bias -= 0.5 * bias.grad
    opt.step()
