"""torch APIs that write tensors, or run a forward and a backward, on their own: the table, with torch's fixes.

One home for what gradlab knows of the torch calls that change a tensor autograd may
have saved without the user writing an in-place op (an optimizer's step, an
embedding's renormalisation, a batch norm's running statistics, ``nn.init``,
``load_state_dict``, an in-place activation), or that run the user's forward and
backward themselves (``LBFGS.step(closure)``, ``torch.utils.checkpoint``). Each
:class:`Writer` says what the call does, whether torch's version counter sees it,
and the fix torch's own documentation gives; ``tests/test_writers.py`` shows each
row on real torch (the write, the error it causes, the documented fix running).

The advice reads it by the op name gradlab records for the write
(:func:`documented`): a fix that is the one torch documents says so.

Example::

    >>> documented("embedding_renorm_").api
    'nn.Embedding(max_norm=...)'
    >>> documented("AdamW.step()").counter
    True
    >>> documented("my_function") is None
    True
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

__all__ = ["WRITERS", "Writer", "documented"]


@dataclass(frozen=True)
class Writer:
    """One torch API that writes, or runs forward and backward, on its own.

    ``ops`` are the names gradlab's records give its writes (shell patterns:
    ``*.step()`` is every optimizer's step; none where the op's name is also the user's
    own, as ``normal_`` or ``copy_``); ``does`` what it writes or runs;
    ``counter`` whether torch's version counter sees the write (when it does not, the
    in-place error never comes and the gradient is silently computed from new values);
    ``fix`` the fix torch documents; ``source`` where (the documentation page).
    """

    api: str
    ops: tuple[str, ...]
    does: str
    counter: bool
    fix: str
    source: str


WRITERS: tuple[Writer, ...] = (
    Writer(
        api="torch.optim.LBFGS.step(closure)",
        ops=("LBFGS.step()",),
        does="calls the closure several times per step: the closure runs the forward and the backward",
        counter=True,
        fix="compute the loss inside the closure, from a fresh forward, and return it",
        source="https://pytorch.org/docs/stable/optim.html#optimizer-step-closure",
    ),
    Writer(
        api="torch.optim.Optimizer.step()",
        ops=("*.step()",),
        does="writes every parameter it holds in place (AdamW twice: weight decay, then the update)",
        counter=True,
        fix="call step() after every backward that reads the parameters (zero_grad(), backward(), step())",
        source="https://pytorch.org/docs/stable/optim.html#taking-an-optimization-step",
    ),
    Writer(
        api="torch.optim.Adam(..., fused=True) (and AdamW, SGD, Adagrad)",
        ops=(),
        does="writes every parameter in one fused kernel, without moving its version counter",
        counter=False,
        fix="the same order as any step; torch cannot catch the stale read (gradlab's SilentWriteWarning can)",
        source="https://pytorch.org/docs/stable/generated/torch.optim.Adam.html",
    ),
    Writer(
        api="nn.Embedding(max_norm=...)",
        ops=("embedding_renorm_",),
        does="renormalises the rows it looks up, in place in weight, at every forward",
        counter=True,
        fix="clone the weight where a differentiable op reads it before the embedding's forward: "
        "emb.weight.clone() @ ...",
        source="https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html",
    ),
    Writer(
        api="nn.BatchNorm1d/2d/3d in training mode",
        ops=(),
        does="updates running_mean and running_var in place at every forward, without moving their version "
        "counters (torch 2.13, CPU): a graph that read them computes its gradient from the new values, silently",
        counter=False,
        fix="read a copy of a running statistic used in a graph (bn.running_mean.clone()), or read it in eval mode",
        source="https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html",
    ),
    Writer(
        api="nn.init.*_ (normal_, uniform_, kaiming_normal_, ...)",
        ops=(),  # the ops (normal_, ...) are also the user's own: not told apart by name
        does="writes the tensor in place under torch.no_grad()",
        counter=True,
        fix="initialise before the forward that saves the tensor, never between a forward and its backward",
        source="https://pytorch.org/docs/stable/nn.init.html",
    ),
    Writer(
        api="nn.Module.load_state_dict()",
        ops=(),  # copy_, as the user's own copies
        does="copies into every parameter and buffer in place under torch.no_grad()",
        counter=True,
        fix="load after the backward (or before the forward) that reads the parameters",
        source="https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.load_state_dict",
    ),
    Writer(
        api="nn.ReLU(inplace=True), nn.Dropout(inplace=True), F.relu_(), ...",
        ops=(),  # relu_, as the user's own x.relu_()
        does="writes its input in place in the forward",
        counter=True,
        fix="inplace=False where the input is a tensor an earlier op saved for backward",
        source="https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd",
    ),
    Writer(
        api="torch.nn.utils.parametrize.cached()",
        ops=(),
        does="computes each parametrized tensor once, at its first use inside the context, and keeps it with its "
        "graph until the context exits",
        counter=True,
        fix="enter the context around one forward (inside the training loop), not around the loop",
        source="https://pytorch.org/docs/stable/generated/torch.nn.utils.parametrize.cached.html",
    ),
    Writer(
        api="torch.distributions.Transform(cache_size=1) (a TransformedDistribution's transforms)",
        ops=(),
        does="keeps the last (x, y) pair it computed, with its graph, and hands back the cached partner when it is "
        "given the same tensor again (log_prob of one data tensor at every step)",
        counter=True,
        fix="cache_size=0 for transforms whose parameters train (the default), or clear the cache after each "
        "backward (Pyro's clear_cache())",
        source="https://pytorch.org/docs/stable/distributions.html#torch.distributions.transforms.Transform",
    ),
    Writer(
        api="torch.nn.utils.weight_norm (deprecated)",
        ops=(),
        does="computes module.weight from weight_g and weight_v in a forward pre-hook, only when the module is "
        "called: code that reads the weight itself gets the tensor of the last call, with that call's graph",
        counter=True,
        fix="torch.nn.utils.parametrizations.weight_norm, whose weight is computed at every access",
        source="https://pytorch.org/docs/stable/generated/torch.nn.utils.weight_norm.html",
    ),
    Writer(
        api="torch.utils.checkpoint.checkpoint(function, ...)",
        ops=(),
        does="runs the function's forward again during backward, to recompute what it did not save",
        counter=True,
        fix="keep the checkpointed function free of side effects (no in-place writes to its inputs or to state); "
        "use_reentrant=False",
        source="https://pytorch.org/docs/stable/checkpoint.html",
    ),
)


def documented(op: str | None) -> Writer | None:
    """The row of :data:`WRITERS` whose write gradlab records as ``op`` (``"Adam.step()"``), or None."""
    if not op:
        return None
    for w in WRITERS:
        if any(fnmatch.fnmatchcase(op, pattern) for pattern in w.ops):
            return w
    return None
