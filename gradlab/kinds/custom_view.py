"""GL0016 ``custom_view_in_place``: an in-place write to a view a custom autograd Function returned (the outputs
of a module with a full backward hook, written by the ``inplace=True`` activation after it).

NOTE [A custom Function's view written in place]
torch refuses the write at the write: autograd would have to rebase the view's history
past the Function's own backward. Its commonest source is register_full_backward_hook():
the module's outputs come out of BackwardHookFunction as views, and an activation built
with inplace=True right after the module writes to them. The located fix removes every
inplace=True of that activation in the user's file (an exact rewrite: the same values and
gradients, as for a saved tensor an in-place activation overwrote), or makes the user's
own in-place statement out of place; cloning the Function's output is the alternative
torch's message gives.
"""

from __future__ import annotations

from dataclasses import replace

from ..activations import ACTIVATIONS, without_inplace_flags
from ..edits import Edit
from ..evidence import Failure
from ..explanation import Explanation
from ..fixes import Fix, Proposal, source_of
from ..i18n import T
from ..rewrite import op_display, rewrite_in_place
from .statement import Statement, judged_here, located_here

__all__ = ["locate"]


def locate(f: Failure) -> Explanation:
    """The refused write at the user's line, with the out-of-place form of the write that made it."""
    e = located_here(f, lambda: T("here: an in-place write to a view a custom Function returned"))
    op = (f.op or "").rsplit(".", 1)[-1].strip("()")
    proposals: list[Proposal] = []
    line = Statement(f)
    rewritten = rewrite_in_place(line.text, op) if line.text and op else None
    if rewritten is None and op in ACTIVATIONS and f.location is not None:  # the write is inside a module's forward
        filename = f.location.filename
        source = f.site.source if f.site is not None and f.site.filename == filename else source_of(filename)
        edits = tuple(Edit(filename, a, b, new) for a, b, new in without_inplace_flags(source, op))
        if edits:
            proposals.append(
                Proposal(
                    Fix(
                        summary=T(
                            "use the activation without inplace=True (nn.ReLU() rather than nn.ReLU(inplace=True)): "
                            "it writes to the output of a module whose full backward hook made it a view"
                        ),
                        trains=T("the same as intended: the activation computes the same values and gradients"),
                        edits=edits,
                    ),
                    None,
                    True,
                )
            )
    if rewritten is not None:  # the user's own statement is the write
        proposals.append(
            Proposal(
                Fix(
                    summary=T("use the out-of-place form of {op}{where}", op=op_display(op), where=""),
                    trains=T("the same as intended: the same values, and the Function's backward runs as it should"),
                    edits=line.edit(f, rewritten),
                ),
                None,
                True,
            )
        )
    if not proposals:
        return e
    return replace(e, fixes=(*judged_here(f, proposals), *e.fixes))
