"""Cause ``fast_weights_in_place``: fast weights updated in place inside a loop over them (MAML); its fixes."""

from __future__ import annotations

import ast
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..evidence import Facts
from ..fixes import Fix, Proposal, all_edits, keeping
from ..i18n import T
from ..rewrite import out_of_place_update
from ..saved import Write


def fast_context(ctx: Context, w: Write, facts: Facts) -> Context | None:
    """``w.sub_(lr * g)`` inside ``for w, g in zip(fast, grads)``: the loop rebinds ``w``, so write a new list."""
    site, loc = facts.site, w.location
    if site is None or loc is None or loc.filename != site.filename:
        return None
    tree = site.tree()
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.For) or not (node.lineno < loc.lineno <= (node.end_lineno or 0)):
            continue
        if len(node.body) != 1 or not isinstance(node.iter, ast.Call) or ast.unparse(node.iter.func) != "zip":
            continue
        if not isinstance(node.target, ast.Tuple) or not node.iter.args or not isinstance(node.iter.args[0], ast.Name):
            continue
        new = out_of_place_update(node.body[0], node.target)
        if new is None:
            return None
        fast = node.iter.args[0].id
        target = ", ".join(ast.unparse(e) for e in node.target.elts)
        text = f"{fast} = [{new} for {target} in {ast.unparse(node.iter)}]"
        return replace(ctx, fast=fast, fast_lines=(node.lineno, node.end_lineno or node.lineno), fast_text=text)
    return None


def fast_weights_fixes(ctx: Context) -> list[Proposal]:
    edit = None
    site = ctx.site
    if site is not None and ctx.fast_lines is not None and ctx.fast_text is not None:
        start, end = ctx.fast_lines
        # the loop may sit in a helper of the same file (a MAML class's adapt()): checked on the names it uses
        text = site.text(start)
        edit = Edit(site.filename, start, end, text[: len(text) - len(text.lstrip())] + ctx.fast_text)
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "build the adapted weights as a new list instead of updating {name} in place (rebinding the loop "
                    "variable would adapt nothing)",
                    name=ctx.fast or ctx.tensor or T("the weights"),
                ),
                trains=T(
                    "the same as intended: the outer loss trains through the adaptation step, and the inner step "
                    "really changes the weights it uses"
                ),
                edits=all_edits(edit),
            ),
        ),
    ]
