"""Causes ``optimizer_step`` and ``shared_graph_freed``: a loss whose graph runs through a model a step changed, or
through a part an earlier backward freed (two chained networks, a GAN, an actor-critic), and their fixes."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from ..context import Context, as_receiver
from ..edits import Edit
from ..evidence import (
    Facts,
    Problem,
    Topology,
    in_site,
    leaves_of,
    receiver,
    resolve_dotted,
    saved_line,
    sequence_of,
    var_named,
)
from ..fixes import (
    Fix,
    Proposal,
    all_edits,
    backward_with,
    claim,
    edit_at,
    indent_of,
    insert_lines,
    replace_line,
    span_of,
    statements_text,
    tensor_names,
)
from ..graph import Graph
from ..i18n import T, Text, join
from ..location import Location
from ..loop import Site
from ..rewrite import detach_in, inputs_keyword, with_keyword
from ..saved import Write
from ..source import (
    block_of,
    called_on,
    calls_method,
    feeding,
    loop_body_of,
    names,
    preceding,
    runs_backward,
    statement_at,
    undetached_reads,
)


def step_context(
    base: Context, p: Problem, graph: Graph, topo: Topology, facts: Facts, write: Write | None, node_id: int
) -> Context:
    model = base.model
    below = topo.models_below(node_id)
    # the stepped model applied to another's output through a weight it computes (weight_norm): a judge too
    judge = bool(model) and bool(below - {model} or (topo.behind({model}) if model else ()))
    optimizer = receiver(write.location.code, "step") if write is not None and write.location else base.optimizer
    optimizer_class = write.op.split(".")[0] if write is not None else None
    earlier, earlier_line = base.earlier, base.earlier_line
    tracker = facts.tracker
    if earlier is None and tracker is not None and write is not None and write.event is not None:
        before = [c for c in tracker.history if c.event < write.event and c is not facts.failing]
        if before and before[-1].location is not None:
            earlier = receiver(before[-1].location.code, "backward")
            earlier_line = in_site(facts, before[-1].location)
    ctx = replace(
        base,
        judge=judge,
        optimizer=optimizer,
        optimizer_class=optimizer_class,
        earlier=earlier,
        earlier_line=earlier_line,
        step_line=in_site(facts, write.location) if write is not None else base.step_line,
    )
    ctx = replace(ctx, recompute_lines=recompute_lines(ctx, graph, p, facts))
    undetach = _detached_for_the_loss(ctx, facts)  # NOTE [A recompute for the loss that trains the maker]
    if undetach:
        names_ = " ".join(n for n in undetach if not n.startswith("@"))
        reached = " ".join(n[1:] for n in undetach if n.startswith("@"))
        ctx = replace(ctx, extra={**ctx.extra, "undetach": names_, "undetach_reach": reached})
    if not model:
        return ctx
    if judge:
        return replace(ctx, others=tuple(sorted(below - {model})))
    found = topo.entry(model)
    if found is None:
        return _frame_entry(ctx, facts)
    entry, consumer = found
    loc = saved_line(graph, [consumer.id]) or saved_line(graph, topo.parents.get(consumer.id, []))
    name = var_named(
        facts.namespace,
        lambda t: t.grad_fn is not None and sequence_of(t.grad_fn) == entry.seq and t.grad_fn.name() == entry.name,
    )
    return replace(
        ctx,
        entry=name,
        entry_line=loc.code if loc else None,
        entry_where=loc.where if loc else None,
        entry_lineno=in_site(facts, loc),
    )


def _frame_entry(ctx: Context, facts: Facts) -> Context:
    """The variable that carries ``ctx.model``'s output into the failing loss, read from the frame: a tensor whose
    graph reaches that model's parameters only, read by a one-line statement of the failing function that
    computes the failing loss (``student_loss = distill(s_logits, t_logits, y)``)."""
    site, line, model = facts.site, facts.backward_line, ctx.model
    tree = site.tree() if site is not None else None
    if site is None or line is None or tree is None or not model or not ctx.loss:
        return ctx
    params = site.modules.get(model, frozenset())
    here = statement_at(tree, line)
    block = block_of(tree, here)
    if here is None or block is None or not params:
        return ctx
    before = block[: block.index(here)]
    feeders = feeding(before, {ctx.loss})
    for st in before:
        if st.lineno not in feeders or st.lineno != st.end_lineno or not site.holds(st.lineno):
            continue
        for name in sorted(names(st, ast.Load)):
            value = facts.namespace.get(name)
            if not isinstance(value, torch.Tensor) or value.grad_fn is None:
                continue
            leaves = leaves_of(value)
            if leaves and leaves <= params:
                return replace(
                    ctx,
                    entry=name,
                    entry_line=site.text(st.lineno).strip(),
                    entry_where=Location(site.filename, st.lineno).where,
                    entry_lineno=st.lineno,
                )
    return ctx


def recompute_lines(ctx: Context, graph: Graph, p: Problem, facts: Facts) -> tuple[int, ...]:
    """The statements to run again after the step so the failing loss is built from the stepped weights.

    The forward lines that saved a tensor the step made stale, and every statement between them and the
    step that reads what they assign, in order; only statements of the failing function, before the step.
    """
    site, step = facts.site, ctx.step_line
    if site is None or step is None or ctx.backward_line is None or not step < ctx.backward_line:
        return ()
    tree = site.tree()
    if tree is None:
        return ()
    stale_lines = {
        s.saved_at.lineno
        for s in graph.saved
        if s.status == "modified_in_place" and s.saved_at is not None and s.saved_at.filename == site.filename
    }
    if p.kind == "graph_freed" and p.saved_at is not None and p.saved_at.filename == site.filename:
        stale_lines.add(p.saved_at.lineno)
    step_stmt = statement_at(tree, step)
    if step_stmt is None:
        return ()
    body = block_of(tree, step_stmt)
    if body is None:
        return ()
    # a function of the file given the model writes its weights (NOTE [Updates that are not steps]): that model
    given = [modules_given(c, site) for c in ast.walk(step_stmt) if isinstance(c, ast.Call)]
    stepped = _stepped_modules(site, ctx.optimizer) or (set() if ctx.optimizer else set().union(*given))
    if not ctx.optimizer and ctx.tensor:  # a write that is no step (a hand-written SAM's ascent): the written model
        stepped |= {m for m in site.modules if str(ctx.tensor).startswith(m + ".")}
    chosen: list[int] = []
    dirty: set[str] = set()
    # the statements that ran before the step in its function: those of its block, and of the blocks around it
    # (a step inside `if task > 0:` after a forward computed above the `if`)
    before = [st for st in preceding(tree, step) if st.lineno < step_stmt.lineno]
    for st in before:
        if not isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            continue
        lines = set(range(st.lineno, (st.end_lineno or st.lineno) + 1))
        if not site.holds(st.lineno) or calls_method(st, ("backward", "step", "zero_grad")):
            continue
        if (
            lines & stale_lines
            or names(st, ast.Load) & dirty
            or _calls_module(st, stepped)
            or _calls_stepped(st, facts.namespace, site.optimizers.get(ctx.optimizer or "", frozenset()))
        ):
            chosen.append(st.lineno)
            dirty |= names(st, ast.Store)
    # keep only what the statements from the step to the backward read (directly or through each other)
    end = step_stmt.end_lineno or step_stmt.lineno
    after = [st for st in preceding(tree, ctx.backward_line) if end < st.lineno]
    backward_stmt = statement_at(tree, ctx.backward_line)
    if backward_stmt is not None:
        after.append(backward_stmt)
    # a value read only detached (a feature-matching target: d_real[i][j].detach()) needs no graph: kept as it ran
    needed = {n for st in after for n in names(st, ast.Load) if undetached_reads(st, n)}
    kept: list[int] = []
    by_line = {st.lineno: st for st in before}
    for line in reversed(chosen):
        st = by_line[line]
        if names(st, ast.Store) & needed:
            kept.append(line)
            # what it binds is given: an earlier binding of the same name is not needed for it
            needed = (needed - names(st, ast.Store)) | names(st, ast.Load)
    return tuple(reversed(kept))


# NOTE [A recompute for the loss that trains the maker]
# A GAN loop reuses the judge's output on the fake batch for the maker's loss; that output was computed for the
# judge's own loss, on ``fake.detach()``. Recomputed after the judge's step as it was written, it would keep the
# detach, and the maker's loss would reach no parameter its optimizer steps. A name read detached in the recomputed
# statements whose tensor's graph reaches parameters the optimizers after the failing backward step (the loop's
# intent for that loss) is read without the detach in the recompute.
def _detached_for_the_loss(ctx: Context, facts: Facts) -> tuple[str, ...]:
    """The names read as ``name.detach()`` in the recomputed statements whose tensors reach parameters of a model
    the loss's optimizers step (NOTE [A recompute for the loss that trains the maker])."""
    site = facts.site
    if site is None or not ctx.recompute_lines or ctx.intent is None:
        return ()
    trained = frozenset().union(*(site.modules.get(m, frozenset()) for m in ctx.intent.trained))
    found: list[str] = []
    for line in ctx.recompute_lines:
        for name in re.findall(r"(?<![\w.])(\w+)\.detach\(\)", site.text(line)):
            value = facts.namespace.get(name)
            if isinstance(value, torch.Tensor) and value.grad_fn is not None and leaves_of(value) & trained:
                found.append(name)
                reached = leaves_of(value)
                found += [f"@{m}" for m in ctx.intent.trained if site.modules.get(m, frozenset()) & reached]
    return tuple(dict.fromkeys(found))


