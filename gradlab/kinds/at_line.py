"""The kinds fixed at the line that raised them: ``.numpy()`` of a tensor with a graph (GL0007), a backward of a
non-scalar (GL0005), ``detach_()`` of a view (GL0009), an input ``autograd.grad`` did not use (GL0006), a hook on a
tensor without grad (GL0011).

Each locator reads the statement of the user's line that raised the error (its tree:
:mod:`gradlab.source`) and rewrites only that statement: the fixes are edits of one line,
checked and judged like every fix. Where the reading is not sure (sum or mean of a
non-scalar loss), the fix says which one it takes and is not machine-applicable.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Failure, leaves_of
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of
from ..i18n import T
from ..judge import judged
from ..loop import site_intent
from ..rewrite import split_comment
from ..source import statement_at
from .family import BUILDERS

__all__ = ["LOCATORS"]


class _Statement:
    """The one-line statement of the user's line that raised, as text and tree (None when there is none)."""

    def __init__(self, f: Failure) -> None:
        self.text: str | None = None
        self.tree: ast.stmt | None = None
        self.comment = ""
        site, loc = f.site, f.location
        tree = site.tree() if site is not None else None
        if site is None or loc is None or tree is None or loc.filename != site.filename:
            return
        st = statement_at(tree, loc.lineno)
        if st is None or st.lineno != st.end_lineno:
            return
        body, self.comment = split_comment(site.text(loc.lineno).strip())
        parsed = ast.parse(body) if body else None
        if parsed is not None and len(parsed.body) == 1:
            self.text, self.tree = body, parsed.body[0]

    def edit(self, f: Failure, new: ast.AST | str) -> tuple[Edit, ...]:
        site, loc = f.site, f.location
        if site is None or loc is None:
            return ()
        text = new if isinstance(new, str) else ast.unparse(new)
        lines = text.split("\n")
        lines[0] += self.comment
        indent = indent_of(site, loc.lineno)
        return (Edit(site.filename, loc.lineno, loc.lineno, "\n".join(indent + line for line in lines)),)


def _judged(
    f: Failure, proposals: list[Proposal], claims: tuple[tuple[str, tuple[str, ...]], ...] | None = None
) -> tuple[Fix, ...]:
    """The proposals judged; a fix that keeps the training claims what the loop's losses train now."""
    kept = f.claims() if claims is None else claims
    fixes = judged(proposals, Context(site=f.site))
    return tuple(replace(fix, claims=kept or ()) if not fix.claims else fix for fix in fixes)


def _located(f: Failure, label: Callable[[], object]) -> Explanation:
    e = BUILDERS[f.kind](f.message)
    return replace(e, spans=(Span(f.location, label()),)) if f.location is not None else e  # type: ignore[arg-type]


def _numpy(f: Failure) -> Explanation:
    """``x.numpy()`` (or ``x.cpu().numpy()``) on a tensor with a graph: ``.detach()`` before it.

    The ``.numpy()`` calls are found on the statement's tree; ``.detach()`` goes right
    before each one on the raising line that has none on its receiver (the line may be one
    of a longer statement: a metric's lambda in a dict).
    """
    e = _located(f, lambda: T("here: .numpy() of a tensor that requires grad"))
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return e
    st = statement_at(tree, loc.lineno)
    text = site.text(loc.lineno)
    nodes = list(ast.walk(st)) if st is not None else []
    ends = sorted(
        {
            n.func.value.end_col_offset
            for n in nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "numpy"
            and n.func.value.end_lineno == loc.lineno
            and n.func.value.end_col_offset is not None
            and "detach()" not in ast.unparse(n.func.value)
        }
    )
    if not ends:
        return e
    for end in reversed(ends):  # col offsets are in bytes of the line's UTF-8
        raw = text.encode("utf-8")
        text = (raw[:end] + b".detach()" + raw[end:]).decode("utf-8")
    fix = Fix(
        summary=T("take the values out of the graph first: .detach() before .numpy()"),
        trains=T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
        edits=(Edit(site.filename, loc.lineno, loc.lineno, text),),
    )
    return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))


def _backward_call(st: ast.stmt) -> ast.Call | None:
    for n in ast.walk(st):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward":
            return n
    return None


def _non_scalar(f: Failure) -> Explanation:
    """``out.backward()`` on a tensor of several elements: backward its mean, or its sum."""
    e = _located(f, lambda: T("here: backward of a tensor with more than one element, without gradient="))
    line = _Statement(f)
    call = _backward_call(line.tree) if line.tree is not None else None
    if call is None or call.args or any(k.arg == "gradient" for k in call.keywords) or line.text is None:
        return e
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
        proposals.append(Proposal(replace(fix, claims=_own_claim(f, f"{wrapped}.{how}()", target)), None, False))
    return replace(e, fixes=(*_judged(f, proposals), *e.fixes))


