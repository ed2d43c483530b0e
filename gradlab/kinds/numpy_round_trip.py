"""A tensor taken to numpy and back on the loss's path (``torch.as_tensor(f(x.detach().numpy()))``): the graph is cut
(GL0003); the round trip written with torch, where the loss then keeps its graph (NOTE [A numpy round trip through a
helper], NOTE [A numpy round trip on one line]). The round trip of a tensor that still requires grad, which raises
at ``.numpy()`` itself (GL0007), is :mod:`gradlab.kinds.numpy_values`'s, written with torch in
:mod:`gradlab.kinds.numpy_in_torch` (NOTE [A numpy round trip])."""

from __future__ import annotations

import ast
from typing import TypeGuard

from ..edits import Edit
from ..evidence import torch_alias
from ..fixes import Fix, source_of
from ..i18n import T
from ..location import Location
from ..source import parse, statement_at
from .numpy_in_torch import _BACK_TO_TORCH, _NUMPY_TO_TORCH, _TAKES_A_LIST, _numpy_aliases, _spliced

__all__ = ["helper_round_trip_fix", "inline_round_trip_fix", "inner_round_trip_fix"]

# NOTE [A numpy round trip through a helper]
# A loss computed through a helper written for arrays: the tensor is detached and
# taken to numpy (x.detach().cpu().numpy()), a function of the user's file computes
# with numpy, and torch.as_tensor (torch.from_numpy, torch.tensor) turns its result
# back into a tensor (a drone's motor mixer, a colour conversion): the loss has no
# graph (GL0003, located at the .detach()). When the helper is called only there,
# takes the array as its one argument, and its body uses only operators, the arrays'
# methods tensors share and numpy functions torch has under a known name (the table
# of NOTE [numpy inside a forward]: np.clip is torch.clamp), the helper is written
# with torch and called on the tensor itself: each numpy array of the module it
# reads becomes torch.as_tensor(array, dtype=<argument>.dtype), and the conversion
# back is dropped (a dtype it gave kept as .to(dtype)). The gradient then flows
# through the helper into what the tensor was computed from; the arithmetic runs in
# the tensor's dtype (float32 where numpy promoted to float64).
_NOT_ON_TENSORS = frozenset({"astype", "tolist", "item", "copy", "numpy"})
# a helper's body is written whole, with its arguments as they are: positional bounds only (np.clip(a, lo, hi) is
# torch.clamp(a, lo, hi))
_HELPER_TO_TORCH = {**_NUMPY_TO_TORCH, "clip": "clamp"}


def _converts_back(node: ast.AST, torch_name: str) -> TypeGuard[ast.Call]:
    """``node`` is ``torch.from_numpy(a)``, ``torch.as_tensor(a)`` or ``torch.tensor(a)``, a ``dtype=`` at most."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == torch_name
        and node.func.attr in _BACK_TO_TORCH
        and len(node.args) == 1
        and all(k.arg == "dtype" for k in node.keywords)
    )


def _dtype_kept(back: ast.Call) -> str:
    """``.to(dtype)`` for the ``dtype=`` the conversion back gave, else nothing."""
    dtype = next((k.value for k in back.keywords), None)
    return f".to({ast.unparse(dtype)})" if dtype is not None else ""


def _stripped(node: ast.expr) -> ast.expr | None:
    """The tensor expression under ``x.detach().cpu().numpy()`` (``.numpy()`` last; ``.detach()``, ``.cpu()``,
    ``.clone()`` and ``.data`` under it dropped); None when ``node`` does not end in ``.numpy()``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy"):
        return None
    if node.args or node.keywords:
        return None
    inner = node.func.value
    while True:
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and inner.func.attr in ("detach", "cpu", "clone")
            and not inner.args
            and not inner.keywords
        ):
            inner = inner.func.value
        elif isinstance(inner, ast.Attribute) and inner.attr == "data":
            inner = inner.value
        else:
            return inner


