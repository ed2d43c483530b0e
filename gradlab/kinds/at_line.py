"""The kinds fixed at the line that raised them: ``.numpy()`` of a tensor with a graph (GL0007), a backward of a
non-scalar (GL0005), ``detach_()`` of a view (GL0009), an input ``autograd.grad`` did not use (GL0006), a hook on a
tensor without grad (GL0011).

Each locator reads the statement of the user's line that raised the error (its tree:
:mod:`gradlab.source`) and rewrites only that statement: the fixes are edits of one line,
checked and judged like every fix. Where the reading is not sure (sum or mean of a
non-scalar loss), the fix says which one it takes and is not machine-applicable.
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Failure, leaves_of, resolve_dotted
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of, source_of
from ..i18n import T
from ..judge import judged
from ..location import Location
from ..loop import Site, site_intent
from ..rewrite import split_comment
from ..source import function_of, parse, preceding, statement_at
from .family import BUILDERS

__all__ = ["LOCATORS"]


class _Statement:
    """The one-line statement of the user's line that raised, as text and tree (None when there is none)."""

    def __init__(self, f: Failure) -> None:
        self.text: str | None = None
        self.tree: ast.stmt | None = None
        self.comment = ""
        site, loc = f.site, f.location
        tree = site.tree() if site is not None else None
        if site is None or loc is None or tree is None or loc.filename != site.filename:
            return
        st = statement_at(tree, loc.lineno)
        if st is None or st.lineno != st.end_lineno:
            return
        body, self.comment = split_comment(site.text(loc.lineno).strip())
        parsed = ast.parse(body) if body else None
        if parsed is not None and len(parsed.body) == 1:
            self.text, self.tree = body, parsed.body[0]

    def edit(self, f: Failure, new: ast.AST | str) -> tuple[Edit, ...]:
        site, loc = f.site, f.location
        if site is None or loc is None:
            return ()
        text = new if isinstance(new, str) else ast.unparse(new)
        lines = text.split("\n")
        lines[0] += self.comment
        indent = indent_of(site, loc.lineno)
        return (Edit(site.filename, loc.lineno, loc.lineno, "\n".join(indent + line for line in lines)),)


def _judged(
    f: Failure, proposals: list[Proposal], claims: tuple[tuple[str, tuple[str, ...]], ...] | None = None
) -> tuple[Fix, ...]:
    """The proposals judged; a fix that keeps the training claims what the loop's losses train now."""
    kept = f.claims() if claims is None else claims
    fixes = judged(proposals, Context(site=f.site))
    return tuple(replace(fix, claims=kept or ()) if not fix.claims else fix for fix in fixes)


def _located(f: Failure, label: Callable[[], object]) -> Explanation:
    e = BUILDERS[f.kind](f.message)
    return replace(e, spans=(Span(f.location, label()),)) if f.location is not None else e  # type: ignore[arg-type]


def _numpy(f: Failure) -> Explanation:
    """``x.numpy()`` (or ``x.cpu().numpy()``) on a tensor with a graph: ``.detach()`` before it.

    The ``.numpy()`` calls are found on the statement's tree; ``.detach()`` goes right
    before each one on the raising line that has none on its receiver (the line may be one
    of a longer statement: a metric's lambda in a dict).
    """
    e = _located(f, lambda: T("here: .numpy() of a tensor that requires grad"))
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return e
    st = statement_at(tree, loc.lineno)
    text = site.text(loc.lineno)
    nodes = list(ast.walk(st)) if st is not None else []
    ends = sorted(
        {
            n.func.value.end_col_offset
            for n in nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "numpy"
            and n.func.value.end_lineno == loc.lineno
            and n.func.value.end_col_offset is not None
            and "detach()" not in ast.unparse(n.func.value)
        }
    )
    if _feeds_a_backward(f) and not _in_module_method(f):  # NOTE [numpy values that feed the loss]
        torch_ops = [fix for fix in e.fixes if not fix.code]
        rest = (*torch_ops, *(fix for fix in e.fixes if fix not in torch_ops))
        trip = _round_trip_in_torch(f, st, tree) if st is not None else None
        if trip is None:
            return replace(e, fixes=rest)
        fix = Fix(
            summary=T(
                "compute it with torch, on the graph: drop .numpy() and the conversion back to a tensor, and make "
                "numpy's constant arrays tensors of the same dtype"
            ),
            trains=T(
                "the same values, and the gradient flows through them into what they were computed from "
                "(a .detach() would stop that)"
            ),
            edits=trip,
        )
        return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *rest))
    if not ends:
        one_line = st if st is not None and st.lineno == st.end_lineno else None
        in_torch = _numpy_in_torch(f, one_line, text) if one_line is not None and _in_module_method(f) else None
        implicit = _numpy_arguments(f, one_line, text) if one_line is not None else None
        if in_torch is not None:  # NOTE [numpy inside a forward]
            fix = Fix(
                summary=T("compute it with torch, on the graph: {code}", code=in_torch.strip()),
                trains=T(
                    "the same values, and the gradient flows through them into what they were computed from "
                    "(a .detach() would stop that)"
                ),
                edits=(Edit(site.filename, loc.lineno, loc.lineno, in_torch),),
            )
            return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))
        if implicit is None:
            appended = _appended_detached(f, one_line) if one_line is not None else None
            if appended is None:
                return e
            edits, names = appended
            fix = Fix(
                summary=T(
                    "keep numbers, not graphs, in {names}: append each value .detach()ed where the list is filled "
                    "(each appended tensor kept its whole graph alive)",
                    names=", ".join(names),
                ),
                trains=T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
                edits=edits,
            )
            return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))
        fix = Fix(
            summary=T("take the values out of the graph first: .detach() the tensors numpy is given"),
            trains=T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
            edits=(Edit(site.filename, loc.lineno, loc.lineno, implicit),),
        )
        return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))
    for end in reversed(ends):  # col offsets are in bytes of the line's UTF-8
        raw = text.encode("utf-8")
        text = (raw[:end] + b".detach()" + raw[end:]).decode("utf-8")
    fix = Fix(
        summary=T("take the values out of the graph first: .detach() before .numpy()"),
        trains=T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
        edits=(Edit(site.filename, loc.lineno, loc.lineno, text),),
    )
    return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))


