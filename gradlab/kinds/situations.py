"""GL0003's situations beyond a cut on the loss's path, each with its fix: a closure an optimizer runs with grad
off, a reentrant checkpoint on inputs without grad, an update inside a helper that an evaluation calls, a
derivative taken with grad off, a total nothing was added to, and the cuts a tracker recorded (a grad-off block
in a caller, a list copied by ``torch.tensor``). A call on the loss's path that returns values without a graph (a
model in eval mode, a draw with ``.sample()``, a gradient without ``create_graph``) is
:mod:`gradlab.kinds.graphless_calls`'s."""

from __future__ import annotations

import ast
import linecache
import re
import textwrap
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from ..claims import failure_claims
from ..context import Context
from ..edits import Edit
from ..evidence import Failure, calls_into, torch_alias
from ..fixes import Fix, Proposal, indent_of, insert_lines, source_of, unwrapped
from ..i18n import T
from ..judge import judged
from ..location import Location
from ..loop import site_intent
from ..rebuild import from_graph
from ..source import (
    calls_method,
    enclosing,
    enclosing_blocks,
    feeding,
    function_of,
    grad_off,
    loop_body_of,
    names,
    parse,
    statement_at,
    under_grad_off,
)

if TYPE_CHECKING:
    pass
from .cut_path import backward_target, calls_named

__all__ = [
    "called_modules",
    "caller_grad_off_fix",
    "closure_fix",
    "derivative_fix",
    "empty_total_fix",
    "intent_at",
    "one_edit",
    "recorded_block",
    "recorded_block_fix",
    "recorded_stack_fix",
    "reentrant_fix",
    "trains_text",
    "update_out_of_helper",
]


def closure_fix(f: Failure, tree: ast.Module, line: int) -> tuple[Fix, ...]:
    """The failing backward runs in a closure handed to an optimizer's ``step`` (``optimizer.step(closure)``), and a
    step decorated with ``@torch.no_grad()`` calls it with grad off (Lightning's closure through a custom
    optimizer): ``@torch.enable_grad()`` on the closure, as torch's own optimizers do around their closure call."""
    site = f.site
    function = function_of(tree, line)
    if site is None or function is None or function.decorator_list or not site.holds(function.body[0].lineno):
        return ()
    handed = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "step"
        and any(isinstance(a, ast.Name) and a.id == function.name for a in (*n.args, *(k.value for k in n.keywords)))
        for n in ast.walk(tree)
    )
    if not handed:
        return ()
    alias = torch_alias(f.namespace) or "torch"
    indent = indent_of(site, function.lineno) if site.holds(function.lineno) else None
    if indent is None:
        text = linecache_line(site.filename, function.lineno)
        indent = text[: len(text) - len(text.lstrip())]
    fix = Fix(
        summary=T(
            "run the closure with grad on: put @{alias}.enable_grad() on {name}(); the optimizer's step calls it "
            "with grad off (its update runs under no_grad)",
            alias=alias,
            name=function.name,
        ),
        trains=T("what the closure's loss reaches, as the step that calls it asks"),
        edits=(Edit(site.filename, function.lineno, function.lineno - 1, f"{indent}@{alias}.enable_grad()"),),
    )
    return tuple(
        replace(x, claims=x.claims or failure_claims(f))
        for x in judged([Proposal(fix, None, True)], Context(site=site))
    )


