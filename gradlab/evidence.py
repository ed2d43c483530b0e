"""What gradlab knows about one failure besides the problem itself: the graph's topology, the frame, the record.

Built once per failure and read by every cause and kind: :class:`Facts` for a
backward that failed (or a ``check()`` before it), :class:`Failure` for any
autograd error, wherever torch raised it (a backward, an in-place write, a
forward that saved an inference tensor, ``.numpy()``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import torch

from . import internals
from .context import Context
from .graph import Graph, GraphNode, walk
from .i18n import T, Words
from .location import Location, _library_file, frame_names
from .loop import LoopIntent, Site, read_site
from .messages import Message, find
from .names import framework_backward
from .saved import SavedTensor, Write
from .source import calls_method, loop_body_of, next_backward, parse

if TYPE_CHECKING:
    from .recorder import BackwardCall, Recorder

__all__ = [
    "CallerLoop",
    "Facts",
    "Failure",
    "Topology",
    "backward_line_after",
    "failure_of",
    "user_frame_of",
    "user_frames_of",
    "calls_into",
    "holds_node",
    "stepped_params",
    "graph_kinds",
]


class Problem(Protocol):
    """What :func:`decide` reads of a :class:`gradlab.Problem` (this module sits below diagnosis.py)."""

    @property
    def kind(self) -> str: ...
    @property
    def node_id(self) -> int | None: ...
    @property
    def tensor(self) -> Words: ...
    @property
    def given(self) -> str | None: ...
    @property
    def shape(self) -> tuple[int, ...] | None: ...
    @property
    def saved_at(self) -> Location | None: ...
    @property
    def location(self) -> Location | None: ...
    @property
    def writes(self) -> tuple[Write, ...]: ...
    @property
    def counter_missed(self) -> bool: ...


def _module(given: str | None) -> str | None:
    """The model a given name belongs to: ``n_1.linear_2.weight`` -> ``n_1``; None without a model."""
    if given is None:
        return None
    return given.split(".", 1)[0] if "." in given else None


class Topology:
    """Which named models each node of a graph reaches (by the leaves below it)."""

    def __init__(self, graph: Graph, dotted: Iterable[str] = ()) -> None:
        self.graph = graph
        # models held by an object of the frame (``moco.encoder_q``): their names have a dot of their own
        self.dotted = tuple(sorted(dotted, key=len, reverse=True))
        self.by_id = {n.id: n for n in graph.nodes}
        self.parents: dict[int, list[int]] = {}
        for n in graph.nodes:
            for m in n.next_ids:
                self.parents.setdefault(m, []).append(n.id)
        self._reach: dict[int, frozenset[str]] = {}

    def models_below(self, node_id: int) -> frozenset[str]:
        """The top-level module names of the named parameters reachable from ``node_id``."""
        cached = self._reach.get(node_id)
        if cached is not None:
            return cached
        found: set[str] = set()
        seen = {node_id}
        stack = [node_id]
        while stack:
            n = self.by_id[stack.pop()]
            if n.kind == "leaf":
                module = self.owner(n.given)
                if module:
                    found.add(module)
            for m in n.next_ids:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        result = frozenset(found)
        self._reach[node_id] = result
        return result

    def owner(self, given: str | None) -> str | None:
        """The model a parameter's name belongs to: the longest held model's name it starts with, else its head."""
        if given is not None:
            for name in self.dotted:
                if given.startswith(name + "."):
                    return name
        return _module(given)

    def behind(self, models: Iterable[str]) -> frozenset[str]:
        """The models reached only through a node that reads a parameter of ``models`` (a backward into them runs
        that node, which needs the weight it saved): below such a node, other than ``models`` themselves."""
        wanted = set(models)
        found: set[str] = set()
        for n in self.graph.nodes:
            if n.kind == "leaf":
                continue
            reads = {self.owner(self.by_id[m].given) for m in n.next_ids if self.by_id[m].kind == "leaf"}
            weight = self.weight_input(n)
            if reads & wanted or (weight is not None and self.models_below(weight) <= wanted):
                found |= self.models_below(n.id) - wanted
        return frozenset(found)

    def weight_input(self, n: GraphNode) -> int | None:
        """The node that computes the weight a convolution or a linear layer's matrix product applies (NOTE [A
        weight computed from parameters]): the next id in the op's weight slot, when it computes from parameters
        alone; None otherwise."""
        slot = _WEIGHT_SLOTS.get(n.name)
        if slot is None or slot not in n.slots:
            return None
        weight = n.next_ids[n.slots.index(slot)]
        return weight if self.models_below(weight) else None

    def entry(self, model: str) -> tuple[GraphNode, GraphNode] | None:
        """The node whose output carries ``model``'s result into the rest, and its consumer."""
        for n in self.graph.nodes:  # breadth first from the outputs: the first found is the highest
            if n.kind == "leaf" or self.models_below(n.id) != {model}:
                continue
            for parent in self.parents.get(n.id, ()):
                if self.models_below(parent) - {model}:
                    return n, self.by_id[parent]
        return None