# NOTE [numpy inside a forward]
# numpy converts the tensors it is given with .numpy(), which refuses a tensor that
# requires grad. In a metric or a log line the values are meant to leave the graph:
# .detach() them. Inside a module's method (a forward averaging its layers with
# np.sum(layers, 0)) the result is part of the computation: detaching it would stop
# every gradient through it, so torch's own function is written in numpy's place
# (a list given to a reduction is stacked first: np.sum(final, 0) ->
# torch.sum(torch.stack(final), 0)), the same values, on the graph.
_NUMPY_TO_TORCH = {
    "sum": "sum",
    "mean": "mean",
    "prod": "prod",
    "max": "amax",
    "min": "amin",
    "amax": "amax",
    "amin": "amin",
    "stack": "stack",
    "concatenate": "cat",
    "std": "std",
    "var": "var",
}
_TAKES_A_LIST = frozenset({"stack", "concatenate"})


def _feeds_a_backward(f: Failure) -> bool:
    """The value the raising statement computes flows into a backward: read statement after statement of its
    function (each statement that reads a name holding it binds its own targets to it), and through a ``return``
    to the statement of the user frame that called it, until a statement calls ``.backward(`` on it (NOTE [numpy
    values that feed the loss])."""
    frames = [(f.location.filename, f.location.lineno)] if f.location is not None else []
    frames += [(frame.f_code.co_filename, line) for frame, line in f.outer]
    for filename, line in frames:
        tree = parse("".join(linecache.getlines(filename)))
        st = statement_at(tree, line) if tree is not None else None
        if tree is None or st is None:
            return False
        if isinstance(st, ast.Return):
            continue
        if _calls_backward(st):
            return True
        held = {n.id for t in _targets(st) for n in ast.walk(t) if isinstance(n, ast.Name)}
        function = function_of(tree, line)
        later = sorted(
            (
                s
                for s in ast.walk(function if function is not None else tree)
                if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return))
                and s.lineno > (st.end_lineno or st.lineno)
                and function_of(tree, s.lineno) is function
            ),
            key=lambda s: (s.lineno, s.col_offset),
        )
        returned = False
        for s in later:
            if not {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} & held:
                continue
            if isinstance(s, ast.Return):
                returned = True
                break
            if _calls_backward(s):
                return True
            held |= {n.id for t in _targets(s) for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not returned:
            return False
    return False


_BACK_TO_TORCH = ("from_numpy", "as_tensor", "tensor")


def _round_trip_in_torch(f: Failure, st: ast.stmt, tree: ast.Module) -> tuple[Edit, ...] | None:
    """The statements from the raising ``name = expr.numpy()`` to the one that turns its values back into a tensor
    (``torch.from_numpy(t)``), written with torch: ``.numpy()`` and the conversion back dropped, each numpy array
    of the frame they read (a module's constant matrix) made a tensor of the converted tensor's dtype (NOTE [A
    numpy round trip]). None when a statement on the way calls numpy or a method torch lacks, or spans lines."""
    import numpy

    site, loc = f.site, f.location
    if site is None or loc is None or not isinstance(st, ast.Assign) or st.lineno != st.end_lineno:
        return None
    if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
        return None
    value = st.value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "numpy"):
        return None
    if value.args or value.keywords:
        return None
    torch_name = next((k for k, v in f.namespace.items() if v is torch), None)
    aliases = {k for k, v in f.namespace.items() if v is numpy}
    function = function_of(tree, st.lineno)
    if torch_name is None or function is None:
        return None
    first = st.targets[0].id
    held = {first}
    text = site.text(st.lineno)
    raw = text.encode("utf-8")
    receiver = value.func.value
    edits = [
        Edit(
            site.filename,
            st.lineno,
            st.lineno,
            (
                raw[: value.col_offset]
                + raw[receiver.col_offset : receiver.end_col_offset or 0]
                + raw[value.end_col_offset or 0 :]
            ).decode("utf-8"),
        )
    ]
    later = sorted(
        (x for x in ast.walk(function) if isinstance(x, ast.stmt) and x.lineno > st.lineno and not hasattr(x, "body")),
        key=lambda x: x.lineno,
    )
    for x in later:
        reads = {n.id for n in ast.walk(x) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if not reads & held:
            continue
        if x.lineno != x.end_lineno or not site.holds(x.lineno):
            return None
        spots: list[tuple[int, int, str]] = []
        back = False
        for n in ast.walk(x):
            if isinstance(n, ast.Call):
                func = n.func
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in aliases:
                    return None  # a numpy function on the way: not written here
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == torch_name
                    and func.attr in _BACK_TO_TORCH
                    and len(n.args) == 1
                    and not n.keywords
                    and isinstance(n.args[0], ast.Name)
                    and n.args[0].id in held
                ):
                    spots.append((n.col_offset, n.end_col_offset or 0, n.args[0].id))
                    back = True
                elif isinstance(func, ast.Attribute) and func.attr in ("astype", "tolist", "item", "copy"):
                    return None
            elif (
                isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load)
                and isinstance(f.namespace.get(n.id), numpy.ndarray)
                and n.id not in held
            ):
                spots.append(
                    (n.col_offset, n.end_col_offset or 0, f"{torch_name}.as_tensor({n.id}, dtype={first}.dtype)")
                )
        line = site.text(x.lineno)
        new = _spliced(line, spots) if spots else line
        if new is None:
            return None
        if new != line:
            edits.append(Edit(site.filename, x.lineno, x.lineno, new))
        if back:
            return tuple(edits)
        held |= {n.id for t in _targets(x) for n in ast.walk(t) if isinstance(n, ast.Name)}
    return None


