"""Fixes from general rewrites of the located sites, whatever the cause (NOTE [Candidates]).

A cause explains a failure and writes the fixes that its pattern calls for; it is
never the only source of fixes. For a tensor autograd saved and something then
wrote, the sites alone give three rewrites, each checked and run like any fix:

- **a copy where it is saved**: every stale tensor read as ``expr.clone()`` on the
  line that saved it, all of them in one fix (several tensors one write made
  stale are fixed together, or the patched run fails on the next one);
- **a copy read by the write itself**: ``x[i] = f(x[i])`` reads ``x[i].clone()``, so
  what ``f`` saves is not a view of what the write changes;
- **recompute after the write**: the statements that built the failing loss from
  the written tensors run again after the write, in the function that runs both;
- **move the write after the backward**: when the write is a statement of that
  function and nothing between it and the backward reads what it writes.

For a graph an earlier backward freed, the rewrites are in :mod:`gradlab.freed_candidates`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from .causes.inplace_op import buffer_updates_off_graph
from .context import Context
from .edits import Edit
from .evidence import Facts, Problem, calls_name
from .fixes import (
    Fix,
    Proposal,
    all_edits,
    claim,
    edit_at,
    insert_lines,
    keeping,
    source_of,
    span_of,
    statement_line,
    statements_text,
)
from .graph import Graph
from .i18n import T, join
from .location import Location
from .rewrite import replace_reads, split_comment
from .saved import SavedTensor
from .source import block_of, enclosing, function_of, names, parse, statement_at
from .writers import documented

__all__ = ["after_write_lines", "general_fixes", "stale_reads"]


def _read(line: str, expr: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(expr)}(?![\w(])", split_comment(line)[0]) is not None


def _names_for(given: str | None, short: str | None) -> list[str]:
    """The expressions a line may read a saved tensor by: its given name (``emb.weight``), its short name, and
    ``self.<attribute path>`` for a line inside the module's own method (``self.running_std``)."""
    out = [n for n in (given, short) if n]
    if given and "." in given:
        parts = given.split(".")
        out += [".".join(["self", *parts[k:]]) for k in range(1, len(parts))]
    return list(dict.fromkeys(out))


def stale_reads(graph: Graph, p: Problem) -> tuple[tuple[Location, str], ...]:
    """Each tensor of the failing graph that was written after it was saved, as (the line that saved it, the
    expression that line reads it by); empty if one of them cannot be named on its line (a copy of only some
    would leave the patched run failing on the others)."""
    out: list[tuple[Location, str]] = []
    seen: set[tuple[str, int, str]] = set()
    for s in graph.saved:
        if s.status != "modified_in_place":
            continue
        loc = s.saved_at if s.saved_at is not None else (p.saved_at if s.node_id == p.node_id else None)
        if loc is None or not loc.code:
            return ()
        short = str(s.name).split(" ")[0] if s.name else None
        known = _names_for(s.given, short)
        expr = next((e for e in [*known, *_aliases(loc, known)] if _read(loc.code, e)), None)
        # a tensor without a name of its own (a view): the names its writes wrote through, read on the saving line
        exprs = [expr] if expr is not None else [e for e in _written_names(s) if _read(loc.code, e)]
        if not exprs:  # NOTE [A saved tensor read through a helper's parameter]
            exprs = _parameter_read(loc)
        if not exprs:
            return ()
        for expr in exprs:
            key = (loc.filename, loc.lineno, expr)
            if key not in seen:
                seen.add(key)
                out.append((loc, expr))
    return tuple(out)


def _written_names(s: SavedTensor) -> list[str]:
    """The names the writes of ``s`` wrote through (``x`` of ``x -= y`` or ``x.add_(y)``), in the order of the writes;
    a view's writes share its base's counter, so these are every view the writes went through."""
    out: list[str] = []
    for w in s.writes:
        code = w.location.code if w.location is not None else None
        try:
            st = ast.parse((code or "").strip()).body[0] if code else None
        except (SyntaxError, IndexError):
            st = None
        if isinstance(st, ast.AugAssign) and isinstance(st.target, (ast.Name, ast.Attribute)):
            out.append(ast.unparse(st.target))
        elif (
            isinstance(st, ast.Expr)
            and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute)
            and st.value.func.attr.endswith("_")
        ):
            out.append(ast.unparse(st.value.func.value))
    return list(dict.fromkeys(out))


