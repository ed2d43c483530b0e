"""Judo throw recognition from pose sequences, a small student distilled from a frozen teacher.

Source: https://discuss.pytorch.org/t/knowledge-distillation-nans-when-combining-ce-aux-mse-in-the-same-backward-batchnorm-state-mismatch/219889
("[Knowledge Distillation]: NaNs when combining CE + aux MSE in the same backward"). The author
distils a student ResNet from a frozen teacher for speaker verification with
L = a * CE(logits, y) + (1 - a) * MSE(student features, teacher features), both terms from one
student forward. Chasing NaNs and "Saved tensors..." errors through the BatchNorm layers, they
split the optimisation into two backward calls, one for the CE term and one for the feature
MSE, the first with ``retain_graph=True``.

The script keeps that split in a judo setting: a student network (per-frame MLP with
BatchNorm over 2-D body keypoints, temporal pooling) classifies the throw (seoi-nage,
uchi-mata, o-soto-gari, ...) and exposes its mid and late features; a frozen teacher gives
target features. The training step calls a classification pass that backwards the CE term and
then a feature pass that backwards the distillation term, both over the one student forward,
without ``retain_graph``. The loss the author wrote down is the weighted sum of the two.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {
    "seed": 31,
    "n_clips": 64,
    "frames": 16,
    "joints": 17,
    "n_throws": 6,
    "student_width": 32,
    "teacher_width": 64,
    "batch": 16,
    "epochs": 3,
    "lr": 2e-3,
    "alpha": 0.7,
}

THROWS = ["seoi-nage", "uchi-mata", "o-soto-gari", "harai-goshi", "tai-otoshi", "o-uchi-gari"]


def synth_clips(cfg):
    """Keypoint tracks of tori: each throw bends the trunk and sweeps a leg along its own path."""
    n, t, j = cfg["n_clips"], cfg["frames"], cfg["joints"]
    labels = torch.randint(0, cfg["n_throws"], (n,))
    rest = torch.randn(j, 2) * 0.3
    time = torch.linspace(0, 1, t).view(1, t, 1, 1)
    direction = torch.randn(cfg["n_throws"], j, 2) * 0.5
    motion = direction[labels].unsqueeze(1) * torch.sin(time * torch.pi)
    clips = rest.view(1, 1, j, 2) + motion + 0.05 * torch.randn(n, t, j, 2)
    return clips.reshape(n, t, j * 2), labels


class PoseNet(nn.Module):
    def __init__(self, in_dim, width, n_classes):
        super().__init__()
        self.frame_mid = nn.Sequential(nn.Linear(in_dim, width), nn.BatchNorm1d(width), nn.ReLU())
        self.frame_late = nn.Sequential(nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU())
        self.classifier = nn.Linear(width, n_classes)

    def forward(self, clips):
        b, t, d = clips.shape
        mid = self.frame_mid(clips.reshape(b * t, d))
        late = self.frame_late(mid)
        pooled = late.view(b, t, -1).mean(dim=1)
        feats = {"mid": mid.view(b, t, -1).mean(dim=1), "late": pooled}
        return self.classifier(pooled), feats


class FeatureAdapter(nn.Module):
    """Projects student features to the teacher width for the feature-matching term."""

    def __init__(self, s_width, t_width):
        super().__init__()
        self.mid = nn.Linear(s_width, t_width)
        self.late = nn.Linear(s_width, t_width)

    def forward(self, feats):
        return {"mid": self.mid(feats["mid"]), "late": self.late(feats["late"])}


class DistillStep:
    def __init__(self, student, adapter, teacher, optimizer, alpha):
        self.student = student
        self.adapter = adapter
        self.teacher = teacher
        self.optimizer = optimizer
        self.alpha = alpha

    def classification_pass(self, logits, labels):
        ce_loss = self.alpha * F.cross_entropy(logits, labels)
        ce_loss.backward()
        return ce_loss

    def feature_pass(self, feats, clips):
        with torch.no_grad():
            _, t_feats = self.teacher(clips)
        s_feats = self.adapter(feats)
        mse = 0.5 * F.mse_loss(s_feats["mid"], t_feats["mid"]) + 0.5 * F.mse_loss(s_feats["late"], t_feats["late"])
        distill_loss = (1 - self.alpha) * mse
        distill_loss.backward()
        return distill_loss

    def __call__(self, clips, labels):
        self.optimizer.zero_grad()
        logits, feats = self.student(clips)
        ce_loss = self.classification_pass(logits, labels)
        distill_loss = self.feature_pass(feats, clips)
        self.optimizer.step()
        return ce_loss.item(), distill_loss.item()


def main(cfg):
    torch.manual_seed(cfg["seed"])
    clips, labels = synth_clips(cfg)
    in_dim = cfg["joints"] * 2
    teacher = PoseNet(in_dim, cfg["teacher_width"], cfg["n_throws"])
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    student = PoseNet(in_dim, cfg["student_width"], cfg["n_throws"])
    adapter = FeatureAdapter(cfg["student_width"], cfg["teacher_width"])
    student_opt = torch.optim.AdamW(list(student.parameters()) + list(adapter.parameters()), lr=cfg["lr"])
    step = DistillStep(student, adapter, teacher, student_opt, cfg["alpha"])

    for epoch in range(cfg["epochs"]):
        perm = torch.randperm(cfg["n_clips"])
        ce_sum = kd_sum = 0.0
        for start in range(0, cfg["n_clips"], cfg["batch"]):
            idx = perm[start : start + cfg["batch"]]
            ce, kd = step(clips[idx], labels[idx])
            ce_sum += ce
            kd_sum += kd
        print(f"epoch {epoch}: ce {ce_sum:.4f} distill {kd_sum:.4f}")


if __name__ == "__main__":
    main(CFG)
