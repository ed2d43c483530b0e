"""A backward of a non-scalar (GL0005), located and fixed at the line that raised it: reduced where it is made,
or with the gradient of each element given; a guessed reduction is never machine-applicable."""

from __future__ import annotations

import ast
import linecache
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from ..edits import Edit
from ..evidence import Failure, leaves_of, modules_reached, resolve_dotted
from ..explanation import Explanation
from ..fixes import Fix, Proposal
from ..i18n import T
from ..location import Location
from ..loop import Site, site_intent
from ..source import preceding
from .statement import Statement, judged_here, located_here

__all__ = ["non_scalar_located"]


def _backward_call(st: ast.stmt) -> ast.Call | None:
    for n in ast.walk(st):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward":
            return n
    return None


_REDUCERS = frozenset({"mean", "sum", "item", "norm", "logsumexp", "max", "min", "amax", "amin", "prod", "trace"})


def _reduced(node: ast.expr) -> bool:
    """``node`` is one number by its form: a constant, a reduction (``x.mean()``, ``torch.sum(x)``), a loss
    function with its default reduction (``F.mse_loss(a, b)``, not ``reduction="none"``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _reduced(node.operand)
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name in _REDUCERS and not any(k.arg in ("dim", "axis") for k in node.keywords) and len(node.args) <= 1:
        return (isinstance(node.func, ast.Attribute) and not node.args) or (
            name in ("sum", "mean") and len(node.args) == 1
        )
    return (name.endswith("_loss") or name in ("cross_entropy", "nll_loss")) and not any(
        k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value == "none" for k in node.keywords
    )


def _reduction_of(tree: ast.AST, near: ast.AST | None) -> str:
    return _reduction_read(tree, near)[0]


def _reduction_read(tree: ast.AST, near: ast.AST | None) -> tuple[str, bool]:
    """The reduction the code uses for its losses: the one of the terms beside the unreduced one, else the
    file's most common (``.sum()``/``reduction="sum"`` against ``.mean()``), ``sum`` for a stack of per-step
    losses (REINFORCE's ``torch.stack(...)``), else ``mean``."""

    def count(node: ast.AST) -> dict[str, int]:
        """Reductions that make a loss: the outermost ones of a value or of its terms, without a dim; none of an
        evaluation (a ``no_grad`` block or function: metrics, whatever their reduction, train nothing)."""
        found = {"mean": 0, "sum": 0}
        evaluating = _under_no_grad(node)
        values = [
            n.value
            for n in ast.walk(node)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.Return)) and n.value and id(n) not in evaluating
        ]
        if isinstance(node, ast.expr):
            values.append(node)
        averaged = {  # torch.sum(x) / x.size(0), (l * mask).sum() / mask.sum(): a mean written out
            id(n.left)
            for value in values
            for n in ast.walk(value)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and (_counts_items(n.right) or _a_sum(n.right))
        }
        for value in values:
            for term in _operands(value, divisors=False):
                while isinstance(term, ast.UnaryOp):
                    term = term.operand
                if not isinstance(term, ast.Call) or any(k.arg in ("dim", "axis") for k in term.keywords):
                    continue
                name = term.func.attr if isinstance(term.func, ast.Attribute) else getattr(term.func, "id", "")
                method = isinstance(term.func, ast.Attribute) and not term.args and name in found
                function = name in found and len(term.args) == 1 and not isinstance(term.func, ast.Attribute)
                torch_call = (  # torch.sum(x), not x.sum(-1)
                    name in found
                    and isinstance(term.func, ast.Attribute)
                    and isinstance(term.func.value, ast.Name)
                    and term.func.value.id == "torch"
                    and len(term.args) == 1
                )
                if method or function or torch_call:
                    found["mean" if id(term) in averaged else name] += 1
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and id(n) not in evaluating:
                for k in n.keywords:
                    if k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value in found:
                        found[k.value.value] += 1
                if _default_mean(n) and not _constructor(n):
                    found["mean"] += 1
        # a criterion made with its default reduction (ce = nn.CrossEntropyLoss()) counts where training calls it
        for n in ast.walk(node):
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and len(n.targets) == 1):
                continue
            if _default_mean(n.value) and _constructor(n.value):
                name = ast.unparse(n.targets[0])
                if any(
                    isinstance(c, ast.Call) and ast.unparse(c.func) == name and id(c) not in evaluating
                    for c in ast.walk(node)
                ):
                    found["mean"] += 1
        return found

    if near is not None:
        here = count(near)
        if here["mean"] != here["sum"]:
            return ("mean" if here["mean"] > here["sum"] else "sum"), True
        if any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith(("stack", "cat")) for n in ast.walk(near)):
            return "sum", True
    total = count(tree)
    if total["sum"] == total["mean"]:
        return "mean", False  # nothing says which: the mean, by default
    return ("sum" if total["sum"] > total["mean"] else "mean"), True


