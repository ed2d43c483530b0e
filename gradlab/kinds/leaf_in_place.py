"""GL0004 ``leaf_in_place``: an in-place write to a leaf tensor that requires grad (a parameter, an input)."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from ..activations import ACTIVATIONS
from ..advice import message_fixes
from ..claims import failure_claims, loop_claims
from ..context import Context
from ..edits import Edit
from ..evidence import Failure, receiver, resolve_name, torch_alias, var_named
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of
from ..i18n import T
from ..judge import judged
from ..loop import Site
from ..messages import Message
from ..rewrite import op_display, rewrite_in_place, twin_in_expression
from ..source import block_of, calls_method, function_of, parse, returns_value, runs_backward, statement_at
from .loaded_copies import loaded_copies_fix

__all__ = ["explain", "locate", "no_grad_fix"]


def explain(m: Message) -> Explanation:
    if m.view:
        summary = T(
            "An in-place operation was applied to a view of a leaf tensor that requires grad"
            " (a parameter or a tensor you created with requires_grad=True)."
        )
    else:
        summary = T(
            "An in-place operation was applied to a leaf tensor that requires grad"
            " (a parameter or a tensor you created with requires_grad=True)."
        )
    return Explanation(
        kind="leaf_in_place",
        summary=summary,
        message=m.text,
        torch_wording=T("any torch release"),
        meaning=(
            T(
                "autograd cannot record an in-place change to a leaf: its .grad is defined with"
                " respect to the value you created, so overwriting it is refused."
            ),
        ),
        causes=(
            T("A manual parameter update written as w -= lr * w.grad outside torch.no_grad()."),
            T("Initialising or clipping a parameter in place (w[0] = 0, w.clamp_()) with grad enabled."),
        ),
        fixes=message_fixes("leaf_in_place"),
    )


# NOTE [Writes to a leaf]
# torch refuses an in-place write to a leaf that requires grad (a parameter, a tensor
# made with requires_grad=True) while grad is on: the write would change the value the
# leaf's .grad is about. Such a write is an update (w -= lr * w.grad, an init, a clamp
# of a perturbation), not a step of the forward: the fix that keeps what the code means
# is to make it outside the graph, under torch.no_grad() (the values written are the
# same). Consecutive statements of the same block that write in place to leaves are
# wrapped together: wrapping only the first would stop at the second. Making the write
# out-of-place instead is another reading: the name then holds a new tensor, no leaf
# (its .grad stays None, an optimizer keeps the old one), and gradient flows through it.
# That reading comes first when the leaf is no parameter and no optimizer holds it, and
# the value written has a graph of its own (text_embeds += dummy_embed.sum() * 0, to
# keep a projector in the graph): then the write is a step of the computation, and
# under no_grad the term would reach nothing.
def _writes_to_leaf(st: ast.stmt, namespace: Mapping[str, Any]) -> bool:
    """``st`` writes in place to a tensor of ``namespace`` that is a leaf requiring grad."""
    target: ast.expr | None = None
    if isinstance(st, ast.AugAssign):
        target = st.target
    elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute):
        if st.value.func.attr.endswith("_") and not st.value.func.attr.endswith("__"):
            target = st.value.func.value
    elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript):
        target = st.targets[0].value
    while isinstance(target, ast.Subscript):
        target = target.value
    if target is None:
        return False
    value = resolve_name(target, namespace)
    return isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad


def no_grad_fix(f: Failure, name: str | None, parameter: bool) -> Proposal | None:
    """The write at ``f.location`` (and the leaf writes right after it) under ``torch.no_grad()`` (NOTE [Writes to a
    leaf]); machine-applicable for an update: of a parameter, or from a gradient. None when it cannot be placed."""
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return None
    st = statement_at(tree, loc.lineno)
    alias = torch_alias(f.namespace)
    if st is None or alias is None:
        return None
    block = block_of(tree, st)
    run = [st]
    if block is not None:
        for later in block[block.index(st) + 1 :]:
            if not _writes_to_leaf(later, f.namespace):
                break
            run.append(later)
    first, last = run[0].lineno, run[-1].end_lineno or run[-1].lineno
    fn = function_of(tree, loc.lineno)
    helper = (
        fn is not None
        and not any(runs_backward(n) or calls_method(n, ("step",)) for n in fn.body)
        and not returns_value(fn)
    )
    if fn is not None and helper:  # an init or update helper (it backwards nothing, returns nothing): all of it
        top = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
        decorator = f"{indent_of(site, fn.lineno)}@{alias}.no_grad()"
        return Proposal(
            Fix(
                summary=T(
                    "run {function}() under torch.no_grad(): it writes to parameters, it is no step of the forward",
                    function=fn.name,
                ),
                trains=T(
                    "the same as intended: the parameters keep training from their losses; {function}() changes "
                    "their values outside the graph, as an optimizer's step does",
                    function=fn.name,
                ),
                edits=(Edit(site.filename, top, top - 1, decorator),),
                claims=failure_claims(f),
            ),
            None,
            True,
        )
    if not site.holds(first):
        return None
    # an update: of a parameter, or made from a gradient (w -= lr * w.grad): no_grad is what the code means
    update = parameter or any(isinstance(n, ast.Attribute) and n.attr == "grad" for s in run for n in ast.walk(s))
    edits = [_wrapped(site, alias, first, last)]
    if update and fn is not None:  # the function's later writes to leaves would fail next: each wrapped too
        writes = sorted(
            {
                (s.lineno, s.end_lineno or s.lineno)
                for s in ast.walk(fn)
                if isinstance(s, ast.stmt)
                and s.lineno > last
                and not isinstance(s, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try))
                and _writes_to_leaf(s, f.namespace)
            }
        )
        for start, end in writes:
            if site.holds(start) and not any(e.start <= start <= e.end for e in edits):
                edits.append(_wrapped(site, alias, start, end))
    return Proposal(
        Fix(
            summary=T(
                "make the write under torch.no_grad(): it updates {name}, it is no step of the forward",
                name=name or T("the leaf"),
            ),
            trains=T(
                "the same as intended: {name} keeps training from its loss; the write changes its value "
                "outside the graph, as an optimizer's step does",
                name=name or T("the leaf"),
            ),
            edits=tuple(edits),
            claims=failure_claims(f) if update else (),
        ),
        None,
        update,
    )


def _wrapped(site: Site, alias: str, first: int, last: int) -> Edit:
    """Lines ``first`` to ``last`` of ``site``'s file under ``with torch.no_grad():``."""
    body = "\n".join(site.text(i) for i in range(first, last + 1))
    indent = indent_of(site, first)
    wrapped = f"{indent}with {alias}.no_grad():\n" + textwrap.indent(textwrap.dedent(body), indent + "    ")
    return Edit(site.filename, first, last, wrapped)