def _bindings(loc: Location) -> dict[str, ast.Assign]:
    """The local names the function around ``loc`` binds above ``loc`` to an attribute path alone
    (``w = self.codes.weight``), each with its one binding (a name bound twice is left out)."""
    tree = parse(source_of(loc.filename))
    fn = function_of(tree, loc.lineno) if tree is not None else None
    if fn is None:
        return {}
    found: dict[str, list[ast.Assign]] = {}
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for t in targets:
                for n in ast.walk(t) if t is not None else ():
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        found.setdefault(n.id, []).append(node)  # type: ignore[arg-type]
    return {
        name: nodes[0]
        for name, nodes in found.items()
        if len(nodes) == 1
        and isinstance(nodes[0], ast.Assign)
        and nodes[0].lineno < loc.lineno
        and isinstance(nodes[0].value, ast.Attribute)
    }


def _aliases(loc: Location, exprs: list[str]) -> list[str]:
    """The local names the function around ``loc`` binds to one of ``exprs`` alone, above ``loc`` (NOTE [A saved
    tensor read through a local name])."""
    wanted = set(exprs)
    return [name for name, node in _bindings(loc).items() if ast.unparse(node.value) in wanted]


def _parameter_read(loc: Location) -> list[str]:
    """The one parameter of the function around ``loc`` (``self`` aside) that the line reads, as a list; empty when
    the line reads none or several (NOTE [A saved tensor read through a helper's parameter])."""
    tree = parse(source_of(loc.filename))
    fn = function_of(tree, loc.lineno) if tree is not None else None
    if fn is None or not loc.code:
        return []
    a = fn.args
    params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self", "cls"}
    read = [p for p in sorted(params) if _read(loc.code, p)]
    try:
        line = ast.parse(split_comment(loc.code)[0].strip())
    except SyntaxError:
        return []
    # only the parameter's own methods and torch's functions: a call of a module or a helper (``net(x)``) saves
    # tensors of its own, which may be the stale ones
    calls_only_on = all(
        isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in {*read, "torch", "F"}
        for n in ast.walk(line)
        if isinstance(n, ast.Call)
    )
    return read if len(read) == 1 and calls_only_on else []


# NOTE [A saved tensor read through a helper's parameter]
# A loss helper is handed the tensor (``spread_out(model.palette())``, the palette an
# embedding's weight) and saves it under its parameter's name (``table @ table.t()``): none
# of the tensor's own names is read on that line. When the line reads exactly one of the
# function's parameters and calls nothing but that parameter's methods and torch's
# functions (no module, no helper, which would save tensors of their own), that parameter
# is the tensor the line saved, and a copy read there keeps the forward as it ran.

# NOTE [A saved tensor read through a local name]
# ``w = self.codes.weight`` above a loop, then ``h @ w.T`` in it: the line that saved the weight reads it by a
# local name the tensor's own names do not give. A copy read there (``w.clone().T``) keeps the forward as it ran
# (each read sees the weight as it was at that line); a copy at the binding would make every later read see the
# weight as it was before the loop, another forward.


def _reads_only(line: str) -> bool:
    """``line`` is a ``return`` or an expression statement: it binds no name, so each name in it is read."""
    try:
        tree = ast.parse(split_comment(line)[0].strip())
    except SyntaxError:
        return False
    return len(tree.body) == 1 and isinstance(tree.body[0], (ast.Return, ast.Expr))


def _cloned(line: str, exprs: list[str]) -> str | None:
    for expr in exprs:
        new = replace_reads(line, expr, f"{expr}.clone()")
        if new is None and _reads_only(line):  # ``return f(x)``, ``outs.append(f(x))``: every read is a read
            body, comment = split_comment(line)
            new = re.sub(rf"(?<![\w.]){re.escape(expr)}(?![\w(])", f"{expr}.clone()", body) + comment
        if new is None:
            return None
        line = new
    return line


