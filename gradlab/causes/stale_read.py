"""Cause ``stale_read``: the loss reads an earlier forward's tensor, whose graph a backward freed, where a fresh one
computed since was meant; its detector and its fixes.

NOTE [A fresh forward left unread]
A common slip in code that runs a model twice in one step (the discriminator, then the
generator's turn; a clean pass, then an adversarial pass at perturbed embeddings): the
second forward is computed, but the loss reads the first one's tensor, whose graph the
first backward freed. Two shapes, both read from the failing function's source and the
frame's values:
- a *twin*: the loss reads ``self.pred_fake`` (the discriminator's turn, an attribute)
  while the function computed a local ``pred_fake`` of its own before that read: the
  local is read in its place;
- a *dead store*: ``logits = self.module(**inputs)`` is bound and rebound before anything
  reads it, while the loss reads ``outputs`` from the first pass: the fresh forward is
  bound to ``outputs``.
The stale tensor is the one whose graph holds the node the failing backward found freed;
the fresh one's graph does not hold it.
"""

from __future__ import annotations

import ast
import linecache
import re
import textwrap
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, freeing_call, holds_node, leaves_of, resolve_dotted
from ..fixes import Fix, Proposal, indent_of
from ..graph import Graph, GraphNode
from ..i18n import T
from ..location import Location
from ..source import (
    blocks,
    calls_method,
    function_of,
    loop_body_of,
    names,
    parse,
    preceding,
    statement_at,
    under_grad_off,
)

if TYPE_CHECKING:
    from ..evidence import Problem

__all__ = ["stale_read_context", "stale_read_fixes", "rederived_context", "updated_since_context", "made_read_here"]


def _dotted(node: ast.AST) -> str | None:
    """``self.pred_fake`` of an attribute chain on a name; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _reads(node: ast.AST) -> set[str]:
    """The names and attribute chains ``node`` reads (``self.pred_fake``, ``outputs``)."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load):
            d = _dotted(n)
            if d is not None:
                found.add(d)
    return found


def _stores(st: ast.stmt) -> set[str]:
    """What ``st`` assigns: its names and attribute chains, and the tensor an indexed assignment writes into
    (``buf`` of ``buf[i] = x``)."""
    targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AugAssign) else []
    found: set[str] = set()
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                d = _dotted(n)
                if d is not None:
                    found.add(d)
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                d = _dotted(n.value)
                if d is not None:
                    found.add(d)
    return found


def _same_output(stale: object, fresh: object, node: GraphNode) -> bool:
    """``fresh`` is the same output of the same computation as ``stale``, run again: made by the same kind of node
    from the same parameters, with as many dimensions and the same last one, and without the freed ``node``
    (NOTE [A fresh forward left unread]: an encoder's outputs kept from a shape check at module level, next to
    the training function's own)."""
    return (
        isinstance(stale, torch.Tensor)
        and isinstance(fresh, torch.Tensor)
        and stale.grad_fn is not None
        and fresh.grad_fn is not None
        and stale.grad_fn.name() == fresh.grad_fn.name()
        and stale.dim() == fresh.dim() > 0
        and stale.shape[-1] == fresh.shape[-1]
        and not holds_node(fresh, node)
        and bool(leaves_of(stale))
        and leaves_of(stale) == leaves_of(fresh)
    )


def _elements(target: ast.expr) -> list[ast.expr]:
    return list(target.elts) if isinstance(target, ast.Tuple) else [target]


def _callee(st: ast.Assign) -> str | None:
    return ast.unparse(st.value.func) if isinstance(st.value, ast.Call) else None


def _made_by(tree: ast.Module, name: str, function: ast.AST) -> tuple[int, str | None] | None:
    """Where ``name`` is assigned outside ``function``, once: its position among the targets, and the callee."""
    inside = {id(n) for n in ast.walk(function)}
    found = [
        (k, _callee(st))
        for st in ast.walk(tree)
        if isinstance(st, ast.Assign) and id(st) not in inside and len(st.targets) == 1
        for k, t in enumerate(_elements(st.targets[0]))
        if _dotted(t) == name
    ]
    return found[0] if len(found) == 1 else None