def recomputed_text(ctx: Context) -> str | None:
    """The statements of ``ctx.recompute_lines``, dedented, each name of ``ctx.extra["undetach"]`` read without its
    ``.detach()`` (NOTE [A recompute for the loss that trains the maker])."""
    text = statements_text(ctx, ctx.recompute_lines)
    for name in ctx.extra.get("undetach", "").split():
        text = re.sub(rf"(?<![\w.]){re.escape(name)}\.detach\(\)", name, text) if text else text
    return text


def _stepped_modules(site: Site, optimizer: str | None) -> set[str]:
    """The user's modules some of whose parameters ``optimizer`` (its variable in the frame) holds and steps: a
    forward through them reads weights the step writes (a network whose adapters alone are trained)."""
    params = site.optimizers.get(optimizer or "")
    return {m for m, ids in site.modules.items() if params and ids and ids & params}


def modules_given(call: ast.Call, site: Site) -> set[str]:
    """The user's modules ``call`` is given as arguments (``ascend(model, rho)``): a function given a model
    (NOTE [Updates that are not steps])."""
    return {a.id for a in call.args if isinstance(a, ast.Name) and a.id in site.modules}


def _calls_module(st: ast.stmt, modules: set[str]) -> bool:
    """``st`` calls one of ``modules`` (``netD(fake)``, ``self.teacher(x)``): a forward through its weights
    (the weights a step writes: a tensor saved inside a model's ``forward`` is saved at that forward's line)."""
    return bool(modules) and any(isinstance(n, ast.Call) and ast.unparse(n.func) in modules for n in ast.walk(st))


