"""Cause ``carried_state``: state carried from one iteration to the next keeps the previous iteration's graph (an
RNN's hidden state, a queue kept on an object, a running total); its fixes."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, Topology, calls_into, graph_kinds, in_site, resolve_name, sequence_of, var_named
from ..fixes import (
    Fix,
    Proposal,
    all_edits,
    backward_with,
    claim,
    detached_after,
    edit_at,
    indent_of,
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
    called_on,
    calls_method,
    detached,
    function_of,
    loop_around,
    loop_body_of,
    names,
    preceding,
    runs_backward,
    statement_at,
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
            recurrent=(st is not None and _recurrent(st, carried, facts.namespace))
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
        statements = [f"{c} = {_detached(c, kinds[c], _may_be_none(site, [c]))}" for c in carried]
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
        stored, read = _stored_and_read(st)
        carried = [t for t in stored if t in read]
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
                entry_lineno=in_site(facts, loc),
            )
    return replace(base, total=total)


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
    fresh: set[str] = _bound_by(loop)
    for st in body or []:
        if not isinstance(st, ast.Assign) or not site.holds(st.lineno):
            continue
        stored, read = _stored_and_read(st)
        carried = [
            t
            for t in stored
            if t in read and t not in fresh and site.kinds.get(t) in ("tensor", "list", "tuple", "none")
        ]
        if carried:
            return st.lineno, carried
        fresh |= {t for t in stored if t not in read}
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
    return any(_recurrent(st, carried, facts.namespace) for st in body or [])


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
    fresh: set[str] = set()  # bound anew earlier in the body: not carried
    for st in loop_body_of(tree, loop.line) or []:
        if not isinstance(st, ast.Assign) or st.lineno != st.end_lineno:
            continue
        stored, read = _stored_and_read(st)
        for t in stored:
            if t in read and t not in fresh and t in loop.graphs:
                found.setdefault(t, st.lineno)
        fresh |= {t for t in stored if t not in read}
    out = []
    for name, line in sorted(found.items(), key=lambda kv: kv[1]):
        value = _detached(name, loop.graphs[name], _may_be_none(loop.site, [name]))
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
            inner_fresh = fresh | _bound_by(st)
            for x in st.body:
                if not isinstance(x, ast.Assign) or not site.holds(x.lineno):
                    continue
                stored, read = _stored_and_read(x)
                carried = [t for t in stored if t in read and t not in inner_fresh and site.kinds.get(t) == "tensor"]
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
                inner_fresh |= {t for t in stored if t not in read}
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


def kept_attribute(base: Context, facts: Facts) -> Context | None:
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
        # stored again further down the same function (a histogram updated in two steps): the last store is the
        # value kept, and what the rest of the forward reads
        function = function_of(tree, st.lineno)
        later = [
            x
            for x in ast.walk(function if function is not None else tree)
            if isinstance(x, ast.Assign)
            and len(x.targets) == 1
            and x.lineno > st.lineno
            and x.lineno == x.end_lineno
            and ast.unparse(x.targets[0]) == name
            and function_of(tree, x.lineno) is function
        ]
        last = max(later, key=lambda x: x.lineno) if later else st
        loc = Location(site.filename, last.lineno)
        return replace(base, carried=name, kept_at=loc, entry_line=loc.code, entry_where=loc.where)
    return None


def _recurrent(st: ast.stmt, carried: Iterable[str], namespace: Mapping[str, Any]) -> bool:
    """``st`` passes the carried state into a module call and assigns it back (``out, h = rnn(x, h)``)."""
    names = set(carried)
    for n in ast.walk(st):
        if not isinstance(n, ast.Call) or not isinstance(resolve_name(n.func, namespace), torch.nn.Module):
            continue
        passed = [*n.args, *(k.value for k in n.keywords)]  # ``model(x, M_Z=M_Z)`` passes it too
        if any(isinstance(a, ast.Name) and a.id in names for arg in passed for a in ast.walk(arg)):
            return True
    return False


def _detach_state(ctx: Context) -> str | None:
    """The statement that detaches the carried state: element-wise for a tuple, ``None`` left as it is."""
    names = ctx.carried_all or ((ctx.carried,) if ctx.carried else ())
    if not names:
        return None
    if len(names) > 1:
        return f"{', '.join(names)} = {', '.join(f'{n}.detach()' for n in names)}"
    return f"{names[0]} = {_detached(names[0], ctx.carried_kind, ctx.carried_none)}"


def _detached(name: str, kind: str | None, may_be_none: bool) -> str:
    """The expression that detaches the state ``name`` holds: element-wise for a list or a tuple of tensors
    (:func:`gradlab.evidence.graph_kinds`), ``None`` left as it is."""
    value = (
        f"[s.detach() for s in {name}]"
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
    if ctx.kept_at is not None and ctx.carried:
        value = detached_value(ctx.kept_at.code.strip())
        edit = edit_at(ctx, ctx.kept_at, value) if value else detached_after(ctx, ctx.kept_at, ctx.carried)
    elif ctx.entry_lineno is not None and ctx.site is not None and ctx.carried:
        simple = ctx.carried_kind in (None, "tensor") and not ctx.carried_none and len(ctx.carried_all) <= 1
        line = ctx.site.text(ctx.entry_lineno).strip()
        first, after = _reads_around(ctx)
        if simple and first is not None and after:
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
    proposals = [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "detach each state the loop carries ({names}) where the next iteration first reads it{tbptt}",
                    names=", ".join(named_all),
                    tbptt=T(" (truncated backpropagation through time)") if ctx.recurrent else "",
                )
                if len(named_all) > 1 and ctx.extra.get("detach_lines")
                else T(
                    "detach the carried state at the iteration boundary, each of its tensors ({value}) where it "
                    "enters the next iteration (truncated backpropagation through time)",
                    value=_detached(named, named_kind, False),
                )
                if named and ctx.recurrent and named_kind in ("list", "tuple") and len(named_all) <= 1
                else T(
                    "detach the carried state at the iteration boundary, each of its tensors ({value}) where it is "
                    "kept for the next iteration",
                    value=_detached(named, named_kind, False),
                )
                if named and named_kind in ("list", "tuple") and len(named_all) <= 1
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
    # a state kept on an object (a queue), or any state no recurrent call passes on, is not a sequence to
    # backpropagate through
    proposals = proposals[:1] if ctx.kept_at is not None or not ctx.recurrent else proposals
    kept = _kept_within_step(ctx) if ctx.kept_at is None and not ctx.recurrent else None
    window = _step_at_window_end(ctx)  # NOTE [A step inside a window of truncated backpropagation]
    restart = _restart_from_weights(ctx)  # NOTE [A copy of the weights carried across iterations]
    if restart is not None:
        return [p for p in (window, restart, kept, *proposals) if p is not None]
    moved = _forward_after_step(ctx)  # NOTE [The next input's forward run before the step]
    if moved is not None and (ctx.recurrent or _into_model(ctx)):
        return [p for p in (window, moved, kept, *proposals) if p is not None]
    moved = replace(moved, fix=replace(moved.fix, alternative=True)) if moved is not None else None
    return [p for p in (window, kept, *proposals, moved) if p is not None]


# NOTE [A copy of the weights carried across iterations]
# Meta-learning code may copy a model's weights before its loop (meta_weights = {n: p.detach().clone()
# .requires_grad_() for n, p in model.named_parameters()}), take a virtual step on the copy inside the loop
# (meta_weights = {n: w - lr * g ...}, reading the copy itself and a gradient autograd.grad took in the body)
# and step the real model too. Carried to the next
# iteration, the copy keeps the graph of the last virtual step, which that iteration's backward freed, and it has
# stopped following the weights the optimizer steps. The copy is meant to start from the model at every
# iteration, as the first one did (Meta-Weight-Net, learning-to-reweight): the statement that makes it moves to
# the top of the loop's body. Offered, first, when the carried name is bound once before the loop by a statement
# that reads a model's parameters (parameters(), named_parameters(), state_dict()) and the loop's body rebinds
# it from itself and such a gradient (an EMA of the weights, blended with them, is a memory, not this).
_WEIGHTS = frozenset({"parameters", "named_parameters", "state_dict"})


def _restart_from_weights(ctx: Context) -> Proposal | None:
    """The statement that copies a model's weights before the loop, moved to the top of its body (NOTE [A copy of
    the weights carried across iterations])."""
    site, back = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    loop = loop_around(tree, back) if tree is not None and back is not None else None
    if site is None or tree is None or loop is None or not loop.body:
        return None
    body = loop.body
    # a virtual step: rebound from itself and from a gradient autograd.grad took in the body (w - lr * g), not a
    # blend with the model's weights (an EMA of them, which is meant to carry its values)
    grads = {
        t
        for st in body
        if isinstance(st, ast.Assign) and any(runs_backward(c) for c in ast.walk(st.value) if isinstance(c, ast.Call))
        for t in names(st, ast.Store)
    }
    rebound = {
        t
        for st in body
        if isinstance(st, ast.Assign)
        for t in names(st, ast.Store)
        if t in names(st.value, ast.Load) and names(st.value, ast.Load) & grads
    }
    before = preceding(tree, loop.lineno)
    for name in sorted(rebound):
        made = [st for st in before if isinstance(st, ast.Assign) and name in names(st, ast.Store)]
        if not made:
            continue
        init = made[-1]
        copied = {
            ast.unparse(c.func.value)
            for c in ast.walk(init.value)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in _WEIGHTS
        }
        if not any(m in site.modules for m in copied) or name in names(init.value, ast.Load):
            continue
        start, end = init.lineno, init.end_lineno or init.lineno
        if not (site.holds(start) and site.holds(end)):
            continue
        readers = [st for st in before if st.lineno > end and name in names(st, ast.Load)]
        text = textwrap.dedent("\n".join(site.text(k) for k in range(start, end + 1)))
        top = insert_lines(ctx, body[0].lineno, text)
        if top is None:
            return None
        edits = [top] if readers else [Edit(site.filename, start, end, ""), top]
        model = sorted(m for m in copied if m in site.modules)[0]
        return keeping(
            ctx,
            Fix(
                summary=T(
                    "start {name} again from {model}'s weights at each iteration: the statement that copies them "
                    "moves to the top of the loop's body; carried, {name} kept the graph of the last iteration's "
                    "update and stopped following the weights the optimizer steps",
                    name=name,
                    model=model,
                ),
                trains=T(
                    "{loss} trains through this iteration's copy of {model}'s weights only; each iteration starts "
                    "the copy from the weights as they are then",
                    loss=ctx.l,
                    model=model,
                ),
                edits=tuple(sorted(edits, key=lambda e: e.start)),
                keeps_forward=False,
            ),
        )
    return None


# NOTE [The next input's forward run before the step]
# A loop may compute, before its optimizer step, the features of the input the next iteration
# works on (an agent's next observation encoded for the next action: state = encode(next_obs)),
# and carry them into the next iteration, whose loss trains through them. The step then rewrites
# the weights that forward saved (or its backward freed the graph), and the next backward fails.
# The value does not read its own earlier value (not a recurrent state: nothing to truncate), so
# its forward can run after the step instead: the statements that compute it, and those that
# derive from it before the step, move to right after the statement that holds the step. The
# next iteration then reads a forward of the weights as they are, and its loss trains through it,
# as it meant to. Offered when nothing that stays before the step reads what moves and nothing
# there rebinds what it reads; first when the carried value goes into a model's call (an input
# of the next forward), else after the detach (a value the loss compares against may be meant
# as a constant).
def _into_model(ctx: Context) -> bool:
    """The loop passes the carried value into a call of a model an optimizer steps, or of its method
    (``policy.act(state)``): an input of the next forward, not a target a criterion compares against."""
    site, back = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    carried = set(ctx.carried_all) | ({ctx.carried} if ctx.carried else set())
    if site is None or tree is None or back is None:
        return False
    for call in (n for st in loop_body_of(tree, back) or [] for n in ast.walk(st) if isinstance(n, ast.Call)):
        passed = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(a, ast.Name) and a.id in carried for a in passed):
            continue
        held = frozenset().union(*site.optimizers.values()) if site.optimizers else frozenset()
        trained = [m for m, ids in site.modules.items() if ids & held]  # a loss module (nn.MSELoss) holds nothing
        if any(calls_into(ast.unparse(call.func), m) for m in trained):
            return True
    return False


def _forward_after_step(ctx: Context) -> Proposal | None:
    """The forward of the carried value moved after the optimizer step (NOTE [The next input's forward run before
    the step])."""
    site, back = ctx.site, ctx.backward_line
    carried = set(ctx.carried_all) | ({ctx.carried} if ctx.carried else set())
    tree = site.tree() if site is not None else None
    if site is None or tree is None or back is None or not carried or ctx.kept_at is not None or ctx.boundary:
        return None
    body = loop_body_of(tree, back) or []
    binds = [k for k, st in enumerate(body) if names(st, ast.Store) & carried]
    if len(binds) != 1 or not isinstance(body[binds[0]], ast.Assign):
        return None
    k = binds[0]
    if names(body[k].value, ast.Load) & carried:  # type: ignore[attr-defined]
        return None  # a recurrent state (h = rnn(x, h)): its forward needs the earlier one
    steps = [j for j in range(k + 1, len(body)) if calls_method(body[j], ("step",))]
    if not steps:
        return None
    j = steps[-1]
    moved, stored = [k], set(names(body[k], ast.Store))
    for i in range(k + 1, j):
        b = body[i]
        if not names(b, ast.Load) & stored:
            continue
        if not isinstance(b, (ast.Assign, ast.AnnAssign)) or runs_backward(b) or calls_method(b, ("step",)):
            return None
        moved.append(i)
        stored |= names(b, ast.Store)
    if names(body[j], ast.Load) & stored:
        return None  # the step's own statements read it: moved, they would read another value
    inputs = set().union(*(names(body[i], ast.Load) for i in moved)) - stored
    if any(names(body[i], ast.Store) & inputs for i in range(k + 1, j + 1) if i not in moved):
        return None
    spans = [(body[i].lineno, body[i].end_lineno or body[i].lineno) for i in moved]
    if not all(site.holds(a) and site.holds(b) for a, b in spans):
        return None
    indent = indent_of(site, spans[0][0])
    text = "\n".join(
        indent + line.strip() if n == a else site.text(n)
        for a, b in spans
        for n, line in ((m, site.text(m)) for m in range(a, b + 1))
    )
    end = body[j].end_lineno or body[j].lineno
    edits = [Edit(site.filename, a, b, "") for a, b in spans] + [Edit(site.filename, end + 1, end, text)]
    what = ", ".join(sorted(stored))
    fix = Fix(
        summary=T(
            "compute {what} after the optimizer step, where the next iteration reads it: computed before the step, "
            "the forward it keeps for the next iteration saved the weights the step then changed",
            what=what,
        ),
        trains=T(
            "{loss} trains through {what} at the next iteration, computed from the weights after this iteration's step",
            loss=ctx.l,
            what=what,
        ),
        edits=tuple(sorted(edits, key=lambda e: e.start)),
        keeps_forward=False,
    )
    return keeping(ctx, fix)


# NOTE [A step inside a window of truncated backpropagation]
# A loop that detaches its carried state only under a condition (``if end_of_window:
# state = state.detach()``) backpropagates each loss through every iteration since the last
# detach: truncated backpropagation through time over windows, with ``retain_graph`` inside a
# window. An optimizer step at every iteration rewrites the weights the window's graph saved,
# and the next backward inside the window finds them changed. The code's own window says where
# the step belongs: under that condition, where the graph is released, with the window's
# gradients accumulated until then (the statements from the backward to the step, and the
# zero_grad, moved there: step, then zero). Offered first, since the code wrote the window.
def _step_at_window_end(ctx: Context) -> Proposal | None:
    """The step (and what runs between the backward and it, and the zero_grad) moved under the condition that
    detaches the carried state (NOTE [A step inside a window of truncated backpropagation])."""
    site, back, carried = ctx.site, ctx.backward_line, set(ctx.carried_all) | ({ctx.carried} if ctx.carried else set())
    tree = site.tree() if site is not None else None
    if site is None or tree is None or back is None or not carried or not ctx.recurrent:
        return None
    body = loop_body_of(tree, back) or []
    here = next((k for k, st in enumerate(body) if st.lineno <= back <= (st.end_lineno or st.lineno)), None)
    window = next(
        (
            (k, st)
            for k, st in enumerate(body)
            if isinstance(st, ast.If)
            and not st.orelse
            and any(_detaches(b, carried) for b in st.body)
            and not any(_detaches(b, carried) for b in body if b is not st)
        ),
        None,
    )
    if here is None or window is None or window[0] < here or not isinstance(body[here], ast.Expr):
        return None
    stepped = next((k for k in range(here + 1, window[0]) if called_on(body[k], "step")), None)
    if stepped is None or any(called_on(b, "step") or called_on(b, "zero_grad") for b in window[1].body):
        return None
    zeroes = [k for k, st in enumerate(body) if k < here and called_on(st, "zero_grad")]
    moved = [*range(here + 1, stepped + 1), *zeroes]
    between = [body[k] for k in range(here + 1, stepped + 1)]
    if not zeroes or any(not isinstance(st, ast.Expr) for st in between):
        return None  # only calls move (a clip, the step): nothing they bind is read before the window ends
    text = "\n".join(ast.get_source_segment(site.source, body[k]) or ast.unparse(body[k]) for k in moved)
    into = insert_lines(ctx, window[1].body[0].lineno, text)
    removed = [Edit(site.filename, body[k].lineno, body[k].end_lineno or body[k].lineno, "") for k in moved]
    if into is None or not all(site.holds(e.start) for e in removed):
        return None
    condition = ast.get_source_segment(site.source, window[1].test) or ast.unparse(window[1].test)
    return Proposal(
        Fix(
            keeps_forward=False,  # inside a window, the next forward runs on the weights before the step
            summary=T(
                "step where the window ends (under `if {condition}:`, where {name} is detached): each backward inside "
                "the window then finds the weights its graph saved, and the window's gradients add up until the step",
                condition=condition,
                name=", ".join(sorted(carried)),
            ),
            trains=T(
                "{loss} trains what it reaches through every iteration of its window (truncated backpropagation "
                "through time, as the code's detach and retain_graph lay it out), one step per window",
                loss=ctx.l,
            ),
            edits=tuple(sorted((*removed, into), key=lambda e: e.start)),
            claims=claim(ctx, ctx.reach),
        ),
        ctx.reach,
        False,
    )


def _detaches(st: ast.stmt, names: set[str]) -> bool:
    """``st`` is ``name = name.detach()`` (or ``name.detach_()``) for one of ``names``."""
    if isinstance(st, ast.Expr):
        call = st.value
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "detach_"
            and ast.unparse(call.func.value) in names
        )
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or ast.unparse(st.targets[0]) not in names:
        return False
    taken = detached(st.value)
    return taken is not None and ast.unparse(taken) == ast.unparse(st.targets[0])


def _kept_within_step(ctx: Context) -> Proposal | None:
    """The graph kept by the backward that freed it (``retain_graph=True``), when no optimizer step ran between
    it and the failing one: the losses of one step, each backwarded in turn through the state the loop built (NOTE
    [A state carried within one step])."""
    site, line = ctx.site, ctx.extra.get("one_step")
    if site is None or not line or ctx.total or not ctx.loss:
        return None
    at = int(line)
    edit = backward_with(ctx, at, "retain_graph=True")
    if edit is None:
        return None
    if not ctx.carried:  # no state carried: the losses are parts of one forward made before the loop
        return keeping(
            ctx,
            Fix(
                summary=T(
                    "keep the graph each backward at {where} frees (retain_graph=True): each {loss} is a part of one "
                    "forward computed before this loop, the first backward freed that forward's graph, and no "
                    "optimizer step runs between these backward calls",
                    where=Location(site.filename, at).where,
                    loss=ctx.l,
                ),
                trains=T(
                    "each {loss} trains through the one forward it is a part of, with the values it has now; the "
                    "gradient each backward leaves is used as your code uses it",
                    loss=ctx.l,
                ),
                cost=T("that forward's graph stays in memory until the last of these backward calls"),
                edits=(edit,),
            ),
        )
    return keeping(
        ctx,
        Fix(
            summary=T(
                "keep the graph each backward at {where} frees (retain_graph=True): no optimizer step runs between "
                "these backward calls, so each loss goes on training through the state the loop carries, "
                "as the code asks",
                where=Location(site.filename, at).where,
            ),
            trains=T(
                "each {loss} trains through every earlier iteration's graph that the carried state holds; the "
                "gradients add up into the one step, the gradient of the losses' sum",
                loss=ctx.l,
            ),
            cost=T("every earlier iteration's graph stays in memory, and is gone through again, until the step"),
            edits=(edit,),
        ),
    )


# NOTE [A state carried within one step]
# A loop inside one training step (the frames of one clip, the segments of one sequence) backwards each
# iteration's loss as it goes, and carries a state built from the earlier iterations' graphs (a memory of the
# clip's frames, concatenated). The step comes after the loop. The code as written asks for each loss's
# gradient through the whole state: that is what the earlier iterations' graphs are kept in the state for, and
# with no step in between the gradients add up into the gradient of the losses' sum. retain_graph=True on
# the backward gives exactly that; a detach would stop the later losses from training what built the state
# (an encoder that writes the memory). Offered first when the record shows no step and no other update
# between the backward that freed the graph and the failing one, and the state is not passed through a
# module call that returns its update (an RNN's hidden state, a recurrent memory: there a detach is the
# truncation such loops are written for, and comes first).


def _reads_around(ctx: Context) -> tuple[int | None, bool]:
    """The first statement of the loop body above the store that reads the carried state (None if none), and
    whether a statement below the store reads it too (the iteration's own loss on the new value)."""
    site, name, line = ctx.site, ctx.carried, ctx.entry_lineno
    tree = site.tree() if site is not None else None
    if tree is None or name is None or line is None:
        return None, False
    first: int | None = None
    after = False
    for st in loop_body_of(tree, line) or []:
        reads = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(st))
        if st.lineno < line and reads and first is None:
            first = st.lineno
        after = after or (st.lineno > line and reads)
    return first, after
