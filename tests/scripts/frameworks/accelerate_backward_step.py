"""Accelerate: an encoder's optimizer steps before accelerator.backward() of the head's loss, which reuses its output."""

import torch
from accelerate import Accelerator
from torch import nn

torch.manual_seed(0)
accelerator = Accelerator(cpu=True)
encoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
head = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_encoder = torch.optim.SGD(encoder.parameters(), lr=0.05)
opt_head = torch.optim.SGD(head.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 4), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
encoder, head, opt_encoder, opt_head, loader = accelerator.prepare(encoder, head, opt_encoder, opt_head, loader)

for x, code, y in loader:
    z = encoder(x)
    code_loss = nn.functional.mse_loss(z, code)
    opt_encoder.zero_grad()
    accelerator.backward(code_loss, retain_graph=True)
    opt_encoder.step()
    head_loss = nn.functional.mse_loss(head(z), y)
    opt_head.zero_grad()
    accelerator.backward(head_loss)
    opt_head.step()
print("trained")
