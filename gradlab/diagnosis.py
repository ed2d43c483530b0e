"""Predict whether ``backward()`` will succeed, say why not, and what to do about it.

:func:`check` collects the graph of an output and returns a :class:`Diagnosis`:
one :class:`Problem` per freed node or stale saved tensor, each with its
:data:`~gradlab.advice.Cause` and the fixes that fit it (:mod:`gradlab.advice`).
Inside :func:`gradlab.track` the diagnosis knows who wrote a tensor and which
backward freed a node; outside, gradlab decides from the tensors themselves.

``str(diagnosis)`` is the short form (the one shown under a failing traceback):
the kind in one line, the user's line that did it with the op marked, the
tensor, where it was saved and which backward needed it, then the one fix that
fits as a ``help:`` line. :meth:`Diagnosis.details` lists every problem and
every fix with what it trains.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

import torch

from . import internals
from .advice import Cause, Context, Fix, cause_sentence, fixes_for
from .codes import code_for
from .graph import Graph, GraphNode, collect_active
from .i18n import _, _t, ngettext_
from .location import Location, frame_names
from .names import NamesLike, ViewKind
from .saved import SavedTensor, Write

if TYPE_CHECKING:
    from .recorder import BackwardCall, Recorder

__all__ = ["Diagnosis", "Problem", "ProblemKind", "check", "check_graph"]

#: The two ways a backward fails that gradlab diagnoses.
ProblemKind = Literal["graph_freed", "modified_in_place"]

_TITLES = {"graph_freed": "graph freed", "modified_in_place": "modified in place"}


@dataclass(frozen=True)
class Problem:
    """One reason a backward would fail, its cause, and the fixes that fit.

    ``kind`` is ``graph_freed`` or ``modified_in_place``; ``node`` the backward
    node that needs the tensor; ``tensor`` a readable name; ``where``/``code`` the
    user line that modified it (or, for a freed graph, the backward call that
    freed it). ``cause`` is what gradlab decided caused it, ``fixes`` the fixes
    for that cause, the likeliest first, each saying what it trains. ``given``
    and ``view`` are the tensor's name as data: the name the user gave and which
    view of it the tensor is (None without a name).
    """

    kind: ProblemKind
    node: str
    tensor: str
    shape: tuple[int, ...] | None
    saved_version: int | None
    current_version: int | None
    modified_by: str | None = None
    where: str | None = None
    code: str | None = None
    node_id: int | None = None
    cause: Cause = "unknown"
    fixes: tuple[Fix, ...] = field(default=(), repr=False)
    saved_at: Location | None = field(default=None, repr=False)
    location: Location | None = field(default=None, repr=False)
    writes: tuple[Write, ...] = field(default=(), repr=False)
    given: str | None = field(default=None, repr=False)
    view: ViewKind = field(default=None, repr=False)

    def sentence(self) -> str:
        """The problem in one sentence."""
        shape = f" {list(self.shape)}" if self.shape is not None and "[" not in self.tensor else ""
        where = f"{self.where}: {self.code}" if self.where and self.code else (self.where or "")
        if self.kind == "graph_freed":
            if where:
                return _t(
                    "{node} needs {tensor}{shape}, but its saved tensors were freed by the backward at {where}.",
                    node=self.node,
                    tensor=self.tensor,
                    shape=shape,
                    where=where,
                )
            return _t(
                "{node} needs {tensor}{shape}, but its saved tensors were freed.",
                node=self.node,
                tensor=self.tensor,
                shape=shape,
            )
        text = _t(
            "{tensor}{shape}, saved by {node} at version {saved}, is now at version {now}",
            tensor=self.tensor,
            shape=shape,
            node=self.node,
            saved=self.saved_version,
            now=self.current_version,
        )
        if self.modified_by:
            text += _t(": modified by {writer}", writer=self.modified_by)
        if where:
            text += _t(" at {where}", where=where)
        return _t("{sentence}.", sentence=text)


@dataclass(frozen=True)
class Diagnosis:
    """The answer of :func:`check`: ``ok`` is True when ``backward()`` would succeed.

    ``problems`` are the reasons it would not (the first is the one backward
    meets first); ``fixes`` the fixes of the first problem, the likeliest first;
    ``needed_by`` the backward call that failed (when a tracker saw it fail).
    """

    ok: bool
    problems: list[Problem]
    graph: Graph = field(repr=False)
    needed_by: Location | None = field(default=None, repr=False)
    failed: bool = False

    @property
    def kinds(self) -> list[str]:
        return sorted({p.kind for p in self.problems})

    @property
    def cause(self) -> Cause | None:
        """The cause of the first problem (None when ``ok``)."""
        return self.problems[0].cause if self.problems else None

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """The fixes of the first problem, the likeliest intent first."""
        return self.problems[0].fixes if self.problems else ()

    def __str__(self) -> str:
        if self.ok:
            return _t("ok: backward() would succeed ({summary}).", summary=self.graph.summary())
        return "\n".join(_short(self))

    def details(self) -> str:
        """Every problem, its cause, and every fix with what it trains."""
        if self.ok:
            return str(self)
        head = _("backward() failed ({summary}).") if self.failed else _("backward() would fail ({summary}).")
        lines = [head.format(summary=self.graph.summary())]
        for kind, title in (("modified_in_place", _("Modified in place")), ("graph_freed", _("Graph already freed"))):
            probs = [p for p in self.problems if p.kind == kind]
            if not probs:
                continue
            lines += ["", _t("{section}:", section=title)]
            lines += [f"  - {p.sentence()}" for p in probs[:8]]
            if len(probs) > 8:
                lines.append("  - " + _t("... and {n} more", n=len(probs) - 8))
        first = self.problems[0]
        lines += [
            "",
            _t("Cause: {cause}.", cause=cause_sentence(first.cause)),
            "",
            _("Fixes, by what you want to train:"),
        ]
        for i, fix in enumerate(first.fixes, 1):
            fix_lines = fix.lines()
            lines.append(f"  {i}. {fix_lines[0]}")
            lines += [f"     {line}" for line in fix_lines[1:]]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Diagnosis(ok={self.ok}, problems={len(self.problems)}, kinds={self.kinds}, cause={self.cause!r})"

    def _repr_html_(self) -> str:
        if self.ok:
            return f"<p>{html.escape(str(self))}</p>"
        short = html.escape(str(self))
        fixes = "".join(
            f"<li>{html.escape(fix.lines()[0])}"
            + (f"<pre>{html.escape(fix.code)}</pre>" if fix.code else "")
            + f"<br>{html.escape(_t('trains: {what}', what=fix.trains))}</li>"
            for fix in self.fixes
        )
        title = html.escape(_("All fixes, by what you want to train"))
        return f"<pre>{short}</pre><details><summary>{title}</summary><ol>{fixes}</ol></details>"


# -- the short form ---------------------------------------------------------------------------------------


def _short(d: Diagnosis) -> list[str]:
    p = d.problems[0]
    verb = "" if d.failed else _("would fail: ")
    lines: list[str] = []
    if p.kind == "modified_in_place":
        if p.modified_by:
            head = _t(
                "{verb}{tensor} was changed by {writer} after autograd saved it",
                verb=verb,
                tensor=p.tensor,
                writer=p.modified_by,
            )
        else:
            head = _t("{verb}{tensor} was changed after autograd saved it", verb=verb, tensor=p.tensor)
        lines.append(_t("{header}: {what}", header=_header("modified_in_place"), what=head))
        if p.location is not None:
            label = _t(
                "{writer}: version {saved} -> {now}",
                writer=p.modified_by or _("this write"),
                saved=p.saved_version,
                now=p.current_version,
            )
            lines += _quote(p.location, _op_span(p.location.code, p.writes[0].op if p.writes else None), label)
        else:
            lines.append(
                "   = "
                + _t(
                    "version {saved} when saved, {now} now (who wrote it is unknown outside gradlab.track())",
                    saved=p.saved_version,
                    now=p.current_version,
                )
            )
    else:
        if p.code:
            head = _t(
                "{verb}{node} needs saved tensors that were already freed by {call}",
                verb=verb,
                node=p.node,
                call=p.code,
            )
        else:
            head = _t("{verb}{node} needs saved tensors that were already freed", verb=verb, node=p.node)
        lines.append(_t("{header}: {what}", header=_header("graph_freed"), what=head))
        if p.location is not None:
            lines += _quote(p.location, _op_span(p.location.code, "backward"), _("freed them (no retain_graph=True)"))
    shape = f" {list(p.shape)}" if p.shape is not None and "[" not in p.tensor else ""
    if p.kind == "modified_in_place":
        if p.saved_at is not None:
            line = _t(
                "tensor: {tensor}{shape}, saved by {node} at version {version}, at {where}",
                tensor=p.tensor,
                shape=shape,
                node=p.node,
                version=p.saved_version,
                where=p.saved_at,
            )
        else:
            line = _t(
                "tensor: {tensor}{shape}, saved by {node} at version {version}",
                tensor=p.tensor,
                shape=shape,
                node=p.node,
                version=p.saved_version,
            )
        lines.append("   = " + line)
    if d.needed_by is not None:
        lines.append("   = " + _t("needed by: {call}", call=d.needed_by.trail()))
    more = len(d.problems) - 1
    if more:
        lines.append(
            "   = "
            + ngettext_(
                "and {n} more problem of this graph (diagnosis.details())",
                "and {n} more problems of this graph (diagnosis.details())",
                more,
            ).format(n=more)
        )
    lines.append("   = " + _t("cause: {cause}", cause=cause_sentence(p.cause)))
    if p.fixes:
        fix = p.fixes[0]
        lines.append(_t("help: {fix}", fix=fix.lines()[0]))
        if fix.code:
            lines += [f"   |     {line}" for line in fix.code.splitlines()]
        lines.append("   = " + _t("trains: {what}", what=fix.trains))
        if len(p.fixes) > 1:
            n = len(p.fixes) - 1
            lines.append(
                "   = "
                + ngettext_(
                    "{n} other fix, for other intents: print(diagnosis.details()), or python -m gradlab run --verbose",
                    "{n} other fixes, for other intents: print(diagnosis.details()), or python -m gradlab run --verbose",
                    n,
                ).format(n=n)
            )
    return lines


def _header(kind: str) -> str:
    """``error[GL0002 modified in place]``: the note's head, with the kind's stable code."""
    entry = code_for(kind)
    return entry.header() if entry is not None else f"error[{kind}]"


def _quote(loc: Location, span: tuple[int, int] | None, label: str) -> list[str]:
    """rustc-style: the location, the user's line, and the op marked under it."""
    code = loc.code
    number = str(loc.lineno)
    pad = " " * len(number)
    out = [f"  --> {loc.where}", f"{pad} |", f"{number} |     {code}"]
    start, end = span if span is not None else (0, len(code))
    out.append(f"{pad} |     {' ' * start}{'^' * max(1, end - start)} {label}")
    for caller in loc.callers:
        out.append(f"{pad} = " + _t("called from {caller}", caller=caller))
    return out


