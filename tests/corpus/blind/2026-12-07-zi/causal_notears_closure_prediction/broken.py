"""Continuous DAG learning (NOTEARS-MLP): one small MLP per variable, the weighted adjacency read
from the first-layer weights, the trace-exponential acyclicity constraint h(W), and an augmented
Lagrangian whose multiplier and penalty are updated between primal steps. The Lagrangian step is
a small closure-based helper in the manner of Cooper's ``ConstrainedOptimizer.step(closure, *args)``.

Report: https://github.com/cooper-org/cooper/issues/76 -- solving a constrained minimisation with
Cooper, the author calls ``coop.step(loss.closure, predictedField, positions)``: the network's
prediction is computed once, outside the closure, and handed to it as an argument, so the second
step's closure differentiates through the graph the first step's backward already freed
("Trying to backward through the graph a second time"). The prediction is meant to be recomputed
by the closure at every step. The training setting is the writer's.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

D, HIDDEN, N = 5, 8, 200


def simulate_dag():
    """Nonlinear SEM on the chain-plus-fork DAG 0->1->2, 0->3, 3->4."""
    z = torch.randn(N, D) * 0.3
    x = torch.zeros(N, D)
    x[:, 0] = z[:, 0]
    x[:, 1] = torch.tanh(2 * x[:, 0]) + z[:, 1]
    x[:, 2] = torch.sin(x[:, 1]) + z[:, 2]
    x[:, 3] = 0.8 * x[:, 0] ** 2 + z[:, 3]
    x[:, 4] = torch.tanh(x[:, 3]) + z[:, 4]
    return x - x.mean(0)


class NotearsMLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.d, self.hidden = d, hidden
        self.fc1 = nn.Linear(d, d * hidden)  # all parents -> hidden units of every child
        self.fc2_w = nn.Parameter(torch.randn(d, hidden) * 0.1)
        self.fc2_b = nn.Parameter(torch.zeros(d))
        with torch.no_grad():
            self.fc1.weight.mul_(0.3)

    def forward(self, x):
        h = torch.sigmoid(self.fc1(x)).view(-1, self.d, self.hidden)
        return (h * self.fc2_w).sum(-1) + self.fc2_b

    def adjacency(self):
        w = self.fc1.weight.view(self.d, self.hidden, self.d)  # [child, unit, parent]
        return (w ** 2).sum(1).t()  # W[parent, child]

    def acyclicity(self):
        W = self.adjacency()
        return torch.trace(torch.matrix_exp(W)) - self.d


class AugmentedLagrangian:
    """Primal step on L = f + alpha * h + rho / 2 * h^2 (+ l1), then a dual ascent step on alpha."""

    def __init__(self, primal_optimizer, rho=1.0, alpha=0.0, rho_max=1e4):
        self.primal = primal_optimizer
        self.rho, self.alpha, self.rho_max = rho, alpha, rho_max
        self.h_prev = float("inf")

    def step(self, closure, *args):
        objective, h = closure(*args)
        lagrangian = objective + self.alpha * h + 0.5 * self.rho * h * h
        self.primal.zero_grad()
        lagrangian.backward()
        self.primal.step()
        h_val = h.item()
        self.alpha += self.rho * h_val
        if h_val > 0.25 * self.h_prev and self.rho < self.rho_max:
            self.rho *= 2.0
        self.h_prev = h_val
        return lagrangian.item(), h_val


def main():
    X = simulate_dag()
    model = NotearsMLP(D, HIDDEN)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    al = AugmentedLagrangian(optimizer)
    lambda1 = 0.01

    def closure(x_hat, x):
        fit = 0.5 * ((x_hat - x) ** 2).sum() / x.shape[0]
        l1 = lambda1 * model.fc1.weight.abs().sum()
        return fit + l1, model.acyclicity()

    x_hat = model(X)
    for it in range(6):
        lag, h = al.step(closure, x_hat, X)
        print(f"iter {it} lagrangian {lag:.4f} h(W) {h:.5f} rho {al.rho:.1f} alpha {al.alpha:.4f}")
    W = model.adjacency().detach()
    print("estimated edges:", (W > 0.3).nonzero().tolist())


if __name__ == "__main__":
    main()
