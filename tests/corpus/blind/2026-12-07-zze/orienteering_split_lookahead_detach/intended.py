"""Orienteering route choice: predict each runner's split time on every leg of a course from the
leg's route options, feeding the previous leg's predicted split back in as a pace/fatigue input,
with a one-leg lookahead smoothness term.

Source: https://github.com/pytorch/pytorch/issues/49236 ("detach_() does not perform in-place
detachment from the computation graph"). The reporter trains step by step where "the loss at time t
also depends on the model output at time t + c" and wanted to cut the graph by calling ``detach_()``
on an earlier model output; ``detach_()`` on a tensor that already has children leaves those
children's graph in place. The reduction: at leg k the model also predicts leg k+1 (the lookahead),
the loss is back-propagated and stepped per leg, then the leg-k prediction is ``detach_()``-ed and the
lookahead becomes the next leg's carried prediction. That prediction's graph was freed by the
previous backward, so the next leg's backward fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

N_RUNNERS = 12
N_LEGS = 10
LEG_FEATURES = 6  # straight-line distance, climb, runnability, path share, route options, control difficulty
SMOOTH_WEIGHT = 0.3


def build_course():
    legs = torch.rand(N_LEGS, N_RUNNERS, LEG_FEATURES)
    ability = torch.rand(N_RUNNERS, 1) * 0.5 + 0.75
    base = 3.0 * legs[..., 0:1] + 2.0 * legs[..., 1:2] - 1.0 * legs[..., 2:3] * legs[..., 3:4]
    fatigue = torch.linspace(0.0, 0.6, N_LEGS).view(N_LEGS, 1, 1)
    splits = ability * (base + fatigue) + 0.05 * torch.randn(N_LEGS, N_RUNNERS, 1)
    return legs, splits


class LegSplitModel(nn.Module):
    """Scores the route options of a leg and turns them into a split, given the previous split."""

    def __init__(self, n_features, hidden=32):
        super().__init__()
        self.route = nn.Sequential(nn.Linear(n_features, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.pace = nn.Linear(1, hidden)
        self.head = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, leg, prev_split):
        return self.head(self.route(leg) + self.pace(prev_split))


def leg_objective(pred, lookahead, target):
    fit = F.smooth_l1_loss(pred, target)
    smooth = (lookahead - pred).pow(2).mean()
    return fit + SMOOTH_WEIGHT * smooth


def run_course(model, opt, legs, splits):
    prev = torch.zeros(N_RUNNERS, 1)
    losses = []
    for k in range(N_LEGS - 1):
        pred = model(legs[k], prev)
        lookahead = model(legs[k + 1], pred)
        split_loss = leg_objective(pred, lookahead, splits[k])
        opt.zero_grad()
        split_loss.backward()
        opt.step()
        prev = pred.detach()
        losses.append(split_loss.item())
    return losses


def main():
    legs, splits = build_course()
    model = LegSplitModel(LEG_FEATURES)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for season in range(3):
        losses = run_course(model, opt, legs, splits)
        print(f"season {season}: mean leg loss {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
