"""Experimental, faster ``track()``: a proof for the suggestions in benchmarks/README.md.

Not part of gradlab and not used by the course: ``benchmarks/run.py`` times it
next to ``gradlab.track()`` so the gain of each suggestion is measured, not guessed.
It subclasses gradlab's Tracker and changes three things:

1. The spy (a TorchFunctionMode) is popped off the mode stack while an
   optimizer step runs and pushed back after it. About 80% of the Python-level
   torch calls of the course's loop happen inside ``Adam.step()``; the step
   hooks already see what a step writes, so the spy has nothing to do there.
   If a step raises (its post hook never runs) the spy is pushed back by the
   next hook that runs, or on exit. The step pre hook suspends the spy before
   its own storage lookups (8 spy calls per step of the loop came from gradlab).
2. The location of a step is looked up only when the step wrote a saved tensor
   (in the post hook, where the user's frame is still on the stack).
3. File names of user code are turned into display names once per file, not
   once per event (``os.path.relpath`` on every step and backward).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from gradlab import location as _location
from gradlab.location import Location
from gradlab.names import NamesLike
from gradlab.track import Tracker, _Spy

__all__ = ["FastTracker", "fast_track"]

_display_name = functools.lru_cache(maxsize=1024)(_location._display_name)


def _user_location(frame=None) -> Location | None:
    """``gradlab.location.user_location`` with the display name cached per file."""
    f = frame if frame is not None else sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not _location._library_code(code, code.co_filename):
            filename = code.co_filename
            line = f.f_lineno
            import linecache

            return Location(f"{_display_name(filename)}:{line}", linecache.getline(filename, line).strip())
        f = f.f_back
    return None


class FastTracker(Tracker):
    """gradlab's Tracker with the spy suspended during optimizer steps."""

    def __init__(self, names: NamesLike = None) -> None:
        super().__init__(names)
        self._spy: _Spy | None = None
        self._suspended = False

    def _suspend(self) -> None:
        n = torch._C._len_torch_function_stack()
        if n and torch._C._get_function_stack_at(n - 1) is self._spy:
            torch._C._pop_torch_function_stack()
            self._suspended = True

    def _resume(self) -> None:
        if self._suspended:
            self._suspended = False
            torch._C._push_on_torch_function_stack(self._spy)

    def _pack(self, t):
        if self._suspended and not self._in_step:
            self._resume()  # a step raised: its post hook never ran
        return super()._pack(t)

    def _step_pre(self, optimizer, args, kwargs) -> None:
        if not self.active:
            return
        self._resume()
        self._suspend()  # first: the hook's own storage lookups need no spy either
        params = [p for g in optimizer.param_groups for p in g["params"]]
        self._steps[id(optimizer)] = (self._watched(params), f"{type(optimizer).__name__}.step()", None)
        self._in_step += 1

    def _step_post(self, optimizer, args, kwargs) -> None:
        state = self._steps.pop(id(optimizer), None)
        if state is None:
            return
        self._in_step = max(0, self._in_step - 1)
        if not self._in_step:
            self._resume()
        watched, op, _ = state
        if any(p.tensor._version != before for p, before in watched):
            self._record(watched, op, _user_location(sys._getframe(1)))

    def _stop(self, undo: list) -> None:
        self._resume()
        super()._stop(undo)

    def _start(self) -> list:
        undo = super()._start()
        n = torch._C._len_torch_function_stack()
        self._spy = torch._C._get_function_stack_at(n - 1)
        return undo


@contextmanager
def fast_track(names: NamesLike = None) -> Iterator[FastTracker]:
    """Like ``gradlab.track()``, with the suggested optimizations."""
    tracker = FastTracker(names)
    undo = tracker._start()
    try:
        yield tracker
    finally:
        tracker._stop(undo)
