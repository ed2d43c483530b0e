"""Karate kata scoring from pose sequences, with two in-place ReLUs back to back.

Source: https://github.com/pytorch/pytorch/issues/34429 -- "Why do PyTorch not support
two successive inplace ReLU operations?": conv -> BatchNorm -> ReLU(inplace=True) ->
ReLU(inplace=True), and ``backward()`` fails with "one of the variables needed for
gradient computation has been modified by an inplace operation" (the first ReLU saves its
output, which the second ReLU overwrites).

Reduction: a kata scorer whose temporal conv block ends in ``nn.ReLU(inplace=True)``; the
panel-pooling helper then applies its own in-place rectification (``F.relu_``) to the
block's output before pooling the judges' views, which reproduces the two successive
in-place ReLUs of the report in a less obvious place. The scoring setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

JOINTS = 17 * 2          # 2-D keypoints per frame
FRAMES = 32
CHANNELS = 48
N_JUDGES = 5
BATCH = 12


def load_kata_batch():
    poses = torch.randn(BATCH, JOINTS, FRAMES)
    judge_marks = 6.0 + 3.0 * torch.rand(BATCH, N_JUDGES)
    return poses, judge_marks


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel_size=5, padding=2, bias=False)
        self.bn = nn.BatchNorm1d(cout)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


def pool_panel(features, judge_proj):
    features = F.relu(features)
    pooled = features.mean(dim=-1)
    return judge_proj(pooled)


class KataScorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = TemporalBlock(JOINTS, CHANNELS)
        self.block2 = TemporalBlock(CHANNELS, CHANNELS)
        self.judges = nn.Linear(CHANNELS, N_JUDGES)

    def forward(self, poses):
        h = self.block2(self.block1(poses))
        return 8.0 + pool_panel(h, self.judges)


def panel_loss(pred, marks):
    # the official score drops the highest and lowest judge
    trimmed_pred = pred.sort(dim=1).values[:, 1:-1].mean(dim=1)
    trimmed_true = marks.sort(dim=1).values[:, 1:-1].mean(dim=1)
    return F.smooth_l1_loss(pred, marks) + F.mse_loss(trimmed_pred, trimmed_true)


scorer = KataScorer()
judge_opt = torch.optim.AdamW(scorer.parameters(), lr=1e-3, weight_decay=1e-4)

for epoch in range(5):
    poses, marks = load_kata_batch()
    pred = scorer(poses)
    kata_loss = panel_loss(pred, marks)
    judge_opt.zero_grad()
    kata_loss.backward()
    judge_opt.step()
    print(f"epoch {epoch} kata_loss {kata_loss.item():.4f}")
