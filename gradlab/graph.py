"""The backward graph as plain records: nodes, edges and saved tensors, in a fixed order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import internals
from .backwards import Backwards
from .i18n import _, _t, ljust, width
from .location import Location
from .names import Namer, NamesLike, op_name
from .recorder import BackwardCall, Recorder, Scope, active
from .saved import SavedTensor, inspect_node

__all__ = [
    "Graph",
    "GraphNode",
    "collect",
    "collect_nodes",
    "collect_active",
    "freeing_call",
    "walk",
    "saved_tensors",
    "saved_table",
    "module_of_nodes",
    "direct_modules",
]

# Single-input ops through which an op still "touches" a parameter (Addmm -> T -> weight).
_TRANSPARENT = frozenset(
    {
        "T",
        "Transpose",
        "Permute",
        "View",
        "Reshape",
        "UnsafeView",
        "Expand",
        "Squeeze",
        "Unsqueeze",
        "Alias",
        "ToCopy",
        "Clone",
        "Contiguous",
        "Select",
        "Slice",
    }
)


@dataclass(frozen=True)
class GraphNode:
    """One node of the backward graph.

    ``kind`` is ``op`` (a backward function), ``leaf`` (AccumulateGrad: where a
    leaf's ``.grad`` accumulates) or ``custom`` (a custom ``autograd.Function``).
    ``next_ids`` are the nodes its gradients flow to, in ``next_functions`` order;
    ``seq`` is torch's sequence number of the node (creation order in its thread).
    For a leaf, ``leaf_name`` is its name as shown and ``given`` the name the user
    gave it (or the named tensor it is a view of), None without one.
    """

    id: int
    name: str
    label: str
    kind: str
    next_ids: tuple[int, ...]
    leaf_name: str | None = None
    shape: tuple[int, ...] | None = None
    seq: int | None = None
    given: str | None = None
    slots: tuple[int, ...] = ()  # for an op: each next id's position among the op's inputs (``next_functions``)


@dataclass(frozen=True)
class Graph:
    """What :func:`collect` found: nodes numbered breadth-first from the outputs."""

    nodes: tuple[GraphNode, ...]
    saved: tuple[SavedTensor, ...]
    outputs: tuple[int, ...]

    def summary(self) -> str:
        """One stable line, e.g. ``autograd graph: 14 nodes, 5 saved tensors, 1 modified in place``."""
        counts = {s: sum(1 for t in self.saved if t.status == s) for s in ("modified_in_place", "freed", "unknown")}
        parts = [_t("{n} nodes", n=len(self.nodes)), _t("{n} saved tensors", n=len(self.saved))]
        if counts["modified_in_place"]:
            parts.append(_t("{n} modified in place", n=counts["modified_in_place"]))
        if counts["freed"]:
            parts.append(_t("{n} freed", n=counts["freed"]))
        if counts["unknown"]:
            parts.append(_t("{n} unknown", n=counts["unknown"]))
        return _t("autograd graph: {counts}", counts=_(", ").join(parts))


def roots_of(outputs: object, what: str = "output") -> list[Any]:
    """Validate ``outputs`` (a tensor or a sequence of tensors) and return their grad_fns."""
    if isinstance(outputs, torch.nn.Module):
        raise TypeError(f"{what} is an nn.Module; pass the tensor it produced, e.g. loss = criterion(model(x), y)")
    if isinstance(outputs, torch.Tensor):
        items = [outputs]
    elif isinstance(outputs, Sequence) and not isinstance(outputs, (str, bytes)) and outputs:
        items = list(outputs)
    else:
        raise TypeError(
            f"{what} must be a tensor produced by autograd or a list of them, not "
            f"{type(outputs).__name__}; pass e.g. the loss: check(loss)"
        )
    roots = []
    for t in items:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what} must contain only tensors, found {type(t).__name__}; pass e.g. [loss_1, loss_2]")
        if t.grad_fn is None:
            if t.requires_grad:
                raise ValueError(
                    f"{what} is a leaf tensor (shape {list(t.shape)}): it has no backward graph; "
                    "pass a tensor computed from it, e.g. the loss"
                )
            raise ValueError(
                f"{what} (shape {list(t.shape)}) does not require grad and has no backward graph; "
                "pass a tensor computed from parameters that require grad, e.g. the loss"
            )
        roots.append(t.grad_fn)
    return roots


def walk(roots: Sequence[Any]) -> list[Any]:
    """Every node reachable from ``roots``, breadth first, ``next_functions`` in order.

    Iterative, so a 20,000-node chain needs no recursion.
    """
    order: list[Any] = []
    seen: set[Any] = set()
    queue: deque[Any] = deque()
    for r in roots:
        if r not in seen:
            seen.add(r)
            queue.append(r)
    while queue:
        fn = queue.popleft()
        order.append(fn)
        for nxt, _input_nr in fn.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order


def collect(
    outputs: torch.Tensor | Sequence[torch.Tensor], names: NamesLike | Namer = None, *, tracker: Scope | None = None
) -> Graph:
    """The backward graph of ``outputs`` with every saved tensor inspected.

    ``tracker`` (a :class:`gradlab.Tracker`) fills in which backward freed a node
    and where a saved tensor was saved. Never runs backward, never frees a buffer,
    never writes ``.grad``. Example::

        >>> x = torch.ones(3, requires_grad=True)
        >>> collect(x.sigmoid().sum()).summary()
        'autograd graph: 3 nodes, 1 saved tensors'
    """
    roots = roots_of(outputs)
    namer = names if isinstance(names, Namer) else Namer(names)
    return collect_nodes(roots, namer, tracker=tracker)


def freeing_call(backwards: Backwards, fn: Any) -> BackwardCall | None:
    """The recorded :class:`~gradlab.BackwardCall` that freed node ``fn``, or None."""
    call = backwards.freed_call(fn)
    if call is not None:
        return call
    # A node whose only saved values bypass the hooks (a Python scalar: x * 2.0)
    # is found through the graphs of the latest freeing calls instead.
    for roots, earlier in backwards.freed_roots():
        if any(node is fn for node in walk(roots)):
            found: BackwardCall = earlier
            return found
    return None


def collect_active(
    outputs: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None
) -> tuple[Graph, Recorder | None]:
    """:func:`collect` with the names and records of the tracker active in this thread (if any).

    Returns the graph and the recorder it was read with (None outside a tracker):
    the one path by which :func:`gradlab.check`, :func:`gradlab.saved_tensors` and
    :func:`gradlab.draw` see the active tracker.
    """
    scope = active()
    if scope is None:
        return collect(outputs, names), None
    return collect(outputs, scope.namer(names), tracker=scope), scope._recorder()


def collect_nodes(roots: Sequence[Any], namer: Namer, *, tracker: Scope | None = None) -> Graph:
    """:func:`collect` from backward nodes (the outputs' ``grad_fn``), e.g. of a failed backward call."""
    order = walk(roots)
    ids = {fn: i for i, fn in enumerate(order)}
    recorder = tracker._recorder() if tracker is not None else None
    freed_by: Callable[[Any], Location | None] | None = None
    saved_line: Callable[[Any], Location | None] | None = None
    if recorder is not None:
        backwards = recorder.backwards

        def freed_by(fn: Any) -> Location | None:
            call = freeing_call(backwards, fn)
            return call.location if call is not None else None

        saved_line = backwards.saved_line
    nodes: list[GraphNode] = []
    saved: list[SavedTensor] = []
    for i, fn in enumerate(order):
        name = internals.node_name(fn)
        next_ids = tuple(ids[n] for n, _ in fn.next_functions if n is not None)
        seq = internals.sequence_nr(fn)
        if hasattr(fn, "variable"):
            var = fn.variable
            found = namer.lookup(var)
            leaf = str(found) if found else f"leaf {list(var.shape)}"
            given = found.given if found else None
            nodes.append(
                GraphNode(
                    i,
                    "AccumulateGrad",
                    leaf,
                    "leaf",
                    next_ids,
                    leaf_name=leaf,
                    shape=tuple(var.shape),
                    seq=seq,
                    given=given,
                )
            )
            continue
        records = inspect_node(fn, i, namer, freed_by, saved_line)
        saved.extend(records)
        kind = "custom" if isinstance(fn, torch.autograd.function.BackwardCFunction) else "op"
        slots = tuple(k for k, (n, _) in enumerate(fn.next_functions) if n is not None)
        nodes.append(GraphNode(i, name, op_name(name), kind, next_ids, seq=seq, slots=slots))
    return Graph(tuple(nodes), tuple(saved), tuple(ids[r] for r in roots))


def saved_tensors(output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None) -> list[SavedTensor]:
    """Every tensor the graph of ``output`` saved for backward, with versions and status.

    Inside :func:`gradlab.track` the records also say who modified a tensor, and where.

    Example::

        >>> x = torch.ones(3, requires_grad=True)
        >>> [(s.node, s.attribute, s.status) for s in saved_tensors(x.sigmoid().sum())]
        [('SigmoidBackward0', 'result', 'ok')]
    """
    return list(collect_active(output, names)[0].saved)


# -- modules (for drawing with collapse="module") --------------------------------------------------------------------


def _parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


def _common(paths: Sequence[str]) -> str:
    parts = [p.split(".") for p in paths]
    out: list[str] = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        out.append(level[0])
    return ".".join(out)


def direct_modules(graph: Graph) -> dict[int, str]:
    """Module path of each leaf and of each op that uses a parameter directly (or via T/View)."""
    by_id = {n.id: n for n in graph.nodes}
    leaves: dict[int, str] = {}  # leaf id -> its module path, for named parameters in a module
    for n in graph.nodes:
        given = n.given if n.kind == "leaf" else None
        if given:
            path = _parent(given)
            if path:
                leaves[n.id] = path
    out = dict(leaves)
    for n in graph.nodes:
        if n.kind == "leaf":
            continue
        found = set()
        for m in n.next_ids:
            nxt = by_id[m]
            if nxt.kind != "leaf" and len(nxt.next_ids) == 1 and nxt.label in _TRANSPARENT:
                m = nxt.next_ids[0]
            if m in leaves:
                found.add(leaves[m])
        if found:
            common = found.pop() if len(found) == 1 else _common(sorted(found))
            if common:
                out[n.id] = common
    return out


def module_of_nodes(graph: Graph) -> dict[int, str]:
    """Which module each node belongs to, for ``collapse="module"`` (nodes without one are left out).

    Parameters belong to the module in their name (``n_1.linear_1.weight`` ->
    ``n_1.linear_1``); an op to the module of the parameters it uses directly
    (through a transpose or view); an op without parameters to the common parent
    of its neighbours' modules (ReLU between ``n_1.linear_1`` and
    ``n_1.linear_2`` -> ``n_1``). A loss touching no module stays outside.
    """
    direct = direct_modules(graph)
    consumers: dict[int, list[int]] = {}
    for n in graph.nodes:
        for m in n.next_ids:
            consumers.setdefault(m, []).append(n.id)
    out = dict(direct)
    for n in graph.nodes:
        if n.id in direct:
            continue
        near = sorted({direct[m] for m in (*n.next_ids, *consumers.get(n.id, ())) if m in direct})
        if not near:
            continue
        common = _common(near)
        if common in near:
            common = _parent(common)
        if common:
            out[n.id] = common
    return out


def _columns(extra: bool) -> list[str]:
    """The headers of :func:`saved_table`, in the language in effect."""
    columns = [_("id"), _("node"), _("saved as"), _("tensor"), _("shape"), _("saved"), _("now"), _("status")]
    if extra:
        columns += [_("modified by"), _("where")]
    return columns


def saved_table(saved: Sequence[SavedTensor]) -> str:
    """The records of :func:`gradlab.saved_tensors` as a fixed-width text table.

    One row per saved tensor, in the graph's order: the node's id and name, the
    attribute it saved the tensor as, the tensor's name and shape, its version
    when saved and now, and its status. ``modified by`` and ``where`` columns
    are added when a record has them (inside :func:`gradlab.track`).

    Example::

        >>> import gradlab
        >>> x = torch.ones(3, requires_grad=True)
        >>> print(saved_table(gradlab.saved_tensors(x.sigmoid().sum(), names={"x": x})))
        id  node              saved as  tensor                 shape  saved  now  status
        1   SigmoidBackward0  result    output of Sigmoid [3]  [3]    0      0    ok
    """
    if isinstance(saved, SavedTensor) or not isinstance(saved, Sequence) or isinstance(saved, (str, bytes)):
        raise TypeError(
            f"saved_table() takes the list returned by gradlab.saved_tensors(loss, names), not {type(saved).__name__}"
        )
    for item in saved:
        if not isinstance(item, SavedTensor):
            raise TypeError(
                "saved_table() takes the list returned by gradlab.saved_tensors(loss, names); "
                f"it contains a {type(item).__name__}"
            )
    if not saved:
        return _("(no saved tensors)")
    extra = any(s.modified_by for s in saved) or any(s.where for s in saved)
    columns = _columns(extra)
    rows = []
    for s in saved:
        row = [
            str(s.node_id),
            s.node,
            s.attribute,
            str(s.name),
            "?" if s.shape is None else str(list(s.shape)),
            "-" if s.saved_version is None else str(s.saved_version),
            "-" if s.current_version is None else str(s.current_version),
            s.status,
        ]
        if extra:
            row += [s.modified_by or "", (s.where or "") + (f": {s.code}" if s.code else "")]
        rows.append(row)
    widths = [max(width(c), *(width(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = ["  ".join(ljust(cell, w) for cell, w in zip(line, widths)).rstrip() for line in [columns, *rows]]
    return "\n".join(lines)
