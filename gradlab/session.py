"""Which trackers are active: one stack per thread, nothing from torch.

:class:`gradlab.Tracker` pushes itself here on ``__enter__`` and pops on ``__exit__``;
:func:`gradlab.check`, :func:`gradlab.draw` and the hooks ask :func:`active` which
tracker (if any) watches the code running now. The stack is thread-local (as
torch's own grad mode is), so two threads never see each other's trackers, and
it persists from one notebook cell to the next.

Besides the per-thread stack, :func:`running` counts the trackers active in the
whole process; :mod:`gradlab.writes` installs its wrappers while it is non-zero.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tracker import Tracker

__all__ = ["active", "outermost", "trackers", "push", "pop", "running", "thread_state"]


class _Local(threading.local):
    stack: tuple[Tracker, ...] = ()


_local = _Local()
_lock = threading.Lock()
_running = 0


def thread_state() -> threading.local:
    """The thread-local object whose ``stack`` attribute holds this thread's trackers.

    For hot paths (:mod:`gradlab.writes`) that read ``state.stack`` directly.
    """
    return _local


def active() -> Tracker | None:
    """The innermost tracker active in this thread, or None."""
    stack = _local.stack
    return stack[-1] if stack else None


def outermost() -> Tracker | None:
    """The outermost tracker active in this thread (the one whose hooks record), or None."""
    stack = _local.stack
    return stack[0] if stack else None


def trackers() -> tuple[Tracker, ...]:
    """Every tracker active in this thread, outermost first."""
    return _local.stack


def push(tracker: Tracker) -> None:
    """Make ``tracker`` the innermost active tracker of this thread."""
    global _running
    _local.stack = (*_local.stack, tracker)
    with _lock:
        _running += 1


def pop(tracker: Tracker) -> None:
    """Remove ``tracker`` from this thread's stack (it must be the innermost)."""
    global _running
    stack = _local.stack
    if not stack or stack[-1] is not tracker:
        raise RuntimeError(
            "gradlab trackers must be closed in the reverse order they were opened "
            "(leave the inner `with gradlab.track():` block first)"
        )
    _local.stack = stack[:-1]
    with _lock:
        _running -= 1


def running() -> int:
    """How many trackers are active in the whole process."""
    return _running
