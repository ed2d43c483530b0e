"""Fixes from general rewrites for a graph an earlier backward freed (NOTE [Candidates for a freed graph]).

Keep that graph for the failing backward and send the failing loss's gradient only into the models the code's
optimizers step on it; detach a part of the graph no optimizer steps where it was made or read; and, for a
derivative the loss is computed from, keep its graph. Ranked and judged like :mod:`gradlab.candidates`' rewrites
(NOTE [Candidates] there).
"""

from __future__ import annotations

import ast
import re

from .context import Context
from .edits import Edit
from .fixes import (
    Fix,
    Proposal,
    all_edits,
    backward_with,
    claim,
    edit_at,
    insert_lines,
    keeping,
    outer_models,
    replace_line,
    source_of,
    tensor_names,
)
from .i18n import T, Text, join
from .location import Location
from .rewrite import detached_value, inputs_keyword, optimizers_inputs, replace_reads, with_keyword
from .source import function_of, loop_around, names, parse, preceding, statement_at

__all__ = ["apart_fixes", "freed_fixes", "routed_fixes"]


def _feeds_loss(ctx: Context, at: Location) -> bool:
    """What the statement of the failing function that ran ``at`` (itself, or the call that led to it) binds flows,
    statement by statement, into the failing loss (NOTE [A gradient the loss is built from])."""
    site, line = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not ctx.loss:
        return False
    lines = [at.lineno] if at.filename == site.filename and site.holds(at.lineno) else []
    lines += [c.lineno for c in at.callers if c.filename == site.filename and site.holds(c.lineno)]
    if not lines:
        return False
    before = preceding(tree, line)
    start = next((i for i, st in enumerate(before) if st.lineno <= lines[0] <= (st.end_lineno or st.lineno)), None)
    if start is None:
        return False
    tainted = names(before[start], ast.Store)
    for st in before[start + 1 :]:
        if names(st, ast.Load) & tainted:
            tainted |= names(st, ast.Store)
    try:
        loss_names = names(ast.parse(ctx.loss, mode="eval"), ast.Load)
    except SyntaxError:
        return False
    return bool(loss_names & tainted)


# NOTE [A gradient the loss is built from]
# ``saliency = input_gradient(log_probs, x)`` and then ``loss = ce + w * saliency.pow(2).mean()`` in the training
# loop: the loss is built from the gradient (an input-gradient penalty, "right for the right reasons"). Told by what
# the failing function's statement that ran the ``autograd.grad`` (itself, or the call that led to it) binds: when
# it flows, statement by statement, into the failing loss, the derivative is part of what the loss is computed
# from (NOTE [A derivative the loss is computed from]); ``retain_graph=True`` there would run, but the gradient
# would be a constant and the penalty would train nothing, silently.


