"""Cause ``same_loss_twice``: the same loss was backwarded twice; its fixes."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import replace

import torch

from ..claims import one_name_each
from ..context import Context, as_receiver
from ..edits import Edit
from ..evidence import Facts, leaves_of, modules_reached, receiver, steps_between, value_of
from ..fixes import Fix, Proposal, all_edits, claim, edit_at, insert_lines, keeping, replace_line, source_of
from ..graph import Graph
from ..i18n import T
from ..location import Location
from ..loop import Site, modules_of
from ..recorder import BackwardCall
from ..rewrite import call_with_keyword, with_keyword
from ..source import calls_method, enclosing_blocks, function_of, loop_body_of, parse
from .class_source import methods_of, sets_attr


def _deleted(ctx: Context, line: int | None) -> Edit | None:
    """The statement at ``line`` deleted, if it is a backward call and nothing else (``pass`` if it is alone)."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not site.holds(line):
        return None
    for block in enclosing_blocks(tree):
        for st in block:
            if st.lineno != line:
                continue
            call = st.value if isinstance(st, ast.Expr) else None
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                return None
            if call.func.attr != "backward":
                return None
            end = st.end_lineno or st.lineno
            if len(block) == 1:  # the block would be empty
                text = site.text(line)
                return Edit(site.filename, line, end, text[: len(text) - len(text.lstrip())] + "pass")
            return Edit(site.filename, line, end, "")
    return None


