"""Cause ``inplace_op``: an in-place operation in the forward code overwrote a tensor autograd saved; its fixes."""

from __future__ import annotations

import ast
import re

from ..context import Context
from ..edits import Edit
from ..fixes import Fix, Proposal, all_edits, keeping, source_of, write_edit
from ..i18n import T
from ..rewrite import ACTIVATION_NAMES, ACTIVATIONS, OP_NAMES, rewrite_in_place


def _inplace_flags(ctx: Context) -> tuple[Edit, ...]:
    """Every ``inplace=True`` of the activation ``ctx.op`` in the file that ran it, removed (an exact rewrite:
    the out-of-place activation computes the same values and gradients)."""
    names = ACTIVATION_NAMES.get(ctx.op or "")
    loc = ctx.write_at
    site = ctx.site
    if names is None or loc is None:
        return ()
    filename = site.filename if site is not None else loc.filename
    source = site.source if site is not None else source_of(filename)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    lines = source.splitlines()
    found = sorted(
        {
            k.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) in names
            for k in n.keywords
            if k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
        }
    )
    edits = []
    for i in found:
        new = re.sub(r",?\s*inplace\s*=\s*True", "", lines[i - 1], count=1).replace("(, ", "(")
        edits.append(Edit(filename, i, i, new))
    return tuple(edits)


def in_place_fixes(ctx: Context) -> list[Proposal]:
    rewritten = rewrite_in_place(ctx.code, ctx.op) if ctx.code and ctx.op else None
    flags = _inplace_flags(ctx) if ctx.op in ACTIVATIONS and not (rewritten and "inplace" in (ctx.code or "")) else ()
    where = T(" at {where}", where=ctx.where) if ctx.where else ""
    op = OP_NAMES.get(ctx.op, ctx.op) if ctx.op else T("the in-place op")
    if ctx.op in ACTIVATIONS:
        summary = T("use the activation without inplace=True (nn.ReLU() rather than nn.ReLU(inplace=True))")
    elif ctx.op == "__setitem__":
        summary = T("write the indexed assignment into a copy and rebind the name{where}", where=where)
    else:
        summary = T("use the out-of-place form of {op}{where}", op=op, where=where)
    tensor = ctx.tensor or T("the tensor")
    proposals = [
        keeping(
            ctx,
            Fix(
                summary=summary,
                trains=T(
                    "the same as intended: nothing changes in which loss trains which parameters; {tensor} keeps the "
                    "value autograd saved",
                    tensor=tensor,
                ),
                edits=flags or all_edits(write_edit(ctx, rewritten)),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T("write to a copy: clone {name} before the in-place write", name=tensor),
                trains=T("the same as intended (the copy costs one tensor's memory)"),
            ),
        ),
    ]
    # an indexed assignment's first fix already writes into a copy; "clone the saved tensor" would name the
    # wrong one (the saved slice is not what the assignment writes)
    return proposals[:1] if ctx.op == "__setitem__" and proposals[0].fix.edits else proposals
