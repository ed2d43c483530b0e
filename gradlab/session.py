"""Which trackers are active: one stack per thread, nothing from torch.

:class:`gradlab.Tracker` pushes itself here on ``__enter__`` and pops on ``__exit__``;
:func:`gradlab.check`, :func:`gradlab.draw` and the hooks ask :func:`active` which
tracker (if any) watches the code running now. The stack is thread-local (as
torch's own grad mode is), so two threads never see each other's trackers, and
it persists from one notebook cell to the next.

The stack holds the trackers (typed loosely here: this module sits below
:mod:`gradlab.recorder`, which gives typed access); beside it, the thread keeps
the :class:`Recording` of its outermost tracker, which :mod:`gradlab.writes`
calls from its wrappers.

Besides the per-thread stack, :func:`running` counts the trackers active in the
whole process; :mod:`gradlab.writes` installs its wrappers while it is non-zero.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Recording", "active", "outermost", "trackers", "push", "pop", "recording", "running", "thread_state"]


class Recording(Protocol):
    """What :mod:`gradlab.writes` calls on the recording of the thread (:class:`gradlab.recorder.Recorder`)."""

    in_step: int

    def record_inplace(
        self, original: Callable[..., Any], label: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any: ...

    def record_backward(
        self, original: Callable[..., Any], kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any: ...

    def step_started(self, optimizer: Any, closure: Callable[..., Any] | None = None) -> Callable[..., Any] | None: ...

    def step_finished(self, optimizer: Any) -> None: ...


class _Local(threading.local):
    stack: tuple[Any, ...] = ()
    recording: Recording | None = None


_local = _Local()
_lock = threading.Lock()
_running = 0


def thread_state() -> threading.local:
    """The thread-local object whose ``stack`` attribute holds this thread's trackers.

    For hot paths (:mod:`gradlab.writes`) that read ``state.stack`` directly.
    """
    return _local


def active() -> Any | None:
    """The innermost tracker active in this thread, or None."""
    stack = _local.stack
    return stack[-1] if stack else None


def outermost() -> Any | None:
    """The outermost tracker active in this thread (the one whose hooks record), or None."""
    stack = _local.stack
    return stack[0] if stack else None


def trackers() -> tuple[Any, ...]:
    """Every tracker active in this thread, outermost first."""
    return _local.stack


def recording() -> Recording | None:
    """The recording of this thread's outermost tracker, or None outside a tracker."""
    return _local.recording


def push(tracker: object, recording: Recording | None = None) -> None:
    """Make ``tracker`` the innermost active tracker of this thread.

    The outermost tracker passes its ``recording``; a nested one joins the thread's.
    """
    global _running
    if not _local.stack:
        _local.recording = recording
    _local.stack = (*_local.stack, tracker)
    with _lock:
        _running += 1


def pop(tracker: object) -> None:
    """Remove ``tracker`` from this thread's stack (it must be the innermost)."""
    global _running
    stack = _local.stack
    if not stack or stack[-1] is not tracker:
        raise RuntimeError(
            "gradlab trackers must be closed in the reverse order they were opened "
            "(leave the inner `with gradlab.track():` block first)"
        )
    _local.stack = stack[:-1]
    if not _local.stack:
        _local.recording = None
    with _lock:
        _running -= 1


def running() -> int:
    """How many trackers are active in the whole process."""
    return _running
