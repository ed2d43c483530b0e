"""Cause ``inplace_op``: an in-place operation in the forward code overwrote a tensor autograd saved; its fixes."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from ..activations import ACTIVATION_NAMES, ACTIVATIONS, swept_inplace_flags, without_inplace_flags
from ..context import Context
from ..edits import Edit
from ..evidence import value_of
from ..fixes import Fix, Proposal, all_edits, keeping, source_of, whole_statement, write_edit
from ..i18n import T
from ..location import Location
from ..rewrite import OP_NAMES, rewrite_in_place, twin_in_expression
from ..source import enclosing, enclosing_blocks, function_of, parse, returns_value


def _inplace_flags(ctx: Context) -> tuple[tuple[Edit, ...], bool]:
    """Every ``inplace=True`` of the activation ``ctx.op`` in the file that ran it, removed (an exact rewrite:
    the out-of-place activation computes the same values and gradients); or, when no call has one, the loops over
    modules that set ``inplace = True`` on its class, which leave it out (NOTE [An inplace flag set by a sweep] in
    activations.py). The second: whether the edits are such loops'."""
    loc = ctx.write_at
    site = ctx.site
    if not ctx.op or loc is None:
        return (), False
    filename = site.filename if site is not None else loc.filename
    source = site.source if site is not None else source_of(filename)
    keywords = without_inplace_flags(source, ctx.op)
    found = keywords or swept_inplace_flags(source, ctx.op)
    return tuple(Edit(filename, a, b, new) for a, b, new in found), bool(found) and not keywords


def _out_of_place(code: str | None, op: str | None, loc: Location | None = None, item: bool = False) -> str | None:
    rewritten = rewrite_in_place(code, op, _item_containers(loc), item) if code and op else None
    if rewritten is None and code and op:  # used as a value (y = x * s.exp_()): its twin, in place of it
        rewritten = twin_in_expression(code, op)
    return rewritten


def _item_containers(loc: Location | None) -> frozenset[str]:
    """The names whose items the function of ``loc`` assigns (``h[layer], c[layer] = cell(...)``): containers that
    take item assignment, so an item of one may be rebound to a copy (NOTE [Exact rewrites])."""
    if loc is None:
        return frozenset()
    try:
        tree = ast.parse(source_of(loc.filename))
    except (SyntaxError, ValueError):
        return frozenset()
    scope = function_of(tree, loc.lineno) or tree
    out = set()
    for n in ast.walk(scope):
        targets = n.targets if isinstance(n, ast.Assign) else []
        for t in targets:
            for x in t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]:
                if isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name) and x.lineno != loc.lineno:
                    out.add(x.value.id)
    return frozenset(out)


def _other_edits(ctx: Context, flags: tuple[Edit, ...]) -> tuple[Edit, ...] | None:
    """The out-of-place form of every other write that made a saved tensor stale (NOTE [Every stale write]);
    None when one of them has none (a step, a write under no_grad, a line no rewrite fits)."""
    edits = []
    for loc, op, recorded in ctx.other_writes:
        if flags and op == ctx.op:
            continue  # the same activation: its inplace=True is removed with the others
        if loc is None:
            return None
        new = _out_of_place(_written(ctx, loc, loc.code), op, loc) if recorded else None
        edit = write_edit(replace(ctx, write_at=loc), new)
        if edit is None:
            return None
        edits.append(edit)
    return tuple(edits)


