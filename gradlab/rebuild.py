"""Building a value from the graph again (GL0003): a tensor rebuilt from numbers a graph gave
(``torch.tensor(x.item())``, ``torch.tensor([a, b])``) replaced by the graph's own tensors, and a detach taken off.

Pure functions of one statement's text, like :mod:`gradlab.rewrite`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .rewrite import split_comment

__all__ = ["EXTRACTIONS", "REBUILDS", "from_graph", "strip_extractions", "without_detach"]


#: Calls that take a value out of the graph (a number, a list, an array, a tensor without history).
EXTRACTIONS = frozenset({"item", "tolist", "numpy", "detach"})


#: Calls that build a new tensor, without history, from a value.
REBUILDS = frozenset({"tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "DoubleTensor", "scalar_tensor"})


def strip_extractions(node: ast.expr) -> ast.expr:
    """``node`` with every call that takes a value out of the graph removed: ``x.detach().cpu().item()`` -> ``x.cpu()``."""
    extraction = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EXTRACTIONS
    if extraction and isinstance(node, ast.Call) and not node.args and not node.keywords:
        return strip_extractions(node.func.value)  # type: ignore[attr-defined]
    if isinstance(node, ast.Attribute) and node.attr == "data":
        return strip_extractions(node.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
    ):
        return strip_extractions(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        inner = strip_extractions(node.func.value)
        if inner is not node.func.value:
            return ast.Call(ast.Attribute(inner, node.func.attr, ast.Load()), node.args, node.keywords)
    return node


def _rebuild(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in REBUILDS and len(call.args) == 1


class _FromGraph(ast.NodeTransformer):
    """Rebuilds (``torch.tensor(x.item())``, ``torch.tensor([a, b])``) replaced by the tensors they copy."""

    def __init__(
        self, torch_name: str, values: Mapping[str, str], tensors: frozenset[str], stacked: bool = False
    ) -> None:
        self.torch_name = torch_name
        self.values = values
        self.tensors = tensors
        self.stacked = stacked  # a rebuild of one expression copies a sequence of graph tensors: stack it
        self.changed = False

    def _traced(self, before: ast.expr, after: ast.expr) -> bool:
        """``after`` is a tensor of the graph: an extraction was stripped, a number traced, or a known tensor."""
        return after is not before or (isinstance(after, ast.Name) and after.id in self.tensors)

    def _value(self, node: ast.expr) -> ast.expr:
        """``node`` stripped of extractions; a name bound to a number taken from a tensor becomes that tensor."""
        node = strip_extractions(node)
        if isinstance(node, ast.Name) and node.id in self.values:
            return ast.parse(self.values[node.id], mode="eval").body
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not _rebuild(node):
            return node
        value = node.args[0]
        new: ast.expr
        if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
            parts = [self._value(e) for e in value.elts]
            if any(isinstance(p, ast.Constant) for p in parts) or not (
                self.stacked or all(self._traced(e, p) for p, e in zip(parts, value.elts))
            ):
                return node  # numbers of its own, or values gradlab cannot trace to a tensor
            stack = ast.Attribute(ast.Name(self.torch_name, ast.Load()), "stack", ast.Load())
            new = ast.Call(stack, [ast.List(parts, ast.Load())], [])
        elif self.stacked and isinstance(value, ast.ListComp):  # torch.tensor([f(x) for x in xs]), seen copying
            stack = ast.Attribute(ast.Name(self.torch_name, ast.Load()), "stack", ast.Load())
            comp = ast.ListComp(self._value(value.elt), value.generators)
            new = ast.Call(stack, [comp], [])
        elif self.stacked and isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
            stack = ast.Attribute(ast.Name(self.torch_name, ast.Load()), "stack", ast.Load())
            new = ast.Call(stack, [value], [])
        else:
            new = self._value(value)
            if isinstance(new, ast.Constant) or not self._traced(value, new):
                return node  # a number of its own, or a value gradlab cannot trace to a tensor
        kept = [k for k in node.keywords if k.arg in ("dtype", "device")]
        if kept:
            new = ast.Call(ast.Attribute(new, "to", ast.Load()), [], kept)
        self.changed = True
        return new


def from_graph(
    statement: str,
    torch_name: str = "torch",
    values: Mapping[str, str] | None = None,
    tensors: frozenset[str] = frozenset(),
    stacked: bool = False,
) -> str | None:
    """``statement`` (one line) with each tensor rebuilt from values of a graph replaced by the graph's own tensor.

    ``torch.tensor(x.item())`` becomes ``x``, ``torch.tensor([a.item(), b])`` becomes
    ``torch.stack([a, b])``, ``torch.from_numpy(y.detach().numpy())`` becomes ``y``;
    ``dtype=``/``device=`` are kept as ``.to(...)``, ``requires_grad=`` is dropped (the
    tensor has a graph). ``values`` maps a name bound to a number (``v = x.item()``)
    to the tensor it was taken from (``x``); ``tensors`` are the names that hold tensors of
    the graph (``torch.tensor([la, lb])`` of two losses). ``stacked``: the line is known (a tracker saw it) to copy a
    sequence of graph tensors, so ``torch.tensor(log_probs)`` of a name or attribute becomes
    ``torch.stack(log_probs)``. None when the line rebuilds nothing.

    Example::

        >>> from_graph("loss = torch.tensor(total.item(), requires_grad=True)")
        'loss = total'
        >>> from_graph("loss = torch.tensor([a, b.detach()]).sum()  # both terms", tensors=frozenset({"a"}))
        'loss = torch.stack([a, b]).sum()  # both terms'
        >>> from_graph("lp = torch.tensor(self.log_probs)", stacked=True)
        'lp = torch.stack(self.log_probs)'
        >>> from_graph("nll = torch.tensor([f(x[i]) for i in range(n)]).mean()", stacked=True)
        'nll = torch.stack([f(x[i]) for i in range(n)]).mean()'
    """
    body, comment = split_comment(statement)
    try:
        tree = ast.parse(body.strip())
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    worker = _FromGraph(torch_name, values or {}, tensors, stacked)
    new = worker.visit(tree)
    if not worker.changed:
        return None
    return ast.unparse(new) + comment


def without_detach(statement: str, names: frozenset[str] | set[str]) -> str | None:
    """``statement`` (one line) with ``.detach()``, ``.data`` and ``.item()`` taken off the reads of ``names``.

    Example::

        >>> without_detach("loss = crit(pred.detach(), y)", {"pred"})
        'loss = crit(pred, y)'
    """
    body, comment = split_comment(statement)
    try:
        tree = ast.parse(body.strip())
    except SyntaxError:
        return None
    changed = False

    class Strip(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            stripped = strip_extractions(node)
            if stripped is not node and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(stripped)):
                changed = True
                return stripped
            return node

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            if node.attr == "data" and isinstance(node.value, ast.Name) and node.value.id in names:
                changed = True
                return node.value
            return node

    new = Strip().visit(tree)
    return ast.unparse(new) + comment if changed else None
