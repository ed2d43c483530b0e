"""Adversarial debiasing with a learned, constrained adversary weight: a predictor, an adversary that
predicts the protected attribute from the predictor's output, and a non-negative multiplier updated by
dual ascent, kept positive through a cached ``ExpTransform``.

Reduces https://github.com/pyro-ppl/pyro/pull/2283 ("Patch Transform to unset cache on call to
backward"). A ``torch.distributions`` transform built with ``cache_size=1`` remembers its last
``(x, y)`` pair and returns the old ``y`` when it is called again with the same ``x`` object; the old
``y`` still points at the graph the first backward freed, so the second
``torch.autograd.grad(t(x), x)`` raised "Trying to backward through the graph a second time". Here
``x`` is the dual variable ``log_alpha`` (an ``nn.Parameter``, the same object every step, updated in
place by its optimizer), and ``cache_size=1`` was chosen as the transform docs suggest for stability.
The fairness setting (tabular income prediction with a demographic-parity adversary, Zhang et al.
style, with the adversary weight learned against a budget) is the writer's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions.transforms import ExpTransform

torch.manual_seed(0)

N, N_FEAT, BATCH, STEPS = 512, 10, 64, 6
BUDGET = 0.05  # how far below chance (ln 2) the adversary's loss may fall


def make_data():
    z = (torch.rand(N) < 0.4).float()  # protected attribute
    x = torch.randn(N, N_FEAT)
    x[:, 0] += 1.2 * z  # a proxy feature leaks the attribute
    logits = 1.5 * x[:, 1] - x[:, 2] + 0.8 * x[:, 0]
    y = (torch.rand(N) < torch.sigmoid(logits)).float()
    return x, y, z


class Predictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_FEAT, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Adversary(nn.Module):
    """Predicts the protected attribute from the predictor's probability (demographic parity)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, p):
        return self.net(p.unsqueeze(-1)).squeeze(-1)


x_all, y_all, z_all = make_data()
predictor = Predictor()
adversary = Adversary()
log_alpha = nn.Parameter(torch.tensor(0.0))
to_positive = ExpTransform()  # no cache: a fresh graph from log_alpha every step

opt_pred = torch.optim.Adam(predictor.parameters(), lr=1e-2)
opt_adv = torch.optim.Adam(adversary.parameters(), lr=1e-2)
opt_dual = torch.optim.SGD([log_alpha], lr=0.5)

for step in range(STEPS):
    idx = torch.randint(0, N, (BATCH,))
    x, y, z = x_all[idx], y_all[idx], z_all[idx]

    # 1. adversary: recover the protected attribute from the (frozen) predictions
    with torch.no_grad():
        p = torch.sigmoid(predictor(x))
    adv_loss = F.binary_cross_entropy_with_logits(adversary(p), z)
    opt_adv.zero_grad()
    adv_loss.backward()
    opt_adv.step()

    # 2. predictor: fit the label while making the adversary fail
    alpha = to_positive(log_alpha)
    logit = predictor(x)
    task_loss = F.binary_cross_entropy_with_logits(logit, y)
    leak_loss = F.binary_cross_entropy_with_logits(adversary(torch.sigmoid(logit)), z)
    pred_loss = task_loss - alpha.detach() * leak_loss
    opt_pred.zero_grad()
    pred_loss.backward()
    opt_pred.step()

    # 3. dual ascent: raise alpha while the adversary beats chance by more than the budget
    violation = (math.log(2.0) - leak_loss.detach()) - BUDGET
    dual_loss = -(alpha * violation)
    opt_dual.zero_grad()
    dual_loss.backward()
    opt_dual.step()
    print(f"step {step} task {task_loss.item():.4f} leak {leak_loss.item():.4f} alpha {alpha.item():.3f}")