# NOTE [A numpy round trip]
# A helper takes a tensor to numpy, does arithmetic there, and turns the result
# back into a tensor (a colour-space conversion written for arrays, used inside a
# loss): the graph ends at .numpy(), which refuses a tensor that requires grad.
# When the result feeds a backward (NOTE [numpy values that feed the loss]) and
# the statements from the .numpy() to the conversion back use only operators and
# the arrays' own methods that tensors share (``@``, ``+``, ``.T``, ``.permute``),
# the same statements run on the tensor: .numpy() and torch.from_numpy() are
# dropped, and each numpy array of the frame they read becomes
# ``torch.as_tensor(array, dtype=t.dtype)``. A numpy function on the way, a
# method tensors lack (``.astype``), or a statement over several lines: not
# written (the sentence to compute with torch ops stays first). The arithmetic
# then runs in the tensor's dtype (float32 where numpy promoted to float64).


def _targets(st: ast.stmt) -> list[ast.expr]:
    if isinstance(st, ast.Assign):
        return list(st.targets)
    if isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        return [st.target]
    return []


def _calls_backward(st: ast.stmt) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(st)
    )


# NOTE [numpy values that feed the loss]
# A .detach() before numpy is right for a metric, a log line or a plot: the
# numbers leave the graph and nothing trained reads them. When the converted
# values go on into the loss (a scaler's inverse_transform applied to the
# model's output before the criterion), detaching would hand the loss numbers
# with no graph: the loss could not train through them, and it is then given a
# numpy array where it expects a tensor. The value is followed statement by
# statement through the raising function and up through each return to the
# user frame that called it; when a statement calls .backward() on what it
# reads, the first fix is to compute the values with torch ops (a sentence:
# which numpy constants become tensors is the user's call), and no .detach()
# is offered as code. Inside a module's method the exact torch form is written
# instead (NOTE [numpy inside a forward]).


def _in_module_method(f: Failure) -> bool:
    """The raising line runs in a method of an ``nn.Module`` (its ``self``)."""
    return isinstance(f.namespace.get("self"), torch.nn.Module)


def _numpy_in_torch(f: Failure, st: ast.stmt, text: str) -> str | None:
    """The raising line with each numpy call on graph tensors written with torch's function (NOTE [numpy inside
    a forward]); None when a call has no exact torch form (the ddof of ``np.std``, an ``out=``, ...)."""
    import numpy

    aliases = {k for k, v in f.namespace.items() if v is numpy}
    torch_name = next((k for k, v in f.namespace.items() if v is torch), None)
    if not aliases or torch_name is None:
        return None
    spots: list[tuple[int, int, str]] = []
    for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in aliases):
            continue
        if not call.args or not any(_graph_tensors(_value_of(f, a)) for a in call.args[:1]):
            continue
        name = _NUMPY_TO_TORCH.get(func.attr)
        first = call.args[0]
        listed = isinstance(_value_of(f, first), (list, tuple)) or isinstance(first, (ast.List, ast.Tuple))
        if name is None or call.lineno != call.end_lineno or len(call.args) > 2:
            return None
        keywords = []
        for k in call.keywords:
            if k.arg in ("axis", "keepdims"):
                keywords.append(f"{'dim' if k.arg == 'axis' else 'keepdim'}={ast.unparse(k.value)}")
            else:
                return None
        if func.attr in ("std", "var"):  # numpy's ddof=0 is torch's correction=0
            keywords.append("correction=0")
        arg = ast.unparse(first)
        if listed and func.attr not in _TAKES_A_LIST:
            arg = f"{torch_name}.stack({arg})"
        rest = [ast.unparse(a) for a in call.args[1:]]
        if func.attr in _TAKES_A_LIST and not rest and not keywords:
            rest = ["0"]  # numpy's default axis is 0; torch's stack/cat take dim=0 too, said for clarity
        spots.append(
            (call.col_offset, call.end_col_offset or 0, f"{torch_name}.{name}({', '.join([arg, *rest, *keywords])})")
        )
    return _spliced(text, spots)


def _spliced(text: str, spots: list[tuple[int, int, str]]) -> str | None:
    """``text`` with each ``(start, end, new)`` put in place of its columns (UTF-8 byte offsets, as ast gives them);
    None when there is none."""
    if not spots:
        return None
    raw = text.encode("utf-8")
    for start, end, new in sorted(spots, reverse=True):
        raw = raw[:start] + new.encode("utf-8") + raw[end:]
    return raw.decode("utf-8")


def _value_of(f: Failure, node: ast.expr) -> object:
    if isinstance(node, ast.Name):
        return f.namespace.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [f.namespace.get(e.id) if isinstance(e, ast.Name) else None for e in node.elts]
    return None


def _graph_tensors(value: object) -> bool:
    """A tensor with a graph, or a list or tuple holding one."""
    if isinstance(value, torch.Tensor):
        return value.requires_grad
    return isinstance(value, (list, tuple)) and any(_graph_tensors(v) for v in value[:64])


