"""Cause ``same_loss_twice``: the same loss was backwarded twice; its fixes."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..fixes import Fix, Proposal, all_edits, keeping, replace_line, source_of
from ..i18n import T
from ..rewrite import with_keyword
from ..source import enclosing_blocks, parse


def _deleted(ctx: Context, line: int | None) -> Edit | None:
    """The statement at ``line`` deleted, if it is a backward call and nothing else (``pass`` if it is alone)."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not site.holds(line):
        return None
    for block in enclosing_blocks(tree):
        for st in block:
            if st.lineno != line:
                continue
            call = st.value if isinstance(st, ast.Expr) else None
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                return None
            if call.func.attr != "backward":
                return None
            end = st.end_lineno or st.lineno
            if len(block) == 1:  # the block would be empty
                text = site.text(line)
                return Edit(site.filename, line, end, text[: len(text) - len(text.lstrip())] + "pass")
            return Edit(site.filename, line, end, "")
    return None


def _deleted_call(filename: str, line: int) -> Edit | None:
    """The one-line call statement at ``line`` of ``filename`` deleted (``optimizer.backward(loss)``, a wrapper's
    caller), when it is a call and nothing else and its block keeps another statement."""
    tree = parse(source_of(filename))
    for block in enclosing_blocks(tree) if tree is not None else ():
        for st in block:
            if st.lineno == line and st.end_lineno == line and len(block) > 1:
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                    return Edit(filename, line, line, "")
                return None
    return None


def twice_fixes(ctx: Context) -> list[Proposal]:
    """One backward (the second call deleted) first; both kept with ``retain_graph=True`` only as the other way.

    Two backward calls through one graph with no step between add the same gradient
    twice into ``.grad``: code that does it by accident means one (NOTE [Twice]).
    """
    retain = None
    if ctx.site is not None and ctx.earlier_line is not None and ctx.earlier_line != ctx.backward_line:
        retain = replace_line(
            ctx, ctx.earlier_line, with_keyword(ctx.site.text(ctx.earlier_line), "backward", "retain_graph=True")
        )
    earlier = ctx.earlier_line not in (None, ctx.backward_line) or ctx.extra.get("earlier_elsewhere") == "1"
    once = _deleted(ctx, ctx.backward_line) if earlier else None
    if once is None and ctx.extra.get("delete_at"):  # the second caller of one wrapper's backward line
        once = _deleted_call(ctx.extra.get("delete_in", ""), int(ctx.extra["delete_at"]))
    shown = ctx  # the loss as the text names it: (w * loss).backward() keeps its parentheses
    if ctx.loss is not None and not re.fullmatch(r"[\w.\[\]]+", ctx.loss):
        shown = replace(ctx, loss=f"({ctx.loss})")
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "call {loss}.backward() once: delete the second call (the one that failed); the first already "
                    "put {loss}'s gradient into .grad",
                    loss=shown.l,
                ),
                trains=T("what one backward of {loss} trains: each gradient once", loss=shown.l),
                edits=all_edits(once),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T(
                    "if you mean two backward calls through it, pass retain_graph=True to the first", loss=shown.l
                ),
                trains=T("twice the gradient: both backward calls add {loss}'s gradient into .grad", loss=shown.l),
                edits=all_edits(retain),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T("recompute the forward before the second backward"),
                trains=T("twice the gradient, from a fresh graph each time"),
            ),
        ),
    ]


# NOTE [Twice]
# A second backward of the same graph, with no optimizer step between, adds the
# same gradient again: .grad holds twice it, and the step after it takes a step
# twice as long (Adam's normalisation hides the factor, SGD's does not). Code that
# means it says so (retain_graph=True on the first), so a failing second call is
# one too many: deleting it keeps everything the first one trained.
