"""Logistic population growth with a learned rate: each rollout builds its history as a list of steps and stacks it."""

import torch
import torch.nn as nn

torch.manual_seed(4)
STEPS, COLONIES = 6, 5


class GrowthSim:
    def __init__(self, colonies: int) -> None:
        self.colonies = colonies

    def run(self, rate_net: nn.Module, start: torch.Tensor, climate: torch.Tensor) -> torch.Tensor:
        steps = [start]
        for k in range(STEPS):
            pop = steps[k]
            rate = rate_net(climate).squeeze(1)
            steps.append(pop + 0.3 * rate * pop * (1 - pop))
        return torch.stack(steps)


rate_net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(rate_net.parameters(), lr=0.05)
sim = GrowthSim(COLONIES)
climate, start = torch.randn(COLONIES, 2), torch.rand(COLONIES) * 0.2
observed = torch.rand(COLONIES) * 0.5 + 0.4
for epoch in range(3):
    history = sim.run(rate_net, start, climate)
    fit_loss = ((history[-1] - observed) ** 2).mean()
    opt.zero_grad()
    fit_loss.backward()
    opt.step()
print(round(fit_loss.item(), 5))
