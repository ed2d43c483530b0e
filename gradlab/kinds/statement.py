"""The statement of the user's line that raised an error, read once for the kinds fixed at that line
(:mod:`gradlab.kinds.at_line`, :mod:`gradlab.kinds.numpy_values`, :mod:`gradlab.kinds.non_scalar`): its text and
tree, an edit of it, and the fixes judged with the loop's claims."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace

from ..claims import failure_claims
from ..context import Context
from ..edits import Edit
from ..evidence import Failure
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of
from ..judge import judged
from ..rewrite import split_comment
from ..source import statement_at
from .family import BUILDERS

__all__ = ["Statement", "judged_here", "located_here"]


class Statement:
    """The one-line statement of the user's line that raised, as text and tree (None when there is none)."""

    def __init__(self, f: Failure) -> None:
        self.text: str | None = None
        self.tree: ast.stmt | None = None
        self.comment = ""
        site, loc = f.site, f.location
        tree = site.tree() if site is not None else None
        if site is None or loc is None or tree is None or loc.filename != site.filename:
            return
        st = statement_at(tree, loc.lineno)
        if st is None or st.lineno != st.end_lineno:
            return
        body, self.comment = split_comment(site.text(loc.lineno).strip())
        parsed = ast.parse(body) if body else None
        if parsed is not None and len(parsed.body) == 1:
            self.text, self.tree = body, parsed.body[0]

    def edit(self, f: Failure, new: ast.AST | str) -> tuple[Edit, ...]:
        site, loc = f.site, f.location
        if site is None or loc is None:
            return ()
        text = new if isinstance(new, str) else ast.unparse(new)
        lines = text.split("\n")
        lines[0] += self.comment
        indent = indent_of(site, loc.lineno)
        return (Edit(site.filename, loc.lineno, loc.lineno, "\n".join(indent + line for line in lines)),)


def judged_here(
    f: Failure, proposals: list[Proposal], claims: tuple[tuple[str, tuple[str, ...]], ...] | None = None
) -> tuple[Fix, ...]:
    """The proposals judged; a fix that keeps the training claims what the loop's losses train now."""
    kept = failure_claims(f) if claims is None else claims
    fixes = judged(proposals, Context(site=f.site))
    return tuple(replace(fix, claims=kept or ()) if not fix.claims else fix for fix in fixes)


def located_here(f: Failure, label: Callable[[], object]) -> Explanation:
    e = BUILDERS[f.kind](f.message)
    return replace(e, spans=(Span(f.location, label()),)) if f.location is not None else e  # type: ignore[arg-type]
