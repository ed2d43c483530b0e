"""State reset only when the optimizer steps, read by every micro-batch in between: the reset moved to every
backward.

NOTE [A reset only at the step]
Gradient accumulation runs several forwards and backwards per optimizer step, and the
loop resets the state some helper keeps (an attention bank that a reference network
writes and the main network reads, a memory, a cache) in the same ``if`` that steps:
``if (i + 1) % accum == 0: opt.step(); opt.zero_grad(); bank.clear()``. The second
micro-batch then reads what the first one left, whose graph the first backward freed:
"backward through the graph a second time". Found when a call ``obj.method()`` without
arguments sits in an ``if`` after the failing backward, in the loop around it, beside an
optimizer's ``step()``, and ``obj`` holds (in its attributes, their lists and modules) a
tensor whose graph holds the freed node, in a list or dict it keeps (what the forwards add
to; a recurrent state on an attribute, a tensor or an LSTM's tuple replaced at each step, is
detached instead), each call alone on its own line. The fix moves those calls to right after the
backward, so each micro-batch reads only the state its own forward wrote: what the loop
does without accumulation, and what accumulation is meant to leave unchanged (a step
over micro-batches trains as one over their union, not over micro-batches that read each
other). It is first; ``retain_graph`` (each micro-batch training through the ones before
it) comes after, and says so.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, holds_node, value_of
from ..fixes import Fix, Proposal, insert_lines, keeping
from ..graph import Graph, GraphNode
from ..i18n import T, join
from ..source import loop_body_of

if TYPE_CHECKING:
    from ..evidence import Problem

__all__ = ["reset_at_step_context", "reset_every_backward_fixes"]

_NOT_RESETS = frozenset({"step", "zero_grad", "train", "eval", "update", "backward"})


def _holds(value: object, node: GraphNode, depth: int = 0, seen: set[int] | None = None, kept: bool = False) -> bool:
    """``value`` keeps, in a list or dict (a bank, a memory: what forwards add to), a tensor whose graph holds
    ``node``: in its attributes, their containers and submodules, four levels deep. A tensor held on an attribute
    alone is a recurrent state, which each step replaces: that one is detached, not reset (NOTE [A reset only at the
    step])."""
    seen = set() if seen is None else seen
    if id(value) in seen or depth > 4:
        return False
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        return kept and holds_node(value, node)
    if isinstance(value, list):
        items: list[Any] = list(value[:64])
        kept = True
    elif isinstance(value, tuple):  # an LSTM's (h, c): a state each step replaces, not a bank
        items = list(value[:64])
    elif isinstance(value, dict):
        items = list(value.values())[:64]
        kept = True
    elif isinstance(value, torch.nn.Module):
        items = [v for k, v in vars(value).items() if not k.startswith("_")]
        items += list(value._modules.values())[:64]
    elif hasattr(value, "__dict__") and not isinstance(value, type) and type(value).__module__ != "builtins":
        items = [v for k, v in vars(value).items() if not k.startswith("__")][:64]
    else:
        return False
    return any(_holds(v, node, depth + 1, seen, kept) for v in items)


def _calls_step(block: ast.If) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
        for st in block.body
        for n in ast.walk(st)
    )


def reset_at_step_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """The resets of an ``if`` that steps, after the failing backward, whose objects hold the freed graph (NOTE [A
    reset only at the step]): their lines in ``extra``."""
    site, line = facts.site, facts.backward_line
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or node is None or node.seq is None:
        return None
    body = loop_body_of(tree, line) or []
    found: list[int] = []
    for block in body:
        if not isinstance(block, ast.If) or block.lineno <= line or not _calls_step(block) or block.orelse:
            continue
        lines = [st.lineno for st in block.body]
        for st in block.body:
            call = st.value if isinstance(st, ast.Expr) else None
            if not (
                st.lineno > block.lineno  # not ``if ...: a(); b()`` on the if's own line
                and lines.count(st.lineno) == 1  # alone on its line (no ``a(); b()``)
                and isinstance(call, ast.Call)
                and not call.args
                and not call.keywords
                and isinstance(call.func, ast.Attribute)
                and call.func.attr not in _NOT_RESETS
                and st.lineno == st.end_lineno
                and site.holds(st.lineno)
            ):
                continue
            obj = value_of(ast.unparse(call.func.value), facts.namespace)
            if obj is not None and not isinstance(obj, torch.optim.Optimizer) and _holds(obj, node):
                found.append(st.lineno)
        if found and len(found) == len(block.body):
            return None  # nothing but the resets: the step is elsewhere
    if not found:
        return None
    return replace(base, extra={**base.extra, "reset_at_step": ",".join(map(str, found))})


def reset_every_backward_fixes(ctx: Context) -> list[Proposal]:
    """The resets moved from the step's ``if`` to right after the failing backward (NOTE [A reset only at the
    step])."""
    site = ctx.site
    lines = [int(x) for x in ctx.extra.get("reset_at_step", "").split(",") if x]
    if site is None or not lines:
        return []
    calls = [site.text(k).strip() for k in lines]
    insert = insert_lines(ctx, ctx.backward_line, "\n".join(calls), after=True)
    if insert is None:
        return []
    edits = (insert, *(Edit(site.filename, k, k, "") for k in lines))
    fix = Fix(
        keeps_forward=False,
        summary=T(
            "call {calls} after every backward of {loss}, not only when the optimizer steps: between steps the next "
            "micro-batch reads what this one left there, whose graph this backward freed",
            calls=join(calls, T(" and ")),
            loss=ctx.l,
        ),
        trains=T(
            "{loss} trains what it reaches, each micro-batch through the state its own forward wrote; from the "
            "second micro-batch of a step on, the forward no longer reads the micro-batches before it",
            loss=ctx.l,
        ),
        edits=edits,
    )
    return [keeping(ctx, fix)]
