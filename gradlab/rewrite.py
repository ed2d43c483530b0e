"""Rewrites of one statement of the user's code: the out-of-place form of a write, a detach, a keyword.

Pure functions of the text of a line (or of its tree): they never read a file
and never run anything. Where a rewrite is placed in the user's file, and
checked, is :mod:`gradlab.fixes`'s job.

Example::

    >>> rewrite_in_place("y.mul_(3)", "mul_")
    'y = y.mul(3)'
    >>> detach_in("pred_2 = n_2(pred_1)", "pred_1")
    'pred_2 = n_2(pred_1.detach())'
"""

from __future__ import annotations

import ast
import re

__all__ = ["AUGMENTED", "rewrite_in_place", "detach_in", "with_keyword", "op_display"]


AUGMENTED = {
    "__iadd__": "+",
    "__isub__": "-",
    "__imul__": "*",
    "__itruediv__": "/",
    "__ifloordiv__": "//",
    "__imod__": "%",
    "__ipow__": "**",
    "__imatmul__": "@",
    "__iand__": "&",
    "__ior__": "|",
    "__ixor__": "^",
}

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

OP_NAMES = {k: f"{v}=" for k, v in AUGMENTED.items()}


def op_display(op: str) -> str:
    """An in-place op as the user wrote it: ``add_`` -> ``.add_()``, ``__iadd__`` -> ``+=``.

    Example::

        >>> op_display("add_"), op_display("__itruediv__"), op_display("__setitem__")
        ('.add_()', '/=', 'x[...] =')
    """
    if op in OP_NAMES:
        return OP_NAMES[op]
    if op == "__setitem__":
        return "x[...] ="
    return op if op.startswith("__") else f".{op}()"


def rewrite_in_place(code: str, op: str) -> str | None:
    """The out-of-place form of one line that ran the in-place ``op``, or None if gradlab cannot write it.

    Example::

        >>> rewrite_in_place("y.mul_(3)", "mul_")
        'y = y.mul(3)'
        >>> rewrite_in_place("h += x  # step", "__iadd__")
        'h = h + x  # step'
        >>> rewrite_in_place("act = nn.ReLU(inplace=True)", "relu_")
        'act = nn.ReLU()'
    """
    body, comment = split_comment(code)
    if op in AUGMENTED:
        m = re.fullmatch(r"(\s*)([\w.\[\]]+)\s*" + re.escape(AUGMENTED[op]) + r"=\s*(.+?)\s*", body)
        if m:
            return f"{m[1]}{m[2]} = {m[2]} {AUGMENTED[op]} {m[3]}{comment}"
        return None
    if op == "__setitem__":
        # into a copy, the index and the value read from the original (which keeps what autograd saved), then
        # rebound: the same values and gradients, also when the value reads the tensor (z[:, h:] = z[:, h:] * s)
        m = re.fullmatch(r"(\s*)([A-Za-z_]\w*)\[(.+)\]\s*=\s*(.+?)\s*", body)
        if m:
            copy = f"{m[2]}_copy"
            return f"{m[1]}{copy} = {m[2]}.clone()\n{m[1]}{copy}[{m[3]}] = {m[4]}{comment}\n{m[1]}{m[2]} = {copy}"
        return None
    if "inplace=True" in body:
        return re.sub(r",?\s*inplace=True", "", body).replace("(, ", "(") + comment
    if op in ACTIVATIONS:
        return None
    m = re.fullmatch(r"(\s*)(?:([\w.]+)\s*=\s*)?([\w.\[\]]+)\." + re.escape(op) + r"\((.*)\)\s*", body)
    if m:
        target = m[2] or m[3]
        return f"{m[1]}{target} = {m[3]}.{op[:-1]}({m[4]}){comment}"
    return None


def detach_in(line: str, name: str, into: tuple[str, ...] = ()) -> str | None:
    """``line`` with a use of ``name`` on its right-hand side detached, or None.

    With ``into`` (the models ``name`` must be cut off from) and a call of one of
    them on the line, the use detached is the first one inside such a call
    (``n_2(pred_1)``), and None when there is none: detaching another use (the
    upstream model's own loss, ``criterion(y, pred_1)``) would stop the wrong
    gradient. Otherwise, the first use.

    Example::

        >>> detach_in("pred_2 = n_2(pred_1)", "pred_1")
        'pred_2 = n_2(pred_1.detach())'
        >>> detach_in("out, hidden = rnn(x, hidden)", "hidden")
        'out, hidden = rnn(x, hidden.detach())'
        >>> detach_in("l_1, l_2 = crit(y, pred_1), crit(y, n_2(pred_1))", "pred_1", into=("n_2",))
        'l_1, l_2 = crit(y, pred_1), crit(y, n_2(pred_1.detach()))'
        >>> detach_in("l = crit(y, pred_1) + n_2(x).sum()", "pred_1", into=("n_2",)) is None
        True
    """
    body, comment = split_comment(line)
    eq = _assignment(body)
    start = eq + 1 if eq is not None else 0
    uses = list(re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w(])").finditer(body, start))
    spans = _call_spans(body, into) if into else []
    if spans:  # the line calls a model it must be cut off from: detach the use that goes in there
        uses = [m for m in uses if any(a <= m.start() < b for a, b in spans)]
    if not uses:
        return None
    m = uses[0]
    return body[: m.end()] + ".detach()" + body[m.end() :] + comment


