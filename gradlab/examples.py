"""The course's two chained networks and the training orders it compares.

The networks are the learner's subject, so notebooks show this code; it lives
here so every notebook, the playground and the tests train exactly the same thing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = ["Net", "Pair", "ORDERS", "make_pair", "batches", "joint_step", "train", "TrainResult"]


def _int(value: object, name: str, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}; pass e.g. {name}={max(low, 1)}")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name} must be {bound}, got {value}; pass e.g. {name}={max(low, 1)}")
    return value


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}; pass {name}=True or {name}=False")
    return value


def _lr(value: object) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"lr must be a number, not {type(value).__name__}; pass e.g. lr=1e-3")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"lr must be a positive finite number, got {value!r}; pass e.g. lr=1e-3")
    return float(value)


_SEED_MIN, _SEED_MAX = -(2**63), 2**64 - 1


class Net(nn.Module):
    """``Linear(1, 10) -> ReLU -> Linear(10, 1) -> softmax over dim=1``.

    ``softmax=False`` drops the softmax (the fix for the silent softmax bug);
    ``detach_inside=True`` is the fix that circulates online: it detaches the
    first layer's output, which silently stops ``linear_1`` from learning.
    """

    def __init__(self, softmax: bool = True, detach_inside: bool = False) -> None:
        super().__init__()
        self.linear_1 = nn.Linear(1, 10)
        self.relu = nn.ReLU()
        self.linear_2 = nn.Linear(10, 1)
        self.softmax = softmax
        self.detach_inside = detach_inside

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear_1(x)
        if self.detach_inside:
            x = x.detach()
        x = self.relu(x)
        x = self.linear_2(x)
        if self.softmax:
            x = torch.softmax(x, dim=1)
        return x


@dataclass
class Pair:
    """Two networks, their Adam optimizers and the loss, as in the original loop."""

    n_1: Net
    n_2: Net
    opt_1: torch.optim.Optimizer
    opt_2: torch.optim.Optimizer
    criterion: nn.Module

    @property
    def names(self) -> dict[str, nn.Module]:
        return {"n_1": self.n_1, "n_2": self.n_2}


def make_pair(seed: int = 0, softmax: bool = True, detach_inside: bool = False, lr: float = 1e-3) -> Pair:
    """Fresh, seeded networks and optimizers (``Adam(lr=0.001)`` each, ``MSELoss``).

    ``detach_inside=True`` builds network 2 (only) with the circulating detach fix.
    """
    torch.manual_seed(_int(seed, "seed", _SEED_MIN, _SEED_MAX))
    softmax, detach_inside, lr = _flag(softmax, "softmax"), _flag(detach_inside, "detach_inside"), _lr(lr)
    n_1 = Net(softmax=softmax)
    n_2 = Net(softmax=softmax, detach_inside=detach_inside)
    return Pair(n_1, n_2, torch.optim.Adam(n_1.parameters(), lr=lr), torch.optim.Adam(n_2.parameters(), lr=lr),
                nn.MSELoss())


def batches(steps: int = 10, seed: int = 0, size: int = 10) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` batches of ``x = randn(size, 1)``, ``y = 2 * x``, from their own seeded generator."""
    _int(steps, "steps", 1)
    _int(size, "size", 1)
    g = torch.Generator().manual_seed(_int(seed, "seed", _SEED_MIN, _SEED_MAX))
    out = []
    for _ in range(steps):
        x = torch.randn(size, 1, generator=g)
        out.append((x, 2 * x))
    return out


ORDERS = {
    "original": "step 1 before backward 2 (the original loop)",
    "retain_graph": "original loop with loss_1.backward(retain_graph=True)",
    "detach_inside": "detach inside network 2 (the fix that circulates)",
    "detach_input": "n_2(pred_1.detach()): network 2 trains on network 1's output as data",
    "joint": "forward both, zero both, (loss_1 + loss_2).backward(), step both",
}


def joint_step(pair: Pair, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One iteration of the corrected order in which both losses train network 1.

    Forward both, zero both, one backward of the sum, then step both; returns
    ``(loss_1, loss_2)``. Example::

        >>> pair = make_pair(0)
        >>> x, y = batches(1)[0]
        >>> loss_1, loss_2 = joint_step(pair, x, y)
    """
    if not isinstance(pair, Pair):
        raise TypeError(f"pair must be a Pair, not {type(pair).__name__}; pass pair=gradlab.make_pair()")
    pred_1 = pair.n_1(x)
    pred_2 = pair.n_2(pred_1)
    pair.opt_1.zero_grad()
    pair.opt_2.zero_grad()
    loss_1 = pair.criterion(y, pred_1)
    loss_2 = pair.criterion(y, pred_2)
    (loss_1 + loss_2).backward()
    pair.opt_1.step()
    pair.opt_2.step()
    return loss_1, loss_2


@dataclass
class TrainResult:
    """Losses per step, and the error that stopped training (None if it ran to the end)."""

    order: str
    losses_1: list[float] = field(default_factory=list)
    losses_2: list[float] = field(default_factory=list)
    error: str | None = None
    pair: Pair | None = field(default=None, repr=False)


def train(order: str = "joint", steps: int = 10, seed: int = 0, softmax: bool = True, lr: float = 1e-3) -> TrainResult:
    """Run one of :data:`ORDERS` for ``steps`` iterations; errors are caught and returned.

    Example::

        >>> train("original", steps=1).error.startswith("Trying to backward")
        True
    """
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}; pass e.g. order='joint'")
    _int(steps, "steps", 1)
    pair = make_pair(seed, softmax=softmax, detach_inside=(order == "detach_inside"), lr=lr)
    n_1, n_2, opt_1, opt_2, criterion = pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion
    result = TrainResult(order, pair=pair)
    try:
        for x, y in batches(steps, seed):
            if order == "joint":
                loss_1, loss_2 = joint_step(pair, x, y)
            else:
                pred_1 = n_1(x)
                opt_1.zero_grad()
                loss_1 = criterion(y, pred_1)
                loss_1.backward(retain_graph=(order == "retain_graph"))
                opt_1.step()
                pred_2 = n_2(pred_1.detach() if order == "detach_input" else pred_1)
                opt_2.zero_grad()
                loss_2 = criterion(y, pred_2)
                loss_2.backward()
                opt_2.step()
            result.losses_1.append(loss_1.item())
            result.losses_2.append(loss_2.item())
    except RuntimeError as e:
        result.error = str(e)
    return result
