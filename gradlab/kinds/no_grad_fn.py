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
import linecache
import re
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from ..advice import message_fixes
from ..context import Context
from ..edits import Edit
from ..evidence import Failure, backward_line_after, calls_into, claims_of_others, leaves_of, torch_alias
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of, insert_lines, replace_line, unwrapped
from ..i18n import T
from ..judge import judged
from ..location import Location, frame_names
from ..loop import read_site, site_intent
from ..messages import Message
from ..rewrite import EXTRACTIONS, REBUILDS, from_graph, split_comment, without_detach
from ..source import (
    calls_method,
    enclosing,
    enclosing_blocks,
    feeding,
    function_of,
    loop_body_of,
    names,
    parse,
    preceding,
    statement_at,
)

if TYPE_CHECKING:
    from ..recorder import Recorder

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


_GRAD_OFF = ("no_grad", "inference_mode")


def _grad_off(node: ast.expr) -> str | None:
    """``"torch.no_grad()"`` when ``node`` is a call that turns grad off (``torch.no_grad()``,
    ``th.inference_mode()``, ``torch.set_grad_enabled(False)``), else None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name in _GRAD_OFF:
        return f"torch.{name}()"
    if name == "set_grad_enabled" and node.args and isinstance(node.args[0], ast.Constant) and not node.args[0].value:
        return "torch.set_grad_enabled(False)"
    return None


def _calls_named(st: ast.AST, wanted: frozenset[str]) -> list[ast.Call]:
    out = []
    for n in ast.walk(st):
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in wanted and (name not in EXTRACTIONS or not n.args):
                out.append(n)
    return out


def _backward_target(st: ast.stmt) -> ast.expr | None:
    """The tensor expression a statement calls backward on (``loss`` in ``loss.backward()``)."""
    for n in ast.walk(st):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward":
            return n.func.value
        if isinstance(n, ast.Call) and ast.unparse(n.func).endswith(("autograd.backward", "autograd.grad")) and n.args:
            return n.args[0]
    return None


class PathCut:
    """Where the loss's value left the graph and where it was rebuilt, read from the code (NOTE [The cut on the
    loss's path]); line numbers of the failing function's file."""

    def __init__(self) -> None:
        self.rebuilt: ast.stmt | None = None
        self.rebuilt_call: str | None = None
        self.left: ast.stmt | None = None
        self.left_call: str | None = None
        self.block: ast.With | None = None
        self.block_call: str | None = None
        self.decorator: ast.expr | None = None
        self.decorator_call: str | None = None
        self.statements: list[ast.stmt] = []
        self.values: dict[str, str] = {}  # a name bound to a number -> the tensor it was taken from
        self.exact = False  # the cut statement made the very tensor backward was called on (loss = x.detach())
        self.callee: str | None = None  # a function (a model's forward) on the path whose result left the graph
        self.inside: list[ast.stmt] = []  # its statements that take the result out of the graph (.data, .detach())
        # a path statement's line (or a block's first line) -> how many steps back from the backward it is
        self.distance: dict[int, int] = {}

    def nearness(self, line: int, block: bool = False) -> int:
        """How far back from the backward the cut at ``line`` is (0: the backward's own statement), doubled; a
        grad-off block counts as nearer than a ``.detach()`` on the statement it holds (that detach is the code's)."""
        return 2 * self.distance.get(line, len(self.distance) + 1) - (1 if block else 0)

    @property
    def found(self) -> bool:
        return (
            self.rebuilt is not None
            or self.left is not None
            or self.block is not None
            or self.decorator is not None
            or bool(self.inside)
        )


def _detaches(st: ast.stmt) -> bool:
    """``st`` rebinds a name to a tensor taken out of the graph, as it is: ``out = out.data``, ``h = h.detach()``
    (a ``.clone()`` after it allowed), not ``out.data.new(...)`` or ``x.detach().numpy()``."""
    value = st.value if isinstance(st, (ast.Assign, ast.AnnAssign)) else None
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "clone":
        value = value.func.value
    if isinstance(value, ast.Attribute) and value.attr == "data":
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "detach"
        and not value.args
    )


def _callee_cut(tree: ast.Module, path: list[ast.stmt], models: dict[str, str]) -> tuple[str, list[ast.stmt]] | None:
    """A function of the file that the path calls (a model's ``forward``: ``models`` maps the frame's model names to
    their class names) whose returned value it takes out of the graph: its name, and the statements that do."""
    called = {ast.unparse(n.func) for st in path for n in ast.walk(st) if isinstance(n, ast.Call)}
    wanted: dict[str, str] = {}  # a definition's name -> how the path calls it
    for call in called:
        last = call.rsplit(".", 1)[-1]
        if call in models or last in models:
            wanted.setdefault(f"{models.get(call) or models[last]}.forward", call)
        else:
            wanted.setdefault(last, call)
    for node in ast.walk(tree):
        defs: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        if isinstance(node, ast.ClassDef):
            defs = [
                (f"{node.name}.{f.name}", f)
                for f in node.body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs = [(node.name, node)]
        for key, fn in defs:
            if key not in wanted:
                continue
            returns = [r for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None]
            needed = (
                set().union(*(names(r.value, ast.Load) for r in returns if r.value is not None)) if returns else set()
            )
            inside = []
            for st in reversed(preceding(tree, max(r.lineno for r in returns))) if returns else ():
                if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and names(st, ast.Store) & needed:
                    needed |= names(st, ast.Load)
                    if _detaches(st) and st.lineno == st.end_lineno:
                        inside.append(st)
            if inside:
                return wanted[key], sorted(inside, key=lambda st: st.lineno)
    return None


def path_cut(tree: ast.Module, line: int, models: dict[str, str] | None = None) -> PathCut:
    """The cut on the data path of the tensor the statement at ``line`` backwards (NOTE [The cut on the loss's path])."""
    cut = PathCut()
    here = statement_at(tree, line)
    target = _backward_target(here) if here is not None else None
    if here is None or target is None:
        return cut
    needed = names(target, ast.Load)
    path: list[ast.stmt] = [here]
    if _calls_named(target, REBUILDS) or _calls_named(target, EXTRACTIONS):
        cut.rebuilt = here if _calls_named(target, REBUILDS) else None
        cut.left = here if _calls_named(target, EXTRACTIONS) else None
    for st in reversed(preceding(tree, line)):
        grown = _grows(st)
        if grown is not None and grown in needed:  # ``parts.append(loss_i)``: what the list holds is on the path
            path.append(st)
            needed |= names(st, ast.Load)
            continue
        if not isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or not names(st, ast.Store) & needed:
            continue
        path.append(st)
        reads = names(st, ast.Load) | (names(st, ast.Store) if isinstance(st, ast.AugAssign) else set())
        needed |= reads
        rebuilds = [c for c in _calls_named(st, REBUILDS) if not _literal(c)]
        if cut.rebuilt is None and rebuilds:
            cut.rebuilt, cut.rebuilt_call = st, f"{ast.unparse(rebuilds[0].func)}()"
        extracted = _calls_named(st, EXTRACTIONS)
        if cut.left is None and extracted:
            cut.left, cut.left_call = st, f".{extracted[0].func.attr}()"  # type: ignore[attr-defined]
        value = st.value if isinstance(st, ast.Assign) and len(st.targets) == 1 else None
        if extracted and value is not None and isinstance(st.targets[0], ast.Name):  # type: ignore[union-attr]
            stripped = _stripped_source(value)
            if stripped is not None:
                cut.values[st.targets[0].id] = stripped  # type: ignore[union-attr]
    if cut.left is not None and isinstance(target, ast.Name) and isinstance(cut.left, ast.Assign):
        value = cut.left.value
        binds = any(isinstance(t, ast.Name) and t.id == target.id for t in cut.left.targets)
        cut.exact = (
            binds
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in EXTRACTIONS
        )
    if cut.left is not None and cut.left_call is None:
        found = _calls_named(cut.left, EXTRACTIONS)
        cut.left_call = f".{found[0].func.attr}()" if found else None  # type: ignore[attr-defined]
    cut.statements = sorted(path, key=lambda st: st.lineno)
    cut.distance = {st.lineno: k for k, st in enumerate(path)}
    for st in path:  # a block that turns grad off around the path, the one nearest the loss
        for outer in enclosing(tree, st.lineno):
            if isinstance(outer, ast.With) and cut.block is None:
                call = next((c for item in outer.items if (c := _grad_off(item.context_expr))), None)
                if call is not None:
                    cut.block, cut.block_call = outer, call
                    cut.distance[outer.lineno] = cut.distance[st.lineno]
    function = function_of(tree, line)
    if function is not None:
        for dec in function.decorator_list:
            call = _grad_off(dec)
            if call is not None:
                cut.decorator, cut.decorator_call = dec, call
    if not cut.found:  # nothing in this function: a function it calls (a model's forward) may take it out
        inner = _callee_cut(tree, cut.statements, models or {})
        if inner is not None:
            cut.callee, cut.inside = inner
    return cut


def _literal(call: ast.Call) -> bool:
    """``torch.tensor([0.1, 0.5])``: a tensor made from numbers written in the code, no value taken from a graph."""
    return bool(call.args) and all(
        isinstance(n, (ast.Constant, ast.List, ast.Tuple, ast.UnaryOp, ast.USub, ast.Load))
        for a in call.args
        for n in ast.walk(a)
    )


def _grows(st: ast.stmt) -> str | None:
    """The list a statement adds to (``parts.append(x)``, ``.extend``, ``.insert``): its name; None otherwise."""
    call = st.value if isinstance(st, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("append", "extend", "insert")
        and isinstance(call.func.value, ast.Name)
    ):
        return call.func.value.id
    return None


def _stripped_source(value: ast.expr) -> str | None:
    from ..rewrite import _strip

    stripped = _strip(value)
    return None if stripped is value or isinstance(stripped, ast.Constant) else ast.unparse(stripped)


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
    closure = _closure_fix(f, tree, line) if tree is not None and line is not None and not cut.found else ()
    if not cut.found and not closure:
        closure = _reentrant_fix(f)
    if closure and site is not None and line is not None:  # located at the closure's backward, not a cut elsewhere
        label = T("here: this closure runs inside an optimizer step that turns grad off")
        return replace(e, spans=(Span(Location(site.filename, line), label),), fixes=(*closure, *e.fixes))
    empty = _empty_total_fix(f, tree, line) if not closure else ()
    if empty and site is not None and line is not None:  # a total nothing was added to in this iteration
        label = T("here: nothing was added to the total this time, so it has no graph")
        return replace(e, spans=(Span(Location(site.filename, line), label),), fixes=(*empty, *e.fixes))
    evaluating = _eval_mode_fix(f, tree, cut, line) if not cut.found and not closure else None
    if evaluating is not None and site is not None and line is not None:  # NOTE [A model whose eval branch cuts]
        label_at, fix = evaluating
        label = T("cut: this model is in eval mode, and its forward's eval branch returns values without a graph")
        return replace(e, spans=(Span(label_at, label),), fixes=(fix, *e.fixes))
    if site is None or tree is None or line is None or not cut.found:
        derivative = _derivative_fix(f, tree, line) if not closure and _recorded_block(f, tree) is None else ()
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
                *_recorded_stack_fix(f),
                *_update_out_of_helper(f, tree),
                *_recorded_block_fix(f, tree),
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
    if cut.decorator is not None:
        spans.append(
            Span(
                Location(where, cut.decorator.lineno),
                T("cut: {call} is in effect in the whole function", call=cut.decorator_call),
            )
        )
    # the likeliest cause first: the one the code shows (the causes are explain()'s, in this order)
    grad_off, detached, rebuilt = e.causes[0], e.causes[1], e.causes[2]
    if cut.rebuilt is not None:
        causes = (rebuilt, grad_off, detached)
    elif cut.left is not None or cut.inside:
        causes = (detached, rebuilt, grad_off)
    else:
        causes = (grad_off, detached, rebuilt)
    located = replace(e, spans=tuple(spans), causes=causes)
    first = _first_cut(cut)
    if first is not None:  # the public record names the line that cut the graph, as a tracker's cut does
        located = replace(located, cut=first[0], cut_at=Location(where, first[1]), cut_exact=cut.exact)
    fixes = _fixes(f, cut, line)
    if not any(x.edits for x in fixes):  # the source gave no rewrite: the copies of a list a tracker saw
        fixes = (*_recorded_stack_fix(f), *fixes)
    return replace(located, fixes=(*fixes, *e.fixes))


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
    if cut.decorator is not None:
        return str(cut.decorator_call), cut.decorator.lineno
    return None


def _rebinds_itself(statement: str) -> bool:
    """``x = x``: a statement that does nothing."""
    tree = parse(split_comment(statement)[0].strip())
    st = tree.body[0] if tree is not None and len(tree.body) == 1 else None
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and ast.unparse(st.targets[0]) == ast.unparse(st.value)


def _closure_fix(f: Failure, tree: ast.Module, line: int) -> tuple[Fix, ...]:
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
        replace(x, claims=x.claims or f.claims()) for x in judged([Proposal(fix, None, True)], Context(site=site))
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
def _reentrant_fix(f: Failure) -> tuple[Fix, ...]:
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
                replace(x, claims=x.claims or f.claims())
                for x in judged([Proposal(fix, None, True)], Context(site=f.site))
            )
    return ()


def linecache_line(filename: str, line: int) -> str:
    return linecache.getline(filename, line).rstrip("\n")


def _update_out_of_helper(f: Failure, tree: ast.Module | None) -> tuple[Fix, ...]:
    """The update (zero_grad, backward, step) of a helper that the training loop and, under a grad-off block, the
    evaluation both call, moved out of the helper to right after the training loop's call (NOTE [An update inside
    a helper evaluation calls too])."""
    site, loc = f.site, f.location
    recorded = _recorded_block(f, tree)
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
    training = [c for c in calls if c not in evaluating and not _under_grad_off(tree, c.lineno)]
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
        replace(x, claims=x.claims or f.claims()) for x in judged([Proposal(fix, None, True)], Context(site=site))
    )


