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
import io
import re
import tokenize
from collections.abc import Collection

__all__ = [
    "AUGMENTED",
    "rewrite_in_place",
    "detach_in",
    "with_keyword",
    "call_with_keyword",
    "op_display",
    "by_index",
]


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


OP_NAMES = {k: f"{v}=" for k, v in AUGMENTED.items()}


def by_index(loop: ast.For, name: str, used: set[str]) -> tuple[str, str, str] | None:
    r"""A ``for`` loop that iterates over a tensor (``for b in boxes``, ``for b, s in zip(boxes, sizes)``) to write
    into each ``name``, rewritten to take each as an index of it: (the new header, the statement that binds
    ``name`` at the top of the body, the tensor's name). Iterating unbinds the tensor into views that cannot be
    written in place; ``boxes[i]`` is a view of one row that can, and the write reaches ``boxes`` as the loop
    means. ``used``: the names the function already binds (the index takes another). None for another shape.

    Example::

        >>> tree = ast.parse("for b, (w, h) in zip(boxes, sizes):\n    b.clamp_(0, w)")
        >>> by_index(tree.body[0], "b", {"b", "w", "h", "boxes", "sizes"})
        ('for i, (b, (w, h)) in enumerate(zip(boxes, sizes)):', 'b = boxes[i]', 'boxes')
        >>> by_index(ast.parse("for s in scores.unbind(1):\n    s[:, 0] = 0").body[0], "s", {"s", "scores"})
        ('for i, s in enumerate(scores.unbind(1)):', 's = scores.select(1, i)', 'scores')
        >>> by_index(ast.parse("for n, row in enumerate(X):\n    row[n:] = 0").body[0], "row", {"n", "row", "X"})
        ('for n, row in enumerate(X):', 'row = X[n]', 'X')
    """
    target, it = loop.target, loop.iter
    select: str | None = None  # ``for s in scores.unbind(1)``: each taken as ``scores.select(1, i)``
    if (  # ``for k, row in enumerate(X)``: already counted; each taken as ``X[k]``
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "enumerate"
        and len(it.args) == 1
        and not it.keywords
        and isinstance(it.args[0], ast.Name)
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[0], ast.Name)
        and isinstance(target.elts[1], ast.Name)
        and target.elts[1].id == name
    ):
        counted = ast.unparse(ast.fix_missing_locations(ast.For(target, it, [ast.Pass()], []))).splitlines()[0]
        return counted, f"{name} = {it.args[0].id}[{target.elts[0].id}]", it.args[0].id
    if isinstance(it, ast.Name) and isinstance(target, ast.Name) and target.id == name:
        tensor = it.id
    elif (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr == "unbind"
        and isinstance(it.func.value, (ast.Name, ast.Attribute))
        and isinstance(target, ast.Name)
        and target.id == name
        and len(it.args) + len(it.keywords) <= 1
        and all(k.arg == "dim" for k in it.keywords)
    ):
        tensor = ast.unparse(it.func.value)
        dims = [*it.args, *(k.value for k in it.keywords)]
        select = ast.unparse(dims[0]) if dims else "0"
    elif (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "zip"
        and it.args
        and isinstance(it.args[0], ast.Name)
        and isinstance(target, ast.Tuple)
        and target.elts
        and isinstance(target.elts[0], ast.Name)
        and target.elts[0].id == name
    ):
        tensor = it.args[0].id
    else:
        return None
    index = next((n for n in ("i", "k", "idx", "_i", "_row") if n not in used), None)
    if index is None:
        return None
    header = ast.For(
        target=ast.Tuple([ast.Name(index, ast.Store()), target], ast.Store()),
        iter=ast.Call(ast.Name("enumerate", ast.Load()), [it], []),
        body=[ast.Pass()],
        orelse=[],
    )
    first = ast.unparse(ast.fix_missing_locations(header)).splitlines()[0]
    if select is not None:
        return first, f"{name} = {tensor}.select({select}, {index})", tensor
    return first, f"{name} = {tensor}[{index}]", tensor


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


_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}