def _keep_and_route(ctx: Context) -> Proposal | None:
    """The failing backward run on the graph as the code built it: the earlier backward keeps what it would free
    (``retain_graph=True``) where the failing loss needs it, and the failing backward goes into the models the
    loop's optimizers step on it (``inputs=``) where a step in between, or the freed part, lies elsewhere."""
    intent, site, at = ctx.intent, ctx.site, ctx.freeing_at
    if intent is None or site is None or at is None or not ctx.loss or ctx.backward_line is None:
        return None
    if ctx.step_between and not ctx.stepped_between:
        return None  # weights moved in between by an update the record cannot name (SAM's ascent, extrapolate())
    trained = set(intent.trained) & set(ctx.reach)
    if not trained or trained & set(ctx.stepped_between) or trained & set(ctx.behind_stepped):
        return None  # as written, the loss would train a stepped model on its old weights: a recompute's case
    models = outer_models(trained)
    retain = bool(trained & set(ctx.freed_reach))  # the freed part lies on the way to the trained models
    route = bool(ctx.stepped_between) or not retain
    inputs = inputs_keyword(models, tensor_names(ctx, models)) if route else None
    if route and inputs is None:
        return None
    here = Location(site.filename, ctx.backward_line)
    same = at.filename == here.filename and at.lineno == here.lineno
    failing_text = site.text(ctx.backward_line)
    edits: list[Edit | None] = []
    if retain and not same:
        code = at.code
        method = (
            "grad" if code and re.search(r"autograd\.grad\(", code) else "backward"
        )  # torch.autograd.grad frees too
        edits.append(edit_at(ctx, at, with_keyword(code, method, "retain_graph=True") if code else None))
    text: str | None = failing_text
    if route and inputs is not None:
        text = with_keyword(text, "backward", inputs) if text else None
    if retain and same and text is not None:
        text = with_keyword(text, "backward", "retain_graph=True")
    if text != failing_text:
        edits.append(replace_line(ctx, ctx.backward_line, text))
    found = all_edits(*edits)
    if not found:
        return None
    names = join(list(models), T(" and "))
    if retain and route:
        summary = T(
            "keep the graph the backward at {where} frees (retain_graph=True there), and backward {loss} into "
            "{models}'s parameters only ({inputs})",
            where=at.where,
            loss=ctx.l,
            models=names,
            inputs=inputs or "",
        )
    elif retain:
        summary = T(
            "keep the graph the backward at {where} frees (retain_graph=True there): {loss} goes through it again",
            where=at.where,
            loss=ctx.l,
        )
    else:
        summary = T(
            "backward {loss} into {models}'s parameters only ({inputs}): it then never enters the part of the graph "
            "the backward at {where} freed",
            loss=ctx.l,
            models=names,
            inputs=inputs or "",
            where=at.where,
        )
    return Proposal(
        Fix(
            keeps_forward=True,
            summary=summary,
            trains=T(
                "{loss} trains {models}, from the forward as it ran, as your loop's optimizers ask",
                loss=ctx.l,
                models=names,
            ),
            cost=T("the kept graph's saved tensors stay in memory until the backward of {loss}", loss=ctx.l)
            if retain
            else None,
            edits=tuple(sorted(found, key=lambda e: (e.filename, e.start))),
            claims=claim(ctx, models),
        ),
        models,
        True,
    )


def _unstepped_trains(ctx: Context, at: Location) -> Text:
    """What a detach of a part no optimizer steps on the failing loss trains (the part made at ``at``)."""
    return T(
        "{loss} trains what it trained, with the same values: the optimizers that hold the parameters below "
        "{where} do not step on {loss}, so no update changes",
        loss=ctx.l,
        where=at.where,
    )


def _detach_where_read(ctx: Context) -> Proposal | None:
    """``.detach()`` where the failing loss reads the part made in another function, which other losses train
    through (``self.fake_clean.detach()`` in the critic's loss; NOTE [A part no optimizer steps] in
    :mod:`gradlab.evidence`)."""
    site, at = ctx.site, ctx.made_at
    reads = [item.split(":", 1) for item in ctx.extra.get("made_read", "").split(";") if item]
    if site is None or at is None or not reads:
        return None
    edits = []
    for line, expr in reads:
        new = replace_reads(site.text(int(line)), expr, f"{expr}.detach()")
        edits.append(edit_at(ctx, Location(site.filename, int(line)), new.strip() if new else None))
    expr = reads[0][1]
    return keeping(
        ctx,
        Fix(
            keeps_forward=True,
            summary=T(
                "detach {tensor} where {loss} reads it (at {where}): the part of the graph below it, made at "
                "{made}, ends in parameters that no optimizer steps on {loss}, and each backward of {loss} after the "
                "first finds it freed; the other losses that read {tensor} keep its graph",
                tensor=expr,
                loss=ctx.l,
                where=", ".join(Location(site.filename, int(line)).where for line, _e in reads),
                made=at.where,
            ),
            trains=_unstepped_trains(ctx, at),
            edits=all_edits(*edits),
        ),
    )