def _counts_items(node: ast.expr) -> bool:
    """``node`` counts a batch's items: ``x.size(0)``, ``x.shape[0]``, ``len(x)``, ``x.numel()``."""
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        return name in ("size", "numel", "nelement") if isinstance(node.func, ast.Attribute) else name == "len"
    if isinstance(node, ast.Subscript):  # x.shape[0], x.size()[0]
        inner = node.value
        return (isinstance(inner, ast.Attribute) and inner.attr == "shape") or (
            isinstance(inner, ast.Call) and _counts_items(inner)
        )
    return False


def _operands(node: ast.expr, divisors: bool = True) -> list[ast.expr]:
    """The terms and factors of an arithmetic expression (``a + b * c`` -> a, b, c); without the divisors when
    ``divisors`` is False (``g / g.sum()`` normalises, it reduces no loss)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        right = _operands(node.right, divisors) if divisors or not isinstance(node.op, ast.Div) else []
        return [*_operands(node.left, divisors), *right]
    if isinstance(node, ast.UnaryOp):
        return _operands(node.operand, divisors)
    return [node]


def _a_sum(node: ast.expr) -> bool:
    """``mask.sum()`` or ``torch.sum(w)`` without a dim: the total a weighted mean divides by."""
    if not isinstance(node, ast.Call) or any(k.arg in ("dim", "axis") for k in node.keywords):
        return False
    name = ast.unparse(node.func)
    return (name.endswith(".sum") and not node.args) or (name in ("torch.sum", "th.sum") and len(node.args) == 1)


def _under_no_grad(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside ``with torch.no_grad():`` (or ``inference_mode``) blocks and functions decorated
    with either."""
    inside: set[int] = set()
    for n in ast.walk(tree):
        off = False
        if isinstance(n, (ast.With, ast.AsyncWith)):
            off = any(
                "no_grad" in ast.unparse(i.context_expr) or "inference_mode" in ast.unparse(i.context_expr)
                for i in n.items
            )
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            off = any("no_grad" in ast.unparse(d) or "inference_mode" in ast.unparse(d) for d in n.decorator_list)
        if off:
            inside |= {id(m) for m in ast.walk(n)}
    return inside


def _constructor(call: ast.Call) -> bool:
    """``nn.MSELoss()``: a criterion made, not called."""
    return ast.unparse(call.func).rsplit(".", 1)[-1].endswith("Loss")


def _default_mean(call: ast.Call) -> bool:
    """A torch loss made or called with its default reduction, the mean: ``nn.MSELoss()``, ``F.cross_entropy(a, b)``
    (no ``reduction=``)."""
    if any(k.arg in ("reduction", "size_average", "reduce") for k in call.keywords):
        return False
    name = ast.unparse(call.func)
    last = name.rsplit(".", 1)[-1]
    if last.endswith("Loss") and name.startswith(("nn.", "torch.nn.")):
        return True
    functional = name.startswith(("F.", "torch.nn.functional.", "nn.functional."))
    return functional and (last.endswith("_loss") or last in ("cross_entropy", "binary_cross_entropy", "kl_div"))