# NOTE [A reentrant checkpoint on inputs without grad]
# torch.utils.checkpoint's reentrant implementation (use_reentrant=True) runs the function
# under no_grad and builds its node only if one of the *inputs* requires grad: a layer
# checkpointed on hidden states from a frozen embedding (LoRA fine-tuning with the base
# model frozen) returns an output without a graph, although the layer's own parameters
# (the adapters) require grad; the loss then has no grad_fn. torch's documentation
# recommends use_reentrant=False, which records the parameters' gradients in any case
# (gradlab.WRITERS, the checkpoint row). Read from the user's files: a checkpoint call with
# use_reentrant=True, when no cut lies on the loss's path in the failing function.
def reentrant_fix(f: Failure) -> tuple[Fix, ...]:
    files = {f.site.filename} if f.site is not None else set()
    files |= {frame.f_code.co_filename for frame, _line in f.outer}
    for filename in sorted(files):
        source = "".join(linecache.getlines(filename))
        tree = parse(source) if source else None
        for node in ast.walk(tree) if tree is not None else ():
            if not (isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "checkpoint"):
                continue
            flag = next((k for k in node.keywords if k.arg == "use_reentrant"), None)
            if flag is None or not (isinstance(flag.value, ast.Constant) and flag.value.value is True):
                continue
            if node.lineno != node.end_lineno:
                continue
            text = linecache_line(filename, node.lineno)
            new = re.sub(r"use_reentrant\s*=\s*True", "use_reentrant=False", text, count=1)
            if new == text:
                continue
            fix = Fix(
                summary=T(
                    "checkpoint with use_reentrant=False at {where}: the reentrant checkpoint builds no graph when "
                    "none of its inputs requires grad (hidden states from a frozen embedding), even if the "
                    "checkpointed layer's own parameters do",
                    where=Location(filename, node.lineno).where,
                ),
                trains=T(
                    "{loss} then trains the checkpointed layers' parameters that require grad", loss=T("the loss")
                ),
                edits=(Edit(filename, node.lineno, node.lineno, new),),
            )
            return tuple(
                replace(x, claims=x.claims or failure_claims(f))
                for x in judged([Proposal(fix, None, True)], Context(site=f.site))
            )
    return ()


def linecache_line(filename: str, line: int) -> str:
    return linecache.getline(filename, line).rstrip("\n")


