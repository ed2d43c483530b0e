"""Cause ``stale_forward``: a forward computed once, before the loop, is reused by every iteration (or a tensor of
the loop's own forward kept from before it); its fixes."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import (
    Facts,
    Problem,
    calls_into,
    calls_name,
    holds_node,
    leaves_below,
    sequence_of,
    stepped_params,
    value_of,
)
from ..fixes import (
    Fix,
    Proposal,
    all_edits,
    claim,
    edit_at,
    indent_of,
    insert_lines,
    keeping,
    source_of,
    statements_text,
)
from ..graph import Graph, GraphNode
from ..i18n import T, Text, join
from ..location import Location
from ..rewrite import detached_value
from ..source import (
    detached,
    draws_random,
    feeding,
    function_of,
    loop_around,
    loop_body_of,
    names,
    preceding,
    statement_at,
)
from .handed_forward import handed_forward_fixes, held_tensors
from .kept_constant import kept_constant_fixes

if TYPE_CHECKING:
    from ..recorder import BackwardCall


def _bound_before_loop(graph: Graph, p: Problem, facts: Facts) -> int | None:
    """The statement before the loop that binds a tensor of the frame whose graph holds ``p``'s node: the
    forward's line in the failing function when the node was saved inside a model's ``forward``."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    loop = loop_around(tree, line) if tree is not None and line is not None else None
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or tree is None or loop is None or node is None or node.seq is None:
        return None
    assigned = set().union(*(names(st, ast.Store) for st in loop.body))
    for key, value in facts.namespace.items():
        if not isinstance(key, str) or key in assigned:
            continue
        # a tensor, or a distribution made from one before the loop (its scale_tril); not an object of the user's
        # classes, whose state is another cause's (a reweighter updated without no_grad)
        if not isinstance(value, (torch.Tensor, torch.distributions.Distribution)):
            continue
        if not any(t.grad_fn is not None and holds_node(t, node) for t in held_tensors(value)):
            continue
        binding = [st for st in preceding(tree, loop.lineno) if key in names(st, ast.Store) and site.holds(st.lineno)]
        if binding:
            return binding[-1].lineno
    return None


def global_forward_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """A forward run once at module level, whose result a training function called once per iteration reads as a
    global (NOTE [A forward run once at module level]): the statement to move into that function."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or tree is None or line is None or node is None:
        return None
    body = loop_body_of(tree, line)
    if body is None:
        function = function_of(tree, line)
    else:  # a function of the file the loop calls at every iteration, which reads the global (a residual's helper)
        called = {
            n.func.id for st in body for n in ast.walk(st) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        helpers = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in called]
        function = next((f for f in helpers if _reads_global_holding(f, facts, node)), None)
    if function is None or not function.body:
        return None
    read = _globals_read(function)
    held = stepped_params(facts)
    for key in sorted(read):
        value = facts.namespace.get(key)
        if not isinstance(value, torch.Tensor) or value.grad_fn is None or not holds_node(value, node):
            continue
        if not leaves_below(value.grad_fn)[0] & held:
            return None  # nothing trained below it: a detach where it is made (NOTE [A part no optimizer steps])
        module_level = [st for st in tree.body if isinstance(st, ast.Assign) and key in names(st, ast.Store)]
        if len(module_level) != 1:
            return None
        st = module_level[0]
        if st.lineno != st.end_lineno or key in names(st.value, ast.Load):
            return None
        others = [  # module code or another function or class that reads it too: it stays where it is as well
            x for x in tree.body if x is not st and x is not function and key in names(x, ast.Load)
        ]
        first = function.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(function.body) > 1:
            first = function.body[1]  # after the docstring
        return replace(
            base,
            extra={
                **base.extra,
                "global_forward": key,
                "global_line": str(st.lineno),
                "global_into": str(first.lineno),
                "global_keep": "1" if others else "",
                "function": function.name,
            },
        )
    return None


def _globals_read(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names ``function`` reads that it neither binds nor takes as an argument."""
    local = set().union(*(names(st, ast.Store) for st in ast.walk(function) if isinstance(st, ast.stmt)))
    params = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    return names(function, ast.Load) - local - params


