"""MASSL: semi-supervised brain-tumour segmentation with a shared encoder and two decoders (BraTS-style MRI).

Source: https://github.com/ShuaiChenBIGR/MASSL-segmentation-framework/issues/1
The author runs the repository's attention training script (reduced here: 2-D slices of 16x16,
two small decoders, synthetic FLAIR images and masks). A shared encoder feeds a segmentation
decoder (trained on labeled slices with a Dice loss) and a reconstruction decoder that predicts the
background and foreground parts of the image (trained on unlabeled slices with MSE against targets
built from the segmentation output, the "fuse" mode). Each batch runs a labeled phase and an
unlabeled phase; a ``network_switch`` freezes the decoder a phase does not train, and each phase
has its own Adam and StepLR scheduler over the whole model.
"""

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler

torch.manual_seed(0)


def set_requires_grad(module, flag):
    for param in module.parameters():
        param.requires_grad = flag


def conv_norm_lrelu(feat_in, feat_out):
    return nn.Sequential(nn.Conv2d(feat_in, feat_out, 3, 1, 1), nn.InstanceNorm2d(feat_out), nn.LeakyReLU())


class MASSL_norm(nn.Module):
    def __init__(self, in_channels, n_classes, base_n_filter=4):
        super().__init__()
        f = base_n_filter
        # shared encoder
        self.encoder = nn.Sequential(
            conv_norm_lrelu(in_channels, f),
            nn.Conv2d(f, 2 * f, 3, 2, 1),
            nn.InstanceNorm2d(2 * f),
            nn.LeakyReLU(),
        )
        # decoder path 1: segmentation
        self.decoder_seg = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), conv_norm_lrelu(2 * f, f))
        self.seg_out = nn.Conv2d(f, n_classes, 1)
        # decoder path 2: reconstruction (background / foreground)
        self.decoder_rec = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), conv_norm_lrelu(2 * f, f))
        self.rec_out = nn.Conv2d(f, 2, 1)

    def forward(self, x, phase, network_switch):
        if phase == "trainLabeled":
            set_requires_grad(self.encoder, network_switch["trainL_encoder"])
            set_requires_grad(self.decoder_seg, network_switch["trainL_decoder_seg"])
            set_requires_grad(self.decoder_rec, network_switch["trainL_decoder_rec"])
        elif phase == "trainUnlabeled":
            set_requires_grad(self.encoder, network_switch["trainU_encoder"])
            set_requires_grad(self.decoder_seg, network_switch["trainU_decoder_seg"])
            set_requires_grad(self.decoder_rec, network_switch["trainU_decoder_rec"])
        set_requires_grad(self.seg_out, True)
        set_requires_grad(self.rec_out, True)

        features = self.encoder(x)
        out_seg = torch.sigmoid(self.seg_out(self.decoder_seg(features)))
        out_rec = self.rec_out(self.decoder_rec(features))
        return out_seg, out_rec


class DiceCoefficientLF(nn.Module):
    def __init__(self, smooth=1.0):
        super().__init__()
        self.smooth = smooth

    def forward(self, pred, target):
        pred = pred.contiguous().view(pred.shape[0], -1)
        target = target.contiguous().view(target.shape[0], -1)
        intersection = (pred * target).sum(1)
        dice = (2.0 * intersection + self.smooth) / (pred.sum(1) + target.sum(1) + self.smooth)
        return 1.0 - dice.mean()


