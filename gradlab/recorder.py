"""What a tracker records, and each tracker's own part of it: :class:`Recorder` and :class:`Scope`.

This is the recorded state behind :class:`gradlab.Tracker`, below the graph walk
and the diagnosis: it imports neither. A :class:`Recorder` belongs to the
outermost tracker of a thread (``session.recorder()``); torch's saved-tensor hooks
and :mod:`gradlab.writes`' wrappers call its entry points, and it hands each fact
to the part whose job it is:

* :class:`gradlab.registry.Registry`: the saved tensors, found by storage;
* :class:`gradlab.backwards.Backwards`: backward calls and which freed which node;
* :class:`gradlab.steps.Steps`: optimizer steps and :class:`gradlab.UnusedStepWarning`;
* :class:`gradlab.silent.SilentWrites`: writes the version counter missed;
* :class:`gradlab.cuts.Cuts`: where the user's code cut a graph or made views;
* the log (:mod:`gradlab.events`), kept by each :class:`Scope`.

When a backward fails, the recorder hands the error to the handler the tracker
gave it (``on_failure``), which diagnoses it from above. Every tracker is a
:class:`Scope`: its own names, its own log, its notes. The object is called
``recorder`` wherever gradlab holds it.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

import torch
from torch import nn

from . import fingerprint, internals, messages, session
from .backwards import BackwardCall, Backwards, tensors_of
from .cuts import Cut, Cuts, Views
from .events import Entry, EventKind, LaterName, Log
from .i18n import _, _t
from .location import Location, user_frame, user_location
from .names import Namer, NamesLike, resolve
from .notices import warn_once
from .registry import Registry
from .saved import Packed, Write, _peek, refused, silently_changed, unpack_hook
from .silent import SilentWrites
from .steps import OptimizerCall, Steps, warn_unused

# BackwardCall, Cut and OptimizerCall live with their parts; the analysis may import them from here.
__all__ = ["Recorder", "Scope", "active", "scopes", "internal", "BackwardCall", "Cut", "OptimizerCall"]


class Scope:
    """One tracker's own part of the recording: its names, its log, its notes.

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
        self._log = Log(self.MAX_EVENTS)
        self._joined: Recorder | None = None  # while active: the thread's recorder
        self._last: Recorder | None = None  # the recorder this scope saw (read after the block)
        self._static_cache: tuple[tuple[tuple[str, int], ...], Namer] | None = None

    def _recorder(self) -> Recorder | None:
        """The recorder this scope records into now, or the one it recorded into (after the block)."""
        return self._joined if self._joined is not None else self._last

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
        chain = _chain(scopes() if self._joined is not None else (self,))
        return Namer(names, fallback=chain) if names is not None else chain


def scopes() -> tuple[Scope, ...]:
    """The scopes (trackers) active in this thread, outermost first."""
    return tuple(s for s in session.trackers() if isinstance(s, Scope))


def active() -> Scope | None:
    """The innermost scope (tracker) active in this thread, or None."""
    found = session.active()
    return found if isinstance(found, Scope) else None


def _chain(scopes: Sequence[Scope]) -> Namer:
    return Namer.chained([s._own_namer() for s in scopes])


@contextlib.contextmanager
def internal() -> Iterator[None]:
    """Run gradlab's own backward calls inside: the recorder neither logs nor annotates them."""
    recorder = session.recorder()
    if not isinstance(recorder, Recorder):
        yield
        return
    recorder.internal += 1
    try:
        yield
    finally:
        recorder.internal -= 1


#: What the tracker does with a failing backward: (error, torch's message parsed, roots, call, user frame).
FailureHandler = Callable[[RuntimeError, messages.Message, list[Any], BackwardCall, FrameType | None], None]

#: The tracker's note on a backward that uses a tensor changed behind its counter: (roots, call, user frame).
SilentHandler = Callable[[list[Any], BackwardCall, FrameType | None], "str | None"]

#: What a tracker does with an in-place write torch refused on one of several views:
#: (the error, the views, which output was written (None: a view of one), the write's op and line).
ViewsHandler = Callable[[RuntimeError, Views, "int | None", str, Location | None], None]

#: The tracker's note on another in-place write torch refused: (error, op, target, user frame).
RefusedHandler = Callable[[RuntimeError, str, Any, FrameType | None], None]