def _reader_lines(function: ast.AST, stale: str, after: int) -> list[int]:
    """The lines of ``function`` after line ``after`` whose statements read ``stale``: a loop or branch whose header
    reads it once for its whole body (its edit covers the body), else each simple statement."""
    covered: set[int] = set()
    lines: list[int] = []
    for n in ast.walk(function):
        header = n.iter if isinstance(n, ast.For) else n.test if isinstance(n, (ast.While, ast.If)) else None
        if header is not None and isinstance(n, ast.stmt) and n.lineno > after and stale in _reads(header):
            lines.append(n.lineno)
            covered |= set(range(n.lineno, (n.end_lineno or n.lineno) + 1))
    for n in ast.walk(function):
        if (
            isinstance(n, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return))
            and n.lineno > after
            and n.lineno not in covered
            and n.value is not None
            and stale in _reads(n.value)
        ):
            lines.append(n.lineno)
    return sorted(set(lines))


def _stale_on_path(
    before: list[ast.stmt], loss: str, facts: Facts, node: GraphNode
) -> tuple[list[str], list[ast.Assign | ast.AugAssign]]:
    """The names on the loss's data path whose tensor holds ``node`` (the stale ones), and the statements of that
    path (the assignments ``before`` the backward that build the loss, last first)."""
    needed = {loss}
    path: list[ast.Assign | ast.AugAssign] = []
    for st in reversed(before):
        if isinstance(st, (ast.Assign, ast.AugAssign)) and _stores(st) & needed:
            path.append(st)
            needed |= _reads(st.value)
    stale = sorted(d for d in needed if d != loss and holds_node(resolve_dotted(d, facts.namespace), node))
    return stale, path