def _appended_detached(f: Failure, st: ast.stmt) -> tuple[tuple[Edit, ...], list[str]] | None:
    """Each ``xs.append(value)`` that filled a list of graph tensors a numpy call on ``st`` is given, written
    ``xs.append(value.detach())``: found by the list's identity in the failing frame or the user frames around it
    (NOTE [A list of losses kept for a plot])."""
    import numpy

    aliases = {k for k, v in f.namespace.items() if v is numpy}
    lists = []
    for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in aliases:
            for arg in call.args:
                value = f.namespace.get(arg.id) if isinstance(arg, ast.Name) else None
                if isinstance(value, list) and _graph_tensors(value):
                    lists.append(value)
    if not lists:
        return None
    frames = [(f.site.filename if f.site else None, f.namespace, f.location.lineno if f.location else 0)]
    frames += [(fr.f_code.co_filename, fr.f_locals, line) for fr, line in f.outer]
    edits: dict[tuple[str, int], Edit] = {}
    names: list[str] = []
    for filename, namespace, line in frames:
        if filename is None:
            continue
        held = [k for k, v in namespace.items() if isinstance(k, str) and any(v is x for x in lists)]
        tree = parse(source_of(filename))
        function = function_of(tree, line) if tree is not None and line else None
        scope: ast.AST | None = function if function is not None else tree
        for name in held:
            for n in ast.walk(scope) if scope is not None else ():
                if not (
                    isinstance(n, ast.Expr)
                    and isinstance(n.value, ast.Call)
                    and isinstance(n.value.func, ast.Attribute)
                    and n.value.func.attr == "append"
                    and ast.unparse(n.value.func.value) == name
                    and len(n.value.args) == 1
                    and n.lineno == n.end_lineno
                ):
                    continue
                arg = n.value.args[0]
                if "detach()" in ast.unparse(arg) or isinstance(arg, ast.Constant):
                    continue
                text = linecache.getline(filename, n.lineno).rstrip("\n")
                simple = isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                if arg.end_col_offset is None or arg.lineno != n.lineno:
                    continue
                raw = text.encode("utf-8")  # col offsets are in bytes of the line's UTF-8
                part = raw[arg.col_offset : arg.end_col_offset].decode("utf-8")
                new = f"{part}.detach()" if simple else f"({part}).detach()"
                rewritten = raw[: arg.col_offset].decode("utf-8") + new + raw[arg.end_col_offset :].decode("utf-8")
                edits[(filename, n.lineno)] = Edit(filename, n.lineno, n.lineno, rewritten)
                names.append(name)
    if not edits:
        return None
    return tuple(edits[k] for k in sorted(edits)), list(dict.fromkeys(names))


# NOTE [A list of losses kept for a plot]
# A training loop appends each batch's loss tensor to a list for a learning curve,
# and numpy (np.mean, np.asarray, matplotlib) later converts the list with
# .numpy(), which refuses tensors that require grad. Each appended tensor also kept
# its whole graph alive until then. The list numpy is given is found by identity
# in the failing frame and the user frames around it (a plot helper receives the
# loop's lists), and every one-line xs.append(value) of that frame's function is
# written xs.append(value.detach()): the values stay, the graphs go, no loss trains
# anything else.


def _numpy_arguments(f: Failure, st: ast.stmt, text: str) -> str | None:
    """The line with ``.detach()`` on the tensors a numpy function is given (``np.sum([x * y for x, y in
    zip(n, losses)])`` converts each tensor with ``.numpy()`` inside numpy): a name that holds a tensor with a
    graph, or the element of a comprehension over one; None when there is none to detach."""
    import numpy

    aliases = {k for k, v in f.namespace.items() if v is numpy}
    spots: list[tuple[int, int, str]] = []  # (start, end, replacement) in the line's columns
    for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in aliases):
            continue
        for arg in call.args:
            if (
                isinstance(arg, ast.Name)
                and _graph_tensors(f.namespace.get(arg.id))
                and isinstance(f.namespace.get(arg.id), torch.Tensor)
            ):
                spots.append((arg.col_offset, arg.end_col_offset or 0, f"{arg.id}.detach()"))
            elif isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
                iters = {n.id for g in arg.generators for n in ast.walk(g.iter) if isinstance(n, ast.Name)}
                if any(_graph_tensors(f.namespace.get(name)) for name in iters):
                    elt = arg.elt
                    part = ast.unparse(elt)
                    simple = isinstance(elt, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                    spots.append(
                        (
                            elt.col_offset,
                            elt.end_col_offset or 0,
                            f"{part}.detach()" if simple else f"({part}).detach()",
                        )
                    )
    return _spliced(text, spots)


def _backward_call(st: ast.stmt) -> ast.Call | None:
    for n in ast.walk(st):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward":
            return n
    return None


_REDUCERS = frozenset({"mean", "sum", "item", "norm", "logsumexp", "max", "min", "amax", "amin", "prod", "trace"})


def _reduced(node: ast.expr) -> bool:
    """``node`` is one number by its form: a constant, a reduction (``x.mean()``, ``torch.sum(x)``), a loss
    function with its default reduction (``F.mse_loss(a, b)``, not ``reduction="none"``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _reduced(node.operand)
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name in _REDUCERS and not any(k.arg in ("dim", "axis") for k in node.keywords) and len(node.args) <= 1:
        return (isinstance(node.func, ast.Attribute) and not node.args) or (
            name in ("sum", "mean") and len(node.args) == 1
        )
    return (name.endswith("_loss") or name in ("cross_entropy", "nll_loss")) and not any(
        k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value == "none" for k in node.keywords
    )


def _reduction_of(tree: ast.AST, near: ast.AST | None) -> str:
    return _reduction_read(tree, near)[0]


def _reduction_read(tree: ast.AST, near: ast.AST | None) -> tuple[str, bool]:
    """The reduction the code uses for its losses: the one of the terms beside the unreduced one, else the
    file's most common (``.sum()``/``reduction="sum"`` against ``.mean()``), ``sum`` for a stack of per-step
    losses (REINFORCE's ``torch.stack(...)``), else ``mean``."""

    def count(node: ast.AST) -> dict[str, int]:
        """Reductions that make a loss: the outermost ones of a value or of its terms, without a dim."""
        found = {"mean": 0, "sum": 0}
        values = [n.value for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign, ast.Return)) and n.value]
        if isinstance(node, ast.expr):
            values.append(node)
        for value in values:
            for term in _operands(value):
                while isinstance(term, ast.UnaryOp):
                    term = term.operand
                if not isinstance(term, ast.Call) or any(k.arg in ("dim", "axis") for k in term.keywords):
                    continue
                name = term.func.attr if isinstance(term.func, ast.Attribute) else getattr(term.func, "id", "")
                method = isinstance(term.func, ast.Attribute) and not term.args and name in found
                function = name in found and len(term.args) == 1 and not isinstance(term.func, ast.Attribute)
                torch_call = (  # torch.sum(x), not x.sum(-1)
                    name in found
                    and isinstance(term.func, ast.Attribute)
                    and isinstance(term.func.value, ast.Name)
                    and term.func.value.id == "torch"
                    and len(term.args) == 1
                )
                if method or function or torch_call:
                    found[name] += 1
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                for k in n.keywords:
                    if k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value in found:
                        found[k.value.value] += 1
        return found

    if near is not None:
        here = count(near)
        if here["mean"] != here["sum"]:
            return ("mean" if here["mean"] > here["sum"] else "sum"), True
        if any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith(("stack", "cat")) for n in ast.walk(near)):
            return "sum", True
    total = count(tree)
    if total["sum"] == total["mean"]:
        return "mean", False  # nothing says which: the mean, by default
    return ("sum" if total["sum"] > total["mean"] else "mean"), True


