"""MAML on sine regression: fast weights adapted in the inner loop, the meta-update on the query sets."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def functional_forward(x, weights):
    h = F.relu(F.linear(x, weights[0], weights[1]))
    h = F.relu(F.linear(h, weights[2], weights[3]))
    return F.linear(h, weights[4], weights[5])


def sample_task():
    amp = torch.rand(1) * 4.9 + 0.1
    phase = torch.rand(1) * 3.14

    def draw(n):
        x = torch.rand(n, 1) * 10 - 5
        return x, amp * torch.sin(x + phase)

    return draw


class MAML:
    def __init__(self, model, inner_lr=0.01, inner_steps=2):
        self.model = model
        self.inner_lr = inner_lr
        self.inner_steps = inner_steps

    def adapt(self, x_support, y_support):
        fast_weights = [p.clone() for p in self.model.parameters()]
        for _ in range(self.inner_steps):
            inner_loss = F.mse_loss(functional_forward(x_support, fast_weights), y_support)
            grads = torch.autograd.grad(inner_loss, fast_weights, create_graph=True)
            for w, g in zip(fast_weights, grads):
                w.sub_(self.inner_lr * g)
        return fast_weights


def main():
    torch.manual_seed(10)
    model = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1))
    maml = MAML(model)
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for meta_iter in range(4):
        meta_loss = 0.0
        for _task in range(3):
            draw = sample_task()
            x_s, y_s = draw(10)
            x_q, y_q = draw(10)
            fast = maml.adapt(x_s, y_s)
            meta_loss = meta_loss + F.mse_loss(functional_forward(x_q, fast), y_q)
        meta_loss = meta_loss / 3
        meta_opt.zero_grad()
        meta_loss.backward()
        meta_opt.step()
        print(meta_iter, meta_loss.item())


if __name__ == "__main__":
    main()
