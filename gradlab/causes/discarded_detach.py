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
import inspect
from typing import TYPE_CHECKING

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import calls_into
from ..fixes import Fix, Proposal, indent_of, keeping, source_of
from ..i18n import T
from ..location import Location
from ..source import function_of, loop_body_of, names, parse, preceding, statement_at
from .kept_state import detach_expr, tensors_with_graph

if TYPE_CHECKING:
    from ..evidence import Facts

__all__ = ["discarded_detach_fixes", "hollow_detach"]


# NOTE [A detach method that detaches nothing]
# A class that carries state between chunks of a sequence (an LSTM's (h, c) and the last prediction, kept on a
# small state object) may have its own detach() that the loop calls after each backward, written as
# ``for tensor in self._all: tensor = tensor.detach()``: each detached tensor is bound to the loop's variable and
# dropped, the attributes keep their graph, and the next chunk's backward runs into the freed one. The method's
# name and the loop's call say what was meant. Found on the objects of the failing frame: a method of the user's
# class, called on the object in the loop's body, whose every .detach() result is bound to the variable of a for
# loop (or thrown away); the object's attributes that hold a graph are its state. The fix writes the method's body
# anew: each such attribute bound to its detached value (a tuple of tensors element by element).


def _hollow(method: ast.FunctionDef) -> bool:
    """``method`` calls ``.detach()`` and binds every result only to a for loop's variable or nothing."""
    loops = {n.target.id for n in ast.walk(method) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)}
    detaches = [
        n
        for n in ast.walk(method)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "detach"
    ]
    if not detaches:
        return False
    for st in ast.walk(method):
        if (
            isinstance(st, ast.Assign)
            and any(n in detaches for n in ast.walk(st.value))
            and not all(isinstance(t, ast.Name) and t.id in loops for t in st.targets)
        ):
            return False  # a detach bound to a name that outlives the loop: it does something
        if isinstance(st, ast.Return) and st.value is not None:
            return False
    return True


def hollow_detach(facts: Facts) -> dict[str, str] | None:
    """The method of a frame object's class the loop calls to detach its state, and the object's attributes that
    hold a graph, when that method detaches nothing (NOTE [A detach method that detaches nothing]); as ``extra``
    entries of the context, None otherwise."""
    site, back = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    body = loop_body_of(tree, back) if tree is not None and back is not None else None
    if site is None or not body:
        return None
    for st in body:
        call = st.value if isinstance(st, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
        ):
            continue
        obj = facts.namespace.get(call.func.value.id)
        if obj is None or isinstance(obj, (torch.nn.Module, torch.Tensor, type)) or not hasattr(obj, "__dict__"):
            continue
        fn = getattr(type(obj), call.func.attr, None)
        if not inspect.isfunction(fn) or call.args or call.keywords:
            continue
        filename = fn.__code__.co_filename
        module = parse(source_of(filename))
        if module is None:
            continue
        first_line = fn.__code__.co_firstlineno  # the def's line, or its first decorator's
        method = next(
            (
                n
                for n in ast.walk(module)
                if isinstance(n, ast.FunctionDef)
                and n.name == fn.__name__
                and first_line in (n.lineno, *(d.lineno for d in n.decorator_list))
            ),
            None,
        )
        if method is None or not _hollow(method) or not method.body:
            continue
        state = [
            f"self.{name} = {detach_expr(f'self.{name}', None if isinstance(value, torch.Tensor) else type(value).__name__)}"
            for name, value in vars(obj).items()
            if not name.startswith("_") and tensors_with_graph(value)
        ]
        if not state:
            continue
        first, last = method.body[0], method.body[-1]
        docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        start = method.body[1].lineno if docstring and len(method.body) > 1 else first.lineno
        return {
            "hollow_file": filename,
            "hollow_lines": f"{start} {last.end_lineno or last.lineno}",
            "hollow_method": f"{call.func.value.id}.{call.func.attr}()",
            "hollow_body": "\n".join(state),
        }
    return None


def _hollow_fix(ctx: Context) -> Proposal | None:
    """The method's body written to detach the object's state (NOTE [A detach method that detaches nothing])."""
    filename, lines, body = ctx.extra.get("hollow_file"), ctx.extra.get("hollow_lines"), ctx.extra.get("hollow_body")
    if not filename or not lines or not body:
        return None
    start, end = (int(k) for k in lines.split())
    text = source_of(filename).splitlines()
    if not 0 < start <= end <= len(text):
        return None
    indent = text[start - 1][: len(text[start - 1]) - len(text[start - 1].lstrip())]
    new = "\n".join(indent + line for line in body.split("\n"))
    return keeping(
        ctx,
        Fix(
            summary=T(
                "make {call} detach the state it is called for: its loop binds each detached tensor to the loop's "
                "variable and drops it, so the attributes keep their graph ({where})",
                call=ctx.extra.get("hollow_method", ""),
                where=Location(filename, start).where,
            ),
            trains=T(
                "what the code says: each chunk's {loss} trains through that chunk's graph only; the state carries "
                "its values to the next chunk, without the graph",
                loss=ctx.l,
            ),
            edits=(Edit(filename, start, end, new),),
            keeps_forward=True,
        ),
    )


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
    hollow = _hollow_fix(ctx)
    if hollow is not None:  # NOTE [A detach method that detaches nothing]: the code's own call says what it meant
        return [hollow], True
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