def _operands(node: ast.expr) -> list[ast.expr]:
    """The terms and factors of an arithmetic expression (``a + b * c`` -> a, b, c)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        return [*_operands(node.left), *_operands(node.right)]
    if isinstance(node, ast.UnaryOp):
        return _operands(node.operand)
    return [node]


def _scalar(node: ast.expr, namespace: dict[str, object]) -> bool | None:
    """Whether ``node`` is one number: by its form, or by the frame's value of a name (None: unknown)."""
    if _reduced(node):
        return True
    if isinstance(node, (ast.Name, ast.Attribute)):
        value = namespace.get(ast.unparse(node))
        if isinstance(value, torch.Tensor):
            return value.numel() == 1
        if isinstance(value, (int, float)):
            return True
    return None


def _reduce_where_made(f: Failure, name: str) -> tuple[int, str, str, bool | None] | None:
    """Where the non-scalar loss ``name`` became several numbers, and that statement with the term reduced:
    ``(line, new text, reduction)``. Followed through the loss's own statements of the failing function: the
    term without a reduction beside terms that are one number each (``loss_c = critic(fake) -
    critic(real).mean()``), else the whole value of the statement that binds it (``recon = (x_hat - x) ** 2``),
    so that every later use (a ``.item()`` for the log) gets one number too. The last element: True when the
    reduction is read from the code's other terms, False when it is a guess (the mean), None when the code's own
    reduction is moved from a factor to the whole product (NOTE [A reduction on a factor])."""
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None:
        return None
    seen: set[str] = set()
    line = loc.lineno
    while name not in seen:
        seen.add(name)
        binding = [
            st
            for st in preceding(tree, line)
            if isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id == name
        ]
        if not binding:
            return _reduce_returned(tree, preceding(tree, line), name, site, f.namespace)
        st = binding[-1]
        if st.lineno != st.end_lineno or not site.holds(st.lineno):
            return None
        value = st.value
        moved = _reduction_moved_out(value, f.namespace)
        if moved is not None:  # a reduction on a factor of several numbers: (a * w.mean()) meant (a * w).mean()
            text = site.text(st.lineno)
            start, end = value.col_offset, value.end_col_offset or 0
            return st.lineno, text[:start] + moved[0] + text[end:], moved[1], None
        terms = _operands(value)
        kinds = [_scalar(t, f.namespace) for t in terms]
        loose = [t for t, k in zip(terms, kinds) if k is not True]
        if len(terms) > 1 and len(loose) == 1 and not isinstance(loose[0], ast.Constant):
            term = loose[0]
            if (
                isinstance(term, ast.Name)
                and kinds[terms.index(term)] is False
                and _used_as_number(tree, term.id, loc.lineno)
            ):
                # read as one number later too (kl.item() for the log): reduced where it is made
                inner = _reduce_where_made(replace(f, location=Location(site.filename, st.lineno)), term.id)
                if inner is not None:
                    return inner
            how, known = _reduction_read(tree, value)
            text = site.text(st.lineno)
            start, end = term.col_offset, term.end_col_offset or 0
            wrapped = (
                ast.unparse(term)
                if isinstance(term, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                else f"({ast.unparse(term)})"
            )
            return st.lineno, text[:start] + f"{wrapped}.{how}()" + text[end:], how, known
        how, known = _reduction_read(tree, value)
        text = site.text(st.lineno)
        start, end = value.col_offset, value.end_col_offset or 0
        while text[start - 1 : start] == "(" and text[end : end + 1] == ")":  # (r**2): its own parentheses
            start, end = start - 1, end + 1
        simple = isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) or text[start] == "("
        inner_text = text[start:end]
        return (
            st.lineno,
            text[:start] + (f"{inner_text}.{how}()" if simple else f"({inner_text}).{how}()") + text[end:],
            how,
            known,
        )
    return None


