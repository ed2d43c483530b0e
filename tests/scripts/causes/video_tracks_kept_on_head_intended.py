"""The tracks kept as values from frame to frame: stored without the graph of the frame that found them."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(12)


class TrackHead(nn.Module):
    def __init__(self, dim=8, keep=3):
        super().__init__()
        self.keep = keep
        self.query = nn.Linear(dim, dim)
        self.box = nn.Linear(dim, 4)
        self.clear_tracks()

    def clear_tracks(self):
        self.track_feats = None
        self.track_boxes = None

    def prepare(self, n):
        if self.track_feats is None:
            self.track_feats = torch.zeros(self.keep, self.query.in_features)
            self.track_boxes = torch.zeros(self.keep, 4)

    def update_tracks(self, feats, boxes):
        best = boxes[:, 0].topk(self.keep).indices
        self.track_feats = (0.5 * self.track_feats + 0.5 * feats[best]).detach()
        self.track_boxes = boxes[best].detach()

    def forward(self, feats):
        self.prepare(feats.shape[0])
        queries = torch.cat([self.query(feats), self.query(self.track_feats) + self.track_boxes.sum(1, keepdim=True)])
        boxes = self.box(torch.relu(queries))
        self.update_tracks(feats, boxes[: feats.shape[0]])
        return boxes


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(6, 8)
        self.head = TrackHead()

    def forward(self, frame):
        return self.head(torch.relu(self.backbone(frame)))


detector = Detector()
sgd = torch.optim.SGD(detector.parameters(), lr=0.05)
for frame_index in range(4):
    frame = torch.randn(5, 6)
    target = torch.randn(8, 4)
    box_loss = F.smooth_l1_loss(detector(frame), target)
    sgd.zero_grad()
    box_loss.backward()
    sgd.step()