def locate(f: Failure) -> Explanation:
    """The write torch refused, located, with its fixes: under ``torch.no_grad()``, or out of place."""
    e = explain(f.message)
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return e
    st = statement_at(tree, loc.lineno)
    if st is None:
        return e
    target = f.tensors[0] if f.tensors and isinstance(f.tensors[0], torch.Tensor) else None
    name = var_named(f.namespace, lambda t: t is target) if target is not None else None
    if name is None and f.op:  # the receiver of the write as the line writes it (self.log_std)
        name = receiver(site.text(loc.lineno), re.escape(f.op)) if f.op.endswith("_") else None
    holders = frozenset().union(*site.optimizers.values()) if site.optimizers else frozenset()
    modules = frozenset().union(*site.modules.values()) if site.modules else frozenset()
    # a view of a parameter written through its subscript (``dense.weight[:, pos] -= ...``) writes the parameter:
    # torch names the view; a view bound to a name and read on is a step of the computation (NOTE [A view of a leaf,
    # written and then read])
    base = target._base if target is not None and target._base is not None else target
    parameter = base is not None and (isinstance(base, torch.nn.Parameter) or id(base) in holders | modules)
    if parameter and base is not target and _view_read_after(tree, st, name):
        parameter = False
    label = T(
        "write: {op} here, to {name}, a leaf that requires grad",
        op=op_display(f.op or ""),
        name=name or T("a leaf tensor"),
    )
    located = replace(e, spans=(Span(loc, label),))
    ctx = Context(site=site, tensor=name)
    proposals: list[Proposal] = []
    twin = twin_in_expression(site.text(loc.lineno), f.op) if f.op and st.lineno == st.end_lineno else None
    read = Edit(site.filename, loc.lineno, loc.lineno, twin) if twin is not None else None
    if read is not None:  # the in-place call's result is used as a value: its out-of-place twin was meant
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "compute {op} out of place where its result is used: the line reads {name}, it need not "
                        "write it",
                        op=op_display(f.op or ""),
                        name=name or T("the tensor"),
                    ),
                    trains=T(
                        "the computation as written, without changing {name}: its gradient flows through the "
                        "out-of-place op",
                        name=name or T("the tensor"),
                    ),
                    edits=(read,),
                ),
                None,
                True,
            )
        )
    loaded = loaded_copies_fix(f, at_the_write=True) if parameter else None  # NOTE [Copies loaded into a model]
    if loaded is not None:
        kept = failure_claims(f)  # what the loop's losses train: the model's forward still runs, at the copies
        return replace(located, fixes=(*(replace(x, claims=x.claims or kept) for x in judged([loaded], ctx)), *e.fixes))
    scaled = _scaled_by_its_gradient(f, st, name) if parameter and name else None
    if scaled is not None:  # NOTE [A parameter scaled by its own gradient's norm]
        proposals.append(scaled)
    wrap = no_grad_fix(f, name, parameter)
    if scaled is not None and wrap is not None:
        wrap = replace(wrap, fix=replace(wrap.fix, alternative=True))
    template = _template_parameter(f, st, target) if parameter and target is not None else None
    fn = function_of(tree, st.lineno)
    in_forward = isinstance(fn, ast.FunctionDef) and fn.name == "forward"  # a tied weight copied in the forward
    from_graph = (
        template is None and parameter and target is not None and _from_graph(st, name, f.namespace, in_forward)
    )
    first = (
        template
        if template is not None
        else _functional_call(f, st, target)
        if from_graph and target is not None
        else None
    )
    if template is not None or (from_graph and first is not None):
        # NOTE [A parameter the forward fills from other parameters]: a buffer the forward writes a copy of; or a
        # parameter written with a value a trained model computes, then read by a model of the block: a step of the
        # forward (NOTE [A parameter written in the forward]). Under no_grad, what computes the value would get no
        # gradient. Written where no model reads it after (an edit between epochs), it is an update: no_grad
        if first is not None:
            proposals.append(first)
        if wrap is not None:
            wrap = replace(
                wrap,
                fix=replace(
                    wrap.fix,
                    alternative=first is not None,
                    trains=T(
                        "what the write stores has no graph under torch.no_grad(): the parameters it is computed "
                        "from get no gradient from this loss, and {name} holds the value only",
                        name=name or T("the leaf"),
                    )
                    if template is not None
                    else T(
                        "what the write stores has no graph under torch.no_grad(): the model that computes it gets "
                        "no gradient from this loss, and {name} holds the value only",
                        name=name or T("the leaf"),
                    ),
                    claims=(),
                ),
                keeps=False,
            )
            proposals.append(wrap)
        fixes = judged(proposals, ctx)
        kept = failure_claims(f)
        fixes = tuple(replace(x, claims=x.claims or kept) if x.edits and x is fixes[0] else x for x in fixes)
        return replace(located, fixes=(*fixes, *e.fixes))
    # a leaf the forward made (no parameter, no optimizer holds it) written with a value that has a graph: the
    # write is a step of the computation (NOTE [Writes to a leaf]), so its out-of-place form comes first
    # an activation or a dropout applied in place (F.relu(x, inplace=True)) is a step of the forward too: nobody
    # updates a leaf with it (NOTE [Writes to a leaf])
    activation = (f.op or "") in ACTIVATIONS or (f.op or "").endswith("dropout_")
    viewed = not parameter and not activation and _view_read_after(tree, st, name)  # NOTE [A view of a leaf,
    # written and then read]
    computed = not parameter and (activation or viewed or _from_graph(st, name, f.namespace))
    if wrap is not None and not computed:
        proposals.append(wrap)
    rewritten = rewrite_in_place(site.text(loc.lineno), f.op) if f.op and st.lineno == st.end_lineno else None
    if rewritten is not None and isinstance(base, torch.nn.Parameter) and _rebinds_attribute(rewritten):
        rewritten = None  # a module's parameter cannot be set to the copy (torch raises a TypeError)
    if rewritten is not None:
        indent = indent_of(site, loc.lineno)
        text = "\n".join(indent + part.strip() for part in rewritten.split("\n"))
        bound = ast.unparse(st.targets[0]) if isinstance(st, ast.Assign) and len(st.targets) == 1 else None
        following = _inplace_after(site, tree, st, bound) if activation and bound else ()
        proposals.append(
            Proposal(
                Fix(
                    alternative=not computed,
                    summary=T(
                        "apply the activation out of place (without inplace=True): it is a step of the forward, "
                        "not an update of {name}",
                        name=name or T("the tensor"),
                    )
                    if activation and not parameter
                    else T(
                        "make the write out of place: {name} is a part of a leaf that the function goes on reading, "
                        "not an update of the leaf; {name} then names a new tensor",
                        name=name or T("the tensor"),
                    )
                    if viewed
                    else T(
                        "make the write out of place: it is a step of the computation (what it adds has a graph); "
                        "{name} then names a new tensor",
                        name=name or T("the tensor"),
                    )
                    if computed
                    else T(
                        "if the write is part of the computation, make it out of place: {name} then names a new tensor",
                        name=name or T("the tensor"),
                    ),
                    trains=T(
                        "the forward's values as the in-place activation computed them; {name} keeps its own values, "
                        "and the gradient flows through the activation into it",
                        name=name or T("the tensor"),
                    )
                    if activation and not parameter
                    else T(
                        "the forward's values as the in-place write computed them; the leaf keeps its own values, and "
                        "the gradient flows through {name} into its part of the leaf",
                        name=name or T("the tensor"),
                    )
                    if viewed
                    else T(
                        "gradient flows through the write into the tensor before it; the new tensor is no leaf: "
                        "its .grad stays None, and an optimizer that holds the old one does not see the new value",
                    ),
                    edits=(Edit(site.filename, loc.lineno, loc.lineno, text), *following),
                ),
                None,
                False,
            )
        )
    if wrap is not None and computed:
        proposals.append(wrap)
    fixes = judged(proposals, ctx)
    if computed:
        kept = failure_claims(f)
        fixes = tuple(replace(x, claims=x.claims or kept) for x in fixes)
    return replace(located, fixes=(*fixes, *e.fixes))


