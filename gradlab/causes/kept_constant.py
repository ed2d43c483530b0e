"""Cause ``stale_forward``, its kept-constant reading: a tensor computed once and kept on an object (an estimated
average latent, a normalised training set), whose graph every iteration's loss goes through while no optimizer
holds the parameters of that graph; detached, or made a leaf of its own, where it is assigned."""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator, Mapping
from dataclasses import replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, Problem, holds_node, leaves_below, stepped_params
from ..fixes import Fix, Proposal, all_edits, keeping
from ..graph import Graph
from ..i18n import T
from ..location import Location
from ..rewrite import detached_value

__all__ = ["kept_constant_context", "kept_constant_fixes"]


_NOT_HOLDERS = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    torch.Tensor,
    str,
    bytes,
    int,
    float,
)


def _held_tensors(namespace: Mapping[str, object]) -> Iterator[tuple[str, str, torch.Tensor]]:
    """Tensors with a graph kept on the frame's objects, two attributes deep (``self.net.latent_avg``): the
    dotted name, the attribute's own name and the tensor."""
    for key, value in sorted(namespace.items(), key=lambda kv: kv[0] != "self"):  # the method's own object first
        if not isinstance(key, str) or key.startswith("_") or isinstance(value, _NOT_HOLDERS):
            continue
        try:
            first = list(vars(value).items())
        except TypeError:
            continue
        for attr, inner in first:
            if not isinstance(attr, str) or attr.startswith("_"):
                continue
            if isinstance(inner, torch.Tensor):
                yield f"{key}.{attr}", attr, inner
                continue
            try:
                second = list(vars(inner).items()) if not isinstance(inner, _NOT_HOLDERS) else []
            except TypeError:
                continue
            for name, tensor in second:
                if isinstance(name, str) and not name.startswith("_") and isinstance(tensor, torch.Tensor):
                    yield f"{key}.{attr}.{name}", name, tensor


def kept_constant_context(
    base: Context, p: Problem, facts: Facts, graph: Graph, node_id: int | None = None
) -> Context | None:
    """A tensor computed once (in a constructor: an estimated average latent) and kept on an object, whose graph
    every iteration's loss goes through: no optimizer holds the parameters of that graph, so it is a constant of
    the loop; the statement of the file that assigns it is where it is detached. Every such tensor whose graph
    holds a freed node of the failing graph is found (a training set's inputs and labels, both normalised from
    data that required grad): a detach of one alone leaves the patched run failing on the next."""
    site = facts.site
    wanted = p.node_id if node_id is None else node_id
    node = next((n for n in graph.nodes if n.id == wanted), None)
    tree = site.tree() if site is not None else None
    if site is None or tree is None or node is None or node.seq is None:
        return None
    freed = {s.node_id for s in graph.saved if s.status == "freed"} | {node.id}
    nodes = [n for n in graph.nodes if n.id in freed and n.seq is not None]
    held = stepped_params(facts)
    in_modules = frozenset().union(*site.modules.values()) if site.modules else frozenset()
    found: list[tuple[str, tuple[int, ...], bool]] = []
    for dotted, attr, tensor in _held_tensors(facts.namespace):
        if not any(holds_node(tensor, n) for n in nodes):
            continue
        leaves, _ = leaves_below(tensor.grad_fn)
        if leaves & held:
            continue  # an optimizer trains what it was computed from: not a constant
        if not held:
            return None  # no optimizer known yet (none stepped): "no optimizer holds them" cannot be said
        assigned = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            and any(
                isinstance(a, ast.Attribute) and a.attr == attr and isinstance(a.ctx, ast.Store)
                for t in n.targets
                for a in ast.walk(t)
            )
        ]
        if any(
            isinstance(r, ast.Attribute) and r.attr == attr and isinstance(r.ctx, ast.Load)
            for n in assigned
            for r in ast.walk(n.value)
        ):
            continue  # built from itself (out, self.h = rnn(x, self.h)): state carried across iterations
        where = [
            n
            for n in assigned
            if len(n.targets) == 1
            and isinstance(n.targets[0], ast.Attribute)
            and n.lineno == n.end_lineno
            and not isinstance(n.value, ast.Constant)  # self.h = None: nothing to detach there
        ]
        if 0 < len(where) <= 3:  # every statement that assigns it (a detach of a loaded tensor changes nothing)
            # NOTE [A constant that requires grad]: built from tensors made with requires_grad=True that no module
            # holds (PINN collocation points: 1 + 3 * torch.rand(n, 1, requires_grad=True)), it is an input the code
            # differentiates with respect to: it becomes a leaf of its own that still requires grad
            leaf = tensor.requires_grad and not leaves & in_modules
            found.append((dotted, tuple(n.lineno for n in where), leaf))
    first = next((f for f in found if f[0]), None)
    if first is None:
        return None
    lines = tuple(dict.fromkeys(line for _d, ls, _l in found for line in ls))
    ctx = replace(
        base,
        snapshot=" and ".join(d for d, _ls, _l in found),
        snapshot_line=None,
        kept_at=Location(site.filename, first[1][0]),
        stale_lines=lines,
    )
    leaf_lines = [line for _d, ls, leaf in found if leaf for line in ls]
    if leaf_lines:
        ctx = replace(ctx, extra={**ctx.extra, "leaf": "1", "leaf_lines": ",".join(map(str, leaf_lines))})
    return ctx


