"""Record who modifies saved tensors: ``with gradlab.track() as tracker: ...``."""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.optim.optimizer as _optim
from torch import nn
from torch.overrides import TorchFunctionMode

from .check import Diagnosis, diagnose
from .graph import collect
from .location import Location, user_location
from .names import Namer, NamesLike, resolve, storage_key
from .saved import STALE_RE, Packed, Write, _peek, is_freed_error, unpack_hook

__all__ = ["Event", "Tracker", "track", "active_tracker"]

_INPLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
    "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__",
})
_PLAIN, _INPLACE, _BACKWARD = 0, 1, 2
_kinds: dict[object, int] = {}


def _kind(func: object) -> int:
    try:
        return _kinds[func]
    except KeyError:
        pass
    except TypeError:  # unhashable callable
        return _PLAIN
    name = getattr(func, "__name__", "")
    if func is torch.Tensor.backward:
        kind = _BACKWARD
    elif name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("__") and name != "requires_grad_"):
        kind = _INPLACE
    else:
        kind = _PLAIN
    _kinds[func] = kind
    return kind


@dataclass(frozen=True)
class Event:
    """One line of the tracker's log, for :func:`gradlab.timeline`.

    ``kind`` is ``saved`` (a named tensor was saved for backward), ``write`` (an
    in-place write moved a saved tensor's version), ``backward`` or ``error``.
    """

    index: int
    kind: str
    tensor: str | None
    version_before: int | None
    version_after: int | None
    op: str
    where: str | None
    code: str | None


_THIS_CALL = Location("<the failing backward>", 0)  # marks nodes the failing call freed itself


class _Spy(TorchFunctionMode):
    """Sees in-place ops and backward calls; everything else passes straight through."""

    def __init__(self, tracker: Tracker) -> None:
        super().__init__()
        self.tracker = tracker

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Hot path: every torch call of the user's forward passes through here.
        try:
            kind = _kinds[func]
        except KeyError:
            kind = _kind(func)
        except TypeError:  # unhashable callable
            kind = _PLAIN
        if kind == _PLAIN:
            if not kwargs:
                return func(*args)
            if kwargs.get("inplace") is not True:  # F.relu(x, inplace=True) and friends are writes
                return func(*args, **kwargs)
        kwargs = kwargs or {}
        tracker = self.tracker
        if kind == _BACKWARD:
            return tracker._backward(func, args, kwargs)
        if tracker._in_step:
            return func(*args, **kwargs)
        return tracker._inplace(func, args, kwargs)