def _clone_where_saved(ctx: Context) -> Proposal | None:
    if not ctx.stale:
        return None
    by_line: dict[tuple[str, int], tuple[Location, list[str]]] = {}
    for loc, expr in ctx.stale:
        by_line.setdefault((loc.filename, loc.lineno), (loc, []))[1].append(expr)
    edits: list[Edit | None] = []
    for loc, exprs in by_line.values():
        edits.append(edit_at(ctx, loc, _cloned(loc.code, exprs)))
    found = all_edits(*edits)
    if not found:
        return None
    exprs = sorted({e for _loc, e in ctx.stale})
    summary = (
        T(
            "read a copy of {exprs} where the forward saves it, at {where}: the write then changes {exprs}, not "
            "the values autograd saved",
            exprs=exprs[0],
            where=", ".join(loc.where for loc, _ in by_line.values()),
        )
        if len(exprs) == 1
        else T(
            "read copies of {exprs} where the forward saves them, at {where}: the writes then change {exprs}, not "
            "the values autograd saved",
            exprs=join(exprs, T(" and ")),
            where=", ".join(loc.where for loc, _ in by_line.values()),
        )
    )
    row = documented(ctx.op)
    if row is not None and not row.api.startswith("torch.optim."):  # a step's documented fix is the order
        summary = summary + T(" (torch documents this fix for {api})", api=row.api)
    return keeping(
        ctx,
        Fix(
            summary=summary,
            trains=T(
                "the same as intended: the gradient of the forward as it ran (the gradient reaches {exprs} through "
                "the copy); the write still changes {exprs}",
                exprs=join(exprs, T(" and ")),
            ),
            edits=tuple(sorted(found, key=lambda e: e.start)),
        ),
    )


def _clone_at_binding(ctx: Context) -> Proposal | None:
    """A saved tensor read through a local name: a copy where the name is bound (``w = self.codes.weight.clone()``),
    the fix torch documents for a module that writes its own weight (NOTE [A saved tensor read through a local
    name]). Every read of the name then sees the values of the binding: another forward where the write comes
    between the binding and a read, and it says so."""
    if not ctx.stale:
        return None
    edits: list[Edit | None] = []
    names: list[str] = []
    where: list[str] = []
    for loc, expr in ctx.stale:
        node = _bindings(loc).get(expr)
        if node is None:
            return None
        if expr in names:
            continue
        names.append(expr)
        at = Location(loc.filename, node.lineno)
        value = ast.unparse(node.value)
        edits.append(edit_at(ctx, at, replace_reads(f"{expr} = {value}", value, f"{value}.clone()")))
        where.append(at.where)
    found = all_edits(*edits)
    if not found:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "read a copy where {names} is bound, at {where}: every later read then sees the values of that "
                "line, and the write changes the original",
                names=join(names, T(" and ")),
                where=", ".join(where),
            ),
            trains=T(
                "the same parameters as your code, by another forward: the reads of {names} after the write at "
                "{write} see the values from before it",
                names=join(names, T(" and ")),
                write=ctx.where or T("the write"),
            ),
            edits=tuple(sorted(found, key=lambda e: e.start)),
            keeps_forward=False,
        ),
    )