def _op_span(code: str, op: str | None) -> tuple[int, int] | None:
    """Where in ``code`` the operation ``op`` is (for the ``^^^`` marker), or None."""
    if not code:
        return None
    patterns = []
    if op and op.endswith(".step()"):
        patterns.append(r"[\w.\[\]]+\.step\(\s*\)")
    elif op == "backward":
        patterns += [r"[\w.\[\]()+ ]*?\.backward\([^()]*(?:\([^()]*\)[^()]*)*\)", r"torch\.autograd\.\w+\(.*\)"]
    elif op in _AUGMENTED_SIGNS:
        patterns.append(re.escape(_AUGMENTED_SIGNS[op]) + "=")
    elif op == "__setitem__":
        patterns.append(r"[\w.]+\[.*?\]\s*=")
    elif op:
        patterns += [r"[\w.\[\]]*\." + re.escape(op) + r"\([^)]*\)", r"inplace\s*=\s*True"]
    for pattern in patterns:
        m = re.search(pattern, code)
        if m:
            return m.start(), m.end()
    return None


_AUGMENTED_SIGNS = {
    "__iadd__": "+",
    "__isub__": "-",
    "__imul__": "*",
    "__itruediv__": "/",
    "__imatmul__": "@",
    "__ifloordiv__": "//",
    "__imod__": "%",
    "__ipow__": "**",
}


