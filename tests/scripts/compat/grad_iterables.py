"""autograd.grad and backward(inputs=...) given generators, lists and tuples (a gradient penalty, as people write it)."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
x = torch.randn(8, 3)
loss = model(x).pow(2).mean()

grads = torch.autograd.grad(loss, model.parameters(), create_graph=True)  # a generator
penalty = sum(g.pow(2).sum() for g in grads)
as_list = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
as_tuple = torch.autograd.grad(loss, tuple(model.parameters()), retain_graph=True)
print(len(grads), all(torch.equal(a, b) for a, b in zip(as_list, as_tuple)))

(loss + penalty).backward(inputs=(p for p in model.parameters()))  # a generator again
print([round(p.grad.norm().item(), 4) for p in model.parameters()])
model.zero_grad()
loss = model(x).pow(2).mean()
loss.backward(inputs=[model[0].weight, model[0].bias])
print(model[2].weight.grad is None, round(model[0].weight.grad.sum().item(), 4))
torch.autograd.backward([model(x).sum()], inputs=iter(model[2].parameters()))
print(round(model[2].bias.grad.item(), 4))