def _calls_stepped(st: ast.stmt, namespace: Mapping[str, Any], params: frozenset[int]) -> bool:
    """``st`` calls a module of the frame (``self._network(x)``, however it is named) that holds a parameter of
    ``params``: its forward reads weights the step writes."""
    if not params:
        return False
    for n in ast.walk(st):
        if not isinstance(n, ast.Call):
            continue
        dotted = ast.unparse(n.func)
        if not all(part.isidentifier() for part in dotted.split(".")):
            continue
        value = resolve_dotted(dotted, namespace)
        if isinstance(value, torch.nn.Module) and any(id(p) in params for p in value.parameters()):
            return True
    return False


def _hatch(ctx: Context) -> Proposal:
    return Proposal(
        Fix(
            alternative=True,
            summary=T(
                "run the loop as written inside a `with torch.autograd.graph.allow_mutation_on_saved_tensors():` "
                "block: autograd keeps a copy of each saved tensor before it is modified in place"
            ),
            trains=T(
                "what the code says: {loss} sends gradient into {model}, computed with {model}'s weights from "
                "before {step}; in a loop whose {zero} runs before the next step, that gradient is never used (the "
                "same training as detaching)",
                loss=ctx.l,
                model=ctx.m,
                step=ctx.step,
                zero=ctx.zero,
            ),
            cost=T("a copy of every saved tensor that is modified in place (memory and time)"),
            claims=claim(ctx, tuple(ctx.others)),
        ),
        ctx.reach,
        False,
    )


