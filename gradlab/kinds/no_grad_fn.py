"""GL0003 ``no_grad_fn``: backward on a tensor without a graph; where the value left the graph, and the fix.

NOTE [The cut on the loss's path]
The tensor backward was called on has no graph because every path from it to the
parameters was cut. The cut that matters is on the loss's own data path: read from
the code of the failing function, going back from the backward's tensor through the
statements that compute it, the latest statement that builds a tensor from a value
(``torch.tensor(...)``, ``torch.from_numpy(...)``: *rebuilt*), and the statement that
took that value out of the graph (``.item()``, ``.numpy()``, ``.tolist()``,
``.detach()``, ``.data``: *left the graph*); else a ``with torch.no_grad():`` (or
``inference_mode()``) block around those statements, or such a decorator on the
function. A tracker's record of cuts (NOTE [Cuts] in writes.py) is used only when the
code shows none: the latest cut it saw may be anywhere (a ``no_grad`` in a model's
constructor). Fixes build the loss from the graph at the line that rebuilt it (the
graph's own tensor instead of its copy), take the cut off the path, or run the
statements out of the ``no_grad`` block.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING

import torch

from ..advice import message_fixes
from ..claims import claims_of_others
from ..context import Context
from ..edits import Edit
from ..evidence import Failure, backward_line_after, leaves_of, torch_alias
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of, replace_line, unwrapped
from ..i18n import T, Words, join
from ..judge import judged
from ..location import Location, frame_names
from ..loop import read_site
from ..messages import Message
from ..rebuild import from_graph, without_detach
from ..rewrite import split_comment
from ..source import (
    blocks,
    function_of,
    names,
    parse,
    preceding,
    statement_at,
)

if TYPE_CHECKING:
    from ..recorder import Recorder
from .cut_path import PathCut, backward_target, path_cut, soft_argmax
from .graphless_calls import eval_mode_fix, gradient_without_graph_fix, sampled_fix
from .numpy_round_trip import helper_round_trip_fix, inline_round_trip_fix, inner_round_trip_fix
from .situations import (
    called_modules,
    caller_grad_off_fix,
    closure_fix,
    derivative_fix,
    empty_total_fix,
    intent_at,
    one_edit,
    recorded_block,
    recorded_block_fix,
    recorded_stack_fix,
    reentrant_fix,
    trains_text,
    update_out_of_helper,
)

__all__ = ["explain", "located_cut", "no_graph", "locate", "path_cut"]


def explain(m: Message) -> Explanation:
    return Explanation(
        kind="no_grad_fn",
        summary=T(
            "Element {index} of the tensors you called backward on has no graph:"
            " it does not require grad, so there is nothing to differentiate.",
            index=m.index,
        ),
        message=m.text,
        torch_wording=T("any torch release"),
        meaning=(
            T("The loss was computed from tensors none of which requires grad, or outside autograd's recording."),
        ),
        causes=(
            T("The forward ran under torch.no_grad() or torch.inference_mode() (e.g. an eval loop)."),
            T("The parameters have requires_grad=False (frozen) or the input was .detach()ed."),
            T("The loss was rebuilt from numbers: torch.tensor(loss.item()) or a numpy round trip."),
        ),
        fixes=message_fixes("no_grad_fn"),
    )


def located_cut(explanation: Explanation, tensors: Sequence[object], recorder: Recorder | None) -> Explanation | None:
    """``explanation`` located at the cut a tracker saw behind a backward on ``tensors``, or None if it saw none.

    The one rule for the note after the error and for :func:`gradlab.check` before the backward.
    """
    found = recorder.cuts.cut_for(tensors) if recorder is not None else None
    if found is None:
        return None
    cut, exact = found
    return explanation.located(cut.label, cut.location, exact)


def no_graph(
    tensors: Sequence[object], recorder: Recorder | None = None, frame: FrameType | None = None
) -> Explanation | None:
    """Why a backward on ``tensors`` would fail for want of a graph (GL0003), before it runs; None if it would not.

    torch refuses the first tensor that does not require grad ("element i of tensors does
    not require grad and does not have a grad_fn"). With ``frame`` (the caller of
    :func:`gradlab.check`) the explanation is located on the path of the next backward
    there, by the rule the note after the error uses (NOTE [The cut on the loss's path]);
    else under a tracker (``recorder``) at the cut it saw.

    Example::

        >>> w = torch.ones(2, requires_grad=True)
        >>> no_graph([(w * 2).sum().detach()]).code
        'GL0003'
        >>> no_graph([(w * 2).sum()]) is None
        True
    """
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor) and not t.requires_grad:
            text = f"element {i} of tensors does not require grad and does not have a grad_fn"  # torch's words
            message = Message("no_grad_fn", text, index=i)
            site = read_site(frame) if frame is not None else None
            tree = site.tree() if site is not None else None
            line = backward_line_after(site, site.lineno) if site is not None and tree is not None else None
            if site is not None and line is not None:
                failure = Failure(
                    None, message, Location(site.filename, line), site, frame_names(frame), recorder, tuple(tensors)
                )
                return locate(failure)
            explanation = explain(message)
            return located_cut(explanation, tensors, recorder) or explanation
    return None


def locate(f: Failure) -> Explanation:
    """The explanation of a backward on a tensor without a graph, located at the cut on its path, with fixes."""
    e = explain(f.message)
    site = f.site
    tree = site.tree() if site is not None else None
    line = (
        f.location.lineno
        if f.location is not None and site is not None and site.filename == f.location.filename
        else None
    )
    models = {
        k: type(v).__name__
        for k, v in f.namespace.items()
        if isinstance(k, str) and isinstance(v, torch.nn.Module) and not k.startswith("_")
    }
    cut = path_cut(tree, line, models) if tree is not None and line is not None else PathCut()
    closure = closure_fix(f, tree, line) if tree is not None and line is not None and not cut.found else ()
    if not cut.found and not closure:
        closure = reentrant_fix(f)
    if closure and site is not None and line is not None:  # located at the closure's backward, not a cut elsewhere
        label = T("here: this closure runs inside an optimizer step that turns grad off")
        return replace(e, spans=(Span(Location(site.filename, line), label),), fixes=(*closure, *e.fixes))
    empty = empty_total_fix(f, tree, line) if not closure else ()
    if empty and site is not None and line is not None:  # a total nothing was added to in this iteration
        label = T("here: nothing was added to the total this time, so it has no graph")
        return replace(e, spans=(Span(Location(site.filename, line), label),), fixes=(*empty, *e.fixes))
    # positions alone are a weaker cut than a model's eval branch or a sample drawn without its graph, which explain
    # a loss without a graph whatever positions the code also takes (NOTE [Positions on the loss's path])
    weak = bool(cut.positions) and not (cut.rebuilt or cut.left or cut.block or cut.decorator or cut.inside)
    evaluating = eval_mode_fix(f, tree, cut, line) if (not cut.found or weak) and not closure else None
    if evaluating is not None and site is not None and line is not None:  # NOTE [A model whose eval branch cuts]
        label_at, fix = evaluating
        label = T("cut: this model is in eval mode, and its forward's eval branch returns values without a graph")
        return replace(e, spans=(Span(label_at, label),), fixes=(fix, *e.fixes))
    taken = gradient_without_graph_fix(f, tree, cut, line) if not cut.found and not closure else None
    if taken is not None:  # NOTE [A gradient taken without its graph]
        label_at, fix = taken
        label = T("cut: torch.autograd.grad here returns a gradient without a graph (no create_graph=True)")
        return replace(e, spans=(Span(label_at, label),), fixes=(fix, *e.fixes))
    sampled = sampled_fix(f, tree, cut, line) if (not cut.found or weak) and not closure else None
    if sampled is not None:  # NOTE [A sample drawn without its reparameterisation]
        label_at, fix = sampled
        label = T("cut: .sample() here draws without a graph; .rsample() keeps the path to the parameters")
        return replace(e, spans=(Span(label_at, label),), fixes=(fix, *e.fixes))
    if site is None or tree is None or line is None or not cut.found:
        called = caller_grad_off_fix(f, tree, line) if not closure else ()
        if called and site is not None and line is not None:  # NOTE [A derivative its caller runs with grad off]
            label = T("here: a caller turned grad off, so this derivative finds no graph")
            return replace(e, spans=(Span(Location(site.filename, line), label),), fixes=(*called, *e.fixes))
        derivative = derivative_fix(f, tree, line) if not closure and recorded_block(f, tree) is None else ()
        if derivative and site is not None and line is not None:  # grad is off where the derivative is taken
            label = T("here: grad is off where this derivative is taken")
            return replace(e, spans=(Span(Location(site.filename, line), label),), fixes=(*derivative, *e.fixes))
        recorded = located_cut(e, f.tensors, f.recorder)
        if recorded is None:
            return replace(e, fixes=(*closure, *e.fixes))
        return replace(
            recorded,
            fixes=(
                *closure,
                *_numpy_helper_fix(f, recorded.cut_at),
                *recorded_stack_fix(f),
                *update_out_of_helper(f, tree),
                *recorded_block_fix(f, tree),
                *recorded.fixes,
            ),
        )
    where = site.filename
    spans: list[Span] = []
    if cut.left is not None and cut.rebuilt is not None and cut.left is not cut.rebuilt:
        spans.append(
            Span(
                Location(where, cut.left.lineno),
                T("cut: {call} here takes the value out of the graph", call=cut.left_call or ".item()"),
            )
        )
    if cut.rebuilt is not None:
        spans.append(
            Span(
                Location(where, cut.rebuilt.lineno),
                T(
                    "rebuilt: {call} here makes a new tensor from that value, without a graph",
                    call=cut.rebuilt_call or "torch.tensor()",
                ),
            )
        )
    if cut.rebuilt is None and cut.left is not None:
        label = (
            T(
                "cut: {cut} here made the tensor backward was called on, without a graph",
                cut=cut.left_call or ".detach()",
            )
            if cut.exact
            else T("cut: {call} here takes the value out of the graph", call=cut.left_call or ".detach()")
        )
        spans.append(Span(Location(where, cut.left.lineno), label))
    if cut.block is not None:
        spans.append(
            Span(
                Location(where, cut.block.lineno),
                T("cut: {call} is in effect here, around the loss's computation", call=cut.block_call),
            )
        )
    for st in cut.inside:
        spans.append(
            Span(
                Location(where, st.lineno),
                T("cut: {call}() returns a value taken out of the graph here", call=cut.callee),
            )
        )
    for st in cut.positions:  # NOTE [Positions on the loss's path] in gradlab.kinds.cut_path
        spans.append(
            Span(
                Location(where, st.lineno),
                T(
                    "cut: {call} here gives positions, which carry no gradient: what is computed from them has no graph",
                    call=cut.positions_call or "argmax()",
                ),
            )
        )
    if cut.decorator is not None:
        spans.append(
            Span(
                Location(where, cut.decorator.lineno),
                T("cut: {call} is in effect in the whole function", call=cut.decorator_call),
            )
        )
    # the likeliest cause first: the one the code shows (the causes are explain()'s, in this order)
    grad_off, detached, rebuilt = e.causes[0], e.causes[1], e.causes[2]
    if cut.positions:  # NOTE [Positions on the loss's path] in gradlab.kinds.cut_path
        positions: Words = T(
            "The loss was computed from positions (argmax, the indices of max or topk): integers, with no gradient."
        )
        causes: tuple[Words, ...] = (positions, detached, grad_off, rebuilt)
    elif cut.rebuilt is not None:
        causes = (rebuilt, grad_off, detached)
    elif cut.inside and all(isinstance(st, ast.Assign) and _copies(st) for st in cut.inside):
        causes = (rebuilt, detached, grad_off)  # NOTE [A copy two calls deep]
    elif cut.left is not None or cut.inside or cut.positions:
        causes = (detached, rebuilt, grad_off)
    else:
        causes = (grad_off, detached, rebuilt)
    located = replace(e, spans=tuple(spans), causes=causes)
    first = _first_cut(cut)
    if first is not None:  # the public record names the line that cut the graph, as a tracker's cut does
        located = replace(located, cut=first[0], cut_at=Location(where, first[1]), cut_exact=cut.exact)
    fixes = _fixes(f, cut, line)
    if first is not None:  # NOTE [A numpy round trip through a helper] in gradlab.kinds.numpy_round_trip
        fixes = (*_numpy_helper_fix(f, Location(where, first[1])), *fixes)
    if not any(x.edits for x in fixes):  # the source gave no rewrite: the copies of a list a tracker saw
        fixes = (*recorded_stack_fix(f), *fixes)
    return replace(located, fixes=(*fixes, *e.fixes))


def _numpy_helper_fix(f: Failure, at: Location | None) -> tuple[Fix, ...]:
    """A numpy round trip at the cut ``at`` written with torch (NOTE [A numpy round trip through a helper], NOTE [A
    numpy round trip on one line] in :mod:`gradlab.kinds.numpy_round_trip`), judged with the loop's intent; () when
    there is none."""
    site = f.site
    if at is None or site is None or at.filename != site.filename:
        return ()  # the helper's module arrays are read from the failing frame's globals: the same file only
    tree = site.tree()  # the cut's file: the site's, parsed once
    found = helper_round_trip_fix(at, f.namespace) or inner_round_trip_fix(at, f.namespace)
    if found is None and f.recorder is not None and tree is not None:  # every round trip the tracker saw cut
        own = function_of(tree, at.lineno)
        cuts = [
            c.location
            for c in f.recorder.cuts.cuts
            if c.label == ".detach()"
            and c.location.filename == at.filename
            and function_of(tree, c.location.lineno) is own  # the cut's own function: its other round trips
        ]
        found = inline_round_trip_fix(cuts or [at], f.namespace)
    if found is None:
        return ()
    fix, tensor = found
    line = f.location.lineno if f.location is not None and f.location.filename == site.filename else None
    here = statement_at(tree, line) if tree is not None and line is not None else None
    target = backward_target(here) if here is not None else None
    loss = ast.unparse(target) if target is not None else None
    if tree is None or line is None or loss is None:
        return ()
    # the models the loss's own statement hands its graph through (rollout_loss(policy, ...)): what it trains then
    made = [st for st in preceding(tree, line) if isinstance(st, ast.Assign) and loss in names(st, ast.Store)]
    reach = _reach_of(f, tensor) or tuple(sorted(m for m in site.modules if made and m in names(made[-1], ast.Load)))
    ctx = Context(loss=loss, site=site, backward_line=line, reach=reach, intent=intent_at(site, line))
    return tuple(judged([Proposal(fix, reach, False, describe=bool(reach))], ctx))


def _first_cut(cut: PathCut) -> tuple[str, int] | None:
    """The call that cut the graph on the loss's path, and its line: where the value left the graph first."""
    if cut.left is not None:
        return cut.left_call or ".detach()", cut.left.lineno
    if cut.rebuilt is not None:
        return cut.rebuilt_call or "torch.tensor()", cut.rebuilt.lineno
    if cut.block is not None:
        return str(cut.block_call), cut.block.lineno
    if cut.inside:
        return f"{cut.callee}()", cut.inside[0].lineno
    if cut.positions:
        return cut.positions_call or "argmax()", cut.positions[0].lineno
    if cut.decorator is not None:
        return str(cut.decorator_call), cut.decorator.lineno
    return None


def _rebinds_itself(statement: str) -> bool:
    """``x = x``: a statement that does nothing."""
    tree = parse(split_comment(statement)[0].strip())
    st = tree.body[0] if tree is not None and len(tree.body) == 1 else None
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and ast.unparse(st.targets[0]) == ast.unparse(st.value)


# NOTE [A list copied by torch.tensor]
# torch.tensor(xs) of a list of tensors that have a graph copies their values into a
# new leaf (torch warns about it, at best) and the loss built from it has no grad_fn.
# The list is often kept on an object and copied in another function than the
# backward's (a policy's log-probabilities stored at each act() and turned into a
# tensor when the loss is computed), so the source alone does not see it: a tracker
# records each such copy (label "torch.tensor([...])") and the fix rewrites every
# recorded line to torch.stack(xs), which keeps the graph and gives the same values
# for a list of equal-shaped tensors.


def _reach_of(f: Failure, source: str) -> tuple[str, ...]:
    """The user's modules the tensors read by ``source`` (an expression of the frame's names) reach."""
    site = f.site
    if site is None:
        return ()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    leaves: set[int] = set()
    for name in names(tree, ast.Load):
        value = f.namespace.get(name)
        if isinstance(value, torch.Tensor) and value.grad_fn is not None:
            leaves |= leaves_of(value)
    # and the models it calls itself (self.qnetwork_local(states).gather(1, actions))
    return tuple(sorted({m for m, ids in site.modules.items() if ids & leaves} | set(called_modules(site, tree))))


def _rebound_reach(f: Failure, block: ast.stmt) -> tuple[str, ...]:
    """The models reached through the values a block reads before it rebinds their names (NOTE [A name the cut
    block reads and rebinds])."""
    site = f.site
    tree = site.tree() if site is not None else None
    if tree is None:
        return ()
    out: set[str] = set()
    inner = [st for body in blocks(block) for st in body]
    for name in names(block, ast.Load) & names(block, ast.Store):
        for st in inner:
            if name in names(st, ast.Load):  # read first (the right of an assignment runs before its store)
                earlier = [b for b in preceding(tree, block.lineno) if name in names(b, ast.Store)]
                if earlier:
                    last = earlier[-1]
                    outside = sorted(names(last, ast.Load) - names(block, ast.Store))
                    out |= set(called_modules(site, last)) | set(_reach_of(f, ", ".join(outside)) if outside else ())
                break
            if name in names(st, ast.Store):
                break
    return tuple(sorted(out))


# NOTE [A name the cut block reads and rebinds]
# ``pred = model(x)`` before ``with torch.no_grad(): pred = ema(pred)``: when the loss fails, the frame's ``pred``
# is the block's output, which has no graph; the value the block read, the student's output, is gone. With the
# block taken out, the loss reaches what that earlier binding reached: the models its statement calls and those
# its inputs reach.


def _copies(st: ast.Assign) -> bool:
    """``x = torch.tensor(x, ...)``: a copy without a graph (NOTE [A copy two calls deep])."""
    return isinstance(st.value, ast.Call) and ast.unparse(st.value.func).rsplit(".", 1)[-1] == "tensor"


def _kept_on_graph(st: ast.Assign) -> str | None:
    """``x = torch.tensor(x, dtype=d, device=v)`` as ``x = x.to(dtype=d, device=v)`` (``x.clone()`` without either):
    the same values, dtype and device, on the graph; None with any other argument (``requires_grad=``)."""
    call = st.value
    if not isinstance(call, ast.Call) or len(call.args) != 1:
        return None
    if any(k.arg not in ("dtype", "device") for k in call.keywords):
        return None
    source = ast.unparse(call.args[0])
    kept = ", ".join(f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords)
    value = f"{source}.to({kept})" if kept else f"{source}.clone()"
    return f"{ast.unparse(st.targets[0])} = {value}"


# NOTE [A copy two calls deep]
# A model's forward returns what a loss method of its class computes, and that method
# copies the scores it is handed with torch.tensor(scores, dtype=..., device=...) (code
# written when the scores were numpy arrays): the copy has no graph, and backward
# says "element 0 of tensors does not require grad". The cut is found two calls deep
# (the model's forward, then the self.method its returned value calls); the fix keeps
# the value on the graph with the same dtype and device, scores.to(dtype=..., device=...)
# (scores.clone() when the copy named neither).


def _fixes(f: Failure, cut: PathCut, line: int) -> tuple[Fix, ...]:
    site = f.site
    assert site is not None
    here = statement_at(site.tree(), line)  # type: ignore[arg-type]
    target = backward_target(here) if here is not None else None
    loss = ast.unparse(target) if target is not None else None
    proposals: list[Proposal] = []
    nearness: list[int] = []  # how far back from the backward each proposal's cut is
    alias = torch_alias(f.namespace) or "torch"
    base = Context(loss=loss, site=site, backward_line=line)
    if cut.rebuilt is not None and cut.rebuilt.lineno == cut.rebuilt.end_lineno:
        text = site.text(cut.rebuilt.lineno).strip()
        graph = frozenset(
            k
            for k, v in f.namespace.items()
            if isinstance(k, str) and isinstance(v, torch.Tensor) and v.grad_fn is not None
        )
        new = from_graph(text, alias, cut.values, graph)
        if new is not None:
            reach = _reach_of(f, split_comment(new)[0].split("=", 1)[-1].strip())
            ctx = replace(base, reach=reach, intent=intent_at(site, line))
            nearness.append(cut.nearness(cut.rebuilt.lineno))
            proposals.append(
                Proposal(
                    Fix(
                        summary=T(
                            "build {loss} from the graph: use the tensor itself where a copy of its value is made (at {where})",
                            loss=loss or T("the loss"),
                            where=Location(site.filename, cut.rebuilt.lineno).where,
                        ),
                        trains=trains_text(loss, reach),
                        edits=one_edit(
                            Edit(site.filename, cut.rebuilt.lineno, cut.rebuilt.lineno, "")
                            if _rebinds_itself(new)  # loss = loss: the statement goes
                            else replace_line(ctx, cut.rebuilt.lineno, new)
                        ),
                    ),
                    reach,
                    False,
                    describe=bool(reach),
                )
            )
    if cut.left is not None and cut.rebuilt is None and cut.left.lineno == cut.left.end_lineno:
        text = site.text(cut.left.lineno).strip()
        new = without_detach(text, names(cut.left, ast.Load))
        if new is not None:
            reach = _reach_of(f, split_comment(new)[0].split("=", 1)[-1].strip())
            ctx = replace(base, reach=reach, intent=intent_at(site, line))
            nearness.append(cut.nearness(cut.left.lineno))
            proposals.append(
                Proposal(
                    Fix(
                        summary=T(
                            "keep {loss} on the graph: drop {call} at {where}",
                            loss=loss or T("the loss"),
                            call=cut.left_call or ".detach()",
                            where=Location(site.filename, cut.left.lineno).where,
                        ),
                        trains=trains_text(loss, reach),
                        edits=one_edit(replace_line(ctx, cut.left.lineno, new)),
                    ),
                    reach,
                    False,
                    describe=bool(reach),
                )
            )
    if cut.block is not None:
        edit = unwrapped(site, cut.block)
        # what the loss reaches with grad on: the models the block calls, and those its inputs' graphs reach
        read = sorted(names(cut.block, ast.Load))
        called = tuple(
            sorted(
                set(called_modules(site, cut.block))
                | set(_reach_of(f, ", ".join(read)) if read else ())
                | set(_rebound_reach(f, cut.block))
            )
        )
        nearness.append(cut.nearness(cut.block.lineno, block=True))
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "run the loss's forward and backward with grad on: take them out of the {call} block at {where}",
                        call=cut.block_call,
                        where=Location(site.filename, cut.block.lineno).where,
                    ),
                    trains=T(
                        "{loss} then trains the parameters its forward uses, as the optimizer step after it asks",
                        loss=loss or T("the loss"),
                    ),
                    edits=one_edit(edit),
                ),
                called,
                False,
                describe=bool(called),
            )
        )
    if cut.decorator is not None:
        dec = cut.decorator
        function = function_of(site.tree(), line)  # type: ignore[arg-type]
        in_function = called_modules(site, function) if function is not None else ()
        edit = (
            Edit(site.filename, dec.lineno, dec.end_lineno or dec.lineno, "") if dec.lineno == dec.end_lineno else None
        )
        nearness.append(cut.nearness(-1))
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "take the @{call} decorator off the function that trains (at {where})",
                        call=cut.decorator_call,
                        where=Location(site.filename, dec.lineno).where,
                    ),
                    trains=T(
                        "{loss} then trains the parameters its forward uses, as the optimizer step after it asks",
                        loss=loss or T("the loss"),
                    ),
                    edits=one_edit(edit),
                ),
                in_function,
                False,
                describe=bool(in_function),
            )
        )
    if cut.inside:
        edits: list[Edit | None] = []
        for st in cut.inside:
            text = site.text(st.lineno).strip()
            new = (
                _kept_on_graph(st)
                if isinstance(st, ast.Assign) and _copies(st)
                else without_detach(text, names(st, ast.Load))
            )
            edits.append(Edit(site.filename, st.lineno, st.lineno, indent_of(site, st.lineno) + new) if new else None)
        reach = tuple(sorted({m for st in cut.statements for m in called_modules(site, st)}))
        whole = tuple(e for e in edits if e is not None) if all(e is not None for e in edits) else ()
        nearness.append(cut.nearness(-1))
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "return {call}()'s result with its graph: keep the values it is handed on the graph, with "
                        ".to() in place of the copy torch.tensor() makes, at {where}",
                        call=cut.callee,
                        where=", ".join(Location(site.filename, st.lineno).where for st in cut.inside),
                    )
                    if all(isinstance(st, ast.Assign) and _copies(st) for st in cut.inside)
                    else T(
                        "return {call}()'s result with its graph: drop the .detach() (or .data) at {where}",
                        call=cut.callee,
                        where=", ".join(Location(site.filename, st.lineno).where for st in cut.inside),
                    ),
                    trains=trains_text(loss, reach),
                    edits=whole,
                ),
                reach,
                False,
                describe=bool(reach),
            )
        )
    soft = (
        soft_argmax(site.text(cut.positions[0].lineno), alias)
        if len(cut.positions) == 1 and cut.positions[0].lineno == cut.positions[0].end_lineno
        else None
    )
    if soft is not None:  # NOTE [A soft argmax] in gradlab.kinds.cut_path: a different loss, and it says so
        st = cut.positions[0]
        reach = tuple(sorted({m for s_ in cut.statements for m in called_modules(site, s_)}))
        nearness.append(cut.nearness(-1))
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "compute {loss} from a soft argmax of the scores in place of the positions {call} picks (at "
                        "{where}): the position expected under a softmax of the scores, which keeps a graph (for two "
                        "classes, the probability of the second)",
                        loss=loss or T("the loss"),
                        call=cut.positions_call or "argmax()",
                        where=Location(site.filename, st.lineno).where,
                    ),
                    trains=T(
                        "{loss} then trains {models}, through the soft argmax: a different loss from the one written, "
                        "whose positions carry no gradient and trained nothing; its value is the expected position, "
                        "not the hard one",
                        loss=loss or T("the loss"),
                        models=join(list(reach), T(" and ")) if reach else T("what computed the scores"),
                    ),
                    keeps_forward=False,
                    edits=(Edit(site.filename, st.lineno, st.lineno, soft),),
                ),
                reach,
                False,
            )
        )
    if cut.positions:  # NOTE [Positions on the loss's path]: the differentiable form is the user's choice
        nearness.append(cut.nearness(-1))
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "compute {loss} from the scores, not from the positions {call} picks (at {where}): a "
                        "soft-argmax (the positions weighted by a softmax of the scores) keeps a graph, or put the "
                        "loss on the scores themselves",
                        loss=loss or T("the loss"),
                        call=cut.positions_call or "argmax()",
                        where=", ".join(Location(site.filename, st.lineno).where for st in cut.positions),
                    ),
                    trains=T(
                        "the loss then trains what computed the scores; positions carry no gradient, so it trains "
                        "nothing now"
                    ),
                ),
                None,
                False,
            )
        )
    # the cut nearest the loss first (NOTE [The cut on the loss's path]): a no_grad block around the loss's own
    # statement explains a loss without a graph better than a .detach() further back on one of its inputs
    proposals = [p for _near, _k, p in sorted((near, k, p) for k, (near, p) in enumerate(zip(nearness, proposals)))]
    # what the loss can reach once it has its graph: the models of the fixes that give it one
    reach = tuple(sorted({m for p in proposals for m in (p.reach or ())}))
    ctx = replace(base, reach=reach, intent=intent_at(site, line))
    shared = claims_of_others(site, line, f.namespace, loss, same_steps=True)
    ctx = replace(ctx, shared=tuple(sorted({m for _loss, models in shared for m in models})))
    return judged(proposals, ctx)
