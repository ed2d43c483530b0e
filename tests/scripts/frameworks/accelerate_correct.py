"""Accelerate done right: gradient accumulation, and an encoder and a head each stepped on its own loss."""

import torch
from accelerate import Accelerator
from torch import nn

torch.manual_seed(0)
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
encoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
head = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_encoder = torch.optim.SGD(encoder.parameters(), lr=0.05, momentum=0.9)
opt_head = torch.optim.AdamW(head.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 4), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
encoder, head, opt_encoder, opt_head, loader = accelerator.prepare(encoder, head, opt_encoder, opt_head, loader)

for x, code, y in loader:
    with accelerator.accumulate(encoder, head):
        z = encoder(x)
        code_loss = nn.functional.mse_loss(z, code)
        head_loss = nn.functional.mse_loss(head(z.detach()), y)
        accelerator.backward(code_loss)
        accelerator.backward(head_loss)
        opt_encoder.step()
        opt_head.step()
        opt_encoder.zero_grad()
        opt_head.zero_grad()
print("encoder:", [round(p.detach().sum().item(), 5) for p in encoder.parameters()])
print("head:", [round(p.detach().sum().item(), 5) for p in head.parameters()])
