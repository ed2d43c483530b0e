"""Cause ``shared_graph_freed``, read from the earlier loss: the backward that freed the part reached, through a
tensor it read, a model no optimizer steps on that loss; a detach where that loss reads the tensor keeps the part
for the loss that does train it (NOTE [An earlier loss that reaches a model it does not train])."""

from __future__ import annotations

import ast
import linecache
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, calls_into, holds_node, leaves_below, receiver, stepped_ids, stepped_params
from ..fixes import Fix, Proposal
from ..graph import Graph
from ..i18n import T, join
from ..location import Location
from ..recorder import BackwardCall
from ..source import feeding, function_of, parse, preceding

__all__ = ["earlier_reach_context", "earlier_reach_fixes"]


# NOTE [An earlier loss that reaches a model it does not train]
# Two phases of a step share a tensor kept between them (a pacer's plan handed to a synchrony model's fit, then to
# the pacer's own planning loss): the first phase's loss reads it undetached, so its backward goes into the pacer and
# frees that part of the graph; its optimizer steps only the synchrony model. The second phase's loss then finds the
# pacer's part freed. The first loss's gradient into the pacer was never used (the pacer's optimizer clears it
# before its own loss's backward), so detaching the tensor where the first loss reads it, in the call of the model
# that loss trains, changes no update and leaves the part intact for the loss that trains it. Offered when the
# freeing backward ran in the user's code, an optimizer stepped between the two backward calls, the models below
# the freed node are none of those it stepped, and the freeing function passes a name to a call of a model it
# stepped whose value in the failing frame (by the same name) holds the freed node.
def earlier_reach_context(
    ctx: Context, facts: Facts, graph: Graph, node_id: int | None, call: BackwardCall | None
) -> Context | None:
    """Where the earlier loss reads the shared tensor into the model it trains (NOTE [An earlier loss that reaches a
    model it does not train]); None when the code does not have that shape."""
    node = next((n for n in graph.nodes if n.id == node_id), None)
    at = call.location if call is not None else None
    site, tracker = facts.site, facts.tracker
    if node is None or at is None or site is None or tracker is None or call is None or not ctx.stepped_between:
        return None
    stepped = stepped_ids(tracker, call, facts.failing)  # what the step between the two backward calls holds
    held = stepped_params(facts)
    earlier = receiver(at.code or "", "backward")
    tree = parse("".join(linecache.getlines(at.filename)))
    function = function_of(tree, at.lineno) if tree is not None and earlier else None
    if tree is None or function is None or earlier is None:
        return None
    before = [st for st in preceding(tree, at.lineno) if st.lineno > function.lineno]
    lines = feeding(before, {earlier})
    found: list[tuple[int, int, int, str, str]] = []
    for st in before:
        if st.lineno not in lines or st.lineno != (st.end_lineno or st.lineno):
            continue
        for c in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
            model = next((m for m in ctx.stepped_between if calls_into(ast.unparse(c.func), m)), None)
            if model is None:
                continue
            for arg in c.args:
                value = facts.namespace.get(arg.id) if isinstance(arg, ast.Name) else None
                if not isinstance(arg, ast.Name) or not holds_node(value, node):
                    continue
                leaves = leaves_below(value.grad_fn)[0]  # type: ignore[union-attr]
                if leaves and leaves <= held and not leaves & stepped:  # trained, but not by the step between
                    found.append((st.lineno, arg.col_offset, arg.end_col_offset or arg.col_offset, arg.id, model))
    if len(found) != 1:
        return None
    line, start, end, name, model = found[0]
    below = leaves_below(facts.namespace[name].grad_fn)[0]
    freed = [m for m, ids in site.modules.items() if ids & below]  # the frame's names for them, when it has any
    return replace(
        ctx,
        extra={
            **ctx.extra,
            "earlier_reach": f"{line}:{start}:{end}:{name}",
            "earlier_file": at.filename,
            "earlier_loss": earlier,
            "earlier_model": model,
            "earlier_freed": ",".join(freed),
        },
    )


def earlier_reach_fixes(ctx: Context) -> list[Proposal]:
    """Detach the shared tensor where the earlier loss reads it into the model it trains."""
    found, filename = ctx.extra.get("earlier_reach", ""), ctx.extra.get("earlier_file", "")
    if not found or not filename:
        return []
    line_s, start_s, end_s, name = found.split(":", 3)
    line, start, end = int(line_s), int(start_s), int(end_s)
    text = linecache.getline(filename, line).rstrip("\n")
    if text[start:end] != name:
        return []
    earlier, model = ctx.extra.get("earlier_loss", ""), ctx.extra.get("earlier_model", "")
    names = [m for m in ctx.extra.get("earlier_freed", "").split(",") if m]
    freed = join(names, T(" and ")) if names else T("the parameters {name} is computed from", name=name)
    fix = Fix(
        summary=T(
            "detach {name} where {earlier} reads it into {model} ({where}): {earlier}'s backward went on into "
            "{freed}, which no optimizer steps on {earlier}, and freed the part {loss} needs",
            name=name,
            earlier=earlier,
            model=model,
            where=Location(filename, line).where,
            freed=freed,
            loss=ctx.l,
        ),
        trains=T(
            "{earlier} trains {model} as before, and {loss} trains what it trained; the gradient {earlier} sent into "
            "{freed} is no longer computed (no optimizer used it)",
            earlier=earlier,
            model=model,
            loss=ctx.l,
            freed=freed,
        ),
        edits=(Edit(filename, line, line, f"{text[:start]}{name}.detach(){text[end:]}"),),
        # the failing loss's claim only when the frame names what it reaches (a plan handed in names no model)
        claims=(*(((ctx.loss, tuple(ctx.reach)),) if ctx.loss and ctx.reach else ()), (earlier, (model,))),
        keeps_forward=True,
    )
    return [Proposal(fix, ctx.reach, True)]