def _through_callers(ctx: Context, rewritten: str) -> tuple[tuple[Edit, ...], str] | None:
    """A write to an argument of a helper that returns nothing (``def subtract_mean(batch): ... batch -= mean``):
    its callers see the write, and the out-of-place form alone would rebind only the helper's name (the caller's
    tensor keeps its old values). Then: the out-of-place form, ``return batch`` at the helper's end, and every
    call ``subtract_mean(y)`` as ``y = subtract_mean(y)`` (NOTE [A write to an argument]). The edits besides the
    write's and the write's new text; no edit when the written name is not such an argument; None when a caller
    cannot be rewritten."""
    loc = ctx.write_at
    if loc is None:
        return (), rewritten
    try:
        target = ast.parse(rewritten.split("\n")[-1].strip()).body[0]
    except (SyntaxError, IndexError):
        return (), rewritten
    if not (isinstance(target, ast.Assign) and isinstance(target.targets[0], ast.Name)):
        return (), rewritten
    name = target.targets[0].id
    source = source_of(loc.filename)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return (), rewritten
    helper = function_of(tree, loc.lineno)
    if not isinstance(helper, ast.FunctionDef):
        return (), rewritten
    params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    if name not in params or helper.args.vararg or helper.args.kwarg:
        return (), rewritten
    rebound = any(
        isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and st.lineno < loc.lineno
        and any(
            isinstance(t, ast.Name) and t.id == name
            for target in (st.targets if isinstance(st, ast.Assign) else [st.target])
            for t in ast.walk(target)
        )
        for st in ast.walk(helper)
    )
    if rebound:
        return (), rewritten  # a local of the helper by then: the caller's tensor is not what it writes
    if returns_value(helper):
        if ctx.op in _FILLS and not _returns_name(helper, name):
            return None  # it fills the caller's tensor and returns something else (NOTE [A write to an argument])
        return (), rewritten  # it returns a value (a forward's ``return x``): its callers use what it returns
    if any(isinstance(n, ast.Return) for n in ast.walk(helper)):
        return None
    index = params.index(name)
    lines = source.splitlines()
    edits: list[Edit] = []
    calls = [
        st
        for st in ast.walk(tree)
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and ast.unparse(st.value.func) == helper.name
    ]
    others = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == helper.name and not any(n is c.value for c in calls)
    ]
    if not calls or others:
        return None
    for st in calls:
        call = st.value
        assert isinstance(call, ast.Call)
        if len(call.args) <= index or not isinstance(call.args[index], (ast.Name, ast.Attribute)):
            return None
        if st.lineno != st.end_lineno:
            return None
        text = lines[st.lineno - 1]
        indent = text[: len(text) - len(text.lstrip())]
        edits.append(
            Edit(loc.filename, st.lineno, st.lineno, f"{indent}{ast.unparse(call.args[index])} = {text.strip()}")
        )
    last = helper.body[-1]
    end = last.end_lineno or last.lineno
    first = lines[helper.body[0].lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    if last.lineno == loc.lineno:
        return tuple(edits), f"{rewritten}\nreturn {name}"  # the write ends the helper: the return follows it
    if last.lineno != end:
        return None
    edits.append(Edit(loc.filename, end, end, f"{lines[end - 1]}\n{indent}return {name}"))
    return tuple(edits), rewritten


def graph_buffers(name: str, namespace: Mapping[str, Any]) -> tuple[str, ...]:
    """When the written tensor ``name`` (``model.norm2.running_var``) is a buffer its module registered and holds a
    graph now: the names of that module's buffers that hold a graph (NOTE [A buffer updated with values that have a
    graph]); else none."""
    owner_path, _, attr = name.rpartition(".")
    owner = value_of(owner_path, namespace) if owner_path else None
    if not isinstance(owner, torch.nn.Module):
        return ()
    found = tuple(sorted(k for k, b in owner._buffers.items() if isinstance(b, torch.Tensor) and b.grad_fn is not None))
    return found if attr in found else ()


def buffer_updates_off_graph(ctx: Context) -> tuple[Edit, ...]:
    """Each run of consecutive write statements into a buffer that holds a graph (``ctx.extra["graph_buffer"]``: the
    frame's torch name) put under ``no_grad`` (NOTE [A buffer updated with values that have a graph])."""
    torch_name = ctx.extra.get("graph_buffer")
    buffers = {f"self.{b}" for b in ctx.extra.get("graph_buffers", "").split(",") if b}
    loc = ctx.write_at
    tree = parse(source_of(loc.filename)) if loc is not None else None
    if not torch_name or loc is None or tree is None:
        return ()
    block = next((b for b in enclosing_blocks(tree) if any(st.lineno == loc.lineno for st in b)), [])
    # every one-line statement of the write's block that writes one of those buffers (the running mean beside the
    # running variance: its update holds a graph too, and the next forward reads it)
    lines = sorted(
        {loc.lineno}
        | {
            st.lineno
            for st in block
            if st.lineno == st.end_lineno
            and isinstance(st, (ast.Expr, ast.Assign, ast.AugAssign))
            and any(ast.unparse(n) in buffers for n in ast.walk(st) if isinstance(n, ast.Attribute))
            and _writes_buffer(st, buffers)
        }
    )
    text = source_of(loc.filename).splitlines()
    runs: list[list[int]] = []
    for k in lines:
        if runs and runs[-1][-1] == k - 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    edits = []
    for run in runs:
        rows = [text[k - 1] for k in run]
        indent = rows[0][: len(rows[0]) - len(rows[0].lstrip())]
        if any(not r.startswith(indent) or r[len(indent) :].startswith(" ") for r in rows):
            return ()  # a statement over several lines, or another block: not wrapped by this rule
        body = "\n".join(f"{indent}    {r.strip()}" for r in rows)
        edits.append(Edit(loc.filename, run[0], run[-1], f"{indent}with {torch_name}.no_grad():\n{body}"))
    return tuple(edits)


def _writes_buffer(st: ast.stmt, buffers: set[str]) -> bool:
    """``st`` writes one of ``buffers``: an in-place method called on it (``self.b.mul_(m).add_(x)``), an assignment
    to it or into it, an augmented assignment."""
    if isinstance(st, (ast.Assign, ast.AugAssign)):
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        return any(ast.unparse(t.value if isinstance(t, ast.Subscript) else t) in buffers for t in targets)
    call = st.value if isinstance(st, ast.Expr) else None
    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        if (
            call.func.attr.endswith("_")
            and not call.func.attr.endswith("__")
            and ast.unparse(call.func.value) in buffers
        ):
            return True
        call = call.func.value
    return False


# NOTE [A buffer updated with values that have a graph]
# A hand-written normalisation layer keeps running statistics in buffers (register_buffer) and updates them in
# its forward from the batch's statistics, which have a graph: running.mul_(1 - m).add_(m * mean). The forward
# read the buffer before the update, so the update is a write to a saved tensor, and any fix that keeps the write
# (a copy where the forward reads the buffer) makes the first backward work; but the buffer now holds this
# iteration's graph, and the next forward reads it: the next backward goes through a freed graph. A buffer is
# state, not a trained value (nn.BatchNorm updates its running statistics without a graph): the fixes that keep
# the write also put the update under no_grad. No gradient changes: the loss read the buffer before the update,
# and the graph the update made only reached into iterations already backwarded.


#: In-place writes that replace a tensor's values whole, whatever they were: into an argument, the helper's output.
_FILLS = frozenset({"copy_", "fill_", "zero_", "set_"})


def _returns_name(helper: ast.FunctionDef, name: str) -> bool:
    """A ``return`` of ``helper`` returns ``name`` (alone or in a tuple)."""
    return any(
        isinstance(n, ast.Return)
        and n.value is not None
        and any(isinstance(v, ast.Name) and v.id == name for v in ast.walk(n.value))
        for n in ast.walk(helper)
    )


def _view_of_kept_base(ctx: Context, rewritten: str) -> bool:
    """The written name is an indexed view of a tensor that is read after the write (NOTE [A write through a view of
    a kept tensor]): ``s, i = self.state[0], self.state[1]`` then ``s -= ...``."""
    loc = ctx.write_at
    if loc is None:
        return False
    try:
        target = ast.parse(rewritten.split("\n")[-1].strip()).body[0]
    except (SyntaxError, IndexError):
        return False
    if not (isinstance(target, ast.Assign) and isinstance(target.targets[0], ast.Name)):
        return False
    name = target.targets[0].id
    tree = parse(source_of(loc.filename))
    fn = function_of(tree, loc.lineno) if tree is not None else None
    if fn is None:
        return False
    bases: list[ast.expr] = []
    for st in ast.walk(fn):
        if not isinstance(st, ast.Assign) or st.lineno >= loc.lineno or len(st.targets) != 1:
            continue
        t, v = st.targets[0], st.value
        pairs = (
            list(zip(t.elts, v.elts))
            if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts)
            else [(t, v)]
        )
        for tt, vv in pairs:
            if isinstance(tt, ast.Name) and tt.id == name:
                bases.append(vv.value if isinstance(vv, ast.Subscript) else vv)
                if not isinstance(vv, ast.Subscript):
                    return False  # bound from something else: a tensor of its own, not a view
    if not bases:
        return False
    base = bases[-1]
    if isinstance(base, ast.Attribute):
        return True  # kept on an object: read by the next call
    if isinstance(base, ast.Name) and base.id == name:
        return False  # U = U[:, :rank]: the name now holds the view, and nothing reads the whole tensor again
    if isinstance(base, ast.Name):
        later = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == base.id and n.lineno > loc.lineno]
        return any(isinstance(n.ctx, ast.Load) for n in later)
    return False


