"""A custom autograd.Function that modifies its input in place and says so (ctx.mark_dirty)."""

import torch


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        x.mul_(factor)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
a = w * 1  # saved by nothing: modifying it in place is allowed
b = ScaleInPlace.apply(a, 3.0)
(b * b).sum().backward()
print([round(g, 4) for g in w.grad.tolist()], b.grad_fn.name())
