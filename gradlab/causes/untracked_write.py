"""Cause ``untracked_write``: a write autograd could not record (under ``no_grad()``, through ``.detach()`` or
``.data``) overwrote a saved tensor: a model used as a target, a buffer read where it is saved; their fixes."""

from __future__ import annotations

import re
from dataclasses import replace

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, Problem, calls_name, in_site, receiver, stepped_params, torch_alias
from ..fixes import Fix, Proposal, all_edits, claim, edit_at, indent_of, keeping, span_of
from ..i18n import T
from ..rewrite import replace_reads
from ..saved import Write
from ..source import statement_at


def target_context(ctx: Context, p: Problem, facts: Facts) -> Context | None:
    """A model whose output is a target: its parameter was written without autograd before the backward.

    The pattern (a mean teacher, a momentum encoder): a parameter of model ``M``
    (by its name ``M.layer.weight``) is written under ``torch.no_grad()`` (an EMA
    update) after the statement of the failing function that ran ``M``'s forward,
    and no optimizer (of the frame, or seen stepping) holds ``M``'s parameters: nothing trains
    ``M`` by gradient, so its forward can run under ``torch.no_grad()``. Its
    output is then a constant of the loss; what the optimizers' parameters get
    does not change.
    """
    site, model = facts.site, ctx.model
    if site is None or model is None or model not in site.modules or not site.optimizers:
        return None
    held = stepped_params(facts)  # the frame's optimizers and every optimizer seen stepping
    if site.modules[model] & held:
        return None
    line = in_site(facts, p.saved_at)
    tree = site.tree()
    st = statement_at(tree, line) if tree is not None and line is not None else None
    alias = torch_alias(facts.namespace)
    if st is None or alias is None or not calls_name(st, model):
        return None
    return replace(ctx, target=model, target_line=st.lineno, grad_off=f"{alias}.no_grad")


def copy_context(ctx: Context, p: Problem, w: Write) -> Context | None:
    """A tensor written without autograd through an expression the line that saved it also reads.

    The pattern (a running statistic kept in a buffer): ``out = x / self.running_std``
    saved the buffer for backward, then ``self.running_std.mul_(...)`` under
    ``torch.no_grad()`` updated it before the backward ran. Reading a copy on the
    saving line (``self.running_std.clone()``) keeps the values the forward used;
    the update still changes the buffer. Read from the write's own line (its
    receiver) and the saved tensor's forward line.
    """
    loc, saved = w.location, p.saved_at
    if loc is None or saved is None or (saved.filename == loc.filename and saved.lineno == loc.lineno):
        return None
    target = receiver(loc.code, re.escape(w.op)) if w.op.endswith("_") else None
    if target is None or not re.search(rf"(?<![\w.]){re.escape(target)}(?![\w(])", saved.code or ""):
        return None
    return replace(ctx, copy_at=saved, copy_of=target)


def _as_target(ctx: Context) -> list[Proposal]:
    """Run the forward of a model no optimizer trains under no_grad (``causes._target_context`` reads the pattern)."""
    site, line = ctx.site, ctx.target_line
    if site is None or line is None or ctx.target is None or ctx.grad_off is None:
        return []
    span = span_of(site, line)
    if span is None:
        return []
    indent = indent_of(site, span[0])
    block = [f"{indent}with {ctx.grad_off}():", *("    " + site.text(i) for i in range(span[0], span[1] + 1))]
    reach = tuple(m for m in ctx.reach if m != ctx.target)
    fix = Fix(
        summary=T(
            "run {model}'s forward under torch.no_grad(): no optimizer holds {model}'s parameters, so its output is a "
            "target, and its in-place update then overwrites nothing autograd saved",
            model=ctx.target,
        ),
        trains=T(
            "the same as intended: {loss} trains the parameters its optimizers step, as before; {model} gets no "
            "gradient (no optimizer used it)",
            loss=ctx.l,
            model=ctx.target,
        ),
        edits=(Edit(site.filename, span[0], span[1], "\n".join(block)),),
        claims=claim(ctx, reach),
    )
    return [Proposal(fix, reach, True)]


def _read_copy(ctx: Context) -> list[Proposal]:
    """Read a copy where the forward saved the written tensor (``causes._copy_context`` reads the pattern)."""
    loc, expr = ctx.copy_at, ctx.copy_of
    if loc is None or expr is None:
        return []
    line = loc.code.strip()
    new = replace_reads(line, expr, f"{expr}.clone()")
    if new is None and line.startswith("return "):
        new = re.sub(rf"(?<![\w.]){re.escape(expr)}(?![\w(])", f"{expr}.clone()", line, count=1)
    fix = Fix(
        summary=T(
            "read a copy of {expr} where the forward uses it (at {where}): the in-place update then changes {expr}, "
            "not the value autograd saved",
            expr=expr,
            where=loc.where,
        ),
        trains=T(
            "the same as intended: the gradient of the forward as it ran; {expr} is still updated in place", expr=expr
        ),
        edits=all_edits(edit_at(ctx, loc, new)),
    )
    return [keeping(ctx, fix)]


def untracked_fixes(ctx: Context) -> list[Proposal]:
    return [*_as_target(ctx), *_read_copy(ctx), *_untracked_general(ctx)]


def _untracked_general(ctx: Context) -> list[Proposal]:
    where = T(" at {where}", where=ctx.where) if ctx.where else ""
    tensor = ctx.tensor or T("the tensor")
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "do not write to {tensor} while a graph that saved it still needs it: move the write{where} after "
                    "{loss}.backward(), or write to a copy ({tensor}.clone())",
                    tensor=tensor,
                    where=where,
                    loss=ctx.l,
                ),
                trains=T("the same as intended: the write changed values, not which loss trains which parameters"),
            ),
        ),
        Proposal(
            Fix(
                summary=T(
                    "if the write is meant to be part of the model, make it an out-of-place op with grad enabled"
                ),
                trains=T("the write's result then takes part in backward, so the gradient also flows through it"),
                claims=claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]
