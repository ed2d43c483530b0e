"""A weight that a pruning hook recomputes at its module's forward, read without that forward: kept from pruning time.

NOTE [A pruned weight read without its module's forward]
``torch.nn.utils.prune`` replaces a module's ``weight`` with a parameter ``weight_orig``
and a buffer ``weight_mask``, and registers a forward pre-hook that sets
``module.weight = weight_orig * weight_mask`` each time the module's forward runs
(torch's documentation of ``prune``). A module whose weight another module reads
directly, without calling it, never runs that hook: ``nn.MultiheadAttention`` reads
``out_proj.weight`` in its own forward and never calls ``out_proj``. That weight is then
the product computed once, at pruning time, with its graph: the first backward frees
it, the second fails ("backward through the graph a second time"). The fix does what
the hook would have done, before each forward: every pruned tensor of the model set
to its ``_orig`` times its ``_mask`` (the same values; the gradient reaches ``_orig``
as the hook's product would pass it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from ..context import Context
from ..evidence import Facts, holds_node
from ..fixes import Fix, Proposal, insert_lines, keeping
from ..graph import Graph
from ..i18n import T
from ..source import function_of, loop_body_of

if TYPE_CHECKING:
    from ..evidence import Problem

__all__ = ["pruned_context", "pruned_fixes"]


def _models(namespace: Mapping[str, object]) -> Iterator[tuple[str, torch.nn.Module]]:
    """The frame's modules by name, and those one attribute into its plain objects (``self.modules``)."""
    for key, value in reversed(list(namespace.items())):  # the frame's locals (self) before the module's globals
        if not isinstance(key, str) or key.startswith("_"):
            continue
        if isinstance(value, torch.nn.Module):
            yield key, value
            continue
        try:
            attrs = list(vars(value).items())
        except TypeError:
            continue
        for attr, inner in attrs:
            if isinstance(attr, str) and not attr.startswith("_") and isinstance(inner, torch.nn.Module):
                yield f"{key}.{attr}", inner


def _pruned(module: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """The pruned tensors of ``module`` itself: each ``name`` with a ``name_mask`` buffer and a ``name_orig``."""
    for buffer, _mask in module.named_buffers(recurse=False):
        if buffer.endswith("_mask") and hasattr(module, buffer[: -len("_mask")] + "_orig"):
            value = getattr(module, buffer[: -len("_mask")], None)
            if isinstance(value, torch.Tensor):
                yield buffer[: -len("_mask")], value


def pruned_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """The context when the freed node is the product of a pruned weight kept from pruning time (NOTE above)."""
    site = facts.site
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or node is None or node.seq is None or facts.backward_line is None:
        return None
    for name, model in _models(facts.namespace):
        for module in model.modules():
            if any(holds_node(tensor, node) for _tensor_name, tensor in _pruned(module)):
                return replace(base, extra={**base.extra, "pruned_model": name})
    return None


def pruned_fixes(ctx: Context) -> list[Proposal]:
    """Recompute every pruned tensor of the model at the start of the function that runs the forward and the
    failing backward, as the pruning hook does at a module's forward."""
    site, model = ctx.site, ctx.extra.get("pruned_model")
    tree = site.tree() if site is not None else None
    if site is None or tree is None or model is None or ctx.backward_line is None:
        return []
    # the start of the loop around the backward, else of its function: before each iteration's forward
    function = function_of(tree, ctx.backward_line)
    loop = loop_body_of(tree, ctx.backward_line)
    inside = loop is not None and (
        function is None or function.lineno < loop[0].lineno <= (function.end_lineno or function.lineno)
    )
    body = [
        st
        for st in (loop if inside and loop is not None else function.body if function is not None else [])
        if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))  # a docstring
    ]
    if not body or not site.holds(body[0].lineno):
        return []
    # names of their own (a user's `mask` or `m` of the loop is left alone)
    text = (
        f"for _pruned in {model}.modules():  # pruned weights a module's forward would recompute (prune's hook)\n"
        f"    for _buffer, _mask in _pruned.named_buffers(recurse=False):\n"
        f'        if _buffer.endswith("_mask") and hasattr(_pruned, _buffer[:-5] + "_orig"):\n'
        f'            setattr(_pruned, _buffer[:-5], getattr(_pruned, _buffer[:-5] + "_orig") * _mask)'
    )
    edit = insert_lines(ctx, body[0].lineno, text)
    if edit is None:
        return []
    return [
        keeping(
            ctx,
            Fix(
                keeps_forward=True,
                summary=T(
                    "recompute the pruned weights before each forward, as pruning's hook does at a module's "
                    "forward: a module that another reads without calling it (nn.MultiheadAttention's out_proj) "
                    "keeps the weight computed at pruning time, whose graph the first backward freed"
                ),
                trains=T(
                    "{loss} trains what it reaches, the pruned weights through their _orig parameters, as the "
                    "pruning means",
                    loss=ctx.l,
                ),
                edits=(edit,),
            ),
        )
    ]
