"""Reduced from https://github.com/LZGMatrix/BOP19_CDPN_2019ICCV/issues/4

The author was writing a training script for CDPN (6D object pose from a single RGB crop): the
network predicts, for every pixel, a classification over coordinate bins for each of the object's
x, y and z coordinates (one extra bin for background). Copying the decoding from test.py, they
took torch.argmax over the bins, mapped the bin index back to a coordinate in [-1, 1], and used
an L1 loss between that decoded coordinate map and the ground truth; loss.backward() raised
"element 0 of tensors does not require grad and does not have a grad_fn". The maintainer's
answer: torch.argmax() is not differentiable, take the loss before the argmax (on the bin
scores).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_BINS = 16  # coordinate bins per axis; index N_BINS is the background bin


class CDPNCoorHead(nn.Module):
    def __init__(self, n_bins=N_BINS):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.coor_x = nn.Conv2d(16, n_bins + 1, 1)
        self.coor_y = nn.Conv2d(16, n_bins + 1, 1)
        self.coor_z = nn.Conv2d(16, n_bins + 1, 1)

    def forward(self, img):
        feat = self.backbone(img)
        return self.coor_x(feat), self.coor_y(feat), self.coor_z(feat)


def make_dataset(n=32, size=16):
    imgs = torch.randn(n, 3, size, size)
    masks = (torch.rand(n, 1, size, size) > 0.4).float()
    coors = torch.rand(n, 3, size, size) * 2 - 1
    return imgs, masks, coors


def train_one_epoch(model, optimizer, imgs, masks, coors, batch_size=8):
    model.train()
    for i in range(0, imgs.shape[0], batch_size):
        img, mask, gt_coor = imgs[i:i + batch_size], masks[i:i + batch_size], coors[i:i + batch_size]
        output_coor_x_, output_coor_y_, output_coor_z_ = model(img)

        output_coor_ = torch.stack([torch.argmax(output_coor_x_, dim=1),
                                    torch.argmax(output_coor_y_, dim=1),
                                    torch.argmax(output_coor_z_, dim=1)], dim=1)
        output_coor_[output_coor_ == N_BINS] = 0
        output_coor_ = 2.0 * output_coor_.float() / (N_BINS - 1) - 1.0  # [-1, 1]

        loss = F.l1_loss(output_coor_ * mask, gt_coor * mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


model = CDPNCoorHead()
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
imgs, masks, coors = make_dataset()

for epoch in range(3):
    print(epoch, train_one_epoch(model, optimizer, imgs, masks, coors))
