"""The course's two chained networks, their optimizers and data.

The networks are the learner's subject, so notebooks show this code; it lives
here so every notebook, the playground and the tests train exactly the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["Net", "Pair", "make_pair", "batches", "TARGETS"]


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

    ``softmax=False`` leaves the softmax out; ``detach_inside=True`` detaches the
    first layer's output inside ``forward``. Notebooks 05 and 08 use them.
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
        """``{"n_1": n_1, "n_2": n_2}``: what gradlab calls each network's parameters."""
        return {"n_1": self.n_1, "n_2": self.n_2}

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Each network's parameters as one vector, a copy: ``{"n_1": ..., "n_2": ...}``.

        Example::

            >>> pair = make_pair(0)
            >>> {name: list(v.shape) for name, v in pair.snapshot().items()}
            {'n_1': [31], 'n_2': [31]}
        """
        return {name: nn.utils.parameters_to_vector(m.parameters()).detach().clone() for name, m in self.names.items()}


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


#: The targets :func:`batches` knows by name: ``y`` as a function of ``x``.
#: ``"2x"`` is the course's task; ``"2|x|"`` is a V, the same size as ``2x`` but
#: not monotone: a network must bend its input at 0 to fit it.
TARGETS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "2x": lambda x: 2 * x,
    "2|x|": lambda x: 2 * x.abs(),
}


def _target(target: object) -> Callable[[torch.Tensor], torch.Tensor]:
    if isinstance(target, str):
        if target not in TARGETS:
            raise ValueError(f"target must be one of {sorted(TARGETS)} or a function of x, got {target!r}")
        return TARGETS[target]
    if not callable(target):
        raise TypeError(
            f"target must be a name from {sorted(TARGETS)} or a function of x, not {type(target).__name__}; "
            "pass e.g. target='2|x|' or target=lambda x: torch.sin(2 * x)"
        )
    return target


def _targets_of(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    try:
        y = f(x)
    except Exception as e:  # the learner's function: say which argument failed, and what it should be
        kind = TypeError if isinstance(e, TypeError) else ValueError
        raise kind(
            f"target(x) raised {type(e).__name__}: {e}; target must be a function of one tensor x of shape "
            f"{list(x.shape)} that returns y of the same shape, e.g. target=lambda x: torch.sin(2 * x)"
        ) from e
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"target(x) must return a tensor, not {type(y).__name__}; e.g. target=lambda x: 2 * x.abs()")
    if y.shape != x.shape or not y.is_floating_point():
        raise ValueError(
            f"target(x) must return a float tensor of x's shape {list(x.shape)}, got {y.dtype} {list(y.shape)}; "
            "apply it elementwise, e.g. target=lambda x: torch.sin(2 * x)"
        )
    return y


def batches(
    steps: int = 10, seed: int = 0, size: int = 10, target: str | Callable[[torch.Tensor], torch.Tensor] = "2x"
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` batches of ``x = randn(size, 1)`` and ``y = target(x)``, from their own seeded generator.

    ``target`` is a name from :data:`TARGETS` (``"2x"``, the default, or
    ``"2|x|"``) or a function of ``x`` returning a float tensor of its shape.
    The ``x`` are the same whatever the target. Example::

        >>> x, y = batches(1, target="2|x|")[0]
        >>> torch.equal(y, 2 * x.abs()), torch.equal(x, batches(1)[0][0])
        (True, True)
    """
    _int(steps, "steps", 1)
    _int(size, "size", 1)
    f = _target(target)
    g = torch.Generator().manual_seed(_int(seed, "seed", _SEED_MIN, _SEED_MAX))
    out = []
    for _ in range(steps):
        x = torch.randn(size, 1, generator=g)
        out.append((x, _targets_of(f, x)))
    return out
