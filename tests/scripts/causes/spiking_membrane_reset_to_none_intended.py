"""A spiking classifier over time steps: a leaky integrate-and-fire layer keeps its membrane potential on the
module, starts it lazily from None, and is called once per time step by the network's forward."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
T_STEPS, IN, HIDDEN, OUT = 6, 10, 16, 3


class LIF(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.decay_logit = nn.Parameter(torch.zeros(width))
        self.potential = None

    def forward(self, current):
        if self.potential is None:
            self.potential = torch.zeros_like(current)
        self.potential = torch.sigmoid(self.decay_logit) * self.potential + current
        return torch.sigmoid(4.0 * (self.potential - 1.0))  # a smooth stand-in for the spike


class SpikingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(IN, HIDDEN)
        self.lif = LIF(HIDDEN)
        self.fc_out = nn.Linear(HIDDEN, OUT)

    def forward(self, frames):
        counts = 0
        for t in range(frames.shape[0]):
            counts = counts + self.lif(self.fc_in(frames[t]))
        return self.fc_out(counts / frames.shape[0])


def run(net, epochs=3):
    opt = torch.optim.Adam(net.parameters(), lr=5e-3)
    for epoch in range(epochs):
        frames = torch.rand(T_STEPS, 4, IN)
        labels = torch.randint(0, OUT, (4,))
        loss = F.cross_entropy(net(frames), labels)
        opt.zero_grad()
        loss.backward()
        net.lif.potential = None
        opt.step()


run(SpikingNet())
