"""A hand-written graph-attention softmax whose in-place division breaks backward: torch names Div."""

import torch

torch.manual_seed(0)
N, E = 5, 12
src, dst = torch.randint(0, N, (E,)), torch.randint(0, N, (E,))
h = torch.randn(N, 4, requires_grad=True)
a = torch.randn(8, requires_grad=True)


def attention(h):
    e = torch.nn.functional.leaky_relu((torch.cat([h[src], h[dst]], dim=1) * a).sum(1), 0.2)
    alpha = torch.exp(e)
    denom = torch.zeros(N).index_add(0, dst, alpha)  # index_add saves alpha
    alpha /= denom[dst] + 1e-16
    return torch.zeros(N, 4).index_add(0, dst, alpha.unsqueeze(1) * h[src])


attention(h).sum().backward()
