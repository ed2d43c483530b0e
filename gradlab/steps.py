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
from typing import Literal, NamedTuple

import torch
from torch import nn

from . import fingerprint
from .i18n import _, _t
from .location import Location, user_location
from .names import Namer
from .notices import UnusedStepWarning
from .saved import Packed

__all__ = ["OptimizerCall", "Steps"]


class OptimizerCall(NamedTuple):
    """One ``zero_grad()`` or ``step()`` the tracker saw, by ids only (it keeps no tensor or optimizer alive).

    ``after`` is how many backward calls had run before it (so it comes after the
    backward call with ``index == after - 1``); ``owner`` the id of the optimizer
    (or of the ``nn.Module`` whose ``zero_grad()`` ran), ``params`` the ids of the
    parameters it holds; ``location`` the user's line. An immutable record (a named
    tuple: made at every step, it costs a third of a frozen dataclass).
    """

    kind: Literal["zero_grad", "step"]
    after: int
    owner: int
    params: frozenset[int]
    location: Location | None


#: The saved records a running step may write, each with its version, and their fingerprints before it.
Watch = tuple[list[tuple[Packed, int]], list[int | None]]


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
# NOTE [What a step costs]
# The step hooks run at every optimizer step, so a step in a training loop does only
# this: one pass over param_groups (the parameters' ids for the record), one user
# line (found at the step's start, kept for its end), a look at the registry (in a
# training loop nothing saved is alive at the step: no storage is looked up, no
# fingerprint taken), and `.grad is None` per parameter; the all-zero check, the
# names and the notes only at the optimizer's steps 1, 2, 4, 8, ... or when a
# gradient is missing.
_NOTHING: Watch = ([], [])  # a step that may write no saved tensor (never mutated)


