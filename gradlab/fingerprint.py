"""Writes the version counter misses: a cheap checksum of a tensor's bits, and what it tells.

PyTorch's in-place check trusts the version counter: every in-place op through
autograd moves it, and a saved tensor whose counter moved is stale. Some writes
change the data and leave the counter where it was:

* fused optimizer kernels (``Adam(fused=True)``, ``AdamW``, ``SGD``, ``Adagrad``
  on torch 2.13's CPU build) write every parameter from C++ without a bump;
* a write through ``.data`` (its own counter: the parameter's does not move);
* ``torch.autograd._unsafe_preserve_version_counter`` (DDP, FSDP and compilers
  use it), which puts the counter back after a write;
* custom kernels and extensions that write into a tensor's memory.

A backward that unpacks such a tensor gets the new values, and nothing raises.
gradlab sees some of these writes itself (it wraps each optimizer step and the
in-place entry points): :func:`fingerprint` before and after tells whether the
write changed the bits even though the counter did not move.
``gradlab.track(verify_saved=True)`` fingerprints every saved tensor when it is
saved and again when backward uses it, which catches a change by anyone.

NOTE [Fingerprints]
A fingerprint is the sum of the tensor's memory read as 64-bit integers (the
sum wraps, so it is exact and the same in any order); a tensor whose bytes do
not split into whole words (a float32 tensor of odd length, a strided view) is
read element by element as integers of its own width, added up in int64. Any
change of a single element's bits changes it, and so does nearly every real
write (an optimizer step, ``mul_``, ``copy_``). It is one reduction over the
tensor (a few microseconds for a small tensor on one CPU thread, about 0.1 ms
per million float32 elements read as words). It cannot tell a write that only
reorders the elements, or changes several of them by bit patterns that cancel
exactly; a sparse, nested or meta tensor has no fingerprint (None: never
reported as changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import torch

from . import internals, messages
from .i18n import _
from .notices import prefixed


class Saved(Protocol):
    """What these functions read of a saved record (:class:`gradlab.saved.Packed`)."""

    tensor: torch.Tensor
    version: int
    output_nr: int

    @property
    def writes(self) -> Sequence[Any]: ...


_S = TypeVar("_S", bound=Saved)


__all__ = ["Saved", "fingerprint", "snapshot", "missed", "missed_error", "warning_text"]

_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def fingerprint(t: torch.Tensor) -> int | None:
    """A checksum of ``t``'s bits (NOTE [Fingerprints]), or None when it has none.

    Reading it changes nothing: no version, no ``.grad``, no graph.

    Example::

        >>> w = torch.ones(3)
        >>> before = fingerprint(w)
        >>> w.data.mul_(2)  # a write through .data: w's version does not move
        tensor([2., 2., 2.])
        >>> w._version, fingerprint(w) == before
        (0, False)
    """
    if t.layout is not torch.strided or t.is_meta or t.is_nested:
        return None
    as_int = _INT_OF_SIZE.get(t.element_size())
    if as_int is None:
        return None
    try:
        with torch.no_grad():
            bits = t.detach()
            if bits.dim() == 2 and not bits.is_contiguous() and bits.mT.is_contiguous():
                bits = bits.mT  # a Linear's saved weight: the same elements, in memory order
            if bits.is_contiguous() and (bits.numel() * bits.element_size()) % 8 == 0 and bits.data_ptr() % 8 == 0:
                # Read as 64-bit words: the fast reduction (a sum of words wraps, exactly, in any order).
                return int(bits.reshape(-1).view(torch.int64).sum())
            if bits.is_complex():
                bits = torch.view_as_real(bits)
                as_int = _INT_OF_SIZE.get(bits.element_size(), as_int)
            if bits.dtype is not as_int:
                bits = bits.view(as_int)
            return int(bits.sum(dtype=torch.int64))
    except (RuntimeError, TypeError, NotImplementedError):
        return None


_Geometry = tuple[int, tuple[int, ...], tuple[int, ...], int, torch.dtype]


def _geometry(t: torch.Tensor) -> _Geometry | None:
    try:
        return (t.untyped_storage().data_ptr(), tuple(t.shape), t.stride(), int(t.storage_offset()), t.dtype)
    except (RuntimeError, NotImplementedError):
        return None


def snapshot(watched: Sequence[tuple[Saved, int]]) -> list[int | None]:
    """The fingerprint of each watched saved tensor (one reduction per distinct view of a storage).

    Taken before an optimizer step (or another write) that gradlab wraps, and compared
    after it by :func:`missed`. A Linear saves its weight as a new transposed view at
    each forward: the views of one geometry share one fingerprint.
    """
    seen: dict[_Geometry, int | None] = {}
    out: list[int | None] = []
    for p, _v in watched:
        key = _geometry(p.tensor)
        if key is None:
            out.append(None)
            continue
        if key not in seen:
            seen[key] = fingerprint(p.tensor)
        out.append(seen[key])
    return out


def missed(watched: Sequence[tuple[_S, int]], before: Sequence[int | None]) -> list[tuple[_S, int]]:
    """The watched records whose tensor a write changed while its version counter stayed put.

    ``watched`` pairs each record with its version before the write, ``before`` is
    :func:`snapshot` of them then. A record whose version moved is not returned
    (torch's own check sees that write).
    """
    seen: dict[_Geometry, int | None] = {}
    out: list[tuple[_S, int]] = []
    for (p, version), fp in zip(watched, before, strict=True):
        if fp is None or internals.version(p.tensor) != version:
            continue
        key = _geometry(p.tensor)
        if key is None:
            continue
        if key not in seen:
            seen[key] = fingerprint(p.tensor)
        if seen[key] != fp:
            out.append((p, version))
    return out


def missed_error(p: Saved, node: str | None) -> RuntimeError:
    """torch's in-place error for ``p``, as torch raises it when the counter counts the write.

    The version shown is the one the counter would read had it counted each write
    (a foreach optimizer's step moves it by one); ``node`` is the node torch would name.
    """
    uncounted = sum(1 for w in p.writes if not w.counted) or 1
    t = p.tensor
    return RuntimeError(
        messages.stale_message(t.type(), tuple(t.shape), node, p.output_nr, p.version + uncounted, p.version)
    )


def warning_text(note: str | None) -> str:
    """The text of :class:`gradlab.SilentWriteWarning`: what happened, then gradlab's note (if any)."""
    head = _(
        "this backward used a saved tensor that changed after autograd saved it, and torch raised nothing: "
        "the write did not move the tensor's version counter. The gradients were computed from the new values, "
        "not from the ones the forward used. gradlab.track(strict=True) raises PyTorch's in-place error instead."
    )
    return head if not note else head + "\n" + prefixed(note)
