"""``%load_ext gradlab``: a tracker for the whole session and diagnoses under autograd tracebacks."""

from __future__ import annotations

from typing import Any

from . import messages
from .names import modules_in
from .notices import prefixed
from .tracker import Tracker

__all__ = ["load_ipython_extension", "unload_ipython_extension"]

_ATTR = "_gradlab_session"


def _has_note(error: BaseException) -> bool:
    return any(note.lstrip().startswith("gradlab:") for note in getattr(error, "__notes__", ()))


def _handler(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: int | None = None
) -> None:
    # Show the original traceback first, unchanged (it carries gradlab's note when tracked).
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    if messages.is_autograd_error(value) and not _has_note(value):
        from .kinds import explain

        print("\n" + prefixed(str(explain(value))))


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext gradlab``: track every cell, and explain autograd errors under their traceback.

    Parameters are named after the notebook's modules (``n_1.linear_2.weight``).
    A cell's own ``with gradlab.track(...)`` joins this session tracker (one note
    per failure). The tracker is ``gradlab_tracker`` in the notebook's namespace.
    """
    if getattr(shell, _ATTR, None) is not None:
        return
    if not hasattr(shell, "set_custom_exc") or not hasattr(shell, "user_ns"):
        raise TypeError("load_ipython_extension() takes the IPython shell; use %load_ext gradlab in a notebook")
    tracker = Tracker(lambda: modules_in(shell.user_ns))
    tracker.__enter__()
    setattr(shell, _ATTR, tracker)
    shell.user_ns.setdefault("gradlab_tracker", tracker)
    shell.set_custom_exc((RuntimeError,), _handler)


def unload_ipython_extension(shell: Any) -> None:
    """``%unload_ext gradlab``: stop tracking and restore IPython's error display."""
    tracker = getattr(shell, _ATTR, None)
    if tracker is None:
        return
    setattr(shell, _ATTR, None)
    shell.set_custom_exc((), None)
    tracker.__exit__(None, None, None)