def _detach_where_made(ctx: Context) -> Proposal | None:
    """``.detach()`` on the line that made the freed part, when it reaches only parameters no optimizer holds
    (NOTE [A part no optimizer steps] in :mod:`gradlab.evidence`)."""
    at = ctx.made_at
    if at is None or not at.code or "autograd.grad(" in at.code:  # autograd.grad returns a tuple: no .detach()
        return None
    if ctx.extra.get("made_read"):
        return _detach_where_read(ctx)
    edit = edit_at(ctx, at, detached_value(at.code.strip()))
    if edit is None:
        return None
    # the other lines that made freed parts of the same kind (NOTE [A part no optimizer steps]): all, or only this one
    more = [edit_at(ctx, other, detached_value(other.code.strip())) if other.code else None for other in ctx.made_also]
    if any(m is None for m in more):
        more = []
    return keeping(
        ctx,
        Fix(
            keeps_forward=True,
            summary=T(
                "detach the tensor made at {where}: the part of the graph below it ends in parameters that no "
                "optimizer steps on {loss}, and each backward of {loss} after the first finds it freed",
                where=at.where,
                loss=ctx.l,
            )
            if ctx.made_unstepped
            else T(
                "detach the tensor made at {where}: the part of the graph below it ends in parameters no optimizer "
                "holds, and a backward through it again finds it freed",
                where=at.where,
            ),
            trains=_unstepped_trains(ctx, at)
            if ctx.made_unstepped
            else T(
                "{loss} trains what it trained, with the same values: no optimizer steps the parameters below "
                "{where}, so no update changes",
                loss=ctx.l,
                where=at.where,
            ),
            edits=all_edits(edit, *more),
        ),
    )


def _detach_before_loop(ctx: Context) -> Proposal | None:
    """The frame's name whose graph holds the freed part, detached once before the loop (NOTE [A part made before
    the loop] in :mod:`gradlab.evidence`)."""
    found = [item.partition(":")[::2] for item in ctx.extra.get("made_outside", "").split(",") if item]
    site, line = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    loop = loop_around(tree, line) if tree is not None and line is not None else None
    if not found or loop is None:
        return None
    statements = []
    for one, kind in found:
        value = {"list": f"[t.detach() for t in {one}]", "tuple": f"tuple(t.detach() for t in {one})"}
        statements.append(f"{one} = {value.get(kind, f'{one}.detach()')}")
    edit = insert_lines(ctx, loop.lineno, "\n".join(statements))
    if edit is None:
        return None
    name = ", ".join(one for one, _ in found)
    return keeping(
        ctx,
        Fix(
            keeps_forward=True,
            summary=T(
                "detach {name} once, before the loop: each backward of {loss} goes into the graph {name} came with, "
                "and the second finds it freed; that part ends in parameters no optimizer of this loop holds",
                name=name,
                loss=ctx.l,
            ),
            trains=T(
                "{loss} trains what it trained, with the same values; its gradient no longer reaches the parameters "
                "{name} was computed from, which no optimizer of the loop steps",
                loss=ctx.l,
                name=name,
            ),
            edits=all_edits(edit),
        ),
    )


def _bound_before_loop(ctx: Context) -> bool:
    """Each name detached once before the loop is bound by a statement before that loop (not only inside an
    enclosing loop's body further down): the inserted line reads it bound."""
    names_ = [item.partition(":")[0] for item in ctx.extra.get("made_outside", "").split(",") if item]
    site, line = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    loop = loop_around(tree, line) if tree is not None and line is not None else None
    if not names_ or loop is None or tree is None:
        return False
    bound = {n for st in preceding(tree, loop.lineno) for n in names(st, ast.Store)}
    return all(n in bound for n in names_)


def apart_fixes(ctx: Context) -> list[Proposal]:
    """The general candidates for a freed graph whose freed part no optimizer steps, whatever its cause."""
    made, before = _detach_where_made(ctx), _detach_before_loop(ctx)
    at, site = ctx.made_at, ctx.site
    # parameters below are held by the optimizer of another loss (an autoencoder pretrained before the classifier's
    # loop), and the line that made the part is another function's (the autoencoder's forward): a detach there would
    # cut that loss's training too; detaching the name once before the loop leaves it as it was
    shared = (
        ctx.made_unstepped
        and at is not None
        and site is not None
        and at.filename == site.filename
        and not (site.holds(at.lineno))
    )
    found = [before, made] if shared and before is not None and _bound_before_loop(ctx) else [made, before]
    return [f for f in found if f is not None]


