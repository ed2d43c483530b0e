"""Warnings torch really raises from calls gradlab wraps: each must show this file's line, as without gradlab."""

import torch

x = torch.randn(3, requires_grad=True)
y = x * 2
a = torch.tensor(y)  # C++: "To copy construct from a tensor..." (torch.tensor is wrapped)
b = torch.tensor(y)  # the same warning from another line: shown again
for _ in range(3):
    c = torch.tensor(y)  # the same line thrice: shown once
z = torch.zeros(5)
z.scatter_(0, torch.tensor([0, 1]), torch.ones(2), reduce="add")  # C++, from an in-place method
loss = (x * x).sum()
torch.autograd.backward(loss, grad_variables=torch.tensor(1.0))  # torch's Python code, stacklevel=2
(g,) = torch.autograd.grad((x * x).sum(), x, only_inputs=False)  # the same, from autograd.grad
print(a.shape, z.tolist(), x.grad.shape, g.shape)
