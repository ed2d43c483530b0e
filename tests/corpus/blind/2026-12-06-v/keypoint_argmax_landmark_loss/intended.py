"""Corrected: the heatmaps are decoded with a soft-argmax (the expectation of the pixel coordinates under
a spatial softmax), which is differentiable, so the landmark loss trains the detector.

Facial-landmark detector trained with a landmark (coordinate) loss: a small fully convolutional
network predicts one heatmap per landmark, the heatmaps are decoded to (x, y) coordinates and an L2
loss compares them with the annotated landmarks.

Reduced from https://github.com/YaN9-Y/lafin/issues/8: the author wanted LaFIn's landmark loss on
heatmap predictions and decoded each heatmap with ``torch.max``, which returns the peak value (with a
gradient) and the peak index (without one); the coordinates built from the index carry no gradient,
so ``loss.backward()`` failed ("element 0 of tensors does not require grad and does not have a
grad_fn"). The report's model was a landmark-guided image generator; the training setting here (a
heatmap keypoint detector trained by its coordinate loss alone) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_KPT, IMG, HM = 5, 32, 16
BATCH, STEPS = 16, 6


def make_batch(n):
    """Synthetic faces: a dark background with a bright Gaussian blob at each landmark."""
    kpts = torch.rand(n, N_KPT, 2) * (IMG - 8) + 4
    ys, xs = torch.meshgrid(torch.arange(IMG).float(), torch.arange(IMG).float(), indexing="ij")
    d2 = (xs[None, None] - kpts[..., 0, None, None]) ** 2 + (ys[None, None] - kpts[..., 1, None, None]) ** 2
    blobs = torch.exp(-d2 / 4.0) * torch.linspace(0.6, 1.0, N_KPT)[None, :, None, None]
    images = blobs.sum(1, keepdim=True).expand(n, 3, IMG, IMG) + 0.05 * torch.randn(n, 3, IMG, IMG)
    return images, kpts * (HM / IMG)  # landmarks in heatmap pixels


class ConvBlock(nn.Sequential):
    def __init__(self, cin, cout, stride=1):
        super().__init__(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU())


class HeatmapNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(ConvBlock(3, 16), ConvBlock(16, 32, stride=2))
        self.body = nn.Sequential(ConvBlock(32, 32), ConvBlock(32, 32))
        self.head = nn.Conv2d(32, N_KPT, 1)

    def forward(self, x):
        return self.head(self.body(self.stem(x)))  # (B, K, HM, HM)


def decode_heatmaps(heatmaps, beta=10.0):
    """Landmark coordinates (x, y): soft-argmax of each heatmap."""
    b, k, h, w = heatmaps.shape
    prob = F.softmax(beta * heatmaps.view(b, k, h * w), dim=-1).view(b, k, h, w)
    xs = (prob.sum(dim=2) * torch.arange(w).float()).sum(dim=-1)
    ys = (prob.sum(dim=3) * torch.arange(h).float()).sum(dim=-1)
    return torch.stack([xs, ys], dim=-1)


def pck(pred, gt, thr=1.0):
    return ((pred - gt).norm(dim=-1) < thr).float().mean().item()


detector = HeatmapNet()
optimizer = torch.optim.Adam(detector.parameters(), lr=2e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
val_images, val_kpts = make_batch(32)

for step in range(STEPS):
    detector.train()
    images, kpts = make_batch(BATCH)
    pred = decode_heatmaps(detector(images))
    loss = F.mse_loss(pred, kpts)

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()

    detector.eval()
    with torch.no_grad():
        val_pred = decode_heatmaps(detector(val_images))
    print(f"step {step}: landmark loss {loss.item():.3f} | val PCK@1px {pck(val_pred, val_kpts):.3f}")
