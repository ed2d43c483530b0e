"""Telescope night scheduling with a seeing estimate kept in a module buffer.

Source: https://github.com/pytorch/pytorch/issues/60733 -- a tensor the model creates
and keeps across iterations ends up with a ``grad_fn`` (there through a DDP change), and
the next iteration's backward fails because it runs into the previous iteration's graph.

Reduction: a target-priority scorer for an observatory keeps its running estimate of the
atmospheric seeing in a registered buffer and refreshes it every step with
``buffer.copy_(...)`` from the seeing head's prediction. ``copy_`` from a tensor that
requires grad gives the buffer a ``grad_fn``; the next night's forward reads the buffer,
and that night's backward walks into the previous night's freed graph. The report's
setting (DDP) differs; the telescope training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

N_TARGETS = 24       # candidate targets per night
TARGET_FEATS = 5     # altitude, airmass, moon distance, magnitude, priority class
SKY_FEATS = 4        # humidity, wind, temperature drop, cloud index
HIDDEN = 24
NIGHTS = 6


def simulate_night():
    targets = torch.randn(N_TARGETS, TARGET_FEATS)
    sky = torch.randn(SKY_FEATS)
    true_seeing = 0.8 + 0.3 * torch.sigmoid(sky[:1])
    quality = torch.sigmoid(targets[:, 0] - targets[:, 1] - true_seeing)
    return targets, sky, true_seeing, quality


class NightScheduler(nn.Module):
    def __init__(self):
        super().__init__()
        self.seeing_head = nn.Sequential(nn.Linear(SKY_FEATS + 1, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))
        self.target_net = nn.Sequential(nn.Linear(TARGET_FEATS + 1, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))
        self.register_buffer("last_seeing", torch.ones(1))

    def forward(self, targets, sky):
        seeing = F.softplus(self.seeing_head(torch.cat([sky, self.last_seeing])))
        cond = seeing.expand(targets.shape[0], 1)
        scores = self.target_net(torch.cat([targets, cond], dim=1)).squeeze(-1)
        self.last_seeing.copy_(seeing)
        return scores, seeing


def run_night(scheduler_net, opt, night):
    targets, sky, true_seeing, quality = night
    scores, seeing = scheduler_net(targets, sky)
    rank_loss = F.binary_cross_entropy_with_logits(scores, quality)
    seeing_loss = F.mse_loss(seeing, true_seeing)
    night_loss = rank_loss + 0.5 * seeing_loss
    opt.zero_grad()
    night_loss.backward()
    opt.step()
    return night_loss.item()


if __name__ == "__main__":
    scheduler_net = NightScheduler()
    opt = torch.optim.SGD(scheduler_net.parameters(), lr=0.05, momentum=0.9)
    log = []
    for n in range(NIGHTS):
        log.append(run_night(scheduler_net, opt, simulate_night()))
        print(f"night {n}: loss {log[-1]:.4f} seeing {scheduler_net.last_seeing.item():.3f}")
