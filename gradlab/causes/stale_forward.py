"""Cause ``stale_forward``: a forward computed once, before the loop, is reused by every iteration (or a tensor of
the loop's own forward kept from before it); its fixes."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from ..context import Context
from ..evidence import Facts, Problem, leaves_below, sequence_of
from ..fixes import Fix, Proposal, all_edits, insert_lines, keeping, statements_text
from ..i18n import T
from ..source import loop_around, loop_body_of, names, preceding, statement_at

if TYPE_CHECKING:
    from ..recorder import BackwardCall


def stale_forward_context(base: Context, p: Problem, facts: Facts) -> Context | None:
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
    return replace(
        base,
        stale_line=st.lineno,
        stale_end=st.end_lineno or st.lineno,
        stale_before=use.lineno,
        recompute_lines=tuple(chain),
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
    site, loss = facts.site, facts.namespace.get(base.loss) if base.loss else None
    if site is None or facts.backward_line is None or call is None or call.newest_node is None:
        return None
    if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
        return None
    tree = site.tree()
    loop = loop_around(tree, facts.backward_line) if tree is not None else None
    if loop is None or not site.holds(loop.lineno):
        return None
    assigned = set().union(*(names(st, ast.Store) for st in loop.body))
    if isinstance(loop, ast.For):
        assigned |= names(loop.target, ast.Store)
    for key, value in facts.namespace.items():
        if not isinstance(key, str) or key.startswith("_") or key in assigned or not isinstance(value, torch.Tensor):
            continue
        fn = value.grad_fn
        seq = sequence_of(fn) if fn is not None else None
        if fn is None or seq is None or seq > call.newest_node:
            continue
        under = leaves_below(fn)[0]
        rest, met = leaves_below(loss.grad_fn, stop=fn)
        if met and under and under <= rest:
            return replace(base, snapshot=key, snapshot_line=loop.lineno)
    return None


def _constant(ctx: Context) -> list[Proposal]:
    """Detach, before the loop, a tensor the loop reuses next to its own forward (``causes._snapshot_context``)."""
    name = ctx.snapshot
    if name is None or ctx.snapshot_line is None:
        return []
    fix = Fix(
        summary=T(
            "{name} is a constant of the loop (computed once, before it, from weights the loop's own forward also "
            "uses): detach it before the loop",
            name=name,
        ),
        trains=T(
            "{loss} trains what it reaches through each iteration's own forward; {name} takes no part in backward",
            loss=ctx.l,
            name=name,
        ),
        edits=all_edits(insert_lines(ctx, ctx.snapshot_line, f"{name} = {name}.detach()")),
    )
    return [keeping(ctx, fix)]


def stale_fixes(ctx: Context) -> list[Proposal]:
    if ctx.snapshot is not None:
        return _constant(ctx)
    lines = ctx.recompute_lines or ((ctx.stale_line,) if ctx.stale_line is not None else ())
    text = statements_text(ctx, lines) if lines else None
    edit = insert_lines(ctx, ctx.stale_before, text) if text and ctx.stale_before is not None else None
    what = ", ".join(t.split("=")[0].strip() for t in text.splitlines() if "=" in t) if text else T("the forward")
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "recompute {what} inside the loop, where it is used: each iteration then builds its own graph",
                    what=what,
                ),
                trains=T("{loss} trains what it reaches, from a fresh forward at every iteration", loss=ctx.l),
                edits=all_edits(edit),
            ),
        ),
    ]
