"""Tensor hooks (register_hook, retain_grad) and module hooks (forward pre/post, full backward)."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
seen = []
model[0].register_forward_pre_hook(lambda m, args: seen.append("pre"))
model[0].register_forward_hook(lambda m, args, out: seen.append("post"))
model[2].register_full_backward_hook(lambda m, gin, gout: seen.append(("backward", tuple(gout[0].shape))))
x = torch.randn(2, 3, requires_grad=True)
h = model[0](x)
h.retain_grad()
h.register_hook(lambda g: g * 2)  # doubles the gradient that flows on
x.register_hook(lambda g: seen.append(("x", round(g.sum().item(), 4))))
model[2](model[1](h)).sum().backward()
model.zero_grad()
out = model(x).sum()
out.backward()
print(seen)
print(round(h.grad.sum().item(), 4), round(model[0].weight.grad.sum().item(), 4))
