"""Cause ``closure_step``: the closure an optimizer's step calls (``LBFGS.step(closure)``) backwards through a forward
computed outside it; the step calls it again, and that graph is freed.

The pattern, read from the code: the failing backward is in a function that the
file passes to an optimizer's ``step()`` (positionally or as ``closure=``); the
closure reads a tensor with a graph that it does not compute itself (a free
variable, an argument of the function around it). An optimizer that calls its
closure several times per step (LBFGS re-evaluates the loss) backwards that
tensor's graph once per call; the second finds it freed. The fix runs the
forward inside the closure: the statement of the file that computes that tensor
(``pred = model(x)``), first in the closure's body. Each call then builds its own
graph from the current weights, which is what a closure is for.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import torch

from ..context import Context
from ..evidence import Facts
from ..fixes import Fix, Proposal, claim, insert_lines
from ..i18n import T
from ..loop import LoopIntent, Plan, modules_of
from ..source import function_of, names, parse

__all__ = ["ClosureContext", "closure_context", "closure_fixes"]


@dataclass(frozen=True)
class ClosureContext(Context):
    """Where the closure is (``closure``: its name), what to compute in it (``statements``), and before which line."""

    closure: str = ""
    statements: tuple[str, ...] = ()
    before: int | None = None


def _stepper(tree: ast.Module, name: str) -> ast.Call | None:
    """The ``X.step(name)`` (or ``X.step(closure=name)``) call of the file that runs the closure ``name``."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step":
            given = [*n.args, *(k.value for k in n.keywords if k.arg in (None, "closure"))]
            if any(isinstance(a, ast.Name) and a.id == name for a in given):
                return n
    return None


def closure_context(base: Context, facts: Facts) -> ClosureContext | None:
    """The closure pattern (the module's docstring), or None."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None:
        return None
    fn = function_of(tree, line)
    step = _stepper(tree, fn.name) if fn is not None else None
    if fn is None or step is None:
        return None
    bound = names(fn, ast.Store) | {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    outside = sorted(
        n
        for n in names(fn, ast.Load) - bound
        if isinstance(value := facts.namespace.get(n), torch.Tensor) and value.grad_fn is not None
    )
    if not outside:
        return None
    statements: list[str] = []
    for name in outside:
        made = _computed_by(site.source, name, fn)
        if made is None:
            return None
        statements.append(made)
    reads = [st for st in fn.body if names(st, ast.Load) & set(outside)]
    before = reads[0].lineno if reads else fn.body[0].lineno
    # what the closure's loss is for: the optimizer whose step runs it steps on its gradient (the record shows
    # only the zero_grad() of the step's next call, the step began before the closure ran)
    optimizer = ast.unparse(step.func.value)  # type: ignore[attr-defined]
    held = site.optimizers.get(optimizer, frozenset())
    intent = LoopIntent((Plan(optimizer, modules_of(held, site.modules), step.lineno, True),)) if held else base.intent
    fields = {f: getattr(base, f) for f in Context.__dataclass_fields__}
    fields.update(intent=intent, intent_note=None)
    return ClosureContext(
        **fields,
        closure=fn.name,
        statements=tuple(statements),
        before=before,
    )


def _computed_by(source: str, name: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The one-line statement outside ``fn`` that binds ``name`` by calling something (a forward), as written."""
    tree = parse(source)
    if tree is None:
        return None
    found = [
        st
        for st in ast.walk(tree)
        if isinstance(st, ast.Assign)
        and not (fn.lineno <= st.lineno <= (fn.end_lineno or fn.lineno))
        and st.lineno == st.end_lineno
        and any(isinstance(t, ast.Name) and t.id == name for t in st.targets)
        and isinstance(st.value, ast.Call)
    ]
    if len({ast.unparse(st) for st in found}) != 1:
        return None  # none, or several different ones: gradlab cannot tell which
    return ast.unparse(found[0])


def closure_fixes(ctx: Context) -> list[Proposal]:
    assert isinstance(ctx, ClosureContext)
    edit = insert_lines(ctx, ctx.before, "\n".join(ctx.statements))
    return [
        Proposal(
            Fix(
                summary=T(
                    "compute the forward inside {closure}(): the optimizer calls it several times a step, "
                    "and each call needs a graph of its own",
                    closure=ctx.closure,
                ),
                trains=T("{loss} trains what it reaches, from a fresh forward at each call of the closure", loss=ctx.l),
                edits=(edit,) if edit is not None else (),
                claims=claim(ctx, ctx.reach),
            ),
            ctx.reach,
            True,
        )
    ]