def _reduction_moved_out(value: ast.expr, namespace: dict[str, object]) -> tuple[str, str] | None:
    """``a * w.mean()`` (a product or quotient of two factors, the reduction on a factor that is itself several
    numbers, the other factor several numbers too) as ``(a * w).mean()``, and the reduction: a weight or a mask
    reduced before it weighs (NOTE [A reduction on a factor])."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Div))):
        return None
    for reduced, other in ((value.right, value.left), (value.left, value.right)):
        if not (
            isinstance(reduced, ast.Call)
            and isinstance(reduced.func, ast.Attribute)
            and reduced.func.attr in ("mean", "sum")
            and not reduced.args
            and not reduced.keywords
        ):
            continue
        inner = reduced.func.value
        if _scalar(inner, namespace) is not False or _scalar(other, namespace) is True or _reduced(other):
            continue
        parts = (other, inner) if reduced is value.right else (inner, other)
        product = ast.BinOp(parts[0], value.op, parts[1])
        return f"({ast.unparse(product)}).{reduced.func.attr}()", reduced.func.attr
    return None


# NOTE [A reduction on a factor]
# loss = td_error.pow(2) * weights.mean() backwarded: several numbers, because the reduction sits on the
# importance weights (a factor that is itself several numbers), not on the product. Reducing the other factor
# too (td_error.pow(2).mean() * weights.mean()) gives one number, but the mean of a product is not the product
# of the means: each sample's weight no longer weighs its own error. With a reduction on one factor of a
# product or quotient, whose inside is several numbers (read from the frame), the reading is the reduction of
# the whole product, (td_error.pow(2) * weights).mean(): a weighted loss, a masked loss. A sum or difference
# keeps the rule of the loose term (critic(fake) - critic(real).mean(): each term is a mean of its own).


def _used_as_number(tree: ast.Module, name: str, line: int) -> bool:
    """``name`` is read as one number after ``line``: ``name.item()``, ``float(name)``, ``f"{name}"``."""
    for n in ast.walk(tree):
        if getattr(n, "lineno", 0) <= line:
            continue
        item = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "item"
        if item and ast.unparse(n.func.value) == name:  # type: ignore[attr-defined]
            return True
        number = isinstance(n, ast.Call) and ast.unparse(n.func) in ("float", "int") and bool(n.args)
        if number and ast.unparse(n.args[0]) == name:  # type: ignore[attr-defined]
            return True
        if isinstance(n, ast.FormattedValue) and isinstance(n.value, ast.Name) and n.value.id == name:
            return True
    return False


def _reduce_returned(
    tree: ast.Module, before: list[ast.stmt], name: str, site: Site, namespace: Mapping[str, Any] | None = None
) -> tuple[int, str, str, bool] | None:
    """``a, b = helper(...)`` where ``helper`` (a function of the file, or a module of the frame whose class's
    ``forward`` the file defines: ``self.loss_fn(...)``) ends in ``return x, y``: the element ``name`` receives,
    reduced in that return statement (``return recon, (beta * kl).sum()``)."""
    binding = [
        st
        for st in before
        if isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Tuple)
        and any(isinstance(e, ast.Name) and e.id == name for e in st.targets[0].elts)
        and isinstance(st.value, ast.Call)
    ]
    if not binding:
        return None
    st = binding[-1]
    assert isinstance(st.targets[0], ast.Tuple) and isinstance(st.value, ast.Call)
    index = next(k for k, e in enumerate(st.targets[0].elts) if isinstance(e, ast.Name) and e.id == name)
    callee = ast.unparse(st.value.func).rsplit(".", 1)[-1]
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == callee]
    module = resolve_dotted(ast.unparse(st.value.func), namespace) if namespace is not None and not defs else None
    if isinstance(module, torch.nn.Module):  # a loss module called: its class's forward
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == type(module).__name__]
        defs = [m for c in classes for m in c.body if isinstance(m, ast.FunctionDef) and m.name == "forward"]
    if len(defs) != 1:
        return None
    returns = [r for r in ast.walk(defs[0]) if isinstance(r, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Tuple):
        return None
    ret = returns[0]
    elts = ret.value.elts  # type: ignore[union-attr]
    if len(elts) != len(st.targets[0].elts) or ret.lineno != ret.end_lineno or _reduced(elts[index]):
        return None
    element = elts[index]
    how, known = _reduction_read(tree, defs[0])
    text = (
        site.text(ret.lineno) if site.holds(ret.lineno) else linecache.getline(site.filename, ret.lineno).rstrip("\n")
    )
    start, end = element.col_offset, element.end_col_offset or 0
    simple = isinstance(element, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    part = text[start:end]
    return ret.lineno, text[:start] + (f"{part}.{how}()" if simple else f"({part}).{how}()") + text[end:], how, known


def _non_scalar(f: Failure) -> Explanation:
    """``out.backward()`` on a tensor of several elements: reduce it where it became several numbers, with the
    reduction the code uses; or backward its mean, or its sum; ``grad_outputs=`` for ``autograd.grad``."""
    e = _located(f, lambda: T("here: backward of a tensor with more than one element, without gradient="))
    line = _Statement(f)
    grads = _grad_outputs(f, line)
    if grads is not None:
        return replace(e, fixes=(*_judged(f, [grads]), *e.fixes))
    call = _backward_call(line.tree) if line.tree is not None else None
    if call is None or call.args or any(k.arg == "gradient" for k in call.keywords) or line.text is None:
        return e
    assert isinstance(call.func, ast.Attribute)
    loss = call.func.value.id if isinstance(call.func.value, ast.Name) else None
    where = _reduce_where_made(f, loss) if loss is not None else None
    made: list[Proposal] = []
    if where is not None and f.site is not None:
        at, text, how, known = where
        made.append(
            Proposal(
                Fix(
                    keeps_forward=False,
                    summary=T(
                        "take the {how} of the whole product at line {line}, not of one of its factors: {code}",
                        how=how,
                        line=at,
                        code=text.strip(),
                    )
                    if known is None
                    else T(
                        "reduce the term that has several numbers where it is computed (line {line}), with the "
                        "{how} your code uses for its other terms: {loss} is then one number everywhere it is used",
                        line=at,
                        how=how,
                        loss=loss,
                    )
                    if known
                    else T(
                        "reduce it where it is computed (line {line}), with its mean (no other term says which; "
                        "the sum makes the step grow with the number of elements): {loss} is then one number "
                        "everywhere it is used",
                        line=at,
                        loss=loss,
                    ),
                    trains=T("every parameter {loss} reaches, by the gradient of that {how}", loss=loss, how=how),
                    edits=(Edit(f.site.filename, at, at, text),),
                    claims=_own_claim(f, loss, loss) if loss else (),
                ),
                None,
                False,
            )
        )
    assert isinstance(call.func, ast.Attribute)
    target = ast.get_source_segment(line.text, call.func.value)
    if target is None:
        return e
    proposals = []
    for how, alternative in (("mean", False), ("sum", True)):
        start, end = call.func.value.col_offset, call.func.value.end_col_offset or 0
        wrapped = (
            target if isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({target})"
        )
        new = line.text[:start] + f"{wrapped}.{how}()" + line.text[end:]
        fix = Fix(
            alternative=alternative,
            keeps_forward=False,  # what is backwarded is another tensor (one number)
            summary=T("backward the {how} of {target} (one number)", how=how, target=target),
            trains=T(
                "every parameter {target} reaches, by the gradient of its {how}: {note}",
                target=target,
                how=how,
                note=T("the step size does not depend on the batch size")
                if how == "mean"
                else T("the step size grows with the number of elements"),
            ),
            edits=line.edit(f, new),
        )
        if made:
            fix = replace(fix, alternative=True)
        proposals.append(Proposal(replace(fix, claims=_own_claim(f, f"{wrapped}.{how}()", target)), None, False))
    return replace(e, fixes=(*_judged(f, [*made, *proposals]), *e.fixes))


def _grad_outputs(f: Failure, line: _Statement) -> Proposal | None:
    """``torch.autograd.grad(u, x)`` of a non-scalar ``u``: ``grad_outputs=torch.ones_like(u)``, which is the
    gradient of ``u.sum()``: the derivative of each element of ``u`` by its own input (a PINN's du/dx)."""
    if line.tree is None or line.text is None:
        return None
    call = next(
        (
            n
            for n in ast.walk(line.tree)
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("autograd.grad") and n.args
        ),
        None,
    )
    if call is None or any(k.arg == "grad_outputs" for k in call.keywords) or len(call.args) > 2:
        return None
    alias = ast.unparse(call.func).split(".")[0]
    output = ast.unparse(call.args[0])
    end = (call.end_col_offset or 0) - 1  # the closing parenthesis
    new = line.text[:end] + f", grad_outputs={alias}.ones_like({output})" + line.text[end:]
    return Proposal(
        Fix(
            summary=T(
                "pass grad_outputs={alias}.ones_like({output}): the gradient of each element of {output} by its "
                "own input, as {output}.sum() would give",
                alias=alias,
                output=output,
            ),
            trains=T("the same derivative as of {output}.sum(), with {output} unchanged", output=output),
            edits=line.edit(f, new),
        ),
        None,
        True,
    )


def _own_claim(f: Failure, loss: str, tensor: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(loss, modules)``: the models the tensor named ``tensor`` reaches whose optimizer steps after this backward."""
    site, loc = f.site, f.location
    value = f.namespace.get(tensor)
    if site is None or loc is None or not isinstance(value, torch.Tensor) or value.grad_fn is None:
        return ()
    ids = leaves_of(value)
    reach = {m for m, held in site.modules.items() if held & ids}
    intent = site_intent(site, loc.lineno)
    return ((loss, tuple(sorted(reach & set(intent.trained) if intent.known else reach))),)


def _detach_view(f: Failure) -> Explanation:
    """``x.detach_()`` on a view: ``x = x.detach()``."""
    e = _located(f, lambda: T("here: detach_() of a view"))
    line = _Statement(f)
    st = line.tree
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute)):
        return e
    func = st.value.func
    if func.attr != "detach_" or not isinstance(func.value, (ast.Name, ast.Attribute)):
        return e
    new = ast.Assign([func.value], ast.Call(ast.Attribute(func.value, "detach", ast.Load()), [], []), lineno=1)
    fix = Fix(
        summary=T("detach out of place and keep the result: {name} = {name}.detach()", name=ast.unparse(func.value)),
        trains=T("the same as intended: the name holds the detached tensor, the view itself stays in its graph"),
        edits=line.edit(f, new),
    )
    return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))


def _unused_input(f: Failure) -> Explanation:
    """``torch.autograd.grad(out, inputs)`` with an input ``out`` does not depend on: name it; ``allow_unused=True``."""
    line = _Statement(f)
    call = (
        next(
            (
                n
                for n in ast.walk(line.tree)
                if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("grad") and len(n.args) >= 2
            ),
            None,
        )
        if line.tree is not None
        else None
    )
    index = f.message.index
    name = None
    if call is not None and index is not None and isinstance(call.args[1], (ast.List, ast.Tuple)):
        elts = call.args[1].elts
        name = ast.unparse(elts[index]) if index < len(elts) else None
    e = _located(
        f,
        lambda: (
            T("here: {name} is not used by what is differentiated", name=name)
            if name
            else T("here: an input is not used by what is differentiated")
        ),
    )
    rebuilt = _rebuilt_output(f) or _detached_before(f, call)
    if rebuilt:
        # the output was rebuilt from a number (torch.tensor(loss.item(), requires_grad=True)): no input is used;
        # or a .detach() on its path cuts off the model that holds the inputs (NOTE [An input cut off by a detach])
        e = replace(e, fixes=(*rebuilt, *e.fixes))
    if call is None or any(k.arg == "allow_unused" for k in call.keywords):
        return e
    new = ast.Call(call.func, call.args, [*call.keywords, ast.keyword("allow_unused", ast.Constant(True))])

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            return new if node is call else self.generic_visit(node)

    assert line.tree is not None
    fix = Fix(
        summary=T("if that input really is unused here, pass allow_unused=True (its gradient is None)"),
        trains=T(
            "the same for the inputs the output uses; the unused one gets None, not zero: code that reads it must expect that"
        ),
        edits=line.edit(f, Swap().visit(line.tree)),
    )
    return replace(e, fixes=(*e.fixes[:1], *_judged(f, [Proposal(fix, None, False)]), *e.fixes[1:]))


def _detached_before(f: Failure, call: ast.Call | None) -> tuple[Fix, ...]:
    """The fix that drops a ``.detach()`` (or ``.data``) on the differentiated output's path whose receiver calls
    a module the inputs belong to (NOTE [An input cut off by a detach])."""
    from .no_grad_fn import _fixes, path_cut

    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or call is None or loc.filename != site.filename:
        return ()
    inputs = ast.unparse(call.args[1])
    owners = {
        ast.unparse(n.func.value)
        for n in ast.walk(call.args[1])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _PARAMETER_LISTS
    } or {inputs}
    cut = path_cut(tree, loc.lineno)
    if cut.left is None or cut.rebuilt is not None:
        return ()
    called = {ast.unparse(n.func) for n in ast.walk(cut.left) if isinstance(n, ast.Call)}
    if not any(c == o or c.startswith(o + ".") for c in called for o in owners):
        return ()
    found = [fix for fix in _fixes(f, cut, loc.lineno) if fix.edits][:1]
    # autograd.grad writes no .grad: the fix changes the values it returns, not what the loop's losses train
    return tuple(
        replace(
            fix,
            trains=T(
                "torch.autograd.grad then returns a gradient for every input of {inputs}, and writes no .grad: what "
                "the loop's losses train stays as it is",
                inputs=inputs,
            ),
            claims=f.claims(),
            applicability="machine-applicable",
        )
        for fix in found
    )


#: The methods that list a module's parameters.
_PARAMETER_LISTS = frozenset({"parameters", "named_parameters"})

# NOTE [An input cut off by a detach]
# torch.autograd.grad(out, inputs) finds an input unused: the output does not
# depend on it. When the output's own path (the statements that build it, a list
# of parts appended to included) takes a module's result out of the graph with
# .detach() or .data, and that module is the one the inputs are the parameters of
# (the inputs are self.model.parameters(), the detached value self.model.backbone(x)),
# the cut is the reason: an EWC Fisher estimate that detached the backbone's
# features to save memory, a gradient penalty on detached activations. Dropping
# that .detach() lets every input reach the output. Offered first, before
# allow_unused=True (which would hide the cut and leave those gradients None).


def _rebuilt_output(f: Failure) -> tuple[Fix, ...]:
    """The fixes of a cut on the differentiated output's path (GL0003's rule, NOTE [The cut on the loss's path])
    when the path rebuilt it from a number: a leaf that requires grad, so no input reaches it."""
    from .no_grad_fn import _fixes, path_cut

    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return ()
    cut = path_cut(tree, loc.lineno)
    if cut.rebuilt is None:
        return ()
    return tuple(fix for fix in _fixes(f, cut, loc.lineno) if fix.edits)


def _hook(f: Failure) -> Explanation:
    """``t.register_hook(fn)`` on a tensor without grad: the hook only where grad flows."""
    e = _located(f, lambda: T("here: register_hook() on a tensor that does not require grad"))
    line = _Statement(f)
    st = line.tree
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute)):
        return e
    func = st.value.func
    if func.attr != "register_hook" or line.text is None:
        return e
    receiver = ast.unparse(func.value)
    guarded = f"if {receiver}.requires_grad:\n    {line.text}"
    fix = Fix(
        summary=T(
            "register the hook only when {name} requires grad (no gradient would ever reach it otherwise)",
            name=receiver,
        ),
        trains=T("unchanged: a hook only reads or rewrites gradients that flow"),
        edits=line.edit(f, guarded),
    )
    return replace(e, fixes=(*_judged(f, [Proposal(fix, None, False)]), *e.fixes))


#: The locator of each kind fixed at its line, by kind.
LOCATORS: dict[str, Callable[[Failure], Explanation]] = {
    "numpy_requires_grad": _numpy,
    "non_scalar_output": _non_scalar,
    "detach_view_in_place": _detach_view,
    "unused_input": _unused_input,
    "hook_no_grad": _hook,
}
