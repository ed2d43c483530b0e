"""Cause ``carried_state``: state carried from one iteration to the next keeps the previous iteration's graph (an
RNN's hidden state, a queue kept on an object, a running total); its fixes."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import torch

from ..context import Context
from ..evidence import Facts, Topology, graph_kinds, in_site, resolve_name, sequence_of, var_named
from ..fixes import (
    Fix,
    Proposal,
    all_edits,
    backward_with,
    claim,
    detached_after,
    edit_at,
    insert_lines,
    keeping,
    replace_line,
    stored_after,
)
from ..graph import Graph
from ..i18n import T
from ..location import Location
from ..loop import Site
from ..rewrite import detach_in, detached_value, replace_reads
from ..source import (
    block_of,
    calls_method,
    function_of,
    loop_around,
    loop_body_of,
    names,
    preceding,
    statement_at,
)
from .carried_steps import (
    forward_after_step,
    into_model,
    kept_within_step,
    reads_around,
    restart_from_weights,
    step_at_window_end,
)


def carried_context(base: Context, graph: Graph, topo: Topology, facts: Facts) -> Context:
    """The carried variable: the name assigned and passed in on the same statement (``out, h = rnn(x, h)``).

    A name bound to an object that is no tensor (``self``, a model) is no state to detach: it is not named.
    """
    ctx = _carried(base, graph, topo, facts)
    if ctx.carried and ctx.carried in facts.namespace:
        value = facts.namespace[ctx.carried]
        if not (value is None or isinstance(value, (torch.Tensor, tuple, list))):
            return replace(ctx, carried=None, carried_all=(), entry_lineno=None, kept_at=None)
    return ctx


def _carried(base: Context, graph: Graph, topo: Topology, facts: Facts) -> Context:
    tracker = facts.tracker
    total = False
    if tracker is not None:
        root_seqs = {call.newest_node for call in tracker.history if call is not facts.failing}
        total = any(n.seq in root_seqs for n in graph.nodes if n.id not in graph.outputs)
    if total and graph.outputs:
        # A running total: the backwarded tensor is the total; the iteration's loss is added into it.
        root = topo.by_id[graph.outputs[0]]
        parts = [topo.by_id[i] for i in root.next_ids]
        part = var_named(
            facts.namespace,
            lambda t: (
                t.grad_fn is not None
                and any(
                    sequence_of(t.grad_fn) == n.seq and t.grad_fn.name() == n.name
                    for n in parts
                    if n.seq not in root_seqs
                )
            ),
        )
        line = _accumulates(facts, base.loss, part)
        return replace(base, carried=base.loss, loss=part, total=True, entry_lineno=line)
    site = facts.site
    tree = site.tree() if site is not None else None
    found = carried_in_loop(facts)
    if found is not None and site is not None:
        line, carried = found
        st = statement_at(tree, line) if tree is not None else None
        return replace(
            base,
            # passed into a module call on its own line or another of the body (a refiner reads the pose it updates)
            recurrent=(st is not None and _recurrent(st, carried, facts.namespace, tree))
            or _passed_to_module(facts, carried),
            carried=carried[-1],
            carried_all=tuple(carried),
            carried_kind=site.kinds.get(carried[-1]),
            carried_none=_may_be_none(site, carried),
            total=total,
            entry_line=site.text(line).strip(),
            entry_where=f"{Location(site.filename, line).where}",
            entry_lineno=line,
        )
    inner = carried_through_inner_loop(facts) if found is None else None
    if inner is not None and site is not None:
        name, top, init = inner
        return replace(
            base,
            carried=name,
            carried_all=(name,),
            carried_kind="tensor",
            carried_none=_may_be_none(site, [name]),
            total=total,
            entry_line=site.text(top).strip(),
            entry_where=f"{Location(site.filename, top).where}",
            entry_lineno=top,
            extra={**base.extra, "inner_loop": str(init or "")},
        )
    boundary = carried_in_caller(facts)
    if boundary:
        passed_on = tuple(dict.fromkeys(_stored_name(text) for _, text in boundary))
        first = boundary[0][0]
        return replace(
            base,
            carried=passed_on[-1],
            carried_all=passed_on,
            boundary=boundary,
            total=total,
            entry_line=first.code,
            entry_where=first.where,
        )
    across = carried_across_statements(facts)
    if across is not None and site is not None:  # NOTE [A state carried across statements]
        line, carried = across
        kinds: dict[str, str | None] = {**graph_kinds(facts.namespace)}
        statements = [f"{c} = {detached_state(c, kinds[c], _may_be_none(site, [c]))}" for c in carried]
        return replace(
            base,
            recurrent=_passed_to_module(facts, carried),
            carried=carried[-1],
            carried_all=tuple(carried),
            carried_kind=kinds[carried[-1]] if len(carried) == 1 else None,
            carried_none=_may_be_none(site, carried),
            total=total,
            entry_line=site.text(line).strip(),
            entry_where=f"{Location(site.filename, line).where}",
            entry_lineno=line,
            extra={**base.extra, "detach_lines": "\n".join(statements)},
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
        if st is None:  # a line of another file: its own statement (a keyword argument is no assignment)
            try:
                parsed = ast.parse(loc.code.strip()).body if loc.code else []
            except SyntaxError:
                parsed = []
            st = parsed[0] if len(parsed) == 1 else None
        if not isinstance(st, ast.Assign):
            continue
        carried = _carried_at(tree, st)
        if carried:
            kind = site.kinds.get(carried[-1]) if site is not None else None
            may_be_none = bool(
                site is not None
                and any(re.search(rf"(?<![\w.]){re.escape(c)}\s*=\s*None\b", site.source) for c in carried)
            )
            return replace(
                base,
                recurrent=isinstance(st, ast.Assign) and _recurrent(st, carried, facts.namespace, tree),
                carried=carried[-1],
                carried_all=tuple(carried),
                carried_kind=kind,
                carried_none=may_be_none,
                total=total,
                entry_line=loc.code,
                entry_where=loc.where,
                entry_lineno=in_site(facts, loc),
            )
    return replace(base, total=total)


def _carried_at(tree: ast.Module | None, st: ast.Assign) -> list[str]:
    """The names ``st`` binds from a value that reads them, less those bound anew before it in its block (``loss =
    crit(out, y)`` before ``loss = loss + penalty``) or by its loop's target: the state ``st`` carries over."""
    block = block_of(tree, st) or [st]
    fresh = _bound_by(loop_around(tree, st.lineno)) if tree is not None else set()
    return next((carried for x, carried in _carried_by(block, fresh) if x is st), [])


