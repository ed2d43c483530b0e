"""Mutation operators: each breaks a correct training script the way people break theirs.

An operator reads the script's ``ast`` to find its sites, on any script (by the
shape of the code, never by names written for one script), and makes one mutant
per site by editing the source text at that site only: every other byte of the
script stays as it was (the mutant differs from the original only where the
operator acts; ``Mutant.lines`` says which lines of the original it touched).
Sites are numbered in source order, so the mutants are deterministic.

A mutant is kept by the benchmark only if it fails with an autograd error (the
oracle's ``ERROR_KINDS``); many sites give a mutant that runs clean (the bug is
silent) or fails otherwise, and are counted as discarded.

Example::

    >>> src = "def f(x):\\n    for i in range(3):\\n        x = x * 2\\n    return x\\n"
    >>> [m.source.splitlines()[2] for m in OPERATORS["inplace_augassign"].mutate(src)]
    ['        x *= 2']
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Mutation", "Mutant", "Operator", "OPERATORS", "mutants_of"]


@dataclass(frozen=True)
class Mutation:
    """One site of one operator: the mutated source, the original lines it touched, and what it did."""

    source: str
    lines: tuple[int, int]  # first and last line of the original that the edit replaces or sits before
    description: str


@dataclass(frozen=True)
class Mutant:
    """A mutation of one script: ``family`` (the script's stem), ``operator``, site ``index`` in source order."""

    family: str
    operator: str
    index: int
    source: str
    lines: tuple[int, int]
    description: str

    @property
    def name(self) -> str:
        return f"{self.family}__{self.operator}__{self.index}"


@dataclass(frozen=True)
class Operator:
    """A mutation operator: its name, what it does (one sentence), and the function that finds its sites."""

    name: str
    doc: str
    find: Callable[[_Source], Iterator[Mutation]]

    def mutate(self, source: str) -> list[Mutation]:
        """Every mutation of ``source`` this operator makes, in source order (duplicates dropped)."""
        out: list[Mutation] = []
        seen = {source}
        for m in self.find(_Source(source)):
            if m.source not in seen:
                seen.add(m.source)
                out.append(m)
        return sorted(out, key=lambda m: m.lines)


# ---------------------------------------------------------------------------------------------
# Source text and positions


class _Source:
    """The script's text, its tree with parent links, and edits that keep every other byte."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = ast.parse(text)
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    # positions
    def offset(self, lineno: int, col: int) -> int:
        """The index into ``text`` of an ast position (``col`` counts UTF-8 bytes)."""
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode()[:col].decode())

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.text[a:b]

    def indent(self, lineno: int) -> str:
        line = self.lines[lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    # edits
    def replace(self, node: ast.AST, new: str, description: str) -> Mutation:
        a, b = self.span(node)
        return Mutation(self.text[:a] + new + self.text[b:], (node.lineno, node.end_lineno), description)  # type: ignore[attr-defined]

    def whole_lines(self, stmt: ast.stmt) -> bool:
        """The statement owns its lines: only indentation before it, only a comment or nothing after it."""
        before = self.lines[stmt.lineno - 1][: len(self.indent(stmt.lineno))]
        start = self.offset(stmt.lineno, stmt.col_offset)
        if self.text[self.starts[stmt.lineno - 1] : start] != before:
            return False
        end = self.offset(stmt.end_lineno, stmt.end_col_offset)  # type: ignore[arg-type]
        rest = self.text[end : self.starts[stmt.end_lineno]].strip()  # type: ignore[index]
        return rest == "" or rest.startswith("#")

    def stmt_text(self, stmt: ast.stmt) -> str:
        """The statement's lines, as in the file (with their indentation and newlines)."""
        return "".join(self.lines[stmt.lineno - 1 : stmt.end_lineno])

    def with_lines(self, first: int, last: int, new: str) -> str:
        """The text with lines ``first``..``last`` replaced by ``new`` (``last = first - 1`` inserts before)."""
        return self.text[: self.starts[first - 1]] + new + self.text[self.starts[last] :]

    # the tree
    def enclosing(self, node: ast.AST, kinds: tuple[type, ...]) -> ast.AST | None:
        p = self.parent.get(node)
        while p is not None and not isinstance(p, kinds):
            p = self.parent.get(p)
        return p

    def in_loop(self, node: ast.AST) -> ast.For | ast.While | None:
        """The innermost loop around ``node`` in the same function (None if none)."""
        p = self.parent.get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if isinstance(p, (ast.For, ast.While)):
                return p
            p = self.parent.get(p)
        return None

    def blocks(self) -> Iterator[list[ast.stmt]]:
        """Every statement list of the tree (bodies, else branches, handlers)."""
        for node in ast.walk(self.tree):
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    yield block


def _dotted(node: ast.AST) -> str:
    """``torch.nn.functional.relu`` for an attribute chain of names, else ''."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
        return ".".join(parts)
    return ""


def _is_call_of(node: ast.AST, attr: str) -> bool:
    """``X.attr(...)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr


def _backward_call(stmt: ast.stmt) -> ast.Call | None:
    """The call of a statement ``X.backward(...)`` or ``torch.autograd.backward(...)``, else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if _is_call_of(call, "backward"):
            return call
    return None


def _atomic(node: ast.expr) -> bool:
    """An expression that can take ``.method()`` without parentheses."""
    return isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _names_bound(nodes: list[ast.stmt] | ast.AST) -> set[str]:
    out: set[str] = set()
    for root in nodes if isinstance(nodes, list) else [nodes]:
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
    return out


def _comprehension_vars(node: ast.AST) -> set[str]:
    return {
        n.id
        for c in ast.walk(node)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }


# ---------------------------------------------------------------------------------------------
# The operators

_AUG_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _inplace_augassign(s: _Source) -> Iterator[Mutation]:
    """``x = x * a`` -> ``x *= a`` (also ``+``, ``-``, ``/``; the target may be an attribute)."""
    for node in ast.walk(s.tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp)):
            continue
        target, value = node.targets[0], node.value
        op = _AUG_OPS.get(type(value.op))
        if op is None or not isinstance(target, (ast.Name, ast.Attribute)):
            continue
        if ast.dump(target, include_attributes=False).replace("Store", "Load") != ast.dump(
            value.left, include_attributes=False
        ):
            continue
        new = f"{s.segment(target)} {op}= {s.segment(value.right)}"
        yield s.replace(node, new, f"line {node.lineno}: {s.segment(node)} -> {new}")


# functional activations with an ``inplace`` argument, and their module forms
_INPLACE_FUNCTIONS = {"relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "hardtanh", "dropout", "mish"}
_INPLACE_MODULES = {"ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "SiLU", "Hardtanh", "Dropout", "Mish"}
_FUNCTIONAL = {"F", "functional", "nn.functional", "torch.nn.functional"}


def _inplace_activation(s: _Source) -> Iterator[Mutation]:
    """``F.relu(x)`` -> ``F.relu(x, inplace=True)``; ``nn.ReLU()`` -> ``nn.ReLU(inplace=True)`` (and their kin)."""
    for node in ast.walk(s.tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner, name = _dotted(node.func.value), node.func.attr
        functional = owner in _FUNCTIONAL and name in _INPLACE_FUNCTIONS
        module = owner in ("nn", "torch.nn") and name in _INPLACE_MODULES
        if not (functional or module) or any(k.arg == "inplace" for k in node.keywords):
            continue
        text = s.segment(node)
        inner = text[:-1].rstrip()
        sep = "" if inner.endswith(("(", ",")) else ", "
        new = f"{inner}{sep}inplace=True)"
        yield s.replace(node, new, f"line {node.lineno}: {text} -> {new}")


# out-of-place ops with an in-place twin: torch.f(x, ...) and x.f(...) -> x.f_(...)
_INPLACE_TWINS = {
    "sigmoid",
    "tanh",
    "exp",
    "relu",
    "sqrt",
    "abs",
    "neg",
    "log",
    "sin",
    "cos",
    "clamp",
    "mul",
    "add",
    "sub",
    "div",
    "pow",
    "masked_fill",
}


def _inplace_method(s: _Source) -> Iterator[Mutation]:
    """``torch.sigmoid(x)`` -> ``x.sigmoid_()``; ``x.exp()`` -> ``x.exp_()`` (ops with an in-place twin)."""
    for node in ast.walk(s.tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        if name not in _INPLACE_TWINS:
            continue
        text = s.segment(node)
        if _dotted(node.func.value) == "torch":
            if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
                continue
            first, rest = node.args[0], node.args[1:]
            receiver = s.segment(first) if _atomic(first) else f"({s.segment(first)})"
            args = [s.segment(a) for a in rest] + [s.segment(k) for k in node.keywords]
            new = f"{receiver}.{name}_({', '.join(args)})"
        elif _dotted(node.func.value) in ("math", "np", "numpy", "F", "nn", "torch.nn", "random"):
            continue
        else:
            a, b = s.span(node.func)
            new = text[: b - a] + "_" + text[b - a :]
        yield s.replace(node, new, f"line {node.lineno}: {text} -> {new}")


class _StripDetach(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _is_call_of(node, "detach") and not node.args and not node.keywords:
            assert isinstance(node.func, ast.Attribute)
            return node.func.value
        return node


def _state_detach(s: _Source, stmt: ast.stmt) -> bool:
    """A loop's ``h = h.detach()``, ``h, c = h.detach(), c.detach()``, ``s = tuple(x.detach() for x in s)``, ``h.detach_()``."""
    if s.in_loop(stmt) is None:
        return False
    if isinstance(stmt, ast.Expr) and _is_call_of(stmt.value, "detach_"):
        return True
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    if not any(_is_call_of(n, "detach") for n in ast.walk(stmt.value)):
        return False
    target = ast.unparse(stmt.targets[0])
    stripped = _StripDetach().visit(ast.parse(ast.unparse(stmt.value), mode="eval")).body
    if ast.unparse(stripped) == target:
        return True
    if isinstance(stripped, ast.Call) and _dotted(stripped.func) in ("tuple", "list") and len(stripped.args) == 1:
        stripped = stripped.args[0]
    if isinstance(stripped, (ast.GeneratorExp, ast.ListComp)) and len(stripped.generators) == 1:
        gen = stripped.generators[0]
        return ast.unparse(gen.target) == ast.unparse(stripped.elt) and ast.unparse(gen.iter) == target
    return False


def _drop_detach(s: _Source) -> Iterator[Mutation]:
    """``x.detach()`` -> ``x`` anywhere but a loop's state detach (``drop_state_detach`` does those)."""
    for node in ast.walk(s.tree):
        if not (isinstance(node, ast.Call) and _is_call_of(node, "detach") and not node.args and not node.keywords):
            continue
        stmt = s.enclosing(node, (ast.stmt,))
        if isinstance(stmt, ast.stmt) and _state_detach(s, stmt):
            continue
        assert isinstance(node.func, ast.Attribute)
        inner = node.func.value
        new = s.segment(inner) if _atomic(inner) else f"({s.segment(inner)})"
        yield s.replace(node, new, f"line {node.lineno}: {s.segment(node)} -> {new}")


def _drop_state_detach(s: _Source) -> Iterator[Mutation]:
    """Delete a loop's ``h = h.detach()`` (or ``h.detach_()``): the state keeps its graph across iterations."""
    for block in s.blocks():
        for stmt in block:
            if _state_detach(s, stmt) and s.whole_lines(stmt):
                new = "" if len(block) > 1 else f"{s.indent(stmt.lineno)}pass\n"
                yield Mutation(
                    s.with_lines(stmt.lineno, stmt.end_lineno, new),  # type: ignore[arg-type]
                    (stmt.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                    f"line {stmt.lineno}: {s.segment(stmt)} deleted",
                )


def _step_before_backward(s: _Source) -> Iterator[Mutation]:
    """Move ``X.step()`` to just before the ``backward()`` that precedes it in the same block."""
    for block in s.blocks():
        for i, stmt in enumerate(block):
            if not (
                isinstance(stmt, ast.Expr)
                and _is_call_of(stmt.value, "step")
                and not stmt.value.args  # type: ignore[attr-defined]
                and s.whole_lines(stmt)
            ):
                continue
            before = [j for j in range(i) if _backward_call(block[j]) is not None]
            if not before:
                continue
            back = block[before[-1]]
            if not s.whole_lines(back):
                continue
            moved = s.stmt_text(stmt)
            text = s.with_lines(stmt.lineno, stmt.end_lineno, "")  # type: ignore[arg-type]
            text = text[: s.starts[back.lineno - 1]] + moved + text[s.starts[back.lineno - 1] :]
            yield Mutation(
                text,
                (back.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                f"line {stmt.lineno}: {s.segment(stmt)} moved before line {back.lineno}: {s.segment(back)}",
            )


def _hoist_invariant(s: _Source) -> Iterator[Mutation]:
    """Move a loop body's assignment whose inputs the loop never changes (a forward, say) to before the loop."""
    for loop in ast.walk(s.tree):
        if not isinstance(loop, ast.For):
            continue
        changed = _names_bound(loop.target) | _names_bound(loop.body)
        changed |= {
            n.target.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
        }
        for stmt in loop.body:
            if not isinstance(stmt, ast.Assign) or not any(isinstance(n, ast.Call) for n in ast.walk(stmt.value)):
                continue
            reads = _names_read(stmt.value) - _comprehension_vars(stmt.value)
            if reads & changed or not s.whole_lines(stmt) or len(loop.body) < 2:
                continue
            moved = _reindent(s.stmt_text(stmt), s.indent(stmt.lineno), s.indent(loop.lineno))
            text = s.with_lines(stmt.lineno, stmt.end_lineno, "")  # type: ignore[arg-type]
            text = text[: s.starts[loop.lineno - 1]] + moved + text[s.starts[loop.lineno - 1] :]
            yield Mutation(
                text,
                (loop.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                f"line {stmt.lineno}: {s.segment(stmt)} moved before the loop of line {loop.lineno}",
            )


def _reindent(text: str, old: str, new: str) -> str:
    """Lines whose indentation starts with ``old`` get ``new`` in its place (a block moved in or out)."""
    return "".join(new + line[len(old) :] if line.startswith(old) else line for line in text.splitlines(keepends=True))


def _accumulate_loss(s: _Source) -> Iterator[Mutation]:
    """``loss.backward()`` in a loop -> a running total ``loss_total = loss_total + loss`` is backwarded instead."""
    for block in s.blocks():
        for stmt in block:
            call = _backward_call(stmt)
            if call is None or not isinstance(call.func.value, ast.Name) or not s.whole_lines(stmt):  # type: ignore[attr-defined]
                continue
            loop = s.in_loop(stmt)
            name = call.func.value.id  # type: ignore[attr-defined]
            if loop is None or name not in _names_bound(loop.body):
                continue
            total = f"{name}_total"
            ind = s.indent(stmt.lineno)
            args = s.segment(call)[len(s.segment(call.func)) :]  # "()" or "(retain_graph=True)"
            new = f"{ind}{total} = {total} + {name}\n{ind}{total}.backward{args}\n"
            text = s.with_lines(stmt.lineno, stmt.end_lineno, new)  # type: ignore[arg-type]
            head = s.starts[loop.lineno - 1]
            text = text[:head] + f"{s.indent(loop.lineno)}{total} = 0.0\n" + text[head:]
            yield Mutation(
                text,
                (loop.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                f"line {stmt.lineno}: {s.segment(stmt)} -> backward of a running total started before line {loop.lineno}",
            )


def _no_grad_wrap(s: _Source) -> Iterator[Mutation]:
    """Put an assignment that comes before a ``backward()`` in the same block under ``with torch.no_grad():``."""
    for block in s.blocks():
        backs = [i for i, st in enumerate(block) if _backward_call(st) is not None]
        if not backs:
            continue
        for stmt in block[: backs[-1]]:
            if not isinstance(stmt, (ast.Assign, ast.AugAssign)) or not s.whole_lines(stmt):
                continue
            if not any(isinstance(n, ast.Call) for n in ast.walk(stmt)):
                continue
            ind = s.indent(stmt.lineno)
            body = _reindent(s.stmt_text(stmt), ind, ind + "    ")
            new = f"{ind}with torch.no_grad():\n{body}"
            yield Mutation(
                s.with_lines(stmt.lineno, stmt.end_lineno, new),  # type: ignore[arg-type]
                (stmt.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                f"line {stmt.lineno}: {s.segment(stmt)} put under torch.no_grad()",
            )


def _double_backward(s: _Source) -> Iterator[Mutation]:
    """``loss.backward()`` written twice in a row (a print or a log between them in real code)."""
    for block in s.blocks():
        for stmt in block:
            if _backward_call(stmt) is not None and s.whole_lines(stmt):
                text = s.stmt_text(stmt)
                yield Mutation(
                    s.with_lines(stmt.lineno, stmt.end_lineno, text + text),  # type: ignore[arg-type]
                    (stmt.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                    f"line {stmt.lineno}: {s.segment(stmt)} twice",
                )


def _backwarded_names(s: _Source) -> Iterator[tuple[ast.stmt, str]]:
    """(statement, name) for ``name.backward(...)`` and ``... = torch.autograd.grad(name, ...)`` statements."""
    for block in s.blocks():
        for stmt in block:
            call = _backward_call(stmt)
            if call is not None and isinstance(call.func.value, ast.Name):  # type: ignore[attr-defined]
                yield stmt, call.func.value.id  # type: ignore[attr-defined]
                continue
            if isinstance(stmt, ast.Assign):
                for n in ast.walk(stmt.value):
                    grad = isinstance(n, ast.Call) and _dotted(n.func) in ("torch.autograd.grad", "autograd.grad")
                    if grad and n.args and isinstance(n.args[0], ast.Name):  # type: ignore[attr-defined]
                        yield stmt, n.args[0].id  # type: ignore[attr-defined]


def _item_rebuild(requires_grad: bool) -> Callable[[_Source], Iterator[Mutation]]:
    extra = ", requires_grad=True" if requires_grad else ""

    def find(s: _Source) -> Iterator[Mutation]:
        for stmt, name in _backwarded_names(s):
            if not s.whole_lines(stmt):
                continue
            line = f"{s.indent(stmt.lineno)}{name} = torch.tensor({name}.item(){extra})\n"
            yield Mutation(
                s.with_lines(stmt.lineno, stmt.lineno - 1, line),
                (stmt.lineno, stmt.lineno),
                f"line {stmt.lineno}: {name} rebuilt from {name}.item(){extra} before {s.segment(stmt)}",
            )

    find.__doc__ = f"``loss = torch.tensor(loss.item(){extra})`` inserted before the loss's backward."
    return find


_METADATA = {"shape", "size", "dtype", "device", "ndim"}


def _data_statement(s: _Source, stmt: ast.stmt) -> bool:
    """An assignment outside loops, classes and methods that makes data.

    It calls functions; it builds no model or optimizer; and it computes nothing from a model or a
    graph handed to its function: no call of one of the function's parameters (``net(x)``), no
    ``torch.autograd`` call, no attribute of a parameter but its metadata (``x.shape``).
    """
    if not isinstance(stmt, ast.Assign) or s.in_loop(stmt) is not None:
        return False
    scope = s.enclosing(stmt, (ast.ClassDef, ast.FunctionDef))
    if isinstance(scope, ast.ClassDef) or (scope is not None and isinstance(s.parent.get(scope), ast.ClassDef)):
        return False  # a class body or a method (a forward): not data preparation
    params = (
        {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)} if isinstance(scope, ast.FunctionDef) else set()
    )
    calls = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Call)]
    if not calls:
        return False
    for c in calls:
        dotted = _dotted(c.func)
        name = dotted.split(".")[-1] if dotted else ""
        if name[:1].isupper() or "optim" in dotted or name in ("parameters", "deepcopy", "requires_grad_"):
            return False
        if dotted.startswith(("torch.autograd.", "autograd.")) or (
            isinstance(c.func, ast.Name) and c.func.id in params
        ):
            return False
    for n in ast.walk(stmt.value):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in params:
            called = isinstance(s.parent.get(n), ast.Call) and s.parent[n].func is n  # type: ignore[attr-defined]
            if not called and n.attr not in _METADATA:
                return False
    return True


def _inference_data(s: _Source) -> Iterator[Mutation]:
    """Put a data-preparing assignment (outside loops) under ``with torch.inference_mode():``."""
    for block in s.blocks():
        for stmt in block:
            if not _data_statement(s, stmt) or not s.whole_lines(stmt):
                continue
            ind = s.indent(stmt.lineno)
            body = _reindent(s.stmt_text(stmt), ind, ind + "    ")
            yield Mutation(
                s.with_lines(stmt.lineno, stmt.end_lineno, f"{ind}with torch.inference_mode():\n{body}"),  # type: ignore[arg-type]
                (stmt.lineno, stmt.end_lineno),  # type: ignore[arg-type]
                f"line {stmt.lineno}: {s.segment(stmt)} put under torch.inference_mode()",
            )


def _writes_in_place(nodes: list[ast.stmt]) -> bool:
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.AugAssign) or (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Subscript)):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                attr = n.func.attr
                if attr.endswith("_") and not attr.startswith("_") and attr != "requires_grad_":
                    return True
    return False


def _param_inplace(s: _Source) -> Iterator[Mutation]:
    """Take in-place writes out of ``torch.no_grad()``: unwrap the ``with`` block (or drop the decorator), drop ``.data``."""
    for node in ast.walk(s.tree):
        if isinstance(node, ast.With) and len(node.items) == 1:
            ctx = node.items[0].context_expr
            if not (
                isinstance(ctx, ast.Call)
                and _dotted(ctx.func) == "torch.no_grad"
                and node.items[0].optional_vars is None
            ):
                continue
            if not _writes_in_place(node.body) or not s.whole_lines(node.body[0]) or node.body[0].lineno == node.lineno:
                continue
            ind = s.indent(node.lineno)
            inner = s.indent(node.body[0].lineno)
            body = "".join(s.lines[node.body[0].lineno - 1 : node.end_lineno])
            yield Mutation(
                s.with_lines(node.lineno, node.end_lineno, _reindent(body, inner, ind)),  # type: ignore[arg-type]
                (node.lineno, node.end_lineno),  # type: ignore[arg-type]
                f"line {node.lineno}: the writes of `with torch.no_grad():` moved out of it",
            )
        elif isinstance(node, ast.FunctionDef) and _writes_in_place(node.body):
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and _dotted(dec.func) == "torch.no_grad" and dec.lineno == dec.end_lineno:
                    line = s.lines[dec.lineno - 1]
                    if line.strip() == f"@{s.segment(dec)}":
                        yield Mutation(
                            s.with_lines(dec.lineno, dec.lineno, ""),
                            (dec.lineno, dec.lineno),
                            f"line {dec.lineno}: @torch.no_grad() removed from {node.name}",
                        )
        elif isinstance(node, ast.Attribute) and node.attr == "data" and isinstance(s.parent.get(node), ast.Attribute):
            user = s.parent[node]
            call = s.parent.get(user)
            if isinstance(call, ast.Call) and call.func is user and user.attr.endswith("_"):  # type: ignore[attr-defined]
                new = s.segment(node.value)
                yield s.replace(node, new, f"line {node.lineno}: {s.segment(node)} -> {new}")


def _drop_retain_graph(s: _Source) -> Iterator[Mutation]:
    """``backward(retain_graph=True)`` (or ``autograd.grad``'s) without ``retain_graph=True``."""
    for node in ast.walk(s.tree):
        if not isinstance(node, ast.Call):
            continue
        if not (_is_call_of(node, "backward") or _dotted(node.func) in ("torch.autograd.grad", "autograd.grad")):
            continue
        for k in node.keywords:
            if k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and k.value.value is True:
                rest = [s.segment(a) for a in node.args] + [s.segment(x) for x in node.keywords if x is not k]
                text = s.segment(node)
                new = f"{s.segment(node.func)}({', '.join(rest)})"
                yield s.replace(node, new, f"line {node.lineno}: {text} -> {new}")


def _drop_reduction(s: _Source) -> Iterator[Mutation]:
    """``e.mean()`` / ``e.sum()`` / ``torch.mean(e)`` (no arguments but the tensor) -> ``e``: the loss stays a tensor of values."""
    for node in ast.walk(s.tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr not in ("mean", "sum") or node.keywords:
            continue
        if _dotted(node.func.value) == "torch":
            if len(node.args) != 1:
                continue
            inner = node.args[0]
        elif node.args or _dotted(node.func.value) in ("math", "np", "numpy", "statistics"):
            continue
        else:
            inner = node.func.value
        new = s.segment(inner) if _atomic(inner) else f"({s.segment(inner)})"
        yield s.replace(node, new, f"line {node.lineno}: {s.segment(node)} -> {new}")


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in [
        Operator("inplace_augassign", "x = x * a -> x *= a (+, -, *, /)", _inplace_augassign),
        Operator(
            "inplace_activation",
            "F.relu(x) -> F.relu(x, inplace=True); nn.ReLU() -> nn.ReLU(inplace=True)",
            _inplace_activation,
        ),
        Operator("inplace_method", "torch.sigmoid(x) -> x.sigmoid_(); x.exp() -> x.exp_()", _inplace_method),
        Operator("drop_detach", "x.detach() -> x", _drop_detach),
        Operator(
            "drop_state_detach", "a loop's h = h.detach() deleted (state carried across iterations)", _drop_state_detach
        ),
        Operator(
            "step_before_backward", "opt.step() moved to before the backward that precedes it", _step_before_backward
        ),
        Operator(
            "hoist_invariant", "a loop-invariant assignment (a forward) computed once before the loop", _hoist_invariant
        ),
        Operator("accumulate_loss", "the loss added to a running total whose backward is called", _accumulate_loss),
        Operator("no_grad_wrap", "an assignment before a backward put under torch.no_grad()", _no_grad_wrap),
        Operator("double_backward", "the same loss.backward() twice", _double_backward),
        Operator("item_rebuild", "loss = torch.tensor(loss.item()) before its backward", _item_rebuild(False)),
        Operator(
            "item_rebuild_leaf",
            "loss = torch.tensor(loss.item(), requires_grad=True) before its backward",
            _item_rebuild(True),
        ),
        Operator("inference_data", "data preparation put under torch.inference_mode()", _inference_data),
        Operator("param_inplace", "in-place writes to parameters taken out of torch.no_grad()", _param_inplace),
        Operator("drop_retain_graph", "retain_graph=True removed", _drop_retain_graph),
        Operator("drop_reduction", "x.mean() / x.sum() -> x", _drop_reduction),
    ]
}


def mutants_of(family: str, source: str, operators: list[str] | None = None) -> list[Mutant]:
    """Every mutant of one script (``family``: its stem), operator by operator, sites in source order."""
    out: list[Mutant] = []
    for name in operators or list(OPERATORS):
        for i, m in enumerate(OPERATORS[name].mutate(source)):
            out.append(Mutant(family, name, i, m.source, m.lines, m.description))
    return out