class Steps:
    """The optimizer steps and ``zero_grad()`` calls seen, the steps running now, the parameters reported."""

    HISTORY = 64

    def __init__(self) -> None:
        self.in_step = 0  # optimizer steps running now (the in-place wrappers pass straight through)
        self.calls: deque[OptimizerCall] = deque(maxlen=4 * self.HISTORY)  # zero_grad() and step()
        self.ends: deque[tuple[int, Location | None, str]] = deque(maxlen=self.HISTORY)  # (event, line, class)
        self._open: dict[
            int, tuple[Watch, Location | None]
        ] = {}  # id(optimizer) -> what its running step may write, its line
        self._counts: dict[int, int] = {}  # id(optimizer) -> steps begun
        self._reported: set[int] = set()  # ids of parameters a note named already
        self._zero_once: set[int] = set()  # ids of parameters all-zero at their optimizer's last check
        self._held: dict[int, frozenset[int]] = {}  # id(optimizer) -> ids of its parameters (NOTE [Held by none])

    def held(self) -> frozenset[int]:
        """The ids of the parameters of every optimizer that began a step (whatever frame holds it)."""
        return frozenset().union(*self._held.values())

    def zero_grad(self, owner: torch.optim.Optimizer | nn.Module, backwards: int) -> None:
        """``zero_grad()`` of an optimizer or a module, after ``backwards`` backward calls: which parameters."""
        if isinstance(owner, nn.Module):
            params = frozenset(map(id, owner.parameters()))
        else:
            params = frozenset([id(p) for g in owner.param_groups for p in g["params"]])
        self.calls.append(OptimizerCall("zero_grad", backwards, id(owner), params, user_location()))

    def started(
        self,
        optimizer: torch.optim.Optimizer,
        backwards: int,
        watched: Callable[[list[torch.Tensor]], list[tuple[Packed, int]]] | None,
    ) -> tuple[list[torch.Tensor], bool]:
        """A step begins: record it and what it may write (``watched``, None when nothing saved is alive).

        Returns the parameters and whether to check them for all-zero gradients
        (at the optimizer's steps 1, 2, 4, 8, ...: a reduction per parameter costs more).
        """
        # Hot path (every step): NOTE [What a step costs].
        params = [p for g in optimizer.param_groups for p in g["params"]]
        key = id(optimizer)
        loc = user_location()
        held = frozenset(map(id, params))
        self.calls.append(OptimizerCall("step", backwards, key, held, loc))
        self._held[key] = held  # the set the record keeps anyway: no second pass over the parameters
        found = watched(params) if watched is not None else None
        self._open[key] = (watch_step(found) if found else _NOTHING, loc)
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        return params, count & (count - 1) == 0

    def finished(self, optimizer: torch.optim.Optimizer, event: int) -> tuple[Watch, Location | None]:
        """A step ends (``event``: the log's length then): what it may have written, and the user's line."""
        opened = self._open.pop(id(optimizer), None)
        watched, loc = opened if opened is not None else (_NOTHING, user_location())
        self.ends.append((event, loc, type(optimizer).__name__))
        return watched, loc

    def unused(
        self,
        optimizer: torch.optim.Optimizer,
        params: list[torch.Tensor],
        zeros: bool,
        namer: Callable[[], Namer],
    ) -> list[tuple[str, str, Location | None, bool]]:
        """The notes on a step that cannot train some parameters (each parameter once): (labels, note, line, warn).

        ``.grad is None`` is checked at every step; all-zero gradients, and gradients that
        no optimizer holds (NOTE [Held by none]), only when ``zeros``. ``warn`` is False
        for a note that is no mistake (a bias the loss's form cancels).
        """
        reported = self._reported
        count = self._counts.get(id(optimizer), 0)
        # most steps: only .grad is None is checked (NOTE [What a step costs])
        if not zeros and all(p.grad is not None or not p.requires_grad or id(p) in reported for p in params):
            return []
        missing, zero = [], []
        once = self._zero_once
        for p in params:
            if not p.requires_grad or id(p) in reported:
                continue
            g = p.grad
            if g is None:
                missing.append(p)
            elif zeros and g.numel():
                if _any_nonzero(g):
                    once.discard(id(p))
                elif id(p) in once:  # all-zero at two checks in a row (NOTE [Zero once])
                    zero.append(p)
                else:
                    once.add(id(p))
        if not missing and not zero and not (zeros and count >= _SETTLED):
            return []
        names = namer()
        if not missing and not zero and not names:
            return []
        loc = user_location()
        where = _t(" at {where}", where=loc) if loc else ""
        step = f"{type(optimizer).__name__}.step()"
        notes: list[tuple[str, str, Location | None, bool]] = []
        named = {id(p): names.name_of(p) for p in params} if names else {}
        left = [p for p in missing if named and named.get(id(p)) is None] if any(named.values()) else []
        if left:  # parameters none of the named models has (NOTE [Held by none])
            missing = [p for p in missing if all(p is not q for q in left)]
            reported.update(id(p) for p in left)
            shapes = ", ".join(str(list(p.shape)) for p in left[:4]) + (" ..." if len(left) > 4 else "")
            note = _t(
                "{step}{where}: {n} of its parameters ({shapes}) are in none of your models and get no gradient: "
                "if a layer was replaced after the optimizer was built, the optimizer still holds the old one's "
                "parameters and the new layer's are stepped by none (build the optimizer after replacing it, or "
                "add them with add_param_group()).",
                step=step,
                where=where,
                n=len(left),
                shapes=shapes,
            )
            notes.append((shapes, note, loc, True))
        # all-zero (or no gradient) by the computation's form, or by a zero input this step: a note, not a warning
        for finder, none in ((_cancelled_biases, False), (_zero_input_weights, False), (_cancelled_biases, True)):
            quiet = finder(missing if none else zero, params, named)
            if not quiet:
                continue
            if none:
                missing = [p for p in missing if all(p is not q for q in quiet)]
            else:
                zero = [p for p in zero if all(p is not q for q in quiet)]
            reported.update(id(p) for p in quiet)
            labels = ", ".join(named.get(id(p)) or _t("parameter {shape}", shape=list(p.shape)) for p in quiet)
            if none:
                note = _t(
                    "{step}{where}: {labels} had no gradient while the rest of their layer learns: the computation "
                    "does not read them (a loss made of the output's derivative with respect to the input, such as "
                    "forces from an energy, never reads the last bias); not a mistake if the loss is meant so.",
                    step=step,
                    where=where,
                    labels=labels,
                )
            elif finder is _cancelled_biases:
                note = _t(
                    "{step}{where}: {labels} had an all-zero gradient while the rest of their layer learns: the "
                    "computation cancels them (a bias in a difference such as mean(real) - mean(fake), or right "
                    "before a normalization); not a mistake.",
                    step=step,
                    where=where,
                    labels=labels,
                )
            else:
                note = _t(
                    "{step}{where}: {labels} had an all-zero gradient while their layer's bias learns: the layer's "
                    "input was all zeros at this step (a zero placeholder, such as self-conditioning switched off, or "
                    "an all-padding batch); not a mistake if other steps feed it values.",
                    step=step,
                    where=where,
                    labels=labels,
                )
            notes.append((labels, note, loc, False))
        for found, what in ((missing, _("no gradient (.grad is None)")), (zero, _("an all-zero gradient"))):
            if not found:
                continue
            reported.update(id(p) for p in found)
            labels = ", ".join(names.name_of(p) or _t("parameter {shape}", shape=list(p.shape)) for p in found)
            note = _t(
                "{step}{where}: {labels} had {what}, so this step's gradient cannot train them (momentum from earlier steps "
                "may still move them).",
                step=step,
                where=where,
                labels=labels,
                what=what,
            )
            notes.append((labels, note, loc, True))
        if zeros and count >= _SETTLED and names:
            notes += self._held_by_none(step, where, loc, params, names)
        return notes

    def _held_by_none(
        self, step: str, where: str, loc: Location | None, params: list[torch.Tensor], names: Namer
    ) -> list[tuple[str, str, Location | None, bool]]:
        """Parameters of the models this optimizer trains that have a gradient no optimizer steps on."""
        mine = {n.split(".")[0] for p in params if (n := names.name_of(p)) is not None}
        held, reported = frozenset().union(*self._held.values()), self._reported
        found = [
            (name, t)
            for name, t in names.named()
            if name.split(".")[0] in mine
            and isinstance(t, nn.Parameter)
            and t.requires_grad
            and id(t) not in held
            and id(t) not in reported
            and t.grad is not None
            and _any_nonzero(t.grad)
        ]
        if not found:
            return []
        reported.update(id(t) for _n, t in found)
        labels = ", ".join(n for n, _t_ in found[:6]) + (" ..." if len(found) > 6 else "")
        note = _t(
            "{step}{where}: {labels} get a gradient, but no optimizer holds them, so no step uses it and they do not "
            "learn (a layer unfrozen or added after the optimizer was built is not in its param_groups: add it with "
            "add_param_group()).",
            step=step,
            where=where,
            labels=labels,
        )
        return [(labels, note, loc, True)]

    def clear(self) -> None:
        self._open.clear()
        self.calls.clear()
        self.in_step = 0


