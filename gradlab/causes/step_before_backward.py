"""Cause ``step_before_backward``: the optimizer step meant for a loss's gradient runs between its forward and its
backward; its fixes."""

from __future__ import annotations

from dataclasses import replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, value_of
from ..fixes import Fix, Proposal, all_edits, claim, insert_lines, outer_models
from ..i18n import T
from ..saved import Write
from ..source import called_on, calls_method, loop_body_of, runs_backward
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
        optimizer = called_on(st, "step")
        if optimizer is None or st.lineno != st.end_lineno or not site.holds(st.lineno) or optimizer not in stepping:
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


def stepped_again(ctx: Context, facts: Facts) -> Context | None:
    """The optimizer whose step wrote the saved weight steps again right after the failing backward, with no
    ``zero_grad()`` in between (NOTE [One optimizer stepped twice on one forward]): the context with
    ``extra["delete_step"]``, the first step's line."""
    site, line, step, optimizer = facts.site, facts.backward_line, ctx.step_line, ctx.optimizer
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or step is None or not optimizer or not step < line:
        return None
    body = loop_body_of(tree, line)
    if not body:
        return None
    statement = next((st for st in body if st.lineno == step), None)
    if statement is None or not site.holds(step) or statement.end_lineno != step:
        return None  # the step is a statement of the loop's own body, on one line
    later = [st for st in body if st.lineno > line]
    between = [st for st in body if step < st.lineno <= line]
    if any(calls_method(st, ("zero_grad",)) for st in between):
        return None
    again = next((st for st in later if called_on(st, "step") == optimizer), None)
    before_again = [st for st in later if again is not None and st.lineno < again.lineno]
    if again is None or any(calls_method(st, ("zero_grad",)) or runs_backward(st) for st in before_again):
        return None
    earlier = value_of(ctx.earlier, facts.namespace) if ctx.earlier else None
    if not isinstance(earlier, torch.Tensor) or earlier.grad_fn is None or not ctx.reach:
        return None  # the earlier loss, still bound: its backward kept the graph the failing one shares
    return replace(ctx, extra={**ctx.extra, "delete_step": str(step)})


def one_step_fixes(ctx: Context) -> list[Proposal]:
    """Delete the first of the two steps: one step on both backwards' gradients, from the one forward."""
    site, line = ctx.site, ctx.extra.get("delete_step")
    if site is None or not line or not ctx.earlier:
        return []
    at = int(line)
    return [
        Proposal(
            Fix(
                summary=T(
                    "delete {step} between the backward of {earlier} and that of {loss}: {optimizer} steps again "
                    "after the backward of {loss} with no zero_grad() in between, so one step on both gradients, "
                    "from the one forward, is what the loop computes",
                    step=site.text(at).strip(),
                    earlier=ctx.earlier,
                    loss=ctx.l,
                    optimizer=ctx.optimizer or "",
                ),
                trains=T(
                    "{earlier} and {loss} train {models} in one step on the sum of their gradients; as written the "
                    "first step applied {earlier}'s gradient, and the second would have applied it again",
                    earlier=ctx.earlier,
                    loss=ctx.l,
                    models=", ".join(outer_models(ctx.reach)),
                ),
                edits=(Edit(site.filename, at, at, ""),),
                claims=((ctx.earlier, outer_models(ctx.reach)), *claim(ctx, outer_models(ctx.reach))),
                keeps_forward=True,
            ),
            None,
            True,
        )
    ]


# NOTE [One optimizer stepped twice on one forward]
# Two losses of one forward (a minimax's two phases, two tasks' losses) backwarded in turn through the graph kept
# between them, the same optimizer stepped after each, with no zero_grad() in between: the first step rewrites
# weights the second loss's graph saved (the in-place error), and as written the second step would apply the
# first loss's gradient a second time. The training the second step computes is one step on both gradients: the
# first step deleted, and the trains line says so. The other reading (a second update on a fresh forward, after a
# zero_grad()) is the recompute that comes next. Offered when nothing but the second backward lies between the
# two steps; a zero_grad() in between means two updates, each on its own loss, and the recompute comes first.
