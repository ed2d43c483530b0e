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

from ..evidence import Failure
from ..explanation import Explanation
from ..fixes import Fix, Proposal
from ..i18n import T
from ..source import function_of
from .non_scalar import non_scalar_located
from .numpy_values import numpy_located
from .statement import Statement, judged_here, located_here

__all__ = ["LOCATORS"]


def _detach_view(f: Failure) -> Explanation:
    """``x.detach_()`` on a view: ``x = x.detach()``."""
    e = located_here(f, lambda: T("here: detach_() of a view"))
    line = Statement(f)
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
    return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *e.fixes))


def _unused_input(f: Failure) -> Explanation:
    """``torch.autograd.grad(out, inputs)`` with an input ``out`` does not depend on: name it; ``allow_unused=True``."""
    line = Statement(f)
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
    e = located_here(
        f,
        lambda: (
            T("here: {name} is not used by what is differentiated", name=name)
            if name
            else T("here: an input is not used by what is differentiated")
        ),
    )
    rebuilt = _rebuilt_output(f) or _detached_before(f, call)
    if rebuilt:
        # the output was rebuilt from a number (torch.tensor(loss.item(), requires_grad=True)): no input is used;
        # or a .detach() on its path cuts off the model that holds the inputs (NOTE [An input cut off by a detach])
        e = replace(e, fixes=(*rebuilt, *e.fixes))
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
    return replace(e, fixes=(*e.fixes[:1], *judged_here(f, [Proposal(fix, None, False)]), *e.fixes[1:]))


def _detached_before(f: Failure, call: ast.Call | None) -> tuple[Fix, ...]:
    """The fix that drops a ``.detach()`` (or ``.data``) on the differentiated output's path whose receiver calls
    a module the inputs belong to (NOTE [An input cut off by a detach])."""
    from .no_grad_fn import _fixes, path_cut

    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or call is None or loc.filename != site.filename:
        return ()
    inputs = ast.unparse(call.args[1])
    owners = {
        ast.unparse(n.func.value)
        for n in ast.walk(call.args[1])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _PARAMETER_LISTS
    } or {inputs}
    cut = path_cut(tree, loc.lineno)
    if cut.left is None or cut.rebuilt is not None:
        return ()
    called = {ast.unparse(n.func) for n in ast.walk(cut.left) if isinstance(n, ast.Call)}
    if not any(c == o or c.startswith(o + ".") for c in called for o in owners):
        return ()
    found = [fix for fix in _fixes(f, cut, loc.lineno) if fix.edits][:1]
    function = function_of(tree, loc.lineno)
    backwards = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(function if function is not None else tree)
    )
    if backwards or any(k.arg == "create_graph" for k in call.keywords):
        # the detached value may feed a loss this function backwards (or a penalty on the gradient): dropping the
        # detach changes what that loss trains, and the fix says what it trains as any cut's fix does
        return tuple(replace(fix, applicability="maybe-incorrect") if fix.code else fix for fix in found)
    # autograd.grad writes no .grad: the fix changes the values it returns, not what the loop's losses train
    return tuple(
        replace(
            fix,
            trains=T(
                "torch.autograd.grad then returns a gradient for every input of {inputs}, and writes no .grad: what "
                "the loop's losses train stays as it is",
                inputs=inputs,
            ),
            claims=f.claims(),
            applicability="machine-applicable",
        )
        for fix in found
    )


#: The methods that list a module's parameters.
_PARAMETER_LISTS = frozenset({"parameters", "named_parameters"})

# NOTE [An input cut off by a detach]
# torch.autograd.grad(out, inputs) finds an input unused: the output does not
# depend on it. When the output's own path (the statements that build it, a list
# of parts appended to included) takes a module's result out of the graph with
# .detach() or .data, and that module is the one the inputs are the parameters of
# (the inputs are self.model.parameters(), the detached value self.model.backbone(x)),
# the cut is the reason: an EWC Fisher estimate that detached the backbone's
# features to save memory, a gradient penalty on detached activations. Dropping
# that .detach() lets every input reach the output. Offered first, before
# allow_unused=True (which would hide the cut and leave those gradients None).


def _rebuilt_output(f: Failure) -> tuple[Fix, ...]:
    """The fixes of a cut on the differentiated output's path (GL0003's rule, NOTE [The cut on the loss's path])
    when the path rebuilt it from a number: a leaf that requires grad, so no input reaches it."""
    from .no_grad_fn import _fixes, path_cut

    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return ()
    cut = path_cut(tree, loc.lineno)
    if cut.rebuilt is None:
        return ()
    return tuple(fix for fix in _fixes(f, cut, loc.lineno) if fix.edits)


def _hook(f: Failure) -> Explanation:
    """``t.register_hook(fn)`` on a tensor without grad: the hook only where grad flows."""
    e = located_here(f, lambda: T("here: register_hook() on a tensor that does not require grad"))
    line = Statement(f)
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
    return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, False)]), *e.fixes))


#: The locator of each kind fixed at its line, by kind.
LOCATORS: dict[str, Callable[[Failure], Explanation]] = {
    "numpy_requires_grad": numpy_located,
    "non_scalar_output": non_scalar_located,
    "detach_view_in_place": _detach_view,
    "unused_input": _unused_input,
    "hook_no_grad": _hook,
}
