"""Skateboard trick recognition from a deck-mounted IMU, trained as two tasks on one encoder.

Source: https://discuss.pytorch.org/t/multi-task-learning-whats-the-difference-between-jointly-backward-and-backward-with-retain-graph-true/28162
The author has a multi-task graph (a shared part feeding two task branches) and asks whether
``(loss1 + loss2).backward()`` and ``loss1.backward(retain_graph=True); loss2.backward()`` do the
same thing; the answers say they accumulate the same gradients and that the joint backward is the
simpler choice. This script reduces the setting where the per-task form is written without
``retain_graph``: a trainer runs the shared encoder once per batch, then calls a per-task step
helper for each task head in turn, each doing its own backward before one optimizer step. The
second task's backward runs through the encoder graph the first one already freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CFG = {"channels": 6, "window": 64, "hidden": 32, "n_tricks": 5, "batch": 16, "steps": 4, "lr": 2e-3}
TASK_WEIGHTS = {"trick": 1.0, "landing": 0.5}


def make_batch(n):
    """Synthetic 6-axis IMU windows (accel + gyro) with a trick label and a landed / bailed flag."""
    x = torch.randn(n, CFG["channels"], CFG["window"])
    trick = torch.randint(0, CFG["n_tricks"], (n,))
    spin = x[:, 5].mean(dim=1)
    landed = (spin + 0.3 * torch.randn(n) > 0).float()
    return x, trick, landed


class IMUEncoder(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.conv1 = nn.Conv1d(c, h, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(h, h, kernel_size=5, padding=2, stride=2)
        self.norm = nn.BatchNorm1d(h)

    def forward(self, x):
        z = F.gelu(self.conv1(x))
        z = F.gelu(self.norm(self.conv2(z)))
        return z.mean(dim=-1)


class TrickTrainer:
    def __init__(self):
        self.encoder = IMUEncoder(CFG["channels"], CFG["hidden"])
        self.trick_head = nn.Linear(CFG["hidden"], CFG["n_tricks"])
        self.landing_head = nn.Sequential(nn.Linear(CFG["hidden"], 16), nn.ReLU(), nn.Linear(16, 1))
        params = list(self.encoder.parameters()) + list(self.trick_head.parameters())
        params += list(self.landing_head.parameters())
        self.optimizer = torch.optim.AdamW(params, lr=CFG["lr"])

    def task_losses(self, feats, trick, landed):
        trick_loss = F.cross_entropy(self.trick_head(feats), trick)
        landing_loss = F.binary_cross_entropy_with_logits(self.landing_head(feats).squeeze(-1), landed)
        return {"trick": trick_loss, "landing": landing_loss}

    def _task_step(self, name, loss):
        weighted = TASK_WEIGHTS[name] * loss
        weighted.backward()
        return weighted.item()

    def train_step(self, batch):
        x, trick, landed = batch
        self.optimizer.zero_grad()
        feats = self.encoder(x)
        losses = self.task_losses(feats, trick, landed)
        log = {name: self._task_step(name, loss) for name, loss in losses.items()}
        self.optimizer.step()
        return log


def main():
    trainer = TrickTrainer()
    for step in range(CFG["steps"]):
        log = trainer.train_step(make_batch(CFG["batch"]))
        print(f"step {step} " + " ".join(f"{k}={v:.4f}" for k, v in log.items()))


if __name__ == "__main__":
    main()
