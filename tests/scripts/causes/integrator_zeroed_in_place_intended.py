"""Gesture classification from IMU sequences with a recurrent integrator layer that keeps its trace between calls;
the loop clears the traces before each batch with the network's clear(), which zeroes them in place."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(6)


class Trace(nn.Module):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.inp = nn.Linear(n_in, n_out)
        self.trace = torch.zeros(4, n_out)

    def forward(self, x):
        self.trace = 0.9 * self.trace + torch.tanh(self.inp(x))
        return self.trace


class GestureNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = Trace(6, 12)
        self.out = nn.Linear(12, 5)

    def clear(self) -> None:
        self.cell.trace = self.cell.trace.detach().zero_()

    def forward(self, seq):
        for t in range(seq.shape[1]):
            h = self.cell(seq[:, t])
        return self.out(h)


gesture_net = GestureNet()
adam = torch.optim.Adam(gesture_net.parameters(), lr=1e-2)
for _ in range(3):
    imu, gesture = torch.randn(4, 10, 6), torch.randint(0, 5, (4,))
    gesture_net.clear()
    ce = F.cross_entropy(gesture_net(imu), gesture)
    adam.zero_grad()
    ce.backward()
    adam.step()
    print(f"{ce.item():.4f}")
