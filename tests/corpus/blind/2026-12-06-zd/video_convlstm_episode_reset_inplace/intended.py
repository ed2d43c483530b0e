"""Action-free video prediction with a stacked ConvLSTM (PredRNN-style layout: the top layer's
hidden state goes through a 1x1 ``conv_last`` to predict the next frame) trained with
scheduled sampling: past the context frames, each input is the ground-truth frame or the
model's own previous prediction, chosen per sample by a Bernoulli mask whose probability
decays over training. Training windows are cut from a stream of recorded episodes (a robot
pushing a blob around), so a window can cross an episode boundary; ``is_first`` marks the
frame where a new episode starts, and the recurrent state of those samples is reset there.

Report: https://github.com/pytorch/rl/issues/1742 -- training torchrl's Python-based GRU
raised "one of the variables needed for gradient computation has been modified by an inplace
operation": the module zeroed the recurrent state of the samples whose ``is_init`` flag was
set with a masked in-place write (``hidden[is_init] = 0``) on a tensor autograd had saved.
The fix (pytorch/rl#1732) replaced the in-place writes with ``torch.where``. The report is an
RL policy; the video-prediction setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

B, T, CONTEXT, H, W = 4, 8, 3, 12, 12


class ConvLSTMCell(nn.Module):
    def __init__(self, cin, hidden, k=3):
        super().__init__()
        self.conv_x = nn.Conv2d(cin, 4 * hidden, k, padding=k // 2)
        self.conv_h = nn.Conv2d(hidden, 4 * hidden, k, padding=k // 2, bias=False)

    def forward(self, x, h, c):
        i, f, g, o = torch.chunk(self.conv_x(x) + self.conv_h(h), 4, dim=1)
        c = torch.sigmoid(f + 1.0) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class VideoPredictor(nn.Module):
    def __init__(self, hidden=(16, 16)):
        super().__init__()
        chans = (1,) + hidden
        self.cells = nn.ModuleList(ConvLSTMCell(chans[i], chans[i + 1]) for i in range(len(hidden)))
        self.conv_last = nn.Conv2d(hidden[-1], 1, 1)
        self.hidden = hidden

    def forward(self, frames, is_first, mask_true):
        b = frames.shape[0]
        h = [frames.new_zeros(b, n, H, W) for n in self.hidden]
        c = [frames.new_zeros(b, n, H, W) for n in self.hidden]
        preds, x_gen = [], None
        for t in range(T - 1):
            if t < CONTEXT:
                net = frames[:, t]
            else:
                m = mask_true[:, t - CONTEXT].view(b, 1, 1, 1)
                net = m * frames[:, t] + (1 - m) * x_gen
            reset = is_first[:, t]
            if t > 0 and reset.any():
                keep = ~reset.view(b, 1, 1, 1)
                for layer in range(len(self.cells)):
                    h[layer] = torch.where(keep, h[layer], torch.zeros_like(h[layer]))
                    c[layer] = torch.where(keep, c[layer], torch.zeros_like(c[layer]))
            inp = net
            for layer, cell in enumerate(self.cells):
                h[layer], c[layer] = cell(inp, h[layer], c[layer])
                inp = h[layer]
            x_gen = torch.sigmoid(self.conv_last(h[-1]))
            preds.append(x_gen)
        return torch.stack(preds, dim=1)


def episode_stream(n_frames, episode_len=5):
    """A blob pushed at constant velocity; each episode starts at a new place and speed."""
    yy, xx = torch.meshgrid(torch.arange(H).float(), torch.arange(W).float(), indexing="ij")
    frames, firsts = [], []
    for e in range(0, n_frames, episode_len):
        pos, vel = torch.rand(2) * (H - 4) + 2, torch.randn(2)
        for s in range(episode_len):
            p = pos + s * vel
            frames.append(torch.exp(-((yy - p[0]) ** 2 + (xx - p[1]) ** 2) / 4.0))
            firsts.append(s == 0)
    return torch.stack(frames)[:n_frames, None], torch.tensor(firsts[:n_frames])


def sample_windows(stream, firsts):
    starts = torch.randint(0, stream.shape[0] - T, (B,))
    frames = torch.stack([stream[s:s + T] for s in starts])
    is_first = torch.stack([firsts[s:s + T] for s in starts])
    is_first[:, 0] = True
    return frames, is_first


stream, firsts = episode_stream(200)
model = VideoPredictor()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
sampling_eta, eta_decay = 1.0, 0.02

for itr in range(20):
    frames, is_first = sample_windows(stream, firsts)
    sampling_eta = max(0.0, sampling_eta - eta_decay)
    mask_true = (torch.rand(B, T - 1 - CONTEXT) < sampling_eta).float()
    preds = model(frames, is_first, mask_true)
    loss = F.mse_loss(preds, frames[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if itr % 5 == 0:
        print(f"itr {itr}: mse {loss.item():.4f} eta {sampling_eta:.2f}")
