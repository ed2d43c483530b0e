"""Karaoke lyrics alignment: frame-level phoneme posteriors plus a line-level embedding that is matched
against the lyric line's text embedding.

Source: https://github.com/jasonppy/word-discovery/pull/4 ("fix inplace operation error"). The PR
fixes "one of the variables needed for gradient computation has been modified by an inplace
operation: [torch.cuda.FloatTensor [BS, 768, 399]], which is output 0 of AsStridedBackward0": a
[batch, 768, frames] speech-feature tensor, a transposed view, was written in place after a layer
had saved it.

This script reduces it to a lyrics aligner over padded batches of sung frames: the projected features
are transposed to [batch, channels, frames], a temporal convolution reads them for the phoneme
posteriors, and the padded frames are then zeroed by an index assignment before mean-pooling the
line embedding.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {"n_mels": 40, "channels": 32, "phonemes": 12, "text_dim": 16, "frames": 50, "batch": 8, "steps": 5, "lr": 1e-3}


def make_sung_batch(cfg):
    """Mel frames of sung lines with varying lengths, frame phoneme labels, and lyric-line text embeddings."""
    b, t = cfg["batch"], cfg["frames"]
    lengths = torch.randint(t // 2, t + 1, (b,))
    valid = torch.arange(t).unsqueeze(0) < lengths.unsqueeze(1)
    mels = torch.randn(b, t, cfg["n_mels"]) * valid.unsqueeze(-1)
    phon = torch.randint(0, cfg["phonemes"], (b, t))
    phon[~valid] = -100
    text = F.normalize(torch.randn(b, cfg["text_dim"]), dim=1)
    return mels, valid, phon, text


class LyricsAligner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg["n_mels"], cfg["channels"])
        self.temporal = nn.Conv1d(cfg["channels"], cfg["channels"], kernel_size=5, padding=2)
        self.phone_out = nn.Conv1d(cfg["channels"], cfg["phonemes"], kernel_size=1)
        self.line_out = nn.Linear(cfg["channels"], cfg["text_dim"])

    def forward(self, mels, valid):
        feats = torch.tanh(self.proj(mels))
        x = feats.transpose(1, 2)
        local = torch.relu(self.temporal(x))
        phone_logits = self.phone_out(local)
        b_idx, t_idx = (~valid).nonzero(as_tuple=True)
        x[b_idx, :, t_idx] = 0.0
        pooled = x.sum(dim=2) / valid.sum(dim=1, keepdim=True)
        line_emb = F.normalize(self.line_out(pooled), dim=1)
        return phone_logits, line_emb


def alignment_losses(phone_logits, phon, line_emb, text, temperature=0.1):
    ctc_like = F.cross_entropy(phone_logits, phon, ignore_index=-100)
    sims = line_emb @ text.t() / temperature
    contrast = F.cross_entropy(sims, torch.arange(sims.shape[0]))
    return ctc_like, contrast


def run(cfg):
    aligner = LyricsAligner(cfg)
    opt = torch.optim.Adam(aligner.parameters(), lr=cfg["lr"])
    for step in range(cfg["steps"]):
        mels, valid, phon, text = make_sung_batch(cfg)
        phone_logits, line_emb = aligner(mels, valid)
        frame_loss, line_loss = alignment_losses(phone_logits, phon, line_emb, text)
        opt.zero_grad()
        (frame_loss + 0.3 * line_loss).backward()
        opt.step()
        print(f"step {step}: frame {frame_loss.item():.3f} line {line_loss.item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(77)
    run(CFG)