#: The input slot of the weight, in the backward node's ``next_functions``: ``convolution(input, weight, bias)``,
#: ``addmm(bias, input, weight.t())``, ``mm(input, weight.t())``.
_WEIGHT_SLOTS = {
    "ConvolutionBackward0": 1,
    "ConvolutionBackward1": 1,
    "AddmmBackward0": 2,
    "MmBackward0": 1,
}


# NOTE [A weight computed from parameters]
# A discriminator with weight_norm or spectral_norm applies a weight computed from its parameters (w = g * v / |v|)
# to the generator's output: no node of the graph reads its parameters directly where it is applied, so a model
# reached "only through a node that reads a stepped model's parameters" missed the generator behind it, and a
# generator's loss scored by the stepped discriminator read as the course's chain (the stepped model upstream):
# "backward into G's parameters only". The weight's slot of a convolution or a matrix product tells which input
# is the weight: when what fills it is computed from one model's parameters alone, the other input is what that
# model is applied to.


@dataclass(frozen=True)
class CallerLoop:
    """The loop of a caller that runs the failing function once per iteration (a trainer's method that does the
    backward, called from the training loop): its code, the line that calls in, and the names of that frame that
    hold a graph (a tensor with a ``grad_fn``, or a list or tuple of such tensors), by kind (``"tensor"``,
    ``"list"``, ``"tuple"``). Keeps no reference to the frame or its values."""

    site: Site
    line: int
    graphs: Mapping[str, str]
    leaves: Mapping[str, frozenset[int]] = field(default_factory=dict)  # each graph tensor's leaves, by id


@dataclass
class Facts:
    """What gradlab knows about the failure besides the graph (all optional).

    ``site`` is the code that runs the failing backward (or calls ``check``);
    ``backward_line`` the line of that backward in ``site`` (for ``check``, the
    next backward after the call); ``caller_loop`` the caller's loop when no loop
    of ``site``'s function holds that backward.
    """

    tracker: Recorder | None = None
    failing: BackwardCall | None = None
    namespace: dict[str, Any] = field(default_factory=dict)
    site: Site | None = None
    backward_line: int | None = None
    caller: tuple[str, int] | None = None  # the user line that called the site's function (file, line)
    caller_loop: CallerLoop | None = None
    # the code of the user function that called the site's function, read at the calling line (``caller``)
    caller_site: Site | None = None


@dataclass
class Failure:
    """One autograd error and what gradlab knows around it, wherever torch raised it.

    ``message`` is torch's message read once (:func:`gradlab.messages.find`);
    ``location`` the user's line that raised it (the innermost frame of user code
    in its traceback), ``site`` the code of that function and ``namespace`` its
    names; ``recorder`` the tracker's record, when one watched; ``tensors`` the
    tensors the failing call was given (a backward's outputs, an in-place write's
    target) and ``op`` the in-place op torch refused, when known. Transient: it is
    read while the diagnosis is made and kept by nothing.
    """

    error: BaseException | None  # None for check() before the backward: the failure it predicts
    message: Message
    location: Location | None = None
    site: Site | None = None
    namespace: dict[str, Any] = field(default_factory=dict)
    recorder: Recorder | None = None
    tensors: tuple[Any, ...] = ()
    op: str | None = None
    outer: tuple[tuple[FrameType, int], ...] = field(default=(), repr=False)  # the user frames around, innermost first

    @property
    def kind(self) -> str:
        return self.message.kind