# -- deciding the cause -----------------------------------------------------------------------------------


def _problem(s: SavedTensor) -> Problem:
    kind: ProblemKind = "graph_freed" if s.status == "freed" else "modified_in_place"
    location = s.writes[0].location if s.writes else s.freed_by
    return Problem(
        kind=kind,
        node=s.node,
        tensor=s.name,
        shape=s.shape,
        saved_version=s.saved_version,
        current_version=s.current_version,
        modified_by=s.modified_by,
        where=s.where,
        code=s.code,
        node_id=s.node_id,
        saved_at=s.saved_at,
        location=location,
        writes=s.writes,
        given=s.given,
        view=s.view,
    )


def _module(given: str | None) -> str | None:
    """The model a given name belongs to: ``n_1.linear_2.weight`` -> ``n_1``; None without a model."""
    if given is None:
        return None
    return given.split(".", 1)[0] if "." in given else None


class _Topology:
    """Which named models each node of a graph reaches (by the leaves below it)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.by_id = {n.id: n for n in graph.nodes}
        self.parents: dict[int, list[int]] = {}
        for n in graph.nodes:
            for m in n.next_ids:
                self.parents.setdefault(m, []).append(n.id)
        self._reach: dict[int, frozenset[str]] = {}

    def models_below(self, node_id: int) -> frozenset[str]:
        """The top-level module names of the named parameters reachable from ``node_id``."""
        cached = self._reach.get(node_id)
        if cached is not None:
            return cached
        found: set[str] = set()
        seen = {node_id}
        stack = [node_id]
        while stack:
            n = self.by_id[stack.pop()]
            if n.kind == "leaf":
                module = _module(n.given)
                if module:
                    found.add(module)
            for m in n.next_ids:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        result = frozenset(found)
        self._reach[node_id] = result
        return result

    def entry(self, model: str) -> tuple[GraphNode, GraphNode] | None:
        """The node whose output carries ``model``'s result into the rest, and its consumer."""
        for n in self.graph.nodes:  # breadth first from the outputs: the first found is the highest
            if n.kind == "leaf" or self.models_below(n.id) != {model}:
                continue
            for parent in self.parents.get(n.id, ()):
                if self.models_below(parent) - {model}:
                    return n, self.by_id[parent]
        return None


