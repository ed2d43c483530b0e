"""Meta-learning: MAML on sine-wave regression; the inner loop adapts functional weights with torch.autograd.grad."""

import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def sample_task():
    amplitude = 0.5 + 4.5 * torch.rand(1)
    phase = math.pi * torch.rand(1)

    def draw(n):
        x = 10 * torch.rand(n, 1) - 5
        return x, amplitude * torch.sin(x + phase)

    return draw


def init_params(hidden=32):
    params = [
        torch.randn(1, hidden) * 0.5,
        torch.zeros(hidden),
        torch.randn(hidden, hidden) / math.sqrt(hidden),
        torch.zeros(hidden),
        torch.randn(hidden, 1) / math.sqrt(hidden),
        torch.zeros(1),
    ]
    return [p.requires_grad_() for p in params]


def forward(params, x):
    w1, b1, w2, b2, w3, b3 = params
    h = torch.relu(x @ w1 + b1)
    h = torch.relu(h @ w2 + b2)
    return h @ w3 + b3


def adapt(params, x, y, inner_lr=0.01, steps=1):
    fast = params
    for _ in range(steps):
        loss = F.mse_loss(forward(fast, x), y)
        grads = torch.autograd.grad(loss, fast, create_graph=True)
        fast = [w - inner_lr * g for w, g in zip(fast, grads)]
    return fast


def main():
    params = init_params()
    meta_opt = torch.optim.Adam(params, lr=1e-3)
    for it in range(6):
        meta_loss = 0.0
        for _ in range(4):
            draw = sample_task()
            x_support, y_support = draw(10)
            x_query, y_query = draw(10)
            fast = adapt(params, x_support, y_support)
            meta_loss = meta_loss + F.mse_loss(forward(fast, x_query), y_query)
        meta_loss = meta_loss / 4
        meta_opt.zero_grad()
        meta_loss.backward()
        meta_opt.step()
        if it % 3 == 2:
            print(f"iteration {it}: meta loss {meta_loss.item():.3f}")


if __name__ == "__main__":
    main()