def user_frame_of(tb: TracebackType | None) -> tuple[FrameType, int] | None:
    """The innermost frame of user code in a traceback, and the line it was running."""
    frames = user_frames_of(tb)
    return frames[0] if frames else None


def user_frames_of(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """The frames of user code in a traceback with the lines they were running, innermost first."""
    found: list[tuple[FrameType, int]] = []
    while tb is not None:
        if not _library_file(tb.tb_frame.f_code.co_filename):
            found.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return found[::-1]


def failure_of(
    error: BaseException,
    recorder: Recorder | None = None,
    *,
    frame: FrameType | None = None,
    tensors: tuple[Any, ...] = (),
    op: str | None = None,
    modules: Mapping[str, frozenset[int]] | None = None,
) -> Failure | None:
    """The :class:`Failure` of ``error`` (None when it is no autograd error gradlab decodes).

    ``frame`` is the user's frame that raised it (default: the innermost user frame
    of its traceback); ``modules`` the user's models by name, as ``names=`` gives them.
    """
    message = find(error)
    if message is None:
        return None
    line: int | None = None
    frames = user_frames_of(error.__traceback__)
    if frame is None and frames:
        frame, line = frames[0]
    outer = tuple(f for f in frames if f[0] is not frame)
    if frame is None:
        return Failure(error, message, recorder=recorder, tensors=tensors, op=op)
    if not outer:  # raised in a hook gradlab called from the user's frame: the frames above it are the user's
        g, up = frame.f_back, list[tuple[FrameType, int]]()
        while g is not None and len(up) < 8:
            if not _library_file(g.f_code.co_filename):
                up.append((g, g.f_lineno))
            g = g.f_back
        outer = tuple(up)
    location = Location(frame.f_code.co_filename, line if line is not None else frame.f_lineno)
    site = read_site(frame, modules)
    return Failure(error, message, location, site, frame_names(frame), recorder, tensors, op, outer)


def var_named(namespace: Mapping[str, Any] | None, match: Any) -> str | None:
    """A variable in ``namespace`` holding a tensor that ``match(tensor)`` accepts (the user's name for it)."""
    if not namespace:
        return None
    for key, value in namespace.items():
        if isinstance(key, str) and not key.startswith("_") and isinstance(value, torch.Tensor) and match(value):
            return key
    return None


def receiver(code: str | None, method: str) -> str | None:
    """``opt_1`` from ``opt_1.step()``; ``loss_2`` from ``loss_2.backward()``; ``head_loss`` from a framework's
    ``accelerator.backward(head_loss)`` or ``self.manual_backward(head_loss)`` (:func:`gradlab.names.framework_backward`);
    the sum of the named losses ``torch.autograd.backward([a, b])`` is given.

    Example::

        >>> receiver("torch.autograd.backward([orders_loss, waste_loss])", "backward")
        'orders_loss + waste_loss'
        >>> receiver("opt_1.step()", "step")
        'opt_1'
    """
    if not code:
        return None
    if method == "backward":
        tree = parse(code.strip())
        for node in ast.walk(tree) if tree is not None else ():
            call = node if isinstance(node, ast.Call) and node.args else None
            if call is not None and isinstance(call.func, ast.Attribute) and framework_backward(call.func):
                return ast.unparse(call.args[0])
        # torch.autograd.backward([a, b]) of named losses: their sum, backwarded (one gradient per tensor, as
        # (a + b).backward() gives for scalars)
        for node in ast.walk(tree) if tree is not None else ():
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) in ("torch.autograd.backward", "autograd.backward")
                and node.args
                and isinstance(node.args[0], (ast.List, ast.Tuple))
                and node.args[0].elts
                and all(isinstance(e, ast.Name) for e in node.args[0].elts)
                and not any(k.arg == "grad_tensors" for k in node.keywords)
            ):
                return " + ".join(ast.unparse(e) for e in node.args[0].elts)
        # the tensor backward is called on, as written: ``loss``, ``(a + b)``, ``criterion(out, y)``
        for node in ast.walk(tree) if tree is not None else ():
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == method
                and ast.unparse(node.func.value) not in ("torch.autograd", "autograd")
            ):
                return ast.unparse(node.func.value)
    m = re.search(r"([\w.\[\]]+|\([^()]*\))\." + method + r"\(", code)
    if m and m[1] not in ("torch.autograd", "autograd"):
        return m[1].strip("()") if m[1].startswith("(") else m[1]
    m = re.search(r"torch\.autograd\.(?:backward|grad)\(\s*([\w.\[\]]+)", code)
    return m[1] if m else None


