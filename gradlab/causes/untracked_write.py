"""Cause ``untracked_write``: a write autograd could not record (under ``no_grad()``, through ``.detach()`` or
``.data``) overwrote a saved tensor: a model used as a target, a buffer read where it is saved; their fixes."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, Problem, calls_name, in_site, receiver, short_name, stepped_params, torch_alias, value_of
from ..fixes import Fix, Proposal, all_edits, claim, edit_at, indent_of, insert_lines, keeping, source_of, span_of
from ..i18n import T, join
from ..location import Location
from ..rewrite import replace_reads
from ..saved import Write
from ..source import block_of, calls_method, function_of, names, parse, statement_at


def target_context(ctx: Context, p: Problem, facts: Facts) -> Context | None:
    """A model whose output is a target: its parameter was written without autograd before the backward.

    The pattern (a mean teacher, a momentum encoder): a parameter of model ``M``
    (by its name ``M.layer.weight``) is written under ``torch.no_grad()`` (an EMA
    update) after the statement of the failing function that ran ``M``'s forward,
    and no optimizer (of the frame, or seen stepping) holds ``M``'s parameters: nothing trains
    ``M`` by gradient, so its forward can run under ``torch.no_grad()``. Its
    output is then a constant of the loss; what the optimizers' parameters get
    does not change.
    """
    site, model = facts.site, ctx.model
    if site is None or model is None or model not in site.modules or not site.optimizers:
        return None
    held = stepped_params(facts)  # the frame's optimizers and every optimizer seen stepping
    if site.modules[model] & held:
        return None
    line = in_site(facts, p.saved_at)
    tree = site.tree()
    st = statement_at(tree, line) if tree is not None and line is not None else None
    alias = torch_alias(facts.namespace)
    if st is None or alias is None or not calls_name(st, model):
        return None
    return replace(ctx, target=model, target_line=st.lineno, grad_off=f"{alias}.no_grad")


def copy_context(ctx: Context, p: Problem, w: Write) -> Context | None:
    """A tensor written without autograd through an expression the line that saved it also reads.

    The pattern (a running statistic kept in a buffer): ``out = x / self.running_std``
    saved the buffer for backward, then ``self.running_std.mul_(...)`` under
    ``torch.no_grad()`` updated it before the backward ran. Reading a copy on the
    saving line (``self.running_std.clone()``) keeps the values the forward used;
    the update still changes the buffer. Read from the write's own line (its
    receiver) and the saved tensor's forward line.
    """
    loc, saved = w.location, p.saved_at
    if loc is None or saved is None or (saved.filename == loc.filename and saved.lineno == loc.lineno):
        return None
    target = receiver(loc.code, re.escape(w.op)) if w.op.endswith("_") else None
    if target is None:
        return None
    if not re.search(rf"(?<![\w.]){re.escape(target)}(?![\w(])", saved.code or ""):
        return _alias_copy(ctx, loc, saved, target)  # NOTE [A buffer read through a local name]
    return replace(ctx, copy_at=saved, copy_of=target)


# NOTE [A buffer read through a local name]
# A hand-written spectral norm refreshes its power-iteration vectors in place under no_grad (self.v.copy_(...),
# self.u.copy_(...)), then reads them through local names (u, v = self.u, self.v) into sigma = torch.dot(u, w @ v).
# When the layer runs twice in one forward, the second refresh overwrites what the first call's sigma saved. The
# saving line reads the local names, not the buffers: the copy is read where the names are bound, for every buffer
# on that line the function writes in place (u, v = self.u.clone(), self.v.clone()), as torch's own spectral_norm
# does. One edit for both, or the next backward finds the other one overwritten.
def _alias_copy(ctx: Context, write: Location, saved: Location, target: str) -> Context | None:
    """The statement before the saving line, in its function, that binds local names to ``target`` (and to other
    attributes the function writes in place), with those attributes to read as copies there."""
    tree = parse(source_of(saved.filename))
    function = function_of(tree, saved.lineno) if tree is not None else None
    if tree is None or function is None or saved.filename != write.filename:
        return None
    source = source_of(saved.filename)
    bindings = [
        st
        for st in ast.walk(function)
        if isinstance(st, ast.Assign)
        and st.lineno < saved.lineno
        and st.lineno == st.end_lineno
        and any(ast.unparse(v) == target for v in ast.walk(st.value) if isinstance(v, ast.Attribute))
    ]
    if len(bindings) != 1:
        return None
    st = bindings[0]
    locals_ = set().union(*(names(t, ast.Store) for t in st.targets))
    if not locals_ & names(statement_at(tree, saved.lineno) or st, ast.Load):
        return None  # the saving line does not read what it binds
    written = [
        ast.unparse(v)
        for v in ast.walk(st.value)
        if isinstance(v, ast.Attribute)
        and re.search(rf"(?<![\w.]){re.escape(ast.unparse(v))}\.\w+_\(", ast.get_source_segment(source, function) or "")
    ]
    return replace(
        ctx,
        copy_at=Location(saved.filename, st.lineno),
        copy_of=target,
        extra={**ctx.extra, "copy_all": ",".join(sorted(set(written) | {target}))},
    )


def forward_write_context(ctx: Context, p: Problem, w: Write, facts: Facts) -> Context | None:
    """A module's forward calls the method that wrote its own tensor without autograd (NOTE [A write a module's
    forward makes on itself]): the forward's statement that makes the call, and the module's path in the failing
    frame (``model.bays`` for ``model.bays.weight``)."""
    loc, site = w.location, facts.site
    owner_path = str(short_name(p)).rpartition(".")[0]
    owner = value_of(owner_path, facts.namespace) if owner_path else None
    tree = parse(source_of(loc.filename)) if loc is not None else None
    if loc is None or tree is None or site is None or not isinstance(owner, torch.nn.Module):
        return None
    method = function_of(tree, loc.lineno)
    cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and method in c.body), None)
    if method is None or cls is None or cls.name != type(owner).__name__ or method.name == "forward":
        return None
    forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return None
    calls = [
        st
        for st in forward.body
        if any(
            isinstance(n, ast.Call) and ast.unparse(n.func) == f"self.{method.name}" and not n.args and not n.keywords
            for n in ast.walk(st)
        )
    ]
    if len(calls) != 1 or len(forward.body) < 2 or calls[0] is forward.body[-1]:
        return None
    st = calls[0]
    # it reads nothing of the forward's own (its arguments, its locals): only self and the file's names
    local = {a.arg for a in forward.args.args} | {n for x in forward.body for n in names(x, ast.Store)}
    if (names(st, ast.Load) - {"self"}) & local or any(isinstance(n, (ast.Return, ast.Yield)) for n in ast.walk(st)):
        return None
    found = f"{st.lineno}:{st.end_lineno or st.lineno}:{owner_path}:{cls.name}:{method.name}"
    extra = {**ctx.extra, "out_of_forward": found}
    written = getattr(owner, str(short_name(p)).rpartition(".")[2].split(" ")[0], None)
    if isinstance(written, torch.nn.Parameter) and id(written) in stepped_params(facts):
        extra["stepped_parameter"] = "1"  # NOTE [A parameter constrained inside its module's forward]
    return replace(ctx, extra=extra)


def parameter_write_context(ctx: Context, p: Problem, w: Write, facts: Facts) -> Context | None:
    """A parameter an optimizer steps, written without autograd by a method its module's forward calls (NOTE [A
    parameter constrained inside its module's forward]): the move out of the forward, with the copy read where it is
    saved as the second reading."""
    moved = forward_write_context(ctx, p, w, facts)
    if moved is None or not moved.extra.get("stepped_parameter"):
        return None
    return copy_context(moved, p, w) or moved


# NOTE [A parameter constrained inside its module's forward]
# A module keeps a parameter inside a constraint by hand: a method renormalises or clamps it under no_grad
# (a max-norm ball for an answer table, a box for a coupling), and the forward calls that method after the line
# that read the parameter. The write overwrites what the matmul saved, so the backward fails. A copy read on the
# saving line would run, but the constraint would then hold only between the forward and the step: the step
# moves the parameter out of the ball again, and every forward reads it unconstrained. A projection belongs after
# the optimizer's step (projected gradient descent): the call moves out of the forward into the training loop,
# after the step, through the loop's name for the module, and every forward after the first reads the parameter
# as the constraint left it. The copy stays as the second fix. Only for a parameter an optimizer steps; a buffer
# (a running statistic) is read through a copy first, as before.


def _out_of_forward(ctx: Context) -> list[Proposal]:
    """The forward's call of the writing method moved into the training loop, after the optimizer's step
    (:func:`forward_write_context`)."""
    found, site, loc, back = ctx.extra.get("out_of_forward"), ctx.site, ctx.write_at, ctx.backward_line
    tree = site.tree() if site is not None else None
    if not found or site is None or tree is None or loc is None or back is None:
        return []
    first, last, path, cls, method = found.split(":")
    backward = statement_at(tree, back)
    block = block_of(tree, backward) or []
    later = [x for x in block if backward is not None and x.lineno > backward.lineno]
    step = next((x for x in later if calls_method(x, ("step",))), backward)
    if step is None:
        return []
    lines = source_of(loc.filename).splitlines()[int(first) - 1 : int(last)]
    text = textwrap.dedent("\n".join(lines))
    moved = re.sub(r"(?<![\w.])self\.", f"{path}.", text)
    insert = insert_lines(ctx, step.lineno, moved, after=True)
    if insert is None:
        return []
    fix = Fix(
        summary=T(
            "take the call of {method}() out of {cls}.forward: the training loop calls {call} after {step}{condition}, "
            "so that no forward of the step reads what it writes",
            method=method,
            cls=cls,
            call=f"{path}.{method}()",
            step=ast.unparse(step).strip().splitlines()[0],
            condition=T(" (its condition goes with it)") if int(last) > int(first) else "",
        ),
        trains=T(
            "{loss} trains what it trained; every forward of a step now reads {tensor} as the step began, and the "
            "write happens once the step is done (the forward's values change where it read the written rows)",
            loss=ctx.l,
            tensor=ctx.tensor or T("the tensor"),
        ),
        edits=all_edits(Edit(loc.filename, int(first), int(last), ""), insert),
        claims=claim(ctx, ctx.reach),
        keeps_forward=False,
    )
    return [Proposal(fix, ctx.reach, True)]


# NOTE [A write a module's forward makes on itself]
# A module may change its own parameter from inside its forward, under no_grad: an embedding table that evicts
# the rows of ids it has not seen and draws them again (a managed-collision table), a layer that renormalises or
# clamps its weight every few calls. When one step runs the module's forward twice before the backward (two
# horizons, two views), the second forward's write overwrites what the first one saved. The write is meant as an
# update of the model's state, as a step is: it is moved out of the forward into the training loop, after the
# optimizer's step, through the loop's name for the module (self.evict() becomes model.bays.evict()). Every
# forward of a step then reads the table as the step began; what the write does, and how often (its condition
# moves with it), stays. Only for a call that is one statement of the forward (not its last), reading nothing of
# the forward's own but self; the forward changes where it read the written rows, and the fix says so.


def _as_target(ctx: Context) -> list[Proposal]:
    """Run the forward of a model no optimizer trains under no_grad (``causes._target_context`` reads the pattern)."""
    site, line = ctx.site, ctx.target_line
    if site is None or line is None or ctx.target is None or ctx.grad_off is None:
        return []
    span = span_of(site, line)
    if span is None:
        return []
    indent = indent_of(site, span[0])
    block = [f"{indent}with {ctx.grad_off}():", *("    " + site.text(i) for i in range(span[0], span[1] + 1))]
    reach = tuple(m for m in ctx.reach if m != ctx.target)
    fix = Fix(
        summary=T(
            "run {model}'s forward under torch.no_grad(): no optimizer holds {model}'s parameters, so its output is a "
            "target, and its in-place update then overwrites nothing autograd saved",
            model=ctx.target,
        ),
        trains=T(
            "the same as intended: {loss} trains the parameters its optimizers step, as before; {model} gets no "
            "gradient (no optimizer used it)",
            loss=ctx.l,
            model=ctx.target,
        ),
        edits=(Edit(site.filename, span[0], span[1], "\n".join(block)),),
        claims=claim(ctx, reach),
    )
    return [Proposal(fix, reach, True)]


def _read_copy(ctx: Context) -> list[Proposal]:
    """Read a copy where the forward saved the written tensor (``causes._copy_context`` reads the pattern)."""
    loc, expr = ctx.copy_at, ctx.copy_of
    if loc is None or expr is None:
        return []
    line = loc.code.strip()
    new = replace_reads(line, expr, f"{expr}.clone()")
    for other in [x for x in ctx.extra.get("copy_all", "").split(",") if x and x != expr]:
        new = replace_reads(new, other, f"{other}.clone()") if new is not None else None
    if new is None and line.startswith("return "):
        new = re.sub(rf"(?<![\w.]){re.escape(expr)}(?![\w(])", f"{expr}.clone()", line, count=1)
    copied = sorted({expr, *(x for x in ctx.extra.get("copy_all", "").split(",") if x)})
    fix = Fix(
        summary=T(
            "read a copy of {expr} where the forward uses it (at {where}): the in-place update then changes {expr}, "
            "not the value autograd saved",
            expr=expr,
            where=loc.where,
        )
        if len(copied) == 1
        else T(
            "read copies of {exprs} where the forward saves them, at {where}: the writes then change {exprs}, not "
            "the values autograd saved",
            exprs=join(copied, T(" and ")),
            where=loc.where,
        ),
        trains=T(
            "the same as intended: the gradient of the forward as it ran; {expr} is still updated in place", expr=expr
        ),
        edits=all_edits(edit_at(ctx, loc, new)),
    )
    return [keeping(ctx, fix)]


def untracked_fixes(ctx: Context) -> list[Proposal]:
    if ctx.extra.get("stepped_parameter"):  # NOTE [A parameter constrained inside its module's forward]
        return [*_as_target(ctx), *_out_of_forward(ctx), *_read_copy(ctx), *_untracked_general(ctx)]
    return [*_as_target(ctx), *_read_copy(ctx), *_out_of_forward(ctx), *_untracked_general(ctx)]


def _untracked_general(ctx: Context) -> list[Proposal]:
    where = T(" at {where}", where=ctx.where) if ctx.where else ""
    tensor = ctx.tensor or T("the tensor")
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "do not write to {tensor} while a graph that saved it still needs it: move the write{where} after "
                    "{loss}.backward(), or write to a copy ({tensor}.clone())",
                    tensor=tensor,
                    where=where,
                    loss=ctx.l,
                ),
                trains=T("the same as intended: the write changed values, not which loss trains which parameters"),
            ),
        ),
        Proposal(
            Fix(
                summary=T(
                    "if the write is meant to be part of the model, make it an out-of-place op with grad enabled"
                ),
                trains=T("the write's result then takes part in backward, so the gradient also flows through it"),
                claims=claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]