def _call_spans(body: str, callees: tuple[str, ...]) -> list[tuple[int, int]]:
    """The argument spans ``(start, end)`` of every call of one of ``callees`` in ``body`` (``n_2(...)``)."""
    spans: list[tuple[int, int]] = []
    # self.head(...) and model.head(...) call the model named head too.
    pattern = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?:" + "|".join(re.escape(c) for c in callees) + r")\s*\(")
    for m in pattern.finditer(body):
        depth, i = 1, m.end()
        while i < len(body) and depth:
            depth += {"(": 1, ")": -1}.get(body[i], 0)
            i += 1
        spans.append((m.end(), i))
    return spans


def _assignment(body: str) -> int | None:
    """The index of the ``=`` of a plain assignment in ``body``, if it is one."""
    depth = 0
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "=" and depth == 0:
            before, after = body[i - 1 : i], body[i + 1 : i + 2]
            if before not in "=!<>+-*/%&|^@" and after != "=":
                return i
    return None


def split_comment(code: str) -> tuple[str, str]:
    m = re.search(r"\s+#.*$", code)
    return (code[: m.start()], code[m.start() :]) if m else (code.rstrip(), "")


def with_keyword(code: str, method: str, keyword: str) -> str | None:
    """``code`` with ``keyword`` added to its ``X.method(...)`` call: ``loss.backward()`` -> ``loss.backward(k=v)``."""
    body = code.strip()
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
    ]
    call = calls[0] if len(calls) == 1 else None
    if call is None or call.end_lineno != 1 or call.end_col_offset is None:
        return None
    name = keyword.split("=", 1)[0]
    if any(k.arg == name for k in call.keywords):
        return None
    end = call.end_col_offset - 1  # the closing parenthesis
    sep = ", " if call.args or call.keywords else ""
    return body[:end] + sep + keyword + body[end:]


def inputs_keyword(models: tuple[str, ...]) -> str | None:
    if not models:
        return None
    if len(models) == 1:
        return f"inputs=list({models[0]}.parameters())"
    return f"inputs=[p for m in ({', '.join(models)},) for p in m.parameters()]"


def replace_reads(line: str, name: str, new: str) -> str | None:
    """``line`` with each read of ``name`` right of its ``=`` replaced by ``new`` (None if there is none)."""
    body, comment = split_comment(line)
    eq = _assignment(body)
    if eq is None:
        m = re.search(r"[-+*/]=", body)
        eq = m.end() - 1 if m else None
    if eq is None:
        return None
    rhs, count = re.subn(rf"(?<![\w.]){re.escape(name)}(?![\w(])", new, body[eq + 1 :])
    return body[: eq + 1] + rhs + comment if count else None


def detached_value(line: str) -> str | None:
    """``x.attr = expr`` as ``x.attr = expr.detach()`` (``(expr).detach()`` when ``expr`` is not a primary)."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    st = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or isinstance(st.targets[0], (ast.Tuple, ast.List)):
        return None  # a tuple target: its value is the tuple, not the state (detached_after)
    value = ast.get_source_segment(line, st.value) or ast.unparse(st.value)
    target = ast.get_source_segment(line, st.targets[0]) or ast.unparse(st.targets[0])
    primary = isinstance(st.value, (ast.Call, ast.Subscript, ast.Attribute, ast.Name))
    return f"{target} = {value if primary else f'({value})'}.detach()"


def detach_reads(line: str, name: str) -> str | None:
    """``line`` with every read of ``name`` that is not already ``name.detach()`` detached (None if none).

    Example::

        >>> detach_reads("gp = penalty(critic, real, fake) + fake.detach().sum()", "fake")
        'gp = penalty(critic, real, fake.detach()) + fake.detach().sum()'
    """
    body, comment = split_comment(line)
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    detached = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr == "detach" and isinstance(n.value, ast.Name)
    }
    ends = sorted(
        n.end_col_offset
        for n in ast.walk(tree)
        if isinstance(n, ast.Name)
        and n.id == name
        and isinstance(n.ctx, ast.Load)
        and id(n) not in detached
        and n.end_col_offset is not None
    )
    if not ends:
        return None
    for end in reversed(ends):
        body = body[:end] + ".detach()" + body[end:]
    return body + comment


_SIGNS = {"sub_": "-", "add_": "+", "mul_": "*", "div_": "/"}

_AUG = {ast.Sub: "-", ast.Add: "+", ast.Mult: "*", ast.Div: "/"}


def out_of_place_update(st: ast.stmt, target: ast.Tuple) -> str | None:
    """``w - lr * g`` from ``w.sub_(lr * g)`` or ``w -= lr * g`` (``w`` the first loop variable)."""
    first = target.elts[0]
    if not isinstance(first, ast.Name):
        return None
    name = first.id
    if (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and isinstance(st.value.func.value, ast.Name)
        and st.value.func.value.id == name
        and st.value.func.attr in _SIGNS
        and len(st.value.args) == 1
        and not st.value.keywords
    ):
        return f"{name} {_SIGNS[st.value.func.attr]} ({ast.unparse(st.value.args[0])})"
    if (
        isinstance(st, ast.AugAssign)
        and isinstance(st.target, ast.Name)
        and st.target.id == name
        and type(st.op) in _AUG
    ):
        return f"{name} {_AUG[type(st.op)]} ({ast.unparse(st.value)})"
    return None
