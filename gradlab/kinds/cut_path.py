"""The cut on the loss's path, read from the code of the failing function (NOTE [The cut on the loss's path] in
:mod:`gradlab.kinds.no_grad_fn`): the statements that compute the backward's tensor, the one that took its value
out of the graph, the one that rebuilt it, a grad-off block or decorator around them, a model's forward that
detaches what it returns."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..rebuild import EXTRACTIONS, REBUILDS
from ..source import (
    detached,
    enclosing,
    function_of,
    grad_off,
    names,
    preceding,
    statement_at,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "PathCut",
    "backward_target",
    "calls_named",
    "path_cut",
    "positions_call",
    "rebuilds_argument",
    "soft_argmax",
]


def calls_named(st: ast.AST, wanted: frozenset[str]) -> list[ast.Call]:
    out = []
    for n in ast.walk(st):
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in wanted and (name not in EXTRACTIONS or not n.args):
                out.append(n)
    return out


def backward_target(st: ast.stmt) -> ast.expr | None:
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
        self.positions: list[ast.stmt] = []  # statements on the path that bind positions (argmax, max's indices)
        self.positions_call: str | None = None
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
            or bool(self.positions)
        )


def _detaches(st: ast.stmt) -> bool:
    """``st`` rebinds a name to a tensor taken out of the graph, as it is: ``out = out.data``, ``h = h.detach()``
    (a ``.clone()`` after it allowed), not ``out.data.new(...)`` or ``x.detach().numpy()``."""
    return (
        isinstance(st, (ast.Assign, ast.AnnAssign))
        and st.value is not None
        and detached(st.value, data=True) is not None
    )


# NOTE [Positions on the loss's path]
# argmax, argmin, argsort, and the indices of max, min, topk and sort are positions:
# integers, with no gradient whatever they were computed from. A loss computed from them
# (landmark coordinates decoded from the heatmaps' peaks, then compared with the true
# ones) has no graph, and backward says "element 0 of tensors does not require grad".
# The statement that binds them is the cut; the fix is a sentence, since the
# differentiable form is a modelling choice: a soft-argmax (the positions weighted by a
# softmax of the scores) or a loss on the scores themselves.
_POSITIONS = frozenset({"argmax", "argmin", "argsort"})
_WITH_INDICES = frozenset({"max", "min", "topk", "sort", "kthvalue", "mode", "median"})


def positions_call(st: ast.stmt) -> str | None:
    """The call by which ``st`` binds positions (``idx = s.argmax(-1)``, ``_, idx = torch.max(s, dim=-1)``,
    ``idx = s.topk(3).indices``), as ``"torch.max()"``; else None."""
    if not isinstance(st, ast.Assign) or len(st.targets) != 1:
        return None
    value, target = st.value, st.targets[0]
    second = isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name)
    indexed = (isinstance(value, ast.Attribute) and value.attr == "indices") or (
        isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and value.slice.value == 1
    )
    if isinstance(value, (ast.Attribute, ast.Subscript)) and indexed:
        value = value.value
    if not isinstance(value, ast.Call):
        return None
    if not indexed and not isinstance(target, ast.Tuple):
        value = _under_casts(value)  # s.argmax(1).view(n, 1, h, w).float(): positions still
    name = ast.unparse(value.func)
    last = name.rsplit(".", 1)[-1]
    if last in _POSITIONS and not indexed and not isinstance(target, ast.Tuple):
        return f"{name}()"
    if last in _WITH_INDICES and (indexed or second):  # (values, indices): only with a dim, or sort's and topk's
        return f"{name}()"
    return None


#: Methods that leave positions positions: a reshape or a cast of integers has no graph either.
_KEEP_POSITIONS = frozenset(
    {"view", "reshape", "float", "double", "half", "long", "int", "to", "type", "unsqueeze", "squeeze", "flatten"}
    | {"contiguous", "clone", "permute", "transpose", "t", "detach", "view_as", "reshape_as", "type_as"}
)


def _under_casts(call: ast.Call) -> ast.Call:
    """The call under a chain of reshapes and casts (``s.argmax(1)`` in ``s.argmax(1).view(n, h, w).float()``);
    ``call`` itself when it is no such chain."""
    inner = call
    while (
        isinstance(inner.func, ast.Attribute)
        and inner.func.attr in _KEEP_POSITIONS
        and isinstance(inner.func.value, ast.Call)
    ):
        inner = inner.func.value
    return inner


# NOTE [A soft argmax]
# x.argmax(d) has no gradient; its differentiable form is the position expected under a softmax of the scores
# along d: x.softmax(d).movedim(d, -1) @ torch.arange(x.shape[d]). For two classes that is the probability of the
# second (a segmenter's foreground mask, what a report on an image-gradient loss over argmax asked for); for more,
# the mean position (integral regression of a landmark from its heatmap). argmin takes the softmax of -x. It is a
# different loss: the value is no longer the hard position, and the fix's trains line says so. Written only for
# an argmax over a constant dim of a name or an attribute (read three times), without keepdim.
def soft_argmax(line: str, alias: str = "torch") -> str | None:
    """``line`` with its ``x.argmax(d)`` (or ``argmin``, or ``torch.argmax(x, d)``) replaced by the position
    expected under a softmax of ``x`` along ``d`` (NOTE [A soft argmax]); None when it has none that can be.

    Example::

        >>> soft_argmax("pred = logits.argmax(1).view(n, 1, h, w).float()")
        'pred = (logits.softmax(1).movedim(1, -1) @ torch.arange(logits.shape[1], dtype=logits.dtype, device=logits.device)).view(n, 1, h, w).float()'
        >>> soft_argmax("idx = heat.argmin(dim=-1)")
        'idx = (heat.neg().softmax(-1).movedim(-1, -1) @ torch.arange(heat.shape[-1], dtype=heat.dtype, device=heat.device))'
        >>> soft_argmax("idx = heat.flatten(1).argmax(-1)") is None
        True
    """
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    found = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, (ast.Attribute, ast.Name))
        and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in ("argmax", "argmin")
    ]
    if len(found) != 1:
        return None
    call = found[0]
    func = call.func
    method = isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == alias)
    args = list(call.args)
    if method:
        assert isinstance(func, ast.Attribute)
        scores: ast.expr | None = func.value
    else:
        scores = args.pop(0) if args else None
    dims = [*args, *(k.value for k in call.keywords if k.arg == "dim")]
    if (
        scores is None
        or not isinstance(scores, (ast.Name, ast.Attribute))
        or len(dims) != 1
        or any(k.arg not in ("dim", "keepdim") for k in call.keywords)
        or any(
            k.arg == "keepdim" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
            for k in call.keywords
        )
    ):
        return None
    dim = dims[0]
    if (
        isinstance(dim, ast.UnaryOp)
        and isinstance(dim.op, ast.USub)
        and isinstance(dim.operand, ast.Constant)
        and isinstance(dim.operand.value, int)
    ):
        d = f"-{dim.operand.value}"
    elif isinstance(dim, ast.Constant) and isinstance(dim.value, int):
        d = str(dim.value)
    else:
        return None
    x = ast.unparse(scores)
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    probs = f"{x}.neg().softmax({d})" if name == "argmin" else f"{x}.softmax({d})"
    soft = f"({probs}.movedim({d}, -1) @ {alias}.arange({x}.shape[{d}], dtype={x}.dtype, device={x}.device))"
    stripped = line.strip()
    lines = stripped.splitlines()
    if len(lines) != 1 or call.lineno != 1 or call.end_lineno != 1 or call.end_col_offset is None:
        return None
    row = lines[0]
    new = row[: call.col_offset] + soft + row[call.end_col_offset :]
    return line[: len(line) - len(line.lstrip())] + new


#: Calls that take positions to pick values (their index argument), as a subscript does.
_TAKES_POSITIONS = frozenset(
    {
        "gather",
        "index_select",
        "take",
        "take_along_dim",
        "take_along_axis",
        "scatter",
        "scatter_add",
        "index_add",
        "embedding",  # F.embedding(idx, codebook): the codebook's rows, with its graph
        "one_hot",  # numbers made from positions: no graph lost that the positions had
    }
)


def _positions_name(st: ast.stmt) -> str | None:
    """The name a positions statement binds the positions to (``idx`` in ``_, idx = s.max(-1)``)."""
    target = st.targets[0] if isinstance(st, ast.Assign) else None
    if isinstance(target, ast.Tuple) and isinstance(target.elts[-1], ast.Name):
        return target.elts[-1].id
    return target.id if isinstance(target, ast.Name) else None


def read_as_values(st: ast.stmt, path: list[ast.AST]) -> bool:
    """The positions ``st`` binds are read as values by a statement of the loss's ``path`` (``idx % w``), not only
    as an index (``codebook[idx]`` keeps the codebook's graph): NOTE [Positions on the loss's path]."""
    name = _positions_name(st)
    if name is None:
        return False
    for later in path:
        if later is st:
            continue
        in_index: set[int] = set()
        for n in ast.walk(later):
            if isinstance(n, ast.Subscript):
                in_index |= {id(m) for m in ast.walk(n.slice)}
            elif isinstance(n, ast.Call) and ast.unparse(n.func).rsplit(".", 1)[-1] in _TAKES_POSITIONS:
                # q.gather(1, a), torch.index_select(x, 0, idx): the positions pick values, as an index does
                in_index |= {id(m) for a in [*n.args, *(k.value for k in n.keywords)] for m in ast.walk(a)}
        if any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in in_index
            for n in ast.walk(later)
        ):
            return True
    return False


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self"}


def rebuilds_argument(st: ast.stmt, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``x = torch.tensor(x, dtype=..., device=...)`` in ``fn``: a value handed in (a model's scores, with their
    graph) copied into a new tensor without one."""
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
        return False
    value = st.value
    if not isinstance(value, ast.Call) or not value.args or not isinstance(value.args[0], ast.Name):
        return False
    name = ast.unparse(value.func).rsplit(".", 1)[-1]
    return name == "tensor" and value.args[0].id in _params(fn)  # as_tensor of a tensor keeps its graph


