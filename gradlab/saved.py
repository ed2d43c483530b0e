"""The tensors autograd saved for backward: what they are, which version, and their status."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from . import internals, messages, session
from .fingerprint import fingerprint
from .i18n import T, Words
from .location import Location, user_location
from .names import Name, Namer, ViewKind, output_description

__all__ = ["SavedTensor", "Write", "Status"]

#: What :class:`SavedTensor.status` can be.
Status = Literal["ok", "modified_in_place", "freed", "unknown"]


@dataclass(frozen=True)
class Write:
    """One in-place write that moved a saved tensor's version counter.

    ``op`` is what wrote (``Adam.step()``, ``mul_``, ``__setitem__``,
    ``relu_(inplace=True)``); ``grad_mode`` whether autograd recorded the write
    (False under ``torch.no_grad()``, inside an optimizer step, or through a
    ``.detach()``ed alias). ``counted`` is False for a write that changed the
    tensor's data without moving its version counter (a fused optimizer step, a
    write through ``.data``; :mod:`gradlab.fingerprint`): ``before == after``, and
    torch's own check cannot see it. ``into_view`` says whether the tensor the op wrote
    was a view of another tensor: ``xs[i].copy_(v)`` writes into a view when ``xs`` is a
    tensor, into the tensor itself when ``xs`` is a list.
    """

    op: str
    before: int
    after: int
    location: Location | None
    optimizer: bool = False
    grad_mode: bool = True
    event: int | None = None
    counted: bool = True
    into_view: bool | None = None  # the written tensor was a view of another (``x[0]``, ``x.T``); None: not known

    @property
    def where(self) -> str | None:
        return self.location.where if self.location else None


@dataclass(frozen=True)
class SavedTensor:
    """One tensor a backward node saved, with its versions and status.

    ``status`` is ``ok`` (unchanged since saved), ``modified_in_place`` (its
    version moved: backward will raise), ``freed`` (a backward released it) or
    ``unknown`` (gradlab cannot tell without running user code). ``saved_at`` is
    the user line whose forward saved it (known inside :func:`gradlab.track`).
    ``name`` is the tensor as shown; ``given`` and ``view`` are its name as data
    (the name the user gave, and which view of that tensor it is), None without one.
    """

    node: str
    node_id: int
    attribute: str
    name: Words
    shape: tuple[int, ...] | None
    saved_version: int | None
    current_version: int | None
    status: Status
    modified_by: str | None = None
    where: str | None = None
    code: str | None = None
    writes: tuple[Write, ...] = field(default=(), repr=False)
    requires_grad: bool | None = None
    saved_at: Location | None = field(default=None, repr=False)
    freed_by: Location | None = field(default=None, repr=False)
    named: bool = False
    given: str | None = None
    view: ViewKind = None


# NOTE [Saved-tensor hooks and the version check]
# When saved_tensors_hooks are active, PyTorch stores whatever the pack hook
# returns and no longer compares versions on unpack: an identity hook silently
# disables the in-place check. gradlab's pack stores the version (Packed) and
# its unpack re-checks it, raising PyTorch's own message (gradlab.messages).
# For a tensor with a grad_fn, Packed keeps a detach()ed alias: it shares the
# storage and version counter but has no grad_fn, so an op's saved output does not
# form a reference cycle with the node that saved it (an identity hook keeps such
# graphs alive forever). A tensor without a grad_fn (a parameter, an input) cannot
# be in such a cycle, so Packed keeps the tensor itself, as torch does: no detach.
#
# NOTE [Which node torch names]
# torch's in-place message names a node: for an op's own output, the node that saved
# it; for a tensor saved as an op's input, that tensor's grad_fn *as it is when the
# backward runs* (after `alpha /= s`, DivBackward0, not ExpBackward0). torch keeps such
# an input alive itself (SavedVariable holds the original tensor), so its grad_fn is
# always there to read. Packed does the same for an input (`original`, a strong
# reference, as torch holds; no cycle: the input's grad_fn is an older node) and keeps
# a weak reference only to an output (`source`), whose strong reference would be the
# cycle above. A tensor is the output of the node being built when its grad_fn is the
# newest node of the thread (internals.newest_sequence_nr). A tensor saved without history
# is kept as well (torch keeps it too) and named by the grad_fn a later write gave it
# (`slot.copy_(h)`), or by none.
class Packed:
    """What gradlab's pack hook stores in place of a saved tensor."""

    __slots__ = (
        "tensor",
        "version",
        "writes",
        "output_nr",
        "is_view",
        "requires_grad",
        "source",
        "original",
        "fn_name",
        "fn_seq",
        "saved_at",
        "fingerprint",
        "made_by",
        "__weakref__",
    )

    def __init__(self, tensor: torch.Tensor, saved_at: Location | None = None) -> None:
        # Hot path (every saved tensor under track()): read each fact once, only what
        # the version check and torch's message need; names are found later.
        fn = tensor.grad_fn
        self.version = _version(tensor)
        self.saved_at = saved_at
        self.writes: list[Write] | tuple[()] = ()  # a list from the first recorded write
        self.fingerprint: int | None = None  # set under track(verify_saved=True) (gradlab.fingerprint)
        if fn is None:
            self.tensor = tensor
            self.requires_grad = tensor.requires_grad
            self.output_nr = 0
            self.is_view = False
            self.fn_name: str | None = None
            self.fn_seq: int | None = None
            self.source: weakref.ref[torch.Tensor] | None = None
            self.original: torch.Tensor | None = None
            return
        self.requires_grad = True  # a tensor with a grad_fn requires grad
        self.output_nr = tensor.output_nr
        self.is_view = _is_view(tensor)
        # The grad_fn at save time: if the node that unpacks this is that very node,
        # the tensor is the op's own output (torch's message then names the node).
        cls = type(fn)
        name = _names_by_type.get(cls)
        self.fn_name = name if name is not None else _node_name(fn)
        self.fn_seq, output = _saved_facts(tensor, fn)
        if not output:
            # an op's input: kept as torch keeps it (NOTE [Which node torch names]), and handed
            # back as it is (no cycle to break; torch rebuilds its grad_fn on unpack)
            self.tensor = self.original = tensor
            self.source = None
        else:
            self.tensor = _detach(tensor)  # an op's output: an alias without the node that saves it
            self.original = None
            self.source = _ref(tensor)
            if self.is_view:  # NOTE [The output of an in-place op on a view]
                self.made_by = _writing()
                _note_inside(tensor, self)

    def message_node(self, unpacking: Any | None) -> str | None:
        """The node torch's in-place message would name for this tensor (None for a leaf).

        torch names the saving node for an op's own output, and otherwise the
        saved tensor's grad_fn as it is *now* (a view whose base changed in place
        has a regenerated ``AsStridedBackward0``; a tensor saved without history
        has the node of the write that gave it one).
        """
        if self.fn_name is None:
            # no history at save time: torch kept the tensor itself and names its grad_fn as it is
            # now, which a later write of a tensor with history gave it (`buf.copy_(h)`; a view of
            # such a base has a regenerated AsStridedBackward0). A leaf that requires grad has none.
            fn = self.tensor.grad_fn
            return fn.name() if fn is not None else None
        if (
            unpacking is not None
            and self.fn_seq is not None
            and internals.sequence_nr(unpacking) == self.fn_seq
            and unpacking.name() == self.fn_name
        ):
            return self.fn_name
        name = self.inplace_node()
        if name is not None:
            return name
        original = self.original if self.original is not None else self.source() if self.source is not None else None
        if original is not None:
            fn = original.grad_fn
            return fn.name() if fn is not None else None
        return "AsStridedBackward0" if self.is_view else self.fn_name

    def inplace_node(self) -> str | None:
        """For a view saved as the output of the in-place call that wrote it, the node torch names for that call
        (NOTE [The output of an in-place op on a view]); None otherwise, or when torch's probe cannot tell."""
        made_by = getattr(self, "made_by", None)  # set only for such a view
        return messages.inplace_on_view_node(*made_by) if made_by is not None else None