def _var_named(namespace: Mapping[str, Any] | None, match: Any) -> str | None:
    """A variable in ``namespace`` holding a tensor that ``match(tensor)`` accepts (the user's name for it)."""
    if not namespace:
        return None
    for key, value in namespace.items():
        if isinstance(key, str) and not key.startswith("_") and isinstance(value, torch.Tensor) and match(value):
            return key
    return None


def _receiver(code: str | None, method: str) -> str | None:
    """``opt_1`` from ``opt_1.step()``; ``loss_2`` from ``loss_2.backward()``."""
    if not code:
        return None
    m = re.search(r"([\w.\[\]]+|\([^()]*\))\." + method + r"\(", code)
    if m:
        return m[1].strip("()") if m[1].startswith("(") else m[1]
    m = re.search(r"torch\.autograd\.(?:backward|grad)\(\s*([\w.\[\]]+)", code)
    return m[1] if m else None


def _saved_line(graph: Graph, node_ids: Iterable[int]) -> Location | None:
    """The user line whose forward saved a tensor for one of ``node_ids`` (their forward line)."""
    wanted = set(node_ids)
    for s in graph.saved:
        if s.node_id in wanted and s.saved_at is not None:
            return s.saved_at
    return None


@dataclass
class _Facts:
    """What the tracker knows about the failure (all optional)."""

    tracker: Recorder | None = None
    failing: BackwardCall | None = None
    namespace: dict[str, Any] = field(default_factory=dict)