def _callee_cut(tree: ast.Module, path: list[ast.stmt], models: dict[str, str]) -> tuple[str, list[ast.stmt]] | None:
    """A function of the file that the path calls (a model's ``forward``: ``models`` maps the frame's model names to
    their class names), or one that function's returned value calls (``self._compute_loss(...)``), whose returned
    value it takes out of the graph: its name, and the statements that do."""
    searched: set[str] = set()
    outer: str | None = None  # how the path calls the function whose callee is searched at the second level
    for _depth in range(2):
        calls = [n for st in path for n in ast.walk(st) if isinstance(n, ast.Call)]
        called = {ast.unparse(n.func) for n in calls}
        # a function called only with constants (make_data(), make_kg(256)) computes no value of a graph: the
        # positions it takes are data (a planted tail entity), not a cut (NOTE [Positions on the loss's path])
        given = {
            ast.unparse(n.func)
            for n in calls
            if any(not isinstance(a, ast.Constant) for a in [*n.args, *(k.value for k in n.keywords)])
        }
        wanted: dict[str, str] = {}  # a definition's name -> how the path calls it
        for call in called:
            last = call.rsplit(".", 1)[-1]
            if call in models or last in models:
                wanted.setdefault(f"{models.get(call) or models[last]}.forward", call)
            else:
                wanted.setdefault(last, call)
        next_path: list[ast.stmt] = []
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
                method = key.rsplit(".", 1)[-1]
                if key not in wanted and not (
                    "." in key and wanted.get(method, "").startswith("self.") and outer is not None
                ):
                    continue
                how = wanted.get(key) or wanted[method]
                if key in searched:
                    continue
                searched.add(key)
                returns = [r for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None]
                needed = (
                    set().union(*(names(r.value, ast.Load) for r in returns if r.value is not None))
                    if returns
                    else set()
                )
                inside = []
                feeding: list[ast.AST] = list(returns)  # the statements the returned value is computed by
                for st in reversed(preceding(tree, max(r.lineno for r in returns))) if returns else ():
                    if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and names(st, ast.Store) & needed:
                        needed |= names(st, ast.Load)
                        positions = (
                            positions_call(st) is not None
                            and read_as_values(st, feeding)
                            and (how in given or key.endswith(".forward"))
                        )
                        feeding.append(st)
                        cuts = _detaches(st) or positions or (outer is not None and rebuilds_argument(st, fn))
                        if cuts and st.lineno == st.end_lineno:
                            inside.append(st)
                if inside:
                    return (outer or how), sorted(inside, key=lambda st: st.lineno)
                if key.endswith(".forward"):  # a model's forward: what its returned value calls, searched next
                    next_path += [f for f in feeding if isinstance(f, ast.stmt)]
                    outer = outer or how
        if not next_path:
            return None
        path = next_path
    return None


