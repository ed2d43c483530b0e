"""SIREN fitted to an image and to its spatial gradients, with the coordinate gradient taken by a helper.

Report: https://github.com/QianyiWu/objectsdf_plus/issues/10
The reporter computed the SDF's gradient with respect to the raw 3-D points with
a helper copied from ObjectSDF++::

    def sdf_gradient(self, sdf, x):
        x.requires_grad_(True)
        d_output = torch.ones_like(sdf, requires_grad=False)
        gradients = torch.autograd.grad(outputs=sdf, inputs=x, grad_outputs=d_output,
                                        create_graph=True, retain_graph=True, only_inputs=True)[0]

It worked for the encoded points but, for the raw points ``p``, raised "One of
the differentiated Tensors appears to not have been used in the graph". ``p``
did not require grad when the network ran, so the forward recorded nothing for
it; switching ``requires_grad`` on inside the helper, after the forward, does not
put ``p`` into the graph. The reporter fixed it by calling
``p.requires_grad_(True)`` before the points went through the network.

The training setting is the writer's: a SIREN (sine activations, the omega_0 = 30
initialisation of Sitzmann et al.) fitted to a synthetic grey-level image on
random batches of pixel coordinates, supervised on the pixel values and on the
image's spatial gradient, the gradient of the network with respect to its input
coordinates being taken by the same kind of helper.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

RES, HIDDEN, LAYERS, BATCH, STEPS, GRAD_WEIGHT = 32, 32, 2, 256, 40, 0.05


def get_mgrid(side):
    axis = torch.linspace(-1, 1, side)
    gy, gx = torch.meshgrid(axis, axis, indexing="ij")
    return torch.stack([gx, gy], -1).reshape(-1, 2)


def image_and_gradient(coords):
    """A smooth synthetic image and its exact spatial gradient."""
    x, y = coords[:, 0], coords[:, 1]
    bump = torch.exp(-((x - 0.3) ** 2 + (y + 0.2) ** 2) / 0.1)
    value = torch.sin(3 * x) * torch.cos(2 * y) + bump
    dx = 3 * torch.cos(3 * x) * torch.cos(2 * y) - bump * 2 * (x - 0.3) / 0.1
    dy = -2 * torch.sin(3 * x) * torch.sin(2 * y) - bump * 2 * (y + 0.2) / 0.1
    return value[:, None], torch.stack([dx, dy], 1)


class SineLayer(nn.Module):
    def __init__(self, fan_in, fan_out, is_first=False, omega_0=30.0):
        super().__init__()
        self.omega_0 = omega_0
        self.linear = nn.Linear(fan_in, fan_out)
        bound = 1 / fan_in if is_first else math.sqrt(6 / fan_in) / omega_0
        with torch.no_grad():
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, x):
        return torch.sin(self.omega_0 * self.linear(x))


class Siren(nn.Module):
    def __init__(self, in_features=2, hidden=HIDDEN, layers=LAYERS, out_features=1):
        super().__init__()
        net = [SineLayer(in_features, hidden, is_first=True)]
        net += [SineLayer(hidden, hidden) for _ in range(layers)]
        self.net = nn.Sequential(*net)
        self.last = nn.Linear(hidden, out_features)
        bound = math.sqrt(6 / hidden) / 30.0
        with torch.no_grad():
            self.last.weight.uniform_(-bound, bound)

    def forward(self, coords):
        return self.last(self.net(coords))


def gradient(y, x):
    """d y / d x, kept in the graph so that a loss on it trains the network."""
    x.requires_grad_(True)
    d_output = torch.ones_like(y, requires_grad=False)
    return torch.autograd.grad(outputs=y, inputs=x, grad_outputs=d_output, create_graph=True, retain_graph=True)[0]


coords = get_mgrid(RES)
pixels, pixel_grads = image_and_gradient(coords)

model = Siren()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(STEPS):
    idx = torch.randperm(coords.shape[0])[:BATCH]
    x = coords[idx]
    pred = model(x)
    pred_grad = gradient(pred, x)
    value_loss = F.mse_loss(pred, pixels[idx])
    grad_loss = F.mse_loss(pred_grad, pixel_grads[idx])
    loss = value_loss + GRAD_WEIGHT * grad_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 19:
        psnr = -10 * torch.log10(value_loss.detach())
        print(f"step {step + 1}: value {value_loss.item():.4f} ({psnr.item():.1f} dB)  gradient {grad_loss.item():.4f}")
