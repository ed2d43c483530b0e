"""The backward graph as plain records: nodes, edges and saved tensors, in a fixed order."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .names import Namer, NamesLike, op_name
from .saved import SavedTensor, inspect_node

__all__ = ["Graph", "GraphNode", "collect", "walk"]


@dataclass(frozen=True)
class GraphNode:
    """One node of the backward graph.

    ``kind`` is ``op`` (a backward function), ``leaf`` (AccumulateGrad: where a
    leaf's ``.grad`` accumulates) or ``custom`` (a custom ``autograd.Function``).
    ``next_ids`` are the nodes its gradients flow to, in ``next_functions`` order.
    """

    id: int
    name: str
    label: str
    kind: str
    next_ids: tuple[int, ...]
    leaf_name: str | None = None
    shape: tuple[int, ...] | None = None
    freed: bool = False


@dataclass(frozen=True)
class Graph:
    """What :func:`collect` found: nodes numbered breadth-first from the outputs."""

    nodes: tuple[GraphNode, ...]
    saved: tuple[SavedTensor, ...]
    outputs: tuple[int, ...]

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        return tuple((n.id, m) for n in self.nodes for m in n.next_ids)

    def summary(self) -> str:
        """One stable line, e.g. ``autograd graph: 14 nodes, 5 saved tensors, 1 modified in place``."""
        counts = {s: sum(1 for t in self.saved if t.status == s) for s in ("modified_in_place", "freed", "unknown")}
        parts = [f"{len(self.nodes)} nodes", f"{len(self.saved)} saved tensors"]
        if counts["modified_in_place"]:
            parts.append(f"{counts['modified_in_place']} modified in place")
        if counts["freed"]:
            parts.append(f"{counts['freed']} freed")
        if counts["unknown"]:
            parts.append(f"{counts['unknown']} unknown")
        return "autograd graph: " + ", ".join(parts)


def roots_of(outputs: object, what: str = "output") -> list[object]:
    """Validate ``outputs`` (a tensor or a sequence of tensors) and return their grad_fns."""
    if isinstance(outputs, torch.nn.Module):
        raise TypeError(f"{what} is an nn.Module; pass the tensor it produced, e.g. loss = criterion(model(x), y)")
    if isinstance(outputs, torch.Tensor):
        items = [outputs]
    elif isinstance(outputs, Sequence) and not isinstance(outputs, (str, bytes)) and outputs:
        items = list(outputs)
    else:
        raise TypeError(f"{what} must be a tensor produced by autograd or a list of them, not "
                        f"{type(outputs).__name__}; pass e.g. the loss: check(loss)")
    roots = []
    for t in items:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what} must contain only tensors, found {type(t).__name__}; pass e.g. [loss_1, loss_2]")
        if t.grad_fn is None:
            if t.requires_grad:
                raise ValueError(f"{what} is a leaf tensor (shape {list(t.shape)}): it has no backward graph; "
                                 "pass a tensor computed from it, e.g. the loss")
            raise ValueError(f"{what} (shape {list(t.shape)}) does not require grad and has no backward graph; "
                             "pass a tensor computed from parameters that require grad, e.g. the loss")
        roots.append(t.grad_fn)
    return roots


def walk(roots: Sequence[object]) -> list[object]:
    """Every node reachable from ``roots``, breadth first, ``next_functions`` in order.

    Iterative, so a 20,000-node chain needs no recursion.
    """
    order: list[object] = []
    seen: set[object] = set()
    queue = deque()
    for r in roots:
        if r not in seen:
            seen.add(r)
            queue.append(r)
    while queue:
        fn = queue.popleft()
        order.append(fn)
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order


def collect(outputs: object, names: NamesLike = None, *, tracker: object | None = None) -> Graph:
    """The backward graph of ``outputs`` with every saved tensor inspected.

    Never runs backward, never frees a buffer, never writes ``.grad``. Example::

        >>> x = torch.ones(3, requires_grad=True)
        >>> collect(x.sigmoid().sum()).summary()
        'autograd graph: 3 nodes, 1 saved tensors'
    """
    roots = roots_of(outputs)
    namer = names if isinstance(names, Namer) else Namer(names)
    order = walk(roots)
    ids = {fn: i for i, fn in enumerate(order)}
    freed_by = getattr(tracker, "freed_by", None)
    nodes: list[GraphNode] = []
    saved: list[SavedTensor] = []
    for i, fn in enumerate(order):
        name = fn.name()
        next_ids = tuple(ids[n] for n, _ in fn.next_functions if n is not None)
        if hasattr(fn, "variable"):
            var = fn.variable
            leaf = namer.name_of(var) or f"leaf {list(var.shape)}"
            nodes.append(GraphNode(i, "AccumulateGrad", leaf, "leaf", next_ids, leaf_name=leaf, shape=tuple(var.shape)))
            continue
        records = inspect_node(fn, i, namer, freed_by)
        saved.extend(records)
        kind = "custom" if isinstance(fn, torch.autograd.function.BackwardCFunction) else "op"
        nodes.append(GraphNode(i, name, op_name(name), kind, next_ids, freed=any(r.status == "freed" for r in records)))
    return Graph(tuple(nodes), tuple(saved), tuple(ids[r] for r in roots))
