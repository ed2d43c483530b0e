"""``%load_ext gradlab``: a tracker for the whole session and diagnoses under autograd tracebacks."""

from __future__ import annotations

from .names import modules_in
from .saved import STALE_RE, is_freed_error
from .track import Tracker

__all__ = ["load", "unload"]

_ATTR = "_gradlab_session"


def _is_autograd_error(value: BaseException) -> bool:
    return isinstance(value, RuntimeError) and (is_freed_error(value) or bool(STALE_RE.search(str(value))))


def _handler(shell, etype, value, tb, tb_offset=None):
    # Show the original traceback first, unchanged (it carries gradlab's note when tracked).
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    if _is_autograd_error(value) and getattr(value, "__gradlab_diagnosis__", None) is None:
        try:
            from .explain import explain
        except ImportError:  # pragma: no cover - explain ships with gradlab
            return None
        print("\ngradlab: " + str(explain(value)))
    return None


def load(shell: object) -> None:
    """Start a session-wide tracker (parameters named from the notebook's modules)."""
    if getattr(shell, _ATTR, None) is not None:
        return
    if not hasattr(shell, "set_custom_exc") or not hasattr(shell, "user_ns"):
        raise TypeError("load_ipython_extension() takes the IPython shell; use %load_ext gradlab in a notebook")
    tracker = Tracker(lambda: modules_in(shell.user_ns))
    undo = tracker._start()
    setattr(shell, _ATTR, (tracker, undo))
    shell.user_ns.setdefault("gradlab_tracker", tracker)
    shell.set_custom_exc((RuntimeError,), _handler)


def unload(shell: object) -> None:
    """Stop the session tracker and restore the default error display."""
    session = getattr(shell, _ATTR, None)
    if session is None:
        return
    tracker, undo = session
    setattr(shell, _ATTR, None)
    tracker._stop(undo)
    shell.set_custom_exc((), None)
