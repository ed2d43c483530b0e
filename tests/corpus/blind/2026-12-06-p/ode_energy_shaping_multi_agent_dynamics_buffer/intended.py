"""Optimal energy shaping for several agents with a neural ODE (torchdyn-style learner).

Reduced from https://github.com/DiffEqML/torchdyn/issues/141 ("RuntimeError: Trying to
backward through the graph a second time"): the author extends torchdyn's energy-shaping
tutorial (Massaroli et al., "Optimal Energy Shaping via Neural Approximators") to several
agents. Each agent is a port-Hamiltonian point mass; the control of agent i is an
energy-shaping term -dV/dq from a potential network V plus damping injection from a network
K, and the closed-loop vector field is assembled agent by agent into a result tensor. The
state is augmented with the integral control effort, integrated with RK4 over a time span
(sensitivity "autograd": backpropagation through the solver), and the terminal state is
scored by a weighted log-likelihood under a target distribution. Lightning's training_step /
configure_optimizers are kept as methods; a plain loop drives them. Adam.
"""

import torch
import torch.nn as nn
from torch.autograd import grad
from torch.distributions import Normal, Uniform

torch.manual_seed(0)

N_AGENTS = 2
batch_size = 32
M, KSPRING = 1.0, 0.5


class MultiAgentSystem(nn.Module):
    def __init__(self, V, K, n_agents):
        super().__init__()
        self.V, self.K = V, K
        self.n_agents = n_agents
        eye = torch.eye(2)
        self.JR = torch.cat([torch.cat([torch.zeros(2, 2), eye], 1), torch.cat([-eye, -0.1 * eye], 1)], 0)
        self.g = torch.cat([torch.zeros(2, 2), eye], 0)
        self.result = torch.zeros(batch_size, 4 * n_agents)

    def forward(self, t, x):
        with torch.set_grad_enabled(True):
            q = torch.stack((x[:, 0::4], x[:, 1::4]), dim=2).view(x.shape[0], self.n_agents * 2)
            q.requires_grad_(True)
            u = (self._energy_shaping(q) + self._damping_injection(x)).view(x.shape[0], self.n_agents, 2)
            result = torch.zeros(x.shape[0], 4 * self.n_agents)
            for i in range(self.n_agents):
                xi = x[:, 4 * i : 4 * i + 4]
                r1 = torch.cat([KSPRING * xi[:, :2], xi[:, 2:] / M], dim=1)
                par1 = torch.matmul(r1, self.JR.t())
                par2 = torch.matmul(u[:, i, :], self.g.t())
                result[:, 4 * i : 4 * i + 4] = torch.add(par1, par2)
        return result

    def _energy_shaping(self, q):
        dVdx = grad(self.V(q).sum(), q, create_graph=True, retain_graph=True)[0]
        return -1 * dVdx

    def _damping_injection(self, x):
        p = torch.stack((x[:, 2::4], x[:, 3::4]), dim=2).view(x.shape[0], self.n_agents * 2)
        return -self.K(x) * p / M


class ControlEffort(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, t, x):
        with torch.set_grad_enabled(True):
            q = torch.stack((x[:, 0::4], x[:, 1::4]), dim=2).view(x.shape[0], self.f.n_agents * 2)
            q.requires_grad_(True)
            u = self.f._energy_shaping(q) + self.f._damping_injection(x)
        return torch.sum(torch.abs(u), 1, keepdim=True)


class AugmentedSystem(nn.Module):
    def __init__(self, f, integral_loss):
        super().__init__()
        self.f = f
        self.integral_loss = integral_loss
        self.nfe = 0

    def forward(self, t, x):
        self.nfe += 1
        x = x[:, : 4 * self.f.n_agents]
        dxdt = self.f(t, x)
        dLdt = self.integral_loss(t, x)
        return torch.cat([dxdt, dLdt], 1)


class ODEProblem(nn.Module):
    """RK4 with backpropagation through the solver steps."""

    def __init__(self, vector_field):
        super().__init__()
        self.vf = vector_field

    def odeint(self, x, t_span):
        xs = [x]
        for k in range(len(t_span) - 1):
            t, h = t_span[k], t_span[k + 1] - t_span[k]
            k1 = self.vf(t, x)
            k2 = self.vf(t + h / 2, x + h / 2 * k1)
            k3 = self.vf(t + h / 2, x + h / 2 * k2)
            k4 = self.vf(t + h, x + h * k3)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            xs.append(x)
        return t_span, torch.stack(xs)


def weighted_log_likelihood_loss(x, target, weight):
    log_prob = target.log_prob(x)
    return -torch.mean((weight * log_prob).sum(1))


class EnergyShapingLearner(nn.Module):
    def __init__(self, model, prior_dist, target_dist, t_span, n_agents=1, lr=5e-3):
        super().__init__()
        self.model = model
        self.prior, self.target = prior_dist, target_dist
        self.t_span = t_span
        self.batch_size = batch_size
        self.lr = lr
        self.n_agents = n_agents
        self.weight = torch.ones(n_agents * 4).reshape(1, n_agents * 4)

    def forward(self, x):
        return self.model.odeint(x, self.t_span)

    def training_step(self, batch_idx):
        x0 = self.prior.sample((self.batch_size,))
        x0 = torch.cat([x0, torch.zeros(self.batch_size, 1)], -1)
        _, xTl = self(x0)
        xT, L = xTl[-1, :, : 4 * self.n_agents], xTl[-1, :, -1:]
        terminal_loss = weighted_log_likelihood_loss(xT, self.target, self.weight)
        integral_loss = torch.mean(L)
        loss = terminal_loss + 0.0001 * integral_loss
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.lr)


V = nn.Sequential(nn.Linear(2 * N_AGENTS, 32), nn.Softplus(), nn.Linear(32, 1))
K = nn.Sequential(nn.Linear(4 * N_AGENTS, 32), nn.Softplus(), nn.Linear(32, 2 * N_AGENTS), nn.Softplus())
for p in V[-1].parameters():
    torch.nn.init.zeros_(p)

f = MultiAgentSystem(V, K, N_AGENTS)
aug_f = AugmentedSystem(f, ControlEffort(f))
prior = Uniform(-torch.ones(4 * N_AGENTS), torch.ones(4 * N_AGENTS))
target = Normal(torch.zeros(1, 4 * N_AGENTS), torch.full((1, 4 * N_AGENTS), 0.1).sqrt())
t_span = torch.linspace(0, 1, 6)

learn = EnergyShapingLearner(ODEProblem(aug_f), prior, target, t_span, n_agents=N_AGENTS)
optimizer = learn.configure_optimizers()
for epoch in range(4):
    optimizer.zero_grad()
    loss = learn.training_step(epoch)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