def kept_constant_fixes(ctx: Context) -> list[Proposal]:
    """Detach, where it is assigned, a tensor kept on an object whose graph no optimizer trains."""
    loc, site = ctx.kept_at, ctx.site
    if loc is None or site is None or ctx.snapshot is None:
        return []
    edits: list[Edit | None] = []
    leaf = ctx.extra.get("leaf") == "1"
    leaf_lines = {int(x) for x in ctx.extra.get("leaf_lines", "").split(",") if x}
    for line in ctx.stale_lines or (loc.lineno,):
        text = site.text(line)
        new = detached_value(text.strip())
        if new is not None and leaf and (not leaf_lines or line in leaf_lines):
            new += ".requires_grad_()"
        edits.append(Edit(loc.filename, line, line, text[: len(text) - len(text.lstrip())] + new) if new else None)
    if leaf:
        where = ", ".join(Location(loc.filename, line).where for line in ctx.stale_lines or (loc.lineno,))
        return [
            keeping(
                ctx,
                Fix(
                    summary=T(
                        "{name} is computed once, from tensors that require grad and that no optimizer holds, and "
                        "every iteration backwards through that graph: make it a leaf of its own where it is "
                        "assigned ({where}): .detach().requires_grad_()",
                        name=ctx.snapshot,
                        where=where,
                    )
                    if " and " not in ctx.snapshot
                    else T(
                        "{names} are computed once, from tensors that require grad and that no optimizer holds, and "
                        "every iteration backwards through their graph: make each a leaf of its own where it is "
                        "assigned ({where}): .detach().requires_grad_()",
                        names=ctx.snapshot,
                        where=where,
                    ),
                    trains=T(
                        "{loss} trains what it reaches through each iteration's own forward; {name} keeps its "
                        "values and still requires grad (a derivative with respect to it still works)",
                        loss=ctx.l,
                        name=ctx.snapshot,
                    ),
                    edits=all_edits(*edits),
                ),
            )
        ]
    where = ", ".join(Location(loc.filename, line).where for line in ctx.stale_lines or (loc.lineno,))
    fix = Fix(
        summary=T(
            "{name} is a constant of the loop (computed once, from parameters no optimizer holds): detach it where "
            "it is assigned ({where})",
            name=ctx.snapshot,
            where=where,
        )
        if " and " not in ctx.snapshot
        else T(
            "{names} are constants of the loop (computed once, from parameters no optimizer holds): detach each "
            "where it is assigned ({where})",
            names=ctx.snapshot,
            where=where,
        ),
        trains=T(
            "{loss} trains what it reaches through each iteration's own forward; {name} takes no part in backward",
            loss=ctx.l,
            name=ctx.snapshot,
        ),
        edits=all_edits(*edits),
    )
    return [keeping(ctx, fix)]