def _scalar(node: ast.expr, namespace: dict[str, object]) -> bool | None:
    """Whether ``node`` is one number: by its form, or by the frame's value of a name (None: unknown)."""
    if _reduced(node):
        return True
    if isinstance(node, (ast.Name, ast.Attribute)):
        value = namespace.get(ast.unparse(node))
        if isinstance(value, torch.Tensor):
            return value.numel() == 1
        if isinstance(value, (int, float)):
            return True
    return None


def _reduce_where_made(f: Failure, name: str) -> tuple[int, str, str, bool | None] | None:
    """Where the non-scalar loss ``name`` became several numbers, and that statement with the term reduced:
    ``(line, new text, reduction)``. Followed through the loss's own statements of the failing function: the
    term without a reduction beside terms that are one number each (``loss_c = critic(fake) -
    critic(real).mean()``), else the whole value of the statement that binds it (``recon = (x_hat - x) ** 2``),
    so that every later use (a ``.item()`` for the log) gets one number too. The last element: True when the
    reduction is read from the code's other terms, False when it is a guess (the mean), None when the code's own
    reduction is moved from a factor to the whole product (NOTE [A reduction on a factor])."""
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None:
        return None
    seen: set[str] = set()
    line = loc.lineno
    while name not in seen:
        seen.add(name)
        binding = [
            st
            for st in preceding(tree, line)
            if isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id == name
        ]
        if not binding:
            return _reduce_returned(tree, preceding(tree, line), name, site, f.namespace)
        st = binding[-1]
        if st.lineno != st.end_lineno or not site.holds(st.lineno):
            return None
        value = st.value
        moved = _reduction_moved_out(value, f.namespace)
        if moved is not None:  # a reduction on a factor of several numbers: (a * w.mean()) meant (a * w).mean()
            text = site.text(st.lineno)
            start, end = value.col_offset, value.end_col_offset or 0
            return st.lineno, text[:start] + moved[0] + text[end:], moved[1], None
        terms = _operands(value)
        kinds = [_scalar(t, f.namespace) for t in terms]
        loose = [t for t, k in zip(terms, kinds) if k is not True]
        if len(terms) > 1 and len(loose) == 1 and not isinstance(loose[0], ast.Constant):
            term = loose[0]
            if (
                isinstance(term, ast.Name)
                and kinds[terms.index(term)] is False
                and _used_as_number(tree, term.id, loc.lineno)
            ):
                # read as one number later too (kl.item() for the log): reduced where it is made
                inner = _reduce_where_made(replace(f, location=Location(site.filename, st.lineno)), term.id)
                if inner is not None:
                    return inner
            how, known = _reduction_read(tree, value)
            text = site.text(st.lineno)
            start, end = term.col_offset, term.end_col_offset or 0
            wrapped = (
                ast.unparse(term)
                if isinstance(term, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                else f"({ast.unparse(term)})"
            )
            return st.lineno, text[:start] + f"{wrapped}.{how}()" + text[end:], how, known
        how, known = _reduction_read(tree, value)
        text = site.text(st.lineno)
        weighted = _weighted(value, f.namespace) if not known else None  # NOTE [A per-element loss times weights]
        if weighted is not None:
            loss_term, weights = weighted
            indent = text[: len(text) - len(text.lstrip())]
            lines = []
            fresh = next(n for n in ("weights", "loss_weights", "element_weights", "w_") if n not in f.namespace)
            if not isinstance(weights, ast.Name):
                lines.append(f"{indent}{fresh} = {ast.unparse(weights)}")
            w = weights.id if isinstance(weights, ast.Name) else fresh
            lines.append(f"{indent}{name} = ({ast.unparse(loss_term)} * {w}).sum() / {w}.sum()")
            return st.lineno, "\n".join(lines), "weighted mean", True
        start, end = value.col_offset, value.end_col_offset or 0
        while text[start - 1 : start] == "(" and text[end : end + 1] == ")":  # (r**2): its own parentheses
            start, end = start - 1, end + 1
        simple = isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) or text[start] == "("
        inner_text = text[start:end]
        return (
            st.lineno,
            text[:start] + (f"{inner_text}.{how}()" if simple else f"({inner_text}).{how}()") + text[end:],
            how,
            known,
        )
    return None


