"""Guitar tablature transcription with a densely connected 1-D conv block over CQT frames.

Source: https://discuss.pytorch.org/t/inplace-cat-buffer/75832
The author trains a DenseNet-style stack whose forward concatenates every layer's output onto
its input with torch.cat, which blows up memory. The "obvious" optimisation they try is one
preallocated buffer filled in place during the forward pass; autograd refuses it, and the reply
explains why: each layer's input (a slice of the buffer) is saved for the backward pass, so
writing the next layer's output into the same storage overwrites what backward needs. The answer
is to keep the concatenation out of place.

Reduction: a dense block over constant-Q frames of guitar audio, preallocating a channel buffer
and writing each layer's growth channels into it; six string heads predict the fret class
(0 = open/muted ... 12) per frame.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_clips": 32,
    "n_bins": 24,
    "n_frames": 20,
    "n_strings": 6,
    "n_frets": 13,
    "growth": 8,
    "depth": 3,
    "batch_size": 8,
    "epochs": 2,
    "lr": 2e-3,
}


def synth_cqt_clips(cfg, gen):
    n, b, t = cfg["n_clips"], cfg["n_bins"], cfg["n_frames"]
    frets = torch.randint(0, cfg["n_frets"], (n, cfg["n_strings"], t), generator=gen)
    cqt = 0.3 * torch.rand(n, b, t, generator=gen)
    open_bins = torch.tensor([0, 3, 6, 9, 11, 14])
    for s in range(cfg["n_strings"]):
        pitch = (open_bins[s] + frets[:, s, :]).clamp(max=b - 1)
        cqt.scatter_add_(1, pitch.unsqueeze(1), torch.ones(n, 1, t))
    return cqt, frets


class DenseConvBlock(nn.Module):
    def __init__(self, in_ch, growth, depth):
        super().__init__()
        self.in_ch, self.growth = in_ch, growth
        self.layers = nn.ModuleList(
            nn.Conv1d(in_ch + i * growth, growth, kernel_size=3, padding=1) for i in range(depth)
        )
        self.out_ch = in_ch + depth * growth

    def forward(self, x):
        feats = x
        for layer in self.layers:
            new = F.relu(layer(feats))
            feats = torch.cat([feats, new], dim=1)
        return feats


class TabNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = DenseConvBlock(cfg["n_bins"], cfg["growth"], cfg["depth"])
        self.string_heads = nn.Conv1d(self.dense.out_ch, cfg["n_strings"] * cfg["n_frets"], 1)
        self.n_strings, self.n_frets = cfg["n_strings"], cfg["n_frets"]

    def forward(self, cqt):
        h = self.dense(cqt)
        logits = self.string_heads(h)
        b, _, t = logits.shape
        return logits.view(b, self.n_strings, self.n_frets, t)


def tab_cross_entropy(logits, frets):
    b, s, k, t = logits.shape
    return F.cross_entropy(logits.permute(0, 1, 3, 2).reshape(-1, k), frets.reshape(-1))


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)
    cqt, frets = synth_cqt_clips(CONFIG, gen)
    tabnet = TabNet(CONFIG)
    opt = torch.optim.AdamW(tabnet.parameters(), lr=CONFIG["lr"])
    bs = CONFIG["batch_size"]
    for epoch in range(CONFIG["epochs"]):
        for start in range(0, CONFIG["n_clips"], bs):
            logits = tabnet(cqt[start:start + bs])
            tab_loss = tab_cross_entropy(logits, frets[start:start + bs])
            opt.zero_grad()
            tab_loss.backward()
            opt.step()
        print(f"epoch {epoch}: tab loss {tab_loss.item():.3f}")


if __name__ == "__main__":
    main()