def _route_into_held(ctx: Context, rewritten: bool = False) -> Proposal | None:
    """The failing backward into the parameters its optimizers hold, read by parameters where the names of models
    are too coarse (NOTE [A backward routed into what its optimizers hold] in :mod:`gradlab.evidence`)."""
    site, intent = ctx.site, ctx.intent
    if not ctx.routed or site is None or intent is None or ctx.backward_line is None or not ctx.loss:
        return None
    inputs = optimizers_inputs(ctx.routed)
    edit = backward_with(ctx, ctx.backward_line, inputs) if inputs else None
    if edit is None:
        return None
    trained = tuple(sorted(set(intent.trained) & set(ctx.reach))) or intent.trained
    return Proposal(
        Fix(
            keeps_forward=True,
            summary=T(
                "backward {loss} into the parameters {optimizers} holds only ({inputs}): the step in between "
                "changed none of them, and the backward then runs no node that saved the weights it rewrote",
                loss=ctx.l,
                optimizers=join(list(ctx.routed), T(" and ")),
                inputs=inputs or "",
            )
            if rewritten
            else T(
                "backward {loss} into the parameters {optimizers} holds only ({inputs}): the step in between "
                "changed none of them, and the backward then enters no part of the graph that was freed",
                loss=ctx.l,
                optimizers=join(list(ctx.routed), T(" and ")),
                inputs=inputs or "",
            ),
            trains=T(
                "{loss} trains what {optimizers} holds, from the forward as it ran, as your loop's optimizers ask",
                loss=ctx.l,
                optimizers=join(list(ctx.routed), T(" and ")),
            ),
            edits=(edit,),
        ),
        trained,
        True,
    )


def routed_fixes(ctx: Context) -> list[Proposal]:
    """The failing backward into what its optimizers hold, where a step rewrote weights it need not enter (NOTE [A
    backward routed into what its optimizers hold] in :mod:`gradlab.evidence`)."""
    found = _route_into_held(ctx, rewritten=True)
    return [found] if found is not None else []


def freed_fixes(ctx: Context) -> list[Proposal]:
    """The general candidates for a graph an earlier backward freed (NOTE [Candidates for a freed graph])."""
    found = [_derivative_trained(ctx), _keep_and_route(ctx) or _route_into_held(ctx), _detach_where_made(ctx)]
    return [f for f in found if f is not None]


def _derivative_trained(ctx: Context) -> Proposal | None:
    """``torch.autograd.grad`` of an output with respect to inputs (forces from an energy, a field's derivatives)
    freed the graph the loss needs, without ``create_graph=True``: the derivative is part of what the loss is
    computed from, so it keeps its own graph (NOTE [A derivative the loss is computed from])."""
    at, site = ctx.freeing_at, ctx.site
    code = at.code if at is not None else None
    if at is None or site is None or not code or not ctx.loss or not re.search(r"autograd\.grad\(", code):
        return None
    if "create_graph" in code or "retain_graph" in code:
        return None
    try:
        call = next(
            n
            for n in ast.walk(ast.parse(code.strip()))
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("autograd.grad") and len(n.args) >= 2
        )
    except (SyntaxError, StopIteration):
        return None
    inputs = ast.unparse(call.args[1])
    if "parameters()" in inputs:
        return None  # a derivative with respect to the parameters (a penalty on the gradient's norm) is not this
    if not (_derivative_is_an_output(at) or _feeds_loss(ctx, at)):
        return None  # printed, or used to perturb an input (an adversarial step): retain_graph is the fix there
    edit = edit_at(ctx, at, with_keyword(code.strip(), "grad", "create_graph=True"))
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            keeps_forward=True,
            summary=T(
                "pass create_graph=True to torch.autograd.grad at {where}: {loss} is computed from that derivative, "
                "so the derivative keeps a graph of its own (and the graph it was taken from stays for {loss})",
                where=at.where,
                loss=ctx.l,
            ),
            trains=T(
                "{loss} trains {models}, through the derivative too: the terms computed from it train the "
                "parameters it depends on",
                loss=ctx.l,
                models=join(list(outer_models(ctx.reach)), T(" and ")),
            ),
            cost=T("the derivative's graph is kept until the backward of {loss}, and differentiated again", loss=ctx.l),
            edits=(edit,),
        ),
    )


