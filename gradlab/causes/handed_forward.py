"""Cause ``stale_forward``, handed in: the caller builds an object from a trained parameter once (a likelihood
``Normal(0, exp(log_noise))``, a prior, a scaled tensor) and hands it to the function whose loop trains; every
iteration's loss reads it, so the second backward meets the graph the first one freed. The fix rebuilds it inside
the loop from the function's own names for what the caller built it from (NOTE [A value handed in, built once from
what the loop trains])."""

from __future__ import annotations

import ast
import builtins
import linecache
import re
from dataclasses import replace

import torch

from ..context import Context
from ..evidence import Facts, Problem, holds_node, leaves_below, stepped_params
from ..fixes import Fix, Proposal, claim, insert_lines
from ..graph import Graph, GraphNode
from ..i18n import T
from ..location import Location
from ..source import function_of, loop_around, loop_body_of, names, parse, statement_at

__all__ = ["handed_forward_context", "handed_forward_fixes", "held_tensors"]


# NOTE [A value handed in, built once from what the loop trains]
# main() builds noise_dist = build_likelihood(log_noise) and calls train(model, log_noise, noise_dist, data): the
# likelihood's scale exp(log_noise) has a graph down to log_noise, which train's optimizer steps. Every step of
# train's loop reads noise_dist.log_prob(residual), so the first backward frees exp's saved result and the second
# fails; with retain_graph the scale would stay the initial one while log_noise moves. The value is meant to follow
# the parameter: it is rebuilt at the top of the loop that backwards, by the caller's own statement, each name it
# reads written as the function's name for it (the argument the caller passes it as) or left as a global of the
# file. Offered when the function's argument holds the freed node, is never bound in the function, its part of the
# graph reaches a parameter an optimizer steps, and the caller binds it by one one-line statement before the call
# whose names the function can see. The first forward computes the same values; later ones read the rebuilt value.
def handed_forward_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """The argument of the failing function built once by the caller from a parameter the loop trains (NOTE [A value
    handed in, built once from what the loop trains]): the statement that rebuilds it, and where it goes."""
    site, line, caller = facts.site, facts.backward_line, facts.caller
    tree = site.tree() if site is not None else None
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or tree is None or line is None or caller is None or node is None or node.seq is None:
        return None
    fn, body = function_of(tree, line), loop_body_of(tree, line)
    if fn is None or not body or loop_around(tree, line) is None or caller[0] != site.filename:
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    bound = set().union(*(names(st, ast.Store) for st in ast.walk(fn) if isinstance(st, ast.stmt)))
    held = stepped_params(facts)
    handed = [
        a
        for a in params
        if a not in bound and any(_holds_trained(t, node, held) for t in held_tensors(facts.namespace.get(a)))
    ]
    ctree = parse("".join(linecache.getlines(caller[0])))
    call_st = statement_at(ctree, caller[1]) if ctree is not None else None
    calls = [
        n
        for n in (ast.walk(call_st) if call_st is not None else ())
        if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == fn.name
    ]
    if len(handed) != 1 or len(calls) != 1 or ctree is None:
        return None
    call = calls[0]
    offset = 1 if params and params[0] == "self" and isinstance(call.func, ast.Attribute) else 0
    passed: dict[str, str] = {}  # the caller's name -> the function's parameter it is passed as
    for k, arg in enumerate(call.args):
        if isinstance(arg, ast.Name) and k + offset < len(params):
            passed.setdefault(arg.id, params[k + offset])
    for kw in call.keywords:
        if kw.arg is not None and isinstance(kw.value, ast.Name):
            passed.setdefault(kw.value.id, kw.arg)
    given = next((c for c, a in passed.items() if a == handed[0]), None)
    scope = function_of(ctree, caller[1])
    if given is None or scope is None:
        return None
    binding = [
        st
        for st in ast.walk(scope)
        if isinstance(st, ast.Assign) and any(given in names(t, ast.Store) for t in st.targets)
    ]
    if len(binding) != 1:
        return None
    st = binding[0]
    if (
        st.lineno >= caller[1]
        or st.lineno != st.end_lineno
        or len(st.targets) != 1
        or not isinstance(st.targets[0], ast.Name)
    ):
        return None
    module_level = (
        set().union(*(names(x, ast.Store) for x in tree.body if not isinstance(x, (ast.FunctionDef, ast.ClassDef))))
        | {x.name for x in tree.body if isinstance(x, (ast.FunctionDef, ast.ClassDef))}
        | {
            a.asname or a.name.split(".")[0]
            for x in tree.body
            if isinstance(x, (ast.Import, ast.ImportFrom))
            for a in x.names
        }
    )
    value = st.value
    renamed: dict[str, str] = {}
    for n in ast.walk(value):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if n.id in passed and n.id not in module_level:
                renamed[n.id] = passed[n.id]
            elif n.id not in module_level and not hasattr(builtins, n.id):
                return None  # a name of the caller the function does not see

    if any(new != old and new in renamed and renamed[new] != new for old, new in renamed.items()):
        return None  # names swapped between the two frames: not written by substitution
    written = ast.get_source_segment("".join(linecache.getlines(caller[0])), value) or ast.unparse(value)
    for old, new in renamed.items():  # the caller's names written as the function's, the rest as in the source
        written = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", new, written) if old != new else written
    text = f"{handed[0]} = {written}"
    from_names = sorted(
        {renamed.get(n.id, n.id) for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in renamed}
    )
    return replace(
        base,
        extra={
            **base.extra,
            "handed_forward": handed[0],
            "handed_text": text,
            "handed_into": str(body[0].lineno),
            "handed_from": ", ".join(from_names),
            "handed_at": Location(caller[0], st.lineno).where,
        },
    )


def held_tensors(value: object) -> list[torch.Tensor]:
    """``value`` if it is a tensor, else the tensors an object keeps on its attributes (a distribution's scale)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if value is None or isinstance(value, (torch.nn.Module, type)) or not hasattr(value, "__dict__"):
        return []
    return [v for v in vars(value).values() if isinstance(v, torch.Tensor)]


def _holds_trained(t: torch.Tensor, node: GraphNode, held: frozenset[int]) -> bool:
    """``t``'s graph holds the freed ``node`` and reaches a parameter an optimizer steps."""
    return t.grad_fn is not None and holds_node(t, node) and bool(leaves_below(t.grad_fn)[0] & held)


def handed_forward_fixes(ctx: Context) -> list[Proposal]:
    """Rebuild the handed-in value at the top of the loop (NOTE [A value handed in, built once from what the loop
    trains])."""
    name, text = ctx.extra.get("handed_forward", ""), ctx.extra.get("handed_text", "")
    into = ctx.extra.get("handed_into", "")
    edit = insert_lines(ctx, int(into), text) if name and text and into else None
    if edit is None:
        return []
    fix = Fix(
        summary=T(
            "rebuild {name} inside the loop ({code}): the caller builds it once ({where}) from {params}, which the "
            "loop's optimizer steps, and the first backward frees its graph",
            name=name,
            code=text,
            where=ctx.extra.get("handed_at", ""),
            params=ctx.extra.get("handed_from", "") or T("what the loop trains"),
        ),
        trains=T(
            "{loss} trains what it reaches, {params} included, with {name} rebuilt from the current values at every "
            "iteration",
            loss=ctx.l,
            params=ctx.extra.get("handed_from", "") or T("what the loop trains"),
            name=name,
        ),
        edits=(edit,),
        claims=claim(ctx, ctx.reach),
        keeps_forward=False,
    )
    return [Proposal(fix, ctx.reach, True)]
