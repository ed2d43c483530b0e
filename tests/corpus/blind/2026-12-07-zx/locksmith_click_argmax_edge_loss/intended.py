"""Lock-picking acoustics: segment pin-set clicks in a contact-microphone spectrogram.

Source: https://github.com/wonbeomjang/mobile-hair-segmentation-pytorch/issues/3
The reporter noticed that ImageGradientLoss in loss/loss.py cannot backpropagate, because it builds the mask
it differentiates from ``pred = pred.argmax(1).view(...).float()``; checked in a toy experiment, the loss on
its own has no grad_fn. They suggested taking the foreground channel ``pred[:, 1, :, :]`` instead.

Reduction: a small conv segmenter labels each time-frequency bin of a pick-session spectrogram as
click / background. Stage one trains with cross-entropy; stage two refines click boundaries with an
image-gradient consistency loss (mask edges should follow the spectrogram's energy edges), written like
the report's loss, with its own optimizer and a lower learning rate.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

CONFIG = {
    "n_sessions": 12,
    "n_bins": 16,
    "n_frames": 48,
    "batch_size": 4,
    "pretrain_lr": 3e-3,
    "refine_lr": 5e-4,
    "refine_epochs": 2,
}


def make_sessions(cfg):
    """Broadband clicks (a few frames wide) over low-frequency rake noise."""
    n, f, t = cfg["n_sessions"], cfg["n_bins"], cfg["n_frames"]
    spec = 0.3 * torch.rand(n, 1, f, t)
    spec[:, :, : f // 4] += 0.4 * torch.rand(n, 1, f // 4, t)
    mask = torch.zeros(n, f, t, dtype=torch.long)
    for i in range(n):
        for start in torch.randint(2, t - 4, (3,)).tolist():
            spec[i, :, f // 4:, start:start + 2] += 0.8
            mask[i, f // 4:, start:start + 2] = 1
    return spec, mask


class ClickSegmenter(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, spec):
        return self.head(self.enc(spec))


class ImageGradientLoss(nn.Module):
    """Penalise mask edges that do not line up with the spectrogram's energy edges."""

    def __init__(self):
        super().__init__()
        sobel = torch.tensor([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]])
        self.register_buffer("kx", sobel.view(1, 1, 3, 3))
        self.register_buffer("ky", sobel.t().contiguous().view(1, 1, 3, 3))

    def gradients(self, img):
        gx = F.conv2d(img, self.kx, padding=1)
        gy = F.conv2d(img, self.ky, padding=1)
        return gx, gy

    def forward(self, logits, spec):
        size = logits.size()
        pred = logits.softmax(1)[:, 1, :, :].view(size[0], 1, size[2], size[3])
        pgx, pgy = self.gradients(pred)
        sgx, sgy = self.gradients(spec)
        mag = torch.sqrt(pgx ** 2 + pgy ** 2 + 1e-6)
        cos = (pgx * sgx + pgy * sgy) / (mag * torch.sqrt(sgx ** 2 + sgy ** 2 + 1e-6))
        return (mag * (1 - cos ** 2)).sum() / mag.sum().clamp(min=1e-6)


def batches(spec, mask, batch_size):
    for start in range(0, spec.shape[0], batch_size):
        yield spec[start:start + batch_size], mask[start:start + batch_size]


def main(cfg):
    spec, mask = make_sessions(cfg)
    segmenter = ClickSegmenter()
    edge_criterion = ImageGradientLoss()
    optimizer = torch.optim.Adam(segmenter.parameters(), lr=cfg["pretrain_lr"])
    refine_optimizer = torch.optim.Adam(segmenter.parameters(), lr=cfg["refine_lr"])
    for x, y in batches(spec, mask, cfg["batch_size"]):
        seg_loss = F.cross_entropy(segmenter(x), y)
        optimizer.zero_grad()
        seg_loss.backward()
        optimizer.step()
    print(f"pretrain: CE {seg_loss.item():.4f}")

    for epoch in range(cfg["refine_epochs"]):
        for x, _ in batches(spec, mask, cfg["batch_size"]):
            edge_loss = edge_criterion(segmenter(x), x)
            refine_optimizer.zero_grad()
            edge_loss.backward()
            refine_optimizer.step()
        print(f"refine epoch {epoch}: edge {edge_loss.item():.4f}")


if __name__ == "__main__":
    main(CONFIG)
