"""Record who modifies saved tensors: ``with gradlab.track() as tracker: ...``."""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from . import internals, messages, session, writes
from .i18n import _, _t
from .location import Location, user_frame, user_location
from .names import Namer, NamesLike, resolve, storage_key, view_name
from .notices import UnusedStepWarning, diagnosis_failed
from .saved import Packed, Write, _peek, unpack_hook

if TYPE_CHECKING:
    from .diagnosis import Diagnosis
    from .graph import Graph

# NOTE [Lazy imports]: diagnosing and graph walking (diagnosis, graph, advice) are
# imported when a failure or a check needs them, not when a tracker starts, so
# `python -m gradlab run` starts about as fast as `import torch`.

__all__ = ["Event", "EventKind", "BackwardCall", "Tracker", "track"]

EventKind = Literal["saved", "write", "backward", "error", "note"]


@dataclass(frozen=True)
class Event:
    """One line of the tracker's log, for :func:`gradlab.timeline`.

    ``kind`` is ``saved`` (a named tensor was saved for backward), ``write`` (an
    in-place write moved a saved tensor's version), ``backward``, ``error`` (a
    backward raised) or ``note`` (an optimizer step that cannot train some
    parameters, see :class:`gradlab.UnusedStepWarning`).
    """

    index: int
    kind: EventKind
    tensor: str | None
    version_before: int | None
    version_after: int | None
    op: str
    where: str | None
    code: str | None


@dataclass(frozen=True)
class BackwardCall:
    """One backward call the tracker saw: ``loss.backward()``, ``torch.autograd.backward`` or ``.grad``.

    ``keeps_graph`` is True with ``retain_graph=True`` (or ``create_graph=True``):
    such a call frees nothing. ``newest_node`` is the largest sequence number of
    its roots: every node of a graph built before the call has a number at most that.
    """

    index: int
    kind: str
    location: Location | None
    keeps_graph: bool
    newest_node: int | None
    event: int = 0