def update_out_of_helper(f: Failure, tree: ast.Module | None) -> tuple[Fix, ...]:
    """The update (zero_grad, backward, step) of a helper that the training loop and, under a grad-off block, the
    evaluation both call, moved out of the helper to right after the training loop's call (NOTE [An update inside
    a helper evaluation calls too])."""
    site, loc = f.site, f.location
    recorded = recorded_block(f, tree)
    if site is None or tree is None or loc is None or recorded is None or loc.filename != site.filename:
        return ()
    block, _call, cut_at = recorded
    helper = function_of(tree, loc.lineno)
    if helper is None:
        return ()
    body = helper.body
    at = next((i for i, st in enumerate(body) if st.lineno <= loc.lineno <= (st.end_lineno or st.lineno)), None)
    if at is None or body[at].lineno != body[at].end_lineno:
        return ()
    first, last = at, at
    if first > 0 and calls_method(body[first - 1], ("zero_grad",)):
        first -= 1
    while last + 1 < len(body) and calls_method(body[last + 1], ("step",)):
        last += 1
    update = body[first : last + 1]
    returned = body[last + 1] if last + 1 < len(body) else None
    if not isinstance(returned, ast.Return) or returned.value is None:
        return ()
    values = returned.value.elts if isinstance(returned.value, ast.Tuple) else [returned.value]
    if not all(isinstance(v, ast.Name) for v in values):
        return ()
    out = [v.id for v in values if isinstance(v, ast.Name)]
    params = {a.arg for a in helper.args.args}
    read = {n.id for st in update for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local = {
        n.id for st in helper.body for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    if any(r in local and r not in out for r in read) or any(r in params and r != "self" for r in read):
        return ()  # the update reads a local the caller does not get back
    calls = [
        st
        for st in ast.walk(tree)
        if isinstance(st, ast.Assign)
        and st.lineno == st.end_lineno
        and isinstance(st.value, ast.Call)
        and ast.unparse(st.value.func).split(".")[-1] == helper.name
    ]
    evaluating = [c for c in calls if block.lineno < c.lineno <= (block.end_lineno or block.lineno)]
    training = [c for c in calls if c not in evaluating and not under_grad_off(tree, c.lineno)]
    if not evaluating or len(training) != 1:
        return ()
    call = training[0]
    targets = call.targets[0].elts if isinstance(call.targets[0], ast.Tuple) else [call.targets[0]]
    if len(targets) != len(out) or not all(isinstance(t, ast.Name) and t.id == o for t, o in zip(targets, out)):
        return ()  # the caller binds the results under other names: the moved lines would read nothing
    lines = site.source.splitlines()
    caller_line = lines[call.lineno - 1]
    indent = caller_line[: len(caller_line) - len(caller_line.lstrip())]
    moved = "\n".join(
        indent + lines[k - 1].strip() for st in update for k in range(st.lineno, (st.end_lineno or st.lineno) + 1)
    )
    edits = [Edit(site.filename, k, k, "") for st in update for k in range(st.lineno, (st.end_lineno or st.lineno) + 1)]
    edits.append(Edit(site.filename, call.lineno + 1, call.lineno, moved))
    fix = Fix(
        summary=T(
            "move the update out of {helper}() to right after its call at {where}: the evaluation at {block} calls "
            "{helper}() under a grad-off block, where the backward finds no graph",
            helper=helper.name,
            where=Location(site.filename, call.lineno).where,
            block=cut_at.where,
        ),
        trains=T(
            "the training loop's batches train what they trained; the evaluation computes its loss without a graph "
            "and trains nothing"
        ),
        edits=tuple(sorted(edits, key=lambda e: e.start)),
    )
    return tuple(
        replace(x, claims=x.claims or failure_claims(f))
        for x in judged([Proposal(fix, None, True)], Context(site=site))
    )


# NOTE [An update inside a helper evaluation calls too]
# A training step factored into a helper (process_batch: forward, loss, zero_grad,
# backward, step) that the validation calls too, under torch.no_grad(): there the
# backward finds a loss without a graph. Taking the no_grad() off the validation
# would make it train on validation data; the update belongs to the training loop.
# When the helper's update statements read only what it returns (and self), and the
# file has one call of it outside any grad-off block that binds the returned values
# under the same names, the update lines move from the helper to right after that
# call: training is unchanged, evaluation trains nothing.


def derivative_fix(f: Failure, tree: ast.Module | None, line: int | None) -> tuple[Fix, ...]:
    """A derivative taken where grad is off (NOTE [A derivative taken with grad off]): the statements that compute
    what ``torch.autograd.grad`` differentiates, from its inputs, run under ``torch.enable_grad()`` with the inputs
    made to require grad."""
    site = f.site
    if site is None or tree is None or line is None or f.error is None or torch.is_grad_enabled():
        return ()
    st = statement_at(tree, line)
    if st is None:
        return ()
    path = [b for b in enclosing_blocks(tree) if st in b]
    call = next((c for c in calls_named(st, frozenset({"grad"})) if "autograd" in ast.unparse(c.func)), None)
    if not path or call is None or len(call.args) < 2:
        return ()
    block = path[0]
    inputs = call.args[1]
    items = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
    wanted = [x.id for x in items if isinstance(x, ast.Name)]
    values = [f.namespace.get(n) for n in wanted]
    if len(wanted) != len(items) or not all(
        isinstance(v, torch.Tensor) and v.is_floating_point() and not v.requires_grad for v in values
    ):
        return ()
    here = block.index(st)
    before = block[:here]
    made = [i for i, b in enumerate(before) if names(b, ast.Store) & set(wanted)]
    start = (made[-1] + 1) if made else 0
    feeds = feeding(before[start:], names(call.args[0], ast.Load))
    first = min([*feeds, st.lineno])
    last = st.end_lineno or st.lineno
    if not all(
        isinstance(b, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)) for b in block if first <= b.lineno <= last
    ):
        return ()
    torch_name = torch_alias(f.namespace) or "torch"
    indent = indent_of(site, first)
    body = textwrap.dedent("\n".join(site.text(i) for i in range(first, last + 1)))
    inner = "\n".join(f"{n}.requires_grad_(True)" for n in wanted) + "\n" + body
    text = f"{indent}with {torch_name}.enable_grad():\n" + textwrap.indent(inner, indent + "    ")
    edit = Edit(site.filename, first, last, text)
    fix = Fix(
        summary=T(
            "take the derivative with grad on: {call} runs here with grad off (inside a torch.no_grad() block, an "
            "autograd.Function's forward or an evaluation), so no graph is recorded from {inputs}; run the lines "
            "that compute what it differentiates under {enable}, with {inputs} requiring grad",
            call=f"{torch_name}.autograd.grad",
            inputs=", ".join(wanted),
            enable=f"{torch_name}.enable_grad()",
        ),
        trains=T(
            "what your code trains: the derivative is computed as where grad is on, and the parameters the loss "
            "reaches through it train as they do there"
        ),
        edits=(edit,),
    )
    # no claims: what the loss reaches once the derivative records a graph is not in the code as it ran
    return judged([Proposal(fix, None, True)], Context(site=site))


#: Calls that make a tensor from values alone (no graph): a total started from one has a graph only once a term
#: with one is added to it.
_STARTS = frozenset({"Tensor", "tensor", "zeros", "zeros_like", "full", "as_tensor", "FloatTensor"})


def empty_total_fix(f: Failure, tree: ast.Module | None, line: int | None) -> tuple[Fix, ...]:
    """A total started from a constant at the top of each iteration, whose terms are added under a condition or
    an inner loop, backwarded on an iteration that added none (NOTE [A total nothing was added to])."""
    site = f.site
    if site is None or tree is None or line is None or f.error is None:
        return ()
    body = loop_body_of(tree, line)
    st = statement_at(tree, line)
    target = backward_target(st) if st is not None else None
    total = target.id if isinstance(target, ast.Name) else None
    value = f.namespace.get(total) if total else None
    if body is None or st is None or total is None or not isinstance(value, torch.Tensor) or value.requires_grad:
        return ()
    if not value.is_floating_point() or bool(value.detach().ne(0).any()):
        return ()  # terms were added, cut from the graph (an .item() on the way): the cut is the problem, not this
    here = next((i for i, b in enumerate(body) if b.lineno <= line <= (b.end_lineno or b.lineno)), None)
    if here is None:
        return ()
    starts = [
        i
        for i, b in enumerate(body[:here])
        if isinstance(b, ast.Assign)
        and [ast.unparse(t) for t in b.targets] == [total]
        and (
            (isinstance(b.value, ast.Constant) and b.value.value == 0)
            or (isinstance(b.value, ast.Call) and ast.unparse(b.value.func).split(".")[-1] in _STARTS)
        )
    ]
    if not starts:
        return ()
    start = starts[-1]
    adds = [
        n
        for b in body[start + 1 : here]
        for n in ast.walk(b)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == total
    ]
    # every term added under a condition or an inner loop: an iteration may add none
    if not adds or any(b in adds for b in body[start + 1 : here]):
        return ()
    first = here
    while first > start + 1 and calls_method(body[first - 1], ("zero_grad",)):
        first -= 1  # before the update's zero_grad(): the whole update is skipped
    edit = insert_lines(Context(site=site), body[first].lineno, f"if not {total}.requires_grad:\n    continue")
    if edit is None:
        return ()
    fix = Fix(
        summary=T(
            "skip the update when nothing was added to {total}: it starts from a constant each iteration and "
            "gets its terms under a condition, and this time none was added, so there is nothing to backward",
            total=total,
        ),
        trains=T(
            "{total} trains what it trained on every iteration that adds a term; an iteration without one has "
            "no gradient to step on, and is skipped",
            total=total,
        ),
        edits=(edit,),
    )
    return judged([Proposal(fix, None, True)], Context(site=site))


# NOTE [A total nothing was added to]
# A loss summed over the items of a batch that qualify (the students with an answer, the boxes that match) starts
# from a constant (torch.Tensor([0.0]), torch.zeros(1), 0.0) and gets each term under a condition. On a batch with
# no qualifying item, nothing is added: the total is the constant, with no graph, and its backward raises
# "element 0 of tensors does not require grad". The code computes no gradient on such a batch; the update is
# skipped (`if not total.requires_grad: continue` before it), as the loop does on the batches that add terms.
# Offered when the backwarded name was set from a constant at the top of the loop's body and is only added to
# inside compound statements, and it has no graph at the failure.


def _grad_off_at(filename: str, line: int) -> str | None:
    """The grad-off call in effect at ``line`` of ``filename`` by the code's own structure: a ``with
    torch.no_grad():`` around it, or such a decorator on its function (``"torch.no_grad()"``), else None."""
    tree = parse(source_of(filename))
    if tree is None:
        return None
    for node in reversed(enclosing(tree, line)):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            off = next((o for item in node.items if (o := grad_off(item.context_expr)) is not None), None)
            if off is not None:
                return off
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return next((o for d in node.decorator_list if (o := grad_off(d)) is not None), None)
    return None


def caller_grad_off_fix(f: Failure, tree: ast.Module | None, line: int | None) -> tuple[Fix, ...]:
    """A function that differentiates with ``torch.autograd.grad``, called where a caller turned grad off (NOTE [A
    derivative its caller runs with grad off]): the function decorated with ``@torch.enable_grad()``."""
    site = f.site
    if site is None or tree is None or line is None or f.error is None:
        return ()
    st = statement_at(tree, line)
    function = function_of(tree, line)
    call = (
        next((c for c in calls_named(st, frozenset({"grad"})) if "autograd" in ast.unparse(c.func)), None)
        if st is not None
        else None
    )
    if function is None or call is None or len(call.args) < 2 or _grad_off_at(site.filename, line) is not None:
        return ()
    inputs = call.args[1]
    items = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
    values = [f.namespace.get(x.id) if isinstance(x, ast.Name) else None for x in items]
    if not all(isinstance(v, torch.Tensor) and v.requires_grad for v in values):
        return ()  # inputs that require no grad: enable_grad alone records nothing (derivative_fix's case)
    caller = next(
        (
            (frame.f_code.co_name, off)
            for frame, at in f.outer
            if (off := _grad_off_at(frame.f_code.co_filename, at)) is not None
        ),
        None,
    )
    if caller is None:
        return ()
    torch_name = torch_alias(f.namespace) or "torch"
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    indent = indent_of(site, first)
    edit = Edit(site.filename, first, first - 1, f"{indent}@{torch_name}.enable_grad()")
    name, off = caller
    fix = Fix(
        summary=T(
            "decorate {function}() with @{enable}: {caller} calls it under {off}, where the autograd.grad "
            "inside finds no graph to differentiate; the derivative is part of what {function}() computes, "
            "wherever it is called",
            function=function.name,
            enable=f"{torch_name}.enable_grad()",
            caller=f"{name}()" if name != "<module>" else T("the script's top level"),
            off=off,
        ),
        trains=T(
            "what your code trains: {function}() computes its derivative as it does where grad is on, and the "
            "code that calls it under {off} still keeps its own results out of any graph",
            function=function.name,
            off=off,
        ),
        edits=(edit,),
        claims=failure_claims(f),
    )
    return judged([Proposal(fix, None, True)], Context(site=site))


# NOTE [A derivative its caller runs with grad off]
# A function of the user's code may take a derivative as part of what it computes (a score as minus the
# gradient of an energy, forces from a potential, an input-convex network's gradient), with inputs it makes
# require grad itself. Called from code that turned grad off (a sampler decorated with @torch.no_grad(), an
# evaluation under `with torch.no_grad():`), its forward records no graph and autograd.grad raises "element 0
# of tensors does not require grad". The caller's no_grad is right for the caller (samples need no graph); the
# derivative is the function's own business. The fix is the one torch documents: @torch.enable_grad() on that
# function, so it computes the same derivative wherever it is called, and training, which calls it with grad
# on, is unchanged. Offered when the failing call is autograd.grad, its inputs require grad, the function
# itself has no grad-off block or decorator around the call, and a caller's frame is under one.


# NOTE [A derivative taken with grad off]
# A function that takes a derivative of its own (a controller u = -dV/dq, forces from an energy, a gradient
# penalty) may run where grad is off: inside an autograd.Function's forward (an adjoint ODE solver's solve),
# under a no_grad evaluation, in an optimizer's step. There its inputs record nothing and autograd.grad raises
# "element 0 of tensors does not require grad". The derivative is part of what the function computes, not
# of a loss to take out of the block: the fix is the block torch documents for this, torch.enable_grad(),
# around the statements that compute what autograd.grad differentiates (from the last statement that makes
# its inputs), with the inputs made to require grad. Offered when the failing call is autograd.grad, grad was
# off when it raised, its inputs are names of floating-point tensors that require no grad, and no cut or
# grad-off block the code or the record shows explains it.


def recorded_block(f: Failure, tree: ast.Module | None) -> tuple[ast.With, str, Location] | None:
    """The grad-off ``with`` block of the failing function's file that a tracker saw cut the graph behind the
    failing backward: the block, its call (``torch.no_grad()``) and where it was entered; None if none."""
    found = f.recorder.cuts.cut_for(f.tensors) if f.recorder is not None else None
    site = f.site
    if found is None or site is None or tree is None or found[0].location.filename != site.filename:
        return None
    at = found[0].location
    block = next((n for n in ast.walk(tree) if isinstance(n, ast.With) and n.lineno == at.lineno), None)
    call = next((c for item in block.items if (c := grad_off(item.context_expr))), None) if block else None
    return (block, call, at) if block is not None and call is not None else None


def recorded_block_fix(f: Failure, tree: ast.Module | None) -> tuple[Fix, ...]:
    """The grad-off block a tracker saw cut the graph, in a caller of the failing function (a helper that calls
    ``autograd.grad`` run under ``torch.no_grad()``), taken away: its statements run with grad on."""
    site = f.site
    recorded = recorded_block(f, tree)
    if recorded is None or site is None:
        return ()
    block, call, at = recorded
    edit = unwrapped(site, block)
    fix = Fix(
        summary=T(
            "run the loss's forward and backward with grad on: take them out of the {call} block at {where}",
            call=call,
            where=at.where,
        ),
        trains=T(
            "{loss} then trains the parameters its forward uses, as the optimizer step after it asks",
            loss=T("the loss"),
        ),
        edits=one_edit(edit),
    )
    return tuple(
        replace(x, claims=x.claims or failure_claims(f))
        for x in judged([Proposal(fix, None, True)], Context(site=site))
    )


def recorded_stack_fix(f: Failure) -> tuple[Fix, ...]:
    """Each line a tracker saw copy a list of graph tensors into a new tensor (``torch.tensor(self.log_probs)``, in
    any function of the user's code), stacked instead: ``torch.stack(...)`` keeps their graph (NOTE [A list copied
    by torch.tensor])."""
    site = f.site
    if f.recorder is None or site is None:
        return ()
    seen: dict[tuple[str, int], Location] = {}
    reached: set[int] = set()
    for cut in f.recorder.cuts.cuts:
        if cut.label == "torch.tensor([...])":
            seen.setdefault((cut.location.filename, cut.location.lineno), cut.location)
            reached |= cut.reaches
    edits: list[Edit] = []
    for loc in seen.values():
        text = linecache_line(loc.filename, loc.lineno)
        body = text.strip()
        new = from_graph(body, torch_alias(f.namespace) or "torch", stacked=True) if body else None
        if new is None:
            return ()  # a line gradlab cannot rewrite: no partial fix
        edits.append(Edit(loc.filename, loc.lineno, loc.lineno, text[: len(text) - len(text.lstrip())] + new))
    if not edits:
        return ()
    line = f.location.lineno if f.location is not None and f.location.filename == site.filename else None
    here = statement_at(site.tree(), line) if line is not None else None  # type: ignore[arg-type]
    target = backward_target(here) if here is not None else None
    loss = ast.unparse(target) if target is not None else None
    reach = tuple(sorted(m for m, ids in site.modules.items() if ids & reached))
    fix = Fix(
        summary=T(
            "stack the tensors instead of copying their values: torch.stack() where torch.tensor() copies a list of "
            "tensors with a graph (at {where}) keeps that graph",
            where=", ".join(loc.where for loc in seen.values()),
        ),
        trains=trains_text(loss, reach),
        edits=tuple(edits),
    )
    ctx = Context(loss=loss, site=site, backward_line=line, reach=reach)
    if line is not None:
        ctx = replace(ctx, intent=intent_at(site, line))
    return tuple(judged([Proposal(fix, reach, False, describe=bool(reach))], ctx))


def called_modules(site: Any, node: ast.AST) -> tuple[str, ...]:
    """The user's models (``site.modules``) that ``node``'s code calls (``model(x)``, ``self.encoder(x)``)."""
    called = {ast.unparse(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return tuple(sorted(m for m in site.modules if any(calls_into(c, m) for c in called)))


def intent_at(site: Any, line: int) -> Any:
    intent = site_intent(site, line)
    return intent if intent.known else None


def trains_text(loss: str | None, reach: tuple[str, ...]) -> Any:
    if reach:
        return T(
            "{loss} trains {models} through the graph it is computed from",
            loss=loss or T("the loss"),
            models=", ".join(reach),
        )
    return T("{loss} trains the parameters of the graph it is computed from", loss=loss or T("the loss"))


def one_edit(edit: Edit | None) -> tuple[Edit, ...]:
    return (edit,) if edit is not None else ()
