"""Ballet pose scoring: keypoint regressor plus a judge head on the centred pose.

Source: https://discuss.pytorch.org/t/unsafeviewbackward-in-grad-fn/25992/3
The forum thread asks what <UnsafeViewBackward> in a grad_fn means; the answer
quotes the autograd source: _unsafe_view differs from view in that its result is
not treated as a view for autograd, because in-place operations on tensors that
autograd treats as views need special handling. This script reduces that to a
ballet pose-scoring pipeline: a pose network regresses 2-D keypoints from a
dancer's silhouette descriptor, the keypoints are split into x and y with
unbind, each coordinate is centred on the hip midpoint and scaled by the torso
length in place, and a judge head scores the centred pose against the panel's
marks for the position (arabesque, attitude, developpe, ...).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(31)

N_JOINTS = 13      # head, shoulders, elbows, wrists, hips, knees, ankles
L_HIP, R_HIP, NECK = 7, 8, 0
cfg = {"descriptor": 40, "hidden": 64, "batch": 20, "rounds": 5, "lr_pose": 2e-3, "lr_judge": 5e-3}


class PoseNet(nn.Module):
    def __init__(self, d_in, hidden, joints):
        super().__init__()
        self.joints = joints
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, joints * 2))

    def forward(self, desc):
        return self.net(desc).view(-1, self.joints, 2)


class JudgeHead(nn.Module):
    def __init__(self, joints, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(joints * 2, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, centred):
        return 10.0 * torch.sigmoid(self.mlp(centred.flatten(1))).squeeze(1)


def centre_and_scale(keypoints):
    xs, ys = keypoints.unbind(-1)
    hip_x = 0.5 * (xs[:, L_HIP] + xs[:, R_HIP])
    hip_y = 0.5 * (ys[:, L_HIP] + ys[:, R_HIP])
    torso = ((xs[:, NECK] - hip_x) ** 2 + (ys[:, NECK] - hip_y) ** 2).sqrt().clamp_min(1e-3)
    xs -= hip_x.unsqueeze(1)
    ys -= hip_y.unsqueeze(1)
    xs /= torso.unsqueeze(1)
    ys /= torso.unsqueeze(1)
    return torch.stack([xs, ys], dim=-1)


def rehearsal_batch(batch):
    desc = torch.randn(batch, cfg["descriptor"])
    true_kp = torch.tanh(desc[:, : N_JOINTS * 2]).view(batch, N_JOINTS, 2)
    marks = 5.0 + 2.0 * torch.tanh(desc[:, -1]) + 0.2 * torch.randn(batch)
    return desc, true_kp, marks


def main():
    pose_net = PoseNet(cfg["descriptor"], cfg["hidden"], N_JOINTS)
    judge_head = JudgeHead(N_JOINTS, cfg["hidden"])
    opt_pose = torch.optim.Adam(pose_net.parameters(), lr=cfg["lr_pose"])
    opt_judge = torch.optim.Adam(judge_head.parameters(), lr=cfg["lr_judge"])

    for rnd in range(cfg["rounds"]):
        desc, true_kp, marks = rehearsal_batch(cfg["batch"])
        keypoints = pose_net(desc)
        pose_loss = F.mse_loss(keypoints, true_kp)
        score = judge_head(centre_and_scale(keypoints))
        score_loss = F.smooth_l1_loss(score, marks)

        opt_pose.zero_grad()
        opt_judge.zero_grad()
        (pose_loss + score_loss).backward()
        opt_pose.step()
        opt_judge.step()
        print(f"round {rnd}: keypoint mse {pose_loss.item():.4f}  score l1 {score_loss.item():.3f}")


if __name__ == "__main__":
    main()