class Tracker:
    """Records save-time versions, in-place writes and backward calls; a context manager.

    Use it through :func:`track`. While active, a backward that raises either
    autograd error is re-raised unchanged, with gradlab's diagnosis as a note;
    :meth:`diagnosis_for` returns that diagnosis. :meth:`check` diagnoses any
    output; :attr:`events` (a bounded log) feeds :func:`gradlab.timeline`. Holds
    no tensor, graph or module alive after the block.

    NOTE [Nested trackers]
    Only the outermost tracker of a thread installs hooks and records. A tracker
    opened inside another (``%load_ext gradlab`` and a cell's own ``with
    gradlab.track(names=...)``) joins it: it receives the events logged while it
    is open, its names take precedence inside its block, and a failing backward
    gets exactly one note.
    """

    MAX_EVENTS = 10_000
    MAX_FREED = 20_000  # nodes whose freeing backward is remembered (a few thousand steps)
    RECENT_CALLS = 4
    HISTORY = 64

    def __init__(self, names: NamesLike = None, *, warn: bool = True) -> None:
        if not isinstance(warn, bool):
            raise TypeError(
                f"warn must be True or False, not {type(warn).__name__}; pass warn=False to silence "
                "gradlab.UnusedStepWarning"
            )
        lazy = callable(names) and not isinstance(names, (Mapping, nn.Module))
        if names is not None and not lazy:
            resolve(names)  # validate now: a clear error at the with-statement
        self._names_arg: Callable[[], Mapping[str, object]] | None = names if lazy else None  # type: ignore[assignment]
        self._own: Namer | None = Namer(names) if not lazy else None
        self.warn = warn
        self.active = False
        self.notes: list[str] = []
        self._events: deque[
            tuple[int, EventKind, str | _LaterName | None, int | None, int | None, str, Location | None]
        ] = deque(maxlen=self.MAX_EVENTS)
        self._root: Tracker | None = None
        # Recording state (used when this tracker is the outermost one).
        self._count = 0
        self._registry: dict[int, list[weakref.ref[Packed]]] = {}  # storage -> saved records (NOTE [The registry])
        self._pending: list[weakref.ref[Packed]] = []  # saved records not in the registry yet
        self._packs = 0
        self._in_step = 0
        self._steps: dict[int, list[tuple[Packed, int]]] = {}
        self._step_counts: dict[int, int] = {}
        self._reported: set[int] = set()
        self._freed: dict[int, BackwardCall] = {}  # node sequence number -> the call that freed it
        self._lines: dict[int, Location | None] = {}  # node sequence number -> the forward line that saved for it
        self._freeing: BackwardCall | None = None
        self._unpacking: Any = None  # the node whose saved tensors the engine unpacks now
        self._current: BackwardCall | None = None
        self._recent: deque[tuple[list[Any], BackwardCall]] = deque(maxlen=self.RECENT_CALLS)
        self._history: deque[BackwardCall] = deque(maxlen=self.HISTORY)
        self._step_events: deque[tuple[int, Location | None, str]] = deque(maxlen=self.HISTORY)
        self._calls = 0
        self._internal = 0
        self._static: Namer | None = None
        self._diagnoses: deque[tuple[int, str, Diagnosis]] = deque(maxlen=16)
        self._hooks: Any = None

    # -- names -----------------------------------------------------------------------------------
    def _own_namer(self) -> Namer:
        if self._names_arg is not None:
            return Namer(self._names_arg())
        return self._own or Namer()

    def namer(self, names: NamesLike = None) -> Namer:
        """The names to use: ``names`` if given, then those of this tracker and of the trackers it joined."""
        chain = _chain(session.trackers() if self.active else (self,))
        return Namer(names, fallback=chain) if names is not None else chain

    def _log(
        self,
        kind: EventKind,
        tensor: str | _LaterName | None,
        before: int | None,
        after: int | None,
        op: str,
        loc: Location | None,
    ) -> None:
        entry = (self._count, kind, tensor, before, after, op, loc)
        self._count += 1
        for t in session.trackers():
            t._events.append(entry)

    @property
    def events(self) -> deque[Event]:
        """The log, oldest first: at most ``MAX_EVENTS`` of the latest events."""
        return deque(
            (
                Event(
                    i,
                    kind,
                    tensor.name() if isinstance(tensor, _LaterName) else tensor,
                    before,
                    after,
                    op,
                    loc.where if loc else None,
                    loc.code if loc else None,
                )
                for i, kind, tensor, before, after, op, loc in self._events
            ),
            maxlen=self.MAX_EVENTS,
        )

    @property
    def writes(self) -> list[Event]:
        """The in-place writes to saved tensors seen so far."""
        return [e for e in self.events if e.kind == "write"]

    # -- hooks -------------------------------------------------------------------------------------
    # NOTE [What a save costs]
    # _pack runs for every tensor autograd saves, so it does only what cannot be done
    # later: the version and the user's line (user_location, NOTE [Cheap save
    # locations]), in a Packed record, and a weak reference to that record. Which
    # storage the record watches is worked out later, when an in-place write or an
    # optimizer step needs it (NOTE [The registry]); the name of a named tensor, when
    # the log is read (NOTE [Lazy names]).
    def _pack(self, t: torch.Tensor) -> Packed:
        p = Packed(t, user_location())
        self._pending.append(weakref.ref(p))
        static = self._static
        if static is not None:
            try:
                key = t.untyped_storage().data_ptr()  # names.storage_key, inlined
            except (RuntimeError, NotImplementedError):
                key = 0
            if key and static.covers(key):
                self._log("saved", _LaterName.of(static, t), p.version, p.version, _("saved for backward"), p.saved_at)
        self._packs += 1
        if not self._packs & 1023:
            self._prune()
        return p

    def _unpack(self, p: Packed) -> torch.Tensor:
        # NOTE [Who freed a node]: the engine unpacks every saved tensor of a node it
        # runs, then frees them unless retain_graph; so an unpack during a freeing
        # backward names the call that freed the node being run (no graph walk).
        # The engine unpacks a node's saved tensors one after another: the node is
        # looked up once (held until the backward call returns, never longer).
        __tracebackhide__ = True
        if self._freeing is not None and _peek.get() is None:
            node = internals.current_node()
            if node is not None and node is not self._unpacking:
                self._unpacking = node
                seq = internals.sequence_nr(node)
                if seq is not None:
                    self._freed[seq] = self._freeing
                    if p.saved_at is not None:
                        self._lines[seq] = p.saved_at
        return unpack_hook(p)

    # NOTE [The registry]
    # An in-place write or an optimizer step must find the saved records of the
    # storages it writes. Records are indexed by storage lazily: a save only appends
    # a weak reference to _pending; the first lookup after it (_watched) moves the
    # records still alive into _registry and forgets the dead ones. In a training
    # loop the backward frees every saved tensor before the step, so the step finds
    # only dead references and no storage is ever looked up for them. Every 1,024
    # saves _prune does the same, so neither list outgrows one pruning period of
    # dead references.
    def _index(self) -> None:
        """Move the pending saved records into the registry, by storage; drop the dead ones."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        registry = self._registry
        for ref in pending:
            p = ref()
            if p is None:
                continue
            key = storage_key(p.tensor)  # the storage the tensor had when saved (the alias keeps it)
            if key:
                refs = registry.get(key)
                if refs is None:
                    registry[key] = [ref]
                else:
                    refs.append(ref)

    def _prune(self) -> None:
        self._index()
        for key in list(self._registry):
            alive = [r for r in self._registry[key] if r() is not None]
            if alive:
                self._registry[key] = alive
            else:
                del self._registry[key]
        if len(self._freed) > self.MAX_FREED:
            for seq in list(self._freed)[: len(self._freed) // 2]:
                del self._freed[seq]
                self._lines.pop(seq, None)

    def _watched(self, tensors: Sequence[object]) -> list[tuple[Packed, int]]:
        self._index()
        out: list[tuple[Packed, int]] = []
        registry = self._registry
        if not registry:
            return out
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                continue
            key = storage_key(t) or 0
            refs = registry.get(key)
            if refs:
                alive = []
                for ref in refs:
                    p = ref()
                    if p is not None:
                        alive.append(ref)
                        out.append((p, internals.version(p.tensor)))
                if len(alive) != len(refs):  # drop records of graphs that are gone
                    if alive:
                        registry[key] = alive
                    else:
                        del registry[key]
        return out

    def _record(
        self,
        watched: list[tuple[Packed, int]],
        op: str,
        loc: Location | None,
        *,
        optimizer: bool = False,
        grad_mode: bool = True,
    ) -> None:
        static = self._static
        for p, before in watched:
            after = internals.version(p.tensor)
            if after != before:
                write = Write(op, before, after, loc, optimizer, grad_mode, self._count)
                if isinstance(p.writes, list):
                    p.writes.append(write)
                else:
                    p.writes = [write]
                tensor = p.tensor
                name = _LaterName.of(static, tensor, unnamed=True) if static is not None else None
                self._log("write", name or f"tensor {list(tensor.shape)}", before, after, op, loc)

    def record_inplace(
        self, original: Callable[..., Any], label: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run an in-place torch function and record the saved tensors it moved (from :mod:`gradlab.writes`)."""
        __tracebackhide__ = True
        if self._in_step or not (self._registry or self._pending):
            return original(*args, **kwargs)
        target = args[0] if args else kwargs.get("input", kwargs.get("self"))
        targets = list(target) if isinstance(target, (list, tuple)) else [target]
        watched = self._watched(targets)
        if not watched:
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        if any(internals.version(p.tensor) != v for p, v in watched):
            tracked = torch.is_grad_enabled() and all(
                t.requires_grad or not p.requires_grad
                for t in targets
                if isinstance(t, torch.Tensor)
                for p, _ in watched
            )
            self._record(watched, label, user_location(), grad_mode=tracked)
        return result

    def record_backward(
        self, original: Callable[..., Any], kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run a backward call and annotate the autograd errors it raises (from :mod:`gradlab.writes`)."""
        __tracebackhide__ = True
        if self._internal:
            return original(*args, **kwargs)
        first, retain_at, create_at = ("tensors", 2, 3) if kind == "autograd.backward" else ("outputs", 3, 4)
        outputs = args[0] if args else kwargs.get(first)
        retain = kwargs.get("retain_graph", args[retain_at] if len(args) > retain_at else None)
        create = kwargs.get("create_graph", args[create_at] if len(args) > create_at else False)
        keep = bool(create if retain is None else retain)
        tensors = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs or ())
        roots = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        seqs = [s for s in (internals.sequence_nr(r) for r in roots) if s is not None]
        loc = user_location(callers=2)
        call = BackwardCall(self._calls, kind, loc, keep, max(seqs) if seqs else None, self._count)
        self._calls += 1
        self._history.append(call)
        label = {"autograd.grad": "autograd.grad"}.get(kind, "backward")
        self._log("backward", None, None, None, f"{label}(retain_graph=True)" if keep else f"{label}()", loc)
        outer_current, outer_freeing = self._current, self._freeing
        self._current, self._freeing = call, (None if keep else call)
        self._in_step = 0  # a step that raised never ran its post hook
        try:
            return original(*args, **kwargs)
        except RuntimeError as e:
            m = messages.find(e)
            if m is not None and m.kind in ("graph_freed", "modified_in_place"):
                if m.kind == "modified_in_place":
                    tensor = f"tensor {list(m.shape)}" if m.shape is not None else None
                    self._log(
                        "error",
                        tensor,
                        m.expected_version,
                        m.current_version,
                        f"expected version {m.expected_version}, is at version {m.current_version}",
                        loc,
                    )
                else:
                    self._log("error", None, None, None, messages.FREED_HEAD, loc)
                self._annotate(e, roots, call, user_frame())
                raise e.with_traceback(_without_hook_frames(e.__traceback__))  # noqa: B904 - the same error, re-raised
            raise
        finally:
            self._current, self._freeing = outer_current, outer_freeing
            self._unpacking = None
            if not keep and roots:
                self._recent.append((roots, call))

    def _annotate(self, e: RuntimeError, roots: list[Any], call: BackwardCall, frame: FrameType | None) -> None:
        if any(key == id(e) for key, _, _ in self._diagnoses):
            return  # a nested backward already annotated this exception
        try:
            diag = self.failure_diagnosis(roots, call, frame)
        except Exception as err:  # never replace the user's error with ours, but say once why no note
            diagnosis_failed(err)
            return
        finally:
            del frame
        self._diagnoses.append((id(e), str(e), diag))
        e.add_note("\ngradlab: " + str(diag))

    def failure_diagnosis(self, roots: list[Any], call: BackwardCall, frame: FrameType | None = None) -> Diagnosis:
        """The diagnosis of a failed backward call: only the problems that made it fail."""
        from .diagnosis import check_graph

        graph = collect_roots(roots, self.namer(), self, failing=call)
        return check_graph(graph, failing=call, tracker=self._root or self, frame=frame)

    def diagnosis_for(self, error: BaseException) -> Diagnosis | None:
        """The diagnosis attached to ``error`` when a backward raised it under this tracker."""
        for key, text, diag in reversed(self._root._diagnoses if self._root is not None else self._diagnoses):
            if key == id(error) and text == str(error):
                return diag
        return None

    # NOTE [Optimizer steps]: an optimizer step runs ~20 torch calls per parameter.
    # The step hooks compare the watched parameters' versions before and after the
    # step instead, and the in-place wrappers pass straight through during a step.
    def step_started(self, optimizer: torch.optim.Optimizer) -> None:
        """Before ``optimizer.step()``: note the versions of watched parameters (a step pre hook)."""
        self._in_step += 1
        params = [p for g in optimizer.param_groups for p in g["params"]]
        self._steps[id(optimizer)] = self._watched(params) if self._registry or self._pending else []
        count = self._step_counts.get(id(optimizer), 0) + 1
        self._step_counts[id(optimizer)] = count
        self._check_step_grads(optimizer, params, zeros=count & (count - 1) == 0)

    def step_finished(self, optimizer: torch.optim.Optimizer) -> None:
        """After ``optimizer.step()``: record the watched parameters it wrote (a step post hook)."""
        watched = self._steps.pop(id(optimizer), None)
        self._in_step = max(0, self._in_step - 1)
        self._step_events.append((self._count, user_location(), type(optimizer).__name__))
        if watched and any(internals.version(p.tensor) != v for p, v in watched):
            self._record(
                watched, f"{type(optimizer).__name__}.step()", user_location(), optimizer=True, grad_mode=False
            )

    def _check_step_grads(self, optimizer: torch.optim.Optimizer, params: list[torch.Tensor], zeros: bool) -> None:
        """Note (once per parameter) a step that cannot train some parameters: no gradient or all zero.

        ``.grad is None`` is checked at every step; all-zero gradients at the
        optimizer's steps 1, 2, 4, 8, ... (a reduction per parameter costs more).
        """
        missing, zero = [], []
        for p in params:
            if not p.requires_grad or id(p) in self._reported:
                continue
            g = p.grad
            if g is None:
                missing.append(p)
            elif zeros and g.numel() and not bool(g.detach().ne(0).any()):
                zero.append(p)
        if not missing and not zero:
            return
        namer = self.namer()
        loc = user_location()
        where = _t(" at {where}", where=loc) if loc else ""
        name = type(optimizer).__name__
        for found, what in ((missing, _("no gradient (.grad is None)")), (zero, _("an all-zero gradient"))):
            if not found:
                continue
            self._reported.update(id(p) for p in found)
            labels = ", ".join(namer.name_of(p) or _t("parameter {shape}", shape=list(p.shape)) for p in found)
            note = _t(
                "{step}{where}: {labels} had {what}, so this step cannot train them.",
                step=f"{name}.step()",
                where=where,
                labels=labels,
                what=what,
            )
            self.notes.append(note)
            self._log("note", labels, None, None, note, loc)
            if self.warn:
                if loc is not None:  # point the warning at the user's line, not at torch's hook call
                    warnings.warn_explicit(note, UnusedStepWarning, loc.filename, loc.lineno)
                else:
                    warnings.warn(note, UnusedStepWarning, stacklevel=2)

    # -- public ------------------------------------------------------------------------------------
    def check(
        self, output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None, *, frame: FrameType | None = None
    ) -> Diagnosis:
        """Like :func:`gradlab.check`, with who modified each tensor, and where, filled in."""
        from .diagnosis import check_graph
        from .graph import collect

        frame = frame if frame is not None else sys._getframe(1)
        return check_graph(collect(output, self.namer(names), tracker=self), tracker=self._root or self, frame=frame)

    @property
    def history(self) -> list[BackwardCall]:
        """The latest backward calls (at most ``HISTORY``), oldest first."""
        root = self._root or self
        return list(root._history)

    @property
    def steps(self) -> list[tuple[int, Location | None, str]]:
        """The latest optimizer steps: (event index at the step's end, the user's line, the optimizer's class)."""
        root = self._root or self
        return list(root._step_events)

    def freed_by(self, fn: Any) -> Location | None:
        """The backward call that freed node ``fn``'s saved tensors, if it ran under this tracker."""
        call = self.freeing_call(fn)
        return call.location if call is not None else None

    def saved_line(self, fn: Any) -> Location | None:
        """The forward line that saved tensors for node ``fn``, remembered when a backward freed them."""
        root = self._root or self
        seq = internals.sequence_nr(fn)
        return root._lines.get(seq) if seq is not None else None

    def freeing_call(self, fn: Any) -> BackwardCall | None:
        """The :class:`BackwardCall` that freed node ``fn``, if this tracker saw it."""
        root = self._root or self
        seq = internals.sequence_nr(fn)
        call = root._freed.get(seq) if seq is not None else None
        if call is not None:
            return call
        # A node whose only saved values bypass the hooks (a Python scalar: x * 2.0)
        # is found through the graphs of the latest freeing calls instead.
        from .graph import walk

        for roots, earlier in reversed(root._recent):
            if any(node is fn for node in walk(roots)):
                found: BackwardCall = earlier
                return found
        return None

    @property
    def calls(self) -> list[BackwardCall]:
        """The latest backward calls that freed a graph (at most ``RECENT_CALLS``), oldest first."""
        root = self._root or self
        return [call for _, call in root._recent]

    def __repr__(self) -> str:
        state = "active" if self.active else "closed"
        return f"<gradlab tracker, {state}, {len(self._events)} events>"

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> Tracker:
        if self.active:
            raise RuntimeError("this tracker is already active; open a new `with gradlab.track():` block")
        outer = session.outermost()
        if outer is None:
            messages.wording(torch.is_anomaly_enabled())  # read torch's wording before our hooks exist
            self._root = self
            self._start()
        else:
            self._root = outer
        session.push(self)
        self.active = True
        (self._root or self)._refresh_static()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            session.pop(self)
        finally:
            self.active = False
            _name_logged(self._events)  # while the named tensors are surely alive
            root = self._root
            if root is self:
                self._stop()
            elif root is not None:
                root._refresh_static()

    def _refresh_static(self) -> None:
        """The names consulted at save time: every active tracker's static names (no callables)."""
        static = [t._own for t in session.trackers() if t._own is not None and t._own]
        self._static = _chain_namers(static) if static else None

    def _start(self) -> None:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        try:
            writes.install()
        except BaseException:
            self._hooks.__exit__(None, None, None)
            raise

    def _stop(self) -> None:
        try:
            writes.uninstall()
        finally:
            try:
                if self._hooks is not None:
                    self._hooks.__exit__(None, None, None)
            finally:
                self._hooks = None
                self._registry.clear()
                self._pending.clear()
                self._steps.clear()
                self._recent.clear()
                self._freed.clear()
                self._history.clear()
                self._lines.clear()
                self._static = None
                self._in_step = 0


# NOTE [Lazy names]
# With names=, every save of a named tensor (a Linear saves its weight, as a
# transposed view, at every forward) is logged for gradlab.timeline. Working out
# the name there ("n_1.linear_2.weight (transposed view)") compares the tensor with
# its named base, which costs more than the save itself. So the log keeps what the
# name depends on (the tensor's identity, storage, shape, strides and offset: no
# reference to the tensor) and the name is worked out when the log is read, or when
# the tracker exits (its named bases may be gone by the time somebody reads it).
# The answer is the one Namer.name_of would have given at save time: a named
# tensor alive now that has the saved tensor's id is that tensor (both were alive
# at the save), and views are told apart by geometry, as in Namer (view_name
# words them in the language in effect when the name is worked out).
class _LaterName:
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
        self._name: str | None = None
        self._done = False

    @classmethod
    def of(cls, namer: Namer, t: torch.Tensor, unnamed: bool = False) -> _LaterName:
        try:
            key: int | None = t.untyped_storage().data_ptr()
            stride, offset = t.stride(), int(t.storage_offset())
        except (RuntimeError, NotImplementedError):  # no storage, no strides: only its identity can name it
            key, stride, offset = None, (), 0
        return cls(namer, id(t), key, t.shape, stride, offset, unnamed)

    def name(self) -> str | None:
        if not self._done:
            self._name = self._resolve()
            self._done = True
            self.namer = None
        if self._name is None and self.unnamed:
            return f"tensor {list(self.shape)}"
        return self._name

    def _resolve(self) -> str | None:
        namer = self.namer
        while namer is not None:
            found = self._own(namer)
            if found is not None:
                return found
            namer = namer.fallback
        return None

    def _own(self, namer: Namer) -> str | None:
        # Namer._own_name, from what was kept of the tensor.
        hit = namer._by_id.get(self.tensor_id)
        if hit is not None:
            base = hit[1]()
            if base is not None and id(base) == self.tensor_id:
                return hit[0]
        shape, stride = tuple(self.shape), tuple(self.stride)
        for name, ref in namer._by_storage.get(self.key, ()) if self.key else ():
            base = ref()
            if base is None:
                continue
            if tuple(base.shape) == shape and base.stride() == stride:
                return name if base.storage_offset() == self.offset else view_name(name)
            transposed = shape == tuple(base.shape)[::-1] and stride == base.stride()[::-1]
            if len(shape) == 2 and base.dim() == 2 and transposed:
                return view_name(name, transposed=True)
            return view_name(name)
        return None


def _name_logged(events: deque[tuple[Any, ...]]) -> None:
    """Work out every name still pending in ``events`` (NOTE [Lazy names])."""
    for entry in events:
        tensor = entry[2]
        if isinstance(tensor, _LaterName):
            tensor.name()


def _chain_namers(namers: Sequence[Namer]) -> Namer:
    """One namer asking ``namers[-1]`` first, then the ones before it."""
    chain: Namer | None = None
    for own in namers:
        link = Namer()
        link._by_id, link._by_storage, link.fallback = own._by_id, own._by_storage, chain
        chain = link
    return chain or Namer()


def _chain(trackers: Sequence[Tracker]) -> Namer:
    return _chain_namers([t._own_namer() for t in trackers])


def collect_roots(roots: list[Any], namer: Namer, tracker: Tracker, failing: BackwardCall | None = None) -> Graph:
    """:func:`gradlab.collect` from grad_fn roots (the tensors may be gone by now)."""
    from .graph import collect_nodes

    return collect_nodes(roots, namer, tracker=tracker)


_HOOK_FILES = frozenset(
    os.path.realpath(os.path.join(os.path.dirname(__file__), name))
    for name in ("tracker.py", "saved.py", "writes.py", "location.py")
)


def _without_hook_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without gradlab's hook frames below the backward call (the unpack hook that raised).

    IPython hides frames marked ``__tracebackhide__`` except the last one, which it
    always shows; so the unpack hook's frame, where the in-place error is raised, is
    taken out here, and the traceback ends in torch's backward engine as without gradlab.
    """
    kept: list[TracebackType] = []
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) not in _HOOK_FILES:
            kept.append(tb)
        tb = tb.tb_next
    out: TracebackType | None = None
    for entry in reversed(kept):
        out = TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def track(names: NamesLike = None, *, warn: bool = True) -> Tracker:
    """Record save-time versions, every in-place write to a saved tensor, and every backward call.

    Use it as ``with gradlab.track(names={"n_1": n_1}) as tracker:``. While
    active, a backward that raises either autograd error is re-raised as the
    same exception with gradlab's diagnosis attached as a note; an optimizer step
    that cannot train some parameters (no gradient, or all zero) is noted once
    per parameter in ``tracker.notes`` and warned about
    (:class:`gradlab.UnusedStepWarning`; ``warn=False`` keeps only the notes).
    Everything is undone on exit. Inside another tracker, it joins that one
    (NOTE [Nested trackers] in :class:`Tracker`).

    Example::

        >>> lin = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        >>> x = torch.ones(4, 2, requires_grad=True)  # so addmm saves the weight
        >>> with track(names={"lin": lin}) as tracker:
        ...     loss = lin(x).sum()
        ...     loss.backward(retain_graph=True)
        ...     opt.step()
        ...     problem = tracker.check(loss).problems[0]
        >>> problem.tensor, problem.modified_by
        ('lin.weight (transposed view)', 'SGD.step()')
    """
    return Tracker(names, warn=warn)