# NOTE [The output of an in-place op on a view]
# ``nn.ReLU(inplace=True)`` on a Linear's 3-d output writes into a view (the output is a
# view of the 2-d product). torch records the write on the base as a CopySlices node
# that wraps ReLU's own node, and ReLU saves its result: when a later write makes that
# result stale, torch's message names the wrapped node ("output 0 of Relu"), which
# Python cannot reach (the view's grad_fn is a regenerated AsStridedBackward0). The
# in-place call running when the result was saved is known: gradlab's wrapper keeps it
# on the thread while it runs (session._Local.writing). The record keeps the function
# and its arguments other than the tensor (when none is a tensor: nothing kept alive),
# and the message names the node torch names for that call, read from torch itself
# (messages.inplace_on_view_node), or the view's grad_fn when that cannot be told.
_local = session.thread_state()


def _writing() -> tuple[Callable[..., Any], tuple[Any, ...], tuple[tuple[str, Any], ...]] | None:
    """The in-place call saving this output now, without its tensor (None without one, or with other tensors)."""
    running = _local.writing
    if running is None:
        return None
    fn, args, kwargs = running
    rest = args[1:]
    if any(isinstance(a, torch.Tensor) for a in (*rest, *kwargs.values())):
        return None
    try:
        hash((rest, tuple(kwargs.items())))
    except TypeError:
        return None
    return fn, rest, tuple(sorted(kwargs.items()))