def _under_grad_off(tree: ast.Module, line: int) -> bool:
    return any(
        isinstance(n, ast.With)
        and n.lineno < line <= (n.end_lineno or n.lineno)
        and any(_grad_off(item.context_expr) for item in n.items)
        for n in ast.walk(tree)
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


def _derivative_fix(f: Failure, tree: ast.Module | None, line: int | None) -> tuple[Fix, ...]:
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
    call = next((c for c in _calls_named(st, frozenset({"grad"})) if "autograd" in ast.unparse(c.func)), None)
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


def _empty_total_fix(f: Failure, tree: ast.Module | None, line: int | None) -> tuple[Fix, ...]:
    """A total started from a constant at the top of each iteration, whose terms are added under a condition or
    an inner loop, backwarded on an iteration that added none (NOTE [A total nothing was added to])."""
    site = f.site
    if site is None or tree is None or line is None or f.error is None:
        return ()
    body = loop_body_of(tree, line)
    st = statement_at(tree, line)
    target = _backward_target(st) if st is not None else None
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


def _eval_mode_fix(f: Failure, tree: ast.Module | None, cut: PathCut, line: int | None) -> tuple[Location, Fix] | None:
    """A model on the loss's path, put in eval mode by the code, returned values without a graph from an input
    with one, and its forward branches on ``self.training``: the fix keeps it in training mode (NOTE [A model whose
    eval branch cuts])."""
    site = f.site
    if site is None or tree is None or line is None:
        return None
    graph = {k for k, v in f.namespace.items() if isinstance(v, torch.Tensor) and v.requires_grad}
    for st in cut.statements:
        if not isinstance(st, ast.Assign):
            continue
        targets = names(st, ast.Store)
        if not targets or any(isinstance(v := f.namespace.get(t), torch.Tensor) and v.requires_grad for t in targets):
            continue
        for call in (n for n in ast.walk(st.value) if isinstance(n, ast.Call)):
            model = f.namespace.get(ast.unparse(call.func))
            if not isinstance(model, torch.nn.Module) or model.training:
                continue
            if not any(names(a, ast.Load) & graph or _trains_in(a, f.namespace) for a in call.args):
                continue  # no argument with a graph: a tensor that requires grad, or a trainable model's output
            found = _eval_call(tree, ast.unparse(call.func))
            flag = _training_flag(type(model), model)
            if found is None or flag is False:
                continue
            name = ast.unparse(call.func)
            new = f"{name}.{flag} = False" if flag else f"{name}.train()"
            edit = replace_line(Context(site=site, backward_line=line), found, new)
            if edit is None:
                edit = Edit(site.filename, found, found, indent_of(site, found) + new)
            intent = site_intent(site, line)
            here = statement_at(tree, line)
            target = _backward_target(here) if here is not None else None
            loss = ast.unparse(target) if target is not None else None
            fix = Fix(
                summary=T(
                    "keep {model} in training mode, whose forward carries the gradient, and turn off what "
                    "self.{flag} guards instead: {new} in place of {model}.eval()",
                    model=name,
                    flag=flag,
                    new=new,
                )
                if flag
                else T(
                    "keep {model} in training mode ({new} in place of {model}.eval()): its forward's eval branch "
                    "returns values without a graph",
                    model=name,
                    new=new,
                ),
                trains=T(
                    "{loss} trains {models} through {model}'s training-mode forward; the updates under "
                    "self.{flag} no longer run",
                    loss=loss or T("the loss"),
                    models=", ".join(intent.trained) or T("what its optimizers hold"),
                    model=name,
                    flag=flag,
                )
                if flag
                else T(
                    "{loss} trains {models} through {model}'s training-mode forward; whatever that forward does in "
                    "training mode besides (dropout, running statistics, codebook updates) runs again",
                    loss=loss or T("the loss"),
                    models=", ".join(intent.trained) or T("what its optimizers hold"),
                    model=name,
                ),
                edits=(edit,),
                claims=((loss, intent.trained),) if loss and intent.trained else (),
                applicability="machine-applicable" if flag else "maybe-incorrect",
            )
            fixes = judged([Proposal(fix, None, True)], Context(site=site))  # its code: the edits, checked
            if not fixes:
                return None
            # .train() runs what training mode runs besides: not applied without the user's word
            sure = fix.applicability if fixes[0].code is not None else "sentence"
            return Location(site.filename, found), replace(fixes[0], claims=fix.claims, applicability=sure)
    return None


def _trains_in(node: ast.expr, namespace: dict[str, Any]) -> bool:
    """``node`` calls a model of ``namespace`` with a parameter that requires grad (``encoder(x)``)."""
    for n in ast.walk(node):
        model = namespace.get(ast.unparse(n.func)) if isinstance(n, ast.Call) else None
        if isinstance(model, torch.nn.Module) and any(p.requires_grad for p in model.parameters()):
            return True
    return False


def _eval_call(tree: ast.Module, name: str) -> int | None:
    """The line of the last one-line ``name.eval()`` (or ``name.train(False)``) statement of the file."""
    found = [
        st.lineno
        for st in ast.walk(tree)
        if isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and ast.unparse(st.value.func.value) == name
        and (
            st.value.func.attr == "eval"
            or (st.value.func.attr == "train" and [ast.unparse(a) for a in st.value.args] == ["False"])
        )
        and st.lineno == st.end_lineno
    ]
    return max(found) if found else None


def _training_flag(cls: type, model: torch.nn.Module) -> str | bool | None:
    """Whether the class's forward branches on ``self.training`` (False: it does not), and the attribute of a
    nested ``if self.<flag>:`` inside that branch, True on ``model`` (what eval() was likely meant to stop)."""
    import inspect

    try:
        source = textwrap.dedent(inspect.getsource(cls.forward))  # type: ignore[attr-defined]
    except (OSError, TypeError, AttributeError):
        return False
    forward = parse(source)
    if forward is None:
        return False
    branches = [
        n
        for n in ast.walk(forward)
        if isinstance(n, ast.If) and ast.unparse(n.test) in ("self.training", "self.training is True")
    ]
    if not branches:
        return False
    for branch in branches:
        for inner in (n for st in branch.body for n in ast.walk(st) if isinstance(n, ast.If)):
            test = inner.test
            if (
                isinstance(test, ast.Attribute)
                and isinstance(test.value, ast.Name)
                and test.value.id == "self"
                and getattr(model, test.attr, None) is True
            ):
                return test.attr
    return None


# NOTE [A model whose eval branch cuts]
# A model the loss goes through was put in eval mode by the code (to freeze a
# codebook's EMA updates, a batch norm's statistics), and its forward branches on
# self.training: the training branch builds the gradient path (a straight-through
# estimator, a reparameterised sample), the eval branch returns values without a
# graph. The loss then has no grad_fn. Seen on the loss's path: a statement calls
# that model on a tensor that requires grad and binds outputs that do not. When
# the training branch guards an update with a switch of its own (if
# self.ema_update:), the fix sets that switch off in place of .eval() (what eval()
# was meant to stop, keeping the gradient path); otherwise it puts the model back
# in training mode and says what else training mode runs.


def _recorded_block(f: Failure, tree: ast.Module | None) -> tuple[ast.With, str, Location] | None:
    """The grad-off ``with`` block of the failing function's file that a tracker saw cut the graph behind the
    failing backward: the block, its call (``torch.no_grad()``) and where it was entered; None if none."""
    found = f.recorder.cuts.cut_for(f.tensors) if f.recorder is not None else None
    site = f.site
    if found is None or site is None or tree is None or found[0].location.filename != site.filename:
        return None
    at = found[0].location
    block = next((n for n in ast.walk(tree) if isinstance(n, ast.With) and n.lineno == at.lineno), None)
    call = next((c for item in block.items if (c := _grad_off(item.context_expr))), None) if block else None
    return (block, call, at) if block is not None and call is not None else None


def _recorded_block_fix(f: Failure, tree: ast.Module | None) -> tuple[Fix, ...]:
    """The grad-off block a tracker saw cut the graph, in a caller of the failing function (a helper that calls
    ``autograd.grad`` run under ``torch.no_grad()``), taken away: its statements run with grad on."""
    site = f.site
    recorded = _recorded_block(f, tree)
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
        edits=_one(edit),
    )
    return tuple(
        replace(x, claims=x.claims or f.claims()) for x in judged([Proposal(fix, None, True)], Context(site=site))
    )