def _carried_by(
    block: Iterable[ast.stmt], fresh: set[str], keep: Callable[[ast.Assign], bool] = lambda st: True
) -> Iterator[tuple[ast.Assign, list[str]]]:
    """Each assignment of ``block`` that ``keep`` accepts, with the names it binds from a value that reads them and
    that neither ``fresh`` nor an earlier assignment of the block bound anew (from a value not reading them): one
    home for what a block carries from one pass to the next."""
    fresh = set(fresh)
    for st in block:
        if not isinstance(st, ast.Assign) or not keep(st):
            continue
        stored, read = _stored_and_read(st)
        yield st, [t for t in stored if t in read and t not in fresh]
        fresh |= {t for t in stored if t not in read}


def _whole_sequence(ctx: Context) -> Proposal | None:
    """``retain_graph=True`` on the failing backward, when the loop carries a recurrent state and its body runs no
    optimizer step and no ``zero_grad()`` (NOTE [A rollout whose gradients one step sums])."""
    site, line = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    body = loop_body_of(tree, line) if tree is not None and line is not None else None
    if (
        not ctx.recurrent
        or ctx.kept_at is not None
        or not body
        or any(calls_method(st, ("step", "zero_grad")) for st in body)
    ):
        return None
    edit = backward_with(ctx, line, "retain_graph=True")
    if edit is None:
        return None
    return Proposal(
        Fix(
            alternative=True,
            summary=T(
                "keep the graph at each backward of the rollout (retain_graph=True on the backward of {loss}): no "
                "step runs inside the loop, so the step after it uses the gradients of every iteration added up, "
                "each through the whole sequence before it",
                loss=ctx.l,
            ),
            trains=T(
                "full backpropagation through time, as one backward of the summed losses would: each {loss} trains "
                "through every earlier step of the rollout (memory grows with the sequence)",
                loss=ctx.l,
            ),
            edits=(edit,),
            claims=claim(ctx, ctx.reach),
        ),
        ctx.reach,
        True,
    )