# The records saved inside a CopySlices node (NOTE [A record read inside another node]), by the node's id and
# sequence number (a node cannot be weakly referenced), as weak references: they die with the node's graph.
_inside: dict[tuple[int, int | None], list[weakref.ref[Packed]]] = {}
_inside_limit = [256]  # pruned when it grows past this; then the limit is twice what stays


def _note_inside(tensor: torch.Tensor, p: Packed) -> None:
    """Remember ``p``, an in-place op's output saved inside the CopySlices node of the view's base."""
    base = tensor._base
    fn = base.grad_fn if base is not None else None
    if fn is None:
        return
    if len(_inside) > _inside_limit[0]:  # drop the nodes whose records all died (amortised: never per save)
        for key in [k for k, refs in _inside.items() if all(r() is None for r in refs)]:
            del _inside[key]
        _inside_limit[0] = max(256, 2 * len(_inside))
    _inside.setdefault((id(fn), internals.sequence_nr(fn)), []).append(weakref.ref(p))


def _inside_of(fn: Any) -> list[Packed]:
    """The live records saved inside ``fn`` (a CopySlices node), oldest first."""
    refs = _inside.get((id(fn), internals.sequence_nr(fn)), ())
    return [p for p in (r() for r in refs) if p is not None]


_version = internals.version
_is_view = internals.is_view
_saved_facts = internals.saved_facts
_ref = weakref.ref
# torch's own detach, taken when gradlab is imported (before any tracker wraps Tensor.detach):
# a save is not one of the user's cuts (NOTE [Cuts] in writes.py), and the wrapper costs a microsecond.
_detach = torch.Tensor.detach
_names_by_type: dict[type, str] = {}


def _node_name(fn: Any) -> str:
    """``fn.name()``, from a cache by node class when the class fixes the name (it usually does)."""
    cls = type(fn)
    name = _names_by_type.get(cls)
    if name is None:
        name = fn.name()
        short = cls.__name__
        if name == short or name.endswith("::" + short):  # not a generic wrapper class
            _names_by_type[cls] = name
    return name


def pack_hook(t: torch.Tensor) -> Packed:
    """A pack hook that records the version (for :func:`gradlab.measure_memory`)."""
    return Packed(t)


def packed_with_location(t: torch.Tensor) -> Packed:
    """A :class:`Packed` that also records the user line whose forward saved ``t``."""
    return Packed(t, user_location())


# While set, gradlab's unpack hooks hand back the tensor without checking and
# report which Packed they opened: this is how inspection reads save-time versions.
_peek: ContextVar[list[Packed] | None] = ContextVar("gradlab_peek", default=None)


def stale_error(p: Packed, node: Any | None = None) -> RuntimeError:
    """PyTorch's in-place error for a stale packed tensor, in the installed torch's words.

    ``node`` is the backward node the engine is running (looked up when not given).
    """
    t = p.tensor
    return RuntimeError(
        messages.stale_message(
            t.type(),
            tuple(t.shape),
            p.message_node(node if node is not None else internals.current_node()),
            p.output_nr,
            internals.version(t),
            p.version,
        )
    )


