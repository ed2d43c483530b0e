"""What a loss reaches by the names of the models its frame or its caller's loop holds (NOTE [Models named by the
caller's loop]): a helper's loss named by the caller loop's models, and the bare parameters (an optimized image)
the graph's module names miss. Read by :mod:`gradlab.causes` for the reach its fixes' claims name."""

from __future__ import annotations

import ast

import torch

from ..evidence import Facts, leaves_of, modules_reached, value_of
from ..source import names

__all__ = ["reach_in_caller", "with_bare_parameters"]


def reach_in_caller(facts: Facts, loss: str | None) -> tuple[str, ...]:
    """The caller loop's models that the failing loss reaches, when the failing function holds no model and no
    optimizer (NOTE [Models named by the caller's loop]): those whose parameters are leaves of the tensors the
    loss's expression reads."""
    loop, site = facts.caller_loop, facts.site
    if loop is None or site is None or site.modules or site.optimizers or not loss:
        return ()
    try:
        read = names(ast.parse(loss, mode="eval"), ast.Load)
    except SyntaxError:
        return ()
    leaves: set[int] = set()
    for name in read:
        value = facts.namespace.get(name)
        if isinstance(value, torch.Tensor) and value.grad_fn is not None:
            leaves |= leaves_of(value)
    return tuple(sorted(modules_reached(loop.site, leaves)))


# NOTE [Models named by the caller's loop]
# A helper that only backwards what it is handed (``def apply_head_loss(loss,
# weight): (weight * loss).backward()``, called once per head by the training
# loop) holds no model, so its graph's parameters have no names there and the
# fixes could say what the loss trains only as "the upstream model". The
# caller's loop holds the models: the loss reaches those whose parameters are
# leaves of the tensors its expression reads, and the fixes' claims name them.


def with_bare_parameters(reach: tuple[str, ...], facts: Facts, loss: str | None) -> tuple[str, ...]:
    """``reach`` with the parameters of no module the loss reaches (an image a style transfer optimizes), by the
    names the frame gives them (:func:`gradlab.loop.read_site`): the graph's names hold modules only."""
    site = facts.site
    value = value_of(loss, facts.namespace) if loss else None
    if site is None or not isinstance(value, torch.Tensor) or value.grad_fn is None:
        return reach
    bare = {
        m: ids
        for m, ids in site.modules.items()
        if m not in reach and len(ids) == 1 and isinstance(facts.namespace.get(m), torch.Tensor)
    }
    if not bare:
        return reach
    leaves = leaves_of(value)
    return tuple(sorted({*reach, *(m for m, ids in bare.items() if ids <= leaves)}))