def saved_line(graph: Graph, node_ids: Iterable[int]) -> Location | None:
    """The user line whose forward saved a tensor for one of ``node_ids`` (their forward line)."""
    wanted = set(node_ids)
    for s in graph.saved:
        if s.node_id in wanted and s.saved_at is not None:
            return s.saved_at
    return None


def sequence_of(fn: Any) -> int | None:
    return internals.sequence_nr(fn)


def short_name(p: Problem) -> Words:
    """The user's name for the problem's tensor (a view's base name); else its description."""
    return p.given or p.tensor


def is_parameter(p: Problem) -> bool:
    leaf = T("leaf tensor {shape}", shape=list(p.shape or ()))
    return _module(p.given) is not None or p.tensor == leaf


def in_site(facts: Facts, loc: Location | None) -> int | None:
    """``loc``'s line number when it is a line of the failing function's own code, else None."""
    site = facts.site
    if loc is None or site is None or loc.filename != site.filename or not site.holds(loc.lineno):
        return None
    return loc.lineno


def graph_kinds(namespace: Mapping[str, Any]) -> dict[str, str]:
    """The names of ``namespace`` holding a graph, by kind: ``"tensor"`` (a tensor with a ``grad_fn``), ``"list"``
    or ``"tuple"`` (of tensors only, some with a ``grad_fn``: an RNN's hidden states)."""
    found: dict[str, str] = {}
    for k, v in namespace.items():
        if not isinstance(k, str) or k.startswith("_"):
            continue
        if isinstance(v, torch.Tensor) and v.grad_fn is not None:
            found[k] = "tensor"
        elif (
            isinstance(v, (list, tuple))
            and v
            and all(isinstance(x, torch.Tensor) for x in v)
            and any(x.grad_fn is not None for x in v)
        ):
            found[k] = "list" if isinstance(v, list) else "tuple"
        elif (
            isinstance(v, (list, tuple))
            and v
            and all(isinstance(x, tuple) and x and all(isinstance(t, torch.Tensor) for t in x) for x in v)
            and any(t.grad_fn is not None for x in v for t in x)
        ):  # a state per layer, each a tuple of tensors ([(h, c), ...])
            found[k] = f"{'list' if isinstance(v, list) else 'tuple'}:tuple"
    return found


def graph_names(namespace: Mapping[str, Any]) -> set[str]:
    return {
        k
        for k, v in namespace.items()
        if isinstance(k, str) and not k.startswith("_") and isinstance(v, torch.Tensor) and v.grad_fn is not None
    }


def same_root(call: BackwardCall, root: GraphNode | None, failing: BackwardCall | None) -> bool:
    """The freeing backward ran on the very loss that is backwarded now (its newest node is the root)."""
    if failing is not None and failing.newest_node is not None:
        return call is not failing and call.newest_node == failing.newest_node
    return root is not None and root.seq is not None and call.newest_node == root.seq


