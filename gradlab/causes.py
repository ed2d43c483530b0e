"""Why a backward fails: the cause, decided from the graph, the tracker's record and the user's code.

:func:`decide` turns one :class:`gradlab.Problem` into a :data:`~gradlab.advice.Cause`
and the :class:`~gradlab.advice.Context` its fixes are written from. It reads:

- the graph (which named models each node reaches, which nodes were freed, the
  forward line that saved each tensor);
- the tracker's record, under :func:`gradlab.track` (which backward freed a node,
  which optimizer step wrote a weight, the backward calls before);
- the user's code around the failing line (:mod:`gradlab.loop`): which optimizers
  step on the failing loss, the statement that carries state across iterations,
  a list appended to in the loop, a forward computed before the loop.

``check()`` before a backward and the note after it decide alike: both compare
the freeing backward's line with the line being run now (NOTE [Previous iteration]).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import torch

from . import internals
from .advice import Cause, Context
from .graph import Graph, GraphNode, walk
from .i18n import _, _t
from .location import Location
from .loop import LoopIntent, Site, loop_body_of, next_backward, recorded_intent, site_intent, statement_at
from .saved import Write

if TYPE_CHECKING:
    from .recorder import BackwardCall, Recorder


class Problem(Protocol):
    """What :func:`decide` reads of a :class:`gradlab.Problem` (this module sits below diagnosis.py)."""

    @property
    def kind(self) -> str: ...
    @property
    def node_id(self) -> int | None: ...
    @property
    def tensor(self) -> str: ...
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


__all__ = ["Facts", "Topology", "decide", "backward_line_after"]


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

    def entry(self, model: str) -> tuple[GraphNode, GraphNode] | None:
        """The node whose output carries ``model``'s result into the rest, and its consumer."""
        for n in self.graph.nodes:  # breadth first from the outputs: the first found is the highest
            if n.kind == "leaf" or self.models_below(n.id) != {model}:
                continue
            for parent in self.parents.get(n.id, ()):
                if self.models_below(parent) - {model}:
                    return n, self.by_id[parent]
        return None


@dataclass
class Facts:
    """What gradlab knows about the failure besides the graph (all optional).

    ``site`` is the code that runs the failing backward (or calls ``check``);
    ``backward_line`` the line of that backward in ``site`` (for ``check``, the
    next backward after the call).
    """

    tracker: Recorder | None = None
    failing: BackwardCall | None = None
    namespace: dict[str, Any] = field(default_factory=dict)
    site: Site | None = None
    backward_line: int | None = None


def _var_named(namespace: Mapping[str, Any] | None, match: Any) -> str | None:
    """A variable in ``namespace`` holding a tensor that ``match(tensor)`` accepts (the user's name for it)."""
    if not namespace:
        return None
    for key, value in namespace.items():
        if isinstance(key, str) and not key.startswith("_") and isinstance(value, torch.Tensor) and match(value):
            return key
    return None


def _receiver(code: str | None, method: str) -> str | None:
    """``opt_1`` from ``opt_1.step()``; ``loss_2`` from ``loss_2.backward()``."""
    if not code:
        return None
    m = re.search(r"([\w.\[\]]+|\([^()]*\))\." + method + r"\(", code)
    if m:
        return m[1].strip("()") if m[1].startswith("(") else m[1]
    m = re.search(r"torch\.autograd\.(?:backward|grad)\(\s*([\w.\[\]]+)", code)
    return m[1] if m else None


def _saved_line(graph: Graph, node_ids: Iterable[int]) -> Location | None:
    """The user line whose forward saved a tensor for one of ``node_ids`` (their forward line)."""
    wanted = set(node_ids)
    for s in graph.saved:
        if s.node_id in wanted and s.saved_at is not None:
            return s.saved_at
    return None


def _seq(fn: Any) -> int | None:
    return internals.sequence_nr(fn)


def _short_name(p: Problem) -> str:
    """The user's name for the problem's tensor (a view's base name); else its description."""
    return p.given or p.tensor


def _is_parameter(p: Problem) -> bool:
    leaf = _t("leaf tensor {shape}", shape=list(p.shape or ()))
    return _module(p.given) is not None or p.tensor == leaf


def _in_site(facts: Facts, loc: Location | None) -> int | None:
    """``loc``'s line number when it is a line of the failing function's own code, else None."""
    site = facts.site
    if loc is None or site is None or loc.filename != site.filename or not site.holds(loc.lineno):
        return None
    return loc.lineno


