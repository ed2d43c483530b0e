"""Progressive recurrent deraining network (PReNet-style) with each stage's loss backpropagated as it is computed.

Source: https://github.com/Paper99/SRFBN_CVPR19/issues/4 -- SRFBN, a recurrent feedback restoration
network, supervises the output of every iteration. The reporter noticed the paper sums the per-iteration
losses and backpropagates once, while the code backpropagates per iteration; the author answered that the
two are equivalent and pointed to the forum thread on ``retain_variables``
(https://discuss.pytorch.org/t/what-exactly-does-retain-variables-true-in-loss-backward-do/3508): the
per-iteration form only works if every backward but the last keeps the graph, because iteration t's
output is computed from iteration t-1's output and recurrent state. The training setting is the
writer's: a PReNet-like deraining network (stage input = rainy image concatenated with the previous
estimate, a convolutional LSTM carried across stages, residual blocks) is trained with a loss at every
stage, and the writer calls ``backward()`` on each stage's loss inside the stage loop without retaining
the graph, so the second stage's backward runs into the first stage's freed graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_IMG, H, W, STAGES = 16, 24, 24, 4


def make_rainy_pairs():
    """Smooth synthetic backgrounds plus oriented streak layers."""
    yy, xx = torch.meshgrid(torch.linspace(0, 1, H), torch.linspace(0, 1, W), indexing="ij")
    clean = []
    for _ in range(N_IMG):
        f = torch.rand(3, 1, 1) * 6
        ph = torch.rand(3, 1, 1) * 6
        clean.append(0.5 + 0.4 * torch.sin(f * xx + ph) * torch.cos(f * yy))
    clean = torch.stack(clean).clamp(0, 1)
    noise = (torch.rand(N_IMG, 1, H, W) > 0.93).float()
    kernel = torch.zeros(1, 1, 7, 7)
    for i in range(7):
        kernel[0, 0, i, min(6, i // 2 + 2)] = 1.0 / 7
    streaks = F.conv2d(noise, kernel, padding=3).clamp(0, 1)
    rainy = (clean + 0.8 * streaks).clamp(0, 1)
    return rainy, clean


class ConvLSTMCell(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.gates = nn.Conv2d(2 * ch, 4 * ch, 3, padding=1)

    def forward(self, x, state):
        h, c = state
        i, f, g, o = self.gates(torch.cat([x, h], dim=1)).chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, ch, 3, padding=1))

    def forward(self, x):
        return F.relu(x + self.body(x))


class PReNet(nn.Module):
    def __init__(self, ch=16, n_res=3):
        super().__init__()
        self.ch = ch
        self.conv_in = nn.Sequential(nn.Conv2d(6, ch, 3, padding=1), nn.ReLU())
        self.lstm = ConvLSTMCell(ch)
        self.res = nn.Sequential(*[ResBlock(ch) for _ in range(n_res)])
        self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)

    def init_state(self, x):
        z = x.new_zeros(x.shape[0], self.ch, x.shape[2], x.shape[3])
        return z, z.clone()

    def stage(self, rainy, x_prev, state):
        feat = self.conv_in(torch.cat([rainy, x_prev], dim=1))
        h, c = self.lstm(feat, state)
        x = self.conv_out(self.res(h))
        return x, (h, c)


rainy, clean = make_rainy_pairs()
model = PReNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
stage_weights = [0.25, 0.25, 0.5, 1.0]

for epoch in range(3):
    perm = torch.randperm(N_IMG)
    for b in range(0, N_IMG, 4):
        idx = perm[b:b + 4]
        x_in, gt = rainy[idx], clean[idx]
        optimizer.zero_grad()
        x, state = x_in, model.init_state(x_in)
        for t in range(STAGES):
            x, state = model.stage(x_in, x, state)
            stage_loss = stage_weights[t] * F.l1_loss(x, gt)
            stage_loss.backward()
        optimizer.step()
    psnr = -10 * torch.log10(F.mse_loss(x.detach().clamp(0, 1), gt))
    print(f"epoch {epoch} last-stage L1 {stage_loss.item():.4f} PSNR {psnr.item():.2f} dB")
