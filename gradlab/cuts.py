"""Where user code cut a graph (``.item()``, ``.detach()``, ``no_grad()``) or made several views of one tensor.

One job: :class:`Cuts` keeps the latest :class:`Cut` and :class:`Views` records
that :mod:`gradlab.writes`' wrappers report (NOTE [Cuts], NOTE [Multi-view ops]
there), by weak reference, and finds the one behind an error.
"""

from __future__ import annotations

import sys
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from .location import Location, _library_file, user_location

__all__ = ["Cut", "Views", "Cuts", "leaves_reached"]


@dataclass(frozen=True)
class Cut:
    """A place where user code cut a graph: ``label`` (``.item()``), the user's line, and what it made.

    ``result`` is a weak reference to the tensor the cut returned (None for a number
    or a context manager); ``value`` the number ``.item()`` returned. Weak: a cut
    never keeps a tensor alive. ``reaches`` holds the ids of the leaf tensors (the
    parameters) the detached tensor's graph reached, read only under torch.distributed
    (NOTE [DDP's why] in gradlab/ddp.py), or those a list copied by ``torch.tensor`` reached; else empty.
    """

    label: str
    location: Location
    result: weakref.ref[torch.Tensor] | None
    value: int | float | None
    reaches: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Views:
    """Where user code made several views of one tensor (``x.split(2)``, NOTE [Multi-view ops] in writes.py).

    ``label`` is the op (``.split()``), ``location`` the user's line, ``outputs`` weak
    references to the views it returned, in order, and ``base`` to the tensor they view (a
    record never keeps a tensor alive): a view of a view (``x.split(1)[0].squeeze(1)``) is
    matched by its base once the split's own outputs are gone.
    """

    label: str
    location: Location
    outputs: tuple[weakref.ref[torch.Tensor], ...]
    base: weakref.ref[torch.Tensor] | None = None  # the tensor they are views of (alive while its graph is)


def _distributed() -> bool:
    """Whether this process is in an initialised torch.distributed process group (DDP may run)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


def leaves_reached(tensor: Any) -> frozenset[int]:
    """The ids of the leaf tensors (parameters) ``tensor``'s graph reaches: one walk, nothing kept."""
    found: set[int] = set()
    seen: set[Any] = set()
    stack = [getattr(tensor, "grad_fn", None)]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            found.add(id(variable))
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return frozenset(found)


# NOTE [Initialisation is not a cut]
# torch.nn.init's functions (and every module's reset_parameters, which calls them) write
# the parameters under no_grad(). A constructor in the user's code (self.head =
# nn.Conv2d(...)) is then the last place a no_grad() was entered before a loss that
# never had a graph (it was computed from argmax indices): the note blamed the
# constructor. Initialisation makes parameters, it cuts no graph a loss could read, so
# a no_grad() entered from nn.init or a reset_parameters is not recorded.
_INIT_FUNCTIONS = frozenset({"reset_parameters", "_reset_parameters"})


def _initialising(caller: FrameType) -> bool:
    """``caller`` (the frame that entered a no_grad()) is torch.nn.init's, or runs inside a reset_parameters."""
    frame: FrameType | None = caller
    for _ in range(4):
        if frame is None:
            return False
        name = frame.f_code.co_filename.replace("\\", "/")
        if name.endswith("torch/nn/init.py") or frame.f_code.co_name in _INIT_FUNCTIONS:
            return True
        frame = frame.f_back
    return False


class Cuts:
    """The latest cuts and multi-view ops of the user's code, by weak reference."""

    RECENT_CUTS = 8
    RECENT_VIEWS = 8

    def __init__(self) -> None:
        self.cuts: deque[Cut] = deque(maxlen=self.RECENT_CUTS)
        self.views: deque[Views] = deque(maxlen=self.RECENT_VIEWS)

    def cut(self, label: str, args: tuple[Any, ...], result: Any, grad_before: bool, caller: FrameType) -> None:
        """Remember where user code cut a graph: a cheap check, then one frame walk.

        ``caller`` is the frame that called the cutting entry point: a cut made by
        torch inside a call (``caller`` in torch) is not the user's.
        """
        source = args[0] if args else None
        if label in (".item()", ".detach()"):
            if not (isinstance(source, torch.Tensor) and source.requires_grad and grad_before):
                return
            if _library_file(caller.f_code.co_filename):
                return
        elif label == "torch.tensor(x)":
            if isinstance(source, torch.Tensor):
                if not source.requires_grad:
                    return
            elif isinstance(source, (list, tuple)):
                if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in source[:64]):
                    return  # numbers, or tensors without a graph: nothing is cut
                label = "torch.tensor([...])"  # a list of graph tensors copied: torch.stack keeps their graph
            elif not isinstance(source, (int, float)) or not any(
                c.label == ".item()" and c.value == source for c in self.cuts
            ):
                return  # a constant, not a value computed by a graph
        elif not grad_before or _initialising(caller):  # grad already off: nothing is cut; NOTE [Initialisation is
            return  # not a cut]
        location = user_location()
        if location is None:
            return
        ref = weakref.ref(result) if isinstance(result, torch.Tensor) else None
        value = result if isinstance(result, (int, float)) else None
        reaches = leaves_reached(source) if label == ".detach()" and _distributed() else frozenset()
        if label == "torch.tensor([...])" and isinstance(source, (list, tuple)):
            # what the copied tensors reached: what the loss will train once they are stacked
            reaches = frozenset().union(*(leaves_reached(t) for t in source if isinstance(t, torch.Tensor)))
        self.cuts.append(Cut(label, location, ref, value, reaches))

    def made_views(self, label: str, result: Any) -> None:
        """Remember where user code made several views of one tensor that autograd records."""
        if not isinstance(result, (tuple, list)) or not torch.is_grad_enabled():
            return
        if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in result):
            return  # views outside autograd may be written to
        location = user_location()
        if location is not None:
            first = result[0] if result and isinstance(result[0], torch.Tensor) else None
            base = first._base if first is not None else None
            self.views.append(
                Views(
                    label,
                    location,
                    tuple(weakref.ref(t) for t in result),
                    weakref.ref(base) if base is not None else None,
                )
            )

    def views_of(self, tensor: torch.Tensor) -> tuple[Views, int | None] | None:
        """The latest recorded views ``tensor`` is one of (with its output index), or a view of (index None)."""
        for views in reversed(self.views):
            for i, ref in enumerate(views.outputs):
                if ref() is tensor:
                    return views, i
        base = tensor._base
        if base is not None:
            for views in reversed(self.views):
                if (views.base is not None and views.base() is base) or any(
                    (t := ref()) is not None and t._base is base for ref in views.outputs
                ):
                    return views, None
        return None

    def cut_for(self, tensors: Sequence[Any]) -> tuple[Cut, bool] | None:
        """The cut behind a backward on ``tensors`` without grad_fn: the one that made them (exact) or the latest."""
        if not self.cuts:
            return None
        for cut in reversed(self.cuts):
            made = cut.result() if cut.result is not None else None
            if made is not None and any(t is made for t in tensors):
                return cut, True
        return self.cuts[-1], False

    def clear(self) -> None:
        self.views.clear()
