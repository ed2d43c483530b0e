"""A learned per-pixel gain map for a multispectral camera: each band's slice of the map is scaled to that band's
exposure in place and collected; the calibrated image is fitted to a reference."""

import torch

torch.manual_seed(0)

gain = torch.ones(3, 4, 4, requires_grad=True)
opt = torch.optim.Adam([gain], lr=0.05)
exposure = [0.5, 1.0, 2.0]


def band_gains(gain):
    out = []
    for b in range(gain.size(0)):
        band = gain[b]
        band = band * exposure[b]
        out.append(band)
    return torch.stack(out)


for it in range(3):
    raw, ref = torch.rand(3, 4, 4), torch.rand(3, 4, 4)
    loss = ((band_gains(gain) * raw - ref) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
