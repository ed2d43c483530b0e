"""Single-image dehazing with the atmospheric scattering model, trained on synthetic haze.

Source: https://github.com/yunik1004/SAiD/issues/8 -- training stopped in backward with
"one of the variables needed for gradient computation has been modified by an inplace
operation: [...], which is output 0 of TanhBackward0"; the reporter's fix was to replace the
``+=`` and ``*=`` in the training code by ordinary out-of-place arithmetic. The report is a
speech-to-blendshape model; the training setting is the writer's.

What the author was doing: a small AOD-style network predicts a transmission map t(x) and a
global airlight A from a hazy image I, and a refinement head returns the clean image J in
[-1, 1] through a tanh. The training step maps J to [0, 1] with ``J += 1; J *= 0.5`` before
the losses: an L1 loss to the clean image, a re-hazing loss (J t + A (1 - t) against I) and a
dark-channel prior loss on J. Tanh saved its output for the backward, so the in-place
rescaling of that very tensor breaks the backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

H = W = 24
BATCH = 4
STEPS = 6


def synth_batch(n):
    clean = torch.rand(n, 3, H, W) * 0.8 + 0.1
    depth = torch.rand(n, 1, 1, 1) * 1.5 + torch.linspace(0, 1, W).view(1, 1, 1, W)
    beta = torch.rand(n, 1, 1, 1) * 0.8 + 0.4
    t = torch.exp(-beta * depth)
    airlight = torch.rand(n, 3, 1, 1) * 0.2 + 0.75
    hazy = clean * t + airlight * (1 - t)
    return hazy, clean


def dark_channel(img, patch=5):
    # min over colour channels, then a min filter (as a max-pool of the negative)
    m = img.min(dim=1, keepdim=True).values
    return -F.max_pool2d(-m, patch, stride=1, padding=patch // 2)


class DehazeNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
        )
        self.trans_head = nn.Conv2d(ch, 1, 3, padding=1)
        self.air_head = nn.Linear(ch, 3)
        self.refine = nn.Sequential(nn.Conv2d(3 + ch, ch, 3, padding=1), nn.ReLU(),
                                    nn.Conv2d(ch, 3, 3, padding=1))

    def forward(self, hazy):
        f = self.features(hazy)
        t = torch.sigmoid(self.trans_head(f)).clamp(min=0.05)
        airlight = torch.sigmoid(self.air_head(f.mean(dim=(2, 3)))).view(-1, 3, 1, 1)
        j0 = (hazy - airlight * (1 - t)) / t
        j = torch.tanh(self.refine(torch.cat([j0, f], dim=1)))
        return j, t, airlight


net = DehazeNet()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)

for step in range(STEPS):
    hazy, clean = synth_batch(BATCH)
    J, t, airlight = net(hazy)
    # map the tanh output from [-1, 1] to [0, 1]
    J += 1.0
    J *= 0.5

    loss_l1 = F.l1_loss(J, clean)
    rehazed = J * t + airlight * (1 - t)
    loss_rehaze = F.mse_loss(rehazed, hazy)
    loss_dcp = dark_channel(J).mean()
    loss = loss_l1 + 0.5 * loss_rehaze + 0.05 * loss_dcp

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: l1 {loss_l1.item():.4f} rehaze {loss_rehaze.item():.4f} dcp {loss_dcp.item():.4f}")