def _reads_global_holding(function: ast.FunctionDef, facts: Facts, node: GraphNode) -> bool:
    """``function`` reads a global of the frame whose graph holds ``node``."""
    return any(holds_node(facts.namespace.get(k), node) for k in _globals_read(function))


def caller_forward_context(base: Context, facts: Facts) -> Context | None:
    """A forward run once before the loop of the caller that calls the failing function at every iteration, its
    result handed in (NOTE [A forward run once before the caller's loop]): the statement to move into that loop."""
    loop = facts.caller_loop
    tree = loop.site.tree() if loop is not None else None
    around = loop_around(tree, loop.line) if tree is not None and loop is not None else None
    if loop is None or tree is None or around is None:
        return None
    body = around.body
    bound = set().union(*(names(st, ast.Store) for st in body))
    if isinstance(around, (ast.For, ast.AsyncFor)):
        bound |= names(around.target, ast.Store)
    read = set().union(*(names(st, ast.Load) for st in body))
    scope = function_of(tree, around.lineno)
    statements = [st for st in ast.walk(scope if scope is not None else tree) if isinstance(st, ast.Assign)]
    held = stepped_params(facts)
    found: list[tuple[str, ast.Assign, str]] = []
    for key, kind in loop.graphs.items():
        if kind != "tensor" or key not in read or key in bound:
            continue
        binding = [st for st in statements if any(isinstance(t, ast.Name) and t.id == key for t in st.targets)]
        if len(binding) != 1:
            continue
        st = binding[0]
        if st.lineno >= around.lineno or st.lineno != st.end_lineno or len(st.targets) != 1:
            continue
        models = [m for m in loop.site.modules if calls_name(st, m) and loop.site.modules[m] & held]
        if not models or any(calls_name(x, m) for x in body for m in models):
            continue  # no trained model's forward, or the loop runs it itself (a snapshot next to a fresh forward)
        found.append((key, st, models[0]))
    if len(found) != 1:
        return None
    key, st, model = found[0]
    after = [x for x in ast.walk(scope if scope is not None else tree) if isinstance(x, ast.stmt)]
    keep = any(x.lineno > (around.end_lineno or around.lineno) and key in names(x, ast.Load) for x in after)
    return replace(
        base,
        extra={
            **base.extra,
            "caller_forward": key,
            "caller_file": loop.site.filename,
            "caller_line": str(st.lineno),
            "caller_into": str(body[0].lineno),
            "caller_keep": "1" if keep else "",
            "caller_model": model,
        },
    )


def _caller_fixes(ctx: Context) -> list[Proposal]:
    """The forward moved into the caller's loop (NOTE [A forward run once before the caller's loop])."""
    key, filename = ctx.extra.get("caller_forward", ""), ctx.extra.get("caller_file", "")
    if not key or not filename:
        return []
    lines = source_of(filename).splitlines()
    line, into = int(ctx.extra["caller_line"]), int(ctx.extra["caller_into"])
    text = lines[line - 1].strip()
    target = lines[into - 1]
    indent = target[: len(target) - len(target.lstrip())]
    edits = [Edit(filename, into, into - 1, indent + text)]
    if not ctx.extra.get("caller_keep"):
        edits.append(Edit(filename, line, line, ""))
    model = ctx.extra.get("caller_model", "")
    return [
        Proposal(
            Fix(
                summary=T(
                    "compute {name} inside the loop that hands it in ({where}): {code} runs once before the loop, and "
                    "the first iteration's backward frees its graph",
                    name=key,
                    where=Location(filename, into).where,
                    code=text,
                ),
                trains=T(
                    "{loss} trains what it reaches, from a fresh forward of {model} at every iteration",
                    loss=ctx.l,
                    model=model,
                ),
                edits=tuple(sorted(edits, key=lambda e: e.start)),
                keeps_forward=False,
                # the caller's name for the model: the failing function may not see it (a helper's own step)
                claims=((ctx.loss, (model,)),) if ctx.loss else (),
            ),
            ctx.reach or (model,),
            True,
        )
    ]


