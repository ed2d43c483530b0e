"""Cause ``carried_state``, its kept-attribute reading: state kept on an object across iterations
(``obj.attr = f(..., obj.attr, ...)``: a queue of keys, a memory bank, a recurrent module's hidden state) that
still holds the previous iteration's graph; the value stored for the next iteration is detached, or, when this
iteration's loss reads the stored value, the object's tensors are detached after the backward."""

from __future__ import annotations

import ast
from dataclasses import replace

import torch

from ..context import Context
from ..evidence import Facts, value_of
from ..graph import walk
from ..location import Location
from ..source import function_of

__all__ = ["kept_attribute"]


def kept_attribute(base: Context, facts: Facts) -> Context | None:
    """State kept on an object across iterations: ``obj.attr = f(..., obj.attr, ...)`` still holding a graph.

    The pattern (a queue of keys, a memory bank, a recurrent module that keeps its
    hidden state: ``out, self.h = self.rnn(x, self.h)``): a one-line statement of
    the user's file assigns an attribute (alone or as one element of a tuple
    target) from an expression that reads that same attribute, and an object of
    the failing frame has that attribute as a tensor with a graph. The next
    iteration's loss reads it and goes through the earlier iteration's freed
    graph; the value stored for the next iteration is detached.
    """
    site = facts.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None:
        return None
    holders = [v for k, v in facts.namespace.items() if isinstance(k, str) and not k.startswith("_")]
    for st in ast.walk(tree):
        if not isinstance(st, ast.Assign) or len(st.targets) != 1 or st.lineno != st.end_lineno:
            continue
        elements = st.targets[0].elts if isinstance(st.targets[0], ast.Tuple) else [st.targets[0]]
        read = {ast.unparse(n) for n in ast.walk(st.value) if isinstance(n, ast.Attribute)}
        kept_here = [e for e in elements if isinstance(e, ast.Attribute) and ast.unparse(e) in read]
        if not kept_here:
            continue
        target = kept_here[0]
        name = ast.unparse(target)
        if not any(
            isinstance(kept := getattr(h, "__dict__", {}).get(target.attr), torch.Tensor) and kept.grad_fn is not None
            for h in holders
            if not isinstance(h, torch.Tensor)
        ):
            continue
        # stored again further down the same function (a histogram updated in two steps): the last store is the
        # value kept, and what the rest of the forward reads
        function = function_of(tree, st.lineno)
        later = [
            x
            for x in ast.walk(function if function is not None else tree)
            if isinstance(x, ast.Assign)
            and len(x.targets) == 1
            and x.lineno > st.lineno
            and x.lineno == x.end_lineno
            and ast.unparse(x.targets[0]) == name
            and function_of(tree, x.lineno) is function
        ]
        last = max(later, key=lambda x: x.lineno) if later else st
        loc = Location(site.filename, last.lineno)
        after = _read_after_store(facts, target.attr, base.loss)
        if after is not None:  # NOTE [A memory the loss reads after storing it]
            return replace(
                base,
                carried=name,
                entry_line=loc.code,
                entry_where=loc.where,
                extra={**base.extra, "detach_after_backward": after},
            )
        return replace(base, carried=name, kept_at=loc, entry_line=loc.code, entry_where=loc.where)
    return None


def _read_after_store(facts: Facts, attr: str, loss: str | None) -> str | None:
    """When the failing loss's graph holds the tensor a plain object of the frame keeps on ``attr`` (this iteration's
    loss read the memory after this iteration stored it): the statements that detach each tensor with a graph that
    object keeps, through the frame's name for it, one per line (NOTE [A memory the loss reads after storing it])."""
    value = value_of(loss, facts.namespace) if loss else None
    if not isinstance(value, torch.Tensor) or value.grad_fn is None:
        return None
    below = {id(fn) for fn in walk([value.grad_fn])}
    for name, h in facts.namespace.items():
        kept = getattr(h, "__dict__", {}).get(attr) if not isinstance(h, (torch.Tensor, torch.nn.Module)) else None
        if not (isinstance(name, str) and isinstance(kept, torch.Tensor) and kept.grad_fn is not None):
            continue
        if name.startswith("_") or id(kept.grad_fn) not in below or not name.isidentifier():
            continue
        graphs = [
            k for k, v in vars(h).items() if isinstance(v, torch.Tensor) and v.grad_fn is not None and k.isidentifier()
        ]
        return "\n".join(f"{name}.{k} = {name}.{k}.detach()" for k in graphs)
    return None


# NOTE [A memory the loss reads after storing it]
# A plain object keeps running prototypes (self.source = self._pull(self.source, feats, labels)), and the same
# iteration's loss reads them after that store (an alignment of the two regions' prototypes): the loss trains the
# encoder through this iteration's part of the update, and the next iteration's store reaches into the freed graph of
# this one. A detach where the value is stored would cut this iteration's gradient as well (the alignment would
# train nothing). When the failing loss's graph holds the kept tensor itself, the detach goes after the backward,
# through the frame's name for the object, for every tensor with a graph it keeps (the source's prototypes and the
# target's): the values carry over, this iteration's gradient is kept, the graph of the last one is released.