def train_model(model, modelDataLoader, network_switch, criterion, optimizer, scheduler, num_epochs=2,
                loss_weighted=True, self=False, mode="fuse"):
    outputsU_back = 0
    outputsU_fore = 0
    labels_back = 0
    labels_fore = 0

    for epoch in range(num_epochs):
        epoch_train_loss = [0.0, 0.0]

        for i, (sample1, sample2) in enumerate(zip(modelDataLoader["trainLabeled"], modelDataLoader["trainUnlabeled"])):
            procedure = ["trainLabeled", "trainUnlabeled"]

            for phase in procedure:
                if phase == "trainLabeled":
                    scheduler[0].step()
                else:
                    scheduler[1].step()
                model.train()

                running_loss = 0.0

                if phase == "trainLabeled":
                    inputs = sample1["image"][:, 2:3].float()  # batch, FLAIR
                    labels = sample1["mask"][:].float()
                    image = sample1["image"][:, 2:3].float()
                    if not self:
                        image2 = sample2["image"][:, 2:3].float()
                else:
                    inputs = sample2["image"][:, 2:3].float()
                    labels = sample2["mask"][:].float()
                    image = sample2["image"][:, 2:3].float()

                optimizer[0].zero_grad()
                optimizer[1].zero_grad()

                if phase == "trainLabeled":
                    outputsL, outputsU = model(inputs, phase=phase, network_switch=network_switch)

                    if mode == "fuse":
                        outputsU_back = outputsU[:, 0:1]
                        outputsU_fore = outputsU[:, 1:2]
                        labels_back = (1.0 - outputsL) * image.float()
                        labels_fore = outputsL * image.float()
                        if not self:
                            labels_back = (1.0 - outputsL) * image2.float()
                            labels_fore = outputsL * image2.float()

                    w1 = 1.0
                    w2 = 0.0
                    w3 = 0.0

                    loss = w1 * criterion[0](outputsL.float(), labels.float()) + \
                        w2 * criterion[1](outputsU_back.float(), labels_back.float()) + \
                        w3 * criterion[1](outputsU_fore.float(), labels_fore.float())

                elif phase == "trainUnlabeled":
                    outputsL, outputsU = model(inputs, phase=phase, network_switch=network_switch)

                    if mode == "fuse":
                        outputsU_back = outputsU[:, 0:1]
                        outputsU_fore = outputsU[:, 1:2]
                        labels_back = (1.0 - outputsL) * image.float()
                        labels_fore = outputsL * image.float()

                    if loss_weighted:
                        w2 = torch.sum((1.0 - outputsL))
                        w3 = torch.sum(outputsL)
                        total = w2 + w3
                        w2 = w2 / total
                        w3 = w3 / total

                    loss = w2 * criterion[1](outputsU_back.float(), labels_back.float()) + \
                        w3 * criterion[1](outputsU_fore.float(), labels_fore.float())

                if phase == "trainLabeled":
                    loss.backward(retain_graph=True)
                    optimizer[0].step()
                    running_loss += loss.item() * inputs.size(0)
                elif phase == "trainUnlabeled":
                    loss.backward()
                    optimizer[1].step()
                    running_loss += loss.item() * inputs.size(0)

                if phase == "trainLabeled":
                    epoch_train_loss[0] += running_loss
                else:
                    epoch_train_loss[1] += running_loss

        print("MASSL epoch %d (TSL=%.4f, TUL=%.4f)" % (epoch, epoch_train_loss[0] / (i + 1), epoch_train_loss[1] / (i + 1)))
    return model


def make_brats_like_slices(n, size=16):
    """FLAIR-like slices (4 modalities, channel 2 is FLAIR) with one bright lesion each, and its mask."""
    grid = torch.arange(size).float()
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    images, masks = [], []
    for _ in range(n):
        cy, cx = torch.randint(4, size - 4, (2,)).tolist()
        r = 2 + torch.rand(1).item() * 2
        lesion = (((yy - cy) ** 2 + (xx - cx) ** 2) < r ** 2).float()
        brain = 0.3 + 0.1 * torch.randn(4, size, size)
        brain[2] += 0.8 * lesion
        images.append(brain)
        masks.append(lesion.unsqueeze(0))
    return torch.stack(images), torch.stack(masks)


def batches(images, masks, batch_size):
    return [{"image": im, "mask": m} for im, m in zip(images.split(batch_size), masks.split(batch_size))]


def network_training_ssl_epoch(num_epoch=2):
    switch = {"trainL_encoder": True,
              "trainL_decoder_seg": True,
              "trainL_decoder_rec": False,

              "trainU_encoder": True,
              "trainU_decoder_seg": False,
              "trainU_decoder_rec": True}

    labeled_images, labeled_masks = make_brats_like_slices(12)
    unlabeled_images, unlabeled_masks = make_brats_like_slices(12)
    modelDataLoader = {
        "trainLabeled": batches(labeled_images, labeled_masks, 4),
        "trainUnlabeled": batches(unlabeled_images, unlabeled_masks, 4),
    }

    model = MASSL_norm(1, 1, 4)

    criterionDICE = DiceCoefficientLF()
    criterionMSE = nn.MSELoss()
    criterion = (criterionDICE, criterionMSE)

    optimizer_ft = (optim.Adam(model.parameters(), lr=1e-2),
                    optim.Adam(model.parameters(), lr=1e-3))

    exp_lr_scheduler = (lr_scheduler.StepLR(optimizer_ft[0], step_size=500, gamma=0.5),
                        lr_scheduler.StepLR(optimizer_ft[1], step_size=500, gamma=0.5))

    return train_model(model, modelDataLoader, switch, criterion, optimizer_ft, exp_lr_scheduler,
                       num_epochs=num_epoch, loss_weighted=True, self=False, mode="fuse")


if __name__ == "__main__":
    network_training_ssl_epoch()