# NOTE [A rollout whose gradients one step sums]
# A loop threads a state through a model (a pacer's fatigue from one
# kilometre to the next) and calls backward on each step's loss, but steps
# no optimizer and zeroes no gradient inside the loop: the step comes after
# the loop (or in its caller), so it uses every step's gradient added up,
# which is the gradient of the summed losses. The second backward meets the
# first step's freed graph through the carried state. retain_graph=True on
# that backward computes exactly the sum's gradient through the whole
# rollout (each loss through every step before it), what the accumulation
# asks for if the whole sequence is meant to be trained; a detach at the
# boundary (truncated backpropagation) drops the earlier steps' share. Both
# readings are common (an iterative refiner's stages are detached by design,
# a simulator's rollout is not), and the code does not tell them apart: the
# detach stays first and this fix, with its code, is the second, in place of
# the sentence "accumulate the losses and call backward once". A loop that
# steps inside its body is truncated backpropagation by design: no such fix.


def _may_be_none(site: Site, names: Iterable[str]) -> bool:
    """Some name of ``names`` is set to None somewhere in the file (the state before the first pass)."""
    return any(re.search(rf"(?<![\w.]){re.escape(c)}\s*(?::[^=]*)?=\s*None\b", site.source) for c in names)


def carried_in_loop(facts: Facts) -> tuple[int, list[str]] | None:
    """The statement of the failing loop's body that reads and assigns the same tensor state (``pred, h = model(x, h)``)."""
    site = facts.site
    if site is None or facts.backward_line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    loop = loop_around(tree, facts.backward_line) if tree is not None else None
    # bound anew earlier in the body (``cost = 0`` at the top of each epoch), or by the loop's own target (``for x,
    # y in loader``): not carried
    for st, names_ in _carried_by(body or [], _bound_by(loop), lambda st: site.holds(st.lineno)):
        kinds = ("tensor", "list", "tuple", "none", "list:tuple", "tuple:tuple")
        carried = [t for t in names_ if site.kinds.get(t) in kinds]
        if carried:
            return st.lineno, carried
    return None


