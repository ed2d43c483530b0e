"""A ``.detach()`` whose result the code throws away (``x.detach()`` alone on its line), read as what it meant.

NOTE [A detach whose result is thrown away]
``tensor.detach()`` returns a new tensor; alone on its line (``clutter_ref.detach()``) it changes nothing, and the
name goes on holding its graph. Code that writes it means the in-place reading: from that line on, the name is a
constant (a normaliser computed from a clean pass, a reference). When the failing loss reads that name after the
line, the code's own statement says what the graph should have been: the fix binds the result, ``name =
name.detach()``. It is offered first only when every model the name's own statement ran is also run by another
statement of the loop on the loss's path (the loss keeps training them without the name's graph); otherwise it
comes after the other fixes, since detaching would stop the loss from training a model through it.
"""

from __future__ import annotations

import ast

from ..context import Context
from ..edits import Edit
from ..evidence import calls_into
from ..fixes import Fix, Proposal, indent_of, keeping
from ..i18n import T
from ..source import function_of, loop_body_of, names, preceding, statement_at

__all__ = ["discarded_detach_fixes"]


def _discarded(st: ast.stmt) -> str | None:
    """``name`` when ``st`` is ``name.detach()`` alone, its result unused."""
    value = st.value if isinstance(st, ast.Expr) else None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "detach"
        and not value.args
        and isinstance(value.func.value, ast.Name)
    ):
        return value.func.value.id
    return None


def discarded_detach_fixes(ctx: Context) -> tuple[list[Proposal], bool]:
    """The discarded ``.detach()`` statements before the failing backward bound (NOTE [A detach whose result is
    thrown away]); with whether they come first."""
    site, back = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    if site is None or tree is None or back is None:
        return [], False
    function = function_of(tree, back)
    before = [st for st in preceding(tree, back) if function is None or function.lineno < st.lineno]
    found = [(st, name) for st in before if (name := _discarded(st)) is not None and site.holds(st.lineno)]
    if not found:
        return [], False
    body = loop_body_of(tree, back) or []
    proposals: list[Proposal] = []
    first = True
    for st, name in found:
        later = [b for b in before if b.lineno > st.lineno]
        failing = statement_at(tree, back)
        read_there = failing is not None and name in names(failing, ast.Load)
        if not any(name in names(b, ast.Load) for b in later) and not read_there:
            continue  # nothing reads it afterwards: no graph to keep out
        made = [b for b in before if b.lineno < st.lineno and isinstance(b, ast.Assign) and name in names(b, ast.Store)]
        calls = {ast.unparse(c.func) for c in ast.walk(made[-1]) if isinstance(c, ast.Call)} if made else set()
        ran = {m for m in site.modules if any(calls_into(c, m) for c in calls)}
        elsewhere = {
            ast.unparse(c.func)
            for b in body
            if not made or b is not made[-1]
            for c in ast.walk(b)
            if isinstance(c, ast.Call)
        }
        first = first and all(any(calls_into(c, m) for c in elsewhere) for m in ran)
        indent = indent_of(site, st.lineno)
        edit = Edit(site.filename, st.lineno, st.lineno, f"{indent}{name} = {name}.detach()")
        proposals.append(
            keeping(
                ctx,
                Fix(
                    summary=T(
                        "bind what {name}.detach() returns: {name} = {name}.detach(); alone on its line, the detach "
                        "changes nothing and {name} keeps its graph, which the backward then runs into",
                        name=name,
                    ),
                    trains=T(
                        "what the code says: {name} is a constant from that line on; {loss} trains what it reaches "
                        "without going through {name}",
                        name=name,
                        loss=ctx.l,
                    ),
                    edits=(edit,),
                    keeps_forward=True,
                ),
            )
        )
    return proposals, first and bool(proposals)
