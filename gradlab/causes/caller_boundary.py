"""A value the failing loss reads, formed in the calling loop from a model another loss trains there (NOTE [A value
formed in the caller's loop from a model stepped there]): detached where that loop forms it."""

from __future__ import annotations

import ast
from dataclasses import replace

from ..context import Context
from ..evidence import Facts, receiver
from ..fixes import Fix, Proposal, backward_with, edit_at
from ..i18n import T, join
from ..location import Location
from ..loop import Site
from ..recorder import BackwardCall
from ..rewrite import detached_value
from ..source import block_of, calls_method, loop_around, names, statement_at

__all__ = ["caller_boundary", "caller_boundary_fixes", "handed_to_several", "several_calls_fixes"]


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


# NOTE [A value the caller's loop hands to several updates]
# Two agents share an encoder: the loop computes its output once (ring_code = encoder(state)) and hands it to each
# agent's update method, which backwards the agent's own loss and steps the agent's optimizer; the encoder's
# optimizer steps after both calls. The second call's backward goes through the encoder's graph, which the first
# call's backward freed. The loop asks for the encoder to learn from both losses (its step follows both backward
# calls, so their gradients add up in its .grad) and each agent from its own loss: keeping the graph at the update's
# backward (retain_graph=True) gives exactly that, as the sum of the losses backwarded once would. Offered first
# when the freeing backward and the failing one are the same line of the function, run by two calls of the
# caller's loop that pass it the same tensor with a graph, and no step between them writes a parameter below that
# tensor (then the second backward would read weights the step rewrote). The graph is kept until the last call's
# backward frees it with the value. The method's frame calls each agent's model self.policy; the fix's claim names
# them as the caller does (east.policy and west.policy), each call's own, when the calls are on different objects.
def handed_to_several(base: Context, facts: Facts, call: BackwardCall | None) -> Context | None:
    """The tensor with a graph that the caller's loop passes to two calls of the failing function, whose backward
    line freed its graph at the first call (NOTE [A value the caller's loop hands to several updates]);
    ``ctx.extra["handed"]`` its name, and the caller's models below it."""
    loop, site, failing, tracker = facts.caller_loop, facts.site, facts.failing, facts.tracker
    at = call.location if call is not None else None
    now = failing.location if failing is not None else None
    if loop is None or site is None or at is None or now is None or tracker is None or call is None:
        return None
    if (at.filename, at.lineno) != (now.filename, now.lineno) or not at.callers or not now.callers:
        return None
    first, second = at.callers[0], now.callers[0]
    outer = loop.site
    tree = outer.tree()
    if tree is None or first.filename != outer.filename or second.filename != outer.filename or first == second:
        return None
    around = loop_around(tree, second.lineno)
    if around is None or not around.lineno < first.lineno < second.lineno <= (around.end_lineno or around.lineno):
        return None
    passed = [statement_at(tree, line) for line in (first.lineno, second.lineno)]
    if any(st is None for st in passed):
        return None
    given = [
        {a.id for c in ast.walk(st) if isinstance(c, ast.Call) for a in c.args if isinstance(a, ast.Name)}
        for st in passed
        if st is not None
    ]
    shared = sorted(n for n in given[0] & given[1] if loop.graphs.get(n) == "tensor" and loop.leaves.get(n))
    if len(shared) != 1:
        return None
    name = shared[0]
    below = loop.leaves[name]
    end = failing.index if failing is not None else None
    for step in tracker.optimizer_calls:
        if (
            step.kind == "step"
            and call.index < step.after
            and (end is None or step.after <= end)
            and step.params & below
        ):
            return None  # a step between rewrote a weight below the value: the second backward would read it stale
    models = tuple(sorted(m for m, ids in outer.modules.items() if ids & below))
    extra = {**base.extra, "handed": name, "handed_models": ",".join(models)}
    # each call's own models, by the caller's names (NOTE [A value the caller's loop hands to several updates])
    receivers = [
        ast.unparse(c.func.value)
        for st in passed
        if st is not None
        for c in ast.walk(st)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and any(isinstance(a, ast.Name) and a.id == name for a in c.args)
    ]
    own = [m for m in base.reach if m not in models]
    if len(set(receivers)) == len(passed) and own and all(m.startswith("self.") for m in own):
        mapped = [f"{r}.{m[len('self.') :]}" for r in receivers for m in own]
        if all(m in outer.modules for m in mapped):
            extra["handed_own"] = ",".join(sorted(mapped))
    return replace(base, extra=extra)


def several_calls_fixes(ctx: Context) -> list[Proposal]:
    """retain_graph=True at the failing function's backward (:func:`handed_to_several`)."""
    name = ctx.extra.get("handed")
    if not name or ctx.backward_line is None:
        return []
    edit = backward_with(ctx, ctx.backward_line, "retain_graph=True")
    if edit is None:
        return []
    below = tuple(m for m in ctx.extra.get("handed_models", "").split(",") if m)
    mine = tuple(sorted(set(ctx.reach) - set(below)))
    each = tuple(m for m in ctx.extra.get("handed_own", "").split(",") if m)  # every call's own, when named
    reach = tuple(sorted({*(each or mine), *below}))
    fix = Fix(
        summary=T(
            "keep the graph at this backward (retain_graph=True): the calling loop hands {name} to each call, and "
            "each call's loss goes back through what made it",
            name=name,
        ),
        trains=T(
            "each call's {loss} trains {mine} and, through {name}, {below}: their gradients add up before the step "
            "that follows the calls, as the sum of the losses would; the graph of {name} stays until the last call",
            loss=ctx.l,
            mine=join(list(mine), T(" and ")) if mine else T("what its optimizers hold"),
            name=name,
            below=join(list(below), T(" and ")) if below else T("what made it"),
        ),
        edits=(edit,),
        claims=((ctx.loss or "", reach),) if ctx.loss else (),
    )
    return [Proposal(replace(fix, keeps_forward=True), None, True)]