# NOTE [A forward run once before the caller's loop]
# The loop that trains may be in a caller: ``x_hat = model(X)`` in ``main()``, then ``for it in range(n):
# al.step(closure, x_hat, X)``, and the helper's ``step()`` runs the backward and the optimizer's step. The name is
# the caller's, bound once before its loop from a forward of a model an optimizer steps, and the loop does not run
# that model itself (beside a fresh forward it would be a constant of the loop: a detach). The first iteration's
# backward frees the forward's graph and the second fails on it. The fix moves the statement into the loop, at
# the top of its body: a fresh forward at every iteration, from the weights as they are then.


# NOTE [A forward run once at module level]
# A script runs a model once at module level (the embedding of a few special
# tokens, a fixed prompt's features) and a training function, called once per
# iteration, reads the result as a global. Its graph holds parameters an
# optimizer steps: the first call's backward frees it, the second call's needs
# it again. The statement is moved to the top of the function (each call builds
# its own graph, from the weights as they are then); it stays at module level too
# when other code of the module (its statements, another function) reads the
# name. When no parameter below it is trained, a detach where it is made changes
# nothing (NOTE [A part no optimizer steps]) and this move is not offered. When
# the backward runs in a loop of the failing function, the global is read by a
# function of the file the loop calls (a residual's helper, a loss helper): the
# statement moves into that function, for the same reason.


# NOTE [A forward reused by later steps]
# A forward computed before a loop (the outer loop's batch features, before a GAN's inner generator steps) is
# reused by every iteration of it, and an optimizer in the loop steps weights its graph saved: the second
# iteration's backward meets them modified, or freed. The fix recomputes it where the loop first reads it,
# with the statements between that derive what the loop reads from it (std = log_std.exp(); dist = Normal(mu,
# std)). Only those: a statement that builds something else from the same forward (a critic's loss, an
# adversary's logits, before the inner loop) is not recomputed, because the loop does not read it, and running
# it again would draw its random numbers (dropout, a penalty's interpolation) a second time and change what
# the steps after it compute.
def stale_forward_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """A forward computed before the loop and reused by every iteration: its statement, to move inside (NOTE [A
    forward reused by later steps])."""
    site, saved = facts.site, p.saved_at
    if site is None or saved is None or facts.backward_line is None:
        return None
    # the line of the failing function that ran the forward (the model's call, when the tensor was saved inside it)
    if saved.filename == site.filename and site.holds(saved.lineno):
        loc: Location | None = saved
    else:
        bound = _bound_before_loop(graph, p, facts)
        loc = Location(site.filename, bound) if bound is not None else None
    if loc is None:
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
    stored = set().union(*(names(t, ast.Store) for t in st.targets))
    # what the loop reads may be built from it by statements between it and the loop (a distribution of a
    # transformed parameter: std = log_std.exp(); dist = Normal(mean, std)): those are recomputed too
    chain = [st.lineno]
    loop = loop_around(tree, facts.backward_line)
    for later in preceding(tree, loop.lineno if loop is not None else first):
        if later.lineno <= (st.end_lineno or st.lineno) or not isinstance(later, (ast.Assign, ast.AnnAssign)):
            continue
        if names(later, ast.Load) & stored and site.holds(later.lineno):
            chain.append(later.lineno)
            stored |= names(later, ast.Store)
    use = next((b for b in body if names(b, ast.Load) & stored), None)
    if use is None:
        return None
    # a loop's own header that reads it (``while start < len(codes):``) runs before any statement of its body: moved
    # into the body, the name would be read before it is bound
    for around in ast.walk(tree):
        if isinstance(around, (ast.For, ast.While)) and around.lineno <= facts.backward_line <= (
            around.end_lineno or 0
        ):
            if around.lineno <= st.lineno <= (around.end_lineno or 0):
                continue
            header = around.test if isinstance(around, ast.While) else around.iter
            if names(header, ast.Load) & stored:
                return None
    # only what the loop reads before it binds it again (NOTE [A forward reused by later steps])
    live: set[str] = set()
    bound_in_loop: set[str] = set()
    for b in body:
        live |= names(b, ast.Load) - bound_in_loop
        bound_in_loop |= names(b, ast.Store)
    statements = {x.lineno: x for x in preceding(tree, loop.lineno if loop is not None else first)}
    kept = feeding([statements[n] for n in chain if n in statements], live & stored)
    chain = [n for n in chain if n == st.lineno or n in kept]
    spans = [(x.lineno, x.end_lineno or x.lineno) for x in preceding(tree, loop.lineno if loop else first)]
    covered = [(a, b) for a, b in spans if a in chain]
    for s in graph.saved:
        at = s.saved_at
        if s.status != "freed" or at is None or at.filename != site.filename or not site.holds(at.lineno):
            continue
        if not (first <= at.lineno <= last or any(a <= at.lineno <= b for a, b in covered)):
            return None  # freed where the moved statements would not build it again: moving them does not help
    # nothing any optimizer steps lies below what it made (leaves that require grad, held by none): detached where
    # it is made, it keeps its values and no optimizer loses a gradient (NOTE [A reference the code detaches
    # elsewhere])
    held = stepped_params(facts)
    values = [facts.namespace.get(n) for n in names(st, ast.Store)]
    untrained = bool(values) and all(
        isinstance(v, torch.Tensor) and v.grad_fn is not None and not leaves_below(v.grad_fn)[0] & held for v in values
    )
    return replace(
        base,
        stale_line=st.lineno,
        stale_end=st.end_lineno or st.lineno,
        stale_before=use.lineno,
        recompute_lines=tuple(chain),
        extra={**base.extra, "untrained_below": "1"} if untrained else base.extra,
    )