# NOTE [Previous iteration]
# A node freed by an earlier backward belongs to a previous iteration when that
# backward's line comes at or after the line running now in the loop body (the
# failing backward itself, or the check() call before it): in source order it
# cannot have run yet in this iteration. Outside a tracker (no freeing line), a
# node saved at a line that has also saved a live node of this graph (the same
# forward line ran again) is from a previous iteration. Both the note and check()
# use this one rule, so they name the same cause.
def _at_failing_line(c: BackwardCall, facts: Facts) -> bool:
    """``c`` ran at the failing backward's line: the same call (the note), or the line check() precedes."""
    failing, site = facts.failing, facts.site
    if c.location is None:
        return False
    if failing is not None:
        return c is not failing and c.location.same_call(failing.location)
    return (
        site is not None
        and facts.backward_line is not None
        and c.location.filename == site.filename
        and c.location.lineno == facts.backward_line
    )


def previous_iteration(p: Problem, graph: Graph, node_id: int, facts: Facts, call: BackwardCall | None) -> bool:
    failing, tracker = facts.failing, facts.tracker
    if tracker is not None and call is None and (failing is None or failing.location is not None):
        # a weight written by a step: was this node built before an earlier backward at the failing line?
        seq = next((n.seq for n in graph.nodes if n.id == node_id), None)
        if seq is not None and any(
            _at_failing_line(c, facts) and c.newest_node is not None and seq <= c.newest_node for c in tracker.history
        ):
            return True
    if call is not None and call.location is not None:
        if _at_failing_line(call, facts):
            return not _losses_in_turn(facts)
        now = facts.backward_line if failing is None else (failing.location.lineno if failing.location else None)
        site = facts.site
        if now is not None and site is not None and call.location.filename == site.filename:
            tree = site.tree()
            body = loop_body_of(tree, now) if tree is not None else None
            if body is not None and body[0].lineno <= call.location.lineno <= (body[-1].end_lineno or 0):
                return call.location.lineno >= now
    if p.kind == "graph_freed" and p.saved_at is not None and call is None:
        return any(s.status != "freed" and s.saved_at == p.saved_at for s in graph.saved)
    return False


def _losses_in_turn(facts: Facts) -> bool:
    """The failing backward is that of the target of its innermost ``for`` loop, and that loop calls no step: the
    losses of one forward backwarded in turn (``for loss in losses: loss.backward()``), not a later iteration's."""
    site, line, failing = facts.site, facts.backward_line, facts.failing
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None:
        return False
    code = failing.location.code if failing is not None and failing.location is not None else None
    loss = receiver(code or site.text(line), "backward")
    loops = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.For) and n.body and n.body[0].lineno <= line <= (n.body[-1].end_lineno or 0)
    ]
    if not loops or loss is None:
        return False
    loop = max(loops, key=lambda n: n.lineno)
    targets = {ast.unparse(t) for t in ast.walk(loop.target) if isinstance(t, (ast.Name, ast.Attribute))}
    steps = any(calls_method(st, ("step",)) for st in loop.body)
    return loss in targets and not steps


def freeing_call(p: Problem, facts: Facts) -> BackwardCall | None:
    tracker = facts.tracker
    if tracker is None or p.location is None:
        return None
    for call in reversed(tracker.history):
        if call.location is p.location:
            return call
    return None


def steps_between(
    tracker: Recorder, call: BackwardCall, failing: BackwardCall | None
) -> list[tuple[Location | None, str]]:
    """The optimizer steps that ran between the freeing backward and the failing one."""
    end = failing.event if failing is not None else None
    return [(loc, name) for index, loc, name in tracker.steps if index > call.event and (end is None or index <= end)]


def stepped_between(facts: Facts, call: BackwardCall, failing: BackwardCall | None) -> tuple[str, ...]:
    """The frame's models an optimizer stepped (or a module's own update wrote) between the backward ``call`` and
    the failing one, by the parameters the recorded steps hold."""
    tracker, site = facts.tracker, facts.site
    if tracker is None or site is None:
        return ()
    params = stepped_ids(tracker, call, failing)
    return tuple(sorted(m for m, ids in site.modules.items() if ids & params))