# NOTE [A step repeated with the second backward]
# A runner backwards its loss, steps and zeroes the optimizer; then a callback, written for runners that leave the
# step to it, reads the same loss back and backwards, steps and zeroes again. The second backward fails. Deleting it
# alone leaves the callback's step(): with no new gradient it steps on nothing (set_to_none) or on zeros, which
# still moves a momentum optimizer. When that optimizer stepped between the two backward calls (the tracker saw a
# step holding its parameters), its calls right after the deleted backward, in its block, are deleted with it: the
# step was done once. Another optimizer's calls stay (a calibration callback that steps its own parameters).
def _step_after(ctx: Context, line: int | None) -> tuple[Edit, ...]:
    """The statements right after the backward at ``line``, in its block, that only call ``step()`` or
    ``zero_grad()`` of an optimizer of the frame (NOTE [A step repeated with the second backward])."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None:
        return ()
    for block in enclosing_blocks(tree):
        at = next((k for k, st in enumerate(block) if st.lineno == line), None)
        if at is None:
            continue
        found: list[Edit] = []
        for st in block[at + 1 :]:
            call = st.value if isinstance(st, ast.Expr) else None
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("step", "zero_grad")
                and ast.unparse(call.func.value) in ctx.extra.get("stepped_since", "").split(",")
            ):
                break
            found.append(Edit(site.filename, st.lineno, st.end_lineno or st.lineno, ""))
        return tuple(found) if any(".step(" in site.text(e.start) for e in found) else ()
    return ()


# NOTE [A zero_grad() right before the second backward]
# A calibration callback, written for runners that leave the backward to it, zeroes its own optimizer, backwards the
# runner's loss again and steps: ``self.optimizer.zero_grad(); loss.backward(); self.optimizer.step()``. The runner's
# backward already put the loss's gradient into the callback's parameters; deleting the second backward alone leaves
# the zero_grad() to clear it, and the step steps on nothing. When that optimizer did not step between the two
# backward calls, holds parameters the loss reaches, and its step() follows the deleted backward, its zero_grad()
# moves to right after its step(): the step uses the first backward's gradient, and the next iteration's backward
# starts from zero, as a zero_grad() before the runner's backward would give.
def _zeroed_before(ctx: Context, line: int | None) -> tuple[Edit, Edit] | None:
    """``opt.zero_grad()`` right before the backward at ``line`` and ``opt.step()`` right after it, of an optimizer
    of the frame that did not step since the first backward and holds parameters the loss reaches: the
    zero_grad() deleted, the backward and the step made ``opt.step()`` then ``opt.zero_grad()`` (NOTE [A zero_grad()
    right before the second backward])."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None:
        return None

    def call_of(st: ast.stmt, method: str) -> str | None:
        call = st.value if isinstance(st, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == method:
            return ast.unparse(call.func.value)
        return None

    for block in enclosing_blocks(tree):
        at = next((k for k, st in enumerate(block) if st.lineno == line), None)
        if at is None or at == 0 or at + 1 >= len(block):
            continue
        after = block[at + 1]
        # the nearest zero_grad() before it, past statements that neither backward nor step (a gradlab.check())
        zeroes = [k for k in range(at) if call_of(block[k], "zero_grad") is not None]
        if not zeroes or any(
            calls_method(st, ("backward", "step", "zero_grad", "grad")) for st in block[zeroes[-1] + 1 : at]
        ):
            return None
        before = block[zeroes[-1]]
        opt = call_of(before, "zero_grad")
        if opt is None or call_of(after, "step") != opt or before.lineno != before.end_lineno:
            return None
        if opt in ctx.extra.get("stepped_since", "").split(",") or opt not in site.optimizers:
            return None
        if not set(modules_of(site.optimizers[opt], site.modules)) & set(ctx.reach):
            return None
        end = after.end_lineno or after.lineno
        lines = [site.text(n) for n in range(after.lineno, end + 1)]
        zero = site.text(before.lineno)
        return (
            Edit(site.filename, before.lineno, before.lineno, ""),
            Edit(site.filename, block[at].lineno, end, "\n".join([*lines, zero])),
        )
    return None


def _alone_in_block(ctx: Context, first: int, last: int) -> bool:
    """The statements from ``first`` to ``last`` are the whole block they are in."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    for block in enclosing_blocks(tree) if tree is not None else ():
        if block and block[0].lineno == first:
            return (block[-1].end_lineno or block[-1].lineno) == last
    return False


def _deleted_call(filename: str, line: int) -> Edit | None:
    """The one-line call statement at ``line`` of ``filename`` deleted (``optimizer.backward(loss)``, a wrapper's
    caller), when it is a call and nothing else and its block keeps another statement."""
    tree = parse(source_of(filename))
    for block in enclosing_blocks(tree) if tree is not None else ():
        for st in block:
            if st.lineno == line and st.end_lineno == line and len(block) > 1:
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                    return Edit(filename, line, line, "")
                return None
    return None


def total_of_backwarded(graph: Graph, facts: Facts) -> tuple[str, ...]:
    """The names the backward calls give the losses the failing loss adds up, when each was already backwarded,
    with no optimizer step since, and nothing else in it reaches a leaf (``self.loss_D = loss_D_A + loss_D_B``
    after each part's own backward): NOTE [A total of losses already backwarded]. Empty otherwise."""
    tracker, failing = facts.tracker, facts.failing
    if tracker is None or not graph.outputs:
        return ()
    calls = {  # before the failing call, or (check() before the backward) every call so far
        call.newest_node: call
        for call in tracker.history
        if call is not failing
        and call.newest_node is not None
        and call.kind != "autograd.grad"  # its gradients are returned, not put into .grad
        and (failing is None or call.index < failing.index)
        and not steps_between(tracker, call, failing)
        and not any(  # a zero_grad() since would have cleared what it put into .grad
            z.kind == "zero_grad" and z.after > call.index and (failing is None or z.after <= failing.index)
            for z in tracker.optimizer_calls
        )
    }
    by_id = {n.id: n for n in graph.nodes}
    roots = set(graph.outputs)
    if any(by_id[i].seq in calls for i in roots if i in by_id):
        return ()  # the same loss again: the plain case
    for call in list(calls.values()):  # the terms a backwarded sum adds up were backwarded too, each once
        for seq in call.terms:
            calls.setdefault(seq, call)
    met: list[int] = []
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        node = by_id.get(todo.pop())
        if node is None or node.id in seen:
            continue
        seen.add(node.id)
        if node.seq in calls:
            met.append(node.seq)
            continue
        if node.kind != "op":  # a leaf (or a custom function) reached without a part: a term of its own
            return ()
        todo.extend(node.next_ids)
    found = (calls[seq].location for seq in sorted(met))
    return tuple(dict.fromkeys(receiver(loc.code, "backward") or "" for loc in found if loc is not None))


# NOTE [A loss read back from a list by an old index]
# ``list_of_loss.append(loss)`` then ``list_of_loss[i].backward()`` in a loop whose list is
# never emptied: on the first pass the item at ``i`` is the loss just computed; on every
# later pass it is a loss an earlier pass appended, whose graph that pass's backward freed.
# The code means the loss it just appended: the backward takes that name (``loss``), which
# trains what that loss reaches, once per pass. The list keeps its items (for a log).
def appended_loss(facts: Facts, loss: str | None) -> tuple[str, tuple[str, ...]] | None:
    """The name the loop appends to the list whose old item the failing backward reads (``loss`` for
    ``list_of_loss[i]``), with the models that name's tensor reaches (NOTE [A loss read back from a list by an
    old index]); None for another shape."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not loss:
        return None
    try:
        read = ast.parse(loss, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(read, ast.Subscript):
        return None
    container = ast.unparse(read.value)
    body = loop_body_of(tree, line) or []
    appended = [
        n.args[0].id
        for st in body
        if (st.end_lineno or st.lineno) < line
        for n in ast.walk(st)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "append"
        and ast.unparse(n.func.value) == container
        and len(n.args) == 1
        and isinstance(n.args[0], ast.Name)
    ]
    if len(set(appended)) != 1:
        return None
    name = appended[0]
    value, item = value_of(name, facts.namespace), value_of(loss, facts.namespace)
    if not isinstance(value, torch.Tensor) or value.grad_fn is None or value is item:
        return None
    return name, one_name_each(site, modules_reached(site, leaves_of(value)))


def _appended_instead(ctx: Context) -> Proposal | None:
    """The backward on the name the loop appended, not on the list's old item (NOTE [A loss read back from a list
    by an old index])."""
    name, read, site, line = ctx.extra.get("appended"), ctx.extra.get("read"), ctx.site, ctx.backward_line
    if not name or not read or site is None or line is None:
        return None
    text = site.text(line)
    receiver_at = text.find(f"{read}.backward(")
    if receiver_at < 0:
        return None
    new = text[:receiver_at] + name + text[receiver_at + len(read) :]
    edit = replace_line(ctx, line, new)
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "backward {name}, the loss this pass computed and appended: {loss} is an item an earlier pass "
                "appended (the list grows by one each pass), whose graph that pass's backward freed",
                name=name,
                loss=read,
            ),
            trains=T("{name} trains what it reaches, once per pass, from this pass's graph", name=name),
            edits=(edit,),
        ),
    )


# NOTE [A total of losses already backwarded]
# A helper backwards each loss it computes (a CycleGAN's backward_D_basic, once per
# discriminator) and returns it; the caller adds the returned losses into a total
# for the log and backwards the total as well. Each part's graph was freed by its
# own backward, so the total's fails; run, it would add every part's gradient into
# .grad a second time. When every path of the total's graph to a leaf goes
# through the root of a loss already backwarded into .grad (not by
# torch.autograd.grad) with no optimizer step and no zero_grad() since, the total
# adds nothing the parts did not: deleting its backward keeps each part's gradient
# once, which is also what backwarding the total alone (and not the parts) would
# give. A part may be a term of a sum that was backwarded (``seg_loss = seg_loss +
# cls_loss`` before the last segment's backward, both terms also in the total): the
# backward call records the terms its roots add up (BackwardCall.terms), each
# backwarded once as well. A term of the total that no earlier backward covered (a penalty added only
# there) makes it no such total: its gradient would be lost.


# NOTE [A gradient taken, then the same loss backwarded]
# torch.autograd.grad(loss, params) returns the gradients and writes no .grad; a
# loss.backward() after it on the same graph (a guided search steered by the
# gradient, then a hybrid update that reads .grad) finds the graph freed. "Delete the
# second call" would leave .grad empty: the first call put nothing there. The fix keeps
# the graph for the backward: retain_graph=True on the autograd.grad call. The two
# calls then compute what the code asks for: the gradients returned, and the same
# gradient written into .grad once.
def _gradient_taken_first(ctx: Context) -> Proposal | None:
    """``retain_graph=True`` on the ``torch.autograd.grad`` call that freed the graph the loss's backward then needs
    (NOTE [A gradient taken, then the same loss backwarded])."""
    found = ctx.extra.get("grad_first_at", "")
    if not found:
        return None
    at, _, filename = found.partition(":")
    line = int(at)
    if line == ctx.backward_line:
        return None
    source = source_of(filename)
    tree = parse(source)
    calls = (
        [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and n.lineno == line and ast.unparse(n.func).endswith("autograd.grad")
        ]
        if tree is not None
        else []
    )
    if len(calls) != 1 or any(k.arg == "retain_graph" for k in calls[0].keywords):
        return None
    lines = source.splitlines()
    new = call_with_keyword(lines[line - 1], calls[0], "retain_graph", "True")
    edit = edit_at(ctx, Location(filename, line), new) if new is not None else None
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "keep the graph for {loss}.backward(): pass retain_graph=True to torch.autograd.grad at {where}, which "
                "returns the gradients and writes no .grad, so the backward after it is still needed",
                loss=as_receiver(ctx.loss) if ctx.loss else T("the loss"),
                where=Location(filename, line).where,
            ),
            trains=T(
                "{loss} trains what its backward reaches, once, as the code asks; torch.autograd.grad returns the "
                "same gradients to the code that reads them",
                loss=as_receiver(ctx.loss) if ctx.loss else T("the loss"),
            ),
            edits=(edit,),
        ),
    )


def _rebuilt_by_its_method(ctx: Context) -> Proposal | None:
    """``self.build()`` before the failing ``self.objective.backward()``, when a method of the same class that takes
    no argument but ``self`` is the only one that sets ``self.objective`` and the failing method does not call it
    (NOTE [A loss built once by a method of its object])."""
    site, line, loss = ctx.site, ctx.backward_line, ctx.loss
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not loss or not loss.startswith("self."):
        return None
    attr = loss[len("self.") :]
    if not attr.isidentifier():
        return None
    here = function_of(tree, line)
    owner = next(
        (c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and here is not None and here in c.body), None
    )
    if owner is None or here is None:
        return None
    builders = [
        m
        for m in methods_of(owner)
        if m.name != "__init__" and any(sets_attr(st, attr) for st in ast.walk(m) if isinstance(st, ast.Assign))
    ]
    if len(builders) != 1 or builders[0] is here:
        return None
    build = builders[0]
    if len(build.args.args) != 1 or build.args.vararg or build.args.kwonlyargs or build.args.posonlyargs:
        return None
    if calls_method(here, (build.name,)):
        return None
    edit = insert_lines(ctx, line, f"self.{build.name}()")
    if edit is None:
        return None
    return Proposal(
        Fix(
            summary=T(
                "build {loss} again before its backward: call self.{method}() there, so that each call backwards "
                "the loss of the data and weights it has now, not the graph the first call freed",
                loss=loss,
                method=build.name,
            ),
            trains=T(
                "{loss} trains what it reaches at each call, once, from that call's batch; the loss built once "
                "read the data it was built from, whatever the inputs hold later",
                loss=loss,
            ),
            edits=(edit,),
            claims=claim(ctx, ctx.reach),
            keeps_forward=False,
        ),
        ctx.reach,
        True,
    )


# NOTE [A loss built once by a method of its object]
# A trainer builds its objective once, in the style of a graph compiled
# ahead (``def compile(self): self.objective = crit(model(self.x), self.y)``,
# called once before the loop), then each step refills the inputs in place
# (``self.x.data = xb``) and calls ``self.objective.backward()``. The first
# step frees that one graph; the second meets it. Nothing recomputes the
# forward: the refilled inputs are never read again. The method that builds
# the objective is called again right before the backward (it takes no
# argument but self), so each step backwards the loss of its own batch
# through the current weights: what refilling the inputs meant.


def twice_fixes(ctx: Context) -> list[Proposal]:
    """One backward (the second call deleted) first; both kept with ``retain_graph=True`` only as the other way.

    Two backward calls through one graph with no step between add the same gradient
    twice into ``.grad``: code that does it by accident means one (NOTE [Twice]).
    """
    if ctx.extra.get("total_of"):
        total = ctx.extra.get("total") or T("the total")
        return [
            keeping(
                ctx,
                Fix(
                    summary=T(
                        "delete the backward call of {total}: it adds up losses already backwarded, whose gradients are "
                        "in .grad already",
                        total=total,
                    ),
                    trains=T("each of those losses trains what its own backward reached, once"),
                    edits=all_edits(_deleted(ctx, ctx.backward_line)),
                ),
            ),
            keeping(
                ctx,
                Fix(
                    alternative=True,
                    summary=T(
                        "keep the backward call of {total} and delete those of the losses it adds up", total=total
                    ),
                    trains=T("the same gradients: the total's backward puts each part's gradient into .grad once"),
                ),
            ),
        ]
    appended = _appended_instead(ctx)  # NOTE [A loss read back from a list by an old index]
    if appended is not None:
        others = {k: v for k, v in ctx.extra.items() if k not in ("appended", "read")}
        return [appended, *twice_fixes(replace(ctx, loss=ctx.extra.get("read"), extra=others))]
    products = _repeated_products(ctx)
    if products is not None:
        return [products]
    taken = _gradient_taken_first(ctx)  # NOTE [A gradient taken, then the same loss backwarded]
    if taken is not None:
        return [taken]
    rebuilt = _rebuilt_by_its_method(ctx)  # NOTE [A loss built once by a method of its object]
    if rebuilt is not None:
        return [rebuilt]
    reset = _total_started_again(ctx)
    retain = None
    if ctx.site is not None and ctx.earlier_line is not None and ctx.earlier_line != ctx.backward_line:
        retain = replace_line(
            ctx, ctx.earlier_line, with_keyword(ctx.site.text(ctx.earlier_line), "backward", "retain_graph=True")
        )
    earlier = ctx.earlier_line not in (None, ctx.backward_line) or ctx.extra.get("earlier_elsewhere") == "1"
    once = _deleted(ctx, ctx.backward_line) if earlier else None
    repeated = _step_after(ctx, ctx.backward_line) if once is not None and ctx.extra.get("stepped_since") else ()
    if repeated and once is not None and ctx.site is not None:  # NOTE [A step repeated with the second backward]
        text = ctx.site.text(once.start)
        alone = _alone_in_block(ctx, once.start, max(e.end for e in repeated))  # pass keeps the block
        once = Edit(
            once.filename,
            once.start,
            max(e.end for e in repeated),
            text[: len(text) - len(text.lstrip())] + "pass" if alone else "",
        )
    zeroed = _zeroed_before(ctx, ctx.backward_line) if once is not None and not repeated else None
    moved: tuple[Edit, ...] = ()
    if zeroed is not None:  # NOTE [A zero_grad() right before the second backward]
        once, moved = None, zeroed
    if once is None and ctx.extra.get("delete_at"):  # the second caller of one wrapper's backward line
        once = _deleted_call(ctx.extra.get("delete_in", ""), int(ctx.extra["delete_at"]))
    shown = ctx  # the loss as the text names it: (w * loss).backward() keeps its parentheses
    if ctx.loss is not None:
        shown = replace(ctx, loss=as_receiver(ctx.loss))
    return [
        *([reset] if reset is not None else []),
        keeping(
            ctx,
            Fix(
                summary=T(
                    "call {loss}.backward() once: delete the second call (the one that failed) and the optimizer "
                    "calls right after it; the first backward's gradient was already stepped",
                    loss=shown.l,
                )
                if repeated
                else T(
                    "call {loss}.backward() once: delete the second call (the one that failed), and move the "
                    "zero_grad() before it to after the step that follows it: the first backward already put "
                    "{loss}'s gradient into .grad, and that zero_grad() would clear it before the step",
                    loss=shown.l,
                )
                if zeroed is not None
                else T(
                    "call {loss}.backward() once: delete the second call (the one that failed); the first already "
                    "put {loss}'s gradient into .grad",
                    loss=shown.l,
                ),
                trains=T("what one backward of {loss} trains: each gradient once", loss=shown.l),
                edits=moved or all_edits(once),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T(
                    "if you mean two backward calls through it, pass retain_graph=True to the first", loss=shown.l
                ),
                trains=T("twice the gradient: both backward calls add {loss}'s gradient into .grad", loss=shown.l),
                edits=all_edits(retain),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T("recompute the forward before the second backward"),
                trains=T("twice the gradient, from a fresh graph each time"),
            ),
        ),
    ]


def restarted_total(
    site: Site | None, name: str | None, line: int | None, with_graph: Collection[str]
) -> tuple[int, int, int] | None:
    """A total ``name`` the code starts once (``loss = 0``), backwards, then adds a second pass's terms onto and
    backwards again at ``line`` (NOTE [A total not started again]): the earlier backward's line, the line of the
    statement that starts the total, and the line of the second accumulation's first statement. None otherwise,
    and when the second pass reads a tensor of ``with_graph`` (the frame's names holding a graph) it did not
    compute itself: its terms would go through the freed graph again."""
    tree = site.tree() if site is not None else None
    if site is None or tree is None or name is None or line is None:
        return None

    def backward_of(st: ast.stmt) -> bool:
        call = st.value if isinstance(st, ast.Expr) else None
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward"
            and ast.unparse(call.func.value) == name
        )

    def binds(st: ast.stmt) -> bool:
        return any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
            for n in ast.walk(st)
        )

    def adds(st: ast.stmt) -> bool:
        return any(
            isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
            for n in ast.walk(st)
        )

    block = next((b for b in enclosing_blocks(tree) if any(st.lineno == line for st in b)), None)
    if block is None:
        return None
    k2 = next(k for k, st in enumerate(block) if st.lineno == line)
    k1 = next((k for k in range(k2 - 1, -1, -1) if backward_of(block[k])), None)
    if k1 is None:
        return None
    between = block[k1 + 1 : k2]
    accumulating = next((st for st in between if adds(st)), None)
    if accumulating is None or any(binds(st) for st in between):
        return None  # nothing added after the first backward, or the total started again already
    stored = {n.id for st in between for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    loaded = {n.id for st in between for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if (loaded - stored - {name}) & set(with_graph):
        return None  # the second pass reads a graph the first backward went through (a shared trunk's features)
    starts = [
        k
        for k, st in enumerate(block[:k1])
        if isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Name)
        and st.targets[0].id == name
        and st.lineno == st.end_lineno
        and name not in {n.id for n in ast.walk(st.value) if isinstance(n, ast.Name)}
    ]
    if not starts or not any(adds(st) for st in block[starts[-1] + 1 : k1]):
        return None
    return block[k1].lineno, block[starts[-1]].lineno, accumulating.lineno


def _total_started_again(ctx: Context) -> Proposal | None:
    """The statement that starts the total, again before the second accumulation (NOTE [A total not started
    again])."""
    site = ctx.site
    found = restarted_total(site, ctx.loss, ctx.backward_line, ctx.extra.get("graph_names", "").split())
    if site is None or found is None:
        return None
    _, start_line, at = found
    start = site.text(start_line).strip()
    text = site.text(at)
    edit = Edit(site.filename, at, at - 1, text[: len(text) - len(text.lstrip())] + start)
    return keeping(
        ctx,
        Fix(
            summary=T(
                "start the total again before the second pass adds to it ({start}, at line {line}): as written, "
                "{loss} adds the second pass's terms onto the first pass's total, whose graph the first backward "
                "freed",
                start=start,
                line=at,
                loss=ctx.l,
            ),
            trains=T(
                "each backward of {loss} trains on its own pass's terms, once: the first pass's gradient is not "
                "counted again",
                loss=ctx.l,
            ),
            edits=(edit,),
        ),
    )


# NOTE [A total not started again]
# A loop body that runs two passes (sharpness-aware minimisation: a forward and backward at
# the weights, then at the perturbed weights) sums each pass's terms into one name with +=,
# but starts the total (loss = 0) only before the first pass. The second pass then adds onto
# the first pass's total, and its backward goes through the first pass's graph, which the
# first backward freed. Deleting the second backward, or retain_graph=True, would count the
# first pass's gradient again (or only once, at the wrong weights); the fix the code means
# starts the total again, with the statement that started it, before the second
# accumulation. Read only when both backward calls are statements of one block, the name is
# not bound again between them, the statement that starts it reads nothing of itself, and
# the second pass computes what it reads (a fresh forward): terms read from features the
# first pass computed would go through the freed graph again.


#: A call of torch.autograd.grad on a line (``torch.autograd.grad(``, ``autograd.grad(``, ``grad(``).
_GRAD_CALL = re.compile(r"(?<![\w.])(torch\.)?(autograd\.)?grad\(")


def products_again(call: BackwardCall | None, failing: BackwardCall | None) -> bool:
    """The backward that freed the graph and the failing one are the same ``torch.autograd.grad`` statement, run
    again (NOTE [Products through one graph])."""
    if call is None or failing is None or call is failing or call.location is None or failing.location is None:
        return False
    a, b = call.location, failing.location
    return (a.filename, a.lineno) == (b.filename, b.lineno) and _products_at(b.filename, b.lineno, b.code or "")


def _products_at(filename: str, line: int, code: str) -> bool:
    """``code`` (the text of ``line``) runs ``torch.autograd.grad`` without ``retain_graph``, and each run of it
    takes a product with another vector (:func:`_another_vector`)."""
    return (
        bool(_GRAD_CALL.search(code))
        and ".backward(" not in code
        and "retain_graph" not in code
        and _another_vector(filename, line)
    )


def _another_vector(filename: str, line: int) -> bool:
    """Each run of the ``autograd.grad`` call on ``line`` takes a product with another vector: it passes
    ``grad_outputs`` (a third argument), or its output reads an argument of the function or lambda around it (``g
    @ v`` in ``def hvp(v)``), or it differentiates with respect to a loop's variable (``for tok in tokens:
    grad(loss, tok)``: each run another input of one graph). An energy computed once and differentiated again at each step of a sampler is not a
    product: the same gradient each time, of inputs the step then moves."""
    tree = parse(source_of(filename))
    if tree is None:
        return False
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and getattr(n, "lineno", None) == line
        and ast.unparse(n.func).rsplit(".", 1)[-1] == "grad"
        and n.args
    ]
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension))]
    for call in calls:
        if len(call.args) >= 3 or any(k.arg == "grad_outputs" for k in call.keywords):
            return True
        inputs = (
            call.args[1] if len(call.args) >= 2 else next((k.value for k in call.keywords if k.arg == "inputs"), None)
        )
        wrt = {x.id for x in ast.walk(inputs) if isinstance(x, ast.Name)} if inputs is not None else set()
        for loop in loops:  # for tok in tokens: grad(loss, tok): each run differentiates with respect to another input
            body = loop.body if isinstance(loop, (ast.For, ast.AsyncFor)) else ()
            inside = any(n is call for st in body for n in ast.walk(st)) or (
                isinstance(loop, ast.comprehension) and _in_comprehension(tree, loop, call)
            )
            if inside and wrt & {x.id for x in ast.walk(loop.target) if isinstance(x, ast.Name)}:
                return True
        read = {x.id for x in ast.walk(call.args[0]) if isinstance(x, ast.Name)}
        for scope in ast.walk(tree):
            if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if not (scope.lineno <= line <= (scope.end_lineno or scope.lineno)):
                continue
            args = scope.args
            if read & {x.arg for x in (*args.posonlyargs, *args.args, *args.kwonlyargs)}:
                return True
    return False


def _in_comprehension(tree: ast.AST, generator: ast.comprehension, call: ast.Call) -> bool:
    """``call`` is in the element (or a later condition) of the comprehension that has ``generator``."""
    for n in ast.walk(tree):
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and generator in n.generators:
            parts = [n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]
            parts += [c for g in n.generators for c in g.ifs]
            return any(x is call for part in parts for x in ast.walk(part))
    return False


def _repeated_products(ctx: Context) -> Proposal | None:
    """``torch.autograd.grad`` run again by the same statement on one graph (a solver's loop of vector-Jacobian or
    Hessian-vector products): ``retain_graph=True`` on that call (NOTE [Products through one graph])."""
    site, line = ctx.site, ctx.backward_line
    if site is None or line is None or ctx.earlier_line not in (None, line):
        return None
    text = site.text(line)
    if not ctx.extra.get("products") and not re.search(r"autograd\.grad\(", text):
        return None
    if not _products_at(site.filename, line, text):
        return None  # the same gradient again (an energy computed once, a sampler's steps): no product to keep
    new = with_keyword(text, "grad", "retain_graph=True")
    edit = replace_line(ctx, line, new) if new and new != text else None
    if edit is None:
        return None
    # autograd.grad's output is no loss the loop trains with: the claims are the loop's other losses', as they stand
    return Proposal(
        Fix(
            keeps_forward=True,
            claims=ctx.other_claims,
            summary=T(
                "pass retain_graph=True to the torch.autograd.grad call at line {line}: it runs again on the same "
                "graph (each run another product or another input), and the first run freed it",
                line=line,
            ),
            trains=T(
                "the same training: torch.autograd.grad returns its products and writes no .grad, so nothing is "
                "counted twice; the graph stays in memory until the last product"
            ),
            edits=(edit,),
        ),
        None,
        True,
    )


# NOTE [Products through one graph]
# torch.autograd.grad run again and again on one graph by one statement: an
# implicit-function or deep-equilibrium backward solving its fixed point, a
# conjugate-gradient loop of Hessian-vector products (TRPO, natural gradients), a
# Neumann series. Each run takes the product of the graph's Jacobian with another
# vector; the first run frees the graph. Unlike two backward calls of one loss, no
# gradient is added twice: autograd.grad returns its results and leaves every
# .grad alone. So the fix keeps every run and passes retain_graph=True to that
# call; the graph is freed when nothing refers to it any more.


# NOTE [Twice]
# A second backward of the same graph, with no optimizer step between, adds the
# same gradient again: .grad holds twice it, and the step after it takes a step
# twice as long (Adam's normalisation hides the factor, SGD's does not). Code that
# means it says so (retain_graph=True on the first), so a failing second call is
# one too many: deleting it keeps everything the first one trained.
