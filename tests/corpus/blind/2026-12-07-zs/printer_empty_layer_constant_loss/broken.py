"""3-D printing defect detection: a grid detector over camera images of each printed layer.

Source: https://github.com/RangiLyu/nanodet/issues/7 ("when I changed the warmup steps from 300
to 30, an error occurred": ``loss.backward()`` raised "element 0 of tensors does not require grad
and does not have a grad_fn"). In nanodet's GFL head, when a batch has no positive sample
(``avg_factor <= 0``) the three losses were replaced by ``torch.tensor(0, dtype=torch.float32)``
constants, so their sum has no graph and the backward fails; a commenter fixed it by creating
those constants with ``requires_grad=True``.

Reduction: a defect detector (stringing / under-extrusion blobs) whose loss function returns
constant zeros when no grid cell is assigned a defect. Layers are streamed in print order and
the first layers of a print (brim and first perimeters) are clean, so the first batch has no
positives. The intended version keeps the graph: the classification loss over the (all negative)
cells still trains the detector, and the box loss becomes ``pred.sum() * 0`` as nanodet's
per-level loss does. The training setting is the writer's.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {"img": 32, "stride": 4, "batch": 8, "layers": 48, "clean_layers": 8, "lr": 1e-3,
       "box_weight": 2.0}


def render_layer(gen, img, defect):
    x = 0.2 * torch.randn(1, img, img, generator=gen)
    x[:, ::4, :] += 0.5                              # infill lines
    box = torch.zeros(4)
    if defect:
        cx, cy = torch.randint(4, img - 4, (2,), generator=gen).tolist()
        w, h = torch.randint(2, 5, (2,), generator=gen).tolist()
        x[:, cy - h // 2: cy + h // 2 + 1, cx - w // 2: cx + w // 2 + 1] += 1.5
        box = torch.tensor([cx, cy, w, h], dtype=torch.float32)
    return x, box, defect


def print_job(gen, cfg):
    frames = []
    for layer in range(cfg["layers"]):
        has_defect = layer >= cfg["clean_layers"] and bool(torch.rand(1, generator=gen) < 0.5)
        frames.append(render_layer(gen, cfg["img"], has_defect))
    imgs = torch.stack([f[0] for f in frames])
    boxes = torch.stack([f[1] for f in frames])
    flags = torch.tensor([f[2] for f in frames])
    return imgs, boxes, flags


class LayerDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.cls_head = nn.Conv2d(32, 1, 1)
        self.box_head = nn.Conv2d(32, 4, 1)

    def forward(self, x):
        f = self.backbone(x)
        return self.cls_head(f).squeeze(1), self.box_head(f)


def assign_targets(boxes, flags, cfg):
    g = cfg["img"] // cfg["stride"]
    cls_t = torch.zeros(len(boxes), g, g)
    box_t = torch.zeros(len(boxes), 4, g, g)
    for i, (box, flag) in enumerate(zip(boxes, flags)):
        if not flag:
            continue
        gx, gy = int(box[0]) // cfg["stride"], int(box[1]) // cfg["stride"]
        cls_t[i, gy, gx] = 1.0
        box_t[i, :, gy, gx] = torch.stack([box[0] / cfg["stride"] - gx, box[1] / cfg["stride"] - gy,
                                           box[2].log(), box[3].log()])
    return cls_t, box_t


def detection_loss(cls_pred, box_pred, cls_t, box_t, cfg):
    pos = cls_t > 0
    num_pos = int(pos.sum())
    if num_pos <= 0:
        loss_cls = torch.tensor(0, dtype=torch.float32)
        loss_box = torch.tensor(0, dtype=torch.float32)
    else:
        loss_cls = F.binary_cross_entropy_with_logits(cls_pred, cls_t, reduction="sum") / num_pos
        pos_box = box_pred.permute(0, 2, 3, 1)[pos]
        tgt_box = box_t.permute(0, 2, 3, 1)[pos]
        loss_box = F.smooth_l1_loss(pos_box, tgt_box, reduction="sum") / num_pos
    return loss_cls, loss_box


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)
    imgs, boxes, flags = print_job(gen, CFG)
    detector = LayerDetector()
    optimizer = torch.optim.Adam(detector.parameters(), lr=CFG["lr"])
    for epoch in range(2):
        for start in range(0, CFG["layers"], CFG["batch"]):
            sl = slice(start, start + CFG["batch"])
            cls_t, box_t = assign_targets(boxes[sl], flags[sl], CFG)
            cls_pred, box_pred = detector(imgs[sl])
            loss_cls, loss_box = detection_loss(cls_pred, box_pred, cls_t, box_t, CFG)
            loss = loss_cls + CFG["box_weight"] * loss_box
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
