"""numpy code on a tensor with a graph written with torch, on the graph (GL0007's fixes that keep the gradient):
numpy's functions in a module's method or a loss's terms as torch's (NOTE [numpy inside a forward], NOTE [Terms
of one loss reduced with numpy]), and a round trip to numpy and back as the same statements on the tensor (NOTE
[A numpy round trip]); with the readings of numpy code these rewrites and :mod:`gradlab.kinds.numpy_values` share
(numpy's names in a frame, a statement's targets, the names it reads as values)."""

from __future__ import annotations

import ast
import linecache
from collections.abc import Mapping

import torch

from ..edits import Edit
from ..evidence import Failure
from ..fixes import Fix
from ..i18n import T
from ..location import Location
from ..source import block_of, function_of


def _numpy_aliases(namespace: Mapping[str, object]) -> set[str]:
    """A frame's names for the numpy module (``np``, ``numpy``, ``import numpy as xp``'s ``xp``)."""
    import numpy

    return {k for k, v in namespace.items() if v is numpy}


def _in_torch_fix(at: Location, line: str, also: tuple[Edit, ...] = ()) -> Fix:
    """The raising line ``at`` replaced by ``line``, its numpy calls written with torch (NOTE [numpy inside a
    forward]); ``also``: the same rewrite of the other terms of the same loss (NOTE [Terms of one loss reduced
    with numpy])."""
    return Fix(
        summary=T("compute it with torch, on the graph: {code}", code=line.strip()),
        trains=T(
            "the same values, and the gradient flows through them into what they were computed from "
            "(a .detach() would stop that)"
        ),
        edits=tuple(sorted((Edit(at.filename, at.lineno, at.lineno, line), *also), key=lambda e: e.start)),
    )


def _sibling_terms(f: Failure, st: ast.stmt, tree: ast.Module) -> tuple[Edit, ...]:
    """The other one-line assignments of the raising statement's block that reduce a list built on their line with
    numpy and whose targets are read by the statement that reads the raising one's (``loss = a + w * b`` of
    ``a = np.sum([...])`` and ``b = np.sum([...])``), each written with torch (NOTE [Terms of one loss reduced
    with numpy])."""
    block = block_of(tree, st)
    if block is None or f.location is None:
        return ()
    mine = {n.id for t in _targets(st) for n in ast.walk(t) if isinstance(n, ast.Name)}
    readers = [x for x in block if x.lineno > (st.end_lineno or st.lineno) and _values_read(x) & mine]
    if not readers:
        return ()
    read = _values_read(readers[0])
    edits = []
    for x in block:
        if x is st or not isinstance(x, ast.Assign) or x.lineno != x.end_lineno or x.lineno > readers[0].lineno:
            continue
        if not {n.id for t in x.targets for n in ast.walk(t) if isinstance(n, ast.Name)} & read:
            continue
        if not any(isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.ListComp) for n in ast.walk(x)):
            continue
        text = linecache.getline(f.location.filename, x.lineno).rstrip("\n")
        new = _numpy_in_torch(f, x, text)
        if new is not None:
            edits.append(Edit(f.location.filename, x.lineno, x.lineno, new))
    return tuple(edits)


# NOTE [Terms of one loss reduced with numpy]
# A loss summed from terms that are each reduced with numpy over a list built on their line
# (loss_char = np.sum([crit(s, y) for s in stages]), then loss_ror the same way, then
# loss = loss_char + w * loss_ror) raises at the first term; written in torch, the next run
# raises at the second. The terms the same statement reads as the raising one's, each reducing a
# list built on its line with numpy, are rewritten in the same fix: one patch that runs.


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
    # elementwise functions of one tensor: the same values, on the graph
    "log": "log",
    "exp": "exp",
    "sqrt": "sqrt",
    "abs": "abs",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "log1p": "log1p",
    "expm1": "expm1",
    "square": "square",
}
_ELEMENTWISE = frozenset({"log", "exp", "sqrt", "abs", "sin", "cos", "tanh", "log1p", "expm1", "square"})
_TAKES_A_LIST = frozenset({"stack", "concatenate"})


# Functions whose result is positions, not values: no gradient could flow from what they read (not topk or sort,
# whose values come with the positions).
_INDEX_FUNCTIONS = frozenset(
    {"argsort", "argmax", "argmin", "argpartition", "argwhere", "nonzero", "flatnonzero", "searchsorted"}
)


def _values_read(st: ast.stmt) -> set[str]:
    """The names ``st`` reads as values: not those read only as positions, in a subscript's index (``emb[ids]``) or
    by a function that returns positions (``np.argsort(scores)``); a gradient could not flow through those."""
    skipped: set[int] = set()
    for n in ast.walk(st):
        if isinstance(n, ast.Subscript):
            skipped |= {id(m) for m in ast.walk(n.slice)}
        elif isinstance(n, ast.Call):
            name = (
                n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id if isinstance(n.func, ast.Name) else ""
            )
            if name in _INDEX_FUNCTIONS:
                skipped |= {id(m) for m in ast.walk(n)}
    return {
        n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skipped
    }


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
    aliases = _numpy_aliases(f.namespace)
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


def _numpy_in_torch(f: Failure, st: ast.stmt, text: str) -> str | None:
    """The raising line with each numpy call on graph tensors written with torch's function (NOTE [numpy inside
    a forward]); None when a call has no exact torch form (the ddof of ``np.std``, an ``out=``, ...)."""

    aliases = _numpy_aliases(f.namespace)
    torch_name = next((k for k, v in f.namespace.items() if v is torch), None)
    if not aliases or torch_name is None:
        return None
    spots: list[tuple[int, int, str]] = []
    numpy_calls = [
        n
        for n in ast.walk(st)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in aliases
        and n.args
    ]
    for call in numpy_calls:
        func = call.func
        assert isinstance(func, ast.Attribute)
        elementwise = func.attr in _ELEMENTWISE
        if elementwise:  # an expression of the frame's names (np.log(2 * np.pi * var)): one of them a graph tensor
            if len(call.args) != 1 or call.keywords:
                return None
            read = [n.id for n in ast.walk(call.args[0]) if isinstance(n, ast.Name)]
            if not any(
                isinstance(f.namespace.get(r), torch.Tensor) and _graph_tensors(f.namespace.get(r)) for r in read
            ):
                continue
        elif not any(_graph_tensors(_value_of(f, a)) for a in call.args[:1]) and not (
            isinstance(call.args[0], ast.ListComp) and len(numpy_calls) == 1
        ):  # a list built on the line (np.sum([crit(p, y) for p in preds])): the one numpy call, the one that raised
            continue
        name = _NUMPY_TO_TORCH.get(func.attr)
        first = call.args[0]
        listed = isinstance(_value_of(f, first), (list, tuple)) or isinstance(
            first, (ast.List, ast.Tuple, ast.ListComp)
        )
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
        raw = text.encode("utf-8")  # the argument as written (col offsets are bytes of the line's UTF-8)
        arg = (
            raw[first.col_offset : first.end_col_offset].decode("utf-8")
            if first.lineno == first.end_lineno and first.end_col_offset is not None
            else ast.unparse(first)
        )
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
