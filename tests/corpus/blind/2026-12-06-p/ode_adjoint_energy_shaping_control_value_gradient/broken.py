"""Learning a stabilising controller through a neural ODE solved with the adjoint method.

Reduced from https://github.com/rtqichen/torchdiffeq/issues/209 ("No grad_fun error for
Adjoint method!"): the author learns an energy-shaping controller for a mechanical system. A
value network V(q) defines the control u = -dV/dq (computed with torch.autograd.grad inside
the control function), the closed-loop dynamics are integrated from a batch of random initial
conditions, and the terminal state is pushed to the origin. With ``odeint`` it trains; with
``odeint_adjoint`` (for memory) it fails. torchdiffeq is not a dependency here: its
``odeint_adjoint`` is stood in for by a small autograd.Function with the same contract (the
forward solve builds no graph; the backward re-integrates with gradients enabled). RK4, Adam.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)

BATCH, STEPS, T_END = 64, 20, 2.0


def rk4_solve(func, y0, t):
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        k1 = func(t[i], y)
        k2 = func(t[i] + h / 2, y + h / 2 * k1)
        k3 = func(t[i] + h / 2, y + h / 2 * k2)
        k4 = func(t[i] + h, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


class _OdeintAdjointMethod(torch.autograd.Function):
    @staticmethod
    def forward(ctx, func, y0, t, *params):
        ctx.func = func
        ctx.save_for_backward(y0, t, *params)
        return rk4_solve(func, y0, t)

    @staticmethod
    def backward(ctx, grad_ys):
        y0, t, *params = ctx.saved_tensors
        with torch.enable_grad():
            y0 = y0.detach().requires_grad_(True)
            ys = rk4_solve(ctx.func, y0, t)
            grads = torch.autograd.grad(ys, (y0, *params), grad_ys, allow_unused=True)
        return (None, grads[0], None, *grads[1:])


def odeint_adjoint(func, y0, t):
    return _OdeintAdjointMethod.apply(func, y0, t, *func.parameters())


class Vnn(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size[0], bias=False)
        self.softplus = nn.Softplus()
        self.fc2 = nn.Linear(hidden_size[0], hidden_size[1], bias=False)
        self.tanh = nn.Tanh()
        self.fc3 = nn.Linear(hidden_size[1], output_size, bias=False)

    def forward(self, x):
        return self.fc3(self.tanh(self.fc2(self.softplus(self.fc1(x)))))


class ControlFun(nn.Module):
    def __init__(self, v_nn):
        super().__init__()
        self.v_nn = v_nn

    def forward(self, q):
        V = self.v_nn(q)
        v_q = torch.autograd.grad(V.sum(), q, create_graph=True)[0]
        return -v_q


class ClosedLoopSystem(nn.Module):
    """Mass-spring with damping: y = (q, p); the controller shapes the potential energy."""

    def __init__(self, control, k=1.0, damping=0.2):
        super().__init__()
        self.control = control
        self.k, self.damping = k, damping

    def forward(self, t, y):
        q, p = y[:, :1], y[:, 1:]
        u = self.control(q)
        return torch.cat([p, -self.k * q - self.damping * p + u], dim=1)


v_nn = Vnn(1, [32, 32], 1)
system = ClosedLoopSystem(ControlFun(v_nn))
optimizer = torch.optim.Adam(system.parameters(), lr=1e-2)
t = torch.linspace(0.0, T_END, STEPS)

for itr in range(5):
    optimizer.zero_grad()
    y0 = torch.rand(BATCH, 2) * 2 - 1
    ys = odeint_adjoint(system, y0, t)
    terminal_loss = (ys[-1] ** 2).sum(dim=1).mean()
    terminal_loss.backward()
    optimizer.step()
    print(f"iter {itr}: terminal loss {terminal_loss.item():.4f}")