def decide(p: Problem, graph: Graph, topo: Topology, facts: Facts) -> tuple[Cause, Context]:
    """The cause of ``p`` and the context its fixes are written from."""
    failing = facts.failing
    loss = _receiver(failing.location.code, "backward") if failing is not None and failing.location else None
    if loss is None and facts.site is not None and facts.backward_line is not None:
        loss = _receiver(facts.site.text(facts.backward_line), "backward")
    root = topo.by_id[graph.outputs[0]] if graph.outputs else None
    if loss is None and root is not None:
        loss = _var_named(
            facts.namespace,
            lambda t: t.grad_fn is not None and _seq(t.grad_fn) == root.seq and t.grad_fn.name() == root.name,
        )
    node_id = p.node_id if p.node_id is not None else graph.outputs[0]
    model = topo.owner(p.given)
    if model is None and p.kind == "graph_freed":
        owners = topo.models_below(node_id)
        model = next(iter(owners)) if len(owners) == 1 else None
    reach = tuple(sorted(topo.models_below(graph.outputs[0]))) if graph.outputs else ()
    others = tuple(m for m in reach if m != model) if model else ()
    site = facts.site
    intent = site_intent(site, facts.backward_line) if site is not None and facts.backward_line else None
    intent, intent_note = _intent_from_record(facts, intent, loss)
    base = Context(
        tensor=p.tensor,
        model=model,
        others=others,
        loss=loss,
        site=site,
        intent=intent if intent is not None and intent.known else None,
        reach=reach,
        backward_line=facts.backward_line,
        intent_note=intent_note,
        # the frame's tensors that still have a graph (a recompute that reads one needs it kept)
        extra={"graph_names": " ".join(sorted(_graph_names(facts.namespace)))},
    )

    base = replace(base, other_claims=_other_claims(facts, loss))
    if p.kind == "modified_in_place":
        writes = p.writes
        if not writes and p.counter_missed:  # changed behind the counter by a writer gradlab did not see
            return "untracked_write", replace(base, tensor=_short_name(p), op=None)
        optimizer_write = next((w for w in writes if w.optimizer), None)
        if optimizer_write is not None or (not writes and _is_parameter(p)):
            stepper = (
                _receiver(optimizer_write.location.code, "step")
                if optimizer_write is not None and optimizer_write.location
                else None
            )
            base = _from_frame(base, facts, stepper)
            retained = _retained_total(base, facts)  # read from the source alone: check() sees it too
            if retained is not None:
                return "retained_accumulation", retained
            if _previous_iteration(p, graph, node_id, facts, None):
                stale = _stale_forward(base, p, facts)
                if stale is not None:
                    return "stale_forward", stale
                return "carried_state", _carried_context(base, graph, topo, facts)
            early = _step_too_early(base, facts, optimizer_write)
            if early is not None:
                return "step_before_backward", replace(early, recompute_lines=_recompute_lines(early, graph, p, facts))
            return "optimizer_step", _step_context(base, p, graph, topo, facts, optimizer_write, node_id)
        if writes:
            w = writes[0]
            code = w.location.code if w.location else None
            ctx = replace(base, tensor=_short_name(p), op=w.op, code=code, where=w.where, write_at=w.location)
            fast = _fast_weights(ctx, w, facts)
            if fast is not None:
                return "fast_weights_in_place", fast
            if all(x.grad_mode for x in writes):
                return "inplace_op", ctx
            return "untracked_write", _target_context(ctx, p, facts) or _copy_context(ctx, p, w) or ctx
        # Outside a tracker: the writer is unknown. A non-parameter was changed by the user's own code.
        return "inplace_op", replace(base, tensor=_short_name(p), op=None)

    # graph freed
    call = _freeing_call(p, facts)
    if call is not None and _same_root(call, root, failing):
        return "same_loss_twice", replace(base, earlier=loss, earlier_line=_in_site(facts, call.location))
    if _previous_iteration(p, graph, node_id, facts, call):
        listed = _buffer_context(base, graph, facts, call)
        if listed is not None:
            return "list_never_cleared", listed
        retained = _retained_total(base, facts)
        if retained is not None:
            return "retained_accumulation", retained
        stale = _stale_forward(base, p, facts) or _snapshot_context(base, facts, call)
        if stale is not None:
            return "stale_forward", stale
        kept = _kept_attribute(_from_frame(base, facts, None), facts) if _carried_in_loop(facts) is None else None
        return "carried_state", kept or _carried_context(base, graph, topo, facts)
    attached = _attached_output(base, topo, facts, node_id)
    if attached is not None:
        return "attached_output", attached
    if root is not None and node_id == root.id:
        return "same_loss_twice", base
    earlier = _receiver(call.location.code, "backward") if call is not None and call.location else None
    ctx = replace(base, earlier=earlier, earlier_line=_in_site(facts, call.location) if call is not None else None)
    steps = _steps_between(facts.tracker, call, failing) if facts.tracker is not None and call is not None else []
    if steps and steps[0][0] is not None:
        # the step's optimizer too: the forward of the model it stepped is what a recompute runs again
        ctx = replace(ctx, step_line=_in_site(facts, steps[0][0]), optimizer=_receiver(steps[0][0].code, "step"))
    ctx = _step_context(ctx, p, graph, topo, facts, None, node_id)
    if facts.tracker is not None and call is not None:
        ctx = replace(ctx, step_between=bool(steps))
        if steps and steps[0][0] is not None:
            ctx = replace(ctx, optimizer=_receiver(steps[0][0].code, "step"), optimizer_class=steps[0][1])
    return "shared_graph_freed", ctx


def _intent_from_record(
    facts: Facts, read: LoopIntent | None, loss: str | None
) -> tuple[LoopIntent | None, str | None]:
    """The loop's intent from what ran when the loop has gone round, else ``read`` from the source; and a
    sentence when both are known and disagree (NOTE [Intent from the record] in loop.py)."""
    tracker, site = facts.tracker, facts.site
    if tracker is None or site is None:
        return read, None
    failing = facts.failing
    if failing is not None:
        at, until = failing.location, failing.index
    elif facts.backward_line is not None:
        line = facts.backward_line
        at = next(
            (
                c.location
                for c in reversed(tracker.history)
                if c.location is not None and c.location.filename == site.filename and c.location.lineno == line
            ),
            None,
        )
        until = tracker.stats()["backward_calls"]
    else:
        return read, None
    ran = recorded_intent(tracker.history, tracker.optimizer_calls, at, until, site)
    if not ran.known:
        return read, None
    if read is None or not read.known or set(read.trained) == set(ran.trained):
        return ran, None
    words = {k: _(" and ").join(v) if v else _("nothing") for k, v in (("ran", ran.trained), ("read", read.trained))}
    note = _t(
        "the loop's record and its source disagree on what {loss} trains: its optimizers stepped {ran} on it "
        "when it ran, the source after the backward reads {read}; the fixes follow what ran",
        loss=loss or _("the failing loss"),
        **words,
    )
    return ran, note


def _graph_names(namespace: Mapping[str, Any]) -> set[str]:
    return {
        k
        for k, v in namespace.items()
        if isinstance(k, str) and not k.startswith("_") and isinstance(v, torch.Tensor) and v.grad_fn is not None
    }