def _own_claim(f: Failure, loss: str, tensor: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(loss, modules)``: the models the tensor named ``tensor`` reaches whose optimizer steps after this backward."""
    site, loc = f.site, f.location
    value = f.namespace.get(tensor)
    if site is None or loc is None or not isinstance(value, torch.Tensor) or value.grad_fn is None:
        return ()
    ids = leaves_of(value)
    reach = {m for m, held in site.modules.items() if held & ids}
    intent = site_intent(site, loc.lineno)
    return ((loss, tuple(sorted(reach & set(intent.trained) if intent.known else reach))),)


def _detach_view(f: Failure) -> Explanation:
    """``x.detach_()`` on a view: ``x = x.detach()``."""
    e = _located(f, lambda: T("here: detach_() of a view"))
    line = _Statement(f)
    st = line.tree
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute)):
        return e
    func = st.value.func
    if func.attr != "detach_" or not isinstance(func.value, (ast.Name, ast.Attribute)):
        return e
    new = ast.Assign([func.value], ast.Call(ast.Attribute(func.value, "detach", ast.Load()), [], []), lineno=1)
    fix = Fix(
        summary=T("detach out of place and keep the result: {name} = {name}.detach()", name=ast.unparse(func.value)),
        trains=T("the same as intended: the name holds the detached tensor, the view itself stays in its graph"),
        edits=line.edit(f, new),
    )
    return replace(e, fixes=(*_judged(f, [Proposal(fix, None, True)]), *e.fixes))


def _unused_input(f: Failure) -> Explanation:
    """``torch.autograd.grad(out, inputs)`` with an input ``out`` does not depend on: name it; ``allow_unused=True``."""
    line = _Statement(f)
    call = (
        next(
            (
                n
                for n in ast.walk(line.tree)
                if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("grad") and len(n.args) >= 2
            ),
            None,
        )
        if line.tree is not None
        else None
    )
    index = f.message.index
    name = None
    if call is not None and index is not None and isinstance(call.args[1], (ast.List, ast.Tuple)):
        elts = call.args[1].elts
        name = ast.unparse(elts[index]) if index < len(elts) else None
    e = _located(
        f,
        lambda: (
            T("here: {name} is not used by what is differentiated", name=name)
            if name
            else T("here: an input is not used by what is differentiated")
        ),
    )
    if call is None or any(k.arg == "allow_unused" for k in call.keywords):
        return e
    new = ast.Call(call.func, call.args, [*call.keywords, ast.keyword("allow_unused", ast.Constant(True))])

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            return new if node is call else self.generic_visit(node)

    assert line.tree is not None
    fix = Fix(
        summary=T("if that input really is unused here, pass allow_unused=True (its gradient is None)"),
        trains=T(
            "the same for the inputs the output uses; the unused one gets None, not zero: code that reads it must expect that"
        ),
        edits=line.edit(f, Swap().visit(line.tree)),
    )
    return replace(e, fixes=(*e.fixes[:1], *_judged(f, [Proposal(fix, None, False)]), *e.fixes[1:]))


def _hook(f: Failure) -> Explanation:
    """``t.register_hook(fn)`` on a tensor without grad: the hook only where grad flows."""
    e = _located(f, lambda: T("here: register_hook() on a tensor that does not require grad"))
    line = _Statement(f)
    st = line.tree
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute)):
        return e
    func = st.value.func
    if func.attr != "register_hook" or line.text is None:
        return e
    receiver = ast.unparse(func.value)
    guarded = f"if {receiver}.requires_grad:\n    {line.text}"
    fix = Fix(
        summary=T(
            "register the hook only when {name} requires grad (no gradient would ever reach it otherwise)",
            name=receiver,
        ),
        trains=T("unchanged: a hook only reads or rewrites gradients that flow"),
        edits=line.edit(f, guarded),
    )
    return replace(e, fixes=(*_judged(f, [Proposal(fix, None, False)]), *e.fixes))


#: The locator of each kind fixed at its line, by kind.
LOCATORS: dict[str, Callable[[Failure], Explanation]] = {
    "numpy_requires_grad": _numpy,
    "non_scalar_output": _non_scalar,
    "detach_view_in_place": _detach_view,
    "unused_input": _unused_input,
    "hook_no_grad": _hook,
}
