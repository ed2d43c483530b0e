"""Cause ``inplace_op``: an in-place operation in the forward code overwrote a tensor autograd saved; its fixes."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..fixes import Fix, Proposal, all_edits, keeping, source_of, write_edit
from ..i18n import T
from ..rewrite import ACTIVATION_NAMES, ACTIVATIONS, OP_NAMES, rewrite_in_place, twin_in_expression


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


def _out_of_place(code: str | None, op: str | None) -> str | None:
    rewritten = rewrite_in_place(code, op) if code and op else None
    if rewritten is None and code and op:  # used as a value (y = x * s.exp_()): its twin, in place of it
        rewritten = twin_in_expression(code, op)
    return rewritten


def _other_edits(ctx: Context, flags: tuple[Edit, ...]) -> tuple[Edit, ...] | None:
    """The out-of-place form of every other write that made a saved tensor stale (NOTE [Every stale write]);
    None when one of them has none (a step, a write under no_grad, a line no rewrite fits)."""
    edits = []
    for loc, op, recorded in ctx.other_writes:
        if flags and op == ctx.op:
            continue  # the same activation: its inplace=True is removed with the others
        if loc is None:
            return None
        new = _out_of_place(loc.code, op) if recorded else None
        edit = write_edit(replace(ctx, write_at=loc), new)
        if edit is None:
            return None
        edits.append(edit)
    return tuple(edits)


def in_place_fixes(ctx: Context) -> list[Proposal]:
    rewritten = _out_of_place(ctx.code, ctx.op)
    flags = _inplace_flags(ctx) if ctx.op in ACTIVATIONS and not (rewritten and "inplace" in (ctx.code or "")) else ()
    others = _other_edits(ctx, flags)
    # every write, in the order of its lines
    writes = sorted(
        [
            (ctx.write_at, ctx.where, ctx.op),
            *((loc, loc.where if loc else None, op) for loc, op, _rec in ctx.other_writes),
        ],
        key=lambda x: x[0].lineno if x[0] is not None else 0,
    )
    wheres = [w for _loc, w, _op in writes if w]
    where = T(" at {where}", where=", ".join(wheres)) if wheres else ""
    ops = [o for o in dict.fromkeys(op for _loc, _w, op in writes) if o]
    op = ", ".join(OP_NAMES.get(o, o) for o in ops) if ops else T("the in-place op")
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
                edits=()
                if others is None
                else tuple(
                    sorted(all_edits(*(flags or (write_edit(ctx, rewritten),)), *others), key=lambda e: e.start)
                ),
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


# NOTE [Every stale write]
# Several writes may have made saved tensors of one graph stale (a layer that resamples two noise buffers in
# place, each read by the forward and written again by the next forward): torch names only one, and the
# out-of-place form of that write alone leaves the patched run failing on the next. The first fix rewrites
# every such write of the graph; when one of them has no out-of-place form (an optimizer step, a write under
# no_grad), it is a sentence, and the general rewrites (a copy where each tensor is saved) come first.