def _other_claims(facts: Facts, failing_loss: str | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What each other loss the loop backwards trains as the code stands: the models its graph reaches
    whose optimizer steps on it (read as for the failing loss), for the losses still bound in the frame."""
    site = facts.site
    if site is None or facts.backward_line is None or not site.modules:
        return ()
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    if body is None and tree is not None:
        body = list(tree.body)
    out: dict[str, tuple[str, ...]] = {}
    for st in body or []:
        for n in ast.walk(st):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"):
                continue
            name = ast.unparse(n.func.value)
            value = facts.namespace.get(name)
            if name == failing_loss or not isinstance(value, torch.Tensor) or value.grad_fn is None:
                continue
            leaves = {id(fn.variable) for fn in walk([value.grad_fn]) if hasattr(fn, "variable")}
            reach = {m for m, ids in site.modules.items() if ids & leaves}
            intent = site_intent(site, n.lineno)
            if intent.known:
                out[name] = tuple(sorted(reach & set(intent.trained)))
    return tuple(sorted(out.items()))


def _same_root(call: BackwardCall, root: GraphNode | None, failing: BackwardCall | None) -> bool:
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


def _previous_iteration(p: Problem, graph: Graph, node_id: int, facts: Facts, call: BackwardCall | None) -> bool:
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
            return True
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


def _freeing_call(p: Problem, facts: Facts) -> BackwardCall | None:
    tracker = facts.tracker
    if tracker is None or p.location is None:
        return None
    for call in reversed(tracker.history):
        if call.location is p.location:
            return call
    return None


def _steps_between(
    tracker: Recorder, call: BackwardCall, failing: BackwardCall | None
) -> list[tuple[Location | None, str]]:
    """The optimizer steps that ran between the freeing backward and the failing one."""
    end = failing.event if failing is not None else None
    return [(loc, name) for index, loc, name in tracker.steps if index > call.event and (end is None or index <= end)]


def _step_context(
    base: Context, p: Problem, graph: Graph, topo: Topology, facts: Facts, write: Write | None, node_id: int
) -> Context:
    model = base.model
    below = topo.models_below(node_id)
    judge = bool(model) and bool(below - {model})
    optimizer = _receiver(write.location.code, "step") if write is not None and write.location else base.optimizer
    optimizer_class = write.op.split(".")[0] if write is not None else None
    earlier, earlier_line = base.earlier, base.earlier_line
    tracker = facts.tracker
    if earlier is None and tracker is not None and write is not None and write.event is not None:
        before = [c for c in tracker.history if c.event < write.event and c is not facts.failing]
        if before and before[-1].location is not None:
            earlier = _receiver(before[-1].location.code, "backward")
            earlier_line = _in_site(facts, before[-1].location)
    ctx = replace(
        base,
        judge=judge,
        optimizer=optimizer,
        optimizer_class=optimizer_class,
        earlier=earlier,
        earlier_line=earlier_line,
        step_line=_in_site(facts, write.location) if write is not None else base.step_line,
    )
    ctx = replace(ctx, recompute_lines=_recompute_lines(ctx, graph, p, facts))
    if not model:
        return ctx
    if judge:
        return replace(ctx, others=tuple(sorted(below - {model})))
    found = topo.entry(model)
    if found is None:
        return _frame_entry(ctx, facts)
    entry, consumer = found
    loc = _saved_line(graph, [consumer.id]) or _saved_line(graph, topo.parents.get(consumer.id, []))
    name = _var_named(
        facts.namespace,
        lambda t: t.grad_fn is not None and _seq(t.grad_fn) == entry.seq and t.grad_fn.name() == entry.name,
    )
    return replace(
        ctx,
        entry=name,
        entry_line=loc.code if loc else None,
        entry_where=loc.where if loc else None,
        entry_lineno=_in_site(facts, loc),
    )


def _leaves(t: torch.Tensor) -> set[int]:
    return {id(fn.variable) for fn in walk([t.grad_fn]) if hasattr(fn, "variable")} if t.grad_fn is not None else set()


def _from_frame(base: Context, facts: Facts, optimizer: str | None) -> Context:
    """Without names for the graph's parameters (models held by a plain object: ``self.teacher``): the models
    the failing loss reaches, read from its tensor in the frame and the frame's modules; the stepped model is
    the one ``optimizer`` (the step that wrote the saved weight) holds."""
    site = facts.site
    value = facts.namespace.get(base.loss) if base.loss else None
    if base.model is not None or base.reach or site is None or not site.modules or not isinstance(value, torch.Tensor):
        return base
    leaves = _leaves(value)
    reach = tuple(sorted(m for m, ids in site.modules.items() if ids & leaves))
    held = site.optimizers.get(optimizer or "")
    stepped = [m for m in reach if held and site.modules[m] <= held]
    model = stepped[0] if len(stepped) == 1 else None
    return replace(base, reach=reach, model=model, others=tuple(m for m in reach if m != model) if model else ())


def _frame_entry(ctx: Context, facts: Facts) -> Context:
    """The variable that carries ``ctx.model``'s output into the failing loss, read from the frame: a tensor whose
    graph reaches that model's parameters only, read by a one-line statement of the failing function that
    computes the failing loss (``student_loss = distill(s_logits, t_logits, y)``)."""
    site, line, model = facts.site, facts.backward_line, ctx.model
    tree = site.tree() if site is not None else None
    if site is None or line is None or tree is None or not model or not ctx.loss:
        return ctx
    params = site.modules.get(model, frozenset())
    here = statement_at(tree, line)
    block = next((b for b in _enclosing_blocks(tree) if here in b), None)
    if here is None or block is None or not params:
        return ctx
    before = block[: block.index(here)]
    feeding = _feeding(before, {ctx.loss})
    for st in before:
        if st.lineno not in feeding or st.lineno != st.end_lineno or not site.holds(st.lineno):
            continue
        for name in sorted(_names(st, ast.Load)):
            value = facts.namespace.get(name)
            if not isinstance(value, torch.Tensor) or value.grad_fn is None:
                continue
            leaves = _leaves(value)
            if leaves and leaves <= params:
                return replace(
                    ctx,
                    entry=name,
                    entry_line=site.text(st.lineno).strip(),
                    entry_where=Location(site.filename, st.lineno).where,
                    entry_lineno=st.lineno,
                )
    return ctx


def _names(node: ast.AST, ctx: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _recompute_lines(ctx: Context, graph: Graph, p: Problem, facts: Facts) -> tuple[int, ...]:
    """The statements to run again after the step so the failing loss is built from the stepped weights.

    The forward lines that saved a tensor the step made stale, and every statement between them and the
    step that reads what they assign, in order; only statements of the failing function, before the step.
    """
    site, step = facts.site, ctx.step_line
    if site is None or step is None or ctx.backward_line is None or not step < ctx.backward_line:
        return ()
    tree = site.tree()
    if tree is None:
        return ()
    stale_lines = {
        s.saved_at.lineno
        for s in graph.saved
        if s.status == "modified_in_place" and s.saved_at is not None and s.saved_at.filename == site.filename
    }
    if p.kind == "graph_freed" and p.saved_at is not None and p.saved_at.filename == site.filename:
        stale_lines.add(p.saved_at.lineno)
    step_stmt = statement_at(tree, step)
    if step_stmt is None:
        return ()
    body = next((b for b in _enclosing_blocks(tree) if step_stmt in b), None)
    if body is None:
        return ()
    stepped = _stepped_modules(site, ctx.optimizer)
    chosen: list[int] = []
    dirty: set[str] = set()
    for st in body[: body.index(step_stmt)]:
        if not isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            continue
        lines = set(range(st.lineno, (st.end_lineno or st.lineno) + 1))
        if not site.holds(st.lineno) or _calls_backward(st):
            continue
        if lines & stale_lines or _names(st, ast.Load) & dirty or _calls_module(st, stepped):
            chosen.append(st.lineno)
            dirty |= _names(st, ast.Store)
    # keep only what the statements from the step to the backward read (directly or through each other)
    after = [st for st in body[body.index(step_stmt) + 1 :] if st.lineno <= ctx.backward_line]
    needed = set().union(*(_names(st, ast.Load) for st in after)) if after else set()
    kept: list[int] = []
    by_line = {st.lineno: st for st in body}
    for line in reversed(chosen):
        st = by_line[line]
        if _names(st, ast.Store) & needed:
            kept.append(line)
            needed |= _names(st, ast.Load)
    return tuple(reversed(kept))


def _stepped_modules(site: Site, optimizer: str | None) -> set[str]:
    """The user's modules whose parameters ``optimizer`` (its variable in the frame) holds and steps."""
    params = site.optimizers.get(optimizer or "")
    return {m for m, ids in site.modules.items() if params and ids and ids <= params}


def _calls_module(st: ast.stmt, modules: set[str]) -> bool:
    """``st`` calls one of ``modules`` (``netD(fake)``, ``self.teacher(x)``): a forward through its weights
    (the weights a step writes: a tensor saved inside a model's ``forward`` is saved at that forward's line)."""
    return bool(modules) and any(isinstance(n, ast.Call) and ast.unparse(n.func) in modules for n in ast.walk(st))


def _enclosing_blocks(tree: ast.AST) -> Iterable[list[ast.stmt]]:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _calls_backward(st: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("backward", "step", "zero_grad")
        for n in ast.walk(st)
    )


def _carried_context(base: Context, graph: Graph, topo: Topology, facts: Facts) -> Context:
    """The carried variable: the name assigned and passed in on the same statement (``out, h = rnn(x, h)``)."""
    tracker = facts.tracker
    total = False
    if tracker is not None:
        root_seqs = {call.newest_node for call in tracker.history if call is not facts.failing}
        total = any(n.seq in root_seqs for n in graph.nodes if n.id not in graph.outputs)
    if total and graph.outputs:
        # A running total: the backwarded tensor is the total; the iteration's loss is added into it.
        root = topo.by_id[graph.outputs[0]]
        parts = [topo.by_id[i] for i in root.next_ids]
        part = _var_named(
            facts.namespace,
            lambda t: (
                t.grad_fn is not None
                and any(
                    _seq(t.grad_fn) == n.seq and t.grad_fn.name() == n.name for n in parts if n.seq not in root_seqs
                )
            ),
        )
        line = _accumulates(facts, base.loss, part)
        return replace(base, carried=base.loss, loss=part, total=True, entry_lineno=line)
    site = facts.site
    tree = site.tree() if site is not None else None
    found = _carried_in_loop(facts)
    if found is not None and site is not None:
        line, carried = found
        st = statement_at(tree, line) if tree is not None else None
        return replace(
            base,
            recurrent=st is not None and _recurrent(st, carried, facts.namespace),
            carried=carried[-1],
            carried_all=tuple(carried),
            carried_kind=site.kinds.get(carried[-1]),
            carried_none=_may_be_none(site, carried),
            total=total,
            entry_line=site.text(line).strip(),
            entry_where=f"{Location(site.filename, line).where}",
            entry_lineno=line,
        )
    for s in graph.saved:
        loc = s.saved_at
        if loc is None:
            continue
        st = (
            statement_at(tree, loc.lineno)
            if tree is not None and site is not None and loc.filename == site.filename
            else None
        )
        if isinstance(st, ast.Assign):
            stored = [n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            read = _names(st.value, ast.Load)
            carried = [t for t in stored if t in read]
        else:
            m = re.fullmatch(r"\s*(.+?)\s*=\s*(.+)", loc.code)
            if not m:
                continue
            targets = re.findall(r"[A-Za-z_]\w*", m[1])
            used = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", m[2]))
            carried = [t for t in targets if t in used]
        if carried:
            kind = site.kinds.get(carried[-1]) if site is not None else None
            may_be_none = bool(
                site is not None
                and any(re.search(rf"(?<![\w.]){re.escape(c)}\s*=\s*None\b", site.source) for c in carried)
            )
            return replace(
                base,
                recurrent=isinstance(st, ast.Assign) and _recurrent(st, carried, facts.namespace),
                carried=carried[-1],
                carried_all=tuple(carried),
                carried_kind=kind,
                carried_none=may_be_none,
                total=total,
                entry_line=loc.code,
                entry_where=loc.where,
                entry_lineno=_in_site(facts, loc),
            )
    return replace(base, total=total)


def _may_be_none(site: Site, names: Iterable[str]) -> bool:
    """Some name of ``names`` is set to None somewhere in the file (the state before the first pass)."""
    return any(re.search(rf"(?<![\w.]){re.escape(c)}\s*(?::[^=]*)?=\s*None\b", site.source) for c in names)


def _carried_in_loop(facts: Facts) -> tuple[int, list[str]] | None:
    """The statement of the failing loop's body that reads and assigns the same tensor state (``pred, h = model(x, h)``)."""
    site = facts.site
    if site is None or facts.backward_line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    for st in body or []:
        if not isinstance(st, ast.Assign) or not site.holds(st.lineno):
            continue
        stored = [n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        read = _names(st.value, ast.Load)
        carried = [t for t in stored if t in read and site.kinds.get(t) in ("tensor", "tuple", "none")]
        if carried:
            return st.lineno, carried
    return None


def _accumulates(facts: Facts, total: str | None, part: str | None) -> int | None:
    """The line of the loop body that adds ``part`` into ``total`` (``total = total + loss``, ``total += loss``)."""
    site = facts.site
    if site is None or total is None or part is None or facts.backward_line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    for st in body or []:
        stored = _names(st, ast.Store) if isinstance(st, (ast.Assign, ast.AugAssign)) else set()
        read = _names(st, ast.Load) | (stored if isinstance(st, ast.AugAssign) else set())
        if total in stored and {total, part} <= read and st.lineno == st.end_lineno and site.holds(st.lineno):
            return st.lineno
    return None


def _buffer_context(base: Context, graph: Graph, facts: Facts, call: BackwardCall | None) -> Context | None:
    """A list in the frame holding tensors of an earlier iteration's graph (log-probs never cleared)."""
    seqs = {n.seq for n in graph.nodes if n.seq is not None}
    limit = call.newest_node if call is not None else None
    found: list[str] = []
    lists: dict[str, list[Any]] = {}
    for key, value in facts.namespace.items():
        if not isinstance(key, str) or key.startswith("_"):
            continue
        if isinstance(value, list):
            lists[key] = value
        elif isinstance(value, torch.nn.Module):
            for attr, inner in vars(value).items():
                if isinstance(inner, list) and not attr.startswith("_"):
                    lists[f"{key}.{attr}"] = inner
    for key, value in lists.items():
        if len(value) < 2:
            continue
        old = [
            t
            for t in value
            if isinstance(t, torch.Tensor)
            and t.grad_fn is not None
            and (s := _seq(t.grad_fn)) in seqs
            and (limit is None or (s is not None and s <= limit))
        ]
        if old:
            found.append(key)
    if not found:
        return None
    buffer = sorted(found)[0]
    length = len(lists[buffer])
    site = facts.site
    partners: list[str] = []
    if site is not None and facts.backward_line is not None:
        tree = site.tree()
        body = loop_body_of(tree, facts.backward_line) if tree is not None else None
        appended = _appended_in(body or [])
        owner = buffer.rsplit(".", 1)[0] if "." in buffer else None
        partners = sorted(
            k
            for k, v in lists.items()
            if k != buffer and len(v) == length and (k in appended or (owner is not None and k.startswith(owner + ".")))
        )
        if buffer not in appended and owner is None:
            partners = []
    return replace(base, buffer=buffer, buffers=(buffer, *partners))


def _appended_in(body: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "extend"):
                out.add(ast.unparse(n.func.value))
    return out


def _stale_forward(base: Context, p: Problem, facts: Facts) -> Context | None:
    """A forward computed before the loop and reused by every iteration: its statement, to move inside."""
    site, loc = facts.site, p.saved_at
    if site is None or loc is None or loc.filename != site.filename or facts.backward_line is None:
        return None
    tree = site.tree()
    if tree is None:
        return None
    body = loop_body_of(tree, facts.backward_line)
    if body is None:
        return None
    first, last = body[0].lineno, body[-1].end_lineno or body[-1].lineno
    if first <= loc.lineno <= last or not site.holds(loc.lineno):
        return None
    st = statement_at(tree, loc.lineno)
    if not isinstance(st, ast.Assign):
        return None
    stored = set().union(*(_names(t, ast.Store) for t in st.targets))
    use = next((b for b in body if _names(b, ast.Load) & stored), None)
    if use is None:
        return None
    return replace(base, stale_line=st.lineno, stale_end=st.end_lineno or st.lineno, stale_before=use.lineno)


def _fast_weights(ctx: Context, w: Write, facts: Facts) -> Context | None:
    """``w.sub_(lr * g)`` inside ``for w, g in zip(fast, grads)``: the loop rebinds ``w``, so write a new list."""
    site, loc = facts.site, w.location
    if site is None or loc is None or loc.filename != site.filename:
        return None
    tree = site.tree()
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.For) or not (node.lineno < loc.lineno <= (node.end_lineno or 0)):
            continue
        if len(node.body) != 1 or not isinstance(node.iter, ast.Call) or ast.unparse(node.iter.func) != "zip":
            continue
        if not isinstance(node.target, ast.Tuple) or not node.iter.args or not isinstance(node.iter.args[0], ast.Name):
            continue
        new = _out_of_place(node.body[0], node.target)
        if new is None:
            return None
        fast = node.iter.args[0].id
        target = ", ".join(ast.unparse(e) for e in node.target.elts)
        text = f"{fast} = [{new} for {target} in {ast.unparse(node.iter)}]"
        return replace(ctx, fast=fast, fast_lines=(node.lineno, node.end_lineno or node.lineno), fast_text=text)
    return None


_SIGNS = {"sub_": "-", "add_": "+", "mul_": "*", "div_": "/"}
_AUG = {ast.Sub: "-", ast.Add: "+", ast.Mult: "*", ast.Div: "/"}


def _out_of_place(st: ast.stmt, target: ast.Tuple) -> str | None:
    """``w - lr * g`` from ``w.sub_(lr * g)`` or ``w -= lr * g`` (``w`` the first loop variable)."""
    first = target.elts[0]
    if not isinstance(first, ast.Name):
        return None
    name = first.id
    if (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and isinstance(st.value.func.value, ast.Name)
        and st.value.func.value.id == name
        and st.value.func.attr in _SIGNS
        and len(st.value.args) == 1
        and not st.value.keywords
    ):
        return f"{name} {_SIGNS[st.value.func.attr]} ({ast.unparse(st.value.args[0])})"
    if (
        isinstance(st, ast.AugAssign)
        and isinstance(st.target, ast.Name)
        and st.target.id == name
        and type(st.op) in _AUG
    ):
        return f"{name} {_AUG[type(st.op)]} ({ast.unparse(st.value)})"
    return None


def _added_term(st: ast.stmt, total: str) -> tuple[ast.expr, bool] | None:
    """The term ``st`` adds into ``total`` (``total = total + term``, ``total = term + total``, ``total += term``),
    and whether it stands right of the total; None when ``st`` is no such statement."""
    if isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add):
        if isinstance(st.target, ast.Name) and st.target.id == total:
            return st.value, True
        return None
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
        return None
    if st.targets[0].id != total or not (isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Add)):
        return None
    left, right = st.value.left, st.value.right
    if isinstance(left, ast.Name) and left.id == total:
        return right, True
    if isinstance(right, ast.Name) and right.id == total:
        return left, False
    return None


