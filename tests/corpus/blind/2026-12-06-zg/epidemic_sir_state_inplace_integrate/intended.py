"""Regional SIR forecaster: learned transmission rates inside a differentiable Euler simulation.

Report: https://github.com/SJTU-ViSYS-team/VisFly/pull/35
("Fix BPTT autograd inplace errors in Dynamics.reset and Integrator.integrate"). VisFly's
simulator keeps its state in one tensor and its integrator advances it with ``pos += d_pos * dt``;
the reward code of a BPTT rollout had already read that state through views
(``self.position = self._position.T``), so ``actor_loss.backward()`` failed with "one of the
variables needed for gradient computation has been modified by an inplace operation". The fix
builds the next state out of place. Here the training setting is the writer's: a compartmental
SIR simulator object for several regions keeps S, I, R in one state tensor, a rate network maps
daily mobility covariates to a transmission rate per region and day, the recovery rate and the initial infections are
learned, and a Poisson likelihood of reported cases is backpropagated through the whole rollout.
The simulator's ``integrate`` advances its state in place, as VisFly's did.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

REGIONS, DAYS, COVS = 6, 40, 4
POP = torch.tensor([8e5, 1.2e6, 5e5, 2e6, 9e5, 7e5])


def synthetic_outbreak():
    mobility = torch.rand(DAYS, REGIONS, COVS)
    w_true = torch.tensor([0.9, -0.6, 0.4, 0.2])
    beta = 0.18 + 0.25 * torch.sigmoid(mobility @ w_true - 0.3)
    s, i = POP - 50.0, torch.full((REGIONS,), 50.0)
    cases = []
    for d in range(DAYS):
        inc = beta[d] * s * i / POP
        s, i = s - inc, i + inc - 0.1 * i
        cases.append(torch.poisson(inc * 0.6))
    return mobility, torch.stack(cases)


class RateNet(nn.Module):
    """Transmission rate per region and day from mobility covariates and a region embedding."""

    def __init__(self, hidden=32):
        super().__init__()
        self.region = nn.Embedding(REGIONS, 8)
        self.mlp = nn.Sequential(nn.Linear(COVS + 8, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.log_gamma = nn.Parameter(torch.tensor(-2.0))
        self.logit_report = nn.Parameter(torch.tensor(0.0))
        self.log_seed = nn.Parameter(torch.full((REGIONS,), 3.0))  # initially infected, learned

    def forward(self, cov):  # cov: (REGIONS, COVS)
        emb = self.region(torch.arange(REGIONS))
        return 0.6 * torch.sigmoid(self.mlp(torch.cat([cov, emb], dim=-1)).squeeze(-1))


class SIRSimulator:
    def __init__(self, population):
        self.population = population
        self.reset(torch.full_like(population, 50.0))

    def reset(self, i0):
        self._state = torch.stack([self.population - i0, i0, torch.zeros_like(i0)])

    @property
    def susceptible(self):
        return self._state[0]

    @property
    def infected(self):
        return self._state[1]

    def integrate(self, beta, gamma, dt=1.0):
        s, i, r = self._state[0], self._state[1], self._state[2]
        new_inf = beta * s * i / self.population
        new_rec = gamma * i
        # build the next state out of place: earlier steps saved views of this one
        self._state = torch.stack([
            s - new_inf * dt,
            i + (new_inf - new_rec) * dt,
            r + new_rec * dt,
        ])
        return new_inf


def rollout(net, sim, mobility):
    sim.reset(torch.exp(net.log_seed))
    gamma = torch.exp(net.log_gamma)
    report = torch.sigmoid(net.logit_report)
    incidence = []
    for d in range(mobility.shape[0]):
        beta = net(mobility[d])
        incidence.append(report * sim.integrate(beta, gamma))
    return torch.stack(incidence)


mobility, cases = synthetic_outbreak()
rate_net = RateNet()
sim = SIRSimulator(POP)
optimizer = torch.optim.Adam(rate_net.parameters(), lr=1e-2)

for epoch in range(30):
    pred = rollout(rate_net, sim, mobility)
    nll = F.poisson_nll_loss(pred + 1e-3, cases, log_input=False)
    peak_penalty = (sim.infected / POP).clamp(min=0.2).sub(0.2).sum()
    loss = nll + 0.1 * peak_penalty
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if epoch % 10 == 0:
        print(f"epoch {epoch:3d} nll {nll.item():.3f} gamma {torch.exp(rate_net.log_gamma).item():.3f}")
