"""The tracker's log: one :class:`Event` per save of a named tensor, write, backward call, error or note.

A :class:`Log` belongs to one tracker (a :class:`gradlab.recorder.Scope`): the
recorder appends an :data:`Entry` to the log of every tracker open when something
happens. An entry is what was cheap to keep at that moment; the name of a tensor
is worked out later (NOTE [Lazy names]) and an :class:`Event` is built once per
entry, when the log is first read, in the language in effect then.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

import torch

from . import i18n
from .location import Location
from .names import Name, Namer, ViewKind

__all__ = ["Event", "EventKind", "Entry", "LaterName", "Log"]

EventKind = Literal["saved", "write", "backward", "error", "note"]


@dataclass(frozen=True)
class Event:
    """One line of the tracker's log, for :func:`gradlab.timeline`.

    ``kind`` is ``saved`` (a named tensor was saved for backward), ``write`` (an
    in-place write moved a saved tensor's version), ``backward``, ``error`` (a
    backward raised) or ``note`` (an optimizer step that cannot train some
    parameters, see :class:`gradlab.UnusedStepWarning`).

    ``tensor`` is the tensor's name as shown (worded when the log is read);
    ``given`` and ``view`` are that name as data: the name the user gave and
    which view of it the tensor is (None, ``"view"`` or ``"transposed"``), or
    None for a tensor without a name.
    """

    index: int
    kind: EventKind
    tensor: str | None
    version_before: int | None
    version_after: int | None
    op: str
    where: str | None
    code: str | None
    given: str | None = None
    view: ViewKind = None


# NOTE [Lazy names]
# With names=, every save of a named tensor (a Linear saves its weight, as a
# transposed view, at every forward) is logged for gradlab.timeline. Working out
# the name there ("n_1.linear_2.weight (transposed view)") compares the tensor with
# its named base, which costs more than the save itself. So the log keeps what the
# name depends on (the tensor's identity, storage, shape, strides and offset: no
# reference to the tensor) and the name is worked out when the log is read, or when
# the tracker exits (its named bases may be gone by the time somebody reads it).
# The answer is the one Namer.lookup would have given at save time
# (Namer.lookup_kept): a named tensor alive now that has the saved tensor's id is
# that tensor (both were alive at the save), and views are told apart by
# geometry. The name is kept as data (a Name) and worded when the log is read, in
# the language in effect then.
class LaterName:
    """The name of a tensor logged by the tracker, worked out on first use (NOTE [Lazy names])."""

    __slots__ = ("namer", "tensor_id", "key", "shape", "stride", "offset", "unnamed", "_name", "_done")

    def __init__(
        self,
        namer: Namer,
        tensor_id: int,
        key: int | None,
        shape: tuple[int, ...],
        stride: tuple[int, ...],
        offset: int,
        unnamed: bool,
    ) -> None:
        self.namer: Namer | None = namer
        self.tensor_id = tensor_id
        self.key = key
        self.shape = shape
        self.stride = stride
        self.offset = offset
        self.unnamed = unnamed  # with no name: "tensor [shape]" (a write) or None (a save)
        self._name: Name | None = None
        self._done = False

    @classmethod
    def of(cls, namer: Namer, t: torch.Tensor, unnamed: bool = False) -> LaterName:
        try:
            key: int | None = t.untyped_storage().data_ptr()
            stride, offset = t.stride(), int(t.storage_offset())
        except (RuntimeError, NotImplementedError):  # no storage, no strides: only its identity can name it
            key, stride, offset = None, (), 0
        return cls(namer, id(t), key, t.shape, stride, offset, unnamed)

    @property
    def pending(self) -> bool:
        """Whether the name is still to be worked out."""
        return not self._done

    def data(self) -> Name | None:
        """The name as data, worked out on first use (the same answer Namer.lookup gave at save time)."""
        if not self._done:
            namer = self.namer
            self._name = (
                namer.lookup_kept(self.tensor_id, self.key, tuple(self.shape), tuple(self.stride), self.offset)
                if namer is not None
                else None
            )
            self._done = True
            self.namer = None
        return self._name

    def name(self) -> str | None:
        """The name as shown, in the language in effect now."""
        found = self.data()
        if found is None:
            return f"tensor {list(self.shape)}" if self.unnamed else None
        return str(found)


#: A log entry as kept: (index, kind, the tensor's name or its pending name, versions before
#: and after, the op, the user's line).
Entry = tuple[int, EventKind, "str | LaterName | None", int | None, int | None, str, Location | None]


def _event(entry: Entry) -> Event:
    i, kind, tensor, before, after, op, loc = entry
    where, code = (loc.where, loc.code) if loc else (None, None)
    if isinstance(tensor, LaterName):
        found = tensor.data()
        given, view = (found.given, found.view) if found is not None else (None, None)
        return Event(i, kind, tensor.name(), before, after, op, where, code, given, view)
    return Event(i, kind, tensor, before, after, op, where, code)


class Log:
    """One tracker's log: the latest ``maxlen`` entries, read as :class:`Event` records.

    Appending keeps the entry as it is (cheap, on the hot path). Reading builds
    the events of the entries not read before, and keeps them: a second read of
    an unchanged log builds nothing. The events are worded in the language in
    effect when read; after a change of language they are built anew.
    """

    def __init__(self, maxlen: int) -> None:
        self.entries: deque[Entry] = deque(maxlen=maxlen)
        self._events: deque[Event] = deque(maxlen=maxlen)
        self._added = 0  # entries appended so far
        self._built = 0  # entries appended when the events were last built
        self._language: str | None = None

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)
        self._added += 1

    def events(self) -> deque[Event]:
        """The log as events, oldest first (a copy: the caller may keep or change it)."""
        built, entries = self._events, self.entries
        language = i18n.language()
        new = self._added - self._built
        if language != self._language or new >= len(entries):
            built.clear()
            built.extend(_event(entry) for entry in entries)
        elif new:
            built.extend(_event(entries[i]) for i in range(len(entries) - new, len(entries)))
        self._language, self._built = language, self._added
        return deque(built, maxlen=built.maxlen)

    def name_all(self) -> None:
        """Work out every name still pending (NOTE [Lazy names]): while the named tensors are surely alive."""
        for entry in self.entries:
            tensor = entry[2]
            if isinstance(tensor, LaterName):
                tensor.data()

    def pending_names(self) -> int:
        """How many entries name a tensor not worked out yet (NOTE [Lazy names])."""
        return sum(1 for entry in self.entries if isinstance(entry[2], LaterName) and entry[2].pending)
