"""What a tracker records: save-time versions, in-place writes, backward calls and optimizer steps.

This is the recorded state behind :class:`gradlab.Tracker`, below the graph walk
and the diagnosis: it imports neither. A :class:`Recorder` belongs to the
outermost tracker of a thread; it holds the saved-tensor hooks' records (NOTE
[The registry]), the log of events, which backward call freed which node, and
the optimizer steps seen. Every tracker is a :class:`Scope`: its own names, its
own copy of the log, its notes. :mod:`gradlab.writes` calls the recorder of the
thread (``session.recording()``) from its wrappers; when a backward fails, the
recorder hands the error to the callback the tracker installed
(``Recorder.on_failure``), which diagnoses it from above.

Nothing here is public API except :class:`Event` and :class:`BackwardCall`
(re-exported by :mod:`gradlab`).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal

import torch
from torch import nn

from . import fingerprint, internals, messages, session
from .i18n import _, _t
from .location import Location, _library_file, user_frame, user_location
from .names import Name, Namer, NamesLike, ViewKind, resolve, storage_key
from .notices import SilentWriteWarning, UnusedStepWarning, warn_once
from .saved import Packed, Write, _peek, silently_changed, unpack_hook

__all__ = [
    "Event",
    "EventKind",
    "BackwardCall",
    "Cut",
    "OptimizerCall",
    "Views",
    "Recorder",
    "Scope",
    "active",
    "current",
    "scopes",
]


@dataclass(frozen=True)
class Cut:
    """A place where user code cut a graph: ``label`` (``.item()``), the user's line, and what it made.

    ``result`` is a weak reference to the tensor the cut returned (None for a number
    or a context manager); ``value`` the number ``.item()`` returned. Weak: a cut
    never keeps a tensor alive. ``reaches`` holds the ids of the leaf tensors (the
    parameters) the detached tensor's graph reached, read only under torch.distributed
    (NOTE [DDP's why] in gradlab/ddp.py), else empty.
    """

    label: str
    location: Location
    result: weakref.ref[torch.Tensor] | None
    value: int | float | None
    reaches: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Views:
    """Where user code made several views of one tensor (``x.split(2)``, NOTE [Multi-view ops] in writes.py).

    ``label`` is the op (``.split()``), ``location`` the user's line, ``outputs`` weak
    references to the views it returned, in order (a record never keeps a tensor alive).
    """

    label: str
    location: Location
    outputs: tuple[weakref.ref[torch.Tensor], ...]


def _distributed() -> bool:
    """Whether this process is in an initialised torch.distributed process group (DDP may run)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


def _leaves_reached(tensor: Any) -> frozenset[int]:
    """The ids of the leaf tensors (parameters) ``tensor``'s graph reaches: one walk, nothing kept."""
    found: set[int] = set()
    seen: set[Any] = set()
    stack = [getattr(tensor, "grad_fn", None)]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            found.add(id(variable))
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return frozenset(found)


#: What a tracker does with an in-place write torch refused on one of several views:
#: (the error, the views, which output was written (None: a view of one), the write's op and line).
ViewsHandler = Callable[[RuntimeError, "Views", "int | None", str, Location | None], None]


def tensors_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The tensors a backward call (``autograd.backward``/``autograd.grad``) was asked to start from."""
    outputs = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs or ())


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
    inputs: frozenset[int] | None = None  # ids of the tensors of ``inputs=``, when given


@dataclass(frozen=True)
class OptimizerCall:
    """One ``zero_grad()`` or ``step()`` the tracker saw, by ids only (it keeps no tensor or optimizer alive).

    ``after`` is how many backward calls had run before it (so it comes after the
    backward call with ``index == after - 1``); ``owner`` the id of the optimizer
    (or of the ``nn.Module`` whose ``zero_grad()`` ran), ``params`` the ids of the
    parameters it holds; ``location`` the user's line.
    """

    kind: Literal["zero_grad", "step"]
    after: int
    owner: int
    params: frozenset[int]
    location: Location | None


#: A log entry as kept (the tensor's name may still be pending, NOTE [Lazy names]).
Entry = tuple[int, EventKind, "str | _LaterName | None", int | None, int | None, str, Location | None]

#: What the tracker does with a failing backward: (error, roots, call, user frame).
FailureHandler = Callable[[RuntimeError, list[Any], BackwardCall, FrameType | None], None]

#: The tracker's note on a backward that uses a tensor changed behind its counter: (roots, call, user frame).
SilentHandler = Callable[[list[Any], BackwardCall, FrameType | None], "str | None"]


class Scope:
    """One tracker's own part of the recording: its names, its copy of the log, its notes.

    :class:`gradlab.Tracker` is a Scope; the outermost active one of a thread
    owns the :class:`Recorder` that every scope of the thread shares.
    """

    MAX_EVENTS = 10_000

    def __init__(
        self, names: NamesLike = None, *, warn: bool = True, strict: bool = False, verify_saved: bool = False
    ) -> None:
        if not isinstance(warn, bool):
            raise TypeError(
                f"warn must be True or False, not {type(warn).__name__}; pass warn=False to silence "
                "gradlab.UnusedStepWarning"
            )
        for flag, value in (("strict", strict), ("verify_saved", verify_saved)):
            if not isinstance(value, bool):
                raise TypeError(
                    _t(
                        "{flag} must be True or False, not {type}; pass {flag}=True to turn it on",
                        flag=flag,
                        type=type(value).__name__,
                    )
                )
        self.strict = strict
        self.verify_saved = verify_saved
        lazy = callable(names) and not isinstance(names, (Mapping, nn.Module))
        if names is not None and not lazy:
            resolve(names)  # validate now: a clear error at the with-statement
        self._names_arg: Callable[[], Mapping[str, object]] | None = names if lazy else None  # type: ignore[assignment]
        self._own: Namer | None = Namer(names) if not lazy else None
        self.warn = warn
        self.notes: list[str] = []
        self._entries: deque[Entry] = deque(maxlen=self.MAX_EVENTS)
        self._recorder: Recorder | None = None  # while active: the thread's recording
        self._last: Recorder | None = None  # the recording this scope saw (read after the block)
        self._static_cache: tuple[tuple[tuple[str, int], ...], Namer] | None = None

    def _recording(self) -> Recorder | None:
        return self._recorder if self._recorder is not None else self._last

    def _own_namer(self) -> Namer:
        if self._names_arg is not None:
            return Namer(self._names_arg())
        return self._own or Namer()

    def _static_namer(self) -> Namer | None:
        """The names the hooks consult at save time; a callable's, resolved now (the same modules: cached)."""
        if self._names_arg is None:
            return self._own
        try:
            mapping = self._names_arg()
            key = tuple((k, id(v)) for k, v in mapping.items())
            cached = self._static_cache
            if cached is not None and cached[0] == key:
                return cached[1]
            namer = Namer(mapping)
        except Exception:  # a hook never breaks the user's code: no names until the callable answers
            return None
        self._static_cache = (key, namer)  # ids and weak references only: keeps nothing alive
        return namer

    def namer(self, names: NamesLike = None) -> Namer:
        """The names to use: ``names`` if given, then those of this tracker and of the trackers it joined."""
        recorder = self._recorder
        chain = _chain(scopes() if recorder is not None else (self,))
        return Namer(names, fallback=chain) if names is not None else chain


def scopes() -> tuple[Scope, ...]:
    """The scopes (trackers) active in this thread, outermost first."""
    found: tuple[Scope, ...] = session.trackers()
    return found


def active() -> Scope | None:
    """The innermost scope (tracker) active in this thread, or None."""
    found = session.active()
    return found if isinstance(found, Scope) else None


def current() -> Recorder | None:
    """The recorder of this thread (its outermost tracker's), or None outside a tracker."""
    found = session.recording()
    return found if isinstance(found, Recorder) else None


@contextlib.contextmanager
def internal() -> Iterator[None]:
    """Run gradlab's own backward calls inside: the recorder neither logs nor annotates them."""
    recorder = current()
    if recorder is not None:
        recorder.internal += 1
    try:
        yield
    finally:
        if recorder is not None:
            recorder.internal -= 1


class Recorder:
    """The recording of one thread's trackers (private): hooks, registry, log, freed map, steps.

    Created by the outermost tracker on entry and emptied on its exit. The hook
    methods are called by torch (``pack``/``unpack``) and by :mod:`gradlab.writes`
    (``record_inplace``, ``record_backward``, ``step_started``, ``step_finished``).
    """

    MAX_FREED = 20_000  # nodes whose freeing backward is remembered (a few thousand steps)
    RECENT_CALLS = 4
    RECENT_CUTS = 8
    RECENT_VIEWS = 8
    HISTORY = 64

    def __init__(
        self, owner: Scope, on_failure: FailureHandler | None = None, on_silent: SilentHandler | None = None
    ) -> None:
        self.owner = owner
        self.on_failure = on_failure
        self.on_silent = on_silent
        self.count = 0
        self.in_step = 0
        self.internal = 0
        self._ncalls = 0
        self._registry: dict[int, list[weakref.ref[Packed]]] = {}  # storage -> saved records (NOTE [The registry])
        self._pending: list[weakref.ref[Packed]] = []  # saved records not in the registry yet
        self._packs = 0
        self._steps: dict[int, tuple[list[tuple[Packed, int]], list[int | None]]] = {}
        self.strict = False  # any active scope's strict= (NOTE [Nested trackers])
        self.verify = False  # any active scope's verify_saved=
        self._roots: list[Any] = []  # the running backward's roots
        self._silent: list[Packed] = []  # records the running backward used, changed behind their counter
        self._silent_note: str | None = None
        self._warned: dict[Any, Any] = {}  # the SilentWriteWarning registry: each note once per line
        self._noted: OrderedDict[tuple[str, str | None], None] = OrderedDict()  # notes kept, latest last
        self._step_counts: dict[int, int] = {}
        self._reported: set[int] = set()
        self._freed: dict[int, BackwardCall] = {}  # node sequence number -> the call that freed it
        self._lines: dict[int, Location | None] = {}  # node sequence number -> the forward line that saved for it
        self._freeing: BackwardCall | None = None
        self._unpacking: Any = None  # the node whose saved tensors the engine unpacks now
        self._current: BackwardCall | None = None
        self.recent: deque[tuple[list[Any], BackwardCall]] = deque(maxlen=self.RECENT_CALLS)
        self.history: deque[BackwardCall] = deque(maxlen=self.HISTORY)
        self.step_events: deque[tuple[int, Location | None, str]] = deque(maxlen=self.HISTORY)
        self.optimizer_calls: deque[OptimizerCall] = deque(maxlen=4 * self.HISTORY)  # zero_grad() and step()
        self.static: Namer | None = None
        self.diagnoses: deque[tuple[int, str, Any]] = deque(maxlen=16)
        self.cuts: deque[Cut] = deque(maxlen=self.RECENT_CUTS)
        self.explained: deque[tuple[int, str, Any]] = deque(maxlen=16)
        self.views: deque[Views] = deque(maxlen=self.RECENT_VIEWS)
        self.on_views: ViewsHandler | None = None  # set by the tracker: the note of a refused write to a view

    # -- what the tests and benchmarks may read ----------------------------------------------------
    def stats(self) -> dict[str, int]:
        """Sizes of the recorder's tables (see :meth:`gradlab.Tracker.stats`)."""
        return {
            "events": self.count,
            "saved": self._packs,
            "registry_storages": len(self._registry),
            "registry_records": sum(len(refs) for refs in self._registry.values()),
            "pending": len(self._pending),
            "open_steps": len(self._steps),
            "freed": len(self._freed),
            "backward_calls": self._ncalls,
        }

    @property
    def calls(self) -> list[BackwardCall]:
        """The latest backward calls that freed a graph (at most ``RECENT_CALLS``), oldest first."""
        return [call for _, call in self.recent]

    @property
    def steps(self) -> list[tuple[int, Location | None, str]]:
        """The latest optimizer steps: (event index at the step's end, the user's line, the optimizer's class)."""
        return list(self.step_events)

    # -- names -------------------------------------------------------------------------------------
    def refresh_names(self, *, callables_only: bool = False) -> None:
        """The names consulted at save time: every active scope's names (callables resolved now).

        ``callables_only``: refresh only when some scope names by a callable (at each
        backward call, so modules the callable finds later name the next forward's saves).
        """
        active = scopes()
        if not callables_only:
            self.strict = any(s.strict for s in active)
            self.verify = any(s.verify_saved for s in active)
        if callables_only and not any(s._names_arg is not None for s in active):
            return
        own = [namer for namer in (s._static_namer() for s in active) if namer]
        self.static = Namer.chained(own) if own else None

    # -- the log -----------------------------------------------------------------------------------
    def log(
        self,
        kind: EventKind,
        tensor: str | _LaterName | None,
        before: int | None,
        after: int | None,
        op: str,
        loc: Location | None,
    ) -> None:
        entry: Entry = (self.count, kind, tensor, before, after, op, loc)
        self.count += 1
        for s in scopes():
            s._entries.append(entry)

    # -- saved-tensor hooks ------------------------------------------------------------------------
    # NOTE [What a save costs]
    # pack runs for every tensor autograd saves, so it does only what cannot be done
    # later: the version and the user's line (user_location, NOTE [Cheap save
    # locations]), in a Packed record, and a weak reference to that record. Which
    # storage the record watches is worked out later, when an in-place write or an
    # optimizer step needs it (NOTE [The registry]); the name of a named tensor, when
    # the log is read (NOTE [Lazy names]).
    def pack(self, t: torch.Tensor) -> Packed:
        try:
            loc = user_location()
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)
            loc = None
        p = Packed(t, loc)
        try:
            if self.verify:
                p.fingerprint = fingerprint.fingerprint(t)
            self._pending.append(weakref.ref(p))
            static = self.static
            if static is not None:
                try:
                    key = t.untyped_storage().data_ptr()  # names.storage_key, inlined
                except (RuntimeError, NotImplementedError):
                    key = 0
                if key and static.covers(key):
                    self.log("saved", _LaterName.of(static, t), p.version, p.version, _("saved for backward"), loc)
            self._packs += 1
            if not self._packs & 1023:
                self._prune()
        except Exception as e:
            _failed(e)
        return p

    def unpack(self, p: Packed) -> torch.Tensor:
        # NOTE [Who freed a node]: the engine unpacks every saved tensor of a node it
        # runs, then frees them unless retain_graph; so an unpack during a freeing
        # backward names the call that freed the node being run (no graph walk).
        # The engine unpacks a node's saved tensors one after another: the node is
        # looked up once (held until the backward call returns, never longer).
        __tracebackhide__ = True
        if self._freeing is not None and _peek.get() is None:
            try:
                node = internals.current_node()
                if node is not None and node is not self._unpacking:
                    self._unpacking = node
                    seq = internals.sequence_nr(node)
                    if seq is not None:
                        self._freed[seq] = self._freeing
                        if p.saved_at is not None:
                            self._lines[seq] = p.saved_at
            except Exception as e:  # NOTE [Hooks fail open]
                _failed(e)
        t = unpack_hook(p)  # raises torch's in-place error for a stale tensor, as torch would
        if (p.writes or p.fingerprint is not None) and _peek.get() is None:
            try:
                changed = silently_changed(p)
            except Exception as e:  # NOTE [Hooks fail open]
                _failed(e)
                changed = False
            if changed:
                self._silent_use(p)
        return t

    # NOTE [Silent writes]: a write that changes a saved tensor without moving its
    # version counter (gradlab.fingerprint) passes unpack_hook's check. When the
    # engine unpacks such a record, the note is built at once (the graph still holds
    # what this backward has not run yet) and warned when the backward returns; with
    # strict=True the unpack raises torch's in-place error instead.
    def _silent_use(self, p: Packed) -> None:
        __tracebackhide__ = True
        if self.strict:
            raise fingerprint.missed_error(p, p.message_node(internals.current_node()))
        if any(q is p for q in self._silent):
            return
        self._silent.append(p)
        call = self._current
        if self._silent_note is None and call is not None and self.on_silent is not None:
            try:
                self._silent_note = self.on_silent(self._roots, call, user_frame())
            except Exception as e:  # NOTE [Hooks fail open]: never let a note break the user's backward
                _failed(e)
                self._silent_note = None

    def _warn_silent(self, call: BackwardCall) -> None:
        """After a backward that used tensors changed behind their counter: the SilentWriteWarning."""
        text = fingerprint.warning_text(self._silent_note)
        if len(self._warned) > 256:  # a long loop whose notes differ: keep the registry bounded
            self._warned.clear()
        loc = call.location
        key = (text, loc.where if loc is not None else None)
        if key in self._noted:  # the same note at the same line: once in notes (the warning filter decides the rest)
            self._noted.move_to_end(key)
        else:
            self._noted[key] = None
            if len(self._noted) > self.HISTORY:
                self._noted.popitem(last=False)
            self.owner.notes.append(text)
            self.log("note", None, None, None, text, loc)
        if loc is not None:
            warnings.warn_explicit(text, SilentWriteWarning, loc.filename, loc.lineno, registry=self._warned)
        else:
            warnings.warn(text, SilentWriteWarning, stacklevel=3)

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
        counted: bool = True,
    ) -> None:
        static = self.static
        for p, before in watched:
            after = internals.version(p.tensor)
            if after != before or not counted:
                write = Write(op, before, after, loc, optimizer, grad_mode, self.count, counted)
                if isinstance(p.writes, list):
                    p.writes.append(write)
                else:
                    p.writes = [write]
                tensor = p.tensor
                name = _LaterName.of(static, tensor, unnamed=True) if static is not None else None
                self.log("write", name or f"tensor {list(tensor.shape)}", before, after, op, loc)

    # -- what gradlab.writes calls ------------------------------------------------------------------
    def record_inplace(
        self, original: Callable[..., Any], label: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run an in-place torch function and record the saved tensors it moved."""
        __tracebackhide__ = True
        if self.in_step or not (self._registry or self._pending):
            return original(*args, **kwargs)
        try:
            target = args[0] if args else kwargs.get("input", kwargs.get("self"))
            targets = list(target) if isinstance(target, (list, tuple)) else [target]
            watched = self._watched(targets)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)
            watched = []
        if not watched:
            return original(*args, **kwargs)
        try:
            before = fingerprint.snapshot(watched)  # a write through .data moves only its own counter
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        try:
            if any(internals.version(p.tensor) != v for p, v in watched):
                tracked = torch.is_grad_enabled() and all(
                    t.requires_grad or not p.requires_grad
                    for t in targets
                    if isinstance(t, torch.Tensor)
                    for p, _ in watched
                )
                self._record(watched, label, user_location(), grad_mode=tracked)
            else:
                missed = fingerprint.missed(watched, before)
                if missed:
                    self._record(missed, label, user_location(), grad_mode=False, counted=False)
        except Exception as e:
            _failed(e)
        return result

    def record_cut(self, label: str, args: tuple[Any, ...], result: Any, grad_before: bool) -> None:
        """Remember where user code cut a graph (NOTE [Cuts] in writes.py): a cheap check, then one frame walk."""
        try:
            if self.internal or self.in_step:
                return
            source = args[0] if args else None
            if label in (".item()", ".detach()"):
                if not (isinstance(source, torch.Tensor) and source.requires_grad and grad_before):
                    return
                caller = sys._getframe(2)  # the cut must be the user's own call, not torch's inside a call
                if _library_file(caller.f_code.co_filename):
                    return
            elif label == "torch.tensor(x)":
                if isinstance(source, torch.Tensor):
                    if not source.requires_grad:
                        return
                elif not isinstance(source, (int, float)) or not any(
                    c.label == ".item()" and c.value == source for c in self.cuts
                ):
                    return  # a constant, not a value computed by a graph
            elif not grad_before:  # entering no_grad() where grad is already off cuts nothing
                return
            location = user_location()
            if location is None:
                return
            ref = weakref.ref(result) if isinstance(result, torch.Tensor) else None
            value = result if isinstance(result, (int, float)) else None
            reaches = _leaves_reached(source) if label == ".detach()" and _distributed() else frozenset()
            self.cuts.append(Cut(label, location, ref, value, reaches))
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def record_views(self, label: str, result: Any) -> None:
        """Remember where user code made several views of one tensor that autograd records (NOTE [Multi-view ops])."""
        try:
            if self.internal or self.in_step or not isinstance(result, (tuple, list)) or not torch.is_grad_enabled():
                return
            if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in result):
                return  # views outside autograd may be written to
            location = user_location()
            if location is not None:
                self.views.append(Views(label, location, tuple(weakref.ref(t) for t in result)))
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def views_of(self, tensor: torch.Tensor) -> tuple[Views, int | None] | None:
        """The latest recorded views ``tensor`` is one of (with its output index), or a view of (index None)."""
        for views in reversed(self.views):
            for i, ref in enumerate(views.outputs):
                if ref() is tensor:
                    return views, i
        base = tensor._base
        if base is not None:
            for views in reversed(self.views):
                if any((t := ref()) is not None and t._base is base for ref in views.outputs):
                    return views, None
        return None

    def inplace_failed(self, e: RuntimeError, label: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """torch refused an in-place write: for a write to one of several views, the tracker's note (no other effect)."""
        try:
            if self.on_views is None or not self.views:
                return
            m = messages.find(e)
            if m is None or m.kind != "multi_view_in_place":
                return
            target = args[0] if args else kwargs.get("input", kwargs.get("self"))
            found = self.views_of(target) if isinstance(target, torch.Tensor) else None
            if found is not None:
                self.on_views(e, found[0], found[1], label, user_location())
        except Exception as err:  # NOTE [Hooks fail open]
            _failed(err)

    def cut_for(self, tensors: Sequence[Any]) -> tuple[Cut, bool] | None:
        """The cut behind a backward on ``tensors`` without grad_fn: the one that made them (exact) or the latest."""
        if not self.cuts:
            return None
        for cut in reversed(self.cuts):
            made = cut.result() if cut.result is not None else None
            if made is not None and any(t is made for t in tensors):
                return cut, True
        return self.cuts[-1], False

    def record_backward(
        self, original: Callable[..., Any], kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run a backward call and hand the autograd errors it raises to ``on_failure``."""
        __tracebackhide__ = True
        if self.internal:
            return original(*args, **kwargs)
        try:
            call, roots = self._backward_call(kind, args, kwargs)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)
            return original(*args, **kwargs)
        keep, loc = call.keeps_graph, call.location
        outer = self._current, self._freeing, self._roots, self._silent, self._silent_note
        self._current, self._freeing = call, (None if keep else call)
        self._roots, self._silent, self._silent_note = roots, [], None
        self.in_step = 0  # a step that raised never ran its post hook
        try:
            result = original(*args, **kwargs)
            if self._silent:
                try:
                    self._warn_silent(call)
                except Warning:  # a SilentWriteWarning the user turned into an error (-W error) is theirs
                    raise
                except Exception as e:  # NOTE [Hooks fail open]
                    _failed(e)
            return result
        except RuntimeError as e:
            try:
                m = messages.find(e)
            except Exception as failure:  # NOTE [Hooks fail open]: the user's error goes on as it is
                _failed(failure)
                raise e from None
            if m is not None and m.kind in ("graph_freed", "modified_in_place"):
                if m.kind == "modified_in_place":
                    tensor = f"tensor {list(m.shape)}" if m.shape is not None else None
                    self.log(
                        "error",
                        tensor,
                        m.expected_version,
                        m.current_version,
                        f"expected version {m.expected_version}, is at version {m.current_version}",
                        loc,
                    )
                else:
                    self.log("error", None, None, None, messages.FREED_HEAD, loc)
                if self.on_failure is not None:
                    self.on_failure(e, roots, call, user_frame())  # the note; gradlab's frames taken out
                raise e  # the same error (raised from here: this frame, then torch's engine, below the user's)
            if m is not None and m.kind == "no_grad_fn" and self.cuts and self.on_failure is not None:
                self.on_failure(e, tensors_of(args, kwargs), call, user_frame())
                raise e
            raise
        finally:
            self._current, self._freeing, self._roots, self._silent, self._silent_note = outer
            self._unpacking = None
            if not keep and roots:
                self.recent.append((roots, call))

    def _backward_call(
        self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[BackwardCall, list[Any]]:
        """Record a backward call about to run: its :class:`BackwardCall` and its roots (the outputs' grad_fns)."""
        self.refresh_names(callables_only=True)
        first, retain_at, create_at = ("tensors", 2, 3) if kind == "autograd.backward" else ("outputs", 3, 4)
        outputs = args[0] if args else kwargs.get(first)
        retain = kwargs.get("retain_graph", args[retain_at] if len(args) > retain_at else None)
        create = kwargs.get("create_graph", args[create_at] if len(args) > create_at else False)
        keep = bool(create if retain is None else retain)
        tensors = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs or ())
        roots = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        seqs = [s for s in (internals.sequence_nr(r) for r in roots) if s is not None]
        loc = user_location(callers=2)
        at = 5 if kind == "autograd.backward" else 1
        wanted = kwargs.get("inputs", args[at] if len(args) > at else None)
        wanted = [wanted] if isinstance(wanted, torch.Tensor) else list(wanted or ())
        inputs = frozenset(id(t) for t in wanted) if wanted else None
        call = BackwardCall(self._ncalls, kind, loc, keep, max(seqs) if seqs else None, self.count, inputs)
        self._ncalls += 1
        self.history.append(call)
        label = {"autograd.grad": "autograd.grad"}.get(kind, "backward")
        self.log("backward", None, None, None, f"{label}(retain_graph=True)" if keep else f"{label}()", loc)
        return call, roots

    # NOTE [Optimizer steps]: an optimizer step runs ~20 torch calls per parameter.
    # The step hooks compare the watched parameters' versions before and after the
    # step instead, and the in-place wrappers pass straight through during a step.
    def step_started(self, optimizer: torch.optim.Optimizer) -> None:
        """Before ``optimizer.step()``: note the versions of watched parameters (a step pre hook)."""
        self.in_step += 1
        try:
            self._step_started(optimizer)
        except Warning:  # an UnusedStepWarning the user turned into an error (-W error) is theirs
            raise
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def zero_grad_called(self, owner: torch.optim.Optimizer | nn.Module) -> None:
        """Before ``zero_grad()`` of an optimizer or a module: note which parameters it zeroes (ids only)."""
        try:
            if isinstance(owner, nn.Module):
                params = frozenset(id(p) for p in owner.parameters())
            else:
                params = frozenset(id(p) for g in owner.param_groups for p in g["params"])
            self.optimizer_calls.append(OptimizerCall("zero_grad", self._ncalls, id(owner), params, user_location()))
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def _step_started(self, optimizer: torch.optim.Optimizer) -> None:
        params = [p for g in optimizer.param_groups for p in g["params"]]
        ids = frozenset(id(p) for p in params)
        self.optimizer_calls.append(OptimizerCall("step", self._ncalls, id(optimizer), ids, user_location()))
        watched = self._watched(params) if self._registry or self._pending else []
        # NOTE [Fused steps]: a fused kernel writes every parameter without moving its
        # version counter; fingerprints of the watched ones before and after tell whether it wrote.
        self._steps[id(optimizer)] = (watched, fingerprint.snapshot(watched) if watched else [])
        count = self._step_counts.get(id(optimizer), 0) + 1
        self._step_counts[id(optimizer)] = count
        self._check_step_grads(optimizer, params, zeros=count & (count - 1) == 0)

    def step_finished(self, optimizer: torch.optim.Optimizer) -> None:
        """After ``optimizer.step()``: record the watched parameters it wrote (a step post hook)."""
        watched, before = self._steps.pop(id(optimizer), ([], []))
        self.in_step = max(0, self.in_step - 1)
        try:
            self.step_events.append((self.count, user_location(), type(optimizer).__name__))
            if not watched:
                return
            label = f"{type(optimizer).__name__}.step()"
            if any(internals.version(p.tensor) != v for p, v in watched):
                self._record(watched, label, user_location(), optimizer=True, grad_mode=False)
            missed = fingerprint.missed(watched, before)
            if missed:
                self._record(missed, label, user_location(), optimizer=True, grad_mode=False, counted=False)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

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
            elif zeros and g.numel() and not _any_nonzero(g):
                zero.append(p)
        if not missing and not zero:
            return
        owner = self.owner
        namer = owner.namer()
        loc = user_location()
        where = _t(" at {where}", where=loc) if loc else ""
        name = type(optimizer).__name__
        for found, what in ((missing, _("no gradient (.grad is None)")), (zero, _("an all-zero gradient"))):
            if not found:
                continue
            self._reported.update(id(p) for p in found)
            labels = ", ".join(namer.name_of(p) or _t("parameter {shape}", shape=list(p.shape)) for p in found)
            note = _t(
                "{step}{where}: {labels} had {what}, so this step's gradient cannot train them (momentum from earlier steps "
                "may still move them).",
                step=f"{name}.step()",
                where=where,
                labels=labels,
                what=what,
            )
            owner.notes.append(note)
            self.log("note", labels, None, None, note, loc)
            if owner.warn:
                if loc is not None:  # point the warning at the user's line, not at torch's hook call
                    warnings.warn_explicit(note, UnusedStepWarning, loc.filename, loc.lineno)
                else:
                    warnings.warn(note, UnusedStepWarning, stacklevel=2)

    # -- lookups for the graph walk -----------------------------------------------------------------
    def freed_call(self, fn: Any) -> BackwardCall | None:
        """The recorded call that freed node ``fn`` (by its sequence number), if any."""
        seq = internals.sequence_nr(fn)
        return self._freed.get(seq) if seq is not None else None

    def saved_line(self, fn: Any) -> Location | None:
        """The forward line that saved tensors for node ``fn``, remembered when a backward freed them."""
        seq = internals.sequence_nr(fn)
        return self._lines.get(seq) if seq is not None else None

    def clear(self) -> None:
        """Forget every record (the outermost tracker's exit)."""
        self._registry.clear()
        self._pending.clear()
        self._steps.clear()
        self.recent.clear()
        self._freed.clear()
        self.history.clear()
        self.optimizer_calls.clear()
        self._lines.clear()
        self.static = None
        self.in_step = 0
        self.strict = self.verify = False
        self._roots, self._silent, self._silent_note = [], [], None
        self.views.clear()


def _any_nonzero(g: torch.Tensor) -> bool:
    """Whether gradient ``g`` has a non-zero element (a sparse one: among its stored values)."""
    d = g.detach()
    if d.layout != torch.strided:  # sparse gradients (nn.Embedding(sparse=True)) have no ne() kernel
        d = d.coalesce().values() if d.is_sparse else d.values()
    return bool(d.ne(0).any())


# NOTE [Hooks fail open]
# The hooks run inside the user's forward, in-place ops, backward calls and
# optimizer steps. A failure of gradlab's own bookkeeping there (a bug, or a torch
# it does not know) must not become the user's error: it is warned about once and
# the user's call runs on as without gradlab. What the hooks raise on purpose is
# torch's own in-place error (saved.unpack_hook), and the user's errors pass
# through unchanged.
def _failed(error: BaseException) -> None:
    warn_once(
        "recording",
        _t(
            "gradlab failed while recording ({error}); your code runs as usual, and gradlab's notes may be "
            "missing. Please report it with your torch version.",
            error=f"{type(error).__name__}: {error}",
        ),
        stacklevel=5,
    )


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
        self._name: Name | None = None
        self._done = False

    @classmethod
    def of(cls, namer: Namer, t: torch.Tensor, unnamed: bool = False) -> _LaterName:
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


def name_logged(entries: deque[Entry]) -> None:
    """Work out every name still pending in ``entries`` (NOTE [Lazy names])."""
    for entry in entries:
        tensor = entry[2]
        if isinstance(tensor, _LaterName):
            tensor.data()


def pending_names(entries: deque[Entry]) -> int:
    """How many entries of ``entries`` name a tensor not worked out yet (NOTE [Lazy names])."""
    return sum(1 for entry in entries if isinstance(entry[2], _LaterName) and entry[2].pending)


def events_of(entries: deque[Entry]) -> deque[Event]:
    """The log as :class:`Event` records, oldest first (names worded in the language in effect now)."""

    def event(entry: Entry) -> Event:
        i, kind, tensor, before, after, op, loc = entry
        where, code = (loc.where, loc.code) if loc else (None, None)
        if isinstance(tensor, _LaterName):
            found = tensor.data()
            given, view = (found.given, found.view) if found is not None else (None, None)
            return Event(i, kind, tensor.name(), before, after, op, where, code, given, view)
        return Event(i, kind, tensor, before, after, op, where, code)

    return deque((event(entry) for entry in entries), maxlen=Scope.MAX_EVENTS)


def _chain(scopes: Sequence[Scope]) -> Namer:
    return Namer.chained([s._own_namer() for s in scopes])