def _decide(problems: list[Problem], graph: Graph, facts: _Facts) -> list[Problem]:
    """Fill in each problem's cause and fixes."""
    if not problems:
        return problems
    topo = _Topology(graph)
    decided = []
    for p in problems:
        cause, ctx = _cause(p, graph, topo, facts)
        decided.append(_with(p, cause, fixes_for(cause, ctx)))
    return decided


def _with(p: Problem, cause: Cause, fixes: tuple[Fix, ...]) -> Problem:
    return Problem(**{**p.__dict__, "cause": cause, "fixes": fixes})


def _cause(p: Problem, graph: Graph, topo: _Topology, facts: _Facts) -> tuple[Cause, Context]:
    failing = facts.failing
    loss = _receiver(failing.location.code, "backward") if failing is not None and failing.location else None
    if loss is None and graph.outputs:
        root = topo.by_id[graph.outputs[0]]
        loss = _var_named(
            facts.namespace,
            lambda t: t.grad_fn is not None and _seq(t.grad_fn) == root.seq and t.grad_fn.name() == root.name,
        )
    node_id = p.node_id if p.node_id is not None else graph.outputs[0]
    model = _module(p.given)
    if model is None and p.kind == "graph_freed":
        owners = topo.models_below(node_id)
        model = next(iter(owners)) if len(owners) == 1 else None
    others = tuple(sorted(topo.models_below(graph.outputs[0]) - {model})) if model else ()
    base = Context(tensor=p.tensor, model=model, others=others, loss=loss)

    if p.kind == "modified_in_place":
        writes = p.writes
        optimizer_write = next((w for w in writes if w.optimizer), None)
        if optimizer_write is not None or (not writes and _is_parameter(p)):
            if _carried_over(graph, node_id, facts):
                return "carried_state", _carried_context(base, graph, topo, facts, node_id)
            return "optimizer_step", _step_context(base, p, graph, topo, facts, optimizer_write, node_id)
        if writes:
            w = writes[0]
            code = w.location.code if w.location else None
            ctx = Context(tensor=_short_name(p), op=w.op, code=code, where=w.where, loss=loss)
            return ("inplace_op" if all(x.grad_mode for x in writes) else "untracked_write"), ctx
        # Outside a tracker: the writer is unknown. A non-parameter was changed by the user's own code.
        return "inplace_op", Context(tensor=_short_name(p), loss=loss, op=None)

    # graph freed
    call = _freeing_call(p, facts)
    root_ids = set(graph.outputs)
    if (
        failing is not None
        and call is not None
        and call.location is not None
        and call.location.same_call(failing.location)
    ):
        return "carried_state", _carried_context(base, graph, topo, facts, node_id)
    if node_id in root_ids:
        return "same_loss_twice", base
    earlier = _receiver(call.location.code, "backward") if call is not None and call.location else None
    ctx = _step_context(replace_context(base, earlier=earlier), p, graph, topo, facts, None, node_id)
    if facts.tracker is not None and call is not None:
        steps = _steps_between(facts.tracker, call, failing)
        ctx = replace_context(ctx, step_between=bool(steps))
        if steps and steps[0][0] is not None:
            ctx = replace_context(ctx, optimizer=_receiver(steps[0][0].code, "step"), optimizer_class=steps[0][1])
    return "shared_graph_freed", ctx