def carried_across_statements(facts: Facts) -> tuple[int, list[str]] | None:
    """The names the failing loop's body reads before it binds them, and binds later in the body (a refinement
    loop: ``deltas = net(x, y_hat)`` then ``y_hat = decoder(deltas)``), holding a graph: the first statement that
    reads one of them, and the names in the order they are read (NOTE [A state carried across statements])."""
    site = facts.site
    if site is None or facts.backward_line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    loop = loop_around(tree, facts.backward_line) if tree is not None else None
    if not body or loop is None or tree is None:
        return None
    bound_in_body = set().union(*(names(st, ast.Store) for st in body))
    graphs = graph_kinds(facts.namespace)
    # bound before the loop (or an argument of the function): the first iteration reads that value
    before = set().union(set(), *(names(st, ast.Store) for st in preceding(tree, loop.lineno)))
    function = function_of(tree, loop.lineno)
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        before |= {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    fresh: set[str] = _bound_by(loop)
    stored: set[str] = set()
    carried: list[str] = []
    first: int | None = None
    for st in body:
        if not site.holds(st.lineno):
            return None
        for n in sorted(names(st, ast.Load), key=lambda n: n):
            if (
                n in bound_in_body
                and n in before
                and n not in stored
                and n not in fresh
                and n not in carried
                and n in graphs  # holds a graph now: a tensor, or a list or tuple of them
            ):
                carried.append(n)
                first = st.lineno if first is None else first
        stored |= names(st, ast.Store)
    return (first, carried) if carried and first is not None else None


def _passed_to_module(facts: Facts, carried: Iterable[str]) -> bool:
    """Some statement of the failing loop's body passes a carried name into a module call (``net(x, y_hat)``)."""
    site = facts.site
    tree = site.tree() if site is not None else None
    body = loop_body_of(tree, facts.backward_line) if tree is not None and facts.backward_line else None
    return any(_recurrent(st, carried, facts.namespace, tree) for st in body or [])


# NOTE [A state carried across statements]
# A loop whose body reads a name before it binds it, and binds it later in the
# same body, carries that name from one iteration to the next, even when no
# single statement both reads and binds it: an iterative refinement (a
# hypernetwork predicts weight offsets from the last output, the decoder then
# makes the next output from the summed offsets) threads the output and the
# offsets through the steps. Each step's loss is backwarded, so the next step's
# backward meets the previous step's freed graph. When a carried name goes into
# a module call (the refinement network reads it), the loop is recurrent and the
# truncation is what such loops are written for: each carried name is detached
# where the next iteration first reads it (element-wise for a list, None left
# as it is), which changes no value of the forward.


def carried_in_caller(facts: Facts) -> tuple[tuple[Location, str], ...]:
    """The states the caller's loop carries from one iteration to the next, when the failing backward runs in a
    function that loop calls (NOTE [State carried by the caller's loop]): for each name holding a graph in that
    frame that a one-line statement of the loop's body reads and assigns (``hidden = repackage_hidden(hidden)``,
    ``h = trainer.step(h, x)``), its first such statement and the statement that detaches it."""
    loop = facts.caller_loop
    tree = loop.site.tree() if loop is not None else None
    if loop is None or tree is None:
        return ()
    found: dict[str, int] = {}
    for st, carried in _carried_by(loop_body_of(tree, loop.line) or [], set(), lambda st: st.lineno == st.end_lineno):
        for t in carried:
            if t in loop.graphs:
                found.setdefault(t, st.lineno)
    out = []
    for name, line in sorted(found.items(), key=lambda kv: kv[1]):
        value = detached_state(name, loop.graphs[name], _may_be_none(loop.site, [name]))
        out.append((Location(loop.site.filename, line), f"{name} = {value}"))
    return tuple(out)


def _stored_and_read(st: ast.Assign) -> tuple[list[str], set[str]]:
    """The plain names an assignment binds, in order, and those its value reads."""
    return [n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)], names(st.value, ast.Load)


def _bound_by(loop: ast.stmt | None) -> set[str]:
    """The names a ``for`` statement's target binds anew at every iteration (none for a ``while``)."""
    return names(loop.target, ast.Store) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()


def _stored_name(statement: str) -> str:
    return statement.split("=", 1)[0].strip()


# NOTE [State carried by the caller's loop]
# A trainer's method runs the forward and the backward, and the training loop
# that calls it passes a state from one call to the next: an RNN's hidden states
# handed back by ``hidden = architect.step(hidden, x, y)``, or put through a
# helper that was meant to detach them and no longer does (``hidden =
# repackage_hidden(hidden)``). The failing function runs no loop, so the state
# is read in the frame of the nearest user caller whose line lies in a loop's
# body (gradlab.diagnosis reads that frame's names holding a graph, and keeps
# nothing of it). Each name of that frame that holds a graph and that a
# one-line statement of the loop's body reads and assigns, not bound anew
# earlier in the body, is carried; the fix detaches each after its first such
# statement (element-wise for a list or tuple of tensors), so that every
# iteration's backward goes through that iteration's graph only. Detaching
# changes no value of the forward.


def carried_through_inner_loop(facts: Facts) -> tuple[str, int, int | None] | None:
    """A state threaded through an inner loop of each iteration (``out, state = decoder(out, state)`` over the
    chunks of a batch) and never bound anew in the outer loop's body: its name, the outer body's first line, and
    the line before the loop that first binds it (``state = torch.zeros(0)``), when one does (NOTE [A state
    threaded through an inner loop])."""
    site = facts.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None or facts.backward_line is None:
        return None
    body = loop_body_of(tree, facts.backward_line)
    loop = loop_around(tree, facts.backward_line)
    if not body or loop is None:
        return None
    fresh: set[str] = _bound_by(loop)
    for st in body:
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            for _, in_inner in _carried_by(st.body, fresh | _bound_by(st), lambda x: site.holds(x.lineno)):
                carried = [t for t in in_inner if site.kinds.get(t) == "tensor"]
                if carried:
                    name = carried[-1]
                    before = [
                        b
                        for b in preceding(tree, loop.lineno)
                        if isinstance(b, ast.Assign)
                        and b.lineno == b.end_lineno
                        and name in names(b, ast.Store)
                        and name not in names(b.value, ast.Load)
                    ]
                    return name, body[0].lineno, before[-1].lineno if before else None
        fresh |= names(st, ast.Store) if isinstance(st, ast.Assign) else set()
    return None


