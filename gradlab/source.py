"""The user's code as a tree: each file parsed once, and the questions the advice asks of it.

Every reader of the user's code (the loop's intent, the causes, the rewrites)
asks the same few questions of the same file: which statement holds this line,
which loop body, what runs after it, which names a statement reads or binds.
They are answered here, on one parsed tree per text (:func:`parse` keeps the
latest trees), so a failure parses the user's file once, however many readers
look at it.

Example::

    >>> tree = parse("for x in data:\\n    y = f(x)\\n    y.backward()\\n")
    >>> statement_at(tree, 3).lineno, [s.lineno for s in loop_body_of(tree, 2)]
    (3, [2, 3])
    >>> sorted(names(statement_at(tree, 2), ast.Load))
    ['f', 'x']
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import lru_cache

__all__ = [
    "parse",
    "blocks",
    "statement_at",
    "statement_span",
    "loop_body_of",
    "loop_around",
    "outermost_loop",
    "returns_value",
    "enclosing_blocks",
    "after",
    "next_backward",
    "names",
    "feeding",
    "runs_backward",
    "called_on",
    "calls_method",
    "undetached_reads",
    "enclosing",
    "preceding",
    "function_of",
    "grad_off",
    "under_grad_off",
]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@lru_cache(maxsize=16)
def parse(text: str) -> ast.Module | None:
    """The tree of ``text`` (None when it does not parse), parsed once for each text.

    The tree is shared: readers walk it, none may change it.
    """
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """The statement blocks directly inside ``node``: body, else, finally, and each handler's body."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(node, "handlers", ()) or ():
        yield handler.body


def _path(tree: ast.Module, lineno: int) -> list[tuple[ast.AST, list[ast.stmt], int]]:
    """From the module down: (owner, block, index) of each statement enclosing ``lineno``."""
    path: list[tuple[ast.AST, list[ast.stmt], int]] = []
    owner: ast.AST = tree
    while True:
        for block in blocks(owner):
            for i, st in enumerate(block):
                if st.lineno <= lineno <= (st.end_lineno or st.lineno):
                    path.append((owner, block, i))
                    owner = st
                    break
            else:
                continue
            break
        else:
            return path


def statement_at(tree: ast.Module, lineno: int) -> ast.stmt | None:
    """The innermost statement that holds line ``lineno``."""
    path = _path(tree, lineno)
    return path[-1][1][path[-1][2]] if path else None


def statement_span(tree: ast.Module | None, lineno: int) -> tuple[int, int] | None:
    """The first and last line of the innermost statement at ``lineno`` (None without one)."""
    st = statement_at(tree, lineno) if tree is not None else None
    return (st.lineno, st.end_lineno or st.lineno) if st is not None else None


def loop_body_of(tree: ast.Module, lineno: int) -> list[ast.stmt] | None:
    """The body of the innermost ``for``/``while`` loop around ``lineno`` (in the same function), or None."""
    for owner, block, _ in reversed(_path(tree, lineno)):
        if isinstance(owner, _SCOPES):
            return None
        if isinstance(owner, _LOOPS) and block is owner.body:
            return block
    return None


def loop_around(tree: ast.Module, lineno: int) -> ast.For | ast.AsyncFor | ast.While | None:
    """The innermost ``for``/``while`` statement whose body holds line ``lineno``."""
    found: ast.For | ast.AsyncFor | ast.While | None = None
    for node in ast.walk(tree):
        if not isinstance(node, _LOOPS) or not node.body[0].lineno <= lineno <= (node.end_lineno or 0):
            continue
        if found is None or node.lineno > found.lineno:
            found = node
    return found


def outermost_loop(tree: ast.Module, lineno: int) -> ast.For | ast.AsyncFor | ast.While | None:
    """The outermost ``for``/``while`` statement whose body holds line ``lineno`` (the training loop around an inner
    one), or None."""
    outer = loop_around(tree, lineno)
    while outer is not None and (up := loop_around(tree, outer.lineno)) is not None and up is not outer:
        outer = up
    return outer


def returns_value(fn: ast.AST) -> bool:
    """``fn`` (a function's tree) has a ``return`` with a value."""
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))