def _written_expression(code: str) -> ast.expr | None:
    """What a one-line in-place write writes: ``x`` of ``x += y``, ``x.add_(y)`` or ``x[i].copy_(v)``'s ``x[i]``."""
    try:
        st = ast.parse(split_comment(code)[0].strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(st, ast.AugAssign):
        return st.target
    if (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and st.value.func.attr.endswith("_")
    ):
        return st.value.func.value
    return None


def _clone_where_read(ctx: Context) -> Proposal | None:
    """The written tensor read into the forward by ``name = <what the write writes>`` above the write, in its
    function: a copy there (NOTE [A copy where the written tensor was read]); only when no read of ``name`` after
    the write would see other values (the name rebound in between, or not read after)."""
    loc, code = ctx.write_at, ctx.code
    written = _written_expression(code) if loc is not None and code else None
    tree = parse(source_of(loc.filename)) if loc is not None and written is not None else None
    fn = function_of(tree, loc.lineno) if tree is not None and loc is not None else None
    if fn is None or loc is None or written is None:
        return None
    text = ast.unparse(written)
    reads = [
        st
        for st in ast.walk(fn)
        if isinstance(st, ast.Assign)
        and st.lineno < loc.lineno
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Name)
        and ast.unparse(st.value) == text
    ]
    if len(reads) != 1:
        return None
    bound = reads[0]
    name = bound.targets[0].id  # type: ignore[attr-defined]
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
    rebound = any(isinstance(n.ctx, ast.Store) and bound.lineno < n.lineno < loc.lineno for n in uses)
    read_after = any(isinstance(n.ctx, ast.Load) and n.lineno > loc.lineno for n in uses)
    if read_after and not rebound:
        return None
    at = Location(loc.filename, bound.lineno)
    edit = edit_at(ctx, at, f"{name} = {text}.clone()")
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "read a copy of {tensor} where the forward takes it, at {where}: the write at {write} then changes "
                "the original, not what autograd saved",
                tensor=text,
                where=at.where,
                write=loc.where,
            ),
            trains=T(
                "the same as intended: the values and gradients of the code as written; the write still changes {tensor}",
                tensor=text,
            ),
            edits=(edit,),
        ),
    )


# NOTE [A copy where the written tensor was read]
# ``state = cache.states[i]`` at the top of a forward, then ``cache.states[i].copy_(new)`` at its end: the forward
# computed from the tensor it later overwrites. The write names the tensor by the same expression the forward read
# it by; reading a copy there (``state = cache.states[i].clone()``) leaves the saved values alone, and the write
# still updates the cache. Offered only when no read of the local name after the write would see the values the
# write left (the name was rebound in between, or is not read again).


def _clone_own_reads(ctx: Context) -> Proposal | None:
    """``x[i] = f(x[i])`` as ``x[i] = f(x[i].clone())``: the right-hand side of an indexed assignment reads the
    tensor it writes, and what it computes from that read saves a view of it, which the write then changes."""
    loc = ctx.write_at
    text = statement_line(ctx, loc, ast.Assign) if loc is not None else None
    if loc is None or text is None:
        return None
    body, comment = split_comment(text)
    st = ast.parse(body.strip()).body[0]
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript)):
        return None
    if not _saved_by(ctx.saved_at, loc, st):
        return None  # the tensor was saved elsewhere (by the layer that made it): a copy of the read leaves it
    base = ast.unparse(st.targets[0].value)

    class Clone(ast.NodeTransformer):
        found = 0

        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if ast.unparse(node.value) == base:
                self.found += 1
                return ast.Call(ast.Attribute(node, "clone", ast.Load()), [], [])
            return self.generic_visit(node)

    clone = Clone()
    value = clone.visit(st.value)
    if not clone.found:
        return None
    new = ast.unparse(ast.Assign(st.targets, value, lineno=1))
    edit = edit_at(ctx, loc, new + comment)
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "read a copy of {base} on the right of the assignment at {where}: what it computes saves the copy, "
                "which the write leaves alone",
                base=base,
                where=loc.where,
            ),
            trains=T(
                "the same as intended: the values and gradients of the code as written; the write still changes {base}",
                base=base,
            ),
            edits=(edit,),
        ),
    )