def _inplace_after(site: Site, tree: ast.Module, st: ast.stmt, name: str) -> tuple[Edit, ...]:
    """The statements right after ``st`` in its block that apply another activation or dropout in place to ``name``
    (``feats = F.dropout(feats, inplace=True)`` after ``feats = F.relu(feats, inplace=True)``), made out of place:
    once the first is, the next would write the output the first saved for its backward."""
    block = block_of(tree, st) or []
    out: list[Edit] = []
    for nxt in block[block.index(st) + 1 :] if st in block else []:
        flagged = (
            isinstance(nxt, ast.Assign)
            and nxt.lineno == nxt.end_lineno
            and [ast.unparse(t) for t in nxt.targets] == [name]
            and isinstance(nxt.value, ast.Call)
            and any(
                k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in nxt.value.keywords
            )
            and any(isinstance(a, ast.Name) and a.id == name for a in nxt.value.args[:1])
        )
        # a call with ``inplace=True`` is rewritten by dropping the keyword, whichever activation it is
        new = rewrite_in_place(site.text(nxt.lineno), "dropout_") if flagged else None
        if new is None:
            break
        out.append(Edit(site.filename, nxt.lineno, nxt.lineno, new))
    return tuple(out)


# NOTE [A parameter scaled by its own gradient's norm]
# A clipping helper computes a coefficient from a parameter's gradient (``clip_coef = max_norm / p.grad.norm()``)
# and multiplies the parameter by it: ``p.mul_(clip_coef)`` where ``p.grad.mul_(clip_coef)`` was meant (ParlAI's
# single-parameter path did this). torch refuses the write to a leaf; under ``torch.no_grad()`` it would shrink
# the weights at every clipped step, a different training. A scaling (``mul_``, ``div_``, ``*=``, ``/=``) of a
# parameter by a factor read from that parameter's ``.grad`` is written into the gradient: the parameter then moves
# only by its optimizer's step, on the clipped gradient. Writing it under ``torch.no_grad()`` follows, for code that
# means to scale the weights.
_SCALINGS = frozenset({"mul_", "div_", "__imul__", "__itruediv__"})