def snapshot_context(base: Context, facts: Facts, call: BackwardCall | None) -> Context | None:
    """A tensor bound before the loop whose graph every iteration's loss reuses, next to a fresh forward.

    The pattern (PPO's old log-probs, a target computed once from the model): a
    tensor variable of the failing function, not assigned in the loop that runs
    the backward, built before the backward that freed its graph, reached by the
    loss; and the loss also reaches, without going through it, every parameter
    that tensor's graph reaches (the loop computes its own forward of the same
    weights). Recomputing it in the loop would make it equal to the fresh value;
    it is a constant of the loop: detach it before the loop. (Without a fresh
    forward in the loop, the stale forward is recomputed instead, ``stale_forward_context``.)
    """
    site, loss = facts.site, value_of(base.loss, facts.namespace) if base.loss else None
    if site is None or facts.backward_line is None or call is None or call.newest_node is None:
        return None
    roots = [loss] if isinstance(loss, torch.Tensor) else _parts(base.loss, facts.namespace)
    roots = [t for t in roots if t.grad_fn is not None]
    if not roots:
        return None
    tree = site.tree()
    loop = loop_around(tree, facts.backward_line) if tree is not None else None
    if loop is None or not site.holds(loop.lineno):
        return None
    assigned = set().union(*(names(st, ast.Store) for st in loop.body))
    if isinstance(loop, ast.For):
        assigned |= names(loop.target, ast.Store)
    read = set().union(*(names(st, ast.Load) for st in loop.body))
    found: list[str] = []
    for key, value in facts.namespace.items():
        if not isinstance(key, str) or key.startswith("_") or key in assigned or not isinstance(value, torch.Tensor):
            continue
        fn = value.grad_fn
        seq = sequence_of(fn) if fn is not None else None
        if fn is None or seq is None or seq > call.newest_node:
            continue
        under = leaves_below(fn)[0]
        rest: set[int] = set()
        met = False
        for root in roots:  # a loss written as an expression (pg + 0.5 * vf): the union of its parts
            below, hit = leaves_below(root.grad_fn, stop=fn)
            rest |= below
            met = met or hit
        if met and under and under <= rest and _same_forward_in(tree, loop, key):
            found.append(key)
    if not found:
        return None
    # every such constant the loop reads (PPO's advantages and returns, both from the critic's rollout forward): a
    # detach of one alone leaves the patched run failing on the next (NOTE [Every stale write], for freed graphs)
    found = [k for k in found if k in read] or found  # the names the loop reads, when it reads some
    also = [k for k in found[1:] if k in read]
    extra = {**base.extra, "snapshot_also": ",".join(also)} if also else base.extra
    return replace(base, snapshot=found[0], snapshot_line=loop.lineno, extra=extra)


