"""Saved tensors a backward used after a write their version counter missed: the SilentWriteWarning.

One job: :class:`SilentWrites` collects, while a backward runs, the saved records
it unpacked that changed behind their counter (:mod:`gradlab.fingerprint`), keeps
the tracker's note on them, and warns once the backward returns (NOTE [Silent writes]).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

from . import fingerprint
from .location import Location
from .notices import SilentWriteWarning
from .saved import Packed

__all__ = ["SilentWrites"]


# NOTE [Silent writes]: a write that changes a saved tensor without moving its
# version counter (gradlab.fingerprint) passes unpack_hook's check. When the
# engine unpacks such a record, the note is built at once (the graph still holds
# what this backward has not run yet) and warned when the backward returns; with
# strict=True the unpack raises torch's in-place error instead.
class SilentWrites:
    """The records the running backward used though they changed behind their counter, and the notes warned."""

    KEPT_NOTES = 64

    def __init__(self) -> None:
        self.used: list[Packed] = []  # records the running backward used, changed behind their counter
        self.note: str | None = None  # the tracker's note on the first of them
        self._warned: dict[Any, Any] = {}  # the warnings registry: each note once per line
        self._noted: OrderedDict[tuple[str, str | None], None] = OrderedDict()  # notes kept, latest last

    def state(self) -> tuple[list[Packed], str | None]:
        """What the running backward collected, to put back when a backward nested in it returns."""
        return self.used, self.note

    def restore(self, state: tuple[list[Packed], str | None]) -> None:
        self.used, self.note = state

    def begin(self) -> None:
        """A backward call begins: nothing used yet."""
        self.used, self.note = [], None

    def add(self, p: Packed) -> bool:
        """The running backward used ``p``; True the first time (then the caller may build the note)."""
        if any(q is p for q in self.used):
            return False
        self.used.append(p)
        return self.note is None

    def text(self, where: str | None) -> tuple[str, bool]:
        """The warning's text, and whether it is new at that line (then it goes into the notes and the log)."""
        text = fingerprint.warning_text(self.note)
        key = (text, where)
        if key in self._noted:  # the same note at the same line: once in notes (the warning filter decides the rest)
            self._noted.move_to_end(key)
            return text, False
        self._noted[key] = None
        if len(self._noted) > self.KEPT_NOTES:
            self._noted.popitem(last=False)
        return text, True

    def warn(self, text: str, loc: Location | None) -> None:
        """Warn :class:`gradlab.SilentWriteWarning` at the backward's line."""
        if len(self._warned) > 256:  # a long loop whose notes differ: keep the registry bounded
            self._warned.clear()
        if loc is not None:
            warnings.warn_explicit(text, SilentWriteWarning, loc.filename, loc.lineno, registry=self._warned)
        else:
            warnings.warn(text, SilentWriteWarning, stacklevel=4)

    def clear(self) -> None:
        self.used, self.note = [], None
