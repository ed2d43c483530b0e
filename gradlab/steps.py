"""Optimizer steps and ``zero_grad()`` calls a tracker saw, and the steps that cannot train a parameter.

One job: :class:`Steps` keeps the latest :class:`OptimizerCall` records (by ids:
no tensor or optimizer kept alive), the versions and fingerprints of the saved
parameters a running step may write (NOTE [Optimizer steps]), and which
parameters were already reported by :class:`gradlab.UnusedStepWarning`.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from . import fingerprint
from .i18n import _, _t
from .location import Location, user_location
from .names import Namer
from .notices import UnusedStepWarning
from .saved import Packed

__all__ = ["OptimizerCall", "Steps"]


@dataclass(frozen=True)
class OptimizerCall:
    """One ``zero_grad()`` or ``step()`` the tracker saw, by ids only (it keeps no tensor or optimizer alive).

    ``after`` is how many backward calls had run before it (so it comes after the
    backward call with ``index == after - 1``); ``owner`` the id of the optimizer
    (or of the ``nn.Module`` whose ``zero_grad()`` ran), ``params`` the ids of the
    parameters it holds; ``location`` the user's line.
    """

    kind: Literal["zero_grad", "step"]
    after: int
    owner: int
    params: frozenset[int]
    location: Location | None


#: The saved records a running step may write, each with its version, and their fingerprints before it.
Watch = tuple[list[tuple[Packed, int]], list[int | None]]


def _parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for g in optimizer.param_groups for p in g["params"]]


# NOTE [Optimizer steps]: an optimizer step runs ~20 torch calls per parameter.
# The step hooks compare the watched parameters' versions before and after the
# step instead, and the in-place wrappers pass straight through during a step.
#
# NOTE [Closure steps]
# optimizer.step(closure) calls the closure inside the step, and the closure runs the
# user's forward, zero_grad() and backward: Lightning's automatic optimization (its
# manual optimization passes a closure too), LBFGS. The step pre hook runs before the
# closure, when the gradients are not there yet. So the recorder replaces the closure
# by one that records like code outside a step (in-place writes, cuts, zero_grad() are
# the user's) and begins the step (Steps.started) when the closure has returned: then
# the gradients Steps.unused checks are the ones the step uses, the parameters are
# fingerprinted before the update, and the record has the step after the closure's
# backward, as it ran. A closure that raises (a failing backward) leaves no step in the
# record: none ran. A closure the step calls again (LBFGS) begins nothing more.
class Steps:
    """The optimizer steps and ``zero_grad()`` calls seen, the steps running now, the parameters reported."""

    HISTORY = 64

    def __init__(self) -> None:
        self.in_step = 0  # optimizer steps running now (the in-place wrappers pass straight through)
        self.calls: deque[OptimizerCall] = deque(maxlen=4 * self.HISTORY)  # zero_grad() and step()
        self.ends: deque[tuple[int, Location | None, str]] = deque(maxlen=self.HISTORY)  # (event, line, class)
        self._open: dict[int, Watch] = {}  # id(optimizer) -> what its running step may write
        self._counts: dict[int, int] = {}  # id(optimizer) -> steps begun
        self._reported: set[int] = set()  # ids of parameters a note named already

    def zero_grad(self, owner: torch.optim.Optimizer | nn.Module, backwards: int) -> None:
        """``zero_grad()`` of an optimizer or a module, after ``backwards`` backward calls: which parameters."""
        if isinstance(owner, nn.Module):
            params = frozenset(map(id, owner.parameters()))
        else:
            params = frozenset(map(id, _parameters(owner)))
        self.calls.append(OptimizerCall("zero_grad", backwards, id(owner), params, user_location()))

    def started(
        self, optimizer: torch.optim.Optimizer, backwards: int, watch: Callable[[list[torch.Tensor]], Watch] | None
    ) -> tuple[list[torch.Tensor], bool]:
        """A step begins: record it and what it may write (``watch``, None when nothing saved is alive).

        Returns the parameters and whether to check them for all-zero gradients
        (at the optimizer's steps 1, 2, 4, 8, ...: a reduction per parameter costs more).
        """
        params = _parameters(optimizer)
        key = id(optimizer)
        loc = user_location()
        self.calls.append(OptimizerCall("step", backwards, key, frozenset(map(id, params)), loc))
        self._open[key] = watch(params) if watch is not None else ([], [])
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        return params, count & (count - 1) == 0

    def finished(self, optimizer: torch.optim.Optimizer, event: int) -> tuple[Watch, Location | None]:
        """A step ends (``event``: the log's length then): what it may have written, and the user's line."""
        watched = self._open.pop(id(optimizer), ([], []))
        loc = user_location()
        self.ends.append((event, loc, type(optimizer).__name__))
        return watched, loc

    def unused(
        self,
        optimizer: torch.optim.Optimizer,
        params: list[torch.Tensor],
        zeros: bool,
        namer: Callable[[], Namer],
    ) -> list[tuple[str, str, Location | None]]:
        """The notes on a step that cannot train some parameters (each parameter once): (labels, note, line).

        ``.grad is None`` is checked at every step; all-zero gradients only when ``zeros``.
        """
        missing, zero = [], []
        reported = self._reported
        for p in params:
            if not p.requires_grad or id(p) in reported:
                continue
            g = p.grad
            if g is None:
                missing.append(p)
            elif zeros and g.numel() and not _any_nonzero(g):
                zero.append(p)
        if not missing and not zero:
            return []
        names = namer()
        loc = user_location()
        where = _t(" at {where}", where=loc) if loc else ""
        notes = []
        for found, what in ((missing, _("no gradient (.grad is None)")), (zero, _("an all-zero gradient"))):
            if not found:
                continue
            reported.update(id(p) for p in found)
            labels = ", ".join(names.name_of(p) or _t("parameter {shape}", shape=list(p.shape)) for p in found)
            note = _t(
                "{step}{where}: {labels} had {what}, so this step's gradient cannot train them (momentum from earlier steps "
                "may still move them).",
                step=f"{type(optimizer).__name__}.step()",
                where=where,
                labels=labels,
                what=what,
            )
            notes.append((labels, note, loc))
        return notes

    def clear(self) -> None:
        self._open.clear()
        self.calls.clear()
        self.in_step = 0


def _any_nonzero(g: torch.Tensor) -> bool:
    """Whether gradient ``g`` has a non-zero element (a sparse one: among its stored values)."""
    d = g.detach()
    if d.layout != torch.strided:  # sparse gradients (nn.Embedding(sparse=True)) have no ne() kernel
        d = d.coalesce().values() if d.is_sparse else d.values()
    return bool(d.ne(0).any())


def watch_step(watched: list[tuple[Packed, int]]) -> Watch:
    """What a step may write: the watched records, and their fingerprints (NOTE [Fused steps])."""
    # NOTE [Fused steps]: a fused kernel writes every parameter without moving its
    # version counter; fingerprints of the watched ones before and after tell whether it wrote.
    return watched, fingerprint.snapshot(watched) if watched else []


def warn_unused(note: str, loc: Location | None) -> None:
    """Warn :class:`gradlab.UnusedStepWarning`, pointed at the user's line (not at torch's hook call)."""
    if loc is not None:
        warnings.warn_explicit(note, UnusedStepWarning, loc.filename, loc.lineno)
    else:
        warnings.warn(note, UnusedStepWarning, stacklevel=4)