# NOTE [A state threaded through an inner loop]
# Each iteration of the training loop runs an inner loop over the chunks of its
# batch and threads a recurrent state through it (``out, state = decoder(out,
# state)``); the state was bound once, before the training loop, and nothing in
# the loop's body binds it anew, so the next batch starts from the last chunk of
# the previous one and its backward reaches into that batch's freed graph. The
# inner loop holds whole sequences in each iteration: a batch is a new set of
# sequences, so the state starts again where it started the first time (the
# statement before the loop that binds it, repeated at the top of the body, the
# first fix). Carrying the values on but not the graph (a detach at the top of
# the body) is the other reading, for a stream cut into consecutive batches.


def _accumulates(facts: Facts, total: str | None, part: str | None) -> int | None:
    """The line of the loop body that adds ``part`` into ``total`` (``total = total + loss``, ``total += loss``)."""
    site = facts.site
    if site is None or total is None or part is None or facts.backward_line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    for st in body or []:
        stored = names(st, ast.Store) if isinstance(st, (ast.Assign, ast.AugAssign)) else set()
        read = names(st, ast.Load) | (stored if isinstance(st, ast.AugAssign) else set())
        if total in stored and {total, part} <= read and st.lineno == st.end_lineno and site.holds(st.lineno):
            return st.lineno
    return None


def _recurrent(
    st: ast.stmt, carried: Iterable[str], namespace: Mapping[str, Any], tree: ast.Module | None = None
) -> bool:
    """``st`` passes the carried state into a module call and assigns it back (``out, h = rnn(x, h)``); not into
    a module the loop takes anew at each iteration (NOTE [A stack of layers is no recurrence])."""
    wanted = set(carried)
    loop = loop_around(tree, st.lineno) if tree is not None else None
    varying = names(loop.target, ast.Store) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    for n in ast.walk(st):
        if not isinstance(n, ast.Call) or not isinstance(resolve_name(n.func, namespace), torch.nn.Module):
            continue
        func = n.func
        if (isinstance(func, ast.Name) and func.id in varying) or (
            isinstance(func, ast.Subscript) and names(func.slice, ast.Load) & varying
        ):
            continue  # this iteration's layer (for layer in self.layers: h = layer(h)), not one cell again
        passed = [*n.args, *(k.value for k in n.keywords)]  # ``model(x, M_Z=M_Z)`` passes it too
        if any(isinstance(a, ast.Name) and a.id in wanted for arg in passed for a in ast.walk(arg)):
            return True
    return False


# NOTE [A stack of layers is no recurrence]
# A state passed into a module call and assigned back (h = cell(x, h)) reads as a recurrence, whose carried state
# a detach truncates (truncated backpropagation through time). But a loop that takes another module at each
# iteration (for stage in self.stages: h = stage(h), or self.layers[i](h)) runs a stack of layers, and each
# stage's loss backwarded inside it (layer-wise hints, deep supervision) is meant to train every stage below it:
# no truncation. So a call to the loop's own variable, or to a module indexed by it, is no recurrence, and the
# fixes read the state as carried within one step (retain_graph, the gradient of the losses' sum) when no step
# runs between the backward calls.