def _graph_left_on_object(ctx: Context, rewritten: str) -> Edit | None:
    """``self.X = self.X.detach()`` as the first statement of the method that writes ``self.X`` (NOTE [A buffer kept
    on an object and written by each rollout]), when the rewrite rebinds ``self.X``, the write runs in a loop of that
    method, nothing in the method binds ``self.X`` before the write, and the class's ``__init__`` makes it."""
    loc = ctx.write_at
    last = rewritten.split("\n")[-1].strip()
    m = re.match(r"self\.(\w+) = ", last)
    if loc is None or m is None:
        return None
    attr = m[1]
    tree = parse(source_of(loc.filename))
    fn = function_of(tree, loc.lineno) if tree is not None else None
    if tree is None or not isinstance(fn, ast.FunctionDef) or not fn.args.args or fn.args.args[0].arg != "self":
        return None
    cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and fn in c.body), None)
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None) if cls else None

    def binds(node: ast.AST, before: int | None = None) -> bool:
        return any(
            isinstance(st, ast.Assign)
            and (before is None or st.lineno < before)
            and any(ast.unparse(t) == f"self.{attr}" for t in st.targets)
            for st in ast.walk(node)
        )

    looped = any(
        isinstance(x, (ast.For, ast.While)) and x.lineno < loc.lineno <= (x.end_lineno or x.lineno)
        for x in ast.walk(fn)
    )
    if init is None or not binds(init) or binds(fn, loc.lineno) or not looped:
        return None
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    if not body:
        return None
    first = body[0].lineno
    text = source_of(loc.filename).splitlines()[first - 1]
    indent = text[: len(text) - len(text.lstrip())]
    return Edit(loc.filename, first, first - 1, f"{indent}self.{attr} = self.{attr}.detach()")


