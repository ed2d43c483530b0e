"""Cause ``list_never_cleared``: a list that each iteration appends graph-holding tensors to is never cleared; its fixes."""

from __future__ import annotations

import ast
import collections
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from ..context import Context
from ..evidence import Facts, sequence_of
from ..fixes import Fix, Proposal, all_edits, insert_lines, keeping
from ..graph import Graph
from ..i18n import T, join
from ..source import enclosing, function_of, loop_body_of

if TYPE_CHECKING:
    from ..recorder import BackwardCall


#: What a loop appends to and never clears: a list, or a deque (a memory bank with ``maxlen``).
_SEQUENCES = (list, collections.deque)


def buffer_context(base: Context, graph: Graph, facts: Facts, call: BackwardCall | None) -> Context | None:
    """A list in the frame holding tensors of an earlier iteration's graph (log-probs never cleared)."""
    seqs = {n.seq for n in graph.nodes if n.seq is not None}
    limit = call.newest_node if call is not None else None
    found: list[str] = []
    lists: dict[str, list[Any]] = {}
    bounded: set[str] = set()  # deques: a memory of its own length, cleared only where it holds a graph
    for key, value in facts.namespace.items():
        if not isinstance(key, str) or key.startswith("_"):
            continue
        held = {key: value} if isinstance(value, _SEQUENCES) else {}
        if isinstance(value, torch.nn.Module):
            held = {
                f"{key}.{a}": v for a, v in vars(value).items() if isinstance(v, _SEQUENCES) and not a.startswith("_")
            }
        for name, seq in held.items():
            lists[name] = list(seq)
            if isinstance(seq, collections.deque):
                bounded.add(name)
    for key, value in lists.items():
        if len(value) < 2:
            continue
        old = [
            t
            for item in value
            # a record of tensors (a named tuple of an estimate, its event and time) holds them too
            for t in (item if isinstance(item, tuple) else (item,))
            if isinstance(t, torch.Tensor)
            and t.grad_fn is not None
            and (s := sequence_of(t.grad_fn)) in seqs
            and (limit is None or (s is not None and s <= limit))
        ]
        if old:
            found.append(key)
    # a list never added to (the targets of a style transfer, built once before the loop) is no buffer that
    # grows: it is a constant the loop reads
    site = facts.site
    source = site.source if site is not None else ""
    found = [
        k for k in found if re.search(re.escape(k.rsplit(".", 1)[-1]) + r"\s*(\.(append|extend|insert)\(|\+=)", source)
    ]
    found = [k for k in found if not _bound_fresh_in_loop(facts, k) and not _filled_before_loop(facts, k)]
    found = [k for k in found if not _read_by_position(facts, k)]  # NOTE [A history read back by position]
    if not found:
        return None
    buffer = sorted(found)[0]
    length = len(lists[buffer])
    site = facts.site
    partners: list[str] = []
    if site is not None and facts.backward_line is not None:
        tree = site.tree()
        body = loop_body_of(tree, facts.backward_line) if tree is not None else None
        appended = _appended_in(body or [])
        owner = buffer.rsplit(".", 1)[0] if "." in buffer else None
        partners = sorted(
            k
            for k, v in lists.items()
            if k != buffer
            and k not in bounded
            and len(v) == length
            and (k in appended or (owner is not None and k.startswith(owner + ".")))
        )
        if buffer not in appended and owner is None:
            partners = []
    return replace(base, buffer=buffer, buffers=(buffer, *partners))


# NOTE [A history read back by position]
# A loop that appends each step's state to a list and reads it back by position (states[-1] to make the next state,
# states[start + 1] for a window's predictions) keeps a history, not a buffer of losses: clearing it after the
# backward makes the next read fail (states[-1] of an empty list). Such a list is not offered for clearing.
def _read_by_position(facts: Facts, name: str) -> bool:
    """The failing function (or the module, for a loop at top level) reads ``name`` by an index (``states[-1]``, ``states[k + 1]``), not only by iterating
    it or handing it on."""
    site = facts.site
    tree = site.tree() if site is not None else None
    if tree is None or not facts.backward_line:
        return False
    function = function_of(tree, facts.backward_line) or tree  # the module's own code when the loop is at top level
    return any(
        isinstance(n, ast.Subscript)
        and isinstance(n.ctx, ast.Load)
        and ast.unparse(n.value) == name
        and not isinstance(n.slice, ast.Slice)
        for n in ast.walk(function)
    )


def _filled_before_loop(facts: Facts, name: str) -> bool:
    """A list of the failing function filled only by its own statements outside every loop that holds the failing
    backward (``scores.append(scorer(x))`` over the samples, before the epochs): a constant the loop reads, not a
    buffer each iteration adds to."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if "." in name or site is None or tree is None or line is None:
        return False
    function = function_of(tree, line)
    loops = [
        (st.lineno, st.end_lineno or st.lineno)
        for st in enclosing(tree, line)
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While))
    ]
    fills = [
        n.lineno
        for n in ast.walk(tree)
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("append", "extend", "insert")
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == name
        )
        or (isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name)
    ]
    return bool(fills) and all(
        function_of(tree, f) is function and not any(a <= f <= b for a, b in loops) for f in fills
    )


def _bound_fresh_in_loop(facts: Facts, name: str) -> bool:
    """``name = []`` runs at the top of a loop around the failing backward (``outputs = []`` for each batch, the
    backward in a loop over the models inside it): the list is cleared each time round, not kept."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if tree is None or line is None or "." in name:
        return False
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.While)) or not loop.lineno < line <= (loop.end_lineno or loop.lineno):
            continue
        for st in loop.body:
            if st.lineno >= line:
                break
            if (
                isinstance(st, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in st.targets)
                and isinstance(st.value, (ast.List, ast.ListComp))
            ):
                return True
    return False


def _appended_in(body: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "extend"):
                out.add(ast.unparse(n.func.value))
    return out


def buffered_fixes(ctx: Context) -> list[Proposal]:
    names = ctx.buffers or ((ctx.buffer,) if ctx.buffer else ())
    text = "\n".join(f"{n}.clear()" for n in names) if names else None
    edit = insert_lines(ctx, ctx.backward_line, text, after=True) if text else None
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "clear {names} after each backward, so that the next one goes through the new iteration's graph "
                    "only",
                    names=join(names, T(" and ")) if names else T("the list"),
                ),
                trains=T("{loss} trains what it reaches, from this iteration's tensors only", loss=ctx.l),
                edits=all_edits(edit),
            ),
        ),
        keeping(
            ctx,
            Fix(
                alternative=True,
                summary=T("keep only numbers in lists kept for logging: append .item() of each tensor"),
                trains=T("unchanged: the logged values take no part in backward"),
            ),
        ),
    ]