def _helper_in_torch(
    fn: ast.FunctionDef, lines: list[str], namespace: dict[str, object], torch_name: str, numpy_names: set[str]
) -> list[tuple[int, str]] | None:
    """``fn``'s lines that change when its numpy is written with torch, as (line, new text); None when a numpy
    function without a known torch name, a keyword to one, or a method tensors lack is on the way."""
    import numpy

    arg = fn.args.args[0].arg
    spots: dict[int, list[tuple[int, int, str]]] = {}
    called = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id in numpy_names
            and id(n) not in called
        ):
            return None  # a numpy attribute that is not a call (np.pi, np.newaxis): not written here
        if isinstance(n, ast.Attribute) and n.attr in _NOT_ON_TENSORS:
            return None
        if not isinstance(n, (ast.Call, ast.Name)) or n.lineno != n.end_lineno:
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
            if n.func.value.id in numpy_names:
                name = _HELPER_TO_TORCH.get(n.func.attr)
                if name is None or n.keywords or n.func.attr in _TAKES_A_LIST:
                    return None
                spots.setdefault(n.lineno, []).append(
                    (n.func.col_offset, n.func.end_col_offset or 0, f"{torch_name}.{name}")
                )
        elif (
            isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id != arg
            and isinstance(namespace.get(n.id), numpy.ndarray)
        ):
            spots.setdefault(n.lineno, []).append(
                (n.col_offset, n.end_col_offset or 0, f"{torch_name}.as_tensor({n.id}, dtype={arg}.dtype)")
            )
    out: list[tuple[int, str]] = []
    for line, found in sorted(spots.items()):
        new = _spliced(lines[line - 1], found)
        if new is None:
            return None
        out.append((line, new))
    return out or None


def helper_round_trip_fix(at: Location, namespace: dict[str, object]) -> tuple[Fix, str] | None:
    """The helper of a numpy round trip written with torch and called on the tensor (NOTE [A numpy round trip
    through a helper]), with the tensor's expression; None when the line at ``at`` is not such a round trip or the
    helper cannot be written."""
    lines = source_of(at.filename).splitlines()
    tree = parse("\n".join(lines))
    st = statement_at(tree, at.lineno) if tree is not None else None
    if tree is None or st is None or st.lineno != st.end_lineno or not 0 < at.lineno <= len(lines):
        return None
    torch_name, numpy_names = torch_alias(namespace), _numpy_aliases(namespace)
    if torch_name is None or not numpy_names:
        return None
    for back in ast.walk(st):
        if not _converts_back(back, torch_name):
            continue
        call = back.args[0]
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and len(call.args) == 1):
            continue
        tensor = _stripped(call.args[0])
        name = call.func.id
        fn = next((d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name == name), None)
        calls = [
            c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
        ]
        if tensor is None or call.keywords or fn is None or len(calls) != 1 or fn.decorator_list:
            continue
        if len(fn.args.args) != 1 or fn.args.vararg or fn.args.kwonlyargs or fn.args.kwarg or fn.args.posonlyargs:
            continue
        body = _helper_in_torch(fn, lines, namespace, torch_name, numpy_names)
        if body is None:
            return None
        text = lines[at.lineno - 1]
        raw = text.encode("utf-8")
        inner = raw[tensor.col_offset : tensor.end_col_offset or 0].decode("utf-8")
        new_call = f"{name}({inner}){_dtype_kept(back)}"
        new = _spliced(text, [(back.col_offset, back.end_col_offset or 0, new_call)])
        if new is None:
            return None
        edits = [Edit(at.filename, k, k, t) for k, t in body]
        edits.append(Edit(at.filename, at.lineno, at.lineno, new))
        fix = Fix(
            summary=T(
                "compute {helper}() with torch, on the tensor itself instead of its numpy copy: its numpy "
                "functions written with torch's, and the conversion back dropped",
                helper=name,
            ),
            trains=T(
                "the same values, and the gradient flows through {helper}() into what {tensor} was computed "
                "from (the .numpy() copy stopped it)",
                helper=name,
                tensor=inner,
            ),
            edits=tuple(sorted(edits, key=lambda e: e.start)),
            keeps_forward=False,  # the helper's arithmetic in the tensor's dtype, not numpy's float64
        )
        return fix, inner
    return None


