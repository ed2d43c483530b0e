"""Cause ``reentrant_checkpoint``: a reentrant ``torch.utils.checkpoint`` runs its own backward inside the user's,
and that inner backward frees a part of the graph a later one needs; its fix, the one torch documents.

NOTE [A backward a reentrant checkpoint runs]
``checkpoint(fn, *args, use_reentrant=True)`` (the default when the keyword is left out,
with a warning, up to torch 2.x) runs ``fn`` under no_grad in the forward and, during the
backward, runs it again and calls ``torch.autograd.backward`` on that recomputation: a
backward nested in the user's. Only the tensors passed as arguments are cut off from the
outer graph (detached, then their gradients handed back); a tensor with a graph that ``fn``
reads from its closure (a base cost volume added back in each stage) stays attached, and
the nested backward goes on into the outer graph through it and frees it. The next
checkpointed stage's nested backward, or the outer one, reaches that part again: "backward
through the graph a second time", whatever ``retain_graph`` the user's own call passed
(the nested call does not pass it on). Found when the backward that freed the node was
nested in another and the file calls ``checkpoint`` reentrantly. The fix is torch's own
recommendation, ``use_reentrant=False`` at each such call: the non-reentrant checkpoint
records through saved-tensor hooks, runs no backward of its own, and handles tensors read
from the closure; the forward's values and the gradients are those of the code without
checkpointing.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..evidence import Facts
from ..fixes import Fix, Proposal, keeping, source_of
from ..i18n import T
from ..location import Location
from ..rewrite import call_with_keyword

__all__ = ["reentrant_context", "reentrant_fixes"]

_NAMES = ("checkpoint", "checkpoint_sequential")


def _reentrant_calls(source: str) -> list[ast.Call]:
    """The calls of ``checkpoint(...)`` in ``source`` that run reentrantly: ``use_reentrant=True``, or no keyword."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
        if name not in _NAMES:
            continue
        flag = next((k.value for k in n.keywords if k.arg == "use_reentrant"), None)
        if flag is None or (isinstance(flag, ast.Constant) and flag.value is True):
            found.append(n)
    return found


def reentrant_context(base: Context, facts: Facts, nested: bool) -> Context | None:
    """The pattern of NOTE [A backward a reentrant checkpoint runs], or None: ``nested``, the freeing backward
    ran inside another."""
    site = facts.site
    if not nested or site is None:
        return None
    calls = _reentrant_calls(site.source)
    if not calls:
        return None
    lines = ",".join(str(c.lineno) for c in calls)
    return replace(base, extra={**base.extra, "reentrant": lines})


def reentrant_fixes(ctx: Context) -> list[Proposal]:
    site = ctx.site
    if site is None or not ctx.extra.get("reentrant"):
        return []
    source = site.source if site.source else source_of(site.filename)
    lines = source.splitlines()
    edits: list[Edit] = []
    for call in _reentrant_calls(source):
        if call.end_lineno != call.lineno:
            return []
        new = call_with_keyword(lines[call.lineno - 1], call, "use_reentrant", "False")
        if new is None:
            return []
        edits.append(Edit(site.filename, call.lineno, call.lineno, new))
    where = ", ".join(Location(site.filename, e.start).where for e in edits)
    return [
        keeping(
            ctx,
            Fix(
                keeps_forward=True,
                summary=T(
                    "checkpoint without reentrance (use_reentrant=False at {where}), as torch recommends: the "
                    "reentrant checkpoint runs a backward of its own, which goes on through a tensor the "
                    "checkpointed function reads from outside its arguments and frees that part of the graph",
                    where=where,
                ),
                trains=T(
                    "{loss} trains what it reaches, with the gradients of the code without checkpointing",
                    loss=ctx.l,
                ),
                edits=tuple(edits),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T(
                    "pass every tensor the checkpointed function reads to checkpoint() as an argument: a reentrant "
                    "checkpoint cuts off only its arguments from the outer graph"
                ),
                trains=T("the same as intended: the same values, and the gradients of the code without checkpointing"),
            ),
        ),
    ]