def _scaled_by_its_gradient(f: Failure, st: ast.stmt, name: str) -> Proposal | None:
    """The write into ``name.grad`` where the line scales ``name`` by a factor read from ``name.grad`` (NOTE [A
    parameter scaled by its own gradient's norm]), or None."""
    site, loc = f.site, f.location
    if site is None or loc is None or f.op not in _SCALINGS or st.lineno != st.end_lineno:
        return None
    if isinstance(st, ast.AugAssign) and ast.unparse(st.target) == name:
        factor = st.value
    elif (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and st.value.func.attr == f.op
        and ast.unparse(st.value.func.value) == name
        and len(st.value.args) == 1
    ):
        factor = st.value.args[0]
    else:
        return None
    tree = site.tree()
    scope = function_of(tree, loc.lineno) if tree is not None else None
    assigns = [
        n for n in ast.walk(scope if scope is not None else st) if isinstance(n, ast.Assign) and n.lineno < loc.lineno
    ]
    reads = {n.id for n in ast.walk(factor) if isinstance(n, ast.Name)}
    sources = [ast.unparse(factor)]
    for _ in range(4):  # through the names the factor is computed from (clip_coef, from grad_norm, from p.grad)
        found = [a for a in assigns if any(isinstance(t, ast.Name) and t.id in reads for t in a.targets)]
        sources += [ast.unparse(a.value) for a in found]
        more = {n.id for a in found for n in ast.walk(a.value) if isinstance(n, ast.Name)} - reads
        if not more:
            break
        reads |= more
    gradient = f"{name}.grad"
    if not any(gradient in text for text in sources):
        return None
    text = site.text(loc.lineno)
    at = text.find(name, st.col_offset)
    if at < 0:
        return None
    new = text[:at] + gradient + text[at + len(name) :]
    return Proposal(
        Fix(
            summary=T(
                "scale {name}'s gradient, not {name}: the factor is read from {name}.grad (a clipping helper's), "
                "and the write was meant for {name}.grad",
                name=name,
            ),
            trains=T(
                "{name} moves only by its optimizer's step, on the scaled gradient; the loss trains what it reached",
                name=name,
            ),
            edits=(Edit(site.filename, loc.lineno, loc.lineno, new),),
            claims=failure_claims(f),
        ),
        None,
        False,
    )