# The record the engine refused last, with the node it was running then (by id,
# sequence number and name: a node cannot be weakly referenced, and the engine may run
# on another thread than the diagnosis): NOTE [Other hooks' saved tensors].
_refused: tuple[int, int | None, weakref.ref[Packed]] | None = None


def unpack_hook(p: Packed) -> torch.Tensor:
    """gradlab's unpack hook: re-check the version PyTorch no longer checks."""
    __tracebackhide__ = True  # IPython hides this frame: the traceback ends at the user's line
    peek = _peek.get()
    if peek is not None:
        peek.append(p)
        return p.tensor
    if internals.version(p.tensor) != p.version:
        raise refused(p)
    return p.tensor


def refused(p: Packed) -> RuntimeError:
    """torch's in-place error for stale ``p`` (:func:`stale_error`), the refusal remembered for the node running now.

    Both unpack hooks (this module's and the recorder's) raise it: NOTE [Other hooks' saved tensors].
    """
    global _refused
    node = internals.current_node()
    if node is not None:
        _refused = (id(node), internals.sequence_nr(node), weakref.ref(p))
    return stale_error(p, node)


def silently_changed(p: Packed) -> bool:
    """Whether ``p``'s tensor changed since it was saved though its version counter says it did not.

    True after a write gradlab saw that the counter missed (``Write.counted`` is
    False), after a recorded write whose counter was put back
    (``torch.autograd._unsafe_preserve_version_counter``), and, under
    ``track(verify_saved=True)``, when the tensor's fingerprint differs from the
    one taken when it was saved (:mod:`gradlab.fingerprint`).
    """
    if p.writes and internals.version(p.tensor) == p.version:
        return True
    if p.fingerprint is not None:
        return fingerprint(p.tensor) != p.fingerprint
    return False


# NOTE [Other hooks' saved tensors]
# A node saved under somebody else's saved-tensor hooks (a non-reentrant checkpoint,
# save_on_cpu, the user's own) holds what their pack hook returned, and reading the
# attribute runs their unpack hook: a non-reentrant checkpoint then runs the user's
# checkpointed function again (outside a backward, at every read), which prints, draws
# random numbers and updates running statistics as the user's code does. An inspector
# never runs user code, so such an attribute is not read: its tensors are reported as
# unknown. What the node holds is looked at without unpacking (internals.packed_objects).
# One thing is known all the same: when the engine, running this node, unpacked it
# through those hooks and they read one of gradlab's records (the checkpoint's
# recomputation reads the checkpoint's inputs, which gradlab's hooks saved), and
# gradlab's unpack hook refused that record as stale, that record is why the node
# failed: it is reported for the node, under its own name and versions, as saved by
# what saved it (the checkpoint), never under the name of the node's own tensor.
def _foreign(fn: object, attr: str) -> str | None:
    """What packed ``fn``'s saved ``attr`` when hooks other than gradlab's did (reading it would run them), else None.

    The answer names the hooks' module (``torch.utils.checkpoint``) or their object's type.
    """
    held = internals.packed_objects(fn, attr)
    for item in held or ():
        if item is not None and not isinstance(item, (torch.Tensor, Packed)):
            kind = type(item)
            return kind.__module__ if kind.__module__.startswith("torch.") else kind.__qualname__
    return None


def _refused_for(fn: Any) -> Packed | None:
    """The record the engine refused while running ``fn``, if it is still alive."""
    refused = _refused
    if refused is None or refused[0] != id(fn) or refused[1] != internals.sequence_nr(fn):
        return None
    return refused[2]()


def _refused_entry(p: Packed, label: str, namer: Namer, saver: str) -> dict[str, Any]:
    """The record of a stale tensor the engine refused while reading ``label`` through other hooks."""
    t = p.tensor
    found = namer.lookup(t)
    maker = p.inplace_node()  # NOTE [The output of an in-place op on a view]
    entry: dict[str, Any] = dict(
        attribute=label,
        node=saver,
        name=str(found) if found else namer.describe(t, maker or p.fn_name),
        **_name_fields(found),
        shape=tuple(t.shape),
        saved_version=p.version,
        current_version=internals.version(t),
        status="modified_in_place",
        requires_grad=p.requires_grad,
        saved_at=p.saved_at,
        refused=True,
    )
    entry.update(_write_fields(p))
    return entry