def stepped_ids(tracker: Recorder, call: BackwardCall, failing: BackwardCall | None) -> set[int]:
    """The ids of the parameters the optimizer steps between the backward ``call`` and the failing one hold."""
    end = failing.index if failing is not None else None
    params: set[int] = set()
    for e in tracker.optimizer_calls:
        if e.kind == "step" and call.index < e.after and (end is None or e.after <= end):
            params |= e.params
    return params


def written_by_steps(tracker: Recorder, graph: Graph) -> set[int]:
    """The ids of the parameters held by the optimizer steps that wrote a tensor ``graph`` saved: the steps on the
    lines of its recorded optimizer writes."""
    lines = {
        (w.location.filename, w.location.lineno)
        for s in graph.saved
        for w in s.writes
        if w.optimizer and w.location is not None
    }
    params: set[int] = set()
    for e in tracker.optimizer_calls:
        if e.kind == "step" and e.location is not None and (e.location.filename, e.location.lineno) in lines:
            params |= e.params
    return params


def routed_optimizers(
    topo: Topology,
    facts: Facts,
    intent: LoopIntent | None,
    stepped: set[int],
    failing: BackwardCall | None,
) -> tuple[str, ...]:
    """The optimizers that step on the failing loss, when its backward into the parameters they hold, and into
    nothing else, needs no freed node and no tensor written since it was saved, and none of those parameters is
    among ``stepped`` (the ids of the parameters stepped since the forward; NOTE [A backward routed into what its
    optimizers hold]); empty otherwise."""
    tracker, site = facts.tracker, facts.site
    if tracker is None or site is None or intent is None or not intent.known:
        return ()
    steppers = tuple(dict.fromkeys(plan.optimizer for plan in intent.plans if plan.steps))
    if not steppers or any(o not in site.optimizers for o in steppers):
        return ()
    held = frozenset().union(*(site.optimizers[o] for o in steppers))
    if not stepped or stepped & held:
        return ()  # nothing stepped in between (the module-level candidates' case), or the loss's own weights
    held_names = {  # by every name the frame reaches them by (``model.encoder.w`` and ``e_module.w``)
        f"{key}.{name}"
        for key, value in facts.namespace.items()
        if isinstance(key, str) and isinstance(value, torch.nn.Module)
        for name, param in value.named_parameters(remove_duplicate=False)
        if id(param) in held
    }
    graph = topo.graph
    todo = [n.id for n in graph.nodes if n.kind == "leaf" and n.given in held_names]
    if not todo:
        return ()
    on_way: set[int] = set()  # the nodes a backward into the held parameters runs
    while todo:
        i = todo.pop()
        if i not in on_way:
            on_way.add(i)
            todo.extend(topo.parents.get(i, ()))
    here = failing.location if failing is not None else None

    freers: dict[int, set[Location | None]] = {}
    for s in graph.saved:
        if s.status == "freed":
            freers.setdefault(s.node_id, set()).add(s.freed_by)
    unfreed = {s.node_id for s in graph.saved if s.status != "freed"}
    ran: dict[int, bool] = {}

    def ran_here(i: int) -> bool:
        """Node ``i`` was run, and freed, by the failing backward before it failed: freed by it, or freed with no
        freer recorded (its root, or a node whose only saved values no hook sees: ``0.0 * penalty``) or saving
        nothing, below nodes it ran. An earlier backward that freed it would have freed the nodes above it too, and
        been recorded."""
        if i not in ran:
            ran[i] = False  # a cycle cannot occur; the guard stops a repeated walk
            by = freers.get(i, set())
            if by and by <= {here}:
                ran[i] = True
            elif by <= {here, None} and i not in unfreed:
                # freed with no freer recorded, or nothing saved to tell (an AddBackward0): by the nodes above it
                above = topo.parents.get(i, ())
                ran[i] = i in graph.outputs or (bool(above) and all(ran_here(j) for j in above))
        return ran[i]

    def in_the_way(s: SavedTensor) -> bool:
        if s.status == "modified_in_place":
            return True
        if s.status != "freed" or here is None:
            return s.status == "freed"
        return not ran_here(s.node_id)

    if any(s.node_id in on_way and in_the_way(s) for s in graph.saved):
        return ()
    return steppers