# NOTE [A parameter written in the forward]
# A row of a model's parameter overwritten, each iteration, with what a trained model
# computes (textual inversion's placeholder embedding made by a mapper, a hypernetwork
# writing a target layer's weight): the write is a step of the forward, and torch
# refuses it on a leaf. Under torch.no_grad() it runs, but what it stores has no graph:
# the model that computes it never learns. The fix that keeps the forward writes into a
# copy of the parameter and runs the model that reads it with that copy in its place,
# torch.func.functional_call(model, {name: copy}, args): the same values, and the
# gradient flows through the copy into the writing model (and into the parameter, whose
# .grad no optimizer need use). Offered when the write is one line and a later statement
# of its block calls, directly, a model that holds the parameter.
def _functional_call(f: Failure, st: ast.stmt, written: torch.Tensor) -> Proposal | None:
    """Write into a copy of the parameter and run the model that reads it with the copy (NOTE [A parameter written
    in the forward]); None when the statements do not have that shape."""
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    alias = torch_alias(f.namespace)
    if site is None or loc is None or tree is None or alias is None or st.lineno != st.end_lineno:
        return None
    param = written._base if written._base is not None else written
    copied = _copy_call(st)  # ``p.copy_(value)``: the whole parameter replaced by a value with a graph
    if copied is not None:
        holder = copied[0]
    elif not isinstance(st, ast.Assign) or len(st.targets) != 1 or not isinstance(st.targets[0], ast.Subscript):
        return None
    else:
        holder = st.targets[0].value
    block = block_of(tree, st)
    if block is None:
        return None
    for later in block[block.index(st) + 1 :]:
        for call in (n for n in ast.walk(later) if isinstance(n, ast.Call)):
            model = resolve_name(call.func, f.namespace) if _dotted(call.func) else None
            if not isinstance(model, torch.nn.Module):
                continue
            qualified = next((q for q, p in model.named_parameters(remove_duplicate=False) if p is param), None)
            if qualified is None:
                continue
            return _run_with_copy(f, st, later, call, holder, qualified, alias)
    return None


