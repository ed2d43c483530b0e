"""Cause ``handed_gradient``: a gradient handed back by hand across a cut that the code never made; its fix.

NOTE [A gradient handed back across a cut]
Split learning, a pipeline written by hand, synthetic gradients: one part (a client) computes an
activation and hands it to another (a server), which computes a loss, backwards it, and hands back
the activation's ``.grad``; the first part then backwards its activation with that gradient
(``torch.autograd.backward(act, grad_tensors=(g,))``, ``act.backward(g)``). The protocol needs a cut
at the handover: the second part must receive a leaf (``act.detach().requires_grad_()``), so that its
backward stops there and fills the leaf's ``.grad``. Handed the activation itself, the second part's
backward goes on through the first part's graph and frees it, and the first part's own backward
then fails (its gradient also lands twice in the first part's ``.grad``). Found from the failing
backward itself: it is given a gradient by hand, and the tensor it backwards retains its grad and
already has one (another backward reached it, at the receiver's request), and the statement that
produced that gradient (in the failing loop or in the loop that calls the failing function) passes
one tensor with a graph into a call. The fix cuts
there: that argument becomes ``.detach().requires_grad_()``. The values every part computes stay the
same; each part's optimizer steps on the gradient the protocol means it to get, once.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, resolve_dotted
from ..fixes import Fix, Proposal, claim, source_of
from ..i18n import T
from ..loop import Site
from ..source import loop_body_of, names, parse, statement_at

__all__ = ["handed_context", "handed_fixes"]


def _backward_parts(st: ast.stmt) -> tuple[str, ast.expr] | None:
    """``(tensor, gradient)`` of ``torch.autograd.backward(t, grad_tensors=g)`` or ``t.backward(g)`` in ``st``."""
    for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
        func = ast.unparse(call.func)
        if func.endswith("autograd.backward") and call.args:
            given = next((k.value for k in call.keywords if k.arg in ("grad_tensors", "gradient")), None)
            given = given if given is not None else (call.args[1] if len(call.args) > 1 else None)
            if given is not None:
                return ast.unparse(call.args[0]), given
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            given = next((k.value for k in call.keywords if k.arg == "gradient"), None)
            given = given if given is not None else (call.args[0] if call.args else None)
            if given is not None:
                return ast.unparse(call.func.value), given
    return None


def _first(expr: ast.expr) -> ast.expr:
    return expr.elts[0] if isinstance(expr, (ast.Tuple, ast.List)) and expr.elts else expr


def _handing(site: Site, line: int, gradient: str, graphs: set[str]) -> tuple[int, ast.Call, ast.expr] | None:
    """The statement of the loop around ``line`` that binds ``gradient`` from a call, and the one argument of that
    call that holds a graph (a name of ``graphs``)."""
    tree = site.tree()
    body = loop_body_of(tree, line) if tree is not None else None
    if tree is None or not body:
        return None
    here = next((k for k, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
    if here is None:
        return None
    for st in reversed(body[:here]):
        if not isinstance(st, ast.Assign) or gradient not in names(st, ast.Store):
            continue
        call = st.value if isinstance(st.value, ast.Call) else None
        if call is None or call.lineno != call.end_lineno:
            return None
        passed = [a for a in call.args if isinstance(a, ast.Name) and a.id in graphs]
        return (st.lineno, call, passed[0]) if len(passed) == 1 else None
    return None


def handed_context(base: Context, facts: Facts) -> Context | None:
    """The pattern of NOTE [A gradient handed back across a cut], or None."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    st = statement_at(tree, line) if tree is not None and line is not None else None
    parts = _backward_parts(st) if st is not None else None
    if site is None or line is None or parts is None:
        return None
    tensor = resolve_dotted(parts[0], facts.namespace)
    given = _first(parts[1])
    gradient: Any = resolve_dotted(ast.unparse(given), facts.namespace)
    if not (isinstance(tensor, torch.Tensor) and isinstance(gradient, torch.Tensor)):
        return None
    # a tensor with a graph whose .grad another backward filled (it retains its grad: the handover's receiver asked
    # for it), backwarded with a gradient given by hand
    if tensor.grad_fn is None or not tensor.retains_grad or tensor.grad is None:
        return None
    found: tuple[Site, tuple[int, ast.Call, ast.expr]] | None = None
    caller = facts.caller_loop
    if caller is not None:  # the gradient passed in by the loop that calls this function
        caller_tree = caller.site.tree()
        callee = statement_at(caller_tree, caller.line) if caller_tree is not None else None
        args = [
            a.id
            for c in (ast.walk(callee) if callee is not None else ())
            if isinstance(c, ast.Call)
            for a in c.args
            if isinstance(a, ast.Name)
        ]
        for name in args:
            handing = _handing(caller.site, caller.line, name, set(caller.graphs))
            if handing is not None:
                found = (caller.site, handing)
                break
    if found is None and isinstance(given, ast.Name):
        graphs = {k for k, v in facts.namespace.items() if isinstance(v, torch.Tensor) and v.grad_fn is not None}
        handing = _handing(site, line, given.id, graphs)
        found = (site, handing) if handing is not None else None
    if found is None:
        return None
    where, (at, call, arg) = found
    return replace(
        base,
        extra={
            **base.extra,
            "handed_file": where.filename,
            "handed_line": str(at),
            "handed_arg": ast.unparse(arg),
            "handed_call": ast.unparse(call.func),
            "handed_col": f"{arg.col_offset}:{arg.end_col_offset}",
            "handed_tensor": parts[0],
        },
    )


def handed_fixes(ctx: Context) -> list[Proposal]:
    extra = ctx.extra
    if not extra.get("handed_file"):
        return []
    filename, line, arg = extra["handed_file"], int(extra["handed_line"]), extra["handed_arg"]
    start, _, end = extra["handed_col"].partition(":")
    lines = source_of(filename).splitlines()
    if not 0 < line <= len(lines) or not start.isdigit() or not end.isdigit():
        return []
    text = lines[line - 1]
    new = text[: int(start)] + f"{arg}.detach().requires_grad_()" + text[int(end) :]
    if parse(new.strip()) is None:
        return []
    fix = Fix(
        summary=T(
            "cut the graph where {arg} is handed to {call}(): pass {arg}.detach().requires_grad_(); the backward "
            "inside then stops at the cut and fills the copy's .grad, the gradient handed back, instead of going on "
            "through the graph {tensor} was computed with and freeing it",
            arg=arg,
            call=extra["handed_call"],
            tensor=extra["handed_tensor"],
        ),
        trains=T(
            "each part trains on the gradient the protocol gives it, once: the loss inside {call}() trains what it "
            "reaches after the cut; the gradient handed back trains what {tensor} was computed with",
            call=extra["handed_call"],
            tensor=extra["handed_tensor"],
        ),
        edits=(Edit(filename, line, line, new),),
        claims=claim(ctx, ctx.reach),  # the handed tensor trains what it was computed with, as the loop asks
    )
    return [Proposal(fix, None, False)]  # its own trains line: the receiver and the sender each keep theirs