# NOTE [A buffer kept on an object and written by each rollout]
# A simulator allocates a tensor once, in __init__ (self.track = torch.zeros(steps, batch, 2)), and each rollout
# writes its steps into it by index while reading earlier steps back. The out-of-place form (a copy, rebound to
# self.track) makes the first iteration's backward work, but self.track then keeps that iteration's graph, and the
# next rollout's writes extend it: the next backward goes through the freed graph of the one before. The fix
# therefore also rebinds self.track to its detached value as the method's first statement: the values are those
# the rollout would read anyway (the forward is unchanged), and only the graph of earlier calls, already
# backwarded, is cut. Only for a write inside a loop of the method (a rollout over steps, which holds a whole
# sequence in one call); a method called once per step, whose graph a later backward crosses, is left alone.


def _copies_container(rewritten: str, code: str) -> bool:
    """The rewrite clones what the written tensor was indexed from (``xs_copy = xs.clone()`` for ``xs[i].copy_(v)``)."""
    m = re.match(r"\s*\w+_copy = (.+)\.clone\(\)$", rewritten.split("\n")[0])
    return m is not None and f"{m[1]}[" in code


# NOTE [An item of a container is no view]
# ``cache.states[i].copy_(state)``: when ``cache.states`` is a tensor, the write goes into a view of it, and the
# out-of-place form writes into a copy of the whole tensor and rebinds it. When it is a list of tensors, the item
# is the tensor itself, and ``cache.states.clone()`` fails (a list has no clone). The record says which: the
# tensor the op wrote had a base or not (Write.into_view). For an item, no out-of-place edit is offered; a copy
# where the tensor was read into the forward comes first (the general rewrites).


# NOTE [A write through a view of a kept tensor]
# ``s, i, r = self.state[0], self.state[1], self.state[2]`` then ``s -= new * dt``: the write is meant for
# ``self.state``, which the next call reads. The out-of-place form ``s = s - new * dt`` rebinds the local name
# only; the state then never moves, and the patched run trains another simulation. No out-of-place edit is
# offered; a copy where the stale view was saved keeps the forward and the state's update (the general rewrites).


def _written(ctx: Context, loc: Location | None, code: str | None) -> str | None:
    """The write's statement: its line, or the whole statement when it spans several (NOTE [Exact rewrites])."""
    whole = whole_statement(ctx, loc) if loc is not None else None
    return whole[2] if whole is not None else code


