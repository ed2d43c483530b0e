"""The course's two chained networks, their optimizers and data.

The networks are the learner's subject, so notebooks show this code; it lives
here so every notebook, the playground and the tests train exactly the same thing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["Net", "Pair", "make_pair", "batches"]


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
    return Pair(
        n_1, n_2, torch.optim.Adam(n_1.parameters(), lr=lr), torch.optim.Adam(n_2.parameters(), lr=lr), nn.MSELoss()
    )


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