def _derivative_is_an_output(at: Location) -> bool:
    """The name the ``autograd.grad`` statement at ``at`` binds is what its function returns, directly or through
    arithmetic (forces, a flux): an output of a forward, which a loss is then computed from. Not when it only goes
    into a call of another function (a model run on ``x + eps * g``, a print)."""
    tree = parse(source_of(at.filename))
    st = statement_at(tree, at.lineno) if tree is not None else None
    function = function_of(tree, at.lineno) if tree is not None else None
    if st is None or function is None:
        return False
    if isinstance(st, ast.Return) and st.value is not None:  # return torch.autograd.grad(out.sum(), x)[0]
        return any(
            isinstance(n, ast.Call) and ast.unparse(n.func).endswith("autograd.grad") for n in ast.walk(st.value)
        )
    if not isinstance(st, ast.Assign):
        return False
    derived = names(st, ast.Store)
    for later in ast.walk(function):
        if not isinstance(later, ast.stmt) or later.lineno <= at.lineno:
            continue
        if isinstance(later, ast.Return) and later.value is not None:
            if any(
                isinstance(n, ast.Name) and n.id in derived and not _inside_call(later.value, n)
                for n in ast.walk(later.value)
            ):
                return True
        elif (
            isinstance(later, ast.Assign)
            and names(later.value, ast.Load) & derived
            and not any(
                _inside_call(later.value, n)
                for n in ast.walk(later.value)
                if isinstance(n, ast.Name) and n.id in derived
            )
        ):
            derived |= names(later, ast.Store)
    return False


def _inside_call(expr: ast.expr, node: ast.AST) -> bool:
    """``node`` is an argument (at any depth) of a call in ``expr`` that is not a tensor method (``model(x + g)``,
    ``print(g)``; ``g.sum()`` and ``torch.cat([g, h])`` are arithmetic)."""
    for call in ast.walk(expr):
        if not isinstance(call, ast.Call) or not any(node is a for arg in call.args for a in ast.walk(arg)):
            continue
        func = ast.unparse(call.func)
        if not func.startswith(("torch.", "F.")):
            return True
    return False


# NOTE [A derivative the loss is computed from]
# A forward that returns a derivative (forces as minus the gradient of a learned
# energy with respect to positions, a PINN's residual from the field's
# derivatives) takes it with torch.autograd.grad, which frees the graph it went
# through; the loss computed from that derivative then fails on the freed graph.
# retain_graph=True makes the error go away but not the intent: without
# create_graph=True the derivative has no graph, so the term on it trains
# nothing. create_graph=True (which also keeps the graph) lets it train the
# parameters the derivative depends on. Offered first for an autograd.grad with
# respect to inputs (not the parameters), with neither keyword given.


# NOTE [Candidates for a freed graph]
# A graph one backward freed and a later backward needs: the loop as written asks
# for the gradient of the later loss through the graph it built, into the models
# the code's optimizers step on that loss (the loop's intent, gradlab.loop). Two
# keywords give exactly that, where the sites allow: retain_graph=True on the
# freeing backward when the freed part lies on the way to those models, and
# inputs= on the failing backward when an optimizer stepped in between (its
# model's saved weights are stale: the failing backward must not enter its
# nodes) or when the freed part lies elsewhere (then inputs= alone avoids it).
# Not offered when weights moved in between by an update the record does not
# name (an optimizer's own update that is not step()), when a model the loss
# should train was stepped in between, or when it sits below a node that reads a
# stepped model's weights (a generator behind its stepped discriminator): there
# the code as written would use weights a step changed, and a recompute after the
# step is the fix (the causes write it). The gradient inputs= drops is that of
# models the loop's intent does not train with this loss (their optimizer clears
# it before its step, or none steps them on it); a loop that would still use it
# later is what gradlab fix's run, not this static reading, tells.
