"""Tracebacks as python prints them: the frames of gradlab's runner and of the tracker's hooks taken out of an
exception's traceback, so that an error under ``gradlab run`` prints as under ``python``."""

from __future__ import annotations

import contextlib
import os
import runpy
import types

__all__ = ["clean_chain"]

# NOTE [tracebacks as python prints them]
# Python's own traceback of a script starts at the script's first frame. Ours
# would also show this runner (cli.py, runpy, contextlib) above it, and the
# tracker's hooks (track.py, saved.py) in the middle of any torch call made
# under track(). Both are removed, so a non-autograd error prints exactly as
# with `python script.py`, and an autograd error shows the user's and torch's
# frames, then gradlab's notes.
_HERE = os.path.dirname(os.path.abspath(__file__))
_RUNNER_FILES = frozenset(
    os.path.normcase(os.path.abspath(f))
    for f in (
        runpy.__file__,
        contextlib.__file__,
        os.path.join(_HERE, "cli.py"),
        os.path.join(_HERE, "__main__.py"),
    )
)
_HOOK_FILES = frozenset(
    os.path.normcase(os.path.join(_HERE, name))
    for name in ("tracker.py", "recorder.py", "backwards.py", "saved.py", "writes.py")
)


def _file_key(filename: str) -> str:
    return filename if filename.startswith("<") else os.path.normcase(os.path.abspath(filename))


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the runner's leading frames and without the tracker's hook frames."""
    while tb is not None and _file_key(tb.tb_frame.f_code.co_filename) in _RUNNER_FILES | _HOOK_FILES:
        tb = tb.tb_next
    kept: list[types.TracebackType] = []
    while tb is not None:
        if _file_key(tb.tb_frame.f_code.co_filename) not in _HOOK_FILES:
            kept.append(tb)
        tb = tb.tb_next
    out: types.TracebackType | None = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def clean_chain(exc: BaseException) -> None:
    """Apply :func:`_user_traceback` to ``exc`` and the exceptions it was raised from."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = _user_traceback(current.__traceback__)
        current = current.__cause__ or current.__context__