# NOTE [A numpy round trip on one line]
# The same round trip without a helper: torch.from_numpy(out.detach().cpu().numpy()[idx]) picks rows of a
# model's output through numpy (hard triplets mined with numpy's where, selected from the numpy copy): the
# selected rows have no graph. Indexing is something tensors do themselves, with the same index (a numpy array
# of integers or booleans is a valid tensor index): the line becomes out[idx], and every such line the tracker
# saw cut (the anchors, the positives, the negatives) is written the same way, in one fix.


def _inline(text: str, torch_name: str) -> tuple[str, str] | None:
    """Line ``text`` with its ``torch.from_numpy(t.detach().numpy()[i])`` written as ``t[i]``, and the first such
    tensor's expression; None when it holds no such round trip."""
    indent, body = text[: len(text) - len(text.lstrip())], text.strip()
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    raw = body.encode("utf-8")
    spots: list[tuple[int, int, str]] = []
    tensors: list[str] = []
    for back in ast.walk(tree):
        if not _converts_back(back, torch_name):
            continue
        first: ast.expr = back.args[0]
        arg, index = (first.value, first.slice) if isinstance(first, ast.Subscript) else (first, None)
        tensor = _stripped(arg)
        if tensor is None:
            continue
        new = raw[tensor.col_offset : tensor.end_col_offset or 0].decode("utf-8")
        tensors.append(new)
        if index is not None:
            new += f"[{raw[index.col_offset : index.end_col_offset or 0].decode('utf-8')}]"
        new += _dtype_kept(back)
        spots.append((back.col_offset, back.end_col_offset or 0, new))
    spliced = _spliced(body, spots)
    return (indent + spliced, tensors[0]) if spliced is not None else None


def inline_round_trip_fix(lines: list[Location], namespace: dict[str, object]) -> tuple[Fix, str] | None:
    """Every line of ``lines`` that takes a tensor through numpy and back on its own, written as the tensor
    indexed in torch (NOTE [A numpy round trip on one line]), with the first line's tensor; None without one."""
    torch_name = torch_alias(namespace)
    if torch_name is None:
        return None
    edits: list[Edit] = []
    tensor = ""
    sources: dict[str, list[str]] = {}  # each file's lines, read once
    for at in dict.fromkeys(lines):
        source = sources.setdefault(at.filename, source_of(at.filename).splitlines())
        found = _inline(source[at.lineno - 1], torch_name) if 0 < at.lineno <= len(source) else None
        if found is not None:
            edits.append(Edit(at.filename, at.lineno, at.lineno, found[0]))
            tensor = tensor or found[1]
    if not edits:
        return None
    fix = Fix(
        summary=T(
            "index the tensor in torch instead of its numpy copy at {where}: the same rows, with their graph",
            where=", ".join(Location(e.filename, e.start).where for e in edits),
        ),
        trains=T("the same values, and the gradient flows into what the indexed tensors were computed from"),
        edits=tuple(sorted(edits, key=lambda e: e.start)),
        keeps_forward=True,
    )
    return fix, tensor


# NOTE [A numpy round trip inside a helper]
# The helper may take the tensors themselves and do the round trip inside: probs = crop_probs.detach().cpu().numpy(),
# then numpy (np.unique of the ids, np.stack of a group-by mean per receipt), and its caller turns the result back
# with torch.tensor(helper(crop_probs, ids), dtype=...): the loss has no graph (GL0003, located at the .detach() in
# the helper). When the helper is called once, by that conversion, each of its statements that converts an
# argument binds the argument itself (probs = crop_probs), its numpy calls are functions torch has under a known name
# (np.unique is torch.unique, np.stack torch.stack), and what it does with the arrays tensors do as well (comparisons,
# boolean indexing, .mean(axis=0), which torch takes), the helper computes on the tensors and the caller drops the
# conversion back (its dtype kept as .to(dtype)). The same values, with the graph from the model's output on.
_INNER_TO_TORCH = {**_HELPER_TO_TORCH, "unique": "unique"}


