"""Which trackers are active, and the thread's recorder: one stack per thread, nothing from torch.

:class:`gradlab.Tracker` pushes itself here on ``__enter__`` and pops on ``__exit__``;
:func:`gradlab.check`, :func:`gradlab.draw` and the hooks ask :func:`active` which
tracker (if any) watches the code running now. The stack is thread-local (as
torch's own grad mode is), so two threads never see each other's trackers, and
it persists from one notebook cell to the next.

The stack holds the trackers (typed loosely here: this module sits below
:mod:`gradlab.recorder`, which gives typed access); beside it, the thread keeps
the recorder of its outermost tracker (:func:`recorder`), which
:mod:`gradlab.writes` calls from its wrappers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["RecorderCalls", "active", "trackers", "push", "pop", "recorder", "thread_state"]


class RecorderCalls(Protocol):
    """What :mod:`gradlab.writes` calls on the recorder of the thread (:class:`gradlab.recorder.Recorder`)."""

    in_step: int

    def record_inplace(
        self, original: Callable[..., Any], label: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any: ...

    def inplace_failed(self, e: RuntimeError, label: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None: ...

    def record_backward(
        self, original: Callable[..., Any], kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any: ...

    def record_cut(self, label: str, args: tuple[Any, ...], result: Any, grad_before: bool) -> None: ...

    def record_views(self, label: str, result: Any) -> None: ...

    def zero_grad_called(self, owner: Any) -> None: ...

    def step_started(self, optimizer: Any, closure: Callable[..., Any] | None = None) -> Callable[..., Any] | None: ...

    def step_finished(self, optimizer: Any) -> None: ...


class _Local(threading.local):
    stack: tuple[Any, ...] = ()
    recorder: RecorderCalls | None = None
    # the in-place call running now under a tracker (function, positional and keyword arguments), for
    # a tensor saved inside it: NOTE [The output of an in-place op on a view] in saved.py
    writing: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None = None


_local = _Local()


def thread_state() -> _Local:
    """The thread-local object whose ``stack`` and ``recorder`` attributes hold this thread's trackers.

    For hot paths (:mod:`gradlab.writes`) that read ``state.recorder`` directly.
    """
    return _local


def active() -> Any | None:
    """The innermost tracker active in this thread, or None."""
    stack = _local.stack
    return stack[-1] if stack else None


def trackers() -> tuple[Any, ...]:
    """Every tracker active in this thread, outermost first."""
    return _local.stack


def recorder() -> RecorderCalls | None:
    """The recorder of this thread's outermost tracker, or None outside a tracker."""
    return _local.recorder


def push(tracker: object, recorder: RecorderCalls | None = None) -> None:
    """Make ``tracker`` the innermost active tracker of this thread.

    The outermost tracker passes its ``recorder``; a nested one joins the thread's.
    """
    if not _local.stack:
        _local.recorder = recorder
    _local.stack = (*_local.stack, tracker)


def pop(tracker: object) -> None:
    """Remove ``tracker`` from this thread's stack (it must be the innermost)."""
    stack = _local.stack
    if not stack or stack[-1] is not tracker:
        raise RuntimeError(
            "gradlab trackers must be closed in the reverse order they were opened "
            "(leave the inner `with gradlab.track():` block first)"
        )
    _local.stack = stack[:-1]
    if not _local.stack:
        _local.recorder = None