def _parts(expr: str | None, namespace: Mapping[str, Any]) -> list[torch.Tensor]:
    """The tensors the names of the expression ``expr`` hold (``pg + 0.5 * vf``: pg and vf), read, not computed."""
    try:
        tree = ast.parse(expr or "", mode="eval")
    except SyntaxError:
        return []
    found = [value_of(n.id, namespace) for n in ast.walk(tree) if isinstance(n, ast.Name)]
    return [t for t in found if isinstance(t, torch.Tensor)]


def _same_forward_in(tree: ast.Module | None, loop: ast.For | ast.AsyncFor | ast.While, key: str) -> bool:
    """Whether the loop computes again what ``key`` was assigned (``ref = policy(states)`` beside the loop's own
    ``policy(states)``): then, recomputed in the loop, it would equal the fresh value, and it is the loop's constant.
    Assigned from a forward the loop does not run (``anchor = embed(torch.ones(1, 8))``), it is a stale forward to
    recompute. No assignment found in the file (a function's argument): the loop's constant."""
    if tree is None:
        return True
    values = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == key for t in n.targets)
        and not (loop.lineno <= n.lineno <= (loop.end_lineno or loop.lineno))
    ]
    if not values:
        return True
    computed = {ast.unparse(n) for n in ast.walk(loop) if isinstance(n, ast.Call)}
    if any(ast.unparse(v) in computed for v in values):
        return True
    # the same model run by the loop on minibatches of the same data (values = critic(states) before the loop,
    # critic(states[idx]) in it): a snapshot of the whole batch, the loop's constant (PPO's rollout values)
    in_loop = [n for n in ast.walk(loop) if isinstance(n, ast.Call) and n.args]
    for v in values:
        for call in (n for n in ast.walk(v) if isinstance(n, ast.Call) and n.args):
            wanted = [ast.unparse(a) for a in call.args]
            for m in in_loop:
                if ast.unparse(m.func) == ast.unparse(call.func) and len(m.args) == len(wanted):
                    parts = [ast.unparse(a.value) if isinstance(a, ast.Subscript) else None for a in m.args]
                    if any(p is not None for p in parts) and all(
                        p == w or ast.unparse(a) == w for p, a, w in zip(parts, m.args, wanted, strict=True)
                    ):
                        return True
    return False


def _constant_trains(ctx: Context, name: str | Text) -> Text:
    """The ``trains:`` line of a tensor made a constant of the loop (``_constant``, ``_detached_target``)."""
    return T(
        "{loss} trains what it reaches through each iteration's own forward; {name} takes no part in backward",
        loss=ctx.l,
        name=name,
    )


def _constant(ctx: Context) -> list[Proposal]:
    """Detach, before the loop, a tensor the loop reuses next to its own forward (``causes._snapshot_context``)."""
    name = ctx.snapshot
    if name is None or ctx.snapshot_line is None:
        return []
    every = [name, *(k for k in ctx.extra.get("snapshot_also", "").split(",") if k)]
    shown = join(every, T(" and "))
    fix = Fix(
        summary=T(
            "{name} is a constant of the loop (computed once, before it, from weights the loop's own forward also "
            "uses): detach it before the loop",
            name=name,
        )
        if len(every) == 1
        else T(
            "{names} are constants of the loop (computed once, before it, from weights the loop's own forward also "
            "uses): detach them before the loop",
            names=shown,
        ),
        trains=_constant_trains(ctx, shown),
        edits=all_edits(insert_lines(ctx, ctx.snapshot_line, "\n".join(f"{k} = {k}.detach()" for k in every))),
    )
    return [keeping(ctx, fix)]


def _global_fixes(ctx: Context) -> list[Proposal]:
    site, key = ctx.site, ctx.extra.get("global_forward", "")
    if site is None or not key:
        return []
    line, into = int(ctx.extra["global_line"]), int(ctx.extra["global_into"])
    text = site.text(line).strip()
    indent = indent_of(site, into)
    edits = [Edit(site.filename, into, into - 1, indent + text)]
    if not ctx.extra.get("global_keep"):
        edits.append(Edit(site.filename, line, line, ""))
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "compute {name} inside {function}(), where it is used: {code} runs once at module level, and "
                    "the first call's backward frees its graph",
                    name=key,
                    function=ctx.extra.get("function", ""),
                    code=text,
                ),
                trains=T("{loss} trains what it reaches, from a fresh forward at every call", loss=ctx.l),
                edits=tuple(sorted(edits, key=lambda e: e.start)),
                keeps_forward=False,
            ),
        )
    ]


