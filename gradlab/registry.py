"""The saved tensors a tracker watches, found by storage when an in-place write or a step needs them.

One job: :class:`Registry` holds a weak reference to each saved record
(:class:`gradlab.saved.Packed`) and answers "which live saved records share this
tensor's storage, at which version" (NOTE [The registry]).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import torch

from . import internals
from .names import storage_key
from .saved import Packed

__all__ = ["Registry"]


# NOTE [The registry]
# An in-place write or an optimizer step must find the saved records of the
# storages it writes. Records are indexed by storage lazily: a save only appends
# a weak reference to the pending list; the first lookup after it (watched) moves
# the records still alive into the index and forgets the dead ones. In a training
# loop the backward frees every saved tensor before the step, so the step finds
# only dead references and no storage is ever looked up for them. Every 1,024
# saves prune does the same, so neither list outgrows one pruning period of
# dead references.
class Registry:
    """Weak references to the saved records, indexed by storage on first lookup (NOTE [The registry])."""

    PRUNE_EVERY = 1024

    def __init__(self) -> None:
        self._by_storage: dict[int, list[weakref.ref[Packed]]] = {}  # storage -> saved records
        self.pending: list[weakref.ref[Packed]] = []  # saved records not in the index yet (the recorder's pack appends)
        self.saved = 0  # records added so far

    def add(self, p: Packed) -> bool:
        """Watch the saved record ``p``; True when it is time to :meth:`prune`."""
        self.pending.append(weakref.ref(p))
        self.saved += 1
        return not self.saved % self.PRUNE_EVERY

    def __bool__(self) -> bool:
        """Whether some saved record may still be alive (False: no write can move a saved tensor)."""
        return bool(self.pending) or bool(self._by_storage)

    def _index(self) -> None:
        """Move the pending saved records into the index, by storage; drop the dead ones."""
        pending = self.pending
        if not pending:
            return
        self.pending = []
        index = self._by_storage
        for ref in pending:
            p = ref()
            if p is None:
                continue
            key = storage_key(p.tensor)  # the storage the tensor had when saved (the alias keeps it)
            if key:
                refs = index.get(key)
                if refs is None:
                    index[key] = [ref]
                else:
                    refs.append(ref)

    def prune(self) -> None:
        """Index the pending records and forget the dead ones."""
        self._index()
        index = self._by_storage
        for key in list(index):
            alive = [r for r in index[key] if r() is not None]
            if alive:
                index[key] = alive
            else:
                del index[key]

    def watched(self, tensors: Sequence[object]) -> list[tuple[Packed, int]]:
        """The live saved records sharing storage with ``tensors``, each with its tensor's version now."""
        self._index()
        out: list[tuple[Packed, int]] = []
        index = self._by_storage
        if not index:
            return out
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                continue
            key = storage_key(t) or 0
            refs = index.get(key)
            if refs:
                alive = []
                for ref in refs:
                    p = ref()
                    if p is not None:
                        alive.append(ref)
                        out.append((p, internals.version(p.tensor)))
                if len(alive) != len(refs):  # drop records of graphs that are gone
                    if alive:
                        index[key] = alive
                    else:
                        del index[key]
        return out

    def stats(self) -> dict[str, int]:
        return {
            "saved": self.saved,
            "registry_storages": len(self._by_storage),
            "registry_records": sum(len(refs) for refs in self._by_storage.values()),
            "pending": len(self.pending),
        }

    def clear(self) -> None:
        self._by_storage.clear()
        self.pending.clear()
