"""Trimap-guided matting network trained with an alpha loss and a composition loss; the predicted
foreground is denormalised channel by channel, in place, before it is re-composited.

Reduces https://github.com/haofanwang/Score-CAM/issues/28 ("Output 0 of UnbindBackward is a view and is
being modified inplace"). There, ``denormalize`` undid the ImageNet normalisation with
``for channel, mean, std in zip(denormalized[0], means, stds): channel.mul_(std).add_(mean)``: iterating
over a tensor unbinds it into views, and modifying those views in place is refused. The accepted
answer replaced the in-place ``mul_``/``add_`` with out-of-place arithmetic. Here the same helper is
applied to the foreground a matting network predicts (in the normalised colour space of its input), so
the composition loss can compare ``alpha * F + (1 - alpha) * B`` with the original image; the training
setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

MEAN = torch.tensor([0.485, 0.456, 0.406])
STD = torch.tensor([0.229, 0.224, 0.225])
H = W = 24
BATCH, STEPS = 4, 5


def normalize(img):
    return (img - MEAN.view(1, 3, 1, 1)) / STD.view(1, 3, 1, 1)


def denormalize(tensor):
    # undo the ImageNet normalisation, one colour channel at a time
    for image in tensor:
        for channel, mean, std in zip(image, MEAN, STD):
            channel.mul_(std).add_(mean)
    return tensor


def random_alpha(batch):
    # soft blobs: a few Gaussians summed and squashed into [0, 1]
    ys, xs = torch.meshgrid(torch.arange(H).float(), torch.arange(W).float(), indexing="ij")
    alpha = torch.zeros(batch, 1, H, W)
    for b in range(batch):
        for _ in range(3):
            cy, cx = torch.rand(2) * torch.tensor([H, W]).float()
            r = 3 + 4 * torch.rand(1)
            alpha[b, 0] += torch.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * r**2))
    return alpha.clamp(0, 1)


def make_trimap(alpha):
    trimap = torch.full_like(alpha, 0.5)
    trimap[alpha > 0.95] = 1.0
    trimap[alpha < 0.05] = 0.0
    return trimap


def make_batch():
    fg = torch.rand(BATCH, 3, H, W) * 0.5 + 0.5
    bg = torch.rand(BATCH, 3, H, W) * 0.5
    alpha = random_alpha(BATCH)
    image = alpha * fg + (1 - alpha) * bg
    return image, bg, alpha, make_trimap(alpha)


class ConvBlock(nn.Sequential):
    def __init__(self, cin, cout, stride=1):
        super().__init__(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU())


class MattingNet(nn.Module):
    """Encoder-decoder over (normalised image, trimap); predicts alpha and the normalised foreground."""

    def __init__(self, width=16):
        super().__init__()
        self.enc1 = ConvBlock(4, width)
        self.enc2 = ConvBlock(width, 2 * width, stride=2)
        self.mid = ConvBlock(2 * width, 2 * width)
        self.dec = ConvBlock(3 * width, width)
        self.head = nn.Conv2d(width, 4, 3, padding=1)

    def forward(self, image_norm, trimap):
        e1 = self.enc1(torch.cat([image_norm, trimap], dim=1))
        e2 = self.mid(self.enc2(e1))
        up = F.interpolate(e2, size=e1.shape[-2:], mode="bilinear", align_corners=False)
        out = self.head(self.dec(torch.cat([up, e1], dim=1)))
        alpha = torch.sigmoid(out[:, :1])
        fg_norm = out[:, 1:]
        return alpha, fg_norm


def matting_losses(alpha_pred, fg_norm, image, bg, alpha_gt, trimap):
    unknown = (trimap == 0.5).float()
    weight = unknown.sum().clamp(min=1.0)
    alpha_loss = (torch.abs(alpha_pred - alpha_gt) * unknown).sum() / weight
    fg = denormalize(fg_norm)
    comp = alpha_pred * fg + (1 - alpha_pred) * bg
    comp_loss = (torch.abs(comp - image) * unknown).sum() / (3 * weight)
    return alpha_loss, comp_loss


model = MattingNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(STEPS):
    image, bg, alpha_gt, trimap = make_batch()
    alpha_pred, fg_norm = model(normalize(image), trimap)
    alpha_loss, comp_loss = matting_losses(alpha_pred, fg_norm, image, bg, alpha_gt, trimap)
    loss = alpha_loss + 0.5 * comp_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} alpha {alpha_loss.item():.4f} comp {comp_loss.item():.4f}")
