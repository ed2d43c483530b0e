"""Copies of a model's parameters loaded into the model before its forward (NOTE [Copies loaded into a model]): a
meta-learning step adapts copies of the weights, then "loads" them with ``param.copy_(fast)`` or a loop that
rebinds its own variable, and runs the model. The fix runs the model on the copies with
``torch.func.functional_call`` instead, where the forward is called."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..edits import Edit
from ..evidence import Failure, torch_alias
from ..fixes import Fix, Proposal
from ..i18n import T
from ..loop import read_site
from ..source import block_of, function_of, parse, statement_at

__all__ = ["loaded_copies_fix"]


# NOTE [Copies loaded into a model]
# MAML written by hand adapts copies of the parameters (``fast = [p - lr * g for p, g in zip(params, grads)]``) and
# then loads them into the model to run its forward: ``for p, w in zip(model.parameters(), fast): p.copy_(w)`` (torch
# refuses the write to a leaf that requires grad, or, under no_grad, the copies' graph is lost: the meta-gradient
# never reaches the meta-parameters), or ``for w, p in zip(fast, model.parameters()): p = w``, which rebinds the loop's
# variable and changes nothing (``autograd.grad`` then finds the copies unused). What the author means is the model's
# forward at the copies: ``torch.func.functional_call(model, dict(zip(names, fast)), (x,))``. The loading loop (or the
# call of the helper that holds it) is deleted, and each call of the model after it in its block, up to the next
# loading, runs at the copies. Calls with keyword arguments, or spread over several lines, are left alone (no fix).


def _loading(st: ast.stmt) -> tuple[str, str, str] | None:
    """``for a, b in zip(X, M.parameters()): b = a`` (or ``b.copy_(a)``, ``b.data = a``; either order of zip's
    arguments): (M, X, how), ``how`` ``"rebind"`` or ``"copy"``; None for any other statement."""
    if not (isinstance(st, ast.For) and len(st.body) == 1 and isinstance(st.target, ast.Tuple)):
        return None
    targets = [t.id for t in st.target.elts if isinstance(t, ast.Name)]
    it = st.iter
    if len(targets) != 2 or not (isinstance(it, ast.Call) and ast.unparse(it.func) == "zip" and len(it.args) == 2):
        return None
    params = [
        k
        for k, a in enumerate(it.args)
        if isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "parameters" and not a.args
    ]
    if len(params) != 1:
        return None
    k = params[0]
    param, weight = targets[k], targets[1 - k]
    model = ast.unparse(it.args[k].func.value)  # type: ignore[attr-defined]
    weights = ast.unparse(it.args[1 - k])
    body = st.body[0]
    if isinstance(body, ast.Assign) and len(body.targets) == 1 and isinstance(body.value, ast.Name):
        target = ast.unparse(body.targets[0])
        if body.value.id == weight and target in (param, f"{param}.data"):
            return model, weights, "rebind" if target == param else "copy"
    if isinstance(body, ast.Expr) and isinstance(body.value, ast.Call):
        call = body.value
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "copy_"
            and ast.unparse(call.func.value) == param
            and len(call.args) == 1
            and ast.unparse(call.args[0]) == weight
        ):
            return model, weights, "copy"
    return None


def _model_calls(block: list[ast.stmt], start: int, model: str) -> Iterator[ast.Call]:
    """The calls ``model(...)`` in the statements of ``block`` after index ``start``, up to the next loading."""
    for st in block[start + 1 :]:
        if _loading(st) is not None:
            return
        yield from (n for n in ast.walk(st) if isinstance(n, ast.Call) and ast.unparse(n.func) == model)


def _rewrites(
    filename: str, lines: list[str], block: list[ast.stmt], at: int, model: str, weights: str, alias: str
) -> list[Edit] | None:
    """The loading statement ``block[at]`` deleted and each call of ``model`` after it run at ``weights``."""
    calls = list(_model_calls(block, at, model))
    if not calls or any(c.keywords or c.lineno != c.end_lineno for c in calls):
        return None
    st = block[at]
    edits = [Edit(filename, st.lineno, st.end_lineno or st.lineno, "")]
    by_line: dict[int, list[ast.Call]] = {}
    for c in calls:
        by_line.setdefault(c.lineno, []).append(c)
    params = f"dict(zip([name for name, _ in {model}.named_parameters()], {weights}))"
    for line, found in sorted(by_line.items()):
        raw = lines[line - 1].encode("utf-8")
        for c in sorted(found, key=lambda c: c.col_offset, reverse=True):
            if c.end_col_offset is None:
                return None
            args = ", ".join(ast.unparse(a) for a in c.args)
            new = f"{alias}.func.functional_call({model}, {params}, ({args}{',' if len(c.args) == 1 else ''}))"
            raw = raw[: c.col_offset] + new.encode("utf-8") + raw[c.end_col_offset :]
        edits.append(Edit(filename, line, line, raw.decode("utf-8")))
    return edits


def loaded_copies_fix(f: Failure, at_the_write: bool = False) -> Proposal | None:
    """The model run at the copies with ``torch.func.functional_call`` where the failing function (or its caller,
    when the loading is a helper's) loads them into it (NOTE [Copies loaded into a model]). ``at_the_write``: only
    when the failing line is the loading's own write (torch refused the copy into a parameter)."""
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    alias = torch_alias(f.namespace)
    if site is None or loc is None or tree is None or alias is None:
        return None
    lines = site.source.splitlines()
    fn = function_of(tree, loc.lineno)
    scope: ast.AST = fn if fn is not None else tree
    edits: list[Edit] = []
    how: set[str] = set()
    for block in (b for n in ast.walk(scope) for b in _blocks(n)):
        for k, st in enumerate(block):
            found = _loading(st)
            if found is None:
                continue
            inside = st.lineno <= loc.lineno <= (st.end_lineno or st.lineno)
            alone = (
                fn is not None and block is getattr(fn, "body", None) and all(s is st or _docstring(s) for s in block)
            )
            if inside and alone and fn is not None:
                helper = _through_caller(f, fn, found, alias)  # the loading is a helper of its own
                if helper is None:
                    return None
                edits += helper
            else:
                made = _rewrites(site.filename, lines, block, k, found[0], found[1], alias)
                if made is None:
                    return None
                edits += made
            how.add(found[2])
    if not edits or (
        at_the_write
        and not any(
            _loading(st) is not None and _holds(st, loc.lineno) for st in ast.walk(scope) if isinstance(st, ast.stmt)
        )
    ):
        return None
    return Proposal(
        Fix(
            summary=T(
                "run the model at the copies with torch.func.functional_call where it is called, instead of loading "
                "them into its parameters: {why}",
                why=T("assigning the loop's variable rebinds a name and leaves the parameter as it was")
                if how == {"rebind"}
                else T("a copy into a parameter writes a leaf, and the copies' graph is lost"),
            ),
            trains=T(
                "the loss reaches the copies and, through them, what they were computed from (the parameters the "
                "outer optimizer steps): the second-order path the loop means; the model's own parameters keep "
                "their values"
            ),
            edits=tuple(sorted(edits, key=lambda e: (e.filename, e.start))),
            keeps_forward=False,
        ),
        None,
        False,
    )


def _holds(st: ast.stmt, line: int) -> bool:
    return st.lineno <= line <= (st.end_lineno or st.lineno)


def _docstring(st: ast.stmt) -> bool:
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block


def _through_caller(f: Failure, fn: ast.AST, found: tuple[str, str, str], alias: str) -> list[Edit] | None:
    """The helper ``fn`` whose whole body is the loading: its call in the caller deleted, and the caller's calls of
    the model after it run at the copies (the helper's arguments read as the caller passed them)."""
    if not isinstance(fn, ast.FunctionDef) or not f.outer:
        return None
    names = [a.arg for a in fn.args.args]
    frame, line = f.outer[0]
    caller = read_site(frame)
    tree = parse(caller.source) if caller is not None else None
    st = statement_at(tree, line) if tree is not None else None
    call = st.value if isinstance(st, ast.Expr) else None
    if caller is None or st is None or not isinstance(call, ast.Call) or ast.unparse(call.func) != fn.name:
        return None
    passed = dict(zip(names, (ast.unparse(a) for a in call.args)))
    model, weights = passed.get(found[0]), passed.get(found[1])
    block = block_of(tree, st)
    if model is None or weights is None or block is None:
        return None
    return _rewrites(caller.filename, caller.source.splitlines(), block, block.index(st), model, weights, alias)