def _read_from_copy(ctx: Context) -> Proposal | None:
    """``x[i] = f(x[i])`` inside a loop, as ``x[i] = f(x_in[i])`` with ``x_in, x = x, x.clone()`` before the loop:
    every read sees the values the loop started from, every write goes into a copy that nothing saved (NOTE [A loop
    that writes what it reads])."""
    loc = ctx.write_at
    if loc is None:
        return None
    source = source_of(loc.filename)
    tree = parse(source)
    st = statement_at(tree, loc.lineno) if tree is not None else None
    if tree is None or not isinstance(st, ast.Assign) or len(st.targets) != 1 or st.lineno != st.end_lineno:
        return None
    target = st.targets[0]
    name = _root(target) if isinstance(target, ast.Subscript) else None
    if name is None:
        return None
    subscripts = [
        n
        for n in ast.walk(st.value)
        if isinstance(n, ast.Subscript) and _root(n) == name and isinstance(n.ctx, ast.Load)
    ]
    inner = {id(n.value) for n in subscripts}
    reads = [n for n in subscripts if id(n) not in inner]  # x[b][t] whole, not its x[b]
    if not reads or any(ast.unparse(r) != ast.unparse(target) for r in reads):
        return None  # it reads other positions than it writes (x[t] = f(x[t - 1])): a recurrence reads new values
    function = function_of(tree, loc.lineno)
    scope: ast.AST = function if function is not None else tree
    loops = [b for b in enclosing(tree, loc.lineno) if isinstance(b, (ast.For, ast.While))]
    loops = [b for b in loops if function is None or function.lineno < b.lineno <= (function.end_lineno or 0)]
    if not loops:
        return None
    outer = loops[0]
    if any(
        name in _written(x) and not isinstance(x.targets[0] if isinstance(x, ast.Assign) else None, ast.Subscript)
        for x in ast.walk(outer)
        if isinstance(x, ast.Assign)
    ):
        return None  # the name is bound anew inside the loop
    bound = [
        x
        for x in ast.walk(scope)
        if isinstance(x, ast.Assign)
        and x.lineno < outer.lineno
        and any(isinstance(t, ast.Name) and t.id == name for t in x.targets)
    ]
    if not bound or not isinstance(bound[-1].value, ast.Call):
        return None  # not bound to a tensor a call made (a list, a tuple): .clone() might not exist
    copy = f"{name}_in"
    if any(isinstance(n, ast.Name) and n.id == copy for n in ast.walk(scope)):
        return None
    lines = source.splitlines()
    line = lines[loc.lineno - 1]
    body, comment = split_comment(line)
    try:
        one = ast.parse(body.strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    assert isinstance(one, ast.Assign)

    wanted: str = name

    class Reads(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if _root(node) == wanted and isinstance(node.ctx, ast.Load):
                inner: ast.expr = node
                while isinstance(inner, (ast.Attribute, ast.Subscript)):  # the read's root name, made the copy's
                    if isinstance(inner.value, ast.Name):
                        inner.value = ast.Name(copy, ast.Load())
                        break
                    inner = inner.value
                return node
            return self.generic_visit(node)

    one.value = Reads().visit(one.value)
    indent = line[: len(line) - len(line.lstrip())]
    head = lines[outer.lineno - 1]
    head_indent = head[: len(head) - len(head.lstrip())]
    write = Edit(loc.filename, loc.lineno, loc.lineno, indent + ast.unparse(one) + comment)
    before = Edit(loc.filename, outer.lineno, outer.lineno - 1, f"{head_indent}{copy}, {name} = {name}, {name}.clone()")
    return keeping(
        ctx,
        Fix(
            summary=T(
                "read {name} from the values the loop at {where} started from, and write into a copy: {copy}, {name} "
                "= {name}, {name}.clone() before the loop",
                name=name,
                copy=copy,
                where=Location(loc.filename, outer.lineno).where,
            ),
            trains=T(
                "the same as intended: the values and gradients of the code as written; the writes go into a copy "
                "that nothing saved"
            ),
            edits=(before, write),
        ),
    )


# NOTE [A loop that writes what it reads]
# x[i] = f(x[i]) inside a loop (a graph convolution applied per time step, written back into the tensor it
# reads) writes a tensor that two things may have saved: f itself (a view of x, read on the right) and the layer
# that made x (an activation that saves its output). A copy of the read alone fixes the first only. Reading from
# the tensor as it was before the loop and writing into a clone made there fixes both and computes the same
# values: the clone starts equal to x, each position is written once from the original, and gradients flow into
# x through the reads. Offered when the read is the very position the statement writes (x[t] = f(x[t - 1]) is a
# recurrence that must read the new values), the name is bound by a call before the loop (a tensor, not a list),
# is not bound anew inside it, and the new name is free in that function.


def _saved_by(saved: Location | None, write: Location, st: ast.stmt) -> bool:
    """The stale tensor was saved by the write's own right-hand side: on the write's line, or in a function of
    the same file that the line calls by name (``self.do_something(x[i], j)``)."""
    if saved is None or saved.filename != write.filename:
        return False
    if saved.lineno == write.lineno:
        return True
    tree = parse(source_of(saved.filename))
    if tree is None:
        return False
    called = {
        (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id if isinstance(n.func, ast.Name) else "")
        for n in ast.walk(st)
        if isinstance(n, ast.Call)
    }
    return any(
        isinstance(f, ast.FunctionDef) and f.name in called and f.lineno < saved.lineno <= (f.end_lineno or f.lineno)
        for f in ast.walk(tree)
    )


def after_write_lines(ctx: Context, graph: Graph, p: Problem, facts: Facts) -> tuple[int, ...]:
    """The statements to run again after a write (not an optimizer's step) so the loss reads what it wrote."""
    from .causes.chained import recompute_lines

    loc = _write_here(ctx)
    if loc is None:
        return ()
    if loc != ctx.write_at and not (
        ctx.site is not None and any(str(ctx.tensor or "").startswith(m + ".") for m in ctx.site.modules)
    ):
        # a helper's write seen through its call: recomputed after only when it moves a model's weights (an update
        # that is no step, NOTE [Updates that are not steps]); a buffer it fills (the next batch) is not re-read
        return ()
    return recompute_lines(replace(ctx, step_line=loc.lineno, optimizer=None), graph, p, facts)


def _write_here(ctx: Context) -> Location | None:
    """The write as the failing function sees it: its own statement, or the one statement before the backward that
    calls the function the write ran in (``sam.ascend()`` for a ``p.add_(e_w)`` in a hand-written SAM)."""
    loc, site = ctx.write_at, ctx.site
    if loc is None or site is None:
        return None
    if loc.filename == site.filename and site.holds(loc.lineno):
        return loc
    return _calling_write(ctx)


def _recompute_after_write(ctx: Context) -> Proposal | None:
    loc, site = _write_here(ctx), ctx.site
    if loc is None or site is None or not ctx.after_write:
        return None
    text = statements_text(ctx, ctx.after_write)
    edit = insert_lines(ctx, loc.lineno, text, after=True) if text else None
    if edit is None:
        return None
    what = ", ".join(site.text(line).strip().split("=")[0].strip() for line in ctx.after_write)
    return Proposal(
        Fix(
            keeps_forward=False,
            summary=T(
                "recompute {what} after the write at {where}, so that {loss} is built from the values it wrote",
                what=what,
                where=loc.where,
                loss=ctx.l,
            ),
            trains=T("{loss} trains what it reaches, computed from the written values", loss=ctx.l),
            edits=(edit,),
            claims=claim(ctx, ctx.reach),
        ),
        ctx.reach,
        True,
    )


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _written(st: ast.stmt) -> set[str]:
    """The names whose tensors ``st`` writes: an assignment's targets, an in-place method's receiver."""
    if isinstance(st, ast.Expr):
        call = st.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr.endswith("_"):
            root = _root(call.func.value)
            return {root} if root else set()
        return set()
    targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AugAssign) else []
    return {r for t in targets for r in [_root(t)] if r}


def _calling_write(ctx: Context) -> Location | None:
    """The one statement of the failing backward's block, before it, that calls the function the write ran in
    (``next_labels = stream.fill(staging)`` for a ``buffer.copy_(wave)`` inside ``fill``): the write, as the
    failing function sees it."""
    loc, site, back = ctx.write_at, ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    other = parse(source_of(loc.filename)) if loc is not None else None
    helper = function_of(other, loc.lineno) if other is not None and loc is not None else None
    if helper is None or tree is None or site is None or back is None:
        return None
    backward = statement_at(tree, back)
    block = block_of(tree, backward) or []  # the backward's own block (its loop)
    calls = [st for st in block if st.lineno < back and site.holds(st.lineno) and calls_name(st, helper.name)]
    return Location(site.filename, calls[0].lineno) if len(calls) == 1 else None


def _move_write(ctx: Context) -> Proposal | None:
    """The write statement moved to right after the failing backward, when nothing between them reads it (a write
    inside a helper: the statement of the failing function that calls it)."""
    loc, site, back = ctx.write_at, ctx.site, ctx.backward_line
    if loc is not None and site is not None and (loc.filename != site.filename or not site.holds(loc.lineno)):
        loc = _calling_write(ctx)
    if loc is None or site is None or back is None or loc.filename != site.filename or not site.holds(loc.lineno):
        return None
    tree = site.tree()
    write = statement_at(tree, loc.lineno) if tree is not None else None
    if write is None or not isinstance(write, (ast.Expr, ast.AugAssign, ast.Assign)) or write.lineno == back:
        return None
    block = block_of(tree, write)
    if block is None:
        return None
    later = [st for st in block if st.lineno > write.lineno]
    backward = next((st for st in later if st.lineno <= back <= (st.end_lineno or st.lineno)), None)
    if backward is None:
        return None
    between = later[: later.index(backward)]
    written = _written(write)
    if not written:
        return None
    if any(names(st, ast.Load) & written for st in [*between, backward]):
        return None  # what it writes is read before the backward: moving it changes the forward
    span = span_of(site, write.lineno)
    if span is None:
        return None
    text = "\n".join(site.text(i).strip() for i in range(span[0], span[1] + 1))
    insert = insert_lines(ctx, back, text, after=True)
    if insert is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T("move the write at {where} after {loss}.backward()", where=loc.where, loss=ctx.l),
            trains=T(
                "the same as intended: the backward uses the values the forward saved; the write happens after it"
            ),
            edits=all_edits(Edit(site.filename, span[0], span[1], ""), insert),
        ),
    )