# NOTE [A backward routed into what its optimizers hold]
# One module holds several models (a generator, an encoder and a discriminator on
# one nn.Module, each with its own optimizer): gradlab's names stop at the
# module, so "the model was stepped in between" reads as "the loss's own model
# was", and only a recompute is offered, which runs the forward again (new noise,
# stepped weights). By parameters instead: when the parameters stepped between
# the two backwards are none of those the optimizers stepping on the failing
# loss hold, and the nodes a backward into those parameters alone runs saved no
# freed or rewritten tensor, the failing backward with inputs= those
# optimizers' parameters computes exactly the gradient the code asks for, from
# the forward as it ran, and enters no freed node (autograd runs only the nodes
# on the way to its inputs). The gradient it no longer puts into other
# parameters is one no optimizer steps on this loss. The same holds when the
# failing backward meets a weight an optimizer step rewrote (the in-place error):
# when that step holds none of the loss's optimizers' parameters and no node on
# the way to them saved the rewritten weight (an environment network stepped by
# its own optimizer inside the predictor's step, whose penalty enters the
# predictor's loss), inputs= leaves the stale nodes unrun. The cause's fixes with
# code come first (NOTE [Candidates]): this one is added where they have none.


def holds_node(t: object, node: GraphNode) -> bool:
    """``t`` is a tensor whose live graph holds ``node`` (a node of a collected :class:`Graph`, matched by its name
    and sequence number): the tensor of the frame a failing node belongs to."""
    if not isinstance(t, torch.Tensor) or t.grad_fn is None or node.seq is None:
        return False
    return any(sequence_of(fn) == node.seq and internals.node_name(fn) == node.name for fn in walk([t.grad_fn]))


def stepped_params(facts: Facts) -> frozenset[int]:
    """The ids of the parameters an optimizer holds: the frame's optimizers, and every optimizer the tracker saw
    stepping, wherever it is kept."""
    site = facts.site
    held: frozenset[int] = (
        frozenset().union(*site.optimizers.values()) if site is not None and site.optimizers else frozenset()
    )
    if facts.tracker is not None:
        held |= frozenset().union(*(e.params for e in facts.tracker.optimizer_calls if e.kind == "step"))
    return held


def leaves_of(t: torch.Tensor) -> set[int]:
    return {id(fn.variable) for fn in walk([t.grad_fn]) if hasattr(fn, "variable")} if t.grad_fn is not None else set()


def modules_reached(site: Site, leaves: set[int]) -> set[str]:
    """The site's modules holding one of ``leaves`` (parameter ids, :func:`leaves_of`)."""
    return {m for m, held in site.modules.items() if held & leaves}


def from_frame(base: Context, facts: Facts, optimizer: str | None) -> Context:
    """Without names for the graph's parameters (models held by a plain object: ``self.teacher``): the models
    the failing loss reaches, read from its tensor in the frame and the frame's modules; the stepped model is
    the one ``optimizer`` (the step that wrote the saved weight) holds."""
    site = facts.site
    value = value_of(base.loss, facts.namespace) if base.loss else None
    if base.model is not None or base.reach or site is None or not isinstance(value, torch.Tensor):
        return base
    reach = tuple(sorted(modules_reached(site, leaves_of(value))))
    held = site.optimizers.get(optimizer or "")
    stepped = [m for m in reach if held and site.modules[m] <= held]
    model = stepped[0] if len(stepped) == 1 else None
    return replace(base, reach=reach, model=model, others=tuple(m for m in reach if m != model) if model else ())


def torch_alias(namespace: Mapping[str, Any]) -> str | None:
    """The frame's name for the torch module (``torch``, or ``import torch as th``'s ``th``)."""
    return next((k for k, v in namespace.items() if isinstance(k, str) and v is torch), None)


def calls_name(st: ast.AST, callee: str) -> bool:
    """``st`` calls ``callee`` (``teacher(x)``, ``self.teacher(x)``)."""
    return any(
        isinstance(n, ast.Call) and (ast.unparse(n.func) == callee or ast.unparse(n.func).endswith("." + callee))
        for n in ast.walk(st)
    )


