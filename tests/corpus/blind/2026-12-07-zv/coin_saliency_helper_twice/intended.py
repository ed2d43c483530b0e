"""Coin grading: a shared trunk with a grade head (Sheldon-scale regression) and a die-variety head.

Source: https://github.com/yhhhli/BRECQ/issues/22 ("RuntimeError: Trying to backward through the
graph a second time when setting opt_mode to fisher_diag"). In BRECQ, the diagonal-Fisher mode runs a
helper (the layer-gradient saver's __call__) that calls loss.backward() to collect gradients for
weighting the reconstruction loss; the error is raised at that backward inside the helper.

This script reduces it to a coin-grading model whose per-sample loss weights come from a gradient
saliency helper: the helper backwards a head's loss to read the gradient on the shared features. The
training step calls the helper once per head on the same forward, then backwards the weighted total.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {"img_feats": 64, "width": 32, "varieties": 5, "batch": 24, "epochs": 2, "batches": 3, "lr": 1e-3}


def synth_coin_scans(n, hp):
    """Flattened obverse/reverse descriptors, a grade in [1, 70] scaled to [0, 1], a die-variety label."""
    x = torch.randn(n, hp["img_feats"])
    wear = torch.sigmoid(x[:, :8].sum(dim=1) / 3.0)
    grade = (1.0 - wear).unsqueeze(1)
    variety = (x[:, 8:13].argmax(dim=1)) % hp["varieties"]
    return x, grade, variety


class Trunk(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(hp["img_feats"], hp["width"]), nn.GELU(), nn.Linear(hp["width"], hp["width"]))

    def forward(self, x):
        return self.net(x)


def sample_saliency(feats, head, target, loss_fn):
    """Per-sample importance: norm of the head loss's gradient on the shared features, mean 1."""
    loss = loss_fn(head(feats), target)
    (g,) = torch.autograd.grad(loss, feats, retain_graph=True)
    w = g.norm(dim=1)
    return (w / w.mean()).detach()


def grade_loss_fn(pred, grade):
    return F.smooth_l1_loss(pred, grade, reduction="sum")


def variety_loss_fn(logits, variety):
    return F.cross_entropy(logits, variety, reduction="sum")


def train_step(trunk, grade_head, variety_head, optimizer, x, grade, variety):
    optimizer.zero_grad()
    feats = trunk(x)
    w_grade = sample_saliency(feats, grade_head, grade, grade_loss_fn)
    w_variety = sample_saliency(feats, variety_head, variety, variety_loss_fn)
    per_grade = F.smooth_l1_loss(grade_head(feats), grade, reduction="none").squeeze(1)
    per_variety = F.cross_entropy(variety_head(feats), variety, reduction="none")
    total_loss = (w_grade * per_grade).mean() + 0.5 * (w_variety * per_variety).mean()
    total_loss.backward()
    optimizer.step()
    return total_loss.item()


def main():
    torch.manual_seed(2024)
    hp = HPARAMS
    x, grade, variety = synth_coin_scans(hp["batch"] * hp["batches"], hp)
    trunk = Trunk(hp)
    grade_head = nn.Linear(hp["width"], 1)
    variety_head = nn.Linear(hp["width"], hp["varieties"])
    params = list(trunk.parameters()) + list(grade_head.parameters()) + list(variety_head.parameters())
    optimizer = torch.optim.AdamW(params, lr=hp["lr"], weight_decay=1e-4)
    for epoch in range(hp["epochs"]):
        for b in range(hp["batches"]):
            sl = slice(b * hp["batch"], (b + 1) * hp["batch"])
            loss = train_step(trunk, grade_head, variety_head, optimizer, x[sl], grade[sl], variety[sl])
            print(f"epoch {epoch} batch {b}: loss {loss:.4f}")


if __name__ == "__main__":
    main()