# NOTE [A backward every k steps]
# A recurrent loop runs one step per iteration and backwards only under a condition (``if (i + 1) % k1 == 0:``),
# the state stored at every step. Detached where each step reads it, the state would cut every loss to its last
# step; the loop's own unit of training is the update, so the state is detached at the end of the block that
# backwards and steps: each backward reaches back through the steps since the previous update (truncated
# backpropagation through time with one window per update).
def _update_block(ctx: Context) -> ast.If | None:
    """The ``if`` of the loop's body that holds the failing backward, without an ``else``, when the carried state is
    stored by a statement of that body outside it (every step) and is one tensor (NOTE [A backward every k steps])."""
    site, back, entry = ctx.site, ctx.backward_line, ctx.entry_lineno
    tree = site.tree() if site is not None else None
    if tree is None or back is None or entry is None or ctx.carried_kind not in (None, "tensor") or ctx.carried_none:
        return None
    if len(ctx.carried_all) > 1:
        return None
    body = loop_body_of(tree, back) or []
    block = next((st for st in body if st.lineno <= back <= (st.end_lineno or st.lineno)), None)
    stored = next((st for st in body if st.lineno <= entry <= (st.end_lineno or st.lineno)), None)
    if not isinstance(block, ast.If) or block.orelse or stored is None or stored is block:
        return None
    return block


def _detach_state(ctx: Context) -> str | None:
    """The statement that detaches the carried state: element-wise for a tuple, ``None`` left as it is."""
    names = ctx.carried_all or ((ctx.carried,) if ctx.carried else ())
    if not names:
        return None
    if len(names) > 1:
        return f"{', '.join(names)} = {', '.join(f'{n}.detach()' for n in names)}"
    return f"{names[0]} = {detached_state(names[0], ctx.carried_kind, ctx.carried_none)}"


#: The kinds of a carried state held as a sequence (of tensors, or of tuples of tensors: a state per layer).
_SEQUENCES = ("list", "tuple", "list:tuple", "tuple:tuple")


def detached_state(name: str, kind: str | None, may_be_none: bool) -> str:
    """The expression that detaches the state ``name`` holds: element-wise for a list or a tuple of tensors
    (:func:`gradlab.evidence.graph_kinds`), ``None`` left as it is."""
    value = (
        f"[tuple(t.detach() for t in s) for s in {name}]"
        if kind == "list:tuple"
        else f"tuple(tuple(t.detach() for t in s) for s in {name})"
        if kind == "tuple:tuple"
        else f"[s.detach() for s in {name}]"
        if kind == "list"
        else f"tuple(s.detach() for s in {name})"
        if kind == "tuple"
        else f"{name}.detach()"
    )
    return f"None if {name} is None else {value}" if may_be_none else value


