import torch

torch.manual_seed(0)
w1 = torch.randn(3, 4, requires_grad=True)
w2 = torch.randn(4, 1, requires_grad=True)
meta_opt = torch.optim.SGD([w1, w2], lr=0.1)
x_in, y_in, x_out, y_out = torch.randn(8, 3), torch.randn(8, 1), torch.randn(8, 3), torch.randn(8, 1)

fast = [w1.clone(), w2.clone()]
inner_loss = (torch.tanh(x_in @ fast[0]) @ fast[1] - y_in).pow(2).mean()
grads = torch.autograd.grad(inner_loss, fast, create_graph=True)
fast = [p - 0.1 * g for p, g in zip(fast, grads)]
outer_loss = (torch.tanh(x_out @ fast[0]) @ fast[1] - y_out).pow(2).mean()
meta_opt.zero_grad()
outer_loss.backward()
meta_opt.step()
