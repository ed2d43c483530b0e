"""Predict whether ``backward()`` will succeed, and say why not."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import torch

from . import session
from .advice import fix_options
from .graph import Graph, collect
from .names import NamesLike
from .saved import SavedTensor

if TYPE_CHECKING:
    from .tracker import BackwardCall

__all__ = ["Diagnosis", "Problem", "ProblemKind", "check", "check_graph"]

#: The two ways a backward fails that gradlab diagnoses.
ProblemKind = Literal["graph_freed", "modified_in_place"]


@dataclass(frozen=True)
class Problem:
    """One reason a backward would fail.

    ``kind`` is ``graph_freed`` or ``modified_in_place``; ``node`` the backward
    node that needs the tensor; ``tensor`` a readable name; ``where`` the user
    line that modified it (or, for a freed graph, the backward call that freed it).
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

    def sentence(self) -> str:
        shape = f" {list(self.shape)}" if self.shape is not None and "[" not in self.tensor else ""
        if self.kind == "graph_freed":
            text = f"{self.node} needs {self.tensor}{shape}, but its saved tensors were freed"
            if self.where:
                text += f" by the backward at {self.where}" + (f": {self.code}" if self.code else "")
            return text + "."
        text = (
            f"{self.tensor}{shape}, saved by {self.node} at version {self.saved_version}, "
            f"is now at version {self.current_version}"
        )
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
        head = "".join(
            f"<th>{h}</th>" for h in ("kind", "node", "tensor", "shape", "saved", "now", "modified by", "where")
        )
        rows = []
        for p in self.problems:
            cells = (
                p.kind,
                p.node,
                p.tensor,
                "" if p.shape is None else str(list(p.shape)),
                "" if p.saved_version is None else str(p.saved_version),
                "" if p.current_version is None else str(p.current_version),
                p.modified_by or "",
                (p.where or "") + (f": {p.code}" if p.code else ""),
            )
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        fixes = "".join(f"<li>{html.escape(f)}</li>" for k in self.kinds for f in fix_options(k, self.problems))
        return (
            f"<p><b>backward() would fail</b> ({html.escape(self.graph.summary())})</p>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table><p>Fix options:</p><ul>{fixes}</ul>"
        )


def _problem(s: SavedTensor) -> Problem:
    kind: ProblemKind = "graph_freed" if s.status == "freed" else "modified_in_place"
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
    )


def check_graph(graph: Graph, failing: BackwardCall | None = None) -> Diagnosis:
    """Turn a collected graph into a Diagnosis (one Problem per freed node or stale tensor).

    With ``failing`` (the backward call that just raised), only the problems that
    made it fail are kept: a node that call freed itself, before it reached the
    real problem, is not a cause.
    """
    stale: list[Problem] = []
    freed: list[tuple[SavedTensor, bool]] = []  # (record, freeing call known)
    seen: set[int] = set()
    for s in graph.saved:
        if s.status == "modified_in_place":
            stale.append(_problem(s))
        elif s.status == "freed" and s.node_id not in seen:
            seen.add(s.node_id)
            if failing is not None and s.freed_by is not None and s.freed_by is failing.location:
                continue  # freed by the failing call itself
            freed.append((s, s.freed_by is not None))
    if failing is not None and any(known for _, known in freed):
        # Nodes whose freeing call is unknown were run by the failing call itself
        # (their saved values bypass the hooks, e.g. a Python scalar in x * 2.0).
        freed = [(s, known) for s, known in freed if known]
    problems = stale + [_problem(s) for s, _ in freed]
    if failing is not None and stale:
        problems = stale  # the engine stopped at a stale tensor: that is the cause
    return Diagnosis(ok=not problems, problems=problems, graph=graph)


def check(output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None) -> Diagnosis:
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
    tracker = session.active()
    if tracker is not None:
        return tracker.check(output, names)
    return check_graph(collect(output, names))