# NOTE [Held by none]
# Two silent failures an optimizer step can show. A parameter of a model the optimizer
# trains gets a gradient that no optimizer holds (a layer unfrozen, or added, after the
# optimizer was built): it is checked once every optimizer of the loop has likely
# stepped (a critic stepped 5 times per generator step included), at this optimizer's steps 8, 16,
# 32, ... against every optimizer seen so far.
# And an optimizer holds parameters that none of the named models has any more (a
# layer replaced after the optimizer was built): they get no gradient, and the note
# says so instead of the plain "no gradient". Both need names (track(names=...), or
# gradlab run): without them nothing is said.
_SETTLED = 8


# NOTE [Zero once]
# An all-zero gradient at one step is often the start of training, not a mistake: a
# layer after it initialised to zero (a LoRA adapter's B, a neural cellular automaton's
# last convolution, a zero-initialised residual gate) sends nothing back until its first
# step moves it. So an all-zero gradient is reported only when the optimizer's next check
# (steps 1, 2, 4, 8, ...) finds it all-zero again.


def _cancelled_biases(
    zero: list[torch.Tensor], params: list[torch.Tensor], named: dict[int, str | None]
) -> list[torch.Tensor]:
    """The all-zero biases whose layer's weight (in the same optimizer) has a gradient: the loss's form cancels them.

    The layer's weights are found by name (``x.bias`` beside ``x.weight``, or a weight-normed
    layer's ``x.parametrizations.weight.original0``), or without names as the parameter
    before the bias in the optimizer's order (``Module.parameters()`` lists a layer's weight
    right before its bias) with the bias's length as its first dimension. The same test
    serves biases with no gradient at all (a loss made of the output's derivative with
    respect to the input, such as forces from an energy, never reads the last bias).
    """
    if not zero:
        return []
    by_name = {n: p for p in params if (n := named.get(id(p))) is not None}
    before = {id(q): params[i - 1] for i, q in enumerate(params) if i}
    out = []
    for p in zero:
        name = named.get(id(p))
        if name is not None:
            prefix = name[: -len("bias")] if name.endswith(".bias") else None
            weights = [q for n, q in by_name.items() if prefix and n.startswith(prefix) and q is not p]
        else:
            weight = before.get(id(p))
            fits = weight is not None and p.dim() == 1 and weight.dim() >= 1 and weight.shape[0] == p.shape[0]
            weights = [weight] if weight is not None and fits else []
        if any(w.grad is not None and _any_nonzero(w.grad) for w in weights):
            out.append(p)
    return out


def _zero_input_weights(
    zero: list[torch.Tensor], params: list[torch.Tensor], named: dict[int, str | None]
) -> list[torch.Tensor]:
    """The all-zero weights whose layer's bias has a gradient: the layer's input was all zeros (the gradient of a
    weight is the output's gradient times the input). The bias is found by name (``x.weight`` and ``x.bias``), or
    without names as the parameter after the weight in the optimizer's order, as long as the weight's first
    dimension."""
    if not zero:
        return []
    by_name = {n: p for p in params if (n := named.get(id(p))) is not None}
    after = {id(q): params[i + 1] for i, q in enumerate(params[:-1])}
    out = []
    for p in zero:
        if p.dim() < 2:
            continue
        name = named.get(id(p))
        if name is not None:
            bias = by_name.get(name[: -len("weight")] + "bias") if name.endswith(".weight") else None
        else:
            bias = after.get(id(p))
            if bias is None or bias.dim() != 1 or bias.shape[0] != p.shape[0]:
                bias = None
        if bias is not None and bias.grad is not None and _any_nonzero(bias.grad):
            out.append(p)
    return out


def _any_nonzero(g: torch.Tensor) -> bool:
    """Whether gradient ``g`` has a non-zero element (a sparse one: among its stored values)."""
    if g.layout != torch.strided:  # sparse gradients (nn.Embedding(sparse=True)): their stored values
        d = g.detach()
        g = d.coalesce().values() if d.is_sparse else d.values()
    return bool(g.count_nonzero())  # one kernel, no graph (NaN counts as non-zero, as with ne(0)); 4x cheaper


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
