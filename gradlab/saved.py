"""The tensors autograd saved for backward: what they are, which version, and their status."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch

from .location import Location
from .names import Namer, op_name

__all__ = ["SavedTensor", "Write", "STATUSES"]

STATUSES = ("ok", "modified_in_place", "freed", "unknown")

FREED_MARK = "Trying to backward through the graph a second time"
FREED_ACCESS_MARK = "after they have already been freed"
STALE_RE = re.compile(
    r"modified by an inplace operation: \[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\]"
    r"(?:, which is output (?P<nr>\d+) of (?P<op>\w+),)? is at version (?P<cur>\d+); "
    r"expected version (?P<exp>\d+) instead"
)


@dataclass(frozen=True)
class Write:
    """One in-place write that moved a saved tensor's version counter."""

    op: str
    before: int
    after: int
    location: Location | None

    @property
    def where(self) -> str | None:
        return self.location.where if self.location else None


@dataclass(frozen=True)
class SavedTensor:
    """One tensor a backward node saved, with its versions and status.

    ``status`` is ``ok`` (unchanged since saved), ``modified_in_place`` (its
    version moved: backward will raise), ``freed`` (a backward released it) or
    ``unknown`` (gradlab cannot tell without running user code).
    """

    node: str
    node_id: int
    attribute: str
    name: str
    shape: tuple[int, ...] | None
    saved_version: int | None
    current_version: int | None
    status: str
    modified_by: str | None = None
    where: str | None = None
    code: str | None = None
    writes: tuple[Write, ...] = field(default=(), repr=False)
    requires_grad: bool | None = None


# NOTE [Saved-tensor hooks and the version check]
# When saved_tensors_hooks are active, PyTorch stores whatever the pack hook
# returns and no longer compares versions on unpack: an identity hook silently
# disables the in-place check. gradlab's pack stores the version (Packed) and
# its unpack re-checks it, raising PyTorch's own message. Packed keeps a
# detach()ed alias: it shares the storage and version counter but has no
# grad_fn, so an op's saved output does not form a reference cycle with the
# node that saved it (an identity hook keeps such graphs alive forever).
class Packed:
    """What gradlab's pack hook stores in place of a saved tensor."""

    __slots__ = ("tensor", "version", "writes", "op", "output_nr", "is_view", "requires_grad", "source",
                 "node_seq", "__weakref__")

    def __init__(self, tensor: torch.Tensor) -> None:
        fn = tensor.grad_fn
        self.tensor = tensor.detach()
        self.version = tensor._version
        self.writes: list[Write] = []
        self.output_nr = tensor.output_nr
        self.is_view = tensor._is_view()
        self.requires_grad = tensor.requires_grad
        self.op: str | None = None
        self.source: weakref.ref | None = None
        # The node saving this tensor was created just before it saves: it holds the
        # newest sequence number.
        self.node_seq = torch._C._autograd._get_sequence_nr() - 1
        if fn is not None:
            self.op = fn.name()
            # An op's own output is saved by its own node; the error message names that
            # node. An input's message names the input's grad_fn at unpack time.
            if fn._sequence_nr() != self.node_seq:
                self.source = weakref.ref(tensor)


# While set, gradlab's unpack hooks hand back the tensor without checking and
# report which Packed they opened: this is how inspection reads save-time versions.
_peek: ContextVar[list | None] = ContextVar("gradlab_peek", default=None)


def stale_message(p: Packed) -> str:
    """PyTorch 2.13's in-place error message for a stale packed tensor."""
    t = p.tensor
    op = op_name(p.op) if p.op else None
    if p.source is not None:
        original = p.source()
        if original is not None:
            fn = original.grad_fn
            op = op_name(fn.name()) if fn is not None else None
        elif p.is_view:
            op = "AsStrided"  # a view whose base changed gets an AsStridedBackward0 grad_fn
    which = f", which is output {p.output_nr} of {op}," if op else ""
    if torch.is_anomaly_enabled():
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    shape = ", ".join(str(s) for s in t.shape)
    return (f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{t.type()} [{shape}]]{which} is at version {t._version}; expected version {p.version} instead. {hint}")


