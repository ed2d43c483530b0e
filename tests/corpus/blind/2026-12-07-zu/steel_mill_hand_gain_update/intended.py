"""Hot strip mill: exit thickness and flatness from the readings of the finishing stands.

Source: https://github.com/heykeetae/Self-Attention-GAN/issues/62 . In the SAGAN attention
block, `out = self.gamma * out + x`, the backward failed with "one of the variables needed
for gradient computation has been modified by an inplace operation: [torch.FloatTensor [1]]
is at version 1; expected version 0": the scalar gain gamma, saved by the multiplication, was
changed in place between the forward and the backward that needed it.

Reduction: the writer's setting is process control in a hot strip mill. Each coil gives one
reading vector per finishing stand (roll force, gap, speed, temperature, ...); an attention
block mixes the stands with a learnable residual gain gamma, as in SAGAN, and two heads
predict exit thickness and flatness. The process engineer trains gamma by hand with its own
small step (a slow "gain schedule"), the rest with Adam; the hand update is written right
after the thickness loss's backward, and the flatness loss's backward comes after it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

STANDS = 6
READINGS = 8
HIDDEN = 24
COILS = 160
BATCH = 32
EPOCHS = 2
LR = 2e-3
GAIN_LR = 0.05


class StandAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.query = nn.Linear(dim, dim // 4)
        self.key = nn.Linear(dim, dim // 4)
        self.value = nn.Linear(dim, dim)
        self.gamma = nn.Parameter(torch.full((1,), 0.1))

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        attn = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)
        out = attn @ v
        return self.gamma * out + x


class MillModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(READINGS, HIDDEN)
        self.mixer = StandAttention(HIDDEN)
        self.thickness_head = nn.Linear(HIDDEN * STANDS, 1)
        self.flatness_head = nn.Linear(HIDDEN * STANDS, 1)

    def forward(self, readings):
        h = F.silu(self.embed(readings))
        h = self.mixer(h).flatten(1)
        return self.thickness_head(h).squeeze(-1), self.flatness_head(h).squeeze(-1)


def simulate_coils(n):
    readings = torch.randn(n, STANDS, READINGS)
    reduction = torch.sigmoid(readings[:, :, 0] - 0.5 * readings[:, :, 1])
    thickness = 2.0 - 0.2 * reduction.sum(1) + 0.05 * torch.randn(n)
    flatness = (readings[:, -1, 2] - readings[:, -2, 2]).abs() + 0.05 * torch.randn(n)
    return readings, thickness, flatness


def batches(n, size):
    order = torch.randperm(n)
    for start in range(0, n, size):
        yield order[start:start + size]


def main():
    readings, thickness, flatness = simulate_coils(COILS)
    model = MillModel()
    gain = model.mixer.gamma
    others = [p for name, p in model.named_parameters() if name != "mixer.gamma"]
    optimizer = torch.optim.Adam(others, lr=LR)

    for epoch in range(EPOCHS):
        for idx in batches(COILS, BATCH):
            pred_thk, pred_flat = model(readings[idx])
            thickness_loss = F.mse_loss(pred_thk, thickness[idx])
            flatness_loss = F.l1_loss(pred_flat, flatness[idx])

            optimizer.zero_grad()
            gain.grad = None
            thickness_loss.backward(retain_graph=True)
            flatness_loss.backward()
            with torch.no_grad():
                gain -= GAIN_LR * gain.grad
                gain.clamp_(0.0, 1.0)
            optimizer.step()
        print(f"epoch {epoch}: thickness {thickness_loss.item():.4f}  "
              f"flatness {flatness_loss.item():.4f}  gamma {gain.item():.3f}")


if __name__ == "__main__":
    main()
