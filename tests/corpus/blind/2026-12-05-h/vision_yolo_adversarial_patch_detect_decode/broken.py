"""Adversarial patch against a YOLOv5-style person detector (the detector is frozen).

Reduced from https://github.com/ultralytics/yolov5/issues/671: the author optimises a printable
patch (``patch_train.py``, in the style of "Fooling automated surveillance cameras") against
YOLOv5: the patch is pasted onto person images, the frozen detector's inference output
``model(batch)[0]`` is read, and the loss is the maximum objectness x person score plus a
total-variation term; only the patch is optimised with Adam. A tiny randomly initialised
YOLO-like network with the same ``Detect`` head stands in for the pretrained yolov5s.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)

NUM_CLASSES = 2  # 0 = person
PATCH_SIZE = 8


class Detect(nn.Module):
    stride = None

    def __init__(self, nc, anchors, ch):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        self.grid = [torch.zeros(1)] * self.nl
        a = torch.tensor(anchors).float().view(self.nl, -1, 2)
        self.register_buffer("anchors", a)
        self.register_buffer("anchor_grid", a.clone().view(self.nl, 1, -1, 1, 1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()

            if not self.training:
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i] = self._make_grid(nx, ny)
                y = x[i].sigmoid()
                y[..., 0:2] = (y[..., 0:2] * 2.0 - 0.5 + self.grid[i]) * self.stride[i]
                y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
                z.append(y.view(bs, -1, self.no))

        return x if self.training else (torch.cat(z, 1), x)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()


class TinyYolo(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.SiLU())
        self.p4 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU())
        self.detect = Detect(NUM_CLASSES, [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119]], (16, 32))
        self.detect.stride = torch.tensor([4.0, 8.0])

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.p4(p3)
        return self.detect([p3, p4])


class PatchApplier(nn.Module):
    def forward(self, img_batch, adv_patch, boxes):
        out = img_batch.clone()
        for i, (x0, y0) in enumerate(boxes.tolist()):
            x0, y0 = int(x0), int(y0)
            pad = torch.zeros_like(img_batch[i])
            mask = torch.zeros_like(img_batch[i])
            pad[:, y0 : y0 + PATCH_SIZE, x0 : x0 + PATCH_SIZE] = adv_patch
            mask[:, y0 : y0 + PATCH_SIZE, x0 : x0 + PATCH_SIZE] = 1.0
            out[i] = img_batch[i] * (1 - mask) + pad
        return out


class MaxProbExtractor(nn.Module):
    def __init__(self, cls_id):
        super().__init__()
        self.cls_id = cls_id

    def forward(self, output):
        obj = output[..., 4]
        cls = output[..., 5 + self.cls_id]
        return (obj * cls).max(dim=1).values


def total_variation(patch):
    tvx = (patch[:, :, 1:] - patch[:, :, :-1]).abs().mean()
    tvy = (patch[:, 1:, :] - patch[:, :-1, :]).abs().mean()
    return tvx + tvy


class PatchTrainer:
    def __init__(self):
        self.yolov5 = TinyYolo().eval()
        for p in self.yolov5.parameters():
            p.requires_grad_(False)
        self.patch_applier = PatchApplier()
        self.prob_extractor = MaxProbExtractor(cls_id=0)

    def train(self, images, boxes, n_epochs=4, batch_size=4):
        adv_patch = torch.full((3, PATCH_SIZE, PATCH_SIZE), 0.5)
        adv_patch.requires_grad_(True)
        optimizer = torch.optim.Adam([adv_patch], lr=0.03, amsgrad=True)
        for epoch in range(n_epochs):
            for i in range(0, len(images), batch_size):
                batch = self.patch_applier(images[i : i + batch_size], adv_patch, boxes[i : i + batch_size])
                output = self.yolov5(batch)[0]  # get yolo output
                max_prob = self.prob_extractor(output)
                tv = total_variation(adv_patch)
                loss = max_prob.mean() + 2.5 * tv
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                adv_patch.data.clamp_(0, 1)
            print(f"epoch {epoch}: loss {loss.item():.4f}")
        return adv_patch


if __name__ == "__main__":
    images = torch.rand(8, 3, 32, 32)
    boxes = torch.randint(0, 32 - PATCH_SIZE, (8, 2))
    PatchTrainer().train(images, boxes)