def _recorded_stack_fix(f: Failure) -> tuple[Fix, ...]:
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
    target = _backward_target(here) if here is not None else None
    loss = ast.unparse(target) if target is not None else None
    reach = tuple(sorted(m for m, ids in site.modules.items() if ids & reached))
    fix = Fix(
        summary=T(
            "stack the tensors instead of copying their values: torch.stack() where torch.tensor() copies a list of "
            "tensors with a graph (at {where}) keeps that graph",
            where=", ".join(loc.where for loc in seen.values()),
        ),
        trains=_trains(loss, reach),
        edits=tuple(edits),
    )
    ctx = Context(loss=loss, site=site, backward_line=line, reach=reach)
    if line is not None:
        ctx = replace(ctx, intent=_intent(site, line))
    return tuple(judged([Proposal(fix, reach, False, describe=bool(reach))], ctx))


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
    return tuple(sorted({m for m, ids in site.modules.items() if ids & leaves} | set(_called_modules(site, tree))))


def _fixes(f: Failure, cut: PathCut, line: int) -> tuple[Fix, ...]:
    site = f.site
    assert site is not None
    here = statement_at(site.tree(), line)  # type: ignore[arg-type]
    target = _backward_target(here) if here is not None else None
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
            ctx = replace(base, reach=reach, intent=_intent(site, line))
            nearness.append(cut.nearness(cut.rebuilt.lineno))
            proposals.append(
                Proposal(
                    Fix(
                        summary=T(
                            "build {loss} from the graph: use the tensor itself where a copy of its value is made (at {where})",
                            loss=loss or T("the loss"),
                            where=Location(site.filename, cut.rebuilt.lineno).where,
                        ),
                        trains=_trains(loss, reach),
                        edits=_one(
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
            ctx = replace(base, reach=reach, intent=_intent(site, line))
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
                        trains=_trains(loss, reach),
                        edits=_one(replace_line(ctx, cut.left.lineno, new)),
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
            sorted(set(_called_modules(site, cut.block)) | set(_reach_of(f, ", ".join(read)) if read else ()))
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
                    edits=_one(edit),
                ),
                called,
                False,
                describe=bool(called),
            )
        )
    if cut.decorator is not None:
        dec = cut.decorator
        function = function_of(site.tree(), line)  # type: ignore[arg-type]
        in_function = _called_modules(site, function) if function is not None else ()
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
                    edits=_one(edit),
                ),
                in_function,
                False,
                describe=bool(in_function),
            )
        )
    if cut.inside:
        edits: list[Edit | None] = []
        for st in cut.inside:
            new = without_detach(site.text(st.lineno).strip(), names(st, ast.Load))
            edits.append(Edit(site.filename, st.lineno, st.lineno, indent_of(site, st.lineno) + new) if new else None)
        reach = tuple(sorted({m for st in cut.statements for m in _called_modules(site, st)}))
        whole = tuple(e for e in edits if e is not None) if all(e is not None for e in edits) else ()
        nearness.append(cut.nearness(-1))
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "return {call}()'s result with its graph: drop the .detach() (or .data) at {where}",
                        call=cut.callee,
                        where=", ".join(Location(site.filename, st.lineno).where for st in cut.inside),
                    ),
                    trains=_trains(loss, reach),
                    edits=whole,
                ),
                reach,
                False,
                describe=bool(reach),
            )
        )
    # the cut nearest the loss first (NOTE [The cut on the loss's path]): a no_grad block around the loss's own
    # statement explains a loss without a graph better than a .detach() further back on one of its inputs
    proposals = [p for _near, _k, p in sorted((near, k, p) for k, (near, p) in enumerate(zip(nearness, proposals)))]
    # what the loss can reach once it has its graph: the models of the fixes that give it one
    reach = tuple(sorted({m for p in proposals for m in (p.reach or ())}))
    ctx = replace(base, reach=reach, intent=_intent(site, line))
    shared = claims_of_others(site, line, f.namespace, loss, same_steps=True)
    ctx = replace(ctx, shared=tuple(sorted({m for _loss, models in shared for m in models})))
    return judged(proposals, ctx)


def _called_modules(site: Any, node: ast.AST) -> tuple[str, ...]:
    """The user's models (``site.modules``) that ``node``'s code calls (``model(x)``, ``self.encoder(x)``)."""
    called = {ast.unparse(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return tuple(sorted(m for m in site.modules if any(calls_into(c, m) for c in called)))


def _intent(site: Any, line: int) -> Any:
    intent = site_intent(site, line)
    return intent if intent.known else None


def _trains(loss: str | None, reach: tuple[str, ...]) -> Any:
    if reach:
        return T(
            "{loss} trains {models} through the graph it is computed from",
            loss=loss or T("the loss"),
            models=", ".join(reach),
        )
    return T("{loss} trains the parameters of the graph it is computed from", loss=loss or T("the loss"))


def _one(edit: Edit | None) -> tuple[Edit, ...]:
    return (edit,) if edit is not None else ()