def replace_context(ctx: Context, **changes: Any) -> Context:
    return replace(ctx, **changes)


def _seq(fn: Any) -> int | None:
    return internals.sequence_nr(fn)


def _short_name(p: Problem) -> str:
    """The user's name for the problem's tensor (a view's base name); else its description."""
    return p.given or p.tensor


def _is_parameter(p: Problem) -> bool:
    leaf = _t("leaf tensor {shape}", shape=list(p.shape or ()))
    return _module(p.given) is not None or p.tensor == leaf


def _freeing_call(p: Problem, facts: _Facts) -> BackwardCall | None:
    tracker = facts.tracker
    if tracker is None or p.location is None:
        return None
    for call in reversed(tracker.history):
        if call.location is p.location:
            return call
    return None


def _steps_between(
    tracker: Recorder, call: BackwardCall, failing: BackwardCall | None
) -> list[tuple[Location | None, str]]:
    """The optimizer steps that ran between the freeing backward and the failing one."""
    end = failing.event if failing is not None else None
    return [(loc, name) for index, loc, name in tracker.steps if index > call.event and (end is None or index <= end)]


def _carried_over(graph: Graph, node_id: int, facts: _Facts) -> bool:
    """The node was built before an earlier backward at the failing line: a previous iteration's graph."""
    failing, tracker = facts.failing, facts.tracker
    if failing is None or tracker is None or failing.location is None:
        return False
    seq = next((n.seq for n in graph.nodes if n.id == node_id), None)
    if seq is None:
        return False
    return any(
        call is not failing
        and call.location is not None
        and call.location.same_call(failing.location)
        and call.newest_node is not None
        and seq <= call.newest_node
        for call in tracker.history
    )


def _step_context(
    base: Context, p: Problem, graph: Graph, topo: _Topology, facts: _Facts, write: Write | None, node_id: int
) -> Context:
    model = base.model
    below = topo.models_below(node_id)
    judge = bool(model) and bool(below - {model})
    optimizer = _receiver(write.location.code, "step") if write is not None and write.location else None
    optimizer_class = write.op.split(".")[0] if write is not None else None
    earlier = base.earlier
    tracker = facts.tracker
    if earlier is None and tracker is not None and write is not None and write.event is not None:
        before = [c for c in tracker.history if c.event < write.event and c is not facts.failing]
        if before and before[-1].location is not None:
            earlier = _receiver(before[-1].location.code, "backward")
    ctx = replace_context(base, judge=judge, optimizer=optimizer, optimizer_class=optimizer_class, earlier=earlier)
    if not model:
        return ctx
    if judge:
        # The stepped model sits between the loss and the models it trains: its own forward and the loss's
        # forward lines are what to recompute.
        others = tuple(sorted(below - {model}))
        found = topo.entry(others[0]) if len(others) == 1 else None
        lines = []
        if found is not None:
            entry_loc = _saved_line(graph, [found[1].id])
            if entry_loc is not None:
                lines.append(entry_loc.code)
        loss_loc = _saved_line(graph, graph.outputs)
        if loss_loc is not None and (not lines or loss_loc.code != lines[-1]):
            lines.append(loss_loc.code)
        return replace_context(ctx, others=others, recompute=tuple(lines))
    found = topo.entry(model)
    if found is None:
        return ctx
    entry, consumer = found
    loc = _saved_line(graph, [consumer.id]) or _saved_line(graph, topo.parents.get(consumer.id, []))
    name = _var_named(
        facts.namespace,
        lambda t: t.grad_fn is not None and _seq(t.grad_fn) == entry.seq and t.grad_fn.name() == entry.name,
    )
    return replace_context(
        ctx, entry=name, entry_line=loc.code if loc else None, entry_where=loc.where if loc else None
    )


