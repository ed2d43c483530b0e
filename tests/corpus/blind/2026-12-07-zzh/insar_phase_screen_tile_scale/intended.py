"""Sinkhole / ground-subsidence mapping from InSAR with a learned atmospheric phase screen.

Source: https://github.com/pytorch/pytorch/issues/39150 ("Modifying inplace views of leaf gives
unclear error message"). The author was slicing images into pieces to pass them to a network
separately; the image tensor required grad, and a piece taken with basic slicing
(``bar = foo[10:, 10:]``) was scaled in place (``bar *= 10``). On the PyTorch of the report the
error only surfaced at ``backward()`` as "leaf variable has been moved into the graph interior";
current PyTorch refuses the in-place op on the view of the leaf when it runs.

The script puts that slice-and-scale into an InSAR subsidence fit. A small CNN predicts the
line-of-sight (LOS) deformation of a ground patch from its interferogram stack, and a learned
atmospheric phase screen ``aps`` (a raw leaf tensor in radians, optimised by its own optimizer)
is added to the prediction tile by tile. The tiling helper takes each tile of the screen with a
slice and converts it from radians to millimetres of LOS displacement in place, as one would do
on a NumPy array. Losses: the LOS misfit (trains the CNN and the screen) and a smoothness
penalty on the screen.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = dict(
    seed=5,
    grid=16,
    tile=8,
    n_dates=6,
    n_patches=20,
    batch=5,
    epochs=3,
    wavelength_mm=55.5,  # C-band
    lr_net=2e-3,
    lr_screen=5e-2,
)


def synth_interferograms(s):
    """Stacks of wrapped-phase-like interferograms over patches, with a sinkhole bowl in some."""
    g = s["grid"]
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, g), torch.linspace(-1, 1, g), indexing="ij")
    centres = torch.rand(s["n_patches"], 2) * 1.2 - 0.6
    depth = torch.rand(s["n_patches"]) * 8.0
    r2 = (xx.unsqueeze(0) - centres[:, 0, None, None]) ** 2 + (yy.unsqueeze(0) - centres[:, 1, None, None]) ** 2
    los_mm = -depth[:, None, None] * torch.exp(-r2 / 0.08)
    times = torch.linspace(0.2, 1.0, s["n_dates"])
    stack = torch.sin(los_mm.unsqueeze(1) * times[None, :, None, None] * 0.4)
    stack = stack + 0.05 * torch.randn_like(stack)
    return stack, los_mm


class SubsidenceNet(nn.Module):
    def __init__(self, n_dates):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(n_dates, 16, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(16, 1, 1),
        )

    def forward(self, stack):
        return self.body(stack).squeeze(1)


def screen_in_mm(aps, tile, wavelength_mm):
    """Assemble the atmospheric screen in LOS millimetres, one tile at a time."""
    rad_to_mm = wavelength_mm / (4 * math.pi)
    rows = []
    for r0 in range(0, aps.size(0), tile):
        cols = []
        for c0 in range(0, aps.size(1), tile):
            piece = aps[r0 : r0 + tile, c0 : c0 + tile] * rad_to_mm
            cols.append(piece)
        rows.append(torch.cat(cols, dim=1))
    return torch.cat(rows, dim=0)


def smoothness(aps):
    dx = aps[:, 1:] - aps[:, :-1]
    dy = aps[1:, :] - aps[:-1, :]
    return dx.pow(2).mean() + dy.pow(2).mean()


def main(s):
    torch.manual_seed(s["seed"])
    stack, los_mm = synth_interferograms(s)
    subsidence_net = SubsidenceNet(s["n_dates"])
    aps = torch.zeros(s["grid"], s["grid"], requires_grad=True)
    net_opt = torch.optim.Adam(subsidence_net.parameters(), lr=s["lr_net"])
    screen_opt = torch.optim.SGD([aps], lr=s["lr_screen"])

    for epoch in range(s["epochs"]):
        perm = torch.randperm(s["n_patches"])
        running = 0.0
        for start in range(0, s["n_patches"], s["batch"]):
            idx = perm[start : start + s["batch"]]
            pred = subsidence_net(stack[idx]) + screen_in_mm(aps, s["tile"], s["wavelength_mm"])
            fit_loss = F.smooth_l1_loss(pred, los_mm[idx])
            smooth_loss = smoothness(aps)
            net_opt.zero_grad()
            screen_opt.zero_grad()
            (fit_loss + 0.1 * smooth_loss).backward()
            net_opt.step()
            screen_opt.step()
            running += fit_loss.item()
        print(f"epoch {epoch}: LOS misfit {running:.4f}")


if __name__ == "__main__":
    main(SETTINGS)
