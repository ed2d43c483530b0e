"""Precipitation downscaling with a conservation constraint and a dry-cell mask.

Source: https://github.com/huggingface/transformers/pull/41535 ("[Qwen3VL] fix:
hidden_states in place modification error"): ``hidden_states[visual_pos_masks, :]
= local_this`` wrote into a tensor that a custom autograd Function had returned,
and failed with "Output 0 of ... is a view and is being modified inplace. This
view was created inside a custom Function (or because an input was returned
as-is) ... You can fix this by cloning the output of the custom Function." The
author was injecting features into masked positions of a hidden-state tensor
during training. The training setting is the writer's: a CNN maps a 4x coarser
precipitation field (plus orography) to the fine grid; its output goes through a
custom Function that clips the per-sample gradient reaching the generator (an
identity in forward), then the cells whose coarse parent is dry are set to zero by
masked assignment; the loss is an L1 fit plus a mass-conservation term (the
4x4 block means of the fine field must equal the coarse field).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

FACTOR, COARSE = 4, 8
FINE = FACTOR * COARSE


class ClipGrad(torch.autograd.Function):
    """Identity in forward; clips each sample's gradient norm in backward."""

    @staticmethod
    def forward(ctx, x, max_norm):
        ctx.max_norm = max_norm
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        norm = grad.flatten(1).norm(dim=1).clamp(min=1e-12).view(-1, 1, 1, 1)
        return grad * (ctx.max_norm / norm).clamp(max=1.0), None


def make_fields(n):
    orog = F.avg_pool2d(torch.rand(n, 1, FINE, FINE), 5, stride=1, padding=2)
    wet = (F.interpolate(torch.rand(n, 1, COARSE, COARSE), scale_factor=FACTOR, mode="bilinear") > 0.45).float()
    fine = wet * torch.relu(2.0 * orog + 0.3 * torch.randn(n, 1, FINE, FINE) + 0.5)
    coarse = F.avg_pool2d(fine, FACTOR)
    return coarse, orog, fine


class Downscaler(nn.Module):
    def __init__(self, width=24):
        super().__init__()
        self.lift = nn.Conv2d(2, width, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(width, width, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(width, 1, 3, padding=1)

    def forward(self, coarse, orog):
        up = F.interpolate(coarse, scale_factor=FACTOR, mode="bicubic", align_corners=False)
        h = F.relu(self.lift(torch.cat([up, orog], 1)))
        return F.softplus(up + self.head(self.body(h)))


def conservation_loss(fine_pred, coarse):
    return F.mse_loss(F.avg_pool2d(fine_pred, FACTOR), coarse)


model = Downscaler()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(3):
    coarse, orog, fine = make_fields(8)
    pred = ClipGrad.apply(model(coarse, orog), 1.0).clone()  # own the output before writing into it
    dry = F.interpolate((coarse <= 1e-6).float(), scale_factor=FACTOR) > 0.5
    pred[dry] = 0.0  # no rain under a dry coarse cell
    fit_loss = F.l1_loss(pred, fine)
    mass_loss = conservation_loss(pred, coarse)
    loss = fit_loss + 0.5 * mass_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: fit {fit_loss.item():.4f} mass {mass_loss.item():.5f}")
