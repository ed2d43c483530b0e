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
import copy
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch

from ..claims import failure_claims
from ..edits import Edit
from ..evidence import Failure, resolve_name
from ..explanation import Explanation
from ..fixes import Fix, Proposal, source_of
from ..graph import walk
from ..i18n import T
from ..loop import read_site
from ..source import function_of
from .loaded_copies import loaded_copies_fix
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
                if isinstance(n, ast.Call)
                and ast.unparse(n.func).endswith("grad")
                and (len(n.args) >= 2 or any(k.arg == "inputs" for k in n.keywords))
            ),
            None,
        )
        if line.tree is not None
        else None
    )
    index = f.message.index
    name = None
    inputs = _inputs_of(call)
    if inputs is not None and index is not None and isinstance(inputs, (ast.List, ast.Tuple)):
        elts = inputs.elts
        name = ast.unparse(elts[index]) if index < len(elts) else None
    elif isinstance(inputs, ast.Name):
        name = inputs.id
    e = located_here(
        f,
        lambda: (
            T("here: {name} is not used by what is differentiated", name=name)
            if name
            else T("here: an input is not used by what is differentiated")
        ),
    )
    rebuilt = (
        _rebuilt_output(f)
        or _detached_before(f, call)
        or _requires_grad_too_late(f, call)
        or _computed_anew(f, line, call, inputs, index)
    )
    loaded = loaded_copies_fix(f)  # NOTE [Copies loaded into a model]: the loop that "loads" them rebinds a name
    if loaded is not None:
        return replace(e, fixes=(*judged_here(f, [loaded]), *e.fixes))
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
    zeros = _zeros_for_unused_parameters(f, line, call, inputs)  # before the swap below rewrites the tree
    fix = Fix(
        summary=T("if that input really is unused here, pass allow_unused=True (its gradient is None)"),
        trains=T(
            "the same for the inputs the output uses; the unused one gets None, not zero: code that reads it must expect that"
        ),
        edits=line.edit(f, Swap().visit(line.tree)),
    )
    if zeros is not None and not rebuilt:  # NOTE [Parameters a forward does not use]
        return replace(e, fixes=judged_here(f, [Proposal(zeros, None, True), Proposal(fix, None, False)]) + e.fixes)
    return replace(e, fixes=(*e.fixes[:1], *judged_here(f, [Proposal(fix, None, False)]), *e.fixes[1:]))


