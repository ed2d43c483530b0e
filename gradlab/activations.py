"""The activations torch can run in place, and the exact rewrite that turns their ``inplace`` flag off.

An activation computes the same values and gradients in place or not: removing ``inplace=True`` (or leaving its
class out of a constructor's sweep that sets it) is an exact fix of a write to a tensor the graph saved. Pure
functions of source text, like :mod:`gradlab.rewrite`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from .source import blocks

__all__ = ["ACTIVATIONS", "ACTIVATION_NAMES", "swept_inplace_flags", "without_inplace_flags"]


ACTIVATIONS = {
    "relu_",
    "leaky_relu_",
    "elu_",
    "hardtanh_",
    "relu6_",
    "silu_",
    "hardsigmoid_",
    "hardswish_",
    "mish_",
    "gelu_",
    "threshold_",
    "dropout_",
    "selu_",
    "celu_",
    "rrelu_with_noise_",
}


ACTIVATION_NAMES = {
    "relu_": ("ReLU", "relu"),
    "leaky_relu_": ("LeakyReLU", "leaky_relu"),
    "elu_": ("ELU", "elu"),
    "hardtanh_": ("Hardtanh", "hardtanh", "ReLU6", "relu6"),
    "silu_": ("SiLU", "silu"),
    "hardsigmoid_": ("Hardsigmoid", "hardsigmoid"),
    "hardswish_": ("Hardswish", "hardswish"),
    "mish_": ("Mish", "mish"),
    "threshold_": ("Threshold", "threshold"),
    "dropout_": ("Dropout", "dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "alpha_dropout"),
    "selu_": ("SELU", "selu"),
    "celu_": ("CELU", "celu"),
    "rrelu_with_noise_": ("RReLU", "rrelu"),
}


def without_inplace_flags(source: str, op: str) -> tuple[tuple[int, int, str], ...]:
    r"""Every statement of ``source`` that builds the activation of the in-place ``op`` (``relu_``: ``nn.ReLU``,
    ``F.relu``) with ``inplace=True``, as ``(first line, last line, its lines without the flag)``: an exact
    rewrite, the out-of-place activation computes the same values and gradients. A statement over several
    lines (a dict of activations) is rewritten whole, so the new lines parse on their own.

    Example::

        >>> without_inplace_flags("a = nn.ReLU(inplace=True)\nb = nn.Tanh()", "relu_")
        ((1, 1, 'a = nn.ReLU()'),)
        >>> without_inplace_flags("d = nn.Dropout(0.2, inplace=cfg['dropout_inplace'])", "dropout_")
        ((1, 1, 'd = nn.Dropout(0.2)'),)
        >>> without_inplace_flags("acts = {'l': nn.LeakyReLU(0.2, inplace=True), 'r': nn.ReLU(inplace=True),\n"
        ...                       "        'n': None}", "leaky_relu_")
        ((1, 2, "acts = {'l': nn.LeakyReLU(0.2), 'r': nn.ReLU(inplace=True),\n        'n': None}"),)
    """
    parsed = _activation_source(source, op)
    if parsed is None:
        return ()
    names, tree = parsed
    lines = source.splitlines()
    flags = [
        k
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) in names
        for k in n.keywords
        if k.arg == "inplace" and _may_be_true(k.value)
    ]
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not list(blocks(n))]
    out: dict[tuple[int, int], list[ast.keyword]] = {}
    for k in flags:
        st = min(
            (x for x in statements if x.lineno <= k.lineno <= (x.end_lineno or x.lineno)),
            key=lambda x: (x.end_lineno or x.lineno) - x.lineno,
            default=None,
        )
        if st is not None and k.end_lineno == k.lineno and k.end_col_offset is not None:
            out.setdefault((st.lineno, st.end_lineno or st.lineno), []).append(k)
    found = []
    for (first, last), keywords in sorted(out.items()):
        text = lines[first - 1 : last]
        for k in sorted(keywords, key=lambda k: (k.lineno, k.col_offset), reverse=True):
            row = text[k.lineno - first]
            before, after = row[: k.col_offset], row[k.end_col_offset :]
            stripped = before.rstrip()
            # f(x, inplace=True): the comma before it goes; f(inplace=True, x) or f(inplace=True): the one after it
            comma_before = stripped.endswith(",")
            text[k.lineno - first] = stripped[:-1] + after if comma_before else before + re.sub(r"^\s*,\s*", "", after)
        found.append((first, last, "\n".join(text)))
    return tuple(found)


def _may_be_true(flag: ast.expr) -> bool:
    """``inplace=`` given ``True``, or a value read at run time (``inplace=cfg["act_inplace"]``): NOTE [A flag read
    from a config]."""
    if isinstance(flag, ast.Constant):
        return flag.value is True
    return isinstance(flag, (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.BoolOp, ast.Compare, ast.IfExp))


# NOTE [A flag read from a config]
# Projects build their blocks from a config: nn.Dropout(p, inplace=cfg["dropout_inplace"]). The flag's value is
# known only at run time, but the recorded write says it was True for the module that wrote; leaving the keyword
# out makes that module run out of place, which computes the same values and gradients, whatever the config says.
# The config entry itself stays: another module may read it, and a keyword left out is the smallest exact edit.


def swept_inplace_flags(source: str, op: str) -> tuple[tuple[int, int, str], ...]:
    r"""The loops of ``source`` that set ``inplace = True`` on the modules of the in-place ``op``'s class, each
    rewritten to leave that class out, as ``(first line, last line, new text)`` (NOTE [An inplace flag set by a
    sweep]).

    Example::

        >>> swept_inplace_flags("for m in net.modules():\n    if isinstance(m, (nn.ReLU, nn.Dropout)):\n"
        ...                     "        m.inplace = True", "dropout_")
        ((2, 2, '    if isinstance(m, nn.ReLU):'),)
    """
    parsed = _activation_source(source, op)
    if parsed is None:
        return ()
    names, tree = parsed
    return tuple(sorted(_swept_flags(tree, source.splitlines(), names)))


def _activation_source(source: str, op: str) -> tuple[tuple[str, ...], ast.Module] | None:
    """The names of the in-place ``op``'s activation (``relu_``: ``ReLU``, ``relu``) and ``source``'s tree; None
    for another op, or a source that does not parse."""
    names = ACTIVATION_NAMES.get(op)
    if names is None:
        return None
    try:
        return names, ast.parse(source)
    except SyntaxError:
        return None


# NOTE [An inplace flag set by a sweep]
# A constructor may turn activations in place after building them, to save memory:
# ``for m in self.modules(): if isinstance(m, nn.ReLU) or isinstance(m, nn.Dropout): m.inplace = True``.
# No call has ``inplace=True`` to remove. The class of the in-place op that wrote the
# saved tensor leaves the sweep's test (``isinstance(m, nn.ReLU)``): the others stay in
# place, as the author meant. When the test names nothing else (or has another shape),
# the flag is set False instead: every swept module then computes out of place. Both are
# exact: an activation computes the same values and gradients either way.
def _swept_flags(tree: ast.Module, lines: list[str], names: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """The sweeps that set ``inplace = True`` on modules of ``names`` (NOTE [An inplace flag set by a sweep])."""

    def names_one(node: ast.AST) -> bool:
        return any(
            (isinstance(n, ast.Attribute) and n.attr in names) or (isinstance(n, ast.Name) and n.id in names)
            for n in ast.walk(node)
        )

    found = []
    for branch in ast.walk(tree):
        if not isinstance(branch, ast.If) or not names_one(branch.test):
            continue
        for st in branch.body:
            if not (
                isinstance(st, ast.Assign)
                and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Attribute)
                and st.targets[0].attr == "inplace"
                and isinstance(st.value, ast.Constant)
                and st.value.value is True
            ):
                continue
            test = _without_names(branch.test, names_one)
            header = lines[branch.lineno - 1]
            one_line = branch.test.lineno == branch.test.end_lineno == branch.lineno
            if test is not None and one_line and branch.test.end_col_offset is not None:
                row = header[: branch.test.col_offset] + ast.unparse(test) + header[branch.test.end_col_offset :]
                found.append((branch.lineno, branch.lineno, row))
            elif st.lineno == st.end_lineno and st.value.end_col_offset is not None:
                row = lines[st.lineno - 1]
                found.append(
                    (st.lineno, st.lineno, row[: st.value.col_offset] + "False" + row[st.value.end_col_offset :])
                )
    return found


def _without_names(test: ast.expr, names_one: Callable[[ast.AST], bool]) -> ast.expr | None:
    """``test`` without its parts that name the written class: an operand of ``or``, an item of
    ``isinstance``'s tuple; None when nothing would be left, or for another shape."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        kept = [v for v in test.values if not names_one(v)]
        if not kept or len(kept) == len(test.values):
            return None
        return kept[0] if len(kept) == 1 else ast.BoolOp(op=ast.Or(), values=kept)
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[1], ast.Tuple)
    ):
        items = [e for e in test.args[1].elts if not names_one(e)]
        if not items or len(items) == len(test.args[1].elts):
            return None
        kind = items[0] if len(items) == 1 else ast.Tuple(elts=items, ctx=ast.Load())
        return ast.Call(func=test.func, args=[test.args[0], kind], keywords=[])
    return None