def unpack_hook(p: Packed) -> torch.Tensor:
    """gradlab's unpack hook: re-check the version PyTorch no longer checks."""
    peek = _peek.get()
    if peek is not None:
        peek.append(p)
        return p.tensor
    if p.tensor._version != p.version:
        raise RuntimeError(stale_message(p))
    return p.tensor


def is_freed_error(e: BaseException) -> bool:
    return FREED_MARK in str(e) or FREED_ACCESS_MARK in str(e)


_attr_cache: dict[type, tuple[str, ...]] = {}


def _saved_attributes(fn: object) -> tuple[str, ...]:
    cls = type(fn)
    attrs = _attr_cache.get(cls)
    if attrs is None:
        if isinstance(fn, torch.autograd.function.BackwardCFunction):
            attrs = ("saved_tensors",)
        else:
            attrs = tuple(a for a in dir(fn) if a.startswith("_saved_") and not a.endswith(("_sym_sizes", "_sym_strides")))
        _attr_cache[cls] = attrs
    return attrs


def _read(fn: object, attr: str) -> tuple[object, list[Packed], BaseException | None]:
    token = _peek.set([])
    try:
        value = getattr(fn, attr)
        return value, _peek.get() or [], None
    except RuntimeError as e:
        return None, [], e
    finally:
        _peek.reset(token)


def _write_fields(p: Packed | None) -> dict:
    if p is None or not p.writes:
        return {}
    first = p.writes[0]
    ops = []
    for w in p.writes:
        if w.op not in ops:
            ops.append(w.op)
    loc = first.location
    return {"modified_by": ", ".join(ops), "where": loc.where if loc else None,
            "code": loc.code if loc else None, "writes": tuple(p.writes)}


def inspect_node(fn: object, node_id: int, namer: Namer,
                 freed_by: Callable[[object], Location | None] | None = None) -> list[SavedTensor]:
    """Every saved tensor of one backward node, with its status.

    Reads ``_saved_*`` attributes (or ``saved_tensors`` of a custom Function).
    Versions at save time come from gradlab's packed record when the tensor was
    saved under :func:`gradlab.track`; otherwise from a dry run of the node on
    zero gradients (see NOTE [Dry run]).
    """
    node = fn.name()
    out: list[dict] = []
    unknown: list[int] = []
    refused = False  # an accessor raised (stale, freed or other): only then can a dry run add anything
    custom = isinstance(fn, torch.autograd.function.BackwardCFunction)
    for attr in _saved_attributes(fn):
        label = attr[len("_saved_"):] if attr.startswith("_saved_") else attr
        value, packed, err = _read(fn, attr)
        if err is not None:
            refused = True
            if is_freed_error(err):
                loc = freed_by(fn) if freed_by else None
                out.append(dict(attribute=label, name=f"its saved {label!r}", shape=None, saved_version=None,
                                current_version=None, status="freed", where=loc.where if loc else None,
                                code=loc.code if loc else None))
                continue
            m = STALE_RE.search(str(err))
            if m:
                shape = tuple(int(s) for s in m["shape"].split(",") if s.strip())
                desc = _stale_name(fn, namer, shape, int(m["cur"])) or (
                    f"output of {m['op']} {list(shape)}" if m["op"] else f"tensor {list(shape)}")
                out.append(dict(attribute=label, name=desc, shape=shape, saved_version=int(m["exp"]),
                                current_version=int(m["cur"]), status="modified_in_place"))
                continue
            out.append(dict(attribute=label, name=label, shape=None, saved_version=None, current_version=None,
                            status="unknown"))
            continue
        tensors = value if isinstance(value, (tuple, list)) else [value]
        multi = isinstance(value, (tuple, list))
        k = 0  # unpack hooks run once per tensor (None entries are not packed)
        for i, t in enumerate(tensors):
            if not isinstance(t, torch.Tensor):
                continue
            p = packed[k] if k < len(packed) else None
            k += 1
            entry = dict(attribute=f"{label}[{i}]" if multi else label,
                         name=namer.describe(t, None if attr != "_saved_result" else node),
                         shape=tuple(t.shape), current_version=t._version,
                         requires_grad=p.requires_grad if p is not None else t.requires_grad)
            if p is not None:
                entry["saved_version"] = p.version
                entry["status"] = "ok" if p.version == t._version else "modified_in_place"
                entry.update(_write_fields(p))
            elif custom and not packed:
                # saved_tensors of a custom Function checks versions itself (unless gradlab's
                # hooks packed them): it returned, so all are current.
                entry["saved_version"] = t._version
                entry["status"] = "ok"
            else:
                entry["saved_version"] = None
                entry["status"] = "unknown"
                unknown.append(len(out))
            out.append(entry)
    if unknown and not custom:
        if refused:
            _dry_run(fn, out, unknown)
        else:  # every accessor returned, so every version matched (NOTE [Dry run])
            for i in unknown:
                out[i].update(saved_version=out[i]["current_version"], status="ok")
    return [SavedTensor(node=node, node_id=node_id, **e) for e in out]


