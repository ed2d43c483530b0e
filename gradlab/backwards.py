"""The backward calls a tracker saw, and which of them freed which graph node.

One job: :class:`Backwards` keeps the latest :class:`BackwardCall` records, the
call running now, and the freed map (NOTE [Who freed a node]): which call freed
the saved tensors of each node, and the forward line that saved them. The
diagnosis of "Trying to backward through the graph a second time" reads it.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable
from typing import Any, NamedTuple

import torch

from . import internals
from .location import Location, user_location
from .saved import Packed

__all__ = ["BackwardCall", "Backwards", "tensors_of"]


class BackwardCall(NamedTuple):
    """One backward call the tracker saw: ``loss.backward()``, ``torch.autograd.backward`` or ``.grad``.

    ``keeps_graph`` is True with ``retain_graph=True`` (or ``create_graph=True``):
    such a call frees nothing. ``newest_node`` is the largest sequence number of
    its roots: every node of a graph built before the call has a number at most that.
    An immutable record (a named tuple: made at every backward call, it costs a
    third of a frozen dataclass; NOTE [What a backward call costs]).
    """

    index: int  # type: ignore[assignment]  # the field, not tuple.index: the record is read by name only
    kind: str
    location: Location | None
    keeps_graph: bool
    newest_node: int | None
    event: int = 0
    inputs: frozenset[int] | None = None  # ids of the tensors of ``inputs=``, when given
    nested: bool = False  # called while another backward ran (a reentrant checkpoint's, a Function's own backward)
    terms: tuple[int, ...] = ()  # the sequence numbers of the terms a root adds up (``seg_loss + cls_loss``)


# The parameters of the two backward entry points, in torch's order (positional or keyword).
_PARAMETERS = {
    "autograd.backward": ("tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs"),
    "autograd.grad": ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph"),
}


def _terms(fn: Any) -> tuple[int, ...]:
    """The sequence numbers of the terms ``fn`` adds up when it is a sum (an ``AddBackward0``), through nested sums
    (``a + b + c``); empty for any other node."""
    if type(fn).__name__ != "AddBackward0":
        return ()
    found: tuple[int, ...] = ()
    for nxt, _ in fn.next_functions:
        if nxt is None:
            continue
        seq = None if type(nxt).__name__ == "AddBackward0" else internals.sequence_nr(nxt)
        found += _terms(nxt) if seq is None else (seq,)
    return found


def _argument(kind: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], default: Any = None) -> Any:
    if name in kwargs:
        return kwargs[name]
    at = _PARAMETERS[kind].index(name)
    return args[at] if len(args) > at else default


def _backward_arguments(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: Any = None,
    create_graph: Any = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> tuple[Any, Any, Any, Any]:
    return tensors, retain_graph, create_graph, inputs


def _grad_arguments(
    outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: Any = None, create_graph: Any = False, **_: Any
) -> tuple[Any, Any, Any, Any]:
    return outputs, retain_graph, create_graph, inputs


def _bound(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """(the tensors to start from, retain_graph, create_graph, inputs) of a backward call, bound as torch binds them.

    Arguments torch would refuse are read by place or name, as far as they go (torch raises next).
    """
    try:
        if kind == "autograd.backward":
            return _backward_arguments(*args, **kwargs)
        return _grad_arguments(*args, **kwargs)
    except TypeError:
        names = _PARAMETERS[kind]
        inputs = _argument(kind, "inputs", args, kwargs)
        return (
            _argument(kind, names[0], args, kwargs),
            _argument(kind, "retain_graph", args, kwargs),
            _argument(kind, "create_graph", args, kwargs, False),
            inputs,
        )


def _tensors(value: Any) -> list[Any]:
    """``value`` (a tensor, or a list or tuple of them) as a list; anything else (a generator) is not read."""
    if isinstance(value, torch.Tensor):
        return [value]
    return list(value) if isinstance(value, (list, tuple)) else []


def tensors_of(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The tensors a backward call (``autograd.backward``/``autograd.grad``) was asked to start from."""
    return _tensors(_argument(kind, _PARAMETERS[kind][0], args, kwargs))


