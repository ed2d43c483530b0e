"""torch.compile: a compiled encoder's optimizer steps before the head's backward reuses its output.

The backend is aot_eager unless given: `python compile_step.py inductor`.
"""

import sys

import torch
from torch import nn

torch.manual_seed(0)
backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
encoder = torch.compile(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)), backend=backend)
head = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_encoder = torch.optim.SGD(encoder.parameters(), lr=0.05)
opt_head = torch.optim.SGD(head.parameters(), lr=0.05)

for _ in range(3):
    x, code, y = torch.randn(8, 8), torch.randn(8, 4), torch.randn(8, 1)
    z = encoder(x)
    code_loss = nn.functional.mse_loss(z, code)
    opt_encoder.zero_grad()
    code_loss.backward(retain_graph=True)
    opt_encoder.step()
    head_loss = nn.functional.mse_loss(head(z), y)
    opt_head.zero_grad()
    head_loss.backward()
    opt_head.step()
print("trained")