def enclosing_blocks(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement block of ``tree`` (bodies, else and finally blocks), outermost first."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def block_of(tree: ast.AST | None, st: ast.stmt | None) -> list[ast.stmt] | None:
    """The statement block of ``tree`` (a body, else or finally block) that holds ``st`` itself; None when none
    does (or either is None)."""
    if tree is None or st is None:
        return None
    return next((b for b in enclosing_blocks(tree) if st in b), None)


def after(tree: ast.Module, lineno: int) -> list[ast.stmt]:
    """The statements that run after the one at ``lineno``: the rest of each enclosing block, with a
    loop's next iteration (its body up to the statement) after the rest of its body. Stops at a function."""
    out: list[ast.stmt] = []
    for owner, block, i in reversed(_path(tree, lineno)):
        if isinstance(owner, _SCOPES):
            out += block[i + 1 :]
            break
        out += block[i + 1 :]
        if isinstance(owner, _LOOPS) and block is owner.body:
            out += block[: i + 1]
    return out


def leaving(tree: ast.Module, lineno: int) -> list[ast.stmt]:
    """The statements that run once the innermost loop holding the one at ``lineno`` ends: what follows the loop
    (as :func:`after` reads it). Empty outside a loop."""
    path = _path(tree, lineno)
    inner = next(
        (k for k in range(len(path) - 1, -1, -1) if isinstance(loop := path[k][0], _LOOPS) and path[k][1] is loop.body),
        None,
    )
    if inner is None or any(isinstance(owner, _SCOPES) for owner, _b, _i in path[inner + 1 :]):
        return []
    return after(tree, path[inner][0].lineno)  # type: ignore[attr-defined]


def names(node: ast.AST, ctx: type[ast.expr_context]) -> set[str]:
    """The plain names ``node`` reads (``ast.Load``) or binds (``ast.Store``)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def feeding(statements: list[ast.stmt], needed: set[str]) -> set[int]:
    """The line numbers of ``statements`` that compute ``needed`` (directly or through each other)."""
    needed, out = set(needed), set()
    for st in reversed(statements):
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and names(st, ast.Store) & needed:
            out.add(st.lineno)
            needed |= _loads_for(st, needed)
    return out


def _loads_for(st: ast.stmt, needed: set[str]) -> set[str]:
    """The names ``st`` reads to compute the names of ``needed`` it assigns: for ``a, b = f(x), g(y)`` only the
    element of each needed target (``b`` needs ``y``), else everything the statement reads."""
    if (
        isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Tuple)
        and isinstance(st.value, ast.Tuple)
        and len(st.targets[0].elts) == len(st.value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*st.targets[0].elts, *st.value.elts))
    ):
        out: set[str] = set()
        for target, value in zip(st.targets[0].elts, st.value.elts):
            if names(target, ast.Store) & needed or not isinstance(target, ast.Name):
                out |= names(value, ast.Load) | (names(target, ast.Load))
        return out
    return names(st, ast.Load)


_BACKWARD_FUNCTIONS = ("torch.autograd.backward", "autograd.backward")
_GRAD_FUNCTIONS = ("torch.autograd.grad", "autograd.grad")


def runs_backward(st: ast.AST, *, grad: bool = True) -> bool:
    """``st`` calls a backward: ``X.backward(...)``, ``torch.autograd.backward(...)`` and, with ``grad``,
    ``torch.autograd.grad(...)``."""
    functions = _BACKWARD_FUNCTIONS + (_GRAD_FUNCTIONS if grad else ())
    return any(
        isinstance(n, ast.Call)
        and ((isinstance(n.func, ast.Attribute) and n.func.attr == "backward") or ast.unparse(n.func) in functions)
        for n in ast.walk(st)
    )


def method_call(st: ast.stmt | None, method: str) -> ast.Call | None:
    """The call when the statement ``st`` is one call of ``method`` (``loss.backward()``), else None."""
    call = st.value if isinstance(st, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == method:
        return call
    return None


def called_on(st: ast.stmt, method: str) -> str | None:
    """The receiver of ``st`` when the statement is one call of ``method`` (``opt.step()``: ``"opt"``), else None."""
    call = method_call(st, method)
    return ast.unparse(call.func.value) if call is not None and isinstance(call.func, ast.Attribute) else None


def calls_method(st: ast.AST, methods: Iterable[str]) -> bool:
    """``st`` calls a method named in ``methods`` (``opt.step()`` for ``("step",)``)."""
    wanted = set(methods)
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in wanted for n in ast.walk(st)
    )


def next_backward(tree: ast.Module, lineno: int) -> int | None:
    """The line of the first backward call that runs after the statement at ``lineno`` (in the same function)."""
    here = statement_at(tree, lineno)
    if here is not None and runs_backward(here, grad=False) and here.lineno == lineno:
        return lineno
    for st in after(tree, lineno):
        if runs_backward(st, grad=False) and not isinstance(st, _SCOPES):
            inner = [
                n
                for n in ast.walk(st)
                if isinstance(n, ast.stmt) and not list(blocks(n)) and runs_backward(n, grad=False)
            ]
            return min(n.lineno for n in inner) if inner else st.lineno
    return None


def detached(node: ast.AST, *, data: bool = False) -> ast.expr | None:
    """What ``node`` takes out of the graph as it is: ``E`` for ``E.detach()`` (a ``.clone()`` after it allowed),
    and for ``E.data`` too when ``data``; None for anything else (``E.data.new(...)``, ``E.detach().numpy()``).

    >>> ast.unparse(detached(ast.parse("h.detach().clone()", mode="eval").body))
    'h'
    >>> detached(ast.parse("out.data", mode="eval").body) is None
    True
    >>> ast.unparse(detached(ast.parse("out.data", mode="eval").body, data=True))
    'out'
    """
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clone":
        node = node.func.value
    if data and isinstance(node, ast.Attribute) and node.attr == "data":
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "detach"
        and not node.args
        and not node.keywords
    ):
        return node.func.value
    return None


#: Calls that draw random numbers: a statement that makes one computes other values when it runs again.
RANDOM_DRAWS = frozenset(
    {
        "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
        "multinomial", "poisson", "uniform_", "normal_", "exponential_", "geometric_", "cauchy_", "log_normal_",
        "random_", "sample", "rsample", "dropout",
    }
)  # fmt: skip


def draws_random(tree: ast.Module, statements: Iterable[ast.stmt]) -> bool:
    r"""``statements`` draw random numbers (``torch.randn``, ``.sample()``, ``F.dropout``), themselves or in a
    function of ``tree`` they call (one level down).

    >>> tree = ast.parse("def noise(n):\n    return torch.randn(n)\nx = noise(3)\ny = x * 2")
    >>> draws_random(tree, tree.body[1:2]), draws_random(tree, tree.body[2:])
    (True, False)
    """
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def calls(node: ast.AST) -> list[str]:
        return [
            (c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", ""))
            for c in ast.walk(node)
            if isinstance(c, ast.Call)
        ]

    for st in statements:
        named = calls(st)
        if any(n in RANDOM_DRAWS for n in named):
            return True
        if any(n in functions and any(m in RANDOM_DRAWS for m in calls(functions[n])) for n in named):
            return True
    return False


def undetached_reads(st: ast.AST, name: str) -> list[ast.Name]:
    """The reads of ``name`` in ``st`` that are not detached where they are read: ``name.detach()``, or an element's
    (``name[i][j].detach()``)."""
    detached: set[int] = set()
    for n in ast.walk(st):
        if isinstance(n, ast.Attribute) and n.attr == "detach":
            base = n.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                detached.add(id(base))
    return [
        n
        for n in ast.walk(st)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in detached
    ]


def enclosing(tree: ast.Module, lineno: int) -> list[ast.stmt]:
    """The compound statements whose body holds line ``lineno``, outermost first (``def``, ``for``, ``with``, ...)."""
    out: list[ast.stmt] = []
    for _owner, block, i in _path(tree, lineno):
        st = block[i]
        if any(b[0].lineno <= lineno <= (b[-1].end_lineno or b[-1].lineno) for b in blocks(st)):
            out.append(st)
    return out


def function_of(tree: ast.Module, lineno: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function whose body holds line ``lineno`` (None at module level)."""
    found = None
    for st in enclosing(tree, lineno):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found = st
    return found


def own_statements(scope: ast.AST) -> Iterator[ast.stmt]:
    """Every statement of ``scope`` at any depth, in source order, but none of the functions and classes it
    defines nor theirs."""
    for block in blocks(scope):
        for st in block:
            if not isinstance(st, _SCOPES):
                yield st
                yield from own_statements(st)


def _simple(st: ast.stmt) -> Iterator[ast.stmt]:
    if isinstance(st, _SCOPES):
        return
    inner = list(blocks(st))
    if not inner:
        yield st
        return
    for block in inner:
        for child in block:
            yield from _simple(child)


def preceding(tree: ast.Module, lineno: int) -> list[ast.stmt]:
    """The simple statements that run before the one at ``lineno`` in its function (or the module's body), in
    source order: those of each enclosing block above it, also inside the compound statements before it."""
    out: list[ast.stmt] = []
    for owner, block, i in _path(tree, lineno):
        if isinstance(owner, _SCOPES):
            out = []  # what runs before the function was called is not its code
        for st in block[:i]:
            out += list(_simple(st))
    return out


_GRAD_OFF = ("no_grad", "inference_mode")


def grad_off(node: ast.expr) -> str | None:
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


def under_grad_off(tree: ast.Module, line: int) -> bool:
    """Line ``line`` runs inside a ``with`` block that turns grad off (:func:`grad_off`): what it computes has no
    graph."""
    return any(
        isinstance(n, ast.With)
        and n.lineno < line <= (n.end_lineno or n.lineno)
        and any(grad_off(item.context_expr) for item in n.items)
        for n in ast.walk(tree)
    )