# NOTE [Dry run]
# A _saved_* accessor unpacks like the engine does (SavedVariable::unpack): without
# saved-tensor hooks it raises the in-place error for a stale tensor; with foreign
# hooks neither it nor the engine checks. So when every accessor of a node returned,
# a dry run can only succeed and is skipped (torch 2.13: no stale tensor found by a dry
# run whose accessor returned, over 1,440 op/input/mutation cases and the reliability
# suite). When an accessor raised, the dry run still runs, as before.
# Calling a node directly on zero gradients (under no_grad) runs the same unpack
# and check without touching .grad, optimizer state or the graph (only the
# engine releases buffers). If it raises the in-place error, the message names
# the stale tensor's shape and both versions; the first stale tensor stops the
# node, so the node's other saved tensors stay 'unknown'. AccumulateGrad and
# custom Functions are never called (they would write .grad or run user code).
def _stale_name(fn: object, namer: Namer, shape: tuple[int, ...], version: int) -> str | None:
    """Name the stale tensor an accessor refused to hand out.

    The accessor's error gives only shape and versions. A tensor saved by a node
    is usually one of the leaves it differentiates into (a Linear's weight, via
    TBackward0), so look at leaves within two hops: if exactly one has that
    shape (or its transpose) and that version, it is the one.
    """
    found: dict[int, str] = {}
    frontier = [fn]
    for _ in range(2):
        nxt = []
        for node in frontier:
            for child, _ in node.next_functions:
                if child is None:
                    continue
                var = getattr(child, "variable", None)
                if var is not None and var._version == version:
                    name = namer.name_of(var)
                    if name and tuple(var.shape) == shape:
                        found[id(var)] = name
                    elif name and var.dim() == 2 and tuple(var.shape)[::-1] == shape:
                        found[id(var)] = f"{name} (transposed view)"
                nxt.append(child)
        frontier = nxt
    return next(iter(found.values())) if len(found) == 1 else None


def _dry_run(fn: object, entries: list[dict], unknown: list[int]) -> None:
    try:
        grads = [torch.zeros(tuple(m.shape), dtype=m.dtype, device=m.device) for m in fn._input_metadata]
    except (AttributeError, RuntimeError, TypeError):
        return
    try:
        with torch.no_grad():
            fn(*grads)
    except RuntimeError as e:
        m = STALE_RE.search(str(e))
        if not m:
            return
        shape = tuple(int(s) for s in m["shape"].split(",") if s.strip())
        cur, exp = int(m["cur"]), int(m["exp"])
        for i in unknown:
            if entries[i]["shape"] == shape and entries[i]["current_version"] == cur:
                entries[i].update(saved_version=exp, status="modified_in_place")
                return
        return
    except Exception:  # noqa: BLE001 - any other failure of the node: we cannot tell
        return
    for i in unknown:
        entries[i].update(saved_version=entries[i]["current_version"], status="ok")