# NOTE [An input computed anew in the call]
# torch.autograd.grad(meta_loss, [syn_cells, distilled_targets()]) lists, as an input, a tensor the call's own
# argument computes (a helper that turns learned label logits into soft targets): a fresh tensor the output was
# never computed from, so torch finds it unused. What the output does depend on is the leaf that tensor is computed
# from (the logits), and the code that reads the gradient updates that leaf (syn_label_logits.sub_(lr * g)). The fix
# differentiates by that leaf: offered when the listed expression (or the body of the file's function it calls)
# reads exactly one leaf that requires grad and the output's graph reaches it. The same for one input written as a
# computation (GradNorm's autograd.grad(L1, param[0].clone()): param[0], an item of a list read by its index). It is a reading (the gradient is
# with respect to the leaf, not to the tensor computed from it) and says so.
def _computed_anew(
    f: Failure, line: Statement, call: ast.Call | None, inputs: ast.expr | None, index: int | None
) -> tuple[Fix, ...]:
    """The listed input at ``index`` replaced by the one leaf it is computed from (NOTE [An input computed anew in
    the call])."""
    site = f.site
    tree = site.tree() if site is not None else None
    if call is None or tree is None or inputs is None or not call.args:
        return ()
    if isinstance(inputs, (ast.List, ast.Tuple)):
        if index is None or index >= len(inputs.elts):
            return ()
        given = inputs.elts[index]
    else:  # one input, written as a computation (param[0].clone())
        given = inputs
    if not isinstance(given, (ast.Call, ast.BinOp, ast.UnaryOp)):
        return ()
    read = {ast.unparse(n) for n in ast.walk(given) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))}
    for n in ast.walk(given):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            helper = next((d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name == n.func.id), None)
            if helper is not None and not helper.args.args:  # a helper of no arguments: the globals it reads
                read |= {x.id for x in ast.walk(helper) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)}
    output = _resolved(call.args[0], f.namespace)
    if not isinstance(output, torch.Tensor) or output.grad_fn is None:
        return ()
    reached = {id(v) for fn in walk([output.grad_fn]) if (v := getattr(fn, "variable", None)) is not None}
    leaves = sorted(
        name
        for name in read
        if isinstance(t := _resolved(ast.parse(name, mode="eval").body, f.namespace), torch.Tensor)
        and t.is_leaf
        and t.requires_grad
        and id(t) in reached
    )
    if len(leaves) != 1:
        return ()
    leaf = leaves[0]
    swapped = ast.parse(leaf, mode="eval").body
    where = (given.lineno, given.col_offset, given.end_col_offset)

    class Swap(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if (
                getattr(node, "lineno", None),
                getattr(node, "col_offset", None),
                getattr(node, "end_col_offset", None),
            ) == where:
                return swapped
            visited: ast.AST = super().visit(node)
            return visited

    assert line.tree is not None
    copied = Swap().visit(copy.deepcopy(line.tree))  # the tree stays as it is for the fixes that follow
    edits = line.edit(f, copied)
    if not edits:
        return ()
    return (
        Fix(
            summary=T(
                "differentiate by {leaf}, which {given} is computed from: {given} is computed anew in the call, after "
                "the output, so the output does not depend on it",
                leaf=leaf,
                given=ast.unparse(given),
            ),
            trains=T(
                "the gradient returned is with respect to {leaf}, which the output depends on (not to the tensor "
                "computed from it); torch.autograd.grad writes no .grad, so what the loop's losses train stays as it is",
                leaf=leaf,
            ),
            code="\n".join(textwrap.dedent(e.text) for e in edits if e.text),
            edits=edits,
            claims=failure_claims(f),
            applicability="maybe-incorrect",
        ),
    )


def _resolved(expr: ast.expr, namespace: Mapping[str, Any]) -> object:
    """The frame's value of a name, an attribute, or an item of a list or tuple by a constant or a name's integer
    (``param[0]``, ``weighted[i]``: a tensor indexed stands for the whole tensor); None otherwise. Calls nothing."""
    if isinstance(expr, (ast.Name, ast.Attribute)):
        return resolve_name(expr, namespace)
    if isinstance(expr, ast.Subscript):
        base = _resolved(expr.value, namespace)
        if isinstance(base, torch.Tensor):
            return base
        key = expr.slice.value if isinstance(expr.slice, ast.Constant) else _resolved(expr.slice, namespace)
        if isinstance(base, (list, tuple)) and type(key) is int and -len(base) <= key < len(base):
            return base[key]
    return None


# NOTE [Parameters a forward does not use]
# ``torch.autograd.grad(loss, model.parameters(), create_graph=True)`` in a look-ahead step
# (MAML, Meta-Weight-Net) differentiates by every parameter of the model, and a model often
# holds one its forward does not call: a head only another method uses. torch raises for
# it. The code then reads each gradient (``p - lr * g``), so ``allow_unused=True`` alone
# hands it a None it cannot subtract. With ``materialize_grads=True`` too, torch returns
# zeros for the unused parameters: the look-ahead leaves them as they are, every used
# parameter's gradient is the same, and the code that reads the gradients runs as
# written. Offered first when the inputs are a model's ``parameters()``, or the values of a
# dict (or the items of a list) that holds only parameters (``dict(model.named_parameters())``
# handed to a functional forward), and the installed torch has ``materialize_grads``.
def _zeros_for_unused_parameters(f: Failure, line: Statement, call: ast.Call, inputs: ast.expr | None) -> Fix | None:
    """``allow_unused=True, materialize_grads=True`` on a ``torch.autograd.grad`` by a model's parameters (NOTE
    [Parameters a forward does not use]); None for other inputs, or a torch without ``materialize_grads``."""
    import inspect

    import torch

    if "materialize_grads" not in inspect.signature(torch.autograd.grad).parameters:
        return None
    if any(k.arg == "materialize_grads" for k in call.keywords):
        return None
    named = (
        inputs.args[0] if isinstance(inputs, ast.Call) and isinstance(inputs.func, ast.Name) and inputs.args else inputs
    )
    if isinstance(named, ast.Call) and isinstance(named.func, ast.Attribute) and named.func.attr == "parameters":
        owner = ast.unparse(named.func.value)
    elif named is not None and _parameters_held(named, f):  # list(params.values()) of named_parameters()
        func = named.func if isinstance(named, ast.Call) else None
        owner = ast.unparse(func.value if isinstance(func, ast.Attribute) else named)
    else:
        return None
    flags = [ast.keyword("allow_unused", ast.Constant(True)), ast.keyword("materialize_grads", ast.Constant(True))]
    both = ast.Call(call.func, call.args, [*call.keywords, *flags])

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            return both if node is call else self.generic_visit(node)

    assert line.tree is not None
    return Fix(
        keeps_forward=True,
        summary=T(
            "pass allow_unused=True, materialize_grads=True: {model} has parameters the differentiated output does "
            "not use, and their gradients are then zeros",
            model=owner,
        ),
        trains=T(
            "the same for every parameter the output uses; an unused one gets a zero gradient, so the code that "
            "reads the gradients leaves it as it is"
        ),
        edits=line.edit(f, Swap().visit(line.tree)),
    )


def _parameters_held(expr: ast.expr, f: Failure) -> bool:
    """``expr`` is ``params.values()`` of a dict, or a name of a list or tuple, whose items are all parameters
    (``dict(model.named_parameters())`` handed to a functional forward): read from the frame, nothing called but a
    dict's own ``values()``."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "values":
        if expr.args or expr.keywords or not isinstance(expr.func.value, (ast.Name, ast.Attribute)):
            return False
        held = resolve_name(expr.func.value, f.namespace)
        items = list(held.values()) if type(held) is dict else []
    elif isinstance(expr, (ast.Name, ast.Attribute)):
        held = resolve_name(expr, f.namespace)
        items = list(held) if isinstance(held, (list, tuple)) else []
    else:
        return False
    return bool(items) and all(isinstance(t, torch.nn.Parameter) for t in items)


def _inputs_of(call: ast.Call | None) -> ast.expr | None:
    """The ``inputs`` argument of ``torch.autograd.grad(outputs, inputs, ...)``, positional or keyword."""
    if call is None:
        return None
    if len(call.args) >= 2:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg == "inputs"), None)


# NOTE [An input made to require grad after the forward]
# torch records how an output depends on a tensor only if that tensor required grad when
# the forward ran. A helper that switches it on itself (``x.requires_grad_(True)`` and
# then ``torch.autograd.grad(y, x)``, a gradient helper copied from an SDF or PINN code
# base) is too late when ``y`` was computed before the call: the input is a leaf that
# requires grad now, and the output does not depend on it. The fix makes the tensor
# require grad where it is made, before the forward: the assignment of the name the
# caller passes (or of the helper's own name), ``x = coords[idx].requires_grad_(True)``.
# The forward then records the dependence and autograd.grad differentiates by it; the
# values are the same, and the loss built on that gradient trains what it reaches.
def _requires_grad_too_late(f: Failure, call: ast.Call | None) -> tuple[Fix, ...]:
    """The input made to require grad where it is made, before the forward (NOTE [An input made to require grad
    after the forward])."""
    import torch

    inputs = _inputs_of(call)
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if not isinstance(inputs, ast.Name) or site is None or loc is None or tree is None:
        return ()
    name = inputs.id
    value = f.namespace.get(name)
    if not (isinstance(value, torch.Tensor) and value.requires_grad and value.grad_fn is None):
        return ()
    function = function_of(tree, loc.lineno)
    scope: ast.AST = function if function is not None else tree
    late = [
        n.lineno
        for n in ast.walk(scope)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "requires_grad_"
        and ast.unparse(n.func.value) == name
        and n.lineno < loc.lineno
    ]
    if not late:
        return ()
    made = _assignment_before(scope, name, min(late))
    where: tuple[str, ast.Assign] | None = (site.filename, made) if made is not None else None
    params = [a.arg for a in function.args.args] if isinstance(function, ast.FunctionDef) else []
    if where is None and name in params and f.outer:  # the helper's argument: where the caller made it
        frame, line = f.outer[0]
        caller = read_site(frame)
        caller_tree = caller.tree() if caller is not None else None
        if caller is None or caller_tree is None or function is None:
            return ()
        at = params.index(name)
        passed = next(
            (
                n.args[at]
                for n in ast.walk(caller_tree)
                if isinstance(n, ast.Call)
                and ast.unparse(n.func) == function.name
                and n.lineno == line
                and len(n.args) > at
                and isinstance(n.args[at], ast.Name)
            ),
            None,
        )
        if not isinstance(passed, ast.Name):
            return ()
        scope_of_caller = function_of(caller_tree, line) or caller_tree
        found = _assignment_before(scope_of_caller, passed.id, line)
        where = (caller.filename, found) if found is not None else None
    if where is None:
        return ()
    filename, st = where
    if st.lineno != st.end_lineno or st.end_col_offset is None:
        return ()
    text = source_of(filename).splitlines()[st.lineno - 1]
    start, end = st.value.col_offset, st.value.end_col_offset
    if end is None:
        return ()
    expr = text[start:end]
    primary = isinstance(st.value, (ast.Call, ast.Subscript, ast.Attribute, ast.Name))
    new = text[:start] + (expr if primary else f"({expr})") + ".requires_grad_(True)" + text[end:]
    target = ast.unparse(st.targets[0])
    fix = Fix(
        keeps_forward=True,
        summary=T(
            "make {name} require grad where it is made, before the forward ({code}): requires_grad_ after the "
            "output is computed records nothing, so the output does not depend on it",
            name=target,
            code=new.strip(),
        ),
        trains=T(
            "the same values; torch.autograd.grad then differentiates by {name}, and a loss built on that gradient "
            "trains what it reaches",
            name=target,
        ),
        edits=(Edit(filename, st.lineno, st.lineno, new),),
    )
    return judged_here(f, [Proposal(fix, None, True)])


def _assignment_before(scope: ast.AST, name: str, line: int) -> ast.Assign | None:
    """The last ``name = ...`` of ``scope`` before ``line``."""
    found = [
        n
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and n.targets[0].id == name
        and n.lineno < line
    ]
    return max(found, key=lambda n: n.lineno) if found else None


def _detached_before(f: Failure, call: ast.Call | None) -> tuple[Fix, ...]:
    """The fix that drops a ``.detach()`` (or ``.data``) on the differentiated output's path whose receiver calls
    a module the inputs belong to (NOTE [An input cut off by a detach])."""
    from .no_grad_fn import _fixes, path_cut

    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    given = _inputs_of(call)
    if site is None or loc is None or tree is None or call is None or given is None or loc.filename != site.filename:
        return ()
    inputs = ast.unparse(given)
    owners = {
        ast.unparse(n.func.value)
        for n in ast.walk(given)
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
            claims=failure_claims(f),
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
