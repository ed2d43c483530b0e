"""Where in the user's code something happened: the first frame outside torch and gradlab."""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from types import CodeType, FrameType

import torch

__all__ = ["Location", "user_location", "user_frame", "frame_names"]

_SKIP_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.dirname(os.__file__) + os.sep + "contextlib.py",
)
# NOTE [Cheap save locations]
# user_location() runs on every saved tensor, so it must cost little: the frame
# walk asks one dict per frame, keyed by the frame's file name (a str, whose hash
# Python caches; a code object's hash is recomputed from its contents on every
# lookup). The user's frame is then looked up by (code object, instruction
# offset): f_lineno scans the code's line table from its start, which costs
# microseconds in a long script, and a line seen before returns the same Location
# object (nothing allocated). Both caches are bounded: a notebook compiles new
# cell code all day.
_MAX_CACHED = 16_384
_is_library: dict[str, bool] = {}  # file name -> library code (skipped by the walk)
_interned: dict[tuple[int, int], tuple[CodeType, Location]] = {}  # (id(code), instruction) -> location
# Installed packages and the standard library: never the user's own callers.
_INSTALLED = tuple(
    sorted(
        {
            os.path.join(p, "")
            for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if (p := sysconfig.get_paths().get(key))
        }
    )
)


class Location:
    """A line of user code: ``where`` is ``file:line`` (``cell:line`` in a notebook).

    The file name and source text are looked up only when asked for, so
    recording a location on a hot path costs one frame walk. ``callers`` are
    the user lines that called this one (outermost last), when they were asked
    for: they tell apart two calls made through one helper function.
    """

    __slots__ = ("filename", "lineno", "_where", "_code", "callers")

    def __init__(self, filename: str, lineno: int, callers: tuple[Location, ...] = ()) -> None:
        self.filename = filename
        self.lineno = lineno
        self._where: str | None = None
        self._code: str | None = None
        self.callers = callers

    @property
    def where(self) -> str:
        if self._where is None:
            self._where = f"{_display_name(self.filename)}:{self.lineno}"
        return self._where

    @property
    def in_cell(self) -> bool:
        """True for a line of a notebook or IPython cell (not of a file on disk)."""
        return _display_name(self.filename) == "cell"

    @property
    def code(self) -> str:
        if self._code is None:
            self._code = linecache.getline(self.filename, self.lineno).strip()
        return self._code

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and (self.filename, self.lineno) == (other.filename, other.lineno)

    def __hash__(self) -> int:
        return hash((self.filename, self.lineno))

    def __repr__(self) -> str:
        return f"Location({self.where!r}, {self.code!r})"

    def __str__(self) -> str:
        return f"{self.where}: {self.code}" if self.code else self.where

    def same_call(self, other: Location | None) -> bool:
        """The same line reached through the same user callers."""
        return other is not None and self == other and self.callers == other.callers

    def trail(self) -> str:
        """``file:line: code`` and, when known, `` (called from file:line: code)`` for each caller."""
        return str(self) + "".join(f" (called from {c})" for c in self.callers)


# NOTE [Framework frames]
# Lightning, Transformers and Accelerate own the training loop: they call the user's
# training_step, compute_loss and forward, and call backward(), zero_grad() and step()
# themselves. Their frames are never the user's line, so they are skipped like torch's:
# the line found is the user's own (the write in training_step, the manual_backward call,
# or the trainer.fit(...) that ran the framework's backward). A framework's folder is
# read from its package once it is imported (nothing is imported here); its frames can
# only run after that.
# Libraries whose frames are never the user's line: training frameworks, and the numeric libraries a tensor
# passes through on its way to an error (np.sum of a list of tensors calls .numpy() inside numpy).
_FRAMEWORKS = (
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "transformers",
    "accelerate",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "sklearn",
)


def _framework_file(filename: str) -> bool:
    for name in _FRAMEWORKS:
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and filename.startswith(os.path.dirname(path) + os.sep):
            return True
    return False