_serials = itertools.count(1)
_ref = weakref.ref
#: The log's words for a backward call, by (kind, keeps_graph).
_BACKWARD_OPS = {
    ("autograd.backward", False): "backward()",
    ("autograd.backward", True): "backward(retain_graph=True)",
    ("autograd.grad", False): "autograd.grad()",
    ("autograd.grad", True): "autograd.grad(retain_graph=True)",
}
_version = internals.version
_current_node = internals.current_node


class Recorder:
    """The recording of one thread's trackers (private): the hooks' entry points, over one part per job.

    Created by the outermost tracker on entry and emptied on its exit. torch calls
    :meth:`pack` and :meth:`unpack`; :mod:`gradlab.writes` calls the ``record_*``
    methods, :meth:`inplace_failed`, :meth:`zero_grad_called`, :meth:`step_started`
    and :meth:`step_finished`. Each hands its facts to a part (the module
    docstring) and fails open (NOTE [Hooks fail open]).
    """

    def __init__(
        self,
        owner: Scope,
        on_failure: FailureHandler | None = None,
        on_silent: SilentHandler | None = None,
        on_views: ViewsHandler | None = None,
        on_refused: RefusedHandler | None = None,
    ) -> None:
        self.owner = owner
        self.serial = next(_serials)  # tells this recording apart from any other (a note names it)
        self.on_failure = on_failure
        self.on_silent = on_silent
        self.on_views = on_views
        self.on_refused = on_refused
        self.registry = Registry()
        self.backwards = Backwards()
        self.optimizers = Steps()
        self.silent = SilentWrites()
        self.cuts = Cuts()
        self.count = 0  # events logged
        self.in_step = 0  # optimizer steps running now: the in-place wrappers pass straight through
        self.internal = 0  # gradlab's own backward calls running now
        self.static: Namer | None = None  # the names consulted at save time (NOTE [Lazy names])
        self.strict = False  # any active scope's strict= (NOTE [Nested trackers])
        self.verify = False  # any active scope's verify_saved=
        self._callables = False  # whether an active scope names by a callable (refreshed at each backward)

    # -- what the analysis reads --------------------------------------------------------------------
    @property
    def history(self) -> Sequence[BackwardCall]:
        """The latest backward calls (at most ``Backwards.HISTORY``), oldest first."""
        return self.backwards.history

    @property
    def optimizer_calls(self) -> Sequence[OptimizerCall]:
        """The latest ``zero_grad()`` and ``step()`` calls, oldest first."""
        return self.optimizers.calls

    @property
    def steps(self) -> list[tuple[int, Location | None, str]]:
        """The latest optimizer steps: (event index at the step's end, the user's line, the optimizer's class)."""
        return list(self.optimizers.ends)

    def stats(self) -> dict[str, int]:
        """Sizes of the recorder's tables (see :meth:`gradlab.Tracker.stats`)."""
        return {
            "events": self.count,
            **self.registry.stats(),
            "open_steps": len(self.optimizers._open),
            "freed": self.backwards.freed(),
            "backward_calls": self.backwards.count,
        }

    # -- names and modes: what the active scopes ask for ----------------------------------------------
    def refresh_names(self, *, callables_only: bool = False) -> None:
        """The names consulted at save time: every active scope's names (callables resolved now).

        ``callables_only``: refresh only when some scope names by a callable (at each
        backward call, so modules the callable finds later name the next forward's saves).
        """
        if callables_only and not self._callables:
            return
        current = scopes()
        if not callables_only:
            self.strict = any(s.strict for s in current)
            self.verify = any(s.verify_saved for s in current)
            self._callables = any(s._names_arg is not None for s in current)
        own = [namer for namer in (s._static_namer() for s in current) if namer]
        self.static = Namer.chained(own) if own else None

    # -- the log -------------------------------------------------------------------------------------
    def log(
        self,
        kind: EventKind,
        tensor: str | LaterName | None,
        before: int | None,
        after: int | None,
        op: str,
        loc: Location | None,
    ) -> None:
        """Append one entry to the log of every active scope."""
        entry: Entry = (self.count, kind, tensor, before, after, op, loc)
        self.count += 1
        for s in session.trackers():
            s._log.append(entry)

    def _note(self, labels: str, note: str, loc: Location | None, warn: bool = True) -> None:
        """A note of an optimizer step that cannot train some parameters: in the notes, the log, a warning."""
        owner = self.owner
        owner.notes.append(note)
        self.log("note", labels, None, None, note, loc)
        if owner.warn and warn:
            warn_unused(note, loc)

    # -- the write log: in-place writes that moved (or missed) a saved tensor ---------------------------
    def _wrote(
        self,
        watched: list[tuple[Packed, int]],
        op: str,
        loc: Location | None,
        *,
        optimizer: bool = False,
        grad_mode: bool = True,
        counted: bool = True,
        into_view: bool | None = None,
    ) -> None:
        static = self.static
        for p, before in watched:
            after = internals.version(p.tensor)
            if after != before or not counted:
                write = Write(op, before, after, loc, optimizer, grad_mode, self.count, counted, into_view)
                if isinstance(p.writes, list):
                    p.writes.append(write)
                else:
                    p.writes = [write]
                tensor = p.tensor
                name = LaterName.of(static, tensor, unnamed=True) if static is not None else None
                self.log("write", name or f"tensor {list(tensor.shape)}", before, after, op, loc)

    # -- saved-tensor hooks --------------------------------------------------------------------------
    # NOTE [What a save costs]
    # pack runs for every tensor autograd saves, so it does only what cannot be done
    # later: the version and the user's line (user_location, NOTE [Cheap save
    # locations]), in a Packed record, and a weak reference to that record. Which
    # storage the record watches is worked out later, when an in-place write or an
    # optimizer step needs it (NOTE [The registry]); the name of a named tensor, when
    # the log is read (NOTE [Lazy names]).
    def pack(self, t: torch.Tensor) -> Packed:
        try:
            loc = user_location(sys._getframe(1))  # torch calls pack from C++: the walk starts at the op's caller
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)
            loc = None
        p = Packed(t, loc)
        try:
            if self.verify:
                p.fingerprint = fingerprint.fingerprint(t)
            registry = self.registry
            registry.pending.append(_ref(p))  # Registry.add, inlined: a method call costs as much
            registry.saved += 1
            if not registry.saved % Registry.PRUNE_EVERY:
                registry.prune()
                self.backwards.prune()
            static = self.static
            if static is not None:
                try:
                    key = t.untyped_storage().data_ptr()  # names.storage_key, inlined
                except (RuntimeError, NotImplementedError):
                    key = 0
                if key and static.covers(key):
                    self.log("saved", LaterName.of(static, t), p.version, p.version, _("saved for backward"), loc)
        except Exception as e:
            _failed(e)
        return p

    def unpack(self, p: Packed) -> torch.Tensor:
        __tracebackhide__ = True
        if _peek.get() is not None:  # gradlab reading save-time versions: hand the tensor out unchecked
            return unpack_hook(p)
        backwards = self.backwards
        if backwards.freeing is not None:
            try:
                node = _current_node()
                if node is not None and node is not backwards.unpacking:  # a node's first unpack
                    backwards.unpacked(p, node)  # NOTE [Who freed a node]
            except Exception as e:  # NOTE [Hooks fail open]
                _failed(e)
        if _version(p.tensor) != p.version:
            raise refused(p)  # torch's in-place error for a stale tensor, as torch would raise it
        if p.writes or p.fingerprint is not None:
            try:
                changed = silently_changed(p)
            except Exception as e:  # NOTE [Hooks fail open]
                _failed(e)
                changed = False
            if changed:
                self._silent_use(p)
        return p.tensor

    def _silent_use(self, p: Packed) -> None:
        """The running backward unpacks ``p``, changed behind its counter (NOTE [Silent writes] in silent.py)."""
        __tracebackhide__ = True
        if self.strict:
            raise fingerprint.missed_error(p, p.message_node(internals.current_node()))
        call = self.backwards.current
        if self.silent.add(p) and call is not None and self.on_silent is not None:
            try:
                self.silent.note = self.on_silent(self.backwards.roots, call, user_frame())
            except Exception as e:  # NOTE [Hooks fail open]: never let a note break the user's backward
                _failed(e)
                self.silent.note = None

    def _warn_silent(self, call: BackwardCall) -> None:
        """After a backward that used tensors changed behind their counter: the SilentWriteWarning."""
        loc = call.location
        text, new = self.silent.text(loc.where if loc is not None else None)
        if new:
            self.owner.notes.append(text)
            self.log("note", None, None, None, text, loc)
        self.silent.warn(text, loc)

    # -- what gradlab.writes calls ------------------------------------------------------------------
    def record_inplace(
        self, original: Callable[..., Any], label: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run an in-place torch function and record the saved tensors it moved."""
        __tracebackhide__ = True
        if self.in_step or not self.registry:
            return original(*args, **kwargs)
        try:
            target = args[0] if args else kwargs.get("input", kwargs.get("self"))
            targets = list(target) if isinstance(target, (list, tuple)) else [target]
            watched = self.registry.watched(targets)
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
                view = any(isinstance(t, torch.Tensor) and t._base is not None for t in targets)
                self._wrote(watched, label, user_location(), grad_mode=tracked, into_view=view)
            else:
                missed = fingerprint.missed(watched, before)
                if missed:
                    self._wrote(missed, label, user_location(), grad_mode=False, counted=False)
        except Exception as e:
            _failed(e)
        return result

    def inplace_failed(self, e: RuntimeError, label: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """torch refused an in-place write: the tracker's note (no other effect).

        A write to one of several views goes to ``on_views`` (with the views, when
        they were recorded); any other write torch refuses (GL0004 to a leaf, GL0008
        ``detach_`` of a view ...) to ``on_refused``.
        """
        try:
            m = messages.find(e)
            if m is None:
                return
            target = args[0] if args else kwargs.get("input", kwargs.get("self"))
            if m.kind != "multi_view_in_place" or not self.cuts.views:
                if self.on_refused is not None:
                    self.on_refused(e, label, target, user_frame())
                return
            if self.on_views is None:
                return
            found = self.cuts.views_of(target) if isinstance(target, torch.Tensor) else None
            if found is not None:
                self.on_views(e, found[0], found[1], label, user_location())
        except Exception as err:  # NOTE [Hooks fail open]
            _failed(err)

    def record_cut(self, label: str, args: tuple[Any, ...], result: Any, grad_before: bool) -> None:
        """Remember where user code cut a graph (NOTE [Cuts] in writes.py)."""
        if self.internal or self.in_step:
            return
        try:
            self.cuts.cut(label, args, result, grad_before, sys._getframe(2))  # the caller of writes' wrapper
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def record_views(self, label: str, result: Any) -> None:
        """Remember where user code made several views of one tensor that autograd records (NOTE [Multi-view ops])."""
        if self.internal or self.in_step:
            return
        try:
            self.cuts.made_views(label, result)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def record_backward(
        self, original: Callable[..., Any], kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run a backward call and hand the autograd errors it raises to ``on_failure``."""
        __tracebackhide__ = True
        if self.internal:
            return original(*args, **kwargs)
        backwards, silent = self.backwards, self.silent
        outer = backwards.state()
        outer_silent = silent.state()
        try:
            if self._callables:
                self.refresh_names(callables_only=True)
            call = backwards.begin(kind, args, kwargs, self.count)
            silent.begin()
            self.log("backward", None, None, None, _BACKWARD_OPS[kind, call.keeps_graph], call.location)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)
            backwards.restore(outer)
            silent.restore(outer_silent)
            return original(*args, **kwargs)
        self.in_step = 0  # a step that raised never ran its post hook
        try:
            result = original(*args, **kwargs)
            if silent.used:
                try:
                    self._warn_silent(call)
                except Warning:  # a SilentWriteWarning the user turned into an error (-W error) is theirs
                    raise
                except Exception as e:  # NOTE [Hooks fail open]
                    _failed(e)
            return result
        except RuntimeError as e:
            if self._failed_backward(e, kind, args, kwargs, call):
                # the same error, its traceback without gradlab's hook frames: raised from
                # here (this frame, then torch's engine), below the user's line
                raise e
            raise
        finally:
            backwards.restore(outer)
            silent.restore(outer_silent)

    def _failed_backward(
        self, e: RuntimeError, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any], call: BackwardCall
    ) -> bool:
        """A backward call raised ``e``: log the autograd errors and hand them to ``on_failure`` (the note).

        True when ``on_failure`` had the error (it may have taken gradlab's frames out of its traceback).
        """
        try:
            m = messages.find(e)
        except Exception as failure:  # NOTE [Hooks fail open]: the user's error goes on as it is
            _failed(failure)
            return False
        if m is None:
            return False
        loc = call.location
        if m.kind in ("graph_freed", "modified_in_place"):
            if m.kind == "modified_in_place":
                tensor = f"tensor {list(m.shape)}" if m.shape is not None else None
                op = f"expected version {m.expected_version}, is at version {m.current_version}"
                self.log("error", tensor, m.expected_version, m.current_version, op, loc)
            else:
                self.log("error", None, None, None, messages.FREED_HEAD, loc)
            if self.on_failure is not None:
                self.on_failure(e, m, self.backwards.roots, call, user_frame())  # the note; gradlab's frames taken out
                return True
        elif self.on_failure is not None:  # every other kind (NOTE [Every kind diagnosed] in gradlab.kinds)
            self.on_failure(e, m, tensors_of(kind, args, kwargs), call, user_frame())
            return True
        return False

    # -- optimizer steps and zero_grad() ---------------------------------------------------------------
    def zero_grad_called(self, owner: torch.optim.Optimizer | nn.Module) -> None:
        """Before ``zero_grad()`` of an optimizer or a module: note which parameters it zeroes (ids only)."""
        try:
            self.optimizers.zero_grad(owner, self.backwards.count)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def step_started(
        self, optimizer: torch.optim.Optimizer, closure: Callable[..., Any] | None = None
    ) -> Callable[..., Any] | None:
        """Before ``optimizer.step()``: note the versions of watched parameters (a step pre hook).

        With a ``closure``, the closure to call in its place (NOTE [Closure steps] in
        :mod:`gradlab.steps`); else None.
        """
        self.in_step += 1
        if closure is not None:
            return self._closure_step(optimizer, closure)
        self._step_begun(optimizer)
        return None

    def _closure_step(self, optimizer: torch.optim.Optimizer, closure: Callable[..., Any]) -> Callable[..., Any]:
        """``closure`` run as the user's code, the step begun once it has returned (NOTE [Closure steps])."""
        noted = False

        def user_closure(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            nonlocal noted
            depth, self.in_step = self.in_step, 0  # the closure's writes, cuts and zero_grad() are the user's
            try:
                result = closure(*args, **kwargs)
            finally:
                self.in_step = depth
            if not noted:
                noted = True
                self._step_begun(optimizer)
            return result

        return user_closure

    def _step_begun(self, optimizer: torch.optim.Optimizer) -> None:
        """The step's bookkeeping: what it may write, and the notes on parameters it cannot train."""
        try:
            registry = self.registry
            steps = self.optimizers
            params, zeros = steps.started(optimizer, self.backwards.count, registry.watched if registry else None)
            notes = steps.unused(optimizer, params, zeros, self.owner.namer)
            for labels, note, loc, warn in notes:
                self._note(labels, note, loc, warn)
        except Warning:  # an UnusedStepWarning the user turned into an error (-W error) is theirs
            raise
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def step_finished(self, optimizer: torch.optim.Optimizer) -> None:
        """After ``optimizer.step()``: record the watched parameters it wrote (a step post hook)."""
        self.in_step = max(0, self.in_step - 1)
        try:
            (watched, before), loc = self.optimizers.finished(optimizer, self.count)
            if not watched:
                return
            label = f"{type(optimizer).__name__}.step()"
            if any(internals.version(p.tensor) != v for p, v in watched):
                self._wrote(watched, label, loc, optimizer=True, grad_mode=False)
            missed = fingerprint.missed(watched, before)
            if missed:
                self._wrote(missed, label, loc, optimizer=True, grad_mode=False, counted=False)
        except Exception as e:  # NOTE [Hooks fail open]
            _failed(e)

    def clear(self) -> None:
        """Forget every record (the outermost tracker's exit)."""
        self.registry.clear()
        self.backwards.clear()
        self.optimizers.clear()
        self.silent.clear()
        self.cuts.clear()
        self.static = None
        self.in_step = 0
        self.strict = self.verify = self._callables = False


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