def _has_method(name: str) -> bool:
    import torch

    return hasattr(torch.Tensor, name)


def _has_function(module: str, name: str) -> bool:
    import torch
    import torch.nn.functional as F

    return hasattr({"torch": torch, "F": F, "functional": F}.get(module.rsplit(".", 1)[-1], torch), name)


def _copy_name(target: ast.expr) -> str:
    return f"{ast.unparse(target).replace('.', '_').replace('[', '_').replace(']', '')}_copy"


#: Tensor methods whose result shares the receiver's memory: a write into it writes the receiver.
_VIEWS = frozenset(
    [
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "flatten",
        "unflatten",
        "unsqueeze",
        "squeeze",
        "transpose",
        "t",
        "permute",
        "narrow",
        "select",
        "diagonal",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "unfold",
        "expand",
        "expand_as",
    ]
)


def _view_base(expr: ast.expr) -> ast.expr | None:
    """The name or attribute a part of a tensor is taken from (``p[i]``, ``p.view(-1, d)[0]``: ``p``), or None."""
    while True:
        if isinstance(expr, (ast.Name, ast.Attribute)) and not (
            isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Call)
        ):
            return expr
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _VIEWS:
            expr = expr.func.value
        else:
            return None


def _rebased(expr: ast.expr, base: ast.expr) -> ast.expr:
    """``expr`` (a part of a tensor, see :func:`_view_base`) taken from ``base`` instead."""
    if isinstance(expr, ast.Subscript):
        return ast.Subscript(_rebased(expr.value, base), expr.slice, ast.Load())
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return ast.Call(
            ast.Attribute(_rebased(expr.func.value, base), expr.func.attr, ast.Load()), expr.args, expr.keywords
        )
    return base


