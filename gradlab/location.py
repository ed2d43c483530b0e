"""Where in the user's code something happened: the first frame outside torch and gradlab."""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from types import FrameType

import torch

__all__ = ["Location", "user_location"]

_SKIP_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.dirname(os.__file__) + os.sep + "contextlib.py",
)
_is_library: dict[object, bool] = {}


@dataclass(frozen=True)
class Location:
    """A line of user code: ``where`` is ``file:line`` (or ``In [N]:line`` in a notebook)."""

    where: str
    code: str

    def __str__(self) -> str:
        return f"{self.where}: {self.code}" if self.code else self.where


def _library_code(code: object, filename: str) -> bool:
    hit = _is_library.get(code)
    if hit is None:
        hit = filename.startswith(_SKIP_DIRS) or filename.startswith("<frozen")
        _is_library[code] = hit
    return hit


def _display_name(filename: str) -> str:
    """A short, machine-independent name for a file of user code."""
    ip = sys.modules.get("IPython")
    if ip is not None and ("ipykernel_" in filename or filename.startswith("<ipython-input")):
        # Not "In [N]": execution counts differ between a live kernel and nbval's
        # re-run, and stored notebook outputs must compare equal.
        return "cell"
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        rel = filename
    return os.path.basename(filename) if rel.startswith("..") else rel


def user_location(frame: FrameType | None = None) -> Location | None:
    """The innermost frame of user code above ``frame`` (default: the caller).

    Frames inside torch, gradlab and contextlib are skipped, so the result is the
    line the learner wrote, e.g. ``train.py:12: opt_1.step()``.
    """
    f = frame if frame is not None else sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not _library_code(code, code.co_filename):
            filename = code.co_filename
            line = f.f_lineno
            text = linecache.getline(filename, line).strip()
            return Location(f"{_display_name(filename)}:{line}", text)
        f = f.f_back
    return None
