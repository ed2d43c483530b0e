"""A model used as a fixed feature extractor whose parameters still require grad: a target computed through it once
keeps a graph that every iteration's backward goes through.

NOTE [A feature extractor left trainable]
Style transfer, perceptual losses, a teacher: a pretrained model that no optimizer holds
computes targets once, before the loop (the style image's Gram matrices), and every
iteration compares its output with them. If the model's parameters still require grad,
each target carries a graph through them; the first backward frees it, the second fails.
Found when every leaf below the freed node that requires grad is a parameter of one
module of the frame and no optimizer holds any of them; the fix is the usual one:
the model frozen where it is made (``model = build().requires_grad_(False)``), so the
targets are constants and the gradient still flows through the model into what the loop
trains (the image, an input). Detaching each target would do the same, but the targets
are often in lists and comprehensions; the model is bound in one statement.

Not when the file differentiates with respect to the model's parameters
(``torch.autograd.grad(loss, model.parameters())``, ``backward(inputs=...)``; gradient
inversion and gradient matching do): frozen, they take no gradient and that call raises.
There the targets are what to detach, and the other candidates say so. A function of another
file of the user's that asks for gradients (handed the parameters) counts too.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, holds_node, leaves_below, stepped_params
from ..fixes import Fix, Proposal, keeping
from ..graph import Graph
from ..i18n import T
from ..location import _library_file

if TYPE_CHECKING:
    from ..evidence import Problem

__all__ = ["frozen_context", "frozen_fixes"]


def _tensors(value: object, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in ``value``: itself, or those of a list, tuple or dict, two levels deep."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for v in value[:64]:
            yield from _tensors(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in list(value.values())[:64]:
            yield from _tensors(v, depth + 1)


def frozen_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    site = facts.site
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or node is None or node.seq is None:
        return None
    held = stepped_params(facts)
    if not held:
        return None
    modules = {
        k: v
        for k, v in facts.namespace.items()
        if isinstance(k, str) and not k.startswith("_") and isinstance(v, torch.nn.Module)
    }
    for value in list(facts.namespace.values()):
        for t in _tensors(value):
            if not holds_node(t, node):
                continue
            leaves, _ = leaves_below(t.grad_fn)
            if not leaves or leaves & held:
                continue  # the loss itself, or a tensor of what the loop trains: not a target computed once
            owner = next(
                (k for k, m in modules.items() if leaves <= {id(q) for q in m.parameters()}),
                None,
            )
            if owner is not None and not _differentiates_elsewhere(facts):
                return replace(base, extra={**base.extra, "frozen": owner})
    return None


def _differentiates_elsewhere(facts: Facts) -> bool:
    """A function of the user's code in another file, bound in the frame, asks for gradients with respect to given
    tensors (``torch.autograd.grad(loss, list(net.parameters()))``, ``backward(inputs=...)``): it may be handed the
    model's parameters, which a frozen model would not give it."""
    site = facts.site
    for value in list(facts.namespace.values()):
        code = getattr(value, "__code__", None)
        if not inspect.isfunction(value) or code is None or _library_file(code.co_filename):
            continue
        if site is not None and code.co_filename == site.filename:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(value)))
        except (OSError, TypeError, SyntaxError):
            continue
        if any(isinstance(call, ast.Call) and _wrt(call) for call in ast.walk(tree)):
            return True
    return False


def _binding(tree: ast.Module, name: str) -> ast.Assign | None:
    """The one single-line statement of the file that binds ``name`` (``model = build()``, ``net, idx = prepare()``)."""
    found = [
        st
        for st in ast.walk(tree)
        if isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(st.targets[0]))
        and st.lineno == st.end_lineno
    ]
    return found[0] if len(found) == 1 else None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _differentiated(tree: ast.Module, name: str) -> bool:
    """Whether the file asks for gradients with respect to ``name``'s parameters: ``autograd.grad(l, name...)``
    or ``backward(inputs=name...)``, directly or through a name bound from it (``params = list(name.parameters())``)."""
    aliases = {name}
    for st in ast.walk(tree):
        if isinstance(st, ast.Assign) and name in _names(st.value):
            aliases |= {n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return any(isinstance(call, ast.Call) and any(_names(w) & aliases for w in _wrt(call)) for call in ast.walk(tree))


def _wrt(call: ast.Call) -> list[ast.expr]:
    """What ``call`` takes gradients with respect to: ``autograd.grad(loss, wrt)``'s second argument or ``inputs=``,
    ``backward(inputs=wrt)``'s; [] for any other call."""
    f = call.func
    attr = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    inputs = [k.value for k in call.keywords if k.arg == "inputs"]
    if attr == "grad":
        return list(call.args[1:2]) + inputs
    return inputs if attr == "backward" else []


def frozen_fixes(ctx: Context) -> list[Proposal]:
    site, name = ctx.site, ctx.extra.get("frozen")
    tree = site.tree() if site is not None else None
    if site is None or tree is None or not name:
        return []
    st = _binding(tree, name)
    if st is None or _differentiated(tree, name):
        return []
    text = site.text(st.lineno)
    indent = text[: len(text) - len(text.lstrip())]
    new = f"{name}.requires_grad_(False)"
    edit = Edit(site.filename, st.lineno, st.lineno, f"{text}\n{indent}{new}")
    fix = Fix(
        summary=T(
            "freeze {model} where it is made ({code}): no optimizer holds its parameters, and what it computes "
            "once before the loop keeps a graph through them that the first backward freed",
            model=name,
            code=new,
        ),
        trains=T(
            "{loss} trains what it trained; {model} stays fixed, and the gradient still flows through it",
            loss=ctx.l,
            model=name,
        ),
        edits=(edit,),
    )
    return [keeping(ctx, fix)]