def _into_copy(base: ast.expr, write: ast.stmt, items: Collection[str] = ()) -> str | None:
    """``write`` (a write to ``base``) made to a copy of ``base``, then ``base`` rebound to the copy; None when
    ``base`` is an item of a container (``encoder_out[0]``) that is not in ``items``: rebinding it fails on a
    tuple, which the line does not tell from a list. ``items``: the names of containers the code assigns items of
    (``h[layer], c[layer] = cell(...)``: a list), whose item the copy may be bound to."""
    if isinstance(base, ast.Subscript) and not (
        isinstance(base.value, ast.Name)
        and base.value.id in items
        and isinstance(base.slice, (ast.Name, ast.Constant, ast.Attribute))
    ):
        return None
    copy = _copy_name(base)
    b = ast.unparse(base)

    class Rename(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if isinstance(node.ctx, ast.Store) and ast.unparse(node.value) == b:
                return ast.Subscript(ast.Name(copy, ast.Load()), node.slice, ast.Store())
            return self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> ast.AST:  # the write itself: w.fill_(...) -> w_copy.fill_(...)
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr.endswith("_") and ast.unparse(func.value) == b:
                renamed = ast.Attribute(ast.Name(copy, ast.Load()), func.attr, ast.Load())
                return ast.Call(renamed, node.args, node.keywords)
            if (  # into a part of it: p[i].log_() -> p_copy[i].log_(), p.view(-1, d).renorm_(...) -> p_copy.view(...)
                isinstance(func, ast.Attribute)
                and func.attr.endswith("_")
                and func.value is not (found := _view_base(func.value))
                and found is not None
                and ast.unparse(found) == b
            ):
                part = _rebased(func.value, ast.Name(copy, ast.Load()))
                return ast.Call(ast.Attribute(part, func.attr, ast.Load()), node.args, node.keywords)
            return self.generic_visit(node)

    written = Rename().visit(ast.parse(ast.unparse(write)).body[0])
    return f"{copy} = {b}.clone()\n{ast.unparse(written)}\n{b} = {copy}"


def rewrite_in_place(code: str, op: str, items: Collection[str] = (), item: bool = False) -> str | None:
    r"""The out-of-place form of one line that ran the in-place ``op``, or None if gradlab cannot write it.

    Rewritten on the statement's tree (NOTE [Exact rewrites]): precedence and every
    argument kept, only methods and functions the installed torch has; where torch
    has no out-of-place twin (``fill_``, ``copy_``, ``zero_``), the write goes to a
    copy and the name is rebound to it. Several lines are joined by ``"\n"``.

    Example::

        >>> rewrite_in_place("y.mul_(3)", "mul_")
        'y = y.mul(3)'
        >>> rewrite_in_place("h += x  # step", "__iadd__")
        'h = h + x  # step'
        >>> rewrite_in_place("x /= a + b", "__itruediv__")
        'x = x / (a + b)'
        >>> rewrite_in_place("act = nn.ReLU(inplace=True)", "relu_")
        'act = nn.ReLU()'
        >>> rewrite_in_place("    return activation(x, inplace=inplace)", "relu_")
        '    return activation(x)'
        >>> rewrite_in_place("w.fill_(0.5)", "fill_")
        'w_copy = w.clone()\nw_copy.fill_(0.5)\nw = w_copy'
        >>> rewrite_in_place("p.view(-1, d).renorm_(2, 0, 1.0)", "renorm_")
        'p_copy = p.clone()\np_copy.view(-1, d).renorm_(2, 0, 1.0)\np = p_copy'
        >>> rewrite_in_place("std = logvar.mul_(0.5).exp_()", "mul_")
        'std = logvar.mul(0.5).exp()'
        >>> rewrite_in_place("self.t.mul_(1 - eps).add_(eps / n)", "mul_")
        'self.t = self.t.mul(1 - eps).add(eps / n)'
        >>> rewrite_in_place("h = F.relu_(h)", "relu_")
        'h = F.relu(h)'
        >>> rewrite_in_place("h[k][done] = 0.0", "__setitem__", items={"h"})
        'h_k_copy = h[k].clone()\nh_k_copy[done] = 0.0\nh[k] = h_k_copy'

    ``items``: the names of containers the code assigns items of (a list), whose items a write may be rebound in.
    ``item``: the write's tensor was no view, so ``c[k] += v`` wrote into an item of a container (a list, a dict),
    which is rebound: ``c[k] = c[k] + v`` (NOTE [An item rebound, not written]).

        >>> rewrite_in_place("outs[i + 1] += down(outs[i])", "__iadd__", item=True)
        'outs[i + 1] = outs[i + 1] + down(outs[i])'
    """
    parsed = _one_statement(code)
    if parsed is None:
        return None
    body, comment, indent, st = parsed
    new = _out_of_place(st, op, items, item)
    if new is None:
        return None
    lines = _spelled(body, new).split("\n")
    lines[1 if len(lines) == 3 else 0] += comment  # the comment stays with the write
    return "\n".join(indent + line for line in lines)


def _one_statement(line: str) -> tuple[str, str, str, ast.stmt] | None:
    """``line`` as (code, comment, indentation, its one statement), or None if it is not one statement."""
    body, comment = split_comment(line)
    indent = body[: len(body) - len(body.lstrip())]
    try:
        tree = ast.parse(body.strip())
    except SyntaxError:
        return None
    return (body, comment, indent, tree.body[0]) if len(tree.body) == 1 else None


def _spelled(original: str, new: str) -> str:
    """``new`` (code ast.unparse wrote) with the numbers spelled as ``original`` spells them (``1e-4``, not ``0.0001``).

    Example::

        >>> _spelled("probs.clamp_(min=1e-4)", "probs = probs.clamp(min=0.0001)")
        'probs = probs.clamp(min=1e-4)'
    """
    try:
        spelling: dict[str, str] = {}
        for tok in tokenize.generate_tokens(io.StringIO(original).readline):
            if tok.type == tokenize.NUMBER:
                shown = ast.unparse(ast.parse(tok.string, mode="eval").body)
                if shown != tok.string:
                    spelling.setdefault(shown, tok.string)
        return _respelled(new, spelling) if spelling else new
    except (tokenize.TokenError, SyntaxError, ValueError):
        return new


def _respelled(new: str, spelling: dict[str, str]) -> str:
    """``new`` with each NUMBER token found in ``spelling`` replaced in place (the rest of the text untouched)."""
    lines = new.split("\n")
    edits: list[tuple[int, int, int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(new).readline):
        if tok.type == tokenize.NUMBER and tok.string in spelling and tok.start[0] == tok.end[0]:
            edits.append((tok.start[0] - 1, tok.start[1], tok.end[1], spelling[tok.string]))
    for row, start, end, text in reversed(edits):
        lines[row] = lines[row][:start] + text + lines[row][end:]
    return "\n".join(lines)


# NOTE [Exact rewrites]
# An in-place write and its out-of-place form compute the same values; what differs is
# who sees them: the out-of-place form binds the result to the name, so the tensor
# autograd saved keeps its value. That is exact only if the rewrite keeps the
# arithmetic (x /= a + b is x = x / (a + b): the tree is rewritten, never the text) and
# calls what torch has (Tensor.fill does not exist: fill_ goes to a copy). Reads of
# the old tensor through another name (a view, an alias) still see the old values; the
# forward-preserved oracle of gradlab fix catches a rewrite where that matters.
# NOTE [An item rebound, not written]
# c[k] += v runs c[k].__iadd__(v), then c[k] = the result. When c is a tensor, c[k] is a view and the write goes
# into c: the out-of-place form writes into a copy of c. When the written tensor was no view (the record says so),
# c[k] was the tensor itself, an item of a list or a dict (a tuple would have raised at the item assignment), and
# c[k] = c[k] + v computes the same values into a new tensor, which the container then holds: an exact rewrite
# (the feature pyramid's bottom-up path, inter_outs[i + 1] += down(inter_outs[i])).
def _out_of_place(st: ast.stmt, op: str, items: Collection[str] = (), item: bool = False) -> str | None:
    if isinstance(st, ast.AugAssign):
        symbol = _BINOPS.get(type(st.op))
        if symbol is None:
            return None
        target = st.target
        load = ast.parse(ast.unparse(target), mode="eval").body
        value = ast.BinOp(load, st.op, st.value)
        if isinstance(target, ast.Subscript) and not item:  # x[i] += v writes into x: into a copy of x
            assign = ast.Assign([target], value)
            return _into_copy(target.value, ast.fix_missing_locations(assign), items)
        return ast.unparse(ast.Assign([target], value, lineno=1))
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript):
        if op != "__setitem__":
            return None
        return _into_copy(st.targets[0].value, st, items)
    returned = st.value if isinstance(st, ast.Return) else None
    if isinstance(returned, ast.Call) and any(k.arg == "inplace" for k in returned.keywords):
        # return activation(x, inplace=inplace): the flag goes, whatever its value (a return of any other in-place
        # call is written by twin_in_expression, which keeps the return)
        keywords = [k for k in returned.keywords if k.arg != "inplace"]
        return ast.unparse(ast.Return(ast.Call(returned.func, returned.args, keywords)))
    call = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
    if not isinstance(call, ast.Call):
        return None
    targets = st.targets if isinstance(st, ast.Assign) else []
    if any(k.arg == "inplace" for k in call.keywords):
        keywords = [k for k in call.keywords if k.arg != "inplace"]
        rewritten = ast.Call(call.func, call.args, keywords)
        if targets:
            return ast.unparse(ast.Assign(targets, rewritten, lineno=1))
        if call.args and isinstance(call.args[0], (ast.Name, ast.Attribute)):
            return ast.unparse(ast.Assign([call.args[0]], rewritten, lineno=1))  # F.relu(h, inplace=True) alone
        return None
    func = call.func
    if isinstance(func, ast.Attribute):
        chained = _chain_out_of_place(call, op)  # std = logvar.mul_(0.5).exp_(): the chain writes logvar
        if chained is not None and targets:
            return ast.unparse(ast.Assign(targets, chained, lineno=1))
        if chained is not None:  # t.mul_(a).add_(b) alone, for its write to t: t rebound to the chain's value
            return ast.unparse(ast.Assign([_chain_root(call)], chained, lineno=1))
    if not (isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.endswith("__")):
        return None
    twin = func.attr[:-1]
    module = ast.unparse(func.value)
    if module.split(".")[0] in ("torch", "F", "nn") and call.args:  # torch.relu_(x), F.relu_(x)
        if not _has_function(module, twin) or not isinstance(call.args[0], (ast.Name, ast.Attribute)):
            return None
        rewritten = ast.Call(ast.Attribute(func.value, twin, ast.Load()), call.args, call.keywords)
        written = call.args[0]
        bound = [x for x in targets if ast.unparse(x) != ast.unparse(written)]  # h = F.relu_(h): h = F.relu(h)
        return ast.unparse(ast.Assign([*bound, written], rewritten, lineno=1))
    receiver = func.value
    if isinstance(receiver, ast.Call) and targets and _has_method(twin):
        # a temporary (self.fc(x).relu_()): nothing else holds it, so its out-of-place twin is exact
        return ast.unparse(
            ast.Assign(targets, ast.Call(ast.Attribute(receiver, twin, ast.Load()), call.args, call.keywords), lineno=1)
        )
    base = _view_base(receiver)
    if base is not None and base is not receiver:
        return _into_copy(base, st)  # p[i].log_(), p.view(-1, d).renorm_(...) write into p: into a copy of p
    if not isinstance(receiver, (ast.Name, ast.Attribute)):
        return None
    if not _has_method(twin):  # no out-of-place twin in this torch: write into a copy
        return _into_copy(receiver, ast.Expr(call))
    rewritten = ast.Call(ast.Attribute(receiver, twin, ast.Load()), call.args, call.keywords)
    bound = [x for x in targets if ast.unparse(x) != ast.unparse(receiver)]  # a = a.squeeze_(0): a = a.squeeze(0)
    return ast.unparse(ast.Assign([*bound, receiver], rewritten, lineno=1))


def _chain_root(call: ast.Call) -> ast.expr:
    """The receiver a method chain starts at (``logvar`` in ``logvar.mul_(0.5).exp_()``)."""
    node: ast.expr = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return node


def _chain_out_of_place(call: ast.Call, op: str) -> ast.Call | None:
    """A method chain that writes its receiver with ``op``, its writing links made out of place.

    ``logvar.mul_(0.5).exp_()`` becomes ``logvar.mul(0.5).exp()``: an in-place method
    returns its receiver, so every link writes it, and the chain's value is the written
    tensor, bound to another name: the receiver keeps its values (the in-place chain
    would have overwritten it too). None when a link is not in place (``x.add_(1).sum()``:
    later reads of ``x`` need the write), ``op`` is not a link, one has no out-of-place
    twin, or the chain does not start at a name.
    """
    links: list[tuple[ast.Call, str]] = []
    node: ast.expr = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        links.append((node, node.func.attr))
        node = node.func.value
    if len(links) < 2 or not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    writing = 0  # how many links, from the innermost, write the receiver
    for _link, name in reversed(links):
        if not (name.endswith("_") and not name.endswith("__")):
            break
        writing += 1
    names = [name for _link, name in links]
    if writing < len(names) or op not in names or not all(_has_method(name[:-1]) for name in names):
        return None
    rebuilt: ast.expr = node
    for link, name in reversed(links):
        rebuilt = ast.Call(ast.Attribute(rebuilt, name[:-1], ast.Load()), link.args, link.keywords)
    return rebuilt  # type: ignore[return-value]


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


def call_with_keyword(line: str, call: ast.Call, name: str, value: str) -> str | None:
    r"""``line`` with ``name=value`` in ``call``: the keyword's value replaced when it is there, else the keyword added
    before the closing parenthesis. ``call`` is a node parsed from the file whose line ``line`` is (its columns are
    the line's, indentation included); None when the call spans several lines.

    Example::

        >>> line = "    g = torch.autograd.grad(y, x, create_graph=False)"
        >>> call = ast.parse("if 1:\n" + line).body[0].body[0].value
        >>> call_with_keyword(line, call, "create_graph", "True")
        '    g = torch.autograd.grad(y, x, create_graph=True)'
        >>> call_with_keyword(line, call, "retain_graph", "True")
        '    g = torch.autograd.grad(y, x, create_graph=False, retain_graph=True)'
    """
    if call.end_lineno != call.lineno or call.end_col_offset is None:
        return None
    flag = next((k for k in call.keywords if k.arg == name), None)
    if flag is not None:
        v = flag.value
        if v.end_col_offset is None or v.lineno != call.lineno:
            return None
        return line[: v.col_offset] + value + line[v.end_col_offset :]
    end = call.end_col_offset - 1  # the closing parenthesis
    sep = ", " if call.args or call.keywords else ""
    return line[:end] + sep + f"{name}={value}" + line[end:]


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


def inputs_keyword(models: tuple[str, ...], tensors: frozenset[str] | set[str] = frozenset()) -> str | None:
    """``inputs=`` for a backward into ``models``' parameters; the names in ``tensors`` are tensors the loop
    optimizes themselves (an image, an adversarial offset), listed as they are.

    Example::

        >>> inputs_keyword(("actor",))
        'inputs=list(actor.parameters())'
        >>> inputs_keyword(("delta",), {"delta"})
        'inputs=[delta]'
        >>> inputs_keyword(("net", "delta"), {"delta"})
        'inputs=[*net.parameters(), delta]'
    """
    if not models:
        return None
    if any(m in tensors for m in models):
        return f"inputs=[{', '.join(m if m in tensors else f'*{m}.parameters()' for m in models)}]"
    if len(models) == 1:
        return f"inputs=list({models[0]}.parameters())"
    return f"inputs=[p for m in ({', '.join(models)},) for p in m.parameters()]"


def optimizers_inputs(optimizers: tuple[str, ...]) -> str | None:
    """``inputs=`` for a backward into the parameters ``optimizers`` hold.

    Example::

        >>> optimizers_inputs(("e_optim",))
        'inputs=[p for g in e_optim.param_groups for p in g["params"]]'
        >>> optimizers_inputs(("opt_a", "opt_b"))
        'inputs=[p for o in (opt_a, opt_b) for g in o.param_groups for p in g["params"]]'
    """
    if not optimizers:
        return None
    if len(optimizers) == 1:
        return f'inputs=[p for g in {optimizers[0]}.param_groups for p in g["params"]]'
    return f'inputs=[p for o in ({", ".join(optimizers)}) for g in o.param_groups for p in g["params"]]'


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
    """``x.attr = expr`` as ``x.attr = expr.detach()`` (``(expr).detach()`` when ``expr`` is not a primary), and
    ``return expr`` as ``return expr.detach()``; None for a tuple's value."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    st = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(st, ast.Return) and st.value is not None and not isinstance(st.value, (ast.Tuple, ast.List)):
        value = ast.get_source_segment(line, st.value) or ast.unparse(st.value)
        primary = isinstance(st.value, (ast.Call, ast.Subscript, ast.Attribute, ast.Name))
        return f"return {value if primary else f'({value})'}.detach()"
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


def twin_in_expression(line: str, op: str) -> str | None:
    """``line`` with its in-place call ``x.op_(...)`` made ``x.op(...)`` where the call's result is used as a value
    (``y = a / w.exp_()``): None when the statement is the write itself (``w.exp_()``, ``t.mul_(a).add_(b)``),
    when the call is not there once, or when torch has no out-of-place twin."""
    if not op.endswith("_") or op.endswith("__") or not _has_method(op[:-1]):
        return None
    parsed = _one_statement(line)
    if parsed is None:
        return None
    body, comment, indent, st = parsed
    top = st.value if isinstance(st, ast.Expr) else None
    if isinstance(top, ast.Call) and isinstance(top.func, ast.Attribute) and top.func.attr.endswith("_"):
        return None  # a statement that writes: an update, not a value
    calls = [
        n
        for n in ast.walk(st)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == op and n is not top
    ]
    if len(calls) != 1 or calls[0].func.end_col_offset is None:
        return None
    stripped = body.strip()
    end = calls[0].func.end_col_offset
    if stripped[end - len(op) : end] != op:
        return None
    return indent + stripped[: end - 1] + stripped[end:] + comment
