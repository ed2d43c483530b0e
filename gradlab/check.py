"""Predict whether ``backward()`` will succeed, and say why not."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from .graph import Graph, collect
from .names import NamesLike
from .saved import SavedTensor

__all__ = ["Diagnosis", "Problem", "check", "fix_options"]

_FREED_FIXES = [
    "Call backward once per graph: add the losses that share it and call backward on the sum "
    "(in the course: forward both networks, then (loss_1 + loss_2).backward()).",
    "If the second model should treat the first one's output as data, detach it where it enters "
    "(in the course: n_2(pred_1.detach())).",
    "State carried from one iteration to the next (an RNN's hidden state, a running total of losses): "
    "detach it at the start of each iteration (h = h.detach()), or keep loss.item() instead of the tensor.",
    "If you need the graph again, recompute the forward pass instead of reusing the old output.",
    "retain_graph=True on the first backward only helps when nothing modifies the saved tensors "
    "in between; otherwise it turns this error into the in-place one.",
]
_STEP_FIXES = [
    "Run every backward before the optimizer.step() that changes the weights it saved: "
    "zero all, backward all (or their sum), then step all.",
    "If the model whose weights changed should not learn from this loss, feed its output in "
    "detached (in the course: n_2(pred_1.detach())).",
    "If you must step in between, recompute the forward pass after the step, so the new graph "
    "saves the new weights (in a GAN: run the discriminator again on the fake batch).",
]
_OP_FIXES = [
    "Replace the in-place op with its out-of-place form: x = x + 1 for x += 1, torch.where(...) for "
    "x[i] = v, nn.ReLU() for nn.ReLU(inplace=True).",
]


def fix_options(kind: str, problems: Sequence[Problem] = ()) -> list[str]:
    """Fix options for one kind of problem, the likeliest first.

    For an in-place problem, a write by an ``optimizer.step()`` puts the ordering
    fixes first; a write by an op puts "use the out-of-place form" first; when
    nobody recorded the writer (outside :func:`gradlab.track`), both are listed.
    """
    if kind == "graph_freed":
        return list(_FREED_FIXES)
    if kind != "modified_in_place":
        raise ValueError(f"kind must be 'graph_freed' or 'modified_in_place', not {kind!r}")
    writers = [p.modified_by for p in problems if p.kind == kind and p.modified_by]
    by_step = any(w.endswith(".step()") for w in writers)
    by_op = any(not w.endswith(".step()") for w in writers)
    if by_op and not by_step:
        return _OP_FIXES + _STEP_FIXES
    if by_step and not by_op:
        return _STEP_FIXES + ["If the tensor was changed by your own code, use the out-of-place op "
                              "(x = x + 1, not x += 1)."]
    return _STEP_FIXES + _OP_FIXES


@dataclass(frozen=True)
class Problem:
    """One reason a backward would fail.

    ``kind`` is ``graph_freed`` or ``modified_in_place``; ``node`` the backward
    node that needs the tensor; ``tensor`` a readable name; ``where`` the user
    line that modified it (or, for a freed graph, the backward call that freed it).
    """

    kind: str
    node: str
    tensor: str
    shape: tuple[int, ...] | None
    saved_version: int | None
    current_version: int | None
    modified_by: str | None = None
    where: str | None = None
    code: str | None = None
    node_id: int | None = None

    def sentence(self) -> str:
        shape = f" {list(self.shape)}" if self.shape is not None and "[" not in self.tensor else ""
        if self.kind == "graph_freed":
            text = f"{self.node} needs {self.tensor}{shape}, but its saved tensors were freed"
            if self.where:
                text += f" by the backward at {self.where}" + (f": {self.code}" if self.code else "")
            return text + "."
        text = (f"{self.tensor}{shape}, saved by {self.node} at version {self.saved_version}, "
                f"is now at version {self.current_version}")
        if self.modified_by:
            text += f": modified by {self.modified_by}"
        if self.where:
            text += f" at {self.where}" + (f": {self.code}" if self.code else "")
        return text + "."


@dataclass(frozen=True)
class Diagnosis:
    """The answer of :func:`check`: ``ok`` is True when ``backward()`` would succeed."""

    ok: bool
    problems: list[Problem]
    graph: Graph = field(repr=False)

    @property
    def kinds(self) -> list[str]:
        return sorted({p.kind for p in self.problems})

    def __str__(self) -> str:
        if self.ok:
            return f"ok: backward() would succeed ({self.graph.summary()})."
        lines = [f"backward() would fail ({self.graph.summary()})."]
        for kind, title in (("graph_freed", "Graph already freed"), ("modified_in_place", "Modified in place")):
            probs = [p for p in self.problems if p.kind == kind]
            if not probs:
                continue
            lines.append("")
            lines.append(f"{title}:")
            lines.extend(f"  - {p.sentence()}" for p in probs[:8])
            if len(probs) > 8:
                lines.append(f"  - ... and {len(probs) - 8} more")
            lines.append("Fix options:")
            lines.extend(f"  * {fix}" for fix in fix_options(kind, probs))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Diagnosis(ok={self.ok}, problems={len(self.problems)}, kinds={self.kinds})"

    def _repr_html_(self) -> str:
        if self.ok:
            return f"<p><b>ok</b>: backward() would succeed ({html.escape(self.graph.summary())}).</p>"
        head = "".join(f"<th>{h}</th>" for h in ("kind", "node", "tensor", "shape", "saved", "now",
                                                   "modified by", "where"))
        rows = []
        for p in self.problems:
            cells = (p.kind, p.node, p.tensor, "" if p.shape is None else str(list(p.shape)),
                     "" if p.saved_version is None else str(p.saved_version),
                     "" if p.current_version is None else str(p.current_version),
                     p.modified_by or "", (p.where or "") + (f": {p.code}" if p.code else ""))
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        fixes = "".join(f"<li>{html.escape(f)}</li>" for k in self.kinds for f in fix_options(k, self.problems))
        return (f"<p><b>backward() would fail</b> ({html.escape(self.graph.summary())})</p>"
                f"<table><tr>{head}</tr>{''.join(rows)}</table><p>Fix options:</p><ul>{fixes}</ul>")


def _problem(s: SavedTensor) -> Problem:
    kind = "graph_freed" if s.status == "freed" else "modified_in_place"
    return Problem(kind=kind, node=s.node, tensor=s.name, shape=s.shape, saved_version=s.saved_version,
                   current_version=s.current_version, modified_by=s.modified_by, where=s.where, code=s.code,
                   node_id=s.node_id)


def diagnose(graph: Graph, skip_freed: set[int] | None = None) -> Diagnosis:
    """Turn a collected graph into a Diagnosis (one Problem per freed node or stale tensor)."""
    problems: list[Problem] = []
    freed_nodes: set[int] = set()
    for s in graph.saved:
        if s.status == "modified_in_place":
            problems.append(_problem(s))
        elif s.status == "freed" and s.node_id not in freed_nodes and s.node_id not in (skip_freed or set()):
            freed_nodes.add(s.node_id)
            problems.append(_problem(s))
    return Diagnosis(ok=not problems, problems=problems, graph=graph)


def check(output: object, names: NamesLike = None) -> Diagnosis:
    """Predict whether ``output.backward()`` would succeed, without running it.

    Nothing changes: no ``.grad``, parameter, optimizer state or buffer. Inside
    :func:`gradlab.track` the problems also say who modified each tensor.

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
    from .track import active_tracker

    tracker = active_tracker()
    if tracker is not None:
        return tracker.check(output, names)
    return diagnose(collect(output, names))
