"""Cause ``step_before_backward``: the optimizer step meant for a loss's gradient runs between its forward and its
backward; its fixes."""

from __future__ import annotations

import ast
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..evidence import Facts
from ..fixes import Fix, Proposal, all_edits, claim, insert_lines
from ..i18n import T
from ..saved import Write
from ..source import loop_body_of, runs_backward
from .chained import recompute_fix


def step_too_early(base: Context, facts: Facts, write: Write | None) -> Context | None:
    """``opt.step()`` between a loss's forward and its backward, as a statement of the loop body that no backward
    precedes in the iteration, where ``opt`` is an optimizer the loop steps on that loss's gradient: the step
    meant for this backward runs too early (it steps on the previous iteration's gradient). With the step's
    write known (under ``track()``), it must be that statement's."""
    site, line, intent = facts.site, facts.backward_line, base.intent
    if site is None or line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, line) if tree is not None else None
    if not body:
        return None
    here = next((i for i, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
    if here is None:
        return None
    reach = set(base.reach)
    stepping = (
        {p.optimizer for p in intent.plans if p.steps and (not reach or reach & set(p.modules))} if intent else set()
    )
    # an optimizer of the frame holding parameters the loss reaches, whatever the order says it is for
    reached: frozenset[int] = frozenset().union(*(site.modules.get(m, frozenset()) for m in reach))
    stepping |= {name for name, params in site.optimizers.items() if params & reached}
    for st in body[:here]:
        if runs_backward(st):
            return None  # a backward before it in the iteration: the step may be that loss's (the course's loop)
        call = st.value if isinstance(st, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "step"
            and st.lineno == st.end_lineno
            and site.holds(st.lineno)
        ):
            continue
        optimizer = ast.unparse(call.func.value)
        if optimizer not in stepping:
            continue
        if write is not None and write.location is not None and write.location.lineno != st.lineno:
            continue
        # the loop as written steps before it has this loss's gradient: its order is the bug, not the intent
        return replace(base, optimizer=optimizer, step_line=st.lineno, intent=None)
    return None


def step_after_fixes(ctx: Context) -> list[Proposal]:
    """Move the step that ran between the loss's forward and its backward to right after that backward."""
    site, step, back = ctx.site, ctx.step_line, ctx.backward_line
    edits: tuple[Edit, ...] = ()
    if site is not None and step is not None and back is not None and site.holds(step):
        insert = insert_lines(ctx, back, site.text(step).strip(), after=True)
        edits = all_edits(Edit(site.filename, step, step, ""), insert)
    proposals = [
        Proposal(
            Fix(
                summary=T(
                    "move {step} after {loss}.backward(): as written it runs before the backward and steps on the "
                    "previous iteration's gradient",
                    step=ctx.step,
                    loss=ctx.l,
                ),
                trains=T(
                    "{loss} trains what it reaches ({models}) through {step}, each step on its own iteration's "
                    "gradient",
                    loss=ctx.l,
                    models=", ".join(ctx.reach) or T("its parameters"),
                    step=ctx.step,
                ),
                edits=edits,
                claims=claim(ctx, ctx.reach),
            ),
            None,
            True,  # the order the loop's optimizer asks for: its step after the gradient it steps on
        )
    ]
    again = recompute_fix(ctx)
    if again is not None:  # the other reading: the step is meant to use the previous iteration's gradient
        proposals.append(
            replace(
                again,
                fix=replace(again.fix, intent=T("if each step is meant to use the previous iteration's gradient")),
                describe=False,
            )
        )
    return proposals
