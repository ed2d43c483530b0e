"""Dataset distillation by unrolled inner training (Wang et al. 2018): learn a few synthetic
images per class and a learning rate so that a freshly initialised network trained on them for
a few differentiable SGD steps classifies real data well.

Report: https://github.com/BierOne/bottom-up-attention-vqa/issues/6 ("one of the variables
needed for gradient computation has been modified by an inplace operation: ... output 0 of
ReluBackward0, is at version 1"): the classifier head is Linear, ReLU, ``nn.Dropout(p,
inplace=True)``, Linear; the dropout overwrites the ReLU's output, which ReLU keeps for its
backward. The answer: make the dropout not in place. The training setting is the writer's.

What the author was doing: a small conv net whose head copies that classifier layout; every
outer iteration samples new initial weights, runs the inner SGD steps on the synthetic images
with ``torch.func.functional_call`` and ``create_graph=True``, evaluates the unrolled weights on
a real batch, and steps the synthetic images and the log learning rate with Adam.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)

N_CLASSES, IPC, INNER_STEPS, OUTER_STEPS = 4, 2, 3, 6


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, N_CLASSES),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def real_batch(n=64):
    """Synthetic 'real' data: class-dependent blobs in 16x16 images."""
    y = torch.randint(0, N_CLASSES, (n,))
    grid = torch.linspace(-1, 1, 16)
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    cx = torch.tensor([-0.5, 0.5, -0.5, 0.5])[y].view(-1, 1, 1)
    cy = torch.tensor([-0.5, -0.5, 0.5, 0.5])[y].view(-1, 1, 1)
    img = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 0.1) + 0.3 * torch.randn(n, 16, 16)
    return img.unsqueeze(1), y


def unrolled_weights(net, syn_x, syn_y, lr):
    params = {k: v.detach().requires_grad_() for k, v in net.named_parameters()}
    for _ in range(INNER_STEPS):
        inner_loss = F.cross_entropy(functional_call(net, params, (syn_x,)), syn_y)
        grads = torch.autograd.grad(inner_loss, list(params.values()), create_graph=True)
        params = {k: v - lr * g for (k, v), g in zip(params.items(), grads)}
    return params


syn_images = torch.randn(N_CLASSES * IPC, 1, 16, 16, requires_grad=True)
syn_labels = torch.arange(N_CLASSES).repeat_interleave(IPC)
log_lr = torch.tensor(-2.0, requires_grad=True)
opt_syn = torch.optim.Adam([syn_images, log_lr], lr=0.05)

for it in range(OUTER_STEPS):
    net = ConvNet()  # fresh initial weights every outer iteration
    net.train()
    params = unrolled_weights(net, syn_images, syn_labels, log_lr.exp())
    x_real, y_real = real_batch()
    outer_loss = F.cross_entropy(functional_call(net, params, (x_real,)), y_real)
    opt_syn.zero_grad()
    outer_loss.backward()
    opt_syn.step()
    print(f"outer {it}: real-data loss {outer_loss.item():.3f} lr {log_lr.exp().item():.3f}")