def _read(fn: object, attr: str) -> tuple[object, list[Packed], BaseException | None]:
    token = _peek.set([])
    try:
        value = getattr(fn, attr)
        return value, _peek.get() or [], None
    except RuntimeError as e:
        return None, [], e
    finally:
        _peek.reset(token)


def _write_fields(p: Packed | None) -> dict[str, Any]:
    if p is None or not p.writes:
        return {}
    first = p.writes[0]
    ops: list[str] = []
    for w in p.writes:
        if w.op not in ops:
            ops.append(w.op)
    loc = first.location
    return {
        "modified_by": ", ".join(ops),
        "where": loc.where if loc else None,
        "code": loc.code if loc else None,
        "writes": tuple(p.writes),
    }


def inspect_node(
    fn: Any,
    node_id: int,
    namer: Namer,
    freed_by: Callable[[Any], Location | None] | None = None,
    saved_line: Callable[[Any], Location | None] | None = None,
) -> list[SavedTensor]:
    """Every saved tensor of one backward node, with its status.

    Reads the node's saved attributes (``internals.saved_attributes``). Versions
    at save time come from gradlab's packed record when the tensor was saved under
    :func:`gradlab.track`; otherwise from the accessors themselves or a dry run of
    the node on zero gradients (see NOTE [Dry run]).
    """
    node = internals.node_name(fn)
    out: list[dict[str, Any]] = []
    unknown: list[int] = []
    refused = False  # an accessor raised (stale, freed or other): only then can a dry run add anything
    custom = isinstance(fn, torch.autograd.function.BackwardCFunction)
    for attr in internals.saved_attributes(fn):
        label = attr[len("_saved_") :] if attr.startswith("_saved_") else attr
        foreign = _foreign(fn, attr)
        if foreign is not None:  # NOTE [Other hooks' saved tensors]: reading would run their code
            why = _refused_for(fn) if not any(e.get("refused") for e in out) else None
            if why is not None:
                out.append(_refused_entry(why, label, namer, foreign))
                continue
            out.append(
                dict(
                    attribute=label, name=label, shape=None, saved_version=None, current_version=None, status="unknown"
                )
            )
            continue
        value, packed, err = _read(fn, attr)
        if err is not None:
            refused = True
            m = messages.find(err)
            if m is not None and m.kind == "graph_freed":
                loc = freed_by(fn) if freed_by else None
                out.append(
                    dict(
                        attribute=label,
                        name=T("its saved {attribute}", attribute=repr(label)),
                        shape=None,
                        saved_version=None,
                        current_version=None,
                        status="freed",
                        freed_by=loc,
                        saved_at=saved_line(fn) if saved_line else None,
                        where=loc.where if loc else None,
                        code=loc.code if loc else None,
                    )
                )
                continue
            if m is not None and m.kind == "modified_in_place" and m.shape is not None:
                out.extend(_stale_entries(fn, attr, label, m, namer))
                continue
            out.append(
                dict(
                    attribute=label, name=label, shape=None, saved_version=None, current_version=None, status="unknown"
                )
            )
            continue
        tensors = value if isinstance(value, (tuple, list)) else [value]
        multi = isinstance(value, (tuple, list))
        owners = _owners(tensors, packed)  # NOTE [Records read through other hooks]
        for i, t in enumerate(tensors):
            if not isinstance(t, torch.Tensor):
                continue
            p = owners.get(i)
            found = namer.lookup(t)
            entry: dict[str, Any] = dict(
                attribute=f"{label}[{i}]" if multi else label,
                name=found.words() if found else namer.describe(t, None if attr != "_saved_result" else node),
                **_name_fields(found),
                shape=tuple(t.shape),
                current_version=internals.version(t),
                requires_grad=p.requires_grad if p is not None else t.requires_grad,
            )
            if p is not None:
                entry["saved_version"] = p.version
                stale = p.version != internals.version(t) or silently_changed(p)
                entry["status"] = "modified_in_place" if stale else "ok"
                entry["saved_at"] = p.saved_at
                entry.update(_write_fields(p))
            elif custom and not packed:
                # saved_tensors of a custom Function checks versions itself (unless gradlab's
                # hooks packed them): it returned, so all are current.
                entry["saved_version"] = internals.version(t)
                entry["status"] = "ok"
            else:
                entry["saved_version"] = None
                entry["status"] = "unknown"
                unknown.append(len(out))
            out.append(entry)
    if not any(e.get("status") == "modified_in_place" for e in out):
        why = _refused_for(fn)  # NOTE [A record read inside another node]
        inside = [why] if why is not None else [p for p in _inside_of(fn) if internals.version(p.tensor) != p.version]
        for p in inside:
            out.append(_refused_entry(p, "result" if p.source is not None else "self", namer, node))
    if unknown and not custom:
        if refused:
            _dry_run(fn, out, unknown)
        else:  # every accessor returned, so every version matched (NOTE [Dry run])
            for i in unknown:
                out[i].update(saved_version=out[i]["current_version"], status="ok")
    return [
        SavedTensor(node=e.pop("node", node), node_id=node_id, **{k: v for k, v in e.items() if k != "refused"})
        for e in out
    ]