def inner_round_trip_fix(at: Location, namespace: dict[str, object]) -> tuple[Fix, str] | None:
    """The helper whose statement at ``at`` converts an argument to numpy, written with torch, and its one caller's
    conversion back dropped (NOTE [A numpy round trip inside a helper]), with the converted argument's name; None
    when the shape differs anywhere."""
    lines = source_of(at.filename).splitlines()
    tree = parse("\n".join(lines))
    torch_name, numpy_names = torch_alias(namespace), _numpy_aliases(namespace)
    if tree is None or torch_name is None or not numpy_names:
        return None
    # the cut located in the helper (its .detach()), or at the caller's conversion back of the helper's result
    here = statement_at(tree, at.lineno)
    called = {
        b.args[0].func.id
        for b in (ast.walk(here) if here is not None else ())
        if _converts_back(b, torch_name) and isinstance(b.args[0], ast.Call) and isinstance(b.args[0].func, ast.Name)
    }
    fn = next(
        (
            d
            for d in tree.body
            if isinstance(d, ast.FunctionDef) and (d.name in called or d.lineno <= at.lineno <= (d.end_lineno or 0))
        ),
        None,
    )
    if fn is None or fn.decorator_list:
        return None
    args = {a.arg for a in fn.args.args}
    calls = [
        c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == fn.name
    ]
    backs = [b for b in ast.walk(tree) if _converts_back(b, torch_name) and b.args[0] in calls]
    if len(calls) != 1 or len(backs) != 1 or backs[0].lineno != backs[0].end_lineno:
        return None
    edits: list[Edit] = []
    converted: list[str] = []
    for st in fn.body:
        if (
            isinstance(st, ast.Assign)
            and st.lineno == st.end_lineno
            and (inner := _stripped(st.value)) is not None
            and isinstance(inner, ast.Name)
            and inner.id in args
        ):
            text = lines[st.lineno - 1]
            new = _spliced(text, [(st.value.col_offset, st.value.end_col_offset or 0, inner.id)])
            if new is None:
                return None
            edits.append(Edit(at.filename, st.lineno, st.lineno, new))
            converted.append(inner.id)
            continue
        spots: dict[int, list[tuple[int, int, str]]] = {}
        for n in ast.walk(st):
            if isinstance(n, ast.Attribute) and n.attr in _NOT_ON_TENSORS:
                return None
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in numpy_names:
                name = _INNER_TO_TORCH.get(n.attr)
                if name is None or n.lineno != n.end_lineno:
                    return None
                spots.setdefault(n.lineno, []).append((n.col_offset, n.end_col_offset or 0, f"{torch_name}.{name}"))
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id in numpy_names
                and n.keywords
            ):
                return None  # numpy's keywords are not torch's (axis= to a function)
        for line, found in sorted(spots.items()):
            new = _spliced(lines[line - 1], found)
            if new is None:
                return None
            edits.append(Edit(at.filename, line, line, new))
    if not converted:
        return None
    back = backs[0]
    call = lines[back.lineno - 1].encode("utf-8")[calls[0].col_offset : calls[0].end_col_offset or 0].decode("utf-8")
    new = _spliced(lines[back.lineno - 1], [(back.col_offset, back.end_col_offset or 0, call + _dtype_kept(back))])
    if new is None:
        return None
    edits.append(Edit(at.filename, back.lineno, back.lineno, new))
    fix = Fix(
        summary=T(
            "compute {helper}() with torch, on the tensors themselves instead of their numpy copies: its numpy "
            "functions written with torch's, and the conversion back dropped",
            helper=fn.name,
        ),
        trains=T(
            "the same values, and the gradient flows through {helper}() into what {tensor} was computed "
            "from (the .numpy() copy stopped it)",
            helper=fn.name,
            tensor=converted[0],
        ),
        edits=tuple(sorted(edits, key=lambda e: e.start)),
        keeps_forward=False,  # the arithmetic in the tensor's dtype, not numpy's float64
    )
    return fix, converted[0]