def leaves_below(fn: Any, stop: Any = None) -> tuple[set[int], bool]:
    """The ids of the leaf tensors below node ``fn`` (not walking through ``stop``), and whether ``stop`` was met."""
    seen, stack, found, met = {id(fn)}, [fn], set(), False
    while stack:
        n = stack.pop()
        if n is stop:
            met = True
            continue
        if hasattr(n, "variable"):
            found.add(id(n.variable))
        for child, _index in getattr(n, "next_functions", ()):
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return found, met


def resolve_name(expr: ast.expr, namespace: Mapping[str, Any]) -> Any:
    return resolve_dotted(ast.unparse(expr), namespace)


def resolve_dotted(dotted: str, namespace: Mapping[str, Any]) -> Any:
    """The value of ``self.net.head`` in ``namespace`` (None when a part is missing)."""
    parts = dotted.split(".")
    value = namespace.get(parts[0])
    for part in parts[1:]:
        value = getattr(value, part, None)
    return value


def roots_of(facts: Facts, loss: str | None) -> list[Any]:
    """The failing loss's graph, or (a loss written as an expression: ``(1 - score).backward()``) the frame's
    tensors' graphs: where a node of the failing graph is found alive."""
    value = value_of(loss, facts.namespace) if loss else None
    roots = [value.grad_fn] if isinstance(value, torch.Tensor) and value.grad_fn is not None else []
    return roots + [facts.namespace[k].grad_fn for k in sorted(graph_names(facts.namespace))]


def tensors_below(graph: Graph, node_id: int | None, facts: Facts, loss: str | None) -> tuple[str, ...]:
    """The frame's tensors optimized themselves (no module's parameters: an adversarial offset, an image) that lie
    below node ``node_id`` of the failing graph: the graph's own names hold modules only."""
    site = facts.site
    node = next((n for n in graph.nodes if n.id == node_id), None)
    if site is None or node is None or node.seq is None:
        return ()
    bare = {
        m: ids for m, ids in site.modules.items() if len(ids) == 1 and isinstance(facts.namespace.get(m), torch.Tensor)
    }
    if not bare:
        return ()
    for fn in walk(roots_of(facts, loss)):
        if (sequence_of(fn), fn.name()) == (node.seq, node.name):
            leaves = {id(v) for b in walk([fn]) if isinstance(v := getattr(b, "variable", None), torch.Tensor)}
            return tuple(sorted(m for m, ids in bare.items() if ids <= leaves))
    return ()


def value_of(expr: str, namespace: Mapping[str, Any]) -> Any:
    """The value the expression ``expr`` reads in ``namespace``, for names, attributes and constant subscripts of
    dicts, lists and tuples only (``loss["actor"]``, ``out.losses[0]``, ``self.net``); None for anything else (a
    call: reading it must not run the user's code)."""
    try:
        node: ast.expr = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    return _value(node, namespace)


def _value(node: ast.expr, namespace: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _value(node.value, namespace)
        return None if base is None else getattr(base, node.attr, None)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base, key = _value(node.value, namespace), node.slice.value
        if isinstance(base, dict):
            return base.get(key)
        if isinstance(base, (list, tuple)) and isinstance(key, int) and -len(base) <= key < len(base):
            return base[key]
    return None


def backward_line_after(site: Site | None, lineno: int) -> int | None:
    """The line of the next backward after ``lineno`` in ``site`` (for ``check()`` before a backward)."""
    if site is None:
        return None
    tree = site.tree()
    return next_backward(tree, lineno) if tree is not None else None


def calls_into(called: str, module: str) -> bool:
    """True when the call ``called`` (its function as written) runs ``module``: ``model(x)``,
    ``model.forward_train(x)``, ``self.model.encode(x)``."""
    parts, want = called.split("(")[0].split("."), module.split(".")
    return any(parts[i : i + len(want)] == want for i in range(len(parts) - len(want) + 1))
