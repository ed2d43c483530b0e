"""A tiny autoencoder whose training step logs the shapes the output node saved for backward.

The logging helper runs after the step's backward and reads the node's saved result, which that backward freed.
"""

import torch
from torch import nn

torch.manual_seed(4)


def saved_shapes(fn):
    """The shapes of the tensors a node of the graph saved (for a memory log)."""
    shapes = []
    for attr in ("_saved_result", "_saved_self", "_saved_other"):
        if hasattr(fn, attr):
            shapes.append(tuple(getattr(fn, attr).shape))
    return shapes


def train_step(model, batch, opt):
    recon = torch.sigmoid(model(batch))
    loss = ((recon - batch) ** 2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)  # the log below reads the saved tensors
    log = saved_shapes(recon.grad_fn) if loss.grad_fn is not None else []
    opt.step()
    return loss.item(), log


model = nn.Sequential(nn.Linear(8, 3), nn.Tanh(), nn.Linear(3, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    value, log = train_step(model, torch.rand(16, 8), opt)
    print(f"step {step}: {value:.4f} saved {log}")