def in_place_fixes(ctx: Context) -> list[Proposal]:
    item = ctx.write_into_view is False and (ctx.op or "").startswith("__i")  # NOTE [An item rebound, not written]
    rewritten = _out_of_place(_written(ctx, ctx.write_at, ctx.code), ctx.op, ctx.write_at, item)
    if rewritten and _view_of_kept_base(ctx, rewritten):
        rewritten = None  # NOTE [A write through a view of a kept tensor]
    if rewritten and ctx.extra.get("graph_buffer"):
        # NOTE [A buffer updated with values that have a graph]: rebound out of place, the buffer would still hold
        # the graph; the copy where it is read and the update under no_grad (the general rewrites) come first
        rewritten = None
    # (an indexed assignment writes into its base itself: never a view, and its copy is the base's)
    if (
        rewritten
        and ctx.op != "__setitem__"
        and ctx.write_into_view is False
        and _copies_container(rewritten, ctx.code or "")
    ):
        rewritten = None  # NOTE [An item of a container is no view]
    through = _through_callers(ctx, rewritten) if rewritten else ((), rewritten)
    callers: tuple[Edit, ...] | None = None
    if through is None:
        rewritten = None  # the rebinding alone would leave the caller's tensor unwritten
    else:
        callers, rewritten = through
    # the activations' inplace=True flags, unless the write's own line has an out-of-place form (F.relu_(x) there,
    # after an nn.ReLU(inplace=True) that wrote another tensor: the flags would leave the write in place)
    flags, swept = _inplace_flags(ctx) if ctx.op in ACTIVATIONS and not rewritten else ((), False)
    others = _other_edits(ctx, flags)
    # every write, in the order of its lines
    writes = sorted(
        [
            (ctx.write_at, ctx.where, ctx.op),
            *((loc, loc.where if loc else None, op) for loc, op, _rec in ctx.other_writes),
        ],
        key=lambda x: x[0].lineno if x[0] is not None else 0,
    )
    wheres = [w for _loc, w, _op in writes if w]
    where = T(" at {where}", where=", ".join(wheres)) if wheres else ""
    ops = [o for o in dict.fromkeys(op for _loc, _w, op in writes) if o]
    op = ", ".join(OP_NAMES.get(o, o) for o in ops) if ops else T("the in-place op")
    if swept and ctx.op is not None:
        # NOTE [An inplace flag set by a sweep] in activations.py
        summary = T(
            "leave nn.{module} out of the loop that sets inplace = True on modules: its in-place write changes a "
            "tensor autograd saved",
            module=ACTIVATION_NAMES[ctx.op][0],
        )
    elif ctx.op in ACTIVATIONS and not rewritten:
        summary = T("use the activation without inplace=True (nn.ReLU() rather than nn.ReLU(inplace=True))")
    elif ctx.op == "__setitem__":
        summary = T("write the indexed assignment into a copy and rebind the name{where}", where=where)
    else:
        summary = T("use the out-of-place form of {op}{where}", op=op, where=where)
    if callers:  # a helper's argument: its callers saw the write (NOTE [A write to an argument])
        calls = [Location(e.filename, e.start).where for e in callers if not e.text.lstrip().startswith("return ")]
        summary = summary + T(
            "; the helper then returns the new tensor, and each call binds it (at {where})", where=", ".join(calls)
        )
    refills = _refills_rebound(ctx, rewritten) if rewritten and not flags else ()
    if refills:  # NOTE [A state rebound, then refilled]
        summary = summary + T(
            "; and the in-place refills of the state (at {where}) make new tensors, so that no sequence starts from "
            "the graph of the one before",
            where=", ".join(Location(e.filename, e.start).where for e in refills),
        )
    fresh = _graph_left_on_object(ctx, rewritten) if rewritten and not flags else None
    if fresh is not None:  # NOTE [A buffer kept on an object and written by each rollout]
        summary = summary + T(
            "; and {name} is detached where the method starts, so that no call's graph reaches into the one before",
            name=fresh.text.strip().split(" = ")[0],
        )
    tensor = ctx.tensor or T("the tensor")
    proposals = [
        keeping(
            ctx,
            Fix(
                summary=summary,
                trains=T(
                    "the same as intended: nothing changes in which loss trains which parameters; {tensor} keeps the "
                    "value autograd saved",
                    tensor=tensor,
                ),
                edits=()
                if others is None
                else tuple(
                    sorted(
                        all_edits(
                            *(flags or (write_edit(ctx, rewritten),)),
                            *others,
                            *(callers or ()),
                            *refills,
                            *((fresh,) if fresh is not None else ()),
                        ),
                        key=lambda e: e.start,
                    )
                ),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T("write to a copy: clone {name} before the in-place write", name=tensor),
                trains=T("the same as intended (the copy costs one tensor's memory)"),
            ),
        ),
    ]
    # an indexed assignment's first fix already writes into a copy; "clone the saved tensor" would name the
    # wrong one (the saved slice is not what the assignment writes)
    return proposals[:1] if ctx.op == "__setitem__" and proposals[0].fix.edits else proposals