def general_fixes(ctx: Context) -> list[Proposal]:
    """The general candidates for a write to a saved tensor, best first (each only where its rewrite exists)."""
    found = [
        _clone_where_saved(ctx),
        _clone_where_read(ctx),
        _clone_at_binding(ctx),
        _clone_own_reads(ctx),
        _read_from_copy(ctx),
        _recompute_after_write(ctx),
        _move_write(ctx),
    ]
    return [_off_graph(ctx, f) for f in found if f is not None]


def _off_graph(ctx: Context, proposal: Proposal) -> Proposal:
    """``proposal`` with the updates of a buffer that holds a graph put under no_grad, when its edits leave those
    updates as they are (NOTE [A buffer updated with values that have a graph])."""
    wrapped = buffer_updates_off_graph(ctx)
    fix = proposal.fix
    if not wrapped or not fix.edits or any(e.start <= w.end and w.start <= e.end for e in fix.edits for w in wrapped):
        return proposal
    trains = fix.trains + T("; the buffer's update runs under no_grad, as nn.BatchNorm's running statistics do")
    edits = tuple(sorted((*fix.edits, *wrapped), key=lambda e: e.start))
    return replace(proposal, fix=replace(fix, edits=edits, trains=trains))


# NOTE [Candidates]
# Causes were once the only source of fixes, and a fix held only on the pattern its
# cause was written for: on a script of a new shape the note had a sentence, or a
# fix that changed the arithmetic. The rewrites here need only the sites (where the
# tensor was saved and by which expression, where it was written, where the backward
# is), so they apply to code no cause has seen. They are ranked after the cause's
# fixes that carry checked code and before those that do not (causes.fixes_for);
# the judge and gradlab fix's oracles then treat them like any fix: a copy where it
# is saved keeps the forward (checked bitwise by gradlab fix), a recompute after the
# write does not and says so, a moved write keeps it only when nothing reads the
# written tensor before the backward (else it is not offered).