# NOTE [A per-element loss times weights]
# ``per_donor = bce(logits, y, reduction="none"); loss = per_donor * gift_weights(amount)``, backwarded as it is: a
# loss of one number per element, each weighted. torch's own losses reduce a weighted loss (``weight=``,
# ``reduction="mean"``) by the sum of the weighted terms over the sum of the weights; a plain mean would scale the
# step by the weights' average. With no other term of the code to read the reduction from, the weighted mean is the
# one the code's shape names; the weights get a name of their own when they are a computation (read twice).
def _weighted(value: ast.expr, namespace: dict[str, object]) -> tuple[ast.expr, ast.expr] | None:
    """``a * w`` (either order) where ``a`` is a name bound to a tensor of several numbers with a graph and ``w``
    reads no tensor that requires grad and no module: (a, w); None otherwise (NOTE [A per-element loss times
    weights])."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)):
        return None
    for loss_term, weights in ((value.left, value.right), (value.right, value.left)):
        t = namespace.get(loss_term.id) if isinstance(loss_term, ast.Name) else None
        if not (isinstance(t, torch.Tensor) and t.grad_fn is not None and t.numel() > 1):
            continue
        read = [namespace.get(n.id) for n in ast.walk(weights) if isinstance(n, ast.Name)]
        if isinstance(weights, ast.Constant) or any(
            (isinstance(v, torch.Tensor) and v.requires_grad) or isinstance(v, torch.nn.Module) for v in read
        ):
            return None
        return loss_term, weights
    return None


def _reduction_moved_out(value: ast.expr, namespace: dict[str, object]) -> tuple[str, str] | None:
    """``a * w.mean()`` (a product or quotient of two factors, the reduction on a factor that is itself several
    numbers, the other factor several numbers too) as ``(a * w).mean()``, and the reduction: a weight or a mask
    reduced before it weighs (NOTE [A reduction on a factor])."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Div))):
        return None
    for reduced, other in ((value.right, value.left), (value.left, value.right)):
        if not (
            isinstance(reduced, ast.Call)
            and isinstance(reduced.func, ast.Attribute)
            and reduced.func.attr in ("mean", "sum")
            and not reduced.args
            and not reduced.keywords
        ):
            continue
        inner = reduced.func.value
        if _scalar(inner, namespace) is not False or _scalar(other, namespace) is True or _reduced(other):
            continue
        parts = (other, inner) if reduced is value.right else (inner, other)
        product = ast.BinOp(parts[0], value.op, parts[1])
        return f"({ast.unparse(product)}).{reduced.func.attr}()", reduced.func.attr
    return None


# NOTE [A reduction on a factor]
# loss = td_error.pow(2) * weights.mean() backwarded: several numbers, because the reduction sits on the
# importance weights (a factor that is itself several numbers), not on the product. Reducing the other factor
# too (td_error.pow(2).mean() * weights.mean()) gives one number, but the mean of a product is not the product
# of the means: each sample's weight no longer weighs its own error. With a reduction on one factor of a
# product or quotient, whose inside is several numbers (read from the frame), the reading is the reduction of
# the whole product, (td_error.pow(2) * weights).mean(): a weighted loss, a masked loss. A sum or difference
# keeps the rule of the loose term (critic(fake) - critic(real).mean(): each term is a mean of its own).


def _used_as_number(tree: ast.Module, name: str, line: int) -> bool:
    """``name`` is read as one number after ``line``: ``name.item()``, ``float(name)``, ``f"{name}"``."""
    for n in ast.walk(tree):
        if getattr(n, "lineno", 0) <= line:
            continue
        item = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "item"
        if item and ast.unparse(n.func.value) == name:  # type: ignore[attr-defined]
            return True
        number = isinstance(n, ast.Call) and ast.unparse(n.func) in ("float", "int") and bool(n.args)
        if number and ast.unparse(n.args[0]) == name:  # type: ignore[attr-defined]
            return True
        if isinstance(n, ast.FormattedValue) and isinstance(n.value, ast.Name) and n.value.id == name:
            return True
    return False