# NOTE [A state rebound, then refilled]
# A module carries a state between the chunks of one backward in a buffer it writes whole (``self.state.copy_(h)``),
# and resets it in place at the start of each sequence (``self.state.zero_()``). Rebound out of place (the state is
# then the last chunk's tensor, with its graph), the in-place reset would write into that tensor: the next
# sequence's forward would start from it and its backward would reach into the freed graph. So each statement of
# the class that fills the same attribute whole in place (``zero_()``, ``fill_(v)``) is rebound to a new tensor
# too (``torch.zeros_like``, ``torch.full_like``): the same values, without a graph.
_REFILLS = {"zero_": "zeros_like({t})", "fill_": "full_like({t}, {v})"}


def _refills_rebound(ctx: Context, rewritten: str) -> tuple[Edit, ...]:
    """The in-place refills of the attribute ``rewritten`` rebinds, rebound to new tensors (NOTE [A state rebound,
    then refilled]); none when ``rewritten`` rebinds no ``self`` attribute."""
    loc = ctx.write_at
    bound = re.search(r"^\s*(self\.\w+) = ", rewritten.split("\n")[-1])
    tree = parse(source_of(loc.filename)) if loc is not None and bound else None
    if tree is None or loc is None or bound is None or not re.search(r"^import torch$", source_of(loc.filename), re.M):
        return ()  # (the new tensors are spelled torch.zeros_like: the file's name for torch must be torch)
    target = bound[1]
    cls = next((c for c in reversed(enclosing(tree, loc.lineno)) if isinstance(c, ast.ClassDef)), None)
    lines = source_of(loc.filename).splitlines()
    out = []
    for st in ast.walk(cls) if cls is not None else ():
        call = st.value if isinstance(st, ast.Expr) else None
        if not (
            isinstance(st, ast.Expr)
            and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _REFILLS
            and ast.unparse(call.func.value) == target
            and st.lineno == st.end_lineno
            and st.lineno != loc.lineno
        ):
            continue
        if len(call.args) != (1 if call.func.attr == "fill_" else 0) or call.keywords:
            continue
        made = _REFILLS[call.func.attr].format(t=target, v=ast.unparse(call.args[0]) if call.args else "")
        text = lines[st.lineno - 1]
        indent = text[: len(text) - len(text.lstrip())]
        out.append(Edit(loc.filename, st.lineno, st.lineno, f"{indent}{target} = torch.{made}"))
    return tuple(out)


# NOTE [A write to an argument]
# A helper that writes into its argument and returns nothing (def subtract_mean(batch): batch -= mean) is
# called for that write: subtract_mean(y) changes y. Its out-of-place form, batch = batch - mean, rebinds the
# helper's own name and the caller's y keeps its old values: the patched run computes another loss. So the
# rewrite goes with a return of the written name at the helper's end and every call rebinding its argument
# (y = subtract_mean(y)); with a call that is not a plain statement (its value used), or a helper that
# already returns something, no out-of-place edit is offered (the general rewrites follow). A helper that
# returns something else and replaces its argument's values whole (a data stream's fill(buffer):
# buffer.copy_(wave); return labels) fills a tensor its caller reads next: its out-of-place form would leave
# the caller's buffer as it was, every later step training on the first batch; no out-of-place edit either.


# NOTE [Every stale write]
# Several writes may have made saved tensors of one graph stale (a layer that resamples two noise buffers in
# place, each read by the forward and written again by the next forward): torch names only one, and the
# out-of-place form of that write alone leaves the patched run failing on the next. The first fix rewrites
# every such write of the graph; when one of them has no out-of-place form (an optimizer step, a write under
# no_grad), it is a sentence, and the general rewrites (a copy where each tensor is saved) come first.