class Backwards:
    """The latest backward calls, the one running now, and the freed map (NOTE [Who freed a node])."""

    MAX_FREED = 20_000  # nodes whose freeing backward is remembered (a few thousand steps)
    RECENT_CALLS = 4
    HISTORY = 64

    def __init__(self) -> None:
        self.count = 0  # backward calls seen
        self.history: deque[BackwardCall] = deque(maxlen=self.HISTORY)
        # The latest calls that freed their graph, with weak references to the tensors they started from
        # (NOTE [Nothing kept alive]).
        self.recent: deque[tuple[list[weakref.ref[torch.Tensor]], BackwardCall]] = deque(maxlen=self.RECENT_CALLS)
        self.current: BackwardCall | None = None  # the call running now
        self.freeing: BackwardCall | None = None  # the call running now, if it frees its graph
        self.roots: list[Any] = []  # the running call's roots (the grad_fns of its outputs)
        self._freed: dict[int, BackwardCall] = {}  # node sequence number -> the call that freed it
        self._lines: dict[int, Location | None] = {}  # node sequence number -> the forward line that saved for it
        self.unpacking: Any = None  # the node whose saved tensors the engine unpacks now (the recorder compares)
        self._started: list[weakref.ref[torch.Tensor]] = []  # the running call's tensors, weakly

    # NOTE [What a backward call costs]
    # begin runs at every backward call, before the engine: the arguments are bound
    # by Python itself (_bound: one call, no lookups by name), the roots and their
    # newest sequence number found in one pass, the user's line with two callers
    # (cached per call site, location.py), and the record is a named tuple.
    def begin(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any], event: int) -> BackwardCall:
        """Record a backward call about to run (``event``: its index in the log) and make it the running one."""
        first, retain, create, wanted = _bound(kind, args, kwargs)
        keep = bool(create if retain is None else retain)
        roots: list[Any] = []
        started: list[weakref.ref[torch.Tensor]] = []
        newest: int | None = None
        terms: tuple[int, ...] = ()
        for t in _tensors(first):
            fn = t.grad_fn if isinstance(t, torch.Tensor) else None
            if fn is not None:
                roots.append(fn)
                started.append(weakref.ref(t))
                seq = internals.sequence_nr(fn)
                if seq is not None and (newest is None or seq > newest):
                    newest = seq
                terms += _terms(fn)  # NOTE [A total of losses already backwarded]
        wanted = _tensors(wanted)
        inputs = frozenset(id(t) for t in wanted) if wanted else None
        call = BackwardCall(
            self.count, kind, user_location(callers=2), keep, newest, event, inputs, self.current is not None, terms
        )
        self.count += 1
        self.history.append(call)
        self.current, self.freeing, self.roots = call, (None if keep else call), roots
        self._started = started
        self.unpacking = None
        return call

    def state(self) -> tuple[BackwardCall | None, BackwardCall | None, list[Any], list[weakref.ref[torch.Tensor]]]:
        """The running call's state, to put back when a backward nested in it returns (:meth:`restore`)."""
        return self.current, self.freeing, self.roots, self._started

    def restore(
        self, state: tuple[BackwardCall | None, BackwardCall | None, list[Any], list[weakref.ref[torch.Tensor]]]
    ) -> None:
        """After a backward call: the state of the call around it (or none); remember the call if it freed."""
        call, started = self.current, self._started
        if call is not None and not call.keeps_graph and started:
            self.recent.append((started, call))
        self.current, self.freeing, self.roots, self._started = state
        self.unpacking = None

    # NOTE [Who freed a node]: the engine unpacks every saved tensor of a node it
    # runs, then frees them unless retain_graph; so an unpack during a freeing
    # backward names the call that freed the node being run (no graph walk).
    # The engine unpacks a node's saved tensors one after another: the node is
    # looked up once (held until the backward call returns, never longer).
    def unpacked(self, p: Packed, node: Any) -> None:
        """The first unpack of ``node``'s saved tensors during a freeing backward (``freeing`` is set).

        Notes which call frees the node being run (the recorder calls this once per node).
        """
        self.unpacking = node
        seq = internals.sequence_nr(node)
        if seq is not None:
            freeing = self.freeing
            if freeing is not None:
                self._freed[seq] = freeing
            if p.saved_at is not None:
                self._lines[seq] = p.saved_at

    def freed_call(self, fn: Any) -> BackwardCall | None:
        """The recorded call that freed node ``fn`` (by its sequence number), if any."""
        seq = internals.sequence_nr(fn)
        return self._freed.get(seq) if seq is not None else None

    def saved_line(self, fn: Any) -> Location | None:
        """The forward line that saved tensors for node ``fn``, remembered when a backward freed them."""
        seq = internals.sequence_nr(fn)
        return self._lines.get(seq) if seq is not None else None

    def calls(self) -> list[BackwardCall]:
        """The latest backward calls that freed a graph (at most ``RECENT_CALLS``), oldest first."""
        return [call for _, call in self.recent]

    # NOTE [Nothing kept alive]: a freeing call is remembered by weak references to the
    # tensors it started from, never by their grad_fns: holding a root node keeps its
    # whole graph alive (its nodes, and the saved tensors of every node the backward did
    # not run: 44 MB more peak memory on the 6-layer LM of benchmarks/, holding four).
    # While the user still holds such a tensor its graph can fail again, and is found.
    def freed_roots(self) -> Iterable[tuple[list[Any], BackwardCall]]:
        """The roots (still alive) and call of each of the latest freeing calls, newest first."""
        out = []
        for started, call in reversed(self.recent):
            roots = [fn for fn in (getattr(ref(), "grad_fn", None) for ref in started) if fn is not None]
            if roots:
                out.append((roots, call))
        return out

    def freed(self) -> int:
        """How many nodes' freeing call is remembered."""
        return len(self._freed)

    def prune(self) -> None:
        """Keep the freed map within ``MAX_FREED`` nodes (the oldest half goes)."""
        if len(self._freed) > self.MAX_FREED:
            for seq in list(self._freed)[: len(self._freed) // 2]:
                del self._freed[seq]
                self._lines.pop(seq, None)

    def clear(self) -> None:
        self.history.clear()
        self.recent.clear()
        self._freed.clear()
        self._lines.clear()
        self.current = self.freeing = self.unpacking = None
        self.roots = []
        self._started = []