def stale_read_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """The context when the failing loss reads a stale tensor next to a fresh forward (NOTE above)."""
    site, line, loss = facts.site, facts.backward_line, base.loss
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not loss or node is None or node.seq is None:
        return None
    function = function_of(tree, line)
    if function is None:
        return None
    before = [st for st in preceding(tree, line) if function.lineno < st.lineno]
    stale, path = _stale_on_path(before, loss, facts, node)
    assigned = {d for st in ast.walk(function) if isinstance(st, (ast.Assign, ast.AugAssign)) for d in _stores(st)}
    # the function's parameters are handed in on purpose (a reference the caller computed): never stale reads
    assigned |= {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    for s in stale:
        readers = [st for st in path if s in _reads(st.value)]
        value = resolve_dotted(s, facts.namespace)
        same = [
            (st.lineno, k, target, _callee(st))
            for st in before
            if isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and site.holds(st.lineno)
            and s not in assigned  # read, never assigned, by the function: kept from a forward outside it
            and readers
            and all(r.lineno > st.lineno for r in readers)
            for k, t in enumerate(_elements(st.targets[0]))
            if (target := _dotted(t)) is not None
            and target != s
            and _same_output(value, resolve_dotted(target, facts.namespace), node)
        ]
        if len(same) > 1:  # the same position of the same call's results as where the stale one was made
            made = _made_by(tree, s, function)
            same = [c for c in same if made is not None and (c[1], c[3]) == made]
        if len(same) == 1:
            at, _k, fresh_name, _call = same[0]
            lines = _reader_lines(function, s, at)
            return replace(
                base,
                tensor=s,
                extra={**base.extra, "stale": s, "fresh": fresh_name, "lines": " ".join(str(k) for k in lines)},
            )
        for k, st in enumerate(before):
            if not isinstance(st, ast.Assign) or len(st.targets) != 1:
                continue
            target = _dotted(st.targets[0])
            if target is None or target == s or not site.holds(st.lineno):
                continue
            fresh = resolve_dotted(target, facts.namespace)
            twin = (
                target.split(".")[-1] == s.split(".")[-1]
                and isinstance(fresh, torch.Tensor)
                and fresh.grad_fn is not None
                and not holds_node(fresh, node)
                and readers
                and all(r.lineno > st.lineno for r in readers)
            )
            if twin:
                return replace(
                    base,
                    tensor=s,
                    extra={
                        **base.extra,
                        "stale": s,
                        "fresh": target,
                        "lines": " ".join(str(r.lineno) for r in readers),
                    },
                )
            if _dead_forward(st, before[k + 1 :], target, facts.namespace) and isinstance(st.targets[0], ast.Name):
                return replace(
                    base, tensor=s, extra={**base.extra, "stale": s, "fresh": target, "rebind": str(st.lineno)}
                )
    return None


def rederived_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """The loss reads a tensor derived from an earlier forward's output (``back = out[:, 0:1]``) while the function
    has bound that output anew since, without deriving it again (NOTE [A derived tensor not derived again])."""
    site, line, loss = facts.site, facts.backward_line, base.loss
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not loss or node is None or node.seq is None:
        return None
    function = function_of(tree, line)  # None: the loop is the module's own code
    before = [st for st in preceding(tree, line) if function is None or function.lineno < st.lineno]
    stale, path = _stale_on_path(before, loss, facts, node)
    derive: list[int] = []
    fresh_names: list[str] = []
    readers: list[ast.Assign | ast.AugAssign] = []
    for s in stale:
        made = [st for st in before if isinstance(st, ast.Assign) and s in _stores(st)]
        if not made or made[-1].lineno != made[-1].end_lineno:
            continue
        derivation = made[-1]
        for r in sorted(_reads(derivation.value)):
            rebound = [st for st in before if st.lineno > derivation.lineno and r in _stores(st)]
            fresh = resolve_dotted(r, facts.namespace)
            if not rebound or not isinstance(fresh, torch.Tensor) or fresh.grad_fn is None or holds_node(fresh, node):
                continue
            reading = [st for st in path if s in _reads(st.value) and st.lineno > rebound[-1].lineno]
            if reading:
                derive.append(derivation.lineno)
                fresh_names.append(r)
                readers += reading
                break
    if not derive or not readers or _carried(tree, line, fresh_names):
        return None
    first = min(readers, key=lambda st: st.lineno)
    if not site.holds(first.lineno):
        return None
    return replace(
        base,
        tensor=", ".join(stale),
        extra={
            **base.extra,
            "stale": ", ".join(s for s in stale),
            "fresh": ", ".join(dict.fromkeys(fresh_names)),
            "derive": " ".join(str(k) for k in sorted(set(derive))),
            "before": str(first.lineno),
        },
    )


def _carried(tree: ast.Module, line: int, fresh: list[str]) -> bool:
    """One of ``fresh`` is carried into the next iteration of the loop around ``line``: the body reads it before it
    binds it (``state = encode(next_obs)`` for the next step's action): bound anew for the next iteration, not a
    forward of the same data again, so the tensors derived from the earlier one are the right ones."""
    body = loop_body_of(tree, line) or []
    simple = sorted(
        (n for st in body for n in ast.walk(st) if isinstance(n, ast.stmt) and not list(blocks(n))),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for name in fresh:
        for st in simple:  # in the order they run, each statement's reads before its stores
            if name in names(st, ast.Load):
                return True
            if name in _stores(st):
                break
    return False


# NOTE [A derived tensor not derived again]
# Code with two phases in one loop (labelled, then unlabelled batches) derives
# tensors from a forward's output in one branch (back = out[:, 0:1]) and reads
# them in the other, where the forward ran again but the derivation did not: the
# loss reads the slice of the earlier forward, whose weights a step has changed
# (an in-place error) or whose graph a backward freed. The derivation is found on
# the function's lines before the loss (its last single-line assignment), the
# output it reads bound anew after it, and the frame's values confirm it: the
# stale tensor's graph holds the failing node, the fresh output's does not. The
# fix repeats the derivation lines right before the first statement on the loss's
# path that reads them: the loss then reads the fresh forward. Not when the output
# is carried into the next iteration (the body reads it before it binds it: the
# next observation's features, bound for the next step's action): that binding
# is the next iteration's forward, and the derived tensors belong to this one.


# NOTE [A tensor read again after the update that freed it]
# A function that updates part of a model inside its own forward (vqtorch's
# inplace_optimizer: a codebook loss backwarded and its optimizer stepped, then the
# codes looked up again "with the updated codebook") computes a tensor from those
# parameters before its backward (codebook = self.affine(self.codebook.weight))
# and reads it again after the step. That backward freed the tensor's graph, so
# the later loss built on the read fails; and the value read is the one from
# before the update, not the updated one the code reads it for. Found from the
# record: the nodes above the freed one that were made after the freeing backward
# (newer than its newest node) and saved on lines of the function that ran it,
# after it, are the reads; the one name the first read's statement reads that the
# function bound before the backward (not under no_grad or inference_mode) and
# does not bind again before the read is the stale tensor. Offered only when an
# optimizer step runs between the backward and the read: without one, the value
# is the same and another cause fits. The fix repeats the binding right before
# the read: the read then sees the updated parameters through a graph of its own.


def _reads_since(graph: Graph, node: GraphNode, newest: int, filename: str, start: int, end: int) -> list[int]:
    """The lines of ``filename`` in ``(start, end]`` where nodes above ``node`` made after sequence number
    ``newest`` saved their tensors: the first reads, after a backward, of the tensor whose graph holds ``node``."""
    parents: dict[int, list[GraphNode]] = {}
    for n in graph.nodes:
        for m in n.next_ids:
            parents.setdefault(m, []).append(n)
    saved_at: dict[int, list[Location]] = {}
    for s in graph.saved:
        if s.saved_at is not None:
            saved_at.setdefault(s.node_id, []).append(s.saved_at)
    lines: set[int] = set()
    seen, todo = {node.id}, [node.id]
    while todo:
        for up in parents.get(todo.pop(), []):
            if up.id in seen:
                continue
            seen.add(up.id)
            if up.seq is not None and up.seq > newest and saved_at.get(up.id):
                # a read made after the backward: here when in the function, past it; a read elsewhere ends the path
                lines |= {x.lineno for x in saved_at[up.id] if x.filename == filename and start < x.lineno <= end}
                continue
            todo.append(up.id)
    return sorted(lines)


def made_read_here(graph: Graph, p: Problem, facts: Facts) -> tuple[tuple[int, str], ...]:
    """The reads, on the failing function's lines before its backward, of a tensor made elsewhere whose graph holds
    the freed node of ``p`` (``self.fake_clean`` in ``d_fake = self.critic(noisy, self.fake_clean)``): (line,
    expression) each. Where the failing loss takes the part :func:`gradlab.parts.made_apart` found, for a detach
    there that leaves the tensor attached for the other losses that read it (NOTE [A part no optimizer steps])."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or tree is None or line is None or node is None:
        return ()
    before = [st for st in preceding(tree, line) if site.holds(st.lineno)]
    stored = {d for st in before for d in _stores(st)}
    return tuple(
        (st.lineno, expr)
        for st in before
        if isinstance(st, ast.Assign) and st.lineno == st.end_lineno
        for expr in sorted(_reads(st.value) - stored)
        if holds_node(resolve_dotted(expr, facts.namespace), node)
    )


def updated_since_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """A tensor bound before a backward and an optimizer step of one function, read by it again after them
    (NOTE [A tensor read again after the update that freed it])."""
    freed_at, call = p.location, freeing_call(p, facts)
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if freed_at is None or call is None or call.newest_node is None or node is None:
        return None
    tree = parse("".join(linecache.getlines(freed_at.filename)))
    function = function_of(tree, freed_at.lineno) if tree is not None else None
    if tree is None or function is None:
        return None
    end = function.end_lineno or function.lineno
    reads = _reads_since(graph, node, call.newest_node, freed_at.filename, freed_at.lineno, end)
    read = statement_at(tree, reads[0]) if reads else None
    if read is None or function_of(tree, read.lineno) is not function:
        return None
    between = [st for st in preceding(tree, read.lineno) if st.lineno > freed_at.lineno]
    if not any(calls_method(st, ("step",)) for st in between):
        return None
    before = [st for st in preceding(tree, freed_at.lineno) if st.lineno > function.lineno]

    def binding_of(name: str) -> ast.Assign | None:
        bound = [st for st in before if isinstance(st, ast.Assign) and name in _stores(st)]
        if not bound or any(name in _stores(st) for st in between) or under_grad_off(tree, bound[-1].lineno):
            return None
        if isinstance(bound[-1].value, (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.Constant)):
            return None  # a container the loop fills (surrogates = []) or a number: no graph of its own to compute
        return bound[-1]

    found: list[tuple[str, ast.Assign]] = []
    for name in sorted(names(read, ast.Load)):
        binding = binding_of(name)
        if binding is not None:
            found.append((name, binding))
    until = facts.backward_line if facts.site is not None and facts.site.filename == freed_at.filename else None
    chain = _forward_chain(function, read.lineno, until or end, binding_of, facts.namespace)
    if chain is not None:  # NOTE [Every tensor of the forward read again after the update]
        stale, statements = chain
        return replace(
            base,
            tensor=stale[0],
            extra={
                **base.extra,
                "stale": " and ".join(stale),
                "fresh": stale[0],
                "updated": freed_at.filename,
                "derive_all": " ".join(f"{st.lineno}:{st.end_lineno or st.lineno}" for st in statements),
                "before": str(read.lineno),
                "freed_line": str(freed_at.lineno),
            },
        )
    if len(found) != 1:
        return None
    name, binding = found[0]
    return replace(
        base,
        tensor=name,
        extra={
            **base.extra,
            "stale": name,
            "fresh": name,
            "updated": freed_at.filename,
            "derive": f"{binding.lineno} {binding.end_lineno or binding.lineno}",
            "before": str(read.lineno),
            "freed_line": str(freed_at.lineno),
        },
    )


# NOTE [Every tensor of the forward read again after the update]
# A GAN step that computes the encoder's codes and the generator's images once (recon, swapped), backwards the
# critic's loss through them, steps the critic, and then builds the generator's loss from the same tensors: the
# critic's backward freed their whole graph, the encoder's part included. Repeating one binding (recon) leaves the
# next read (swapped), and the codes both are computed from, in the freed graph: the patched run fails on the next
# one. Every name the statements after the step read that the function bound before the backward with a graph, and
# every such name those bindings read in turn, is computed again, in the order the function computed them, right
# before the first read: one combined edit. Names whose values have no graph (the data, a drawn noise) are read as
# they are, so the forward's inputs stay the same.
def _forward_chain(
    function: ast.AST, first_read: int, last: int, binding_of: Any, namespace: Mapping[str, Any]
) -> tuple[list[str], list[ast.Assign]] | None:
    """The names read after the update (lines ``first_read`` to ``last``, the failing backward's) bound before the
    backward with a graph, and
    the bindings they and what those read come from (NOTE [Every tensor of the forward read again after the
    update]); None unless it takes more than one statement."""
    from .kept_state import tensors_with_graph

    def graph_held(name: str) -> bool:
        value = namespace.get(name)
        return bool(tensors_with_graph(value)) or (isinstance(value, torch.Tensor) and value.grad_fn is not None)

    later = [
        st
        for st in ast.walk(function)
        if isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)) and first_read <= st.lineno <= last
    ]
    wanted = sorted({n for st in later for n in names(st, ast.Load) if graph_held(n) and binding_of(n) is not None})
    statements: dict[int, ast.Assign] = {}
    todo = list(wanted)
    while todo:
        binding = binding_of(todo.pop())
        if binding is None or binding.lineno in statements:
            continue
        if binding.lineno != (binding.end_lineno or binding.lineno):
            return None
        statements[binding.lineno] = binding
        todo += [n for n in names(binding.value, ast.Load) if graph_held(n) and binding_of(n) is not None]
    if len(statements) < 2 or len(wanted) < 2:
        return None
    return wanted, [statements[k] for k in sorted(statements)]


def _dead_forward(st: ast.Assign, later: list[ast.stmt], target: str, namespace: Mapping[str, Any]) -> bool:
    """``target = model(...)`` (a call of a module of the frame) rebound by a later statement before anything reads
    it."""
    call = st.value
    if not isinstance(call, ast.Call) or not isinstance(
        resolve_dotted(_dotted(call.func) or "", namespace), torch.nn.Module
    ):
        return False
    for other in later:
        if target in _reads(other):
            return False
        if target in _stores(other):
            return True
    return False


def _updated_fixes(ctx: Context) -> list[Proposal]:
    """The binding repeated right before the read after the update (NOTE [A tensor read again after the update
    that freed it])."""
    filename, stale = ctx.extra["updated"], ctx.extra["stale"]
    at = int(ctx.extra["before"])
    lines = linecache.getlines(filename)
    spans = [
        tuple(int(k) for k in span.split(":"))
        for span in (ctx.extra.get("derive_all") or ctx.extra["derive"].replace(" ", ":")).split()
    ]
    if not all(len(sp) == 2 and 0 < sp[0] <= sp[1] < at <= len(lines) for sp in spans):
        return []
    indent = lines[at - 1][: len(lines[at - 1]) - len(lines[at - 1].lstrip())]
    source = "".join(textwrap.dedent("".join(lines[a - 1 : b])) for a, b in spans)
    text = "\n".join(indent + t for t in source.splitlines())
    where = Location(filename, at).where
    freed = Location(filename, int(ctx.extra["freed_line"])).where
    if ctx.extra.get("derive_all"):  # NOTE [Every tensor of the forward read again after the update]
        summary = T(
            "compute {stale} again after the update, before they are read at {where}, with what they are computed "
            "from: they were computed before the backward at {freed}, which freed their graph",
            stale=stale,
            where=where,
            freed=freed,
        )
        trains = T(
            "{loss} trains what it reaches through {stale} computed again, each with a graph of its own, from the "
            "parameters as they are after the step",
            loss=ctx.l,
            stale=stale,
        )
    else:
        summary = T(
            "compute {stale} again after the update, before it is read at {where}: it was computed before the "
            "backward at {freed}, which freed its graph, and the step after it changed what it is computed from",
            stale=stale,
            where=where,
            freed=freed,
        )
        trains = T(
            "{loss} trains what it reaches through {stale} computed from the updated parameters",
            loss=ctx.l,
            stale=stale,
        )
    fix = Fix(keeps_forward=False, summary=summary, trains=trains, edits=(Edit(filename, at, at - 1, text),))
    return [Proposal(fix, ctx.reach, False, describe=True)]


def stale_read_fixes(ctx: Context) -> list[Proposal]:
    site, stale, fresh = ctx.site, ctx.extra.get("stale"), ctx.extra.get("fresh")
    tree = site.tree() if site is not None else None
    if site is None or tree is None or not stale or not fresh:
        return []
    if ctx.extra.get("updated"):
        return _updated_fixes(ctx)
    edits: list[Edit] = []
    if ctx.extra.get("derive"):
        at = int(ctx.extra["before"])
        lines = [int(k) for k in ctx.extra["derive"].split()]
        text = "\n".join(site.text(k).strip() for k in lines)
        indent = indent_of(site, at)
        edits.append(Edit(site.filename, at, at - 1, "\n".join(indent + t for t in text.splitlines())))
        summary = T(
            "derive {stale} again from {fresh}, the forward computed since, before the loss reads it (at {where}): "
            "it was derived from the earlier forward's output",
            stale=stale,
            fresh=fresh,
            where=Location(site.filename, at).where,
        )
    elif ctx.extra.get("rebind"):
        line = int(ctx.extra["rebind"])
        text = site.text(line)
        new = re.sub(r"^(\s*)" + re.escape(fresh) + r"(\s*=)", lambda m: m[1] + stale + m[2], text, count=1)
        if new == text:
            return []
        edits.append(Edit(site.filename, line, line, new))
        summary = T(
            "bind the fresh forward to {stale}: {fresh} = ... is never read, and the loss reads {stale} from the "
            "earlier forward, whose graph the earlier backward freed",
            stale=stale,
            fresh=fresh,
        )
    else:
        pattern = re.compile(r"(?<![\w.])" + re.escape(stale) + r"(?![\w])")
        for line in sorted({int(x) for x in ctx.extra.get("lines", "").split()}):
            st = statement_at(tree, line)
            if st is None:
                return []
            start, end = st.lineno, st.end_lineno or st.lineno
            if not all(site.holds(k) or k > start for k in range(start, end + 1)):
                return []
            old = "\n".join(site.text(k) for k in range(start, end + 1))
            edits.append(Edit(site.filename, start, end, pattern.sub(fresh, old)))
        if not edits:
            return []
        summary = T(
            "read {fresh}, the forward this function computed, where the loss reads {stale} from the earlier "
            "forward, whose graph the earlier backward freed",
            stale=stale,
            fresh=fresh,
        )
    return [
        Proposal(
            Fix(
                keeps_forward=False,
                summary=summary,
                trains=T("{loss} trains what it reaches through the fresh forward", loss=ctx.l),
                edits=tuple(edits),
            ),
            ctx.reach,
            False,
            describe=True,
        )
    ]