def _library_file(filename: str) -> bool:
    hit = _is_library.get(filename)
    if hit is None:
        hit = filename.startswith(_SKIP_DIRS) or filename.startswith("<frozen") or _framework_file(filename)
        if len(_is_library) >= _MAX_CACHED:
            _is_library.clear()
        _is_library[filename] = hit
    return hit


def _located(code: CodeType, lasti: int, frame: FrameType) -> Location:
    """The :class:`Location` of ``frame``, which runs ``code`` at instruction ``lasti`` (cached)."""
    key = (id(code), lasti)
    hit = _interned.get(key)
    if hit is not None and hit[0] is code:  # the cache holds the code object: its id is not reused
        return hit[1]
    if len(_interned) >= _MAX_CACHED:
        _interned.clear()
    loc = Location(code.co_filename, frame.f_lineno)
    _interned[key] = (code, loc)
    return loc


_names: dict[str, str] = {}


def _display_name(filename: str) -> str:
    """A short, machine-independent name for a file of user code (cached)."""
    name = _names.get(filename)
    if name is None:
        name = _names[filename] = _compute_display_name(filename)
    return name


def _compute_display_name(filename: str) -> str:
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


def user_location(frame: FrameType | None = None, callers: int = 0) -> Location | None:
    """The innermost frame of user code above ``frame`` (default: the caller).

    Frames inside torch, gradlab, contextlib and the training frameworks (NOTE
    [Framework frames]) are skipped, so the result is the line the learner wrote,
    e.g. ``train.py:12: opt_1.step()``. With ``callers=N`` the next N user frames
    further out are kept in ``Location.callers``.
    """
    # Hot path (every saved tensor under track()): NOTE [Cheap save locations].
    f: FrameType | None = frame if frame is not None else sys._getframe(1)
    library = _is_library
    while f is not None:
        code = f.f_code
        filename = code.co_filename
        hit = library.get(filename)
        if hit is None:
            hit = _library_file(filename)
        if not hit:
            if not callers:
                return _located(code, f.f_lasti, f)
            return Location(filename, f.f_lineno, _callers(f, callers))
        f = f.f_back
    return None


def user_frame(frame: FrameType | None = None) -> FrameType | None:
    """The innermost frame of user code above ``frame`` (default: the caller), for looking up names."""
    f: FrameType | None = frame if frame is not None else sys._getframe(1)
    while f is not None:
        if not _library_file(f.f_code.co_filename):
            return f
        f = f.f_back
    return None


# NOTE [Reading a function's locals]
# Before Python 3.13, frame.f_locals of a running function builds a dict on the
# frame that holds a strong reference to every local, until the function returns
# or f_locals is read again. Reading it to find the user's name for a tensor would
# keep that tensor (and its graph) alive after the user deleted it. So the names
# are copied out and the frame's dict is emptied at once; the function's own
# (fast) locals are untouched: nothing writes the emptied dict back.
# From Python 3.13 (PEP 667), f_locals of a function is a write-through proxy
# (FrameLocalsProxy, not a dict): it keeps no snapshot, has no clear(), and
# clearing it would delete the user's variables. Copying it is all it takes.
_CO_OPTIMIZED = 0x0001


def frame_names(frame: FrameType | None) -> dict[str, object]:
    """The names visible in ``frame`` (globals, then locals), copied; keeps nothing alive."""
    if frame is None:
        return {}
    names = dict(frame.f_globals)
    local = frame.f_locals
    names.update(local)
    if frame.f_code.co_flags & _CO_OPTIMIZED and type(local) is dict:
        local.clear()  # the snapshot dict of Python < 3.13 (above); never the 3.13 proxy
    return names


def _callers(f: FrameType, count: int) -> tuple[Location, ...]:
    """Up to ``count`` user frames that called ``f``, innermost first (stops at the first non-user frame)."""
    outer: list[Location] = []
    g: FrameType | None = f.f_back
    while g is not None and len(outer) < count:
        name = g.f_code.co_filename
        if _library_file(name) or name.startswith(_INSTALLED):
            break  # the caller is not the user's code (a runner, IPython, a library)
        code = g.f_code
        outer.append(_located(code, g.f_lasti, g))  # cached like the user's own frame: no line-table scan
        g = g.f_back
    return tuple(outer)