def _copy_call(st: ast.stmt) -> tuple[ast.expr, ast.expr] | None:
    """``p.copy_(value)`` as a statement: (p, value)."""
    call = st.value if isinstance(st, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "copy_"
        and len(call.args) == 1
        and not call.keywords
    ):
        return call.func.value, call.args[0]
    return None


def _run_with_copy(
    f: Failure, st: ast.stmt, later: ast.stmt, call: ast.Call, holder: ast.expr, qualified: str, alias: str
) -> Proposal | None:
    """The two edits of :func:`_functional_call`: the write into ``copy``, the call of the model with it."""
    site = f.site
    if site is None or later.lineno != later.end_lineno or call.end_col_offset is None:
        return None
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None  # *args, **kwargs: not written as a tuple and a dict here
    if not site.holds(st.lineno) or not site.holds(later.lineno):
        return None
    line = site.text(later.lineno)
    start, end = call.col_offset, call.end_col_offset
    try:
        if ast.dump(ast.parse(line[start:end], mode="eval").body) != ast.dump(call, include_attributes=False):
            return None
    except SyntaxError:
        return None
    copy = qualified.replace(".", "_")
    indent = indent_of(site, st.lineno)
    copied = _copy_call(st)
    if copied is not None:  # p.copy_(value): the value itself in p's place, the copy_ deleted
        first, given = "", ast.unparse(copied[1])
    else:
        target = st.targets[0] if isinstance(st, ast.Assign) else None
        assert isinstance(target, ast.Subscript) and isinstance(st, ast.Assign)
        write = ast.Assign([ast.Subscript(ast.Name(copy, ast.Load()), target.slice, ast.Store())], st.value, lineno=1)
        # a write of the whole parameter (p[:] = v) leaves nothing of it in the forward: no gradient to it, as
        # without the write; a write of a part keeps the rest's gradient flowing into the parameter
        whole = _whole(target.slice)
        first = (
            f"{indent}{copy} = {ast.unparse(holder)}{'.detach()' if whole else ''}.clone()\n"
            f"{indent}{ast.unparse(write)}"
        )
        given = copy
    parts = [ast.unparse(call.func), f"{{{qualified!r}: {given}}}", ast.unparse(ast.Tuple(list(call.args), ast.Load()))]
    if call.keywords:
        keys: list[ast.expr | None] = [ast.Constant(k.arg) for k in call.keywords]
        parts.append(ast.unparse(ast.Dict(keys, [k.value for k in call.keywords])))
    second = f"{line[:start]}{alias}.func.functional_call({', '.join(parts)}){line[end:]}"
    param = ast.unparse(holder)
    value = copied[1] if copied is not None else st.value  # type: ignore[attr-defined]
    writers = frozenset(ast.unparse(n.func) for n in ast.walk(value) if isinstance(n, ast.Call))
    return Proposal(
        Fix(
            summary=T(
                "run {model} with the value in place of {param} (torch.func.functional_call) instead of copying it "
                "into {param}: the value is computed from a parameter that trains (a tied weight), so the copy is a "
                "step of the forward",
                param=param,
                model=ast.unparse(call.func),
            )
            if copied is not None
            else T(
                "write into a copy of {param} and run {model} with the copy in its place (torch.func.functional_call): "
                "what the write stores comes from a model that trains, so the write is a step of the forward",
                param=param,
                model=ast.unparse(call.func),
            ),
            trains=T(
                "the forward as written, with the gradient flowing through the value into the parameters it is "
                "computed from; {param} keeps its values and gets no gradient from this forward",
                param=param,
            )
            if copied is not None
            else T(
                "the forward as written, with the gradient flowing through the written values into the model that "
                "computes them; {param} itself keeps its values (the part the write leaves gets its gradient)",
                param=param,
            ),
            edits=(
                Edit(site.filename, st.lineno, st.lineno, first),
                Edit(site.filename, later.lineno, later.lineno, second),
            ),
            claims=loop_claims(site, f.namespace, st.lineno, (ast.unparse(call.func), writers)),
        ),
        None,
        True,
    )