# NOTE [A record read inside another node]
# An in-place op on a view (`relu_` on a Linear's 3-d output, which is a view of its 2-d
# result) is recorded on the base as a CopySlices node that wraps the op's own backward
# node. The wrapped node, and what it saved, cannot be reached from Python: CopySlices
# has no saved attributes to read. When the engine, running such a node, unpacked one of
# gradlab's records and gradlab's unpack hook refused it as stale, that record is why the
# node failed, though no accessor shows it: it is reported for the node that ran, under
# its own name and versions (an op's own output as its "result", an input as "self").
# Before the backward (check()), the records an in-place op saved as its output inside
# such a node are remembered by the node (_note_inside): the stale ones are reported.


# NOTE [Records read through other hooks]
# Reading a saved attribute runs the unpack hooks, and gradlab's hands over its record
# (the _peek list). Normally that is one record per tensor the accessor returns, in
# order. Under other saved-tensor hooks it is not: a non-reentrant checkpoint's unpack
# recomputes the checkpointed forward the first time one of its tensors is read, and
# the records handed over then are those of what the recomputation read (the
# checkpoint's inputs, which gradlab's hooks did save), not the node's recomputed
# tensors. A record belongs to a tensor only when both are the same memory: the same
# storage, shape, strides and offset (unpacking hands back a tensor that shares
# the record's). A tensor without its record is reported as unknown.
def _owners(tensors: list[Any] | tuple[Any, ...], packed: list[Packed]) -> dict[int, Packed]:
    """Which record of ``packed`` belongs to the i-th of ``tensors``, in order (NOTE [Records read through other hooks])."""
    out: dict[int, Packed] = {}
    k = 0
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            continue
        for j in range(k, len(packed)):
            if _same_memory(packed[j].tensor, t):
                out[i] = packed[j]
                k = j + 1
                break
    return out


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` view the same elements of the same storage (same shape and dtype without storage)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.layout != b.layout:
        return False
    try:
        return bool(
            a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            and a.stride() == b.stride()
            and a.storage_offset() == b.storage_offset()
        )
    except (RuntimeError, NotImplementedError):  # sparse and other tensors without strided storage
        return True


def _stale_entries(fn: Any, attr: str, label: str, m: messages.Message, namer: Namer) -> list[dict[str, Any]]:
    """The records of an attribute whose accessor refused a stale tensor (outside a tracker).

    The tensor itself is read without the check (``internals.raw_saved``), so it is
    named exactly, views included; when torch cannot hand it out, it is named from
    the message's shape and version (:func:`_stale_name`) or described as unknown.
    """
    shape, cur = m.shape or (), m.current_version
    raw = internals.raw_saved(fn, attr)
    if raw is not None:
        multi = len(raw) > 1 or attr == "saved_tensors"
        found = []
        for i, t in enumerate(raw):
            if t is None or tuple(t.shape) != shape or internals.version(t) != cur:
                continue
            given = namer.lookup(t)
            found.append(
                dict(
                    attribute=f"{label}[{i}]" if multi else label,
                    **_name_fields(given),
                    name=given.words()
                    if given
                    else namer.describe(t, m.node if t.grad_fn is None and m.node else None),
                    shape=shape,
                    saved_version=m.expected_version,
                    current_version=cur,
                    status="modified_in_place",
                    requires_grad=t.requires_grad,
                )
            )
        if found:
            return found[:1]  # the accessor stops at the first stale tensor, as the engine does
    name = _stale_name(fn, namer, shape, cur, label) if cur is not None else None
    desc = (
        name.words()
        if name
        else (output_description(m.node, shape) if m.node else T("tensor {shape}", shape=list(shape)))
    )
    return [
        dict(
            attribute=label,
            name=desc,
            shape=shape,
            saved_version=m.expected_version,
            current_version=cur,
            status="modified_in_place",
            **_name_fields(name),
        )
    ]


def _name_fields(name: Name | None) -> dict[str, Any]:
    """The name fields of a :class:`SavedTensor` record (``named``, ``given``, ``view``)."""
    if name is None:
        return {"named": False, "given": None, "view": None}
    return {"named": True, "given": name.given, "view": name.view}


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
def _stale_name(fn: Any, namer: Namer, shape: tuple[int, ...], version: int, attribute: str = "") -> Name | None:
    """Name the stale tensor an accessor refused to hand out, or None when it cannot be known.

    The accessor's error gives only shape and versions. A stale tensor is a named
    tensor (or a view of one) whose storage is at ``version`` now, with ``shape``
    or its transpose. The candidates are first the leaves within two hops of the
    node (a Linear's weight, via TBackward0), then every tensor in ``names``
    (plain tensors, buffers, and views of either). Exactly one candidate must fit;
    several that fit equally (a LayerNorm's weight and bias) are told apart by the
    saved attribute's name (``weight``); otherwise the answer is None.
    """

    def fits(var: torch.Tensor, name: Name) -> Name | None:
        if internals.version(var) != version:
            return None
        if tuple(var.shape) == shape:
            return name
        if var.dim() == 2 and tuple(var.shape)[::-1] == shape:
            return Name(name.given, "transposed") if name.view is None else name
        return None

    near: dict[int, Name] = {}
    frontier = [fn]
    for _ in range(2):
        nxt = []
        for node in frontier:
            for child, _ in node.next_functions:
                if child is None:
                    continue
                var = getattr(child, "variable", None)
                if var is not None:
                    name = namer.lookup(var)
                    fitted = fits(var, name) if name else None
                    if fitted is not None:
                        near[id(var)] = fitted
                nxt.append(child)
        frontier = nxt
    if len(near) > 1 and attribute:
        near = {k: v for k, v in near.items() if v.given.rsplit(".", 1)[-1] == attribute}
    if len(near) == 1:
        return next(iter(near.values()))
    if near:
        return None
    found: dict[int, Name] = {}
    for given, t in namer.named():
        fitted = fits(t, Name(given))
        if fitted is not None:
            found.setdefault(id(t), fitted)
    return next(iter(found.values())) if len(found) == 1 else None


def _dry_run(fn: Any, entries: list[dict[str, Any]], unknown: list[int]) -> None:
    meta = internals.input_metadata(fn)
    if meta is None:
        return
    grads = [torch.zeros(shape, dtype=dtype, device=device) for shape, dtype, device in meta]
    try:
        with torch.no_grad():
            fn(*grads)
    except RuntimeError as e:
        m = messages.find(e)
        if m is None or m.kind != "modified_in_place" or m.shape is None:
            return
        for i in unknown:
            if entries[i]["shape"] == m.shape and entries[i]["current_version"] == m.current_version:
                entries[i].update(saved_version=m.expected_version, status="modified_in_place")
                return
        return
    except Exception:
        return
    for i in unknown:
        entries[i].update(saved_version=entries[i]["current_version"], status="ok")
