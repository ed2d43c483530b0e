"""Fine-tuning a U-Net for pneumothorax segmentation (SIIM chest X-rays) under a data-parallel trainer.

Source: https://github.com/marshuang80/gloria/issues/19
The author fine-tunes the repository's segmentation model (reduced here: a two-level U-Net on
16x16 synthetic radiographs, CPU) with its Lightning-style ``SegmentationModel``: ``shared_step``
squeezes the logits, applies the repository's ``MixedLoss`` (focal + log-Dice) and returns a dict
with the loss and the Dice score. The trainer runs with the "dp" backend: each batch is scattered
over the replicas, every replica runs ``training_step`` on its chunk, the outputs are gathered, and
the trainer then calls ``backward`` on the gathered loss and steps Adam.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def dice_loss(pred, target):
    smooth = 1.0
    pred = torch.sigmoid(pred)
    p_flat = pred.view(-1)
    t_flat = target.view(-1)
    intersection = (p_flat * t_flat).sum()
    return (2.0 * intersection + smooth) / (p_flat.sum() + t_flat.sum() + smooth)


class FocalLoss(nn.Module):
    def __init__(self, gamma=2.0):
        super().__init__()
        self.gamma = gamma

    def forward(self, input, target):
        if not (target.size() == input.size()):
            raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
        max_val = (-input).clamp(min=0)
        loss = input - input * target + max_val + ((-max_val).exp() + (-input - max_val).exp()).log()
        invprobs = F.logsigmoid(-input * (target * 2.0 - 1.0))
        loss = (invprobs * self.gamma).exp() * loss
        return loss.mean()


class MixedLoss(nn.Module):
    def __init__(self, alpha=10.0, gamma=2.0):
        super().__init__()
        self.alpha = alpha
        self.focal = FocalLoss(gamma)

    def forward(self, input, target):
        loss = self.alpha * self.focal(input, target) - torch.log(dice_loss(input, target))
        return loss.mean()


class Unet(nn.Module):
    def __init__(self, in_channels=3, classes=1, f=8):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(in_channels, f, 3, padding=1), nn.BatchNorm2d(f), nn.ReLU())
        self.enc2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(f, 2 * f, 3, padding=1), nn.BatchNorm2d(2 * f), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * f, f, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(2 * f, f, 3, padding=1), nn.BatchNorm2d(f), nn.ReLU())
        self.segmentation_head = nn.Conv2d(f, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        d = self.dec(torch.cat([self.up(e2), e1], dim=1))
        return self.segmentation_head(d)


class SegmentationModel(nn.Module):
    """Lightning-style module (the repository's SegmentationModel, without logging to wandb)."""

    def __init__(self, lr=1e-3):
        super().__init__()
        self.lr = lr
        self.model = Unet()
        self.loss = MixedLoss(alpha=10.0)

    def configure_optimizers(self):
        return [torch.optim.Adam(self.model.parameters(), lr=self.lr)]

    def training_step(self, batch, batch_idx):
        return self.shared_step(batch, "train", batch_idx)

    def training_step_end(self, outputs):
        # with the dp backend, reduce the per-replica losses gathered by the trainer
        outputs["loss"] = outputs["loss"].mean()
        return outputs

    def shared_step(self, batch, split, batch_idx):
        x, y = batch
        logit = self.model(x)
        logit = logit.squeeze()
        loss = self.loss(logit, y)
        prob = torch.sigmoid(logit)
        dice = self.get_dice(prob, y)
        return {"loss": loss, "dice": dice, "logit": logit, "prob": prob, "y": y}

    def get_dice(self, probability, truth, threshold=0.5):
        batch_size = len(truth)
        with torch.no_grad():
            p = (probability.view(batch_size, -1) > threshold).float()
            t = (truth.view(batch_size, -1) > 0.5).float()
            dice = (2 * (p * t).sum(-1) + 1.0) / ((p + t).sum(-1) + 1.0)
        return torch.mean(dice).item()


class DataParallelTrainer:
    """The "dp" backend's loop: scatter the batch, run training_step per replica, gather, backward, step."""

    def __init__(self, num_replicas=2, max_epochs=2):
        self.num_replicas = num_replicas
        self.max_epochs = max_epochs

    def gather(self, outputs):
        gathered = {}
        for key in outputs[0]:
            values = [o[key] for o in outputs]
            if isinstance(values[0], torch.Tensor) and values[0].dim() == 0:
                gathered[key] = torch.stack(values)  # one entry per replica
            elif isinstance(values[0], torch.Tensor):
                gathered[key] = torch.cat(values)
            else:
                gathered[key] = values
        return gathered

    def fit(self, model, train_batches):
        optimizer = model.configure_optimizers()[0]
        for epoch in range(self.max_epochs):
            model.train()
            for batch_idx, (x, y) in enumerate(train_batches):
                chunks = zip(x.chunk(self.num_replicas), y.chunk(self.num_replicas))
                outputs = [model.training_step(chunk, batch_idx) for chunk in chunks]
                step_output = self.gather(outputs)
                if hasattr(model, "training_step_end"):
                    step_output = model.training_step_end(step_output)
                loss = step_output["loss"]
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch}: dice {sum(step_output['dice']) / len(step_output['dice']):.3f}")


def make_siim_like(n, size=16):
    grid = torch.arange(size).float()
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    images, masks = [], []
    for _ in range(n):
        lung = 0.5 + 0.1 * torch.randn(size, size)
        mask = torch.zeros(size, size)
        if torch.rand(1).item() < 0.7:
            cy, cx = torch.randint(3, size - 3, (2,)).tolist()
            mask = (((yy - cy) ** 2 / 9 + (xx - cx) ** 2 / 4) < 1).float()
            lung = lung - 0.3 * mask
        images.append(lung.expand(3, -1, -1))
        masks.append(mask)
    return torch.stack(images), torch.stack(masks)


if __name__ == "__main__":
    images, masks = make_siim_like(32)
    train_batches = list(zip(images.split(8), masks.split(8)))
    model = SegmentationModel(lr=1e-3)
    trainer = DataParallelTrainer(num_replicas=2, max_epochs=2)
    trainer.fit(model, train_batches)