def _retained_total(base: Context, facts: Facts) -> Context | None:
    """``total.backward(retain_graph=True)`` where the loop body adds each iteration's loss into ``total``
    (``total = total + term`` or ``total += term``): every backward goes through all earlier iterations' graphs
    again (their gradients added once more, their weights changed by the steps since). Read from the source of
    the loop around the failing backward; the backward keeps its graph (in the source, or as the tracker saw)."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if site is None or line is None or tree is None:
        return None
    st = statement_at(tree, line)
    call = st.value if isinstance(st, ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "backward"
        and isinstance(call.func.value, ast.Name)
    ):
        return None
    total = call.func.value.id
    retain = any(
        k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
    )
    if not retain and not (facts.failing is not None and facts.failing.keeps_graph):
        return None
    for candidate in loop_body_of(tree, line) or []:
        found = _added_term(candidate, total)
        if found is None or candidate.lineno != candidate.end_lineno or not site.holds(candidate.lineno):
            continue
        term, right = found
        losses = [
            n.id
            for n in ast.walk(term)
            if isinstance(n, ast.Name)
            and isinstance(value := facts.namespace.get(n.id), torch.Tensor)
            and value.grad_fn is not None
        ]
        return replace(
            base,
            carried=total,
            loss=losses[0] if losses else None,
            total=True,
            entry_lineno=candidate.lineno,
            extra={"term": ast.unparse(term), "side": "right" if right else "left"},
        )
    return None


def _feeding(statements: list[ast.stmt], needed: set[str]) -> set[int]:
    """The line numbers of ``statements`` that compute ``needed`` (directly or through each other)."""
    needed, out = set(needed), set()
    for st in reversed(statements):
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and _names(st, ast.Store) & needed:
            out.add(st.lineno)
            needed |= _names(st, ast.Load)
    return out


def _undetached_reads(st: ast.stmt, name: str) -> list[ast.Name]:
    """The reads of ``name`` in ``st`` that are not ``name.detach()``."""
    detached = {
        id(n.value)
        for n in ast.walk(st)
        if isinstance(n, ast.Attribute) and n.attr == "detach" and isinstance(n.value, ast.Name)
    }
    return [
        n
        for n in ast.walk(st)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in detached
    ]


def _reaches_params(root: Any, params: frozenset[int], stop: Any) -> bool:
    """Some path from ``root`` reaches a parameter of ``params`` without going through the node ``stop``."""
    seen, stack = {root, stop}, [root]
    while stack:
        fn = stack.pop()
        if id(getattr(fn, "variable", None)) in params:
            return True
        for nxt, _index in fn.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _attached_output(base: Context, topo: Topology, facts: Facts, node_id: int) -> Context | None:
    """An earlier loss the loop does not train ``model`` with, built on ``model``'s output without
    ``.detach()``, whose backward freed the graph the failing loss (meant to train ``model``) needs.

    Reads the loop body around the failing backward: the latest backward before it in the iteration whose
    loss (in the frame) holds the freed node; that backward's own intent (the optimizers after it) must not
    step ``model`` on it; every path of that loss into ``model``'s parameters must go through the variable
    that carries ``model``'s output (``fake``); and the statements to change (those computing that loss that
    read the variable undetached: a gradient penalty on interpolates, a discriminator's score) must not also
    compute the failing loss. A WGAN-GP penalty on the attached fake, a GAN's ``D(fake)``, a head whose
    optimizer does not hold the shared encoder."""
    site, line, intent, model = facts.site, facts.backward_line, base.intent, base.model
    if site is None or line is None or intent is None or not model or model not in intent.trained:
        return None
    params = site.modules.get(model)
    tree = site.tree()
    body = loop_body_of(tree, line) if tree is not None else None
    node = topo.by_id.get(node_id)
    found = topo.entry(model)
    if not params or not body or node is None or node.seq is None or found is None:
        return None
    entry_node = found[0]
    entry = _var_named(
        facts.namespace,
        lambda t: t.grad_fn is not None and _seq(t.grad_fn) == entry_node.seq and t.grad_fn.name() == entry_node.name,
    )
    here = next((i for i, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
    if entry is None or here is None:
        return None
    entry_fn = facts.namespace[entry].grad_fn
    for i in range(here - 1, -1, -1):
        before = body[i]
        call = before.value if isinstance(before, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward"
            and isinstance(call.func.value, ast.Name)
        ):
            continue
        earlier = call.func.value.id
        value = facts.namespace.get(earlier)
        if not isinstance(value, torch.Tensor) or value.grad_fn is None:
            continue
        if not any(_seq(fn) == node.seq and fn.name() == node.name for fn in walk([value.grad_fn])):
            continue  # this backward did not go through the freed node
        own = site_intent(site, body[i].lineno)
        if not own.known or model in own.trained or _reaches_params(value.grad_fn, params, entry_fn):
            return None
        feeds_earlier = _feeding(body[:i], {earlier})
        feeds_failing = _feeding([st for j, st in enumerate(body[:here]) if j != i], _names(body[here], ast.Load))
        lines = sorted(
            st.lineno
            for st in body[:i]
            if st.lineno in feeds_earlier and entry not in _names(st, ast.Store) and _undetached_reads(st, entry)
        )
        if not lines or set(lines) & feeds_failing:
            return None
        if any(_statement_span_of(tree, n) != (n, n) or not site.holds(n) for n in lines):
            return None
        return replace(base, earlier=earlier, earlier_line=body[i].lineno, entry=entry, detach_lines=tuple(lines))
    return None


def _statement_span_of(tree: ast.Module | None, line: int) -> tuple[int, int] | None:
    st = statement_at(tree, line) if tree is not None else None
    return (st.lineno, st.end_lineno or st.lineno) if st is not None else None


def _runs_backward(st: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr == "backward")
            or ast.unparse(n.func) in ("torch.autograd.backward", "autograd.backward", "torch.autograd.grad")
        )
        for n in ast.walk(st)
    )


def _step_too_early(base: Context, facts: Facts, write: Write | None) -> Context | None:
    """``opt.step()`` between a loss's forward and its backward, as a statement of the loop body that no backward
    precedes in the iteration, where ``opt`` is an optimizer the loop steps on that loss's gradient: the step
    meant for this backward runs too early (it steps on the previous iteration's gradient). With the step's
    write known (under ``track()``), it must be that statement's."""
    site, line, intent = facts.site, facts.backward_line, base.intent
    if site is None or line is None or intent is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, line) if tree is not None else None
    if not body:
        return None
    here = next((i for i, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
    if here is None:
        return None
    reach = set(base.reach)
    stepping = {p.optimizer for p in intent.plans if p.steps and (not reach or reach & set(p.modules))}
    for st in body[:here]:
        if _runs_backward(st):
            return None  # a backward before it in the iteration: the step may be that loss's (the course's loop)
        call = st.value if isinstance(st, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "step"
            and st.lineno == st.end_lineno
            and site.holds(st.lineno)
        ):
            continue
        optimizer = ast.unparse(call.func.value)
        if optimizer not in stepping:
            continue
        if write is not None and write.location is not None and write.location.lineno != st.lineno:
            continue
        return replace(base, optimizer=optimizer, step_line=st.lineno)
    return None


def backward_line_after(site: Site | None, lineno: int) -> int | None:
    """The line of the next backward after ``lineno`` in ``site`` (for ``check()`` before a backward)."""
    if site is None:
        return None
    tree = site.tree()
    return next_backward(tree, lineno) if tree is not None else None


# -- causes read from the frame's objects and the graph (each a pattern of code, stated where it is read) ----


def _torch_alias(namespace: Mapping[str, Any]) -> str | None:
    """The frame's name for the torch module (``torch``, or ``import torch as th``'s ``th``)."""
    return next((k for k, v in namespace.items() if isinstance(k, str) and v is torch), None)


def _calls(st: ast.AST, callee: str) -> bool:
    """``st`` calls ``callee`` (``teacher(x)``, ``self.teacher(x)``)."""
    return any(
        isinstance(n, ast.Call) and (ast.unparse(n.func) == callee or ast.unparse(n.func).endswith("." + callee))
        for n in ast.walk(st)
    )


def _target_context(ctx: Context, p: Problem, facts: Facts) -> Context | None:
    """A model whose output is a target: its parameter was written without autograd before the backward.

    The pattern (a mean teacher, a momentum encoder): a parameter of model ``M``
    (by its name ``M.layer.weight``) is written under ``torch.no_grad()`` (an EMA
    update) after the statement of the failing function that ran ``M``'s forward,
    and no optimizer (of the frame, or seen stepping) holds ``M``'s parameters: nothing trains
    ``M`` by gradient, so its forward can run under ``torch.no_grad()``. Its
    output is then a constant of the loss; what the optimizers' parameters get
    does not change.
    """
    site, model = facts.site, ctx.model
    if site is None or model is None or model not in site.modules or not site.optimizers:
        return None
    held: frozenset[int] = frozenset().union(*site.optimizers.values())
    if facts.tracker is not None:  # and every optimizer seen stepping, wherever it is kept
        held |= frozenset().union(*(e.params for e in facts.tracker.optimizer_calls if e.kind == "step"))
    if site.modules[model] & held:
        return None
    line = _in_site(facts, p.saved_at)
    tree = site.tree()
    st = statement_at(tree, line) if tree is not None and line is not None else None
    alias = _torch_alias(facts.namespace)
    if st is None or alias is None or not _calls(st, model):
        return None
    return replace(ctx, target=model, target_line=st.lineno, grad_off=f"{alias}.no_grad")


def _copy_context(ctx: Context, p: Problem, w: Write) -> Context | None:
    """A tensor written without autograd through an expression the line that saved it also reads.

    The pattern (a running statistic kept in a buffer): ``out = x / self.running_std``
    saved the buffer for backward, then ``self.running_std.mul_(...)`` under
    ``torch.no_grad()`` updated it before the backward ran. Reading a copy on the
    saving line (``self.running_std.clone()``) keeps the values the forward used;
    the update still changes the buffer. Read from the write's own line (its
    receiver) and the saved tensor's forward line.
    """
    loc, saved = w.location, p.saved_at
    if loc is None or saved is None or (saved.filename == loc.filename and saved.lineno == loc.lineno):
        return None
    target = _receiver(loc.code, re.escape(w.op)) if w.op.endswith("_") else None
    if target is None or not re.search(rf"(?<![\w.]){re.escape(target)}(?![\w(])", saved.code or ""):
        return None
    return replace(ctx, copy_at=saved, copy_of=target)


def _leaves_below(fn: Any, stop: Any = None) -> tuple[set[int], bool]:
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


def _loop_around(tree: ast.Module, lineno: int) -> ast.For | ast.While | None:
    """The innermost ``for``/``while`` statement whose body holds line ``lineno``."""
    found: ast.For | ast.While | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.While)) or not node.body[0].lineno <= lineno <= (node.end_lineno or 0):
            continue
        if found is None or node.lineno > found.lineno:
            found = node
    return found