def _reduce_returned(
    tree: ast.Module, before: list[ast.stmt], name: str, site: Site, namespace: Mapping[str, Any] | None = None
) -> tuple[int, str, str, bool] | None:
    """``a, b = helper(...)`` where ``helper`` (a function of the file, or a module of the frame whose class's
    ``forward`` the file defines: ``self.loss_fn(...)``) ends in ``return x, y``: the element ``name`` receives,
    reduced in that return statement (``return recon, (beta * kl).sum()``)."""
    binding = [
        st
        for st in before
        if isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Tuple)
        and any(isinstance(e, ast.Name) and e.id == name for e in st.targets[0].elts)
        and isinstance(st.value, ast.Call)
    ]
    if not binding:
        return None
    st = binding[-1]
    assert isinstance(st.targets[0], ast.Tuple) and isinstance(st.value, ast.Call)
    index = next(k for k, e in enumerate(st.targets[0].elts) if isinstance(e, ast.Name) and e.id == name)
    callee = ast.unparse(st.value.func).rsplit(".", 1)[-1]
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == callee]
    module = resolve_dotted(ast.unparse(st.value.func), namespace) if namespace is not None and not defs else None
    if isinstance(module, torch.nn.Module):  # a loss module called: its class's forward
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == type(module).__name__]
        defs = [m for c in classes for m in c.body if isinstance(m, ast.FunctionDef) and m.name == "forward"]
    if len(defs) != 1:
        return None
    returns = [r for r in ast.walk(defs[0]) if isinstance(r, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Tuple):
        return None
    ret = returns[0]
    elts = ret.value.elts  # type: ignore[union-attr]
    if len(elts) != len(st.targets[0].elts) or ret.lineno != ret.end_lineno or _reduced(elts[index]):
        return None
    element = elts[index]
    how, known = _reduction_read(tree, defs[0])
    text = (
        site.text(ret.lineno) if site.holds(ret.lineno) else linecache.getline(site.filename, ret.lineno).rstrip("\n")
    )
    start, end = element.col_offset, element.end_col_offset or 0
    simple = isinstance(element, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    part = text[start:end]
    return ret.lineno, text[:start] + (f"{part}.{how}()" if simple else f"({part}).{how}()") + text[end:], how, known


def _non_scalar(f: Failure) -> Explanation:
    """``out.backward()`` on a tensor of several elements: reduce it where it became several numbers, with the
    reduction the code uses; or backward its mean, or its sum; ``grad_outputs=`` for ``autograd.grad``."""
    e = located_here(f, lambda: T("here: backward of a tensor with more than one element, without gradient="))
    line = Statement(f)
    grads = _grad_outputs(f, line)
    if grads is not None:
        return replace(e, fixes=(*judged_here(f, [grads]), *e.fixes))
    call = _backward_call(line.tree) if line.tree is not None else None
    if call is None or call.args or any(k.arg == "gradient" for k in call.keywords) or line.text is None:
        return e
    assert isinstance(call.func, ast.Attribute)
    loss = call.func.value.id if isinstance(call.func.value, ast.Name) else None
    where = _reduce_where_made(f, loss) if loss is not None else None
    made: list[Proposal] = []
    if where is not None and f.site is not None:
        at, text, how, known = where
        made.append(
            Proposal(
                Fix(
                    keeps_forward=False,
                    summary=T(
                        "take the {how} of the whole product at line {line}, not of one of its factors: {code}",
                        how=how,
                        line=at,
                        code=text.strip(),
                    )
                    if known is None
                    else T(
                        "reduce it where it is computed (line {line}) with the weighted mean, as torch's losses reduce "
                        "a loss with weight=: the sum of the weighted terms over the sum of the weights; {loss} is "
                        "then one number everywhere it is used",
                        line=at,
                        loss=loss,
                    )
                    if how == "weighted mean"
                    else T(
                        "reduce the term that has several numbers where it is computed (line {line}), with the "
                        "{how} your code uses for its other terms: {loss} is then one number everywhere it is used",
                        line=at,
                        how=how,
                        loss=loss,
                    )
                    if known
                    else T(
                        "reduce it where it is computed (line {line}), with its mean (no other term says which; "
                        "the sum makes the step grow with the number of elements): {loss} is then one number "
                        "everywhere it is used",
                        line=at,
                        loss=loss,
                    ),
                    trains=T("every parameter {loss} reaches, by the gradient of that {how}", loss=loss, how=how),
                    edits=(Edit(f.site.filename, at, at, text),),
                    claims=_own_claim(f, loss, loss) if loss else (),
                ),
                None,
                False,
            )
        )
    assert isinstance(call.func, ast.Attribute)
    target = ast.get_source_segment(line.text, call.func.value)
    if target is None:
        return e
    proposals = []
    for how, alternative in (("mean", False), ("sum", True)):
        start, end = call.func.value.col_offset, call.func.value.end_col_offset or 0
        wrapped = (
            target if isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({target})"
        )
        new = line.text[:start] + f"{wrapped}.{how}()" + line.text[end:]
        fix = Fix(
            alternative=alternative,
            keeps_forward=False,  # what is backwarded is another tensor (one number)
            summary=T("backward the {how} of {target} (one number)", how=how, target=target),
            trains=T(
                "every parameter {target} reaches, by the gradient of its {how}: {note}",
                target=target,
                how=how,
                note=T("the step size does not depend on the batch size")
                if how == "mean"
                else T("the step size grows with the number of elements"),
            ),
            edits=line.edit(f, new),
        )
        if made:
            fix = replace(fix, alternative=True)
        proposals.append(Proposal(replace(fix, claims=_own_claim(f, f"{wrapped}.{how}()", target)), None, False))
    return replace(e, fixes=(*judged_here(f, [*made, *proposals]), *e.fixes))


def _grad_outputs(f: Failure, line: Statement) -> Proposal | None:
    """``torch.autograd.grad(u, x)`` of a non-scalar ``u``: ``grad_outputs=torch.ones_like(u)``, which is the
    gradient of ``u.sum()``: the derivative of each element of ``u`` by its own input (a PINN's du/dx)."""
    if line.tree is None or line.text is None:
        return None
    call = next(
        (
            n
            for n in ast.walk(line.tree)
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("autograd.grad") and n.args
        ),
        None,
    )
    if call is None or any(k.arg == "grad_outputs" for k in call.keywords) or len(call.args) > 2:
        return None
    alias = ast.unparse(call.func).split(".")[0]
    output = ast.unparse(call.args[0])
    end = (call.end_col_offset or 0) - 1  # the closing parenthesis
    new = line.text[:end] + f", grad_outputs={alias}.ones_like({output})" + line.text[end:]
    return Proposal(
        Fix(
            summary=T(
                "pass grad_outputs={alias}.ones_like({output}): the gradient of each element of {output} by its "
                "own input, as {output}.sum() would give",
                alias=alias,
                output=output,
            ),
            trains=T("the same derivative as of {output}.sum(), with {output} unchanged", output=output),
            edits=line.edit(f, new),
        ),
        None,
        True,
    )


def _own_claim(f: Failure, loss: str, tensor: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(loss, modules)``: the models the tensor named ``tensor`` reaches whose optimizer steps after this backward."""
    site, loc = f.site, f.location
    value = f.namespace.get(tensor)
    if site is None or loc is None or not isinstance(value, torch.Tensor) or value.grad_fn is None:
        return ()
    reach = modules_reached(site, leaves_of(value))
    intent = site_intent(site, loc.lineno)
    return ((loss, tuple(sorted(reach & set(intent.trained) if intent.known else reach))),)


non_scalar_located = _non_scalar
