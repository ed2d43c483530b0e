"""Scoring yoga poses from 2-D keypoints against a judge's score.

Source: https://discuss.pytorch.org/t/understanding-autograd-relu-inplace-true/89031

The author was testing ResNet-like code built on a helper
residual_activation_inplace(x, residual, activation, inplace) that adds each residual
into x with `x += r` and then applies the activation with inplace=True, and asked how
autograd treats the in-place ReLU. The reduction uses that helper as written inside
a pose-scoring network: the trunk's tanh embedding is passed as x while the residual
branches are computed from it, so the helper's in-place add overwrites a tensor that
tanh and the branch layers saved for their backward.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

N_JOINTS = 17
HIDDEN = 48
BATCH = 32
EPOCHS = 4
STEPS_PER_EPOCH = 3


def residual_activation(x, residual, activation):
    for r in residual:
        x = x + r
    return activation(x)


class PoseScorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(N_JOINTS * 2, HIDDEN)
        self.branch_angles = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, HIDDEN))
        self.branch_balance = nn.Linear(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, keypoints):
        h = torch.tanh(self.embed(keypoints.flatten(1)))
        branches = [self.branch_angles(h), self.branch_balance(h)]
        h = residual_activation(h, branches, F.relu)
        return torch.sigmoid(self.head(h)).squeeze(1) * 10.0


def reference_pose():
    angles = torch.linspace(0, 3.1416, N_JOINTS)
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)


def sample_batch(ref):
    noise_level = torch.rand(BATCH, 1, 1)
    keypoints = ref.unsqueeze(0) + noise_level * torch.randn(BATCH, N_JOINTS, 2)
    judge_score = 10.0 * (1.0 - noise_level.view(-1)).clamp(0.0, 1.0)
    return keypoints, judge_score


def main():
    torch.manual_seed(3)
    ref = reference_pose()
    scorer = PoseScorer()
    opt = torch.optim.AdamW(scorer.parameters(), lr=1e-3, weight_decay=1e-4)

    def closure(keypoints, judge_score):
        opt.zero_grad()
        pred = scorer(keypoints)
        score_loss = F.smooth_l1_loss(pred, judge_score)
        score_loss.backward()
        return score_loss

    for epoch in range(EPOCHS):
        total = 0.0
        for _ in range(STEPS_PER_EPOCH):
            keypoints, judge_score = sample_batch(ref)
            total += closure(keypoints, judge_score).item()
            opt.step()
        print(f"epoch {epoch}: loss {total / STEPS_PER_EPOCH:.4f}")


if __name__ == "__main__":
    main()