def _snapshot_context(base: Context, facts: Facts, call: BackwardCall | None) -> Context | None:
    """A tensor bound before the loop whose graph every iteration's loss reuses, next to a fresh forward.

    The pattern (PPO's old log-probs, a target computed once from the model): a
    tensor variable of the failing function, not assigned in the loop that runs
    the backward, built before the backward that freed its graph, reached by the
    loss; and the loss also reaches, without going through it, every parameter
    that tensor's graph reaches (the loop computes its own forward of the same
    weights). Recomputing it in the loop would make it equal to the fresh value;
    it is a constant of the loop: detach it before the loop. (Without a fresh
    forward in the loop, the stale forward is recomputed instead, ``_stale_forward``.)
    """
    site, loss = facts.site, facts.namespace.get(base.loss) if base.loss else None
    if site is None or facts.backward_line is None or call is None or call.newest_node is None:
        return None
    if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
        return None
    tree = site.tree()
    loop = _loop_around(tree, facts.backward_line) if tree is not None else None
    if loop is None or not site.holds(loop.lineno):
        return None
    assigned = set().union(*(_names(st, ast.Store) for st in loop.body))
    if isinstance(loop, ast.For):
        assigned |= _names(loop.target, ast.Store)
    for key, value in facts.namespace.items():
        if not isinstance(key, str) or key.startswith("_") or key in assigned or not isinstance(value, torch.Tensor):
            continue
        fn = value.grad_fn
        seq = _seq(fn) if fn is not None else None
        if fn is None or seq is None or seq > call.newest_node:
            continue
        under = _leaves_below(fn)[0]
        rest, met = _leaves_below(loss.grad_fn, stop=fn)
        if met and under and under <= rest:
            return replace(base, snapshot=key, snapshot_line=loop.lineno)
    return None