def stale_fixes(ctx: Context) -> list[Proposal]:
    if ctx.extra.get("global_forward"):  # NOTE [A forward run once at module level]
        return _global_fixes(ctx)
    if ctx.extra.get("caller_forward"):  # NOTE [A forward run once before the caller's loop]
        return _caller_fixes(ctx)
    if ctx.extra.get("handed_forward"):  # NOTE [A value handed in, built once from what the loop trains]
        return handed_forward_fixes(ctx)
    if ctx.extra.get("frozen"):  # NOTE [A feature extractor left trainable]
        from .frozen_extractor import frozen_fixes

        return frozen_fixes(ctx)
    if ctx.built_once is not None:  # NOTE [A tensor built once in a constructor]
        from .built_once import built_once_fixes

        return built_once_fixes(ctx)
    if ctx.extra.get("pruned_model"):  # NOTE [A pruned weight read without its module's forward]
        from .pruned_weight import pruned_fixes

        return pruned_fixes(ctx)
    if ctx.snapshot is not None and ctx.kept_at is not None:
        return kept_constant_fixes(ctx)
    if ctx.snapshot is not None:
        return _constant(ctx)
    lines = ctx.recompute_lines or ((ctx.stale_line,) if ctx.stale_line is not None else ())
    text = statements_text(ctx, lines) if lines else None
    edit = insert_lines(ctx, ctx.stale_before, text) if text and ctx.stale_before is not None else None
    moved = _moved_out(ctx, lines) if edit is not None else ()
    what = ", ".join(t.split("=")[0].strip() for t in text.splitlines() if "=" in t) if text else T("the forward")
    target = _detached_target(ctx)  # NOTE [A reference the code detaches elsewhere]
    return [
        *([target[0]] if target is not None and target[1] else []),
        keeping(
            ctx,
            Fix(
                summary=T(
                    "move {what} into the loop, where it is used: each iteration then builds its own graph",
                    what=what,
                )
                if moved
                else T(
                    "recompute {what} inside the loop, where it is used: each iteration then builds its own graph",
                    what=what,
                ),
                trains=T("{loss} trains what it reaches, from a fresh forward at every iteration", loss=ctx.l),
                edits=tuple(sorted((*moved, *all_edits(edit)), key=lambda e: e.start)) if edit else (),
                # run again, statements that draw random numbers compute other values (new noise, new samples)
                keeps_forward=False if _redraws(ctx, lines) else None,
            ),
        ),
        *([target[0]] if target is not None and not target[1] else []),
    ]


