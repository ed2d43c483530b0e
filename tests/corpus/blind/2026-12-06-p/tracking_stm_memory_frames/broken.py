"""Semi-supervised video object segmentation with a space-time memory network (STM).

Reduced from https://github.com/seoungwugoh/STM/issues/14: training on clips of 3 frames of
one object. Frame 0 and its ground-truth mask are written to memory; each later frame is
segmented by reading the memory, gets its own loss, and its predicted mask is memorized for
the next frame (the memory requires gradients, as the author says in the thread). The
reporter backwards each frame's loss as soon as it is computed.
Synthetic frames and masks, CPU, one Adam optimizer over the whole network.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

KEY_DIM, VAL_DIM = 8, 16


class EncoderM(nn.Module):
    """Memory encoder: frame + mask -> key, value."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(4, 16, 3, stride=2, padding=1), nn.ReLU())
        self.key = nn.Conv2d(16, KEY_DIM, 3, padding=1)
        self.value = nn.Conv2d(16, VAL_DIM, 3, padding=1)

    def forward(self, frame, mask):
        x = self.conv(torch.cat([frame, mask], dim=1))
        return self.key(x), self.value(x)


class EncoderQ(nn.Module):
    """Query encoder: frame -> key, value."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU())
        self.key = nn.Conv2d(16, KEY_DIM, 3, padding=1)
        self.value = nn.Conv2d(16, VAL_DIM, 3, padding=1)

    def forward(self, frame):
        x = self.conv(frame)
        return self.key(x), self.value(x)


class Memory(nn.Module):
    def forward(self, m_in, m_out, q_in, q_out):
        # m_in: B,K,T,H,W  m_out: B,V,T,H,W  q_in: B,K,H,W  q_out: B,V,H,W
        B, K, T, H, W = m_in.shape
        mi = m_in.reshape(B, K, T * H * W).transpose(1, 2)
        qi = q_in.reshape(B, K, H * W)
        p = F.softmax(torch.bmm(mi, qi) / K**0.5, dim=1)
        mo = m_out.reshape(B, m_out.shape[1], T * H * W)
        mem = torch.bmm(mo, p).reshape(B, -1, H, W)
        return torch.cat([mem, q_out], dim=1)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(2 * VAL_DIM, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 3, padding=1))

    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=2, mode="bilinear", align_corners=False)


class STM(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder_m = EncoderM()
        self.encoder_q = EncoderQ()
        self.memory = Memory()
        self.decoder = Decoder()

    def memorize(self, frame, mask):
        k, v = self.encoder_m(frame, mask)
        return k.unsqueeze(2), v.unsqueeze(2)

    def segment(self, frame, keys, values):
        qk, qv = self.encoder_q(frame)
        return self.decoder(self.memory(keys, values, qk, qv))


def sample_clip(n_frames=3, size=16):
    frames = torch.randn(n_frames, 1, 3, size, size)
    masks = (torch.rand(n_frames, 1, 1, size, size) > 0.6).float()
    return frames, masks


def train_clip(model, optimizer, frames, masks):
    optimizer.zero_grad()
    keys, values = model.memorize(frames[0], masks[0])
    total = 0.0
    for t in range(1, frames.shape[0]):
        logit = model.segment(frames[t], keys, values)
        loss = F.cross_entropy(logit, masks[t, :, 0].long())
        loss.backward()
        total += loss.item()
        prob = F.softmax(logit, dim=1)[:, 1:2]
        k, v = model.memorize(frames[t], prob)
        keys = torch.cat([keys, k], dim=2)
        values = torch.cat([values, v], dim=2)
    optimizer.step()
    return total


def main():
    model = STM()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    model.train()
    for it in range(4):
        frames, masks = sample_clip()
        print(it, train_clip(model, optimizer, frames, masks))


if __name__ == "__main__":
    main()