def _rebinds_attribute(code: str) -> bool:
    """The rewritten write's code sets an attribute to the copy (``dense.weight = dense_weight_copy``)."""
    tree = parse("\n".join(line.strip() for line in code.split("\n")))
    return tree is not None and any(
        isinstance(st, ast.Assign) and any(isinstance(t, ast.Attribute) for t in st.targets) for st in tree.body
    )


def _whole(index: ast.expr) -> bool:
    """The subscript ``index`` takes the whole tensor: ``[:]``, ``[...]``, ``[:, :]``."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        (isinstance(x, ast.Slice) and x.lower is None and x.upper is None and x.step is None)
        or (isinstance(x, ast.Constant) and x.value is Ellipsis)
        for x in parts
    )


def _from_graph(st: ast.stmt, name: str | None, namespace: Mapping[str, Any], in_forward: bool = False) -> bool:
    """The statement writes a value computed from a tensor of the frame that has a graph (``x += f(y) * 0``
    with ``y`` from a model), besides the written tensor itself; ``in_forward``: in a module's ``forward``, a
    parameter of another module read as the value counts too (a tied weight)."""
    value = st.value if isinstance(st, (ast.AugAssign, ast.Assign)) else st
    for n in ast.walk(value):
        if isinstance(n, ast.Name) and n.id != name:
            t = namespace.get(n.id)
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                return True
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and n.func.attr.endswith("_")):
            called = resolve_name(n.func, namespace) if _dotted(n.func) else None
            if isinstance(called, torch.nn.Module) and any(p.requires_grad for p in called.parameters()):
                return True  # a trained model's forward: its output has a graph
        if in_forward and isinstance(n, ast.Attribute) and _dotted(n) and ast.unparse(n) != name:
            read = resolve_name(n, namespace)  # another module's parameter (a tied weight: self.encoder.weight.t())
            if isinstance(read, torch.nn.Parameter) and read.requires_grad:
                return True
    return False


def _dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


# NOTE [A parameter the forward fills from other parameters]
# A module declares a matrix as a parameter (self.coupling = nn.Parameter(torch.eye(3))) and its forward sets some
# of its entries from other parameters (self.coupling[0, 0] = self.restitution * self.friction), then reads the
# matrix: the matrix is a structure the forward builds, not a weight an optimizer moves; torch refuses the write to
# the leaf. Under no_grad the write would run, but the entries would hold values without a graph: the parameters
# they are computed from would never learn. The fix keeps the matrix as a buffer (the same name and value, kept in
# the state dict, no longer handed to the optimizer) and lets the forward write into a copy of it that it then
# reads: the written entries carry the gradient into the parameters they come from, the entries the forward leaves
# are the buffer's constants. Offered when the parameter is made on one line of the class's __init__, and every
# statement of the method that writes it is an indexed assignment of values computed from tensors that require
# grad.
def _template_parameter(f: Failure, st: ast.stmt, written: torch.Tensor) -> Proposal | None:
    """The parameter made a buffer and the forward's writes made into a copy of it (NOTE [A parameter the forward
    fills from other parameters]); None when the code does not have that shape."""
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or not isinstance(st, ast.Assign) or len(st.targets) != 1:
        return None
    target = st.targets[0]
    holder = target.value if isinstance(target, ast.Subscript) else None
    if not (isinstance(holder, ast.Attribute) and isinstance(holder.value, ast.Name) and holder.value.id == "self"):
        return None
    attr, method = holder.attr, function_of(tree, st.lineno)
    cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and method in c.body), None)
    init = next((x for x in cls.body if isinstance(x, ast.FunctionDef) and x.name == "__init__"), None) if cls else None
    if method is None or init is None or written._base is not None:
        return None
    made = [
        x
        for x in ast.walk(init)
        if isinstance(x, ast.Assign)
        and len(x.targets) == 1
        and ast.unparse(x.targets[0]) == f"self.{attr}"
        and isinstance(x.value, ast.Call)
        and ast.unparse(x.value.func).split(".")[-1] == "Parameter"
        and len(x.value.args) == 1
        and not x.value.keywords
        and x.lineno == x.end_lineno
    ]
    if len(made) != 1:
        return None
    body = [x for x in method.body if isinstance(x, ast.stmt)]
    writes = [x for x in body if _assigns_into(x, attr)]
    if not writes or writes[0] is not st or any(not _requires_grad_value(x, f.namespace, written) for x in writes):
        return None
    if any(x.lineno != x.end_lineno for x in body if x.lineno >= st.lineno):
        return None
    if any(isinstance(n, ast.Attribute) and n.attr == attr for x in body if x.lineno < st.lineno for n in ast.walk(x)):
        return None
    local = attr.lstrip("_")
    if local in {n.id for n in ast.walk(method) if isinstance(n, ast.Name)}:
        return None
    param = made[0]
    assert isinstance(param.value, ast.Call)
    indent = indent_of(site, param.lineno)
    edits = [
        Edit(
            site.filename,
            param.lineno,
            param.lineno,
            f'{indent}self.register_buffer("{attr}", {ast.unparse(param.value.args[0])})',
        ),
        Edit(
            site.filename,
            st.lineno,
            st.lineno,
            f"{indent_of(site, st.lineno)}{local} = self.{attr}.clone()\n"
            + site.text(st.lineno).replace(f"self.{attr}", local),
        ),
    ]
    for x in body:
        if x.lineno > st.lineno and f"self.{attr}" in site.text(x.lineno):
            edits.append(
                Edit(site.filename, x.lineno, x.lineno, re.sub(rf"\bself\.{attr}\b", local, site.text(x.lineno)))
            )
    return Proposal(
        Fix(
            summary=T(
                "keep self.{attr} as a buffer and let {method}() write into a copy of it: the forward fills its "
                "entries from other parameters, so the writes are steps of the forward, not updates of a weight",
                attr=attr,
                method=method.name,
            ),
            trains=T(
                "the written entries carry the gradient into the parameters they are computed from; the entries the "
                "forward does not write are constants (the buffer's values), and no optimizer holds self.{attr}",
                attr=attr,
            ),
            edits=tuple(edits),
            keeps_forward=True,
        ),
        None,
        True,
    )


def _assigns_into(st: ast.stmt, attr: str) -> bool:
    """``st`` is ``self.<attr>[...] = value``."""
    return (
        isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Subscript)
        and ast.unparse(st.targets[0].value) == f"self.{attr}"
    )


def _requires_grad_value(st: ast.stmt, namespace: Mapping[str, Any], written: torch.Tensor) -> bool:
    """The value ``st`` assigns reads a tensor of the frame that requires grad (``self.restitution * self.friction``)
    and never the written tensor itself (``self.w[m] = self.w[m] * 0.9`` is an update by hand)."""
    value = st.value if isinstance(st, ast.Assign) else None
    read = (
        [resolve_name(n, namespace) for n in ast.walk(value) if isinstance(n, (ast.Name, ast.Attribute)) and _dotted(n)]
        if value is not None
        else []
    )
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in read) and not any(t is written for t in read)


# NOTE [A view of a leaf, written and then read]
# A function takes a slice of a learned tensor (piece = aps[r0:r0 + t, c0:c0 + t]), converts it in place (piece *=
# rad_to_mm) and reads it on (cols.append(piece)): the write is a step of the computation on a view, not an update
# of the leaf; under no_grad it would scale the learned tensor itself at every forward. Its out-of-place form comes
# first: the same values, a tensor of its own, the gradient flowing into the slice. An update by hand through a
# view (w = model.weight[:, :k]; w *= 0.5), which nothing reads afterwards, stays an update.
def _view_read_after(tree: ast.Module, st: ast.stmt, name: str | None) -> bool:
    """``name`` is bound, in the function of ``st``, to an indexed part of another tensor before ``st``, and a
    statement after ``st`` in that function reads it."""
    function = function_of(tree, st.lineno)
    if function is None or not name or not name.isidentifier():
        return False
    bound = [
        x
        for x in ast.walk(function)
        if isinstance(x, ast.Assign)
        and x.lineno < st.lineno
        and len(x.targets) == 1
        and isinstance(x.targets[0], ast.Name)
        and x.targets[0].id == name
    ]
    if not bound or not isinstance(bound[-1].value, ast.Subscript):
        return False
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and n.lineno > (st.end_lineno or 0)
        for n in ast.walk(function)
    )