# NOTE [A reference the code detaches elsewhere]
# A tensor computed once before the loop and read by every iteration has two readings: a
# forward to recompute at every iteration (each loss trains through it), or a reference the
# loop's losses compare against, a constant (a clean utterance's features beside each
# augmented view's; a target). Detaching it where it is made gives the second: the same
# values, and each backward no longer enters its graph. It is offered only when the loop runs
# its own forward of every model the tensor was computed with (the loss keeps training them
# through it; without one, detaching would stop the loss training them), or when nothing any
# optimizer steps lies below it (Monte Carlo paths from distribution parameters made to require
# grad that no optimizer holds). It comes first when
# the code itself treats the tensor as a constant on another path (``ref.detach()`` in a
# branch of the function it is passed to, or ``name.detach()`` in the loop), or when nothing
# trained lies below it and its statements draw random numbers (a recompute would give the loop
# other values); otherwise it is the alternative after the recompute.
def _detached_target(ctx: Context) -> tuple[Proposal, bool] | None:
    """Detach the stale tensor where it is made (NOTE [A reference the code detaches elsewhere]); with whether the
    code's own reading puts it first."""
    site, line, back = ctx.site, ctx.stale_line, ctx.backward_line
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or back is None or ctx.stale_end != line:
        return None
    st = statement_at(tree, line)
    loop = loop_around(tree, back)
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
        return None
    if loop is None or (len(ctx.recompute_lines) > 1 and not ctx.extra.get("untrained_below")):
        return None  # (what derives from it is detached with it: the first statement is where the graph starts)
    made = ctx.made_at
    if made is not None and made.filename == site.filename and made.lineno == line:
        return None  # the general candidate detaches it there, and says why (NOTE [A part no optimizer steps])
    name = st.targets[0].id
    edit = edit_at(ctx, Location(site.filename, line), detached_value(site.text(line).strip()))
    if edit is None:
        return None
    made_with = {m for m in site.modules if any(calls_into(ast.unparse(c.func), m) for c in _calls(st.value))}
    in_loop = {m for m in site.modules if any(calls_into(ast.unparse(c.func), m) for c in _calls(loop))}
    untrained = bool(ctx.extra.get("untrained_below"))
    if not untrained and (not made_with or not made_with <= in_loop):
        return None  # no forward of its own in the loop: detached, the loss would stop training those models
    # first when the code detaches it elsewhere, or when nothing trained lies below it and running it again would
    # draw other random numbers (the recompute would change the values the loop reads)
    first = _detached_somewhere(tree, loop, name) or (untrained and _redraws(ctx, ctx.recompute_lines or (line,)))
    fix = Fix(
        keeps_forward=True,
        intent=T("if {name} is a reference the loop compares against, not a forward to train through", name=name),
        summary=T(
            "detach {name} where it is made: a constant of the loop, computed once; each backward of {loss} then "
            "stays out of its graph",
            name=name,
            loss=ctx.l,
        ),
        trains=_constant_trains(ctx, name),
        edits=all_edits(edit),
        claims=claim(ctx, ctx.reach),
    )
    return Proposal(fix, ctx.reach, False), first


def _redraws(ctx: Context, lines: tuple[int, ...]) -> bool:
    """The statements at ``lines`` draw random numbers (themselves or in a function of the file they call)."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    if tree is None:
        return False
    return draws_random(tree, [st for line in lines if (st := statement_at(tree, line)) is not None])


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _detached_somewhere(tree: ast.Module, loop: ast.stmt, name: str) -> bool:
    """The loop detaches ``name`` itself (``name.detach()``), or passes it to a function of the file that detaches
    the parameter it binds (on some path)."""
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(loop):
        if _detaches(node, {name}):
            return True
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions):
            continue
        params = [a.arg for a in functions[node.func.id].args.args]
        bound = [params[i] for i, arg in enumerate(node.args) if i < len(params) and _is_name(arg, name)]
        bound += [k.arg for k in node.keywords if k.arg is not None and _is_name(k.value, name)]
        if any(_detaches(n, set(bound)) for n in ast.walk(functions[node.func.id])):
            return True
    return False


def _detaches(node: ast.AST, names: set[str]) -> bool:
    """``node`` is ``name.detach()`` for one of ``names``."""
    taken = detached(node) if isinstance(node, ast.Call) else None
    return isinstance(taken, ast.Name) and taken.id in names


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _moved_out(ctx: Context, lines: tuple[int, ...]) -> tuple[Edit, ...]:
    """The stale statements deleted before the loop, when nothing else reads what they bind before the loop:
    moved, not copied, so the first iteration does not run the forward twice (nor draw its random numbers twice)."""
    site, back = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    loop = loop_around(tree, back) if tree is not None and back is not None else None
    if site is None or tree is None or loop is None:
        return ()
    chain = [st for st in preceding(tree, loop.lineno) if st.lineno in lines]
    if len(chain) != len(lines) or any(not site.holds(st.lineno) for st in chain):
        return ()
    stored = set().union(*(names(t, ast.Store) for st in chain for t in ast.walk(st) if isinstance(t, ast.expr)))
    between = [st for st in preceding(tree, loop.lineno) if st.lineno > min(lines) and st.lineno not in lines]
    if any(names(st, ast.Load) & stored for st in between):
        return ()
    return tuple(Edit(site.filename, st.lineno, st.end_lineno or st.lineno, "") for st in chain)