def _carried_context(base: Context, graph: Graph, topo: _Topology, facts: _Facts, node_id: int) -> Context:
    """The carried variable: the name assigned and passed in on the same line (``out, h = rnn(x, h)``)."""
    tracker = facts.tracker
    total = False
    if tracker is not None:
        root_seqs = {call.newest_node for call in tracker.history if call is not facts.failing}
        total = any(n.seq in root_seqs for n in graph.nodes if n.id not in graph.outputs)
    if total and graph.outputs:
        # A running total: the backwarded tensor is the total; the iteration's loss is added into it.
        root = topo.by_id[graph.outputs[0]]
        parts = [topo.by_id[i] for i in root.next_ids]
        part = _var_named(
            facts.namespace,
            lambda t: (
                t.grad_fn is not None
                and any(
                    _seq(t.grad_fn) == n.seq and t.grad_fn.name() == n.name for n in parts if n.seq not in root_seqs
                )
            ),
        )
        return replace_context(base, carried=base.loss, loss=part, total=True)
    for s in graph.saved:
        loc = s.saved_at
        if loc is None:
            continue
        m = re.fullmatch(r"\s*(.+?)\s*=\s*(.+)", loc.code)
        if not m:
            continue
        targets = re.findall(r"[A-Za-z_]\w*", m[1])
        used = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", m[2]))
        carried = [t for t in targets if t in used]
        if carried:
            return replace_context(base, carried=carried[-1], total=total, entry_line=loc.code, entry_where=loc.where)
    return replace_context(base, total=total)


def check_graph(
    graph: Graph,
    failing: BackwardCall | None = None,
    *,
    tracker: Recorder | None = None,
    frame: FrameType | None = None,
) -> Diagnosis:
    """Turn a collected graph into a Diagnosis (one Problem per freed node or stale tensor).

    With ``failing`` (the backward call that just raised), only the problems that
    made it fail are kept: a node that call freed itself, before it reached the
    real problem, is not a cause. ``frame`` is the user's frame, where gradlab
    looks up the names of tensors it mentions.
    """
    stale: list[SavedTensor] = []
    freed: list[tuple[SavedTensor, bool]] = []  # (record, freeing call known)
    seen: set[int] = set()
    for s in graph.saved:
        if s.status == "modified_in_place":
            stale.append(s)
        elif s.status == "freed" and s.node_id not in seen:
            seen.add(s.node_id)
            if failing is not None and s.freed_by is not None and s.freed_by is failing.location:
                continue  # freed by the failing call itself
            freed.append((s, s.freed_by is not None))
    if failing is not None and any(known for _, known in freed):
        # Nodes whose freeing call is unknown were run by the failing call itself
        # (their saved values bypass the hooks, e.g. a Python scalar in x * 2.0).
        freed = [(s, known) for s, known in freed if known]
    records = stale if (failing is not None and stale) else stale + [s for s, _ in freed]
    problems = _decide([_problem(s) for s in records], graph, _Facts(tracker, failing, frame_names(frame)))
    needed_by = failing.location if failing is not None else None
    return Diagnosis(ok=not problems, problems=problems, graph=graph, needed_by=needed_by, failed=failing is not None)


def check(output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None) -> Diagnosis:
    """Predict whether ``output.backward()`` would succeed, without running it.

    Nothing changes: no ``.grad``, parameter, optimizer state or buffer. Inside
    :func:`gradlab.track` the problems also say who modified each tensor. Each
    problem says its cause and the fixes that fit (``diagnosis.fixes``).

    Example::

        >>> import torch
        >>> w = torch.ones(3, requires_grad=True)
        >>> y = (w * w).sum()
        >>> with torch.no_grad():
        ...     _ = w.add_(1)
        >>> d = check(y, names={"w": w})
        >>> d.ok, d.problems[0].kind, d.problems[0].tensor
        (False, 'modified_in_place', 'w')
    """
    graph, recording = collect_active(output, names)
    return check_graph(graph, tracker=recording, frame=sys._getframe(1))