def carried_fixes(ctx: Context) -> list[Proposal]:
    if ctx.total:
        name = ctx.carried or T("the running total")
        loss = ctx.loss or T("the iteration's loss")
        number = backward = None
        site = ctx.site
        if site is not None and ctx.carried and ctx.loss and ctx.entry_lineno and ctx.backward_line:
            line = site.text(ctx.entry_lineno).strip()
            number = replace_line(ctx, ctx.entry_lineno, replace_reads(line, ctx.loss, f"{ctx.loss}.item()"))
            call = site.text(ctx.backward_line).strip()
            backward = replace_line(
                ctx,
                ctx.backward_line,
                re.sub(rf"(?<![\w.]){re.escape(ctx.carried)}\.backward\(", f"{ctx.loss}.backward(", call),
            )
            if backward is not None and backward.text.strip() == call:
                backward = None
        return [
            Proposal(
                Fix(
                    edits=all_edits(number, backward),
                    summary=T(
                        "keep the running total as a number: add {loss}.item() to {name}, and call backward on each "
                        "iteration's loss",
                        name=name,
                        loss=loss,
                    ),
                    trains=T(
                        "each iteration's loss trains the model, as intended; {name} is only for logging", name=name
                    ),
                    claims=claim(ctx, ctx.reach),
                ),
                ctx.reach,
                False,
            ),
            Proposal(
                Fix(
                    summary=T(
                        "if {name} should train the model, call {name}.backward() once, after the loop", name=name
                    ),
                    trains=T(
                        "every iteration's loss trains the model through one backward (memory grows with the loop)"
                    ),
                    claims=claim(ctx, ctx.reach),
                ),
                ctx.reach,
                False,
            ),
        ]
    edit = None
    if "inner_loop" in ctx.extra and ctx.carried and ctx.site is not None:
        init = int(ctx.extra["inner_loop"]) if ctx.extra["inner_loop"] else None
        again = ctx.site.text(init).strip() if init is not None else None
        detach = keeping(
            ctx,
            Fix(
                alternative=again is not None,
                summary=T(
                    "detach {name} at the start of each iteration: the next batch carries its values on, not the "
                    "graph of the batch before",
                    name=ctx.carried,
                ),
                trains=T(
                    "at each iteration, {loss} trains through that iteration's graph only; the previous iteration's "
                    "graph is released",
                    loss=ctx.l,
                ),
                edits=all_edits(insert_lines(ctx, ctx.entry_lineno, _detach_state(ctx))),
            ),
        )
        if again is None:
            return [detach]
        reset = Fix(
            summary=T(
                "start {name} again at each iteration: {code} at the top of the loop's body, as before the first one",
                name=ctx.carried,
                code=again,
            ),
            trains=T(
                "each batch's sequences start from the state the first batch started from; {loss} trains through "
                "that iteration's graph only",
                loss=ctx.l,
            ),
            edits=all_edits(insert_lines(ctx, ctx.entry_lineno, again)),
            keeps_forward=False,
        )
        return [Proposal(replace(reset, claims=claim(ctx, ctx.reach)), ctx.reach, True), detach]
    if ctx.boundary:
        edits = tuple(stored_after(ctx, loc, text) for loc, text in ctx.boundary)
        return [
            keeping(
                ctx,
                Fix(
                    summary=T(
                        "detach the state the calling loop carries into the next iteration: {names}, where that loop "
                        "passes it on",
                        names=", ".join(ctx.carried_all),
                    ),
                    trains=T(
                        "at each iteration, {loss} trains through that iteration's graph only; the previous "
                        "iteration's graph is released",
                        loss=ctx.l,
                    ),
                    edits=all_edits(*edits),
                ),
            )
        ]
    if ctx.extra.get("detach_after_backward"):  # NOTE [A memory the loss reads after storing it]
        edit = insert_lines(ctx, ctx.backward_line, ctx.extra["detach_after_backward"], after=True)
    elif ctx.kept_at is not None and ctx.carried:
        value = ctx.extra.get("handed") or detached_value(ctx.kept_at.code.strip())
        edit = edit_at(ctx, ctx.kept_at, value) if value else detached_after(ctx, ctx.kept_at, ctx.carried)
    elif ctx.entry_lineno is not None and ctx.site is not None and ctx.carried:
        simple = ctx.carried_kind in (None, "tensor") and not ctx.carried_none and len(ctx.carried_all) <= 1
        line = ctx.site.text(ctx.entry_lineno).strip()
        first, after = reads_around(ctx)
        every = _update_block(ctx)  # NOTE [A backward every k steps]
        if every is not None:
            edit = insert_lines(ctx, every.body[-1].lineno, _detach_state(ctx), after=True)
        elif simple and first is not None and after:
            # read above the store by the next iteration, and below it by this iteration's loss (a refiner reads
            # the pose it updates, the stage's loss the new pose): detached where the next iteration first reads it
            edit = insert_lines(ctx, first, _detach_state(ctx))
        elif simple and first is not None:
            # the next iteration reads the state before this line runs again (a memory bank read by the loss):
            # the value stored must hold no graph, whatever fresh tensors it was built from
            value = detached_value(line)
            edit = replace_line(ctx, ctx.entry_lineno, value) if value else None
        else:
            # read more than once on the line (``x = (x - x.mean()) / x.std()``): detached before it, every read
            once = len(re.findall(rf"(?<![\w.]){re.escape(ctx.carried)}(?![\w(])", line.split("=", 1)[-1])) == 1
            inline = detach_in(line, ctx.carried) if simple and once else None
            edit = (
                replace_line(ctx, ctx.entry_lineno, inline)
                if inline
                else insert_lines(ctx, ctx.entry_lineno, ctx.extra.get("detach_lines") or _detach_state(ctx))
            )
    # a method's frame (the state on one of self's attributes): words, never "self.detach()"
    named = ctx.carried if ctx.carried != "self" else None
    named_kind = ctx.carried_kind if named else None
    named_all = ctx.carried_all if named else ()
    every = _update_block(ctx) if edit is not None and ctx.entry_lineno is not None and ctx.carried else None
    proposals = [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "detach {name} after each update, at the end of the block that backwards (`if {condition}:`): "
                    "each backward then reaches back to the previous update, not through the graph it freed "
                    "(truncated backpropagation through time, one window per update)",
                    name=ctx.carried or "",
                    condition=ast.get_source_segment(ctx.site.source, every.test) or ast.unparse(every.test)
                    if ctx.site is not None
                    else "",
                )
                if every is not None
                else T(
                    "detach each state the loop carries ({names}) where the next iteration first reads it{tbptt}",
                    names=", ".join(named_all),
                    tbptt=T(" (truncated backpropagation through time)") if ctx.recurrent else "",
                )
                if len(named_all) > 1 and ctx.extra.get("detach_lines")
                else T(
                    "detach the carried state at the iteration boundary, each of its tensors ({value}) where it "
                    "enters the next iteration (truncated backpropagation through time)",
                    value=detached_state(named, named_kind, False),
                )
                if named and ctx.recurrent and named_kind in _SEQUENCES and len(named_all) <= 1
                else T(
                    "detach the carried state at the iteration boundary, each of its tensors ({value}) where it is "
                    "kept for the next iteration",
                    value=detached_state(named, named_kind, False),
                )
                if named and named_kind in _SEQUENCES and len(named_all) <= 1
                else T(
                    "detach the carried state at the iteration boundary: {name}.detach() where it enters the next "
                    "iteration (truncated backpropagation through time)",
                    name=named,
                )
                if named and ctx.recurrent
                else T(
                    "detach the carried state at the iteration boundary: {name}.detach() where it is kept for the "
                    "next iteration",
                    name=named,
                )
                if named
                else T(  # no name to put before .detach(): words only, nothing that looks like code
                    "detach the state carried from one iteration to the next, where it enters the next iteration"
                ),
                trains=T(
                    "each backward of {loss} trains through the steps run since the previous update; the graph "
                    "before them is released",
                    loss=ctx.l,
                )
                if every is not None
                else T(
                    "at each iteration, {loss} trains through that iteration's graph only; the previous iteration's "
                    "graph is released",
                    loss=ctx.l,
                ),
                edits=all_edits(edit),
            ),
        ),
        Proposal(
            Fix(
                alternative=True,
                summary=T(
                    "backpropagate through the whole sequence: accumulate the losses and call backward once at the end"
                ),
                trains=T(
                    "full backpropagation through time: each loss trains through every earlier step (memory grows "
                    "with the sequence)"
                ),
                claims=claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]
    if ctx.extra.get("detach_after_backward"):  # NOTE [A memory the loss reads after storing it]
        stored = [line.split(" = ")[0] for line in ctx.extra["detach_after_backward"].splitlines()]
        fix = proposals[0].fix
        summary = T(
            "detach {names} after each backward: this iteration's loss reads them after they are stored, so a "
            "detach where they are stored would cut this iteration's gradient too",
            names=", ".join(stored),
        )
        proposals[0] = replace(proposals[0], fix=replace(fix, summary=summary))
    # a state kept on an object (a queue), or any state no recurrent call passes on, is not a sequence to
    # backpropagate through
    proposals = proposals[:1] if ctx.kept_at is not None or not ctx.recurrent else proposals
    whole = _whole_sequence(ctx)  # NOTE [A rollout whose gradients one step sums]
    if whole is not None:  # the whole sequence's reading, with its code, in place of its sentence
        proposals = [*proposals[:1], whole]
    kept = kept_within_step(ctx) if ctx.kept_at is None and not ctx.recurrent else None
    window = step_at_window_end(ctx)  # NOTE [A step inside a window of truncated backpropagation]
    restart = restart_from_weights(ctx)  # NOTE [A copy of the weights carried across iterations]
    if restart is not None:
        return [p for p in (window, restart, kept, *proposals) if p is not None]
    moved = forward_after_step(ctx)  # NOTE [The next input's forward run before the step]
    if moved is not None and (ctx.recurrent or into_model(ctx)):
        return [p for p in (window, moved, kept, *proposals) if p is not None]
    moved = replace(moved, fix=replace(moved.fix, alternative=True)) if moved is not None else None
    return [p for p in (window, kept, *proposals, moved) if p is not None]
