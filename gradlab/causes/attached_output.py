"""Cause ``attached_output``: a loss the loop does not train a model with (a gradient penalty, a discriminator's
loss) is built on the model's undetached output, and its backward freed the graph a later loss needs; its fixes."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, Topology, sequence_of, var_named
from ..fixes import Fix, Proposal, all_edits, claim, replace_line
from ..graph import walk
from ..i18n import T
from ..location import Location
from ..loop import site_intent
from ..rewrite import detach_reads
from ..source import feeding, loop_body_of, names, statement_span, undetached_reads
from .chained import between_fixes, chained_fixes


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


def attached_output_context(base: Context, topo: Topology, facts: Facts, node_id: int) -> Context | None:
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
    entry = var_named(
        facts.namespace,
        lambda t: (
            t.grad_fn is not None and sequence_of(t.grad_fn) == entry_node.seq and t.grad_fn.name() == entry_node.name
        ),
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
        if not any(sequence_of(fn) == node.seq and fn.name() == node.name for fn in walk([value.grad_fn])):
            continue  # this backward did not go through the freed node
        own = site_intent(site, body[i].lineno)
        if not own.known or model in own.trained or _reaches_params(value.grad_fn, params, entry_fn):
            return None
        feeds_earlier = feeding(body[:i], {earlier})
        feeds_failing = feeding([st for j, st in enumerate(body[:here]) if j != i], names(body[here], ast.Load))
        lines = sorted(
            st.lineno
            for st in body[:i]
            if st.lineno in feeds_earlier and entry not in names(st, ast.Store) and undetached_reads(st, entry)
        )
        if not lines or set(lines) & feeds_failing:
            return None
        if any(statement_span(tree, n) != (n, n) or not site.holds(n) for n in lines):
            return None
        return replace(base, earlier=earlier, earlier_line=body[i].lineno, entry=entry, detach_lines=tuple(lines))
    return None


def attached_fixes(ctx: Context) -> list[Proposal]:
    """Detach the model's output where the loss that does not train it uses it; the freeing fixes after."""
    site = ctx.site
    edits: tuple[Edit, ...] = ()
    if site is not None and ctx.entry and ctx.detach_lines:
        edits = all_edits(
            *(replace_line(ctx, n, detach_reads(site.text(n).strip(), ctx.entry)) for n in ctx.detach_lines)
        )
    where = ", ".join(f"{Location(site.filename, n).where}" for n in ctx.detach_lines) if site is not None else ""
    first = Proposal(
        Fix(
            summary=T(
                "detach {entry} where {earlier} is computed from it (at {where}): your loop does not train {model} "
                "with {earlier}, and its backward through {model} freed the graph {loss} needs",
                entry=ctx.entry or T("the model's output"),
                earlier=ctx.e,
                where=where,
                model=ctx.m,
                loss=ctx.l,
            ),
            trains=T(
                "{loss} trains {model}, as your loop's optimizers ask; {earlier} no longer sends gradient into "
                "{model}, which your loop cleared before stepping {model} anyway",
                loss=ctx.l,
                model=ctx.m,
                earlier=ctx.e,
            ),
            edits=edits,
            claims=claim(ctx, ctx.reach),
        ),
        ctx.reach,
        False,
    )
    return [first, *(between_fixes(ctx, True) if ctx.judge else chained_fixes(ctx, True))]
