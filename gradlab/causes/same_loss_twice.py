"""Cause ``same_loss_twice``: the same loss was backwarded twice; its fixes."""

from __future__ import annotations

from ..context import Context
from ..fixes import Fix, Proposal, all_edits, keeping, replace_line
from ..i18n import T
from ..rewrite import with_keyword


def twice_fixes(ctx: Context) -> list[Proposal]:
    edit = None
    if ctx.site is not None and ctx.earlier_line is not None and ctx.earlier_line != ctx.backward_line:
        edit = replace_line(
            ctx, ctx.earlier_line, with_keyword(ctx.site.text(ctx.earlier_line), "backward", "retain_graph=True")
        )
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "call {loss}.backward() once; if you need two backward calls through it, pass retain_graph=True "
                    "to the first",
                    loss=ctx.l,
                ),
                trains=T("unchanged; note that two backward calls add their gradients into .grad"),
                edits=all_edits(edit),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T("recompute the forward before the second backward"),
                trains=T("unchanged, with a fresh graph"),
            ),
        ),
    ]