def path_cut(tree: ast.Module, line: int, models: dict[str, str] | None = None) -> PathCut:
    """The cut on the data path of the tensor the statement at ``line`` backwards (NOTE [The cut on the loss's path])."""
    cut = PathCut()
    here = statement_at(tree, line)
    target = backward_target(here) if here is not None else None
    if here is None or target is None:
        return cut
    needed = names(target, ast.Load)
    path: list[ast.stmt] = [here]
    if calls_named(target, REBUILDS) or calls_named(target, EXTRACTIONS):
        cut.rebuilt = here if calls_named(target, REBUILDS) else None
        cut.left = here if calls_named(target, EXTRACTIONS) else None
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
        rebuilds = [c for c in calls_named(st, REBUILDS) if not _literal(c)]
        if cut.rebuilt is None and rebuilds:
            cut.rebuilt, cut.rebuilt_call = st, f"{ast.unparse(rebuilds[0].func)}()"
        extracted = calls_named(st, EXTRACTIONS)
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
        found = calls_named(cut.left, EXTRACTIONS)
        cut.left_call = f".{found[0].func.attr}()" if found else None  # type: ignore[attr-defined]
    cut.statements = sorted(path, key=lambda st: st.lineno)
    cut.distance = {st.lineno: k for k, st in enumerate(path)}
    for st in path:  # a block that turns grad off around the path, the one nearest the loss
        for outer in enclosing(tree, st.lineno):
            if isinstance(outer, ast.With) and cut.block is None:
                call = next((c for item in outer.items if (c := grad_off(item.context_expr))), None)
                if call is not None:
                    cut.block, cut.block_call = outer, call
                    cut.distance[outer.lineno] = cut.distance[st.lineno]
    function = function_of(tree, line)
    if function is not None:
        for dec in function.decorator_list:
            call = grad_off(dec)
            if call is not None:
                cut.decorator, cut.decorator_call = dec, call
    if not cut.found:  # NOTE [Positions on the loss's path]: in this function
        on_path: list[ast.AST] = list(cut.statements)
        cut.positions = [st for st in cut.statements if positions_call(st) and read_as_values(st, on_path)]
    if not cut.found:  # nothing in this function: a function it calls (a model's forward) may take it out
        inner = _callee_cut(tree, cut.statements, models or {})
        if inner is not None:
            cut.callee, found_inside = inner
            cut.positions = [st for st in found_inside if positions_call(st)]
            cut.inside = [st for st in found_inside if not positions_call(st)]
    if cut.positions:
        cut.positions_call = positions_call(cut.positions[0])
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
    from ..rebuild import strip_extractions

    stripped = strip_extractions(value)
    return None if stripped is value or isinstance(stripped, ast.Constant) else ast.unparse(stripped)