def _same_as_failing(ctx: Context) -> Text:
    return T(
        "{loss} trains {others} only; {model} learns from {earlier} only: the training your loop would do if it "
        "ran, since {loss}'s gradient for {model} would arrive after {step}, too late for that step (and "
        "{zero} before the next step discards it)",
        loss=ctx.l,
        others=ctx.o,
        model=ctx.m,
        earlier=ctx.e,
        step=ctx.step,
        zero=ctx.zero,
    )


# NOTE [Recomputed where the step's block first reads it]
# A WGAN step clips the critic's weights right after its optimizer's step (clip_critic(critic, 0.01)), then zeroes
# the generator's gradients, then reads the critic's score for the generator's loss. Recomputing the score right
# after the step would compute it with the unclipped weights: another value than the one a fresh forward at the
# read sees. The stale statements go right before the first statement after the step, in its block, that reads a
# name they bind; when a statement in between binds a name they read (the next batch drawn), right after the step,
# as before.
def _first_reader_after_step(ctx: Context) -> int | None:
    """The line of the first statement after the step, in its block, that reads a name the recomputed statements
    bind; None when there is none, or a statement before it binds a name they read."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    step = statement_at(tree, ctx.step_line) if tree is not None and ctx.step_line is not None else None
    block = block_of(tree, step) if step is not None else None
    if site is None or tree is None or step is None or not block:
        return None
    recomputed = [st for line in ctx.recompute_lines if (st := statement_at(tree, line)) is not None]
    bound = set().union(set(), *(names(st, ast.Store) for st in recomputed))
    read = set().union(set(), *(names(st, ast.Load) for st in recomputed)) - bound
    for st in block[block.index(step) + 1 :]:
        if names(st, ast.Load) & bound:
            return st.lineno if site.holds(st.lineno) else None
        if names(st, ast.Store) & read:
            return None
    return None


def recompute_fix(ctx: Context) -> Proposal | None:
    """Run the stale forward statements again right after the step, so the loss is built from the new weights."""
    if not ctx.recompute_lines or ctx.step_line is None:
        return None
    text = recomputed_text(ctx)
    before = _first_reader_after_step(ctx)  # NOTE [Recomputed where the step's block first reads it]
    edit = (
        (insert_lines(ctx, before, text) if before is not None else insert_lines(ctx, ctx.step_line, text, after=True))
        if text
        else None
    )
    if edit is None:
        return None
    later = tuple(e for line in _later_steps(ctx) if (e := insert_lines(ctx, line, text, after=True)) is not None)
    keep = _retain_for(ctx, text) if text else None
    # the models a name read without its detach reaches too (NOTE [A recompute for the loss that trains the maker])
    reach = tuple(sorted({*ctx.reach, *ctx.extra.get("undetach_reach", "").split()}))
    what = (
        ", ".join(ctx.site.text(line).strip().split("=")[0].strip() for line in ctx.recompute_lines) if ctx.site else ""
    )
    return Proposal(
        Fix(
            keeps_forward=False,  # the loss is built from the stepped weights: other values
            summary=T(
                "recompute {what} after {step}, and again after each later step that changes them ({later}), so "
                "that {loss} and the later phases are built from the stepped weights",
                what=what,
                step=ctx.step,
                loss=ctx.l,
                later=", ".join(ctx.site.text(e.start - 1).strip() for e in later) if ctx.site else "",
            )
            if later and keep is None
            else T(
                "recompute {what} after {step}, so that {loss} is built from the stepped weights",
                what=what,
                step=ctx.step,
                loss=ctx.l,
            )
            if keep is None
            else T(
                "recompute {what} after {step}, so that {loss} is built from the stepped weights, and keep the graph "
                "of {earlier}.backward() (retain_graph=True): {loss} still goes through the part of it no step changed",
                what=what,
                step=ctx.step,
                loss=ctx.l,
                earlier=ctx.e,
            ),
            trains=T("{loss} trains what it reaches, through the updated weights", loss=ctx.l),
            edits=tuple(sorted((edit, *later, *((keep,) if keep is not None else ())), key=lambda e: e.start)),
            claims=claim(ctx, reach),
        ),
        reach,
        False,
        describe=True,
    )


def _later_steps(ctx: Context) -> list[int]:
    """The later steps of the loop's body, after the failing backward, whose optimizer holds a model the recomputed
    statements run, followed by a backward whose statements read what they bind (NOTE [Each phase recomputed]):
    the recompute goes after each of them too, or the next phase fails the same way."""
    site, line, lines = ctx.site, ctx.backward_line, ctx.recompute_lines
    tree = site.tree() if site is not None else None
    body = loop_body_of(tree, line) if tree is not None and line is not None else None
    if site is None or tree is None or body is None or line is None:
        return []
    recomputed = [statement_at(tree, k) for k in lines]
    bound = {n for st in recomputed if st is not None for n in names(st, ast.Store)}
    found: list[int] = []
    after = [st for st in body if st.lineno > line]
    for k, st in enumerate(after):
        optimizer = called_on(st, "step")
        if optimizer is None:
            continue
        stepped = _stepped_modules(site, optimizer)
        if not stepped or not any(st2 is not None and _calls_module(st2, stepped) for st2 in recomputed):
            continue
        rest = after[k + 1 :]
        back = next((j for j, b in enumerate(rest) if runs_backward(b)), None)
        if back is None or not site.holds(st.lineno):
            continue
        if any(names(b, ast.Load) & bound for b in rest[: back + 1]) and not any(
            names(b, ast.Store) & bound for b in rest[:back]
        ):
            found.append(st.lineno)
    return found


# NOTE [Each phase recomputed]
# A loop of phases (encoder-decoder, then a classifier on the codes, then a discriminator, then the fusion), each
# with its own optimizer and backward, all reading the codes of one forward: the first step that changes the
# encoders makes the next phase fail, and so does the next step that changes them. The recompute after the first
# step alone gives a patch that fails one phase later. So the recompute also goes after each later step whose
# optimizer holds a model the recomputed statements run, when the phase after it reads what they bind before
# binding it again.


def _retain_for(ctx: Context, text: str) -> Edit | None:
    """``retain_graph=True`` on the earlier backward when the recomputed ``text`` reads a tensor of the frame
    that still has a graph (``z`` from the encoder): the earlier backward freed that part, the failing loss
    goes through it again. None when nothing needs keeping (or the earlier backward keeps its graph already)."""
    site = ctx.site
    if site is None or ctx.earlier_line is None:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
    if not read & set(ctx.extra.get("graph_names", "").split()):
        return None
    return backward_with(ctx, ctx.earlier_line, "retain_graph=True")


def _sum(ctx: Context, others: tuple[str, ...]) -> Proposal:
    """One backward of the sum, then every step: the other intent, where the loss also trains the model."""
    return Proposal(
        Fix(
            intent=T("if {loss} should also train {model}", loss=ctx.l, model=ctx.m),
            summary=T(
                "one backward of the sum, then the steps: zero every optimizer, backward ({earlier} + {loss}) "
                "once, then step every optimizer",
                earlier=ctx.e,
                loss=ctx.l,
            ),
            trains=T(
                "{earlier} and {loss} both train {model}, and {loss} trains {others}: a different training from "
                "the failing code's, where {model} followed {earlier} only",
                earlier=ctx.e,
                loss=ctx.l,
                model=ctx.m,
                others=ctx.o,
            ),
            claims=claim(ctx, (*others, *([ctx.model] if ctx.model else []))),
        ),
        None,
        False,
    )


def _feeds_earlier(ctx: Context) -> bool:
    """The statement that feeds the upstream output in (``D_z = self.D(z)``) also computes the earlier loss
    (``vae_loss = ... + tc(D_z)``): detaching there would stop the earlier loss's gradient into the upstream
    model too, a training neither loss asked for (FactorVAE's total-correlation term)."""
    site, line = ctx.site, ctx.entry_lineno
    tree = site.tree() if site is not None else None
    if tree is None or line is None or not ctx.earlier or ctx.earlier_line is None:
        return False
    return line in feeding(preceding(tree, ctx.earlier_line), {ctx.earlier})


def chained_fixes(ctx: Context, freed: bool) -> list[Proposal]:
    """An upstream model's output feeds the failing loss's models (two chained networks, actor-critic)."""
    detach_edit = None
    if ctx.entry and ctx.entry_lineno is not None and ctx.site is not None and not _feeds_earlier(ctx):
        line = ctx.site.text(ctx.entry_lineno).strip()
        detach_edit = replace_line(ctx, ctx.entry_lineno, detach_in(line, ctx.entry, into=ctx.others))
    where = T(" (at {where})", where=ctx.entry_where) if ctx.entry_where and detach_edit else ""
    entry = T(": feed in {entry}.detach(){where}", entry=ctx.entry, where=where) if ctx.entry else ""
    if ctx.optimizer or not freed:
        trains_same = _same_as_failing(ctx)
    else:
        trains_same = T(
            "{loss} trains {others} only; {model} learns from {earlier} only",
            loss=ctx.l,
            others=ctx.o,
            model=ctx.m,
            earlier=ctx.e,
        )
    inputs = inputs_keyword(ctx.others, tensor_names(ctx, tuple(ctx.others)))
    inputs_edit = None
    if inputs and ctx.site is not None and ctx.backward_line is not None:
        inputs_edit = backward_with(ctx, ctx.backward_line, inputs)
    others = tuple(ctx.others)
    proposals = [
        Proposal(
            Fix(
                intent=T("if {loss} should not train {model}", loss=ctx.l, model=ctx.m),
                summary=T(
                    "detach {model}'s output where it enters {others}{entry}", model=ctx.m, others=ctx.o, entry=entry
                ),
                trains=trains_same,
                edits=all_edits(detach_edit),
                claims=claim(ctx, others),
            ),
            others,
            False,
        ),
        Proposal(
            Fix(
                intent=T("the same, keeping the order and the graph"),
                summary=T("backward {loss} into {others}'s parameters only", loss=ctx.l, others=ctx.o),
                trains=T(
                    "this backward of {loss} trains {others} only; {model} learns from its backward at line {line}",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    line=ctx.earlier_line,
                )
                if ctx.earlier == ctx.loss and ctx.earlier_line is not None and ctx.model is not None
                # NOTE [One loss backwarded on two lines]: the loss trains what both of its backward calls train
                else T("the same as detaching: {loss} trains {others} only", loss=ctx.l, others=ctx.o),
                edits=all_edits(inputs_edit),
                claims=claim(ctx, others),
            ),
            others,
            False,
        ),
    ]
    if not others and ctx.model is not None:
        # a known model and no downstream one (one model, two losses on its outputs): "detach where it enters" has nothing to
        # enter, and detaching one of several outputs the loss reads would not stop it training the model
        proposals = []
    again = recompute_fix(ctx)
    if again is not None:
        proposals.append(again)
    one_line = ctx.earlier_line is not None and ctx.earlier_line == ctx.backward_line  # a loop over losses
    # its premise: the loop does not train it; and two backward statements to sum (one line run twice has one name)
    if (ctx.intent is None or ctx.model not in ctx.intent.trained) and not one_line:
        proposals.append(_sum(ctx, others))
    if freed and ctx.step_between is False:
        retain_edit = None
        if ctx.site is not None and ctx.earlier_line is not None:
            retain_edit = backward_with(ctx, ctx.earlier_line, "retain_graph=True")
        elif ctx.extra.get("earlier_at"):  # the earlier backward in another function of the user's code
            line, filename = ctx.extra["earlier_at"].split(":", 1)
            at = Location(filename, int(line))
            code = at.code
            retain_edit = edit_at(ctx, at, with_keyword(code, "backward", "retain_graph=True")) if code else None
        proposals.append(
            Proposal(
                Fix(
                    alternative=True,
                    summary=T(
                        "keep the graph at each backward of the loop over the losses (retain_graph=True on the "
                        "backward of {loss}): each loss of the one forward goes through the shared part, and the "
                        "step after the loop uses their summed gradient",
                        loss=ctx.l,
                    )
                    if one_line
                    else T(
                        "keep two backward calls: {earlier}.backward(retain_graph=True), then {loss}.backward(), "
                        "and only then any optimizer step",
                        earlier=as_receiver(ctx.earlier) if ctx.earlier else ctx.e,
                        loss=as_receiver(ctx.loss) if ctx.loss else ctx.l,
                    ),
                    trains=T("like the sum: every loss of the loop trains {model}", model=ctx.m)
                    if one_line
                    else T(
                        "like the sum: {earlier} and {loss} both train {model}", earlier=ctx.e, loss=ctx.l, model=ctx.m
                    ),
                    edits=all_edits(retain_edit),
                    claims=claim(ctx, ctx.reach),
                ),
                ctx.reach,
                False,
            )
        )
    elif not freed:
        proposals.append(_hatch(ctx))
    return proposals


def _step_moved_after(ctx: Context, keyword: str) -> tuple[Edit | None, Edit | None]:
    """Delete the step's line and put it right after the failing backward, given ``keyword`` (``inputs=...``)."""
    site, step, back = ctx.site, ctx.step_line, ctx.backward_line
    if site is None or step is None or back is None or not (step < back and site.holds(step)):
        return None, None
    if span_of(site, step) != (step, step):
        return None, None
    call = with_keyword(site.text(back), "backward", keyword)
    moved = replace_line(ctx, back, call)
    if moved is None:
        return None, None
    indent = indent_of(site, back)
    both = Edit(moved.filename, back, back, f"{moved.text}\n{indent}{site.text(step).strip()}")
    return Edit(site.filename, step, step, ""), both


def between_fixes(ctx: Context, freed: bool) -> list[Proposal]:
    """The stepped model sits between the failing loss and the models it trains (GAN discriminator)."""
    edit = None
    if ctx.recompute_lines and ctx.step_line is not None:
        text = recomputed_text(ctx)
        edit = insert_lines(ctx, ctx.step_line, text, after=True) if text else None
    others = tuple(ctx.others)
    # the models the loss's own optimizers step (the loop's intent), when it names them: those the backward goes into
    meant = tuple(m for m in others if ctx.intent is not None and m in ctx.intent.trained)
    tensors = tensor_names(ctx, others)
    inputs = inputs_keyword(others, tensors) if len(others) == 1 else inputs_keyword(meant, tensors) if meant else None
    into = others if len(others) == 1 or not meant else meant
    o = join(list(into), T(" and ")) if into else ctx.o
    # the two readings of the user's loop (G against D after its step, or before it): each fix says which
    two = bool(ctx.site is not None and ctx.loss and ctx.model and ctx.others)
    proposals = [
        Proposal(
            Fix(
                keeps_forward=False,  # the loss is built from the stepped model: other values
                intent=T(
                    "if {loss} should train {others} against {model} as {step} left it",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    step=ctx.step,
                )
                if two
                else None,
                summary=T(
                    "recompute {model}'s forward after {step}, and {loss} from it",
                    model=ctx.m,
                    step=ctx.step,
                    loss=ctx.l,
                ),
                trains=T(
                    "{loss} trains {others} through the updated {model} (the usual GAN order); {model} learns from "
                    "{earlier} only, since {zero} clears what {loss} leaves in {model}'s .grad",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    earlier=ctx.e,
                    zero=ctx.zero,
                ),
                edits=all_edits(edit),
                claims=claim(ctx, others),
            ),
            ctx.reach,
            False,
            describe=True,  # with the loop's intent known, its trains line is read from the loop, not the GAN story
        ),
        Proposal(
            Fix(
                intent=T(
                    "if {loss} should train {others} against {model} as it was before {step}",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    step=ctx.step,
                )
                if two
                else None,
                edits=all_edits(*_step_moved_after(ctx, inputs)) if inputs else (),
                alternative=not (inputs and two),
                summary=T(
                    "move {step} after {loss}.backward(), and backward {loss} into {others}'s parameters only "
                    "({inputs})",
                    loss=ctx.l,
                    step=ctx.step,
                    others=o,
                    inputs=inputs or "",
                )
                if inputs and two
                else T(
                    "move {loss}.backward({inputs}) before {step}",
                    loss=ctx.l,
                    step=ctx.step,
                    inputs=inputs or "",
                )
                if inputs
                else T(
                    "backward {loss} before {step}, into {others}'s parameters only",
                    loss=ctx.l,
                    step=ctx.step,
                    others=o,
                ),
                trains=T(
                    "{loss} trains {others} through {model} as it was before its step; {model}'s gradient is untouched",
                    loss=ctx.l,
                    others=o,
                    model=ctx.m,
                ),
                claims=claim(ctx, into),
            ),
            into,
            False,
        ),
    ]
    if not freed:
        proposals.append(_hatch(ctx))
    return proposals


# NOTE [A graph freed on purpose]
# A meta-learning step takes the inner gradient with ``torch.autograd.grad(loss, params, create_graph=True,
# retain_graph=False)``, meaning to save memory; the outer backward then crosses the inner graph, which that call
# freed. ``create_graph=True`` keeps the graph by default; the explicit ``retain_graph=False`` is what frees it. The
# first fix is that one keyword, where the user wrote it: ``retain_graph=True``. What trains is what the code
# meant: the outer loss reaches through the inner step.
def freed_on_purpose_fix(ctx: Context) -> Proposal | None:
    """``retain_graph=False`` made ``retain_graph=True`` at the earlier call that freed the graph, where it is
    written (NOTE [A graph freed on purpose])."""
    at: Location | None = None
    if ctx.site is not None and ctx.earlier_line is not None:
        at = Location(ctx.site.filename, ctx.earlier_line)
    elif ctx.extra.get("earlier_at"):
        line, filename = ctx.extra["earlier_at"].split(":", 1)
        at = Location(filename, int(line))
    code = at.code if at is not None else None
    if at is None or not code or not re.search(r"\bretain_graph\s*=\s*False\b", code):
        return None
    edit = edit_at(ctx, at, re.sub(r"\bretain_graph\s*=\s*False\b", "retain_graph=True", code))
    if edit is None:
        return None
    return Proposal(
        Fix(
            summary=T(
                "keep the graph at the call that frees it on purpose ({where}): retain_graph=True in place of "
                "retain_graph=False; {loss}.backward() goes back through that graph",
                where=at.where,
                loss=as_receiver(ctx.loss) if ctx.loss else ctx.l,
            ),
            trains=T(
                "{loss} trains what it reaches through the graph that call kept, as the code meant: every model "
                "of that graph",
                loss=ctx.l,
            ),
            edits=(edit,),
            claims=claim(ctx, ctx.reach),
        ),
        ctx.reach,
        True,
    )
