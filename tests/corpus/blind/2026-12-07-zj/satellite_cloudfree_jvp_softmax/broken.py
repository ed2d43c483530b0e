"""Multi-temporal cloud removal with a forward-mode Jacobian penalty.

Source: https://github.com/pytorch/pytorch/issues/162350 (fixed by
https://github.com/pytorch/pytorch/pull/188270): combining forward-mode AD
(dual tensors) with backward AD through ``torch.softmax`` fails with "one of the
variables needed for gradient computation has been modified by an inplace
operation ... output 0 of Exp"; the softmax JVP multiplies the ``exp()`` result
in place, which the backward of that ``exp`` still needs. The author there was
training a model whose loss used both the primal and the tangent of a softmax
computed on dual inputs. The training setting is the writer's: a per-pixel
temporal-attention fusion of four cloudy Sentinel-2-like acquisitions into one
cloud-free image, with a Jacobian-vector-product penalty that keeps the fused
image insensitive to small radiometric perturbations of the inputs.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.autograd.forward_ad as fwAD

torch.manual_seed(0)

T, C, H, W = 4, 4, 16, 16  # acquisitions, bands, height, width
BATCH = 6


def make_batch(n):
    clear = torch.rand(n, C, H, W)
    cloud = (torch.rand(n, T, 1, H, W) > 0.6).float()
    haze = 0.8 + 0.2 * torch.rand(n, T, 1, H, W)
    stack = clear.unsqueeze(1) * (1 - cloud) + haze * cloud
    stack = stack + 0.02 * torch.randn(n, T, C, H, W)
    return stack, clear


class AcquisitionEncoder(nn.Module):
    def __init__(self, bands, width):
        super().__init__()
        self.conv1 = nn.Conv2d(bands, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)

    def forward(self, x):
        return F.gelu(self.conv2(F.gelu(self.conv1(x))))


class TemporalFusion(nn.Module):
    """Scores each acquisition per pixel and fuses them with softmax weights over time."""

    def __init__(self, bands=C, width=16):
        super().__init__()
        self.encoder = AcquisitionEncoder(bands, width)
        self.score = nn.Conv2d(width, 1, 1)
        self.refine = nn.Conv2d(width + bands, bands, 3, padding=1)

    def forward(self, stack):
        n, t = stack.shape[:2]
        feats = self.encoder(stack.flatten(0, 1))  # (n*t, width, H, W)
        scores = self.score(feats).view(n, t, 1, H, W)
        weights = torch.softmax(scores, dim=1)
        fused_feat = (weights * feats.view(n, t, -1, H, W)).sum(1)
        fused_img = (weights * stack).sum(1)
        return fused_img + self.refine(torch.cat([fused_feat, fused_img], 1))


def jvp_forward(model, stack, direction):
    """The fused image and its directional derivative along ``direction`` (forward-mode AD)."""
    with fwAD.dual_level():
        dual = fwAD.make_dual(stack, direction)
        out = model(dual)
        primal, tangent = fwAD.unpack_dual(out)
    return primal, tangent


model = TemporalFusion()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
lam = 0.1

for step in range(3):
    stack, clear = make_batch(BATCH)
    direction = 0.05 * torch.randn_like(stack)
    fused, tangent = jvp_forward(model, stack, direction)
    rec_loss = F.l1_loss(fused, clear)
    jac_loss = tangent.pow(2).mean()
    loss = rec_loss + lam * jac_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: rec {rec_loss.item():.4f} jac {jac_loss.item():.5f}")
