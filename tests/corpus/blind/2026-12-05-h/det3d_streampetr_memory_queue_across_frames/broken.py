"""Streaming multi-view 3D object detection with a temporal memory queue (StreamPETR-style).

Reduced from https://github.com/exiawsh/StreamPETR/issues/63: the author trains StreamPETR in
stream (online) mode, one frame per iteration of a scene, and asks about the ``.detach()``
calls in the head's ``post_update_memory``. The head keeps a queue of the top-k decoder query
embeddings, reference points and velocities from past frames; each frame's object queries
attend to that memory. Synthetic 6-camera feature maps stand in for nuScenes images.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

EMBED = 32
NUM_QUERY = 12
MEMORY_LEN = 16
TOPK = 4
NUM_CLASSES = 3
CAMS = 6


def topk_gather(feat, topk_indexes):
    view_shape = [1 for _ in range(feat.dim())]
    view_shape[:2] = topk_indexes.shape[:2]
    idx = topk_indexes.view(*view_shape).repeat(1, 1, *feat.shape[2:])
    return torch.gather(feat, 1, idx)


def memory_refresh(memory, prev_exists):
    view_shape = [1 for _ in range(memory.dim())]
    return memory * prev_exists.view(-1, *view_shape[1:])


class ImageBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, EMBED, 3, stride=2, padding=1),
        )

    def forward(self, imgs):  # (B, N, 3, H, W)
        b, n = imgs.shape[:2]
        feats = self.conv(imgs.flatten(0, 1))
        return feats.view(b, n, EMBED, -1).permute(0, 1, 3, 2).reshape(b, -1, EMBED)


class StreamPETRHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.query_embedding = nn.Embedding(NUM_QUERY, EMBED)
        self.reference_points = nn.Embedding(NUM_QUERY, 3)
        self.memory_embed = nn.Linear(EMBED, EMBED)
        self.query_pos = nn.Linear(3, EMBED)
        self.time_embedding = nn.Linear(1, EMBED)
        self.temporal_attn = nn.MultiheadAttention(EMBED, 4, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(EMBED, 4, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(EMBED, 64), nn.ReLU(), nn.Linear(64, EMBED))
        self.norm = nn.LayerNorm(EMBED)
        self.cls_branch = nn.Linear(EMBED, NUM_CLASSES)
        self.reg_branch = nn.Linear(EMBED, 5)  # center (3) + velocity (2)
        self.reset_memory()

    def reset_memory(self):
        self.memory_embedding = None
        self.memory_reference_point = None
        self.memory_timestamp = None
        self.memory_velo = None

    def pre_update_memory(self, data):
        x = data["prev_exists"]
        b = x.size(0)
        if self.memory_embedding is None:
            self.memory_embedding = x.new_zeros(b, MEMORY_LEN, EMBED)
            self.memory_reference_point = x.new_zeros(b, MEMORY_LEN, 3)
            self.memory_timestamp = x.new_zeros(b, MEMORY_LEN, 1)
            self.memory_velo = x.new_zeros(b, MEMORY_LEN, 2)
        else:
            self.memory_timestamp = self.memory_timestamp + data["timestamp"].view(-1, 1, 1)
            self.memory_timestamp = memory_refresh(self.memory_timestamp[:, :MEMORY_LEN], x)
            self.memory_reference_point = memory_refresh(self.memory_reference_point[:, :MEMORY_LEN], x)
            self.memory_embedding = memory_refresh(self.memory_embedding[:, :MEMORY_LEN], x)
            self.memory_velo = memory_refresh(self.memory_velo[:, :MEMORY_LEN], x)

    def post_update_memory(self, data, all_cls_scores, all_bbox_preds, outs_dec):
        rec_reference_points = all_bbox_preds[..., :3]
        rec_velo = all_bbox_preds[..., -2:]
        rec_memory = outs_dec
        rec_score = all_cls_scores.sigmoid().topk(1, dim=-1).values[..., 0:1]
        rec_timestamp = torch.zeros_like(rec_score)

        # topk proposals
        _, topk_indexes = torch.topk(rec_score, TOPK, dim=1)
        rec_timestamp = topk_gather(rec_timestamp, topk_indexes)
        rec_reference_points = topk_gather(rec_reference_points, topk_indexes)
        rec_memory = topk_gather(rec_memory, topk_indexes)
        rec_velo = topk_gather(rec_velo, topk_indexes)

        self.memory_embedding = torch.cat([rec_memory, self.memory_embedding], dim=1)
        self.memory_timestamp = torch.cat([rec_timestamp, self.memory_timestamp], dim=1)
        self.memory_reference_point = torch.cat([rec_reference_points, self.memory_reference_point], dim=1)
        self.memory_velo = torch.cat([rec_velo, self.memory_velo], dim=1)
        self.memory_timestamp = self.memory_timestamp - data["timestamp"].view(-1, 1, 1)

    def forward(self, img_feats, data):
        self.pre_update_memory(data)
        b = img_feats.size(0)
        memory = self.memory_embed(img_feats)

        tgt = self.query_embedding.weight.unsqueeze(0).expand(b, -1, -1)
        query_pos = self.query_pos(self.reference_points.weight.sigmoid()).unsqueeze(0)
        temp_memory = self.memory_embedding[:, :MEMORY_LEN]
        temp_pos = self.query_pos(self.memory_reference_point[:, :MEMORY_LEN]) + self.time_embedding(
            self.memory_timestamp[:, :MEMORY_LEN]
        )

        q = tgt + query_pos
        attn, _ = self.temporal_attn(q, temp_memory + temp_pos, temp_memory)
        h = self.norm(tgt + attn)
        attn, _ = self.cross_attn(h + query_pos, memory, memory)
        h = self.norm(h + attn)
        outs_dec = self.norm(h + self.ffn(h))

        all_cls_scores = self.cls_branch(outs_dec)
        all_bbox_preds = self.reg_branch(outs_dec)
        all_bbox_preds = torch.cat(
            [all_bbox_preds[..., :3].sigmoid(), all_bbox_preds[..., 3:]], dim=-1
        )

        self.post_update_memory(data, all_cls_scores, all_bbox_preds, outs_dec)
        return all_cls_scores, all_bbox_preds


class Petr3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.img_backbone = ImageBackbone()
        self.pts_bbox_head = StreamPETRHead()

    def forward_train(self, imgs, data, gt_labels, gt_boxes):
        feats = self.img_backbone(imgs)
        cls_scores, bbox_preds = self.pts_bbox_head(feats, data)
        # a fixed one-to-one assignment stands in for the Hungarian matcher
        target = F.one_hot(gt_labels, NUM_CLASSES).float()
        loss_cls = F.binary_cross_entropy_with_logits(cls_scores, target)
        loss_bbox = F.l1_loss(bbox_preds, gt_boxes)
        return {"loss_cls": loss_cls, "loss_bbox": 0.25 * loss_bbox}


def make_scene(num_frames, batch=2):
    frames = []
    for t in range(num_frames):
        frames.append(
            {
                "img": torch.randn(batch, CAMS, 3, 16, 16),
                "prev_exists": torch.full((batch,), float(t > 0)),
                "timestamp": torch.full((batch,), 0.5),
                "gt_labels": torch.randint(0, NUM_CLASSES, (batch, NUM_QUERY)),
                "gt_boxes": torch.rand(batch, NUM_QUERY, 5),
            }
        )
    return frames


def main():
    model = Petr3D()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.01)
    scene = make_scene(num_frames=6)
    model.train()
    for it, frame in enumerate(scene):
        losses = model.forward_train(
            frame["img"], {"prev_exists": frame["prev_exists"], "timestamp": frame["timestamp"]},
            frame["gt_labels"], frame["gt_boxes"],
        )
        loss = sum(losses.values())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 35.0)
        optimizer.step()
        print(f"iter {it}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
