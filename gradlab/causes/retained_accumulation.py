"""Cause ``retained_accumulation``: a running total of losses backwarded at every iteration with ``retain_graph=True``;
its fixes."""

from __future__ import annotations

import ast
from dataclasses import replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts
from ..fixes import Fix, Proposal, all_edits, claim, replace_line
from ..i18n import T
from ..loop import Site
from ..rewrite import split_comment
from ..source import loop_body_of, method_call, runs_backward, statement_at


def _added_term(st: ast.stmt, total: str) -> tuple[ast.expr, bool] | None:
    """The term ``st`` adds into ``total`` (``total = total + term``, ``total = term + total``, ``total += term``),
    and whether it stands right of the total; None when ``st`` is no such statement."""
    if isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add):
        if isinstance(st.target, ast.Name) and st.target.id == total:
            return st.value, True
        return None
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
        return None
    if st.targets[0].id != total or not (isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Add)):
        return None
    left, right = st.value.left, st.value.right
    if isinstance(left, ast.Name) and left.id == total:
        return right, True
    if isinstance(right, ast.Name) and right.id == total:
        return left, False
    return None


def retained_total(base: Context, facts: Facts) -> Context | None:
    """``total.backward(retain_graph=True)`` where the loop body adds each iteration's loss into ``total``
    (``total = total + term`` or ``total += term``): every backward goes through all earlier iterations' graphs
    again (their gradients added once more, their weights changed by the steps since). Read from the source of
    the loop around the failing backward; the backward keeps its graph (in the source, or as the tracker saw)."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if site is None or line is None or tree is None:
        return None
    call = method_call(statement_at(tree, line), "backward")
    if not (call is not None and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)):
        return None
    total = call.func.value.id
    retain = any(
        k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
    )
    if not retain and not (facts.failing is not None and facts.failing.keeps_graph):
        return None
    for candidate in loop_body_of(tree, line) or []:
        found = _added_term(candidate, total)
        if found is None or candidate.lineno != candidate.end_lineno or not site.holds(candidate.lineno):
            continue
        term, right = found
        losses = [
            n.id
            for n in ast.walk(term)
            if isinstance(n, ast.Name)
            and isinstance(value := facts.namespace.get(n.id), torch.Tensor)
            and value.grad_fn is not None
        ]
        return replace(
            base,
            carried=total,
            loss=losses[0] if losses else None,
            total=True,
            entry_lineno=candidate.lineno,
            extra={"term": ast.unparse(term), "side": "right" if right else "left"},
        )
    return None


def _backward_follows(site: Site, line: int) -> bool:
    """Another backward runs after the statement at ``line`` in the same iteration of its loop."""
    tree = site.tree()
    body = loop_body_of(tree, line) if tree is not None else None
    return bool(body) and any(st.lineno > line and runs_backward(st) for st in body or [])


def retained_fixes(ctx: Context) -> list[Proposal]:
    """Backward each iteration's term once (no retain_graph), and keep the running total detached, for the log."""
    total, term, site = ctx.carried, ctx.extra.get("term"), ctx.site
    edits: tuple[Edit, ...] = ()
    if site is not None and total and term and ctx.entry_lineno is not None and ctx.backward_line is not None:
        parsed: ast.expr | None
        call: ast.expr | None
        try:
            parsed = ast.parse(term, mode="eval").body
            call = ast.parse(site.text(ctx.backward_line).strip(), mode="eval").body
        except SyntaxError:
            parsed = call = None
        # the term is evaluated once more for its backward: only names and arithmetic, never a call (a forward)
        if (
            parsed is not None
            and isinstance(call, ast.Call)
            and not any(isinstance(n, ast.Call) for n in ast.walk(parsed))
        ):
            alone = term if isinstance(parsed, (ast.Name, ast.Attribute)) else f"({term})"
            body, comment = split_comment(site.text(ctx.entry_lineno).strip())
            if body.startswith(f"{total} +="):
                added = f"{total} += {alone}.detach()"
            elif ctx.extra.get("side") == "right":
                added = f"{total} = {total} + {alone}.detach()"
            else:
                added = f"{alone}.detach() + {total}"
                added = f"{total} = {added}"
            # retain_graph stays when another backward follows in the iteration: it may go through this graph
            # again (a GAN's generator loss through the discriminator's graph); else the total was its only reason
            later = _backward_follows(site, ctx.backward_line)
            keywords = ", ".join(ast.unparse(k) for k in call.keywords if later or k.arg != "retain_graph")
            arguments = ", ".join([*(ast.unparse(a) for a in call.args), *([keywords] if keywords else [])])
            edits = all_edits(
                replace_line(ctx, ctx.entry_lineno, added + comment),
                replace_line(ctx, ctx.backward_line, f"{alone}.backward({arguments})"),
            )
    name = total or T("the running total")
    part = term or T("each iteration's loss")
    return [
        Proposal(
            Fix(
                summary=T(
                    "backward each iteration's {part} once and keep {name} detached, for the log: .grad adds the "
                    "iterations' gradients up until the step",
                    part=part,
                    name=name,
                ),
                trains=T(
                    "{loss} trains what it reaches, once per iteration, accumulated in .grad until the step; {name} "
                    "takes no part in backward",
                    loss=ctx.l,
                    name=name,
                ),
                edits=edits,
                claims=claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
            describe=True,
        ),
        Proposal(
            Fix(
                alternative=True,
                summary=T(
                    "call {name}.backward() once, when the accumulation ends (right before the step), without "
                    "retain_graph, and start {name} again after the step",
                    name=name,
                ),
                trains=T(
                    "every iteration's loss trains what it reaches through one backward (memory grows with the "
                    "accumulation)"
                ),
                claims=claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]