class Tracker:
    """State of one :func:`track` block. Holds no tensor, graph or module alive.

    Use :meth:`check` for a diagnosis that names who modified each tensor, and
    :attr:`events` (a bounded log) for :func:`gradlab.timeline`.
    """

    MAX_EVENTS = 10_000
    MAX_FREED = 100_000

    def __init__(self, names: NamesLike = None) -> None:
        lazy = callable(names) and not isinstance(names, (Mapping, nn.Module))
        if names is not None and not lazy:
            resolve(names)  # validate now: a clear error at the with-statement
        self._names_arg = names if lazy else None
        self._namer = Namer(names) if self._names_arg is None else None
        self._registry: dict[int, list[weakref.ref]] = {}
        self._packs = 0
        self._in_step = 0
        self._spy: _Spy | None = None
        self._spy_popped = False
        self._steps: dict[int, list[tuple[Packed, int]]] = {}
        # node sequence number -> the backward call that freed that node's saved tensors
        self._freed: dict[int, Location | None] = {}
        self._freeing: Location | None = None
        self._current: Location | None = None
        self._annotating = False
        self._events: deque[tuple] = deque(maxlen=self.MAX_EVENTS)
        self._count = 0
        self.active = False

    # -- names ---------------------------------------------------------------
    def namer(self, names: NamesLike = None) -> Namer:
        """The names to use: ``names`` if given, else those given to :func:`track`."""
        if names is not None:
            return Namer(names)
        if self._names_arg is not None:
            return Namer(self._names_arg)
        return self._namer or Namer()

    def _log(self, kind: str, tensor: str | None, before: int | None, after: int | None, op: str,
             loc: Location | None) -> None:
        self._events.append((self._count, kind, tensor, before, after, op, loc))
        self._count += 1

    @property
    def events(self) -> deque[Event]:
        """The log, oldest first: at most ``MAX_EVENTS`` of the latest events."""
        return deque((Event(i, kind, tensor, before, after, op, loc.where if loc else None,
                            loc.code if loc else None)
                      for i, kind, tensor, before, after, op, loc in self._events), maxlen=self.MAX_EVENTS)

    # -- hooks ---------------------------------------------------------------
    def _pack(self, t: torch.Tensor) -> Packed:
        if self._spy_popped:
            self._repush()
        p = Packed(t)
        key = storage_key(t)
        if key:
            self._registry.setdefault(key, []).append(weakref.ref(p))
            namer = self._namer
            if namer and key in namer._by_storage:
                self._log("saved", namer.name_of(t), p.version, p.version, "saved for backward", user_location())
        self._packs += 1
        if self._packs % 1024 == 0:
            self._prune()
        return p

    def _unpack(self, p: Packed) -> torch.Tensor:
        # NOTE [Who freed a node]: the engine unpacks every saved tensor of a node it
        # runs, then frees them unless retain_graph; so an unpack during a freeing
        # backward names the call that freed this node (no graph walk needed).
        if self._freeing is not None and _peek.get() is None:
            self._freed[p.node_seq] = self._freeing
        return unpack_hook(p)

    def _prune(self) -> None:
        for key in list(self._registry):
            alive = [r for r in self._registry[key] if r() is not None]
            if alive:
                self._registry[key] = alive
            else:
                del self._registry[key]
        if len(self._freed) > self.MAX_FREED:
            for seq in list(self._freed)[: len(self._freed) // 2]:
                del self._freed[seq]

    def _watched(self, tensors: list[torch.Tensor]) -> list[tuple[Packed, int]]:
        out = []
        registry = self._registry
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
                        out.append((p, p.tensor._version))
                if len(alive) != len(refs):  # drop records of graphs that are gone
                    if alive:
                        registry[key] = alive
                    else:
                        del registry[key]
        return out

    def _record(self, watched: list[tuple[Packed, int]], op: str, loc: Location | None) -> None:
        namer = self._namer
        for p, before in watched:
            after = p.tensor._version
            if after != before:
                p.writes.append(Write(op, before, after, loc))
                name = namer.name_of(p.tensor) if namer else None
                self._log("write", name or f"tensor {list(p.tensor.shape)}", before, after, op, loc)

    def _inplace(self, func, args, kwargs):
        targets = args[0] if args else None
        targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
        if "out" in kwargs:
            out = kwargs["out"]
            targets.extend(out if isinstance(out, (list, tuple)) else [out])
        watched = self._watched(targets) if self._registry else []
        result = func(*args, **kwargs)
        if watched and any(p.tensor._version != v for p, v in watched):
            op = getattr(func, "__name__", "in-place op")
            self._record(watched, f"{op}(inplace=True)" if kwargs.get("inplace") is True else op, user_location())
        return result

    # NOTE [Optimizer steps]: an optimizer step runs ~20 torch calls per parameter;
    # seeing each through the spy would triple the cost of a small training step.
    # The step hooks compare the watched parameters' versions before and after
    # instead, and the spy leaves the mode stack for the duration of the step.
    def _step_pre(self, optimizer, args, kwargs) -> None:
        if not self.active:
            return
        if self._spy_popped:
            self._repush()
        spy = self._spy
        n = torch._C._len_torch_function_stack()
        if spy is not None and n and torch._C._get_function_stack_at(n - 1) is spy:
            torch._C._pop_torch_function_stack()  # before our own torch calls below
            self._spy_popped = True
        else:
            self._in_step += 1
        if self._registry:
            self._steps[id(optimizer)] = self._watched([p for g in optimizer.param_groups for p in g["params"]])
        else:
            self._steps[id(optimizer)] = []

    def _step_post(self, optimizer, args, kwargs) -> None:
        watched = self._steps.pop(id(optimizer), None)
        if watched is None:
            return
        if watched and any(p.tensor._version != v for p, v in watched):
            self._record(watched, f"{type(optimizer).__name__}.step()", user_location())
        if self._spy_popped:
            self._repush()
        else:
            self._in_step = max(0, self._in_step - 1)

    def _repush(self) -> None:
        self._spy_popped = False
        if self._spy is not None and self.active:
            torch._C._push_on_torch_function_stack(self._spy)

    def _backward(self, func, args, kwargs):
        self._in_step = 0  # a step that raised never ran its post hook
        tensor = args[0]
        retain = kwargs.get("retain_graph", args[2] if len(args) > 2 else None)
        create = kwargs.get("create_graph", args[3] if len(args) > 3 else False)
        keep = create if retain is None else retain
        loc = user_location()
        self._log("backward", None, None, None, "backward(retain_graph=True)" if keep else "backward()", loc)
        self._current = loc
        self._freeing = None if keep else loc
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:
            stale = STALE_RE.search(str(e))
            if stale:
                self._log("error", f"tensor [{stale['shape']}]", int(stale["exp"]), int(stale["cur"]),
                          f"expected version {stale['exp']}, is at version {stale['cur']}", loc)
                self._annotate(e, tensor)
            elif is_freed_error(e):
                self._log("error", None, None, None, "Trying to backward through the graph a second time", loc)
                self._annotate(e, tensor)
            raise
        finally:
            self._freeing = None
            self._current = None

    def _annotate(self, e: BaseException, tensor: torch.Tensor) -> None:
        self._annotating = True
        try:
            diag = self.check(tensor)
        except Exception:  # noqa: BLE001 - never replace the user's error with ours
            return
        finally:
            self._annotating = False
        # The failing call itself freed the nodes it ran before it failed: not the cause.
        # (Compared by call, not by line: in a loop, the earlier backward is the same line.)
        kept = [p for p in diag.problems if not (p.kind == "graph_freed" and p.where == _THIS_CALL.where)]
        if kept and len(kept) != len(diag.problems):
            diag = Diagnosis(ok=False, problems=kept, graph=diag.graph)
        e.__gradlab_diagnosis__ = diag
        e.add_note("\ngradlab: " + str(diag))

    def freed_by(self, fn: object) -> Location | None:
        """The backward call that freed node ``fn``'s saved tensors, if it ran under this tracker."""
        try:
            loc = self._freed.get(fn._sequence_nr())
        except (AttributeError, RuntimeError):
            return None
        if loc is not None and self._annotating and loc is self._current:
            return _THIS_CALL
        return loc

    # -- public ----------------------------------------------------------------
    def check(self, output: object, names: NamesLike = None) -> Diagnosis:
        """Like :func:`gradlab.check`, with ``modified_by`` and ``where`` filled in."""
        return diagnose(collect(output, self.namer(names), tracker=self))

    @property
    def writes(self) -> list[Event]:
        """The in-place writes to saved tensors seen so far."""
        return [e for e in self.events if e.kind == "write"]

    def __repr__(self) -> str:
        state = "active" if self.active else "closed"
        return f"<gradlab tracker, {state}, {len(self._events)} events>"

    # -- lifecycle -------------------------------------------------------------
    def _start(self) -> list:
        undo = []
        hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        hooks.__enter__()
        undo.append(lambda: hooks.__exit__(None, None, None))
        pre = _optim.register_optimizer_step_pre_hook(self._step_pre)
        undo.append(pre.remove)
        post = _optim.register_optimizer_step_post_hook(self._step_post)
        undo.append(post.remove)
        spy = _Spy(self)
        spy.__enter__()
        self._spy = spy
        # NOTE [zero_grad]: Optimizer.zero_grad makes ~15 torch calls per step (reading
        # and clearing .grad) and writes no saved tensor. While tracking, it runs with
        # the spy off the stack of this thread; the original is restored on exit.
        original_zero_grad = torch.optim.Optimizer.zero_grad

        def zero_grad(optimizer, set_to_none: bool = True) -> None:
            n = torch._C._len_torch_function_stack()
            if not (self.active and n and torch._C._get_function_stack_at(n - 1) is spy):
                return original_zero_grad(optimizer, set_to_none)
            torch._C._pop_torch_function_stack()
            try:
                return original_zero_grad(optimizer, set_to_none)
            finally:
                torch._C._push_on_torch_function_stack(spy)

        zero_grad.__wrapped__ = original_zero_grad
        zero_grad.__doc__ = original_zero_grad.__doc__
        torch.optim.Optimizer.zero_grad = zero_grad

        def restore_zero_grad() -> None:
            if torch.optim.Optimizer.zero_grad is zero_grad:
                torch.optim.Optimizer.zero_grad = original_zero_grad

        undo.append(restore_zero_grad)

        def leave() -> None:
            if self._spy_popped:  # a step raised: the spy is already off the stack
                self._spy_popped = False
            else:
                spy.__exit__(None, None, None)
            self._spy = None

        undo.append(leave)
        self.active = True
        return undo

    def _stop(self, undo: list) -> None:
        try:
            for fn in reversed(undo):
                fn()
        finally:
            self.active = False
            self._registry.clear()
            self._steps.clear()
            self._in_step = 0


def active_tracker() -> Tracker | None:
    """The innermost active tracker of this thread, if any."""
    try:
        stack = torch.overrides._get_current_function_mode_stack()
    except AttributeError:  # pragma: no cover - older torch
        return None
    for mode in reversed(stack):
        if isinstance(mode, _Spy) and mode.tracker.active:
            return mode.tracker
    return None


@contextmanager
def track(names: NamesLike = None) -> Iterator[Tracker]:
    """Record save-time versions and every in-place write to a saved tensor.

    While active, a backward that raises either autograd error is re-raised as
    the same exception with gradlab's diagnosis attached as a note (and as
    ``exc.__gradlab_diagnosis__``). Everything is undone on exit.

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
    tracker = Tracker(names)
    undo = tracker._start()
    try:
        yield tracker
    finally:
        tracker._stop(undo)
