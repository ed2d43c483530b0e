"""Unsupervised exposure correction (PSENet: pseudo-supervised image enhancement) with a Lightning-style loop.

Reduced from https://github.com/VinAIResearch/PSENet-Image-Enhancement/issues/1: the `PSENet` module's
`training_step` builds a pseudo ground truth for the n-th batch (gamma-curve synthetic references plus
the model's detached output, the best-scored per pixel) and trains the tone-mapping network on the
(n-1)-th batch against its saved pseudo ground truth; the (n-1)-th loss is returned to the trainer,
which runs automatic optimization (zero_grad, backward of the returned loss, step). The author edited
`training_step` around the loss. The Lightning trainer is written out as a small class; the no-reference
quality scorer is a fixed hand-written score; synthetic under/over-exposed 24x24 images.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TVLoss(nn.Module):
    def forward(self, x):
        h_tv = (x[:, :, 1:, :] - x[:, :, :-1, :]).pow(2).mean()
        w_tv = (x[:, :, :, 1:] - x[:, :, :, :-1]).pow(2).mean()
        return h_tv + w_tv


class IQA(nn.Module):
    """Fixed per-pixel quality score: well-exposed (near 0.5) and locally contrasted pixels score high."""

    def forward(self, im):
        gray = im.mean(dim=1, keepdim=True)
        exposure = torch.exp(-((gray - 0.5) ** 2) / 0.08)
        local_mean = F.avg_pool2d(gray, 3, 1, 1)
        contrast = (gray - local_mean).abs()
        return exposure + contrast


class UnetTMO(nn.Module):
    """Tiny U-Net predicting a per-pixel gamma; the enhanced image is im ** gamma."""

    def __init__(self, ch=8):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, ch, 3, 2, 1), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU())
        self.up = nn.Sequential(nn.Conv2d(2 * ch, ch, 3, padding=1), nn.ReLU(), nn.Conv2d(ch, 1, 3, padding=1))
        self.skip = nn.Conv2d(3, ch, 1)

    def forward(self, im):
        h = self.mid(self.down(im))
        h = F.interpolate(h, size=im.shape[-2:], mode="bilinear", align_corners=False)
        gamma = torch.exp(torch.tanh(self.up(torch.cat([h, self.skip(im)], dim=1))))
        out = im.clamp(1e-4, 1.0) ** gamma
        return out, gamma


class PSENet(nn.Module):
    def __init__(self, tv_w, gamma_lower, gamma_upper, number_refs, lr):
        super().__init__()
        self.tv_w = tv_w
        self.gamma_lower = gamma_lower
        self.gamma_upper = gamma_upper
        self.number_refs = number_refs
        self.lr = lr
        self.model = UnetTMO()
        self.mse = nn.MSELoss()
        self.tv = TVLoss()
        self.iqa = IQA()
        self.saved_input = None
        self.saved_pseudo_gt = None

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.lr, betas=[0.9, 0.99])

    def generate_pseudo_gt(self, im):
        bs, ch, h, w = im.shape
        underexposed_ranges = torch.linspace(0, self.gamma_upper, steps=self.number_refs + 1)[:-1]
        step_size = self.gamma_upper / self.number_refs
        underexposed_gamma = torch.exp(torch.rand([bs, self.number_refs]) * step_size + underexposed_ranges[None, :])
        overrexposed_ranges = torch.linspace(self.gamma_lower, 0, steps=self.number_refs + 1)[:-1]
        overrexposed_gamma = torch.exp(torch.rand([bs, self.number_refs]) * overrexposed_ranges[None, :])
        gammas = torch.cat([underexposed_gamma, overrexposed_gamma], dim=1)
        synthetic_references = 1 - (1 - im[:, None]) ** gammas[:, :, None, None, None]
        previous_iter_output = self.model(im)[0].clone().detach()
        references = torch.cat([im[:, None], previous_iter_output[:, None], synthetic_references], dim=1)
        nref = references.shape[1]
        scores = self.iqa(references.view(bs * nref, ch, h, w))
        scores = scores.view(bs, nref, 1, h, w)
        max_idx = torch.argmax(scores, dim=1)
        max_idx = max_idx.repeat(1, ch, 1, 1)[:, None]
        pseudo_gt = torch.gather(references, 1, max_idx)
        return pseudo_gt.squeeze(1)

    def training_step(self, batch, batch_idx):
        # In the n-th iteration the (n-1)-th batch updates the weights; the n-th batch gets its pseudo gt
        # from the current weights and is saved for the (n+1)-th iteration.
        nth_input = batch
        nth_pseudo_gt = self.generate_pseudo_gt(batch)
        if self.saved_input is not None:
            im = self.saved_input
            pred_im, pred_gamma = self.model(im)
            pseudo_gt = self.saved_pseudo_gt
            reconstruction_loss = self.mse(pred_im, pseudo_gt)
            tv_loss = self.tv(pred_gamma)
            loss = reconstruction_loss + tv_loss * self.tv_w
            loss.backward()
            print(f"step {batch_idx}: reconstruction {reconstruction_loss.item():.4f} tv {tv_loss.item():.4f}")
        else:
            # skip updating model's weight at the first batch
            loss = None
        self.saved_input = nth_input
        self.saved_pseudo_gt = nth_pseudo_gt
        return loss


class Trainer:
    """What the Lightning trainer does with automatic optimization, for one optimizer."""

    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    def fit(self, module, train_dataloader):
        optimizer = module.configure_optimizers()
        module.train()
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_dataloader):
                optimizer.zero_grad()
                loss = module.training_step(batch, batch_idx)
                if loss is None:
                    continue
                loss.backward()
                optimizer.step()


def make_loader(n_batches=8, batch_size=4, size=24):
    """Badly exposed photos: smooth scenes pushed towards black or white."""
    scenes = F.avg_pool2d(torch.rand(n_batches * batch_size, 3, size + 4, size + 4), 5, 1)
    exposure = torch.where(torch.rand(n_batches * batch_size, 1, 1, 1) < 0.5, 3.0, 0.33)
    images = scenes.clamp(1e-3, 1.0) ** exposure
    return list(images.split(batch_size))


def main():
    train_loader = make_loader()
    psenet = PSENet(tv_w=5.0, gamma_lower=-2.0, gamma_upper=3.0, number_refs=1, lr=5e-4)
    trainer = Trainer(max_epochs=2)
    trainer.fit(psenet, train_loader)


if __name__ == "__main__":
    main()
