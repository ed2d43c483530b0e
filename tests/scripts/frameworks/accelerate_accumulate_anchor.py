"""Accelerate with gradient accumulation: an anchor embedding computed once, before the loop, in every step's loss."""

import torch
from accelerate import Accelerator
from torch import nn

torch.manual_seed(0)
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
embed = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 8))
optimizer = torch.optim.Adam(embed.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 8))
loader = torch.utils.data.DataLoader(data, batch_size=8)
embed, optimizer, loader = accelerator.prepare(embed, optimizer, loader)

anchor = embed(torch.ones(1, 8))
for x, positive in loader:
    with accelerator.accumulate(embed):
        loss = (embed(x) - embed(positive)).pow(2).mean() + 0.1 * (embed(x) - anchor).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
print("trained")