def _kept_attribute(base: Context, facts: Facts) -> Context | None:
    """State kept on an object across iterations: ``obj.attr = f(..., obj.attr, ...)`` still holding a graph.

    The pattern (a queue of keys, a memory bank, a recurrent module that keeps its
    hidden state: ``out, self.h = self.rnn(x, self.h)``): a one-line statement of
    the user's file assigns an attribute (alone or as one element of a tuple
    target) from an expression that reads that same attribute, and an object of
    the failing frame has that attribute as a tensor with a graph. The next
    iteration's loss reads it and goes through the earlier iteration's freed
    graph; the value stored for the next iteration is detached.
    """
    site = facts.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None:
        return None
    holders = [v for k, v in facts.namespace.items() if isinstance(k, str) and not k.startswith("_")]
    for st in ast.walk(tree):
        if not isinstance(st, ast.Assign) or len(st.targets) != 1 or st.lineno != st.end_lineno:
            continue
        elements = st.targets[0].elts if isinstance(st.targets[0], ast.Tuple) else [st.targets[0]]
        read = {ast.unparse(n) for n in ast.walk(st.value) if isinstance(n, ast.Attribute)}
        kept_here = [e for e in elements if isinstance(e, ast.Attribute) and ast.unparse(e) in read]
        if not kept_here:
            continue
        target = kept_here[0]
        name = ast.unparse(target)
        if not any(
            isinstance(kept := getattr(h, "__dict__", {}).get(target.attr), torch.Tensor) and kept.grad_fn is not None
            for h in holders
            if not isinstance(h, torch.Tensor)
        ):
            continue
        loc = Location(site.filename, st.lineno)
        return replace(base, carried=name, kept_at=loc, entry_line=loc.code, entry_where=loc.where)
    return None


def _recurrent(st: ast.stmt, carried: Iterable[str], namespace: Mapping[str, Any]) -> bool:
    """``st`` passes the carried state into a module call and assigns it back (``out, h = rnn(x, h)``)."""
    names = set(carried)
    for n in ast.walk(st):
        if not isinstance(n, ast.Call) or not isinstance(_resolve_name(n.func, namespace), torch.nn.Module):
            continue
        if any(isinstance(a, ast.Name) and a.id in names for arg in n.args for a in ast.walk(arg)):
            return True
    return False


def _resolve_name(expr: ast.expr, namespace: Mapping[str, Any]) -> Any:
    parts = ast.unparse(expr).split(".")
    value = namespace.get(parts[0])
    for part in parts[1:]:
        value = getattr(value, part, None)
    return value
