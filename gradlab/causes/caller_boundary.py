"""A value the failing loss reads, formed in the calling loop from a model another loss trains there (NOTE [A value
formed in the caller's loop from a model stepped there]): detached where that loop forms it."""

from __future__ import annotations

import ast
from dataclasses import replace

from ..context import Context
from ..evidence import Facts, receiver
from ..fixes import Fix, Proposal, edit_at
from ..i18n import T, join
from ..location import Location
from ..loop import Site
from ..recorder import BackwardCall
from ..rewrite import detached_value
from ..source import block_of, calls_method, loop_around, names, statement_at

__all__ = ["caller_boundary", "caller_boundary_fixes"]


def caller_boundary(base: Context, facts: Facts, call: BackwardCall | None) -> Context | None:
    """The one-line statement of the caller's loop that forms, after an earlier backward and its step in that loop,
    a tensor from values whose graph reaches only parameters that step's optimizer holds and none the failing
    loss's optimizers hold (``advantage = q - v`` after the critics' step, read by the policy's loss in a function
    the loop calls); ``ctx.extra["caller_detach"]`` its place, the line detached, and the claims."""
    loop, site = facts.caller_loop, facts.site
    at = call.location if call is not None else None
    if loop is None or site is None or at is None or not site.optimizers or at.filename != loop.site.filename:
        return None
    outer = loop.site
    tree = outer.tree()
    around = loop_around(tree, loop.line) if tree is not None else None
    if tree is None or around is None or not (around.lineno <= at.lineno <= (around.end_lineno or around.lineno)):
        return None
    freeing = statement_at(tree, at.lineno)
    stepped = _step_after(around, freeing, outer) if freeing is not None else None
    failing = frozenset().union(*site.optimizers.values())
    if stepped is None or stepped & failing:
        return None
    found = []
    for st in ast.walk(around):
        if not (
            isinstance(st, ast.Assign)
            and st.lineno == st.end_lineno
            and st.lineno > at.lineno
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and loop.graphs.get(st.targets[0].id) == "tensor"
        ):
            continue
        read = names(st.value, ast.Load) & set(loop.leaves)
        leaves = frozenset().union(*(loop.leaves[n] for n in read)) if read else frozenset()
        if leaves and leaves <= stepped and not leaves & failing:
            found.append(st)
    if len(found) != 1:
        return None
    st = found[0]
    line = Location(outer.filename, st.lineno)
    new = detached_value(line.code.strip())
    if new is None:
        return None
    mine = tuple(sorted(m for m, ids in outer.modules.items() if ids & failing))
    theirs = tuple(sorted(m for m, ids in outer.modules.items() if ids & stepped))
    earlier = receiver(at.code, "backward") or ""
    extra = {
        **base.extra,
        "caller_detach": f"{st.lineno}:{outer.filename}",
        "caller_detach_new": new,
        "caller_mine": ",".join(mine),
        "caller_theirs": ",".join(theirs),
        "caller_earlier": earlier,
    }
    return replace(base, extra=extra)


def _step_after(loop: ast.stmt, backward: ast.stmt, site: Site) -> frozenset[int] | None:
    """The parameters of the optimizer whose ``step()`` follows ``backward`` in its block, by id."""
    block = block_of(loop, backward)
    if block is not None:
        for st in block[block.index(backward) + 1 :]:
            if calls_method(st, ("step",)):
                name = next(
                    (
                        ast.unparse(n.func.value)
                        for n in ast.walk(st)
                        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
                    ),
                    None,
                )
                return site.optimizers.get(name) if name is not None else None
    return None


def caller_boundary_fixes(ctx: Context) -> list[Proposal]:
    """The detach where the caller's loop forms the value (:func:`caller_boundary`)."""
    where = ctx.extra.get("caller_detach")
    if not where:
        return []
    line, filename = where.split(":", 1)
    at = Location(filename, int(line))
    mine = tuple(m for m in ctx.extra.get("caller_mine", "").split(",") if m)
    theirs = tuple(m for m in ctx.extra.get("caller_theirs", "").split(",") if m)
    earlier = ctx.extra.get("caller_earlier") or T("the earlier loss")
    claims = tuple(c for c in ((ctx.loss or "", mine), (ctx.extra.get("caller_earlier", ""), theirs)) if c[0] and c[1])
    fix = Fix(
        summary=T(
            "detach the value the calling loop forms from the output of {theirs} after {earlier}'s step (at {where}): "
            "{loss} reads it as a constant",
            theirs=join(list(theirs), T(" and ")) if theirs else T("the stepped model"),
            earlier=earlier,
            where=at.where,
            loss=ctx.l,
        ),
        trains=T(
            "{loss} trains {mine}, which its optimizers step; the training of {theirs} comes from {earlier} only, as "
            "the loop would do if it ran: {loss}'s gradient for {theirs} would arrive after {earlier}'s step and be "
            "cleared before the next one",
            loss=ctx.l,
            mine=join(list(mine), T(" and ")) if mine else T("what its optimizers hold"),
            theirs=join(list(theirs), T(" and ")) if theirs else T("the stepped model"),
            earlier=earlier,
        ),
        edits=tuple(e for e in (edit_at(ctx, at, ctx.extra["caller_detach_new"]),) if e is not None),
        claims=claims,
    )
    return [Proposal(replace(fix, keeps_forward=True), mine, True)] if fix.edits else []


# NOTE [A value formed in the caller's loop from a model stepped there]
# An actor-critic whose policy update is a function the episode loop calls: inside the loop, each step's critics
# are trained on their own loss, backwarded and stepped, and right after, the loop forms the advantage from the
# critics' outputs (advantage = q - v) and keeps it for the policy's surrogate. The policy's loss, backwarded in
# the function the loop calls, goes into the critics' graph, which their backward freed. The failing function holds
# only the policy's optimizer; the caller's loop (its frame read while the diagnosis is made, then dropped) shows
# the rest: the statement after that backward and step that forms a tensor from values whose graph reaches only
# the parameters that step's optimizer holds, and none that the failing loss's optimizers hold. Detaching it there
# is the loop's own training: the policy's gradient for the critics would land after their step and be cleared by
# their next zero_grad, so the critics learn from their own loss only, and the policy from its loss. Only for one
# such statement, a name holding a tensor now.
