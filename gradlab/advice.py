"""What gradlab advises when it knows only the message: the pitfalls, the first step, the fixes per kind.

The fixes of a failure gradlab watched are written from its cause
(:mod:`gradlab.causes`); this module holds the advice that needs no record:
the "fixes" that circulate and should not be applied (:func:`pitfalls`), the
first fix when only the message is known (:func:`locating_fix`), and the fixes
of the family's other messages (:func:`message_fixes`). Every fix says in one
line what it *trains*: which loss then sends gradient into which model.

Example::

    >>> "gradlab.track()" in locating_fix("modified_in_place").summary
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from .fixes import Fix
from .i18n import T, Words

__all__ = ["Pitfall", "pitfalls", "locating_fix", "message_fixes"]


@dataclass(frozen=True)
class Pitfall:
    """A "fix" that circulates and should not be applied: what people try, and what it really does."""

    attempt: Words
    what_it_does: Words


def pitfalls() -> tuple[Pitfall, ...]:
    """What gradlab never recommends, and why (the cheat sheet and the course print these)."""
    return (
        Pitfall(
            attempt=T("retain_graph=True for the 'modified by an inplace operation' error"),
            what_it_does=T(
                "keeps the graph, but the saved tensor is still at the wrong version: the error stays. "
                "It only helps the 'backward through the graph a second time' error, when nothing is stepped in "
                "between."
            ),
        ),
        Pitfall(
            attempt=T(".detach() inside a network's forward"),
            what_it_does=T(
                "the errors go away because the gradient is cut there: the layers before the detach silently "
                "stop learning from this loss, and a layer no other loss reaches stops learning at all "
                "(gradlab.check_intent reports it as unreachable)."
            ),
        ),
        Pitfall(
            attempt=T("adding the losses of two models with opposite goals (a GAN's) and stepping both"),
            what_it_does=T(
                "it runs and check() says ok, but G also gets d_loss's gradient, which points against g_loss's: "
                "G's gradient shrinks, and turns against G's goal as D comes to accept the fakes "
                "(gradlab.check_intent reports it)."
            ),
        ),
        Pitfall(
            attempt=T("softmax over a dimension of size 1 (one output per row)"),
            what_it_does=T(
                "every output is exactly 1.0 and every gradient exactly zero: nothing learns, and nothing "
                "raises an error (gradlab.check_intent reports zero gradients)."
            ),
        ),
    )


# NOTE [the family's fixes]
# The fixes for the autograd messages that need no recorded context (explain() prints
# them for a message alone): each says what it trains, like every fix above.
def locating_fix(kind: str) -> Fix:
    """The first fix when only the message is known (``gradlab.explain`` on a text): find who wrote or freed it.

    A message names neither the models nor the loop, so no fix that assumes a story
    (two chained networks, a carried RNN state) can be known to fit; running the
    failing code under the tracker names the line and the fix that fits it.

    Example::

        >>> "gradlab.track()" in locating_fix("modified_in_place").summary
        True
    """
    if kind == "modified_in_place":
        summary = T(
            "find the write first: run the failing code under gradlab.track() (a script: python -m gradlab run "
            "script.py); it names the line that wrote the saved tensor (an optimizer step, +=, an in-place op) "
            "and the fix that fits your loop"
        )
    else:
        summary = T(
            "find the earlier backward first: run the failing code under gradlab.track() (a script: python -m "
            "gradlab run script.py); it names the backward that freed the graph and tells a loss backwarded twice, "
            "a state carried across iterations and two models apart"
        )
    return Fix(summary=summary, trains=T("nothing changes: the tracker only watches your code run"))


def message_fixes(kind: str, parameters: tuple[str, ...] = ()) -> tuple[Fix, ...]:
    """The fixes for one of the family's message kinds (``gradlab.explanation.KINDS``), each with what it trains.

    ``parameters`` names the parameters the message is about (DDP's unused ones), when known.

    Example::

        >>> message_fixes("non_scalar_output")[0].code
        'loss = out.mean()\\nloss.backward()'
    """
    unused = ", ".join(parameters) if parameters else T("the parameters DDP names")
    table: dict[str, tuple[Fix, ...]] = {
        "no_grad_fn": (
            Fix(
                summary=T("compute the loss outside no_grad(), from the model's output, without .item() or .detach()"),
                trains=T("the loss then trains every parameter it reaches"),
            ),
            Fix(
                summary=T("check that at least one parameter on the path has requires_grad=True"),
                trains=T("frozen parameters (requires_grad=False) never train"),
            ),
        ),
        "leaf_in_place": (
            Fix(
                summary=T("wrap manual updates in torch.no_grad()"),
                trains=T("the update is not part of the graph: the parameter still trains from its loss"),
                code="with torch.no_grad():\n    w -= lr * w.grad",
            ),
            Fix(
                summary=T("use the nn.init functions, or an out-of-place op on a non-leaf copy"),
                trains=T("unchanged"),
            ),
        ),
        "non_scalar_output": (
            Fix(
                summary=T("reduce the output to one number before backward (mean or sum over the batch)"),
                trains=T(
                    "every parameter the output reaches, by the gradient of that number: mean keeps the step size "
                    "independent of the batch size, sum scales it with the batch"
                ),
                code="loss = out.mean()\nloss.backward()",
            ),
            Fix(
                summary=T("if you want a vector-Jacobian product, pass the weights of each output as gradient="),
                trains=T("the same as backward of (out * weights).sum(): each output element weighted as you say"),
                code="out.backward(gradient=torch.ones_like(out))",
            ),
        ),
        "unused_input": (
            Fix(
                summary=T("check that each tensor you differentiate by is used in the loss (not a copy, not detached)"),
                trains=T("the same loss; every input you listed then gets its gradient"),
            ),
            Fix(
                summary=T("if some inputs really are unused, pass allow_unused=True (their gradient is None)"),
                trains=T("nothing changes for the used inputs; the unused ones get None, not zero"),
                code="torch.autograd.grad(loss, inputs, allow_unused=True)",
            ),
        ),
        "numpy_requires_grad": (
            Fix(
                summary=T("convert a detached copy for printing, plotting or metrics"),
                trains=T("unchanged: the numbers leave the graph, the loss still trains what it reached"),
                code="y.detach().cpu().numpy()",
            ),
            Fix(
                summary=T("if the numpy values feed the loss, compute them with torch ops instead"),
                trains=T("gradient then flows through that computation; through numpy it cannot"),
            ),
        ),
        "multi_view_in_place": (
            Fix(
                summary=T("replace the in-place op on the view by its out-of-place form"),
                trains=T("the same as intended: the views keep their values and gradients flow through each"),
                code="a = a * 2  # not a.mul_(2)",
            ),
            Fix(
                alternative=True,
                summary=T("clone the view before writing to it"),
                trains=T("the same as intended; the clone costs one copy of that view"),
                code="a = a.clone()\na.mul_(2)",
            ),
        ),
        "custom_view_in_place": (
            Fix(
                summary=T(
                    "make the write out of place: nn.ReLU() rather than nn.ReLU(inplace=True) after the hooked "
                    "module, x = x + 1 rather than x += 1"
                ),
                trains=T("the same as intended: the same values, and the Function's backward runs as it should"),
                code="nn.ReLU()  # not nn.ReLU(inplace=True)",
            ),
            Fix(
                alternative=True,
                summary=T("clone the custom Function's output before writing to it (torch's own advice)"),
                trains=T("the same as intended; the clone costs one copy of that output"),
                code="y = fn.apply(x).clone()\ny.relu_()",
            ),
        ),
        "detach_view_in_place": (
            Fix(
                summary=T("use the out-of-place x.detach() and keep the result"),
                trains=T("unchanged: the detached tensor leaves the graph, the view itself stays in it"),
                code="x = x.detach()",
            ),
            Fix(
                summary=T(
                    "for DDP with gradient_as_bucket_view=True, clear gradients with optimizer.zero_grad() "
                    "(set_to_none) instead of grad.detach_()"
                ),
                trains=T("unchanged"),
            ),
        ),
        "inference_saved": (
            Fix(
                summary=T("create the tensor outside torch.inference_mode(), or use torch.no_grad() there"),
                trains=T("unchanged: no_grad tensors can be saved by a later graph; they are still constants in it"),
            ),
            Fix(
                summary=T("clone the inference tensor before using it in a graph"),
                trains=T("unchanged: the clone is a normal tensor (a constant); it costs one copy"),
                code="x = x.clone()",
            ),
        ),
        "hook_no_grad": (
            Fix(
                summary=T(
                    "register the hook on a tensor that requires grad (a parameter, or a result computed from one)"
                ),
                trains=T("unchanged: a hook only reads or rewrites gradients that flow"),
            ),
            Fix(
                summary=T("if the tensor should train, set requires_grad_() on it before the forward"),
                trains=T("that tensor then trains: its gradient is computed and the hook sees it"),
                code="x.requires_grad_()",
            ),
        ),
        "anomaly_nan": (
            Fix(
                summary=T(
                    "guard the forward op whose backward produced nan (sqrt or log of 0, division by 0, "
                    "acos of 1): add an epsilon or clamp its input"
                ),
                trains=T("the same parameters; the gradient at the guarded points becomes finite"),
                code="torch.sqrt(x.clamp_min(1e-12))",
            ),
            Fix(
                summary=T("check the inputs and the learning rate if the values were already huge"),
                trains=T("unchanged"),
            ),
        ),
        "checkpoint_metadata": (
            Fix(
                summary=T(
                    "make the checkpointed function deterministic in shape: no state that changes between the "
                    "forward and its recomputation (counters, random sizes, a mode flag)"
                ),
                trains=T("unchanged: the recomputation then matches the forward"),
            ),
            Fix(
                summary=T("if it cannot be, leave that part out of checkpoint() (it keeps its activations)"),
                trains=T("unchanged; costs the memory checkpointing saved"),
            ),
        ),
        "ddp_unfinished_reduction": (
            Fix(
                summary=T(
                    "if {params} should not train: remove them from the model, or freeze them "
                    "(requires_grad_(False)) before wrapping it in DDP",
                    params=unused,
                ),
                trains=T("the same as on one process: those parameters never trained; the others train as before"),
            ),
            Fix(
                summary=T("if {params} should train: use them in forward so that the loss reaches them", params=unused),
                trains=T("those parameters then train from the loss, which they did not before"),
            ),
            Fix(
                summary=T(
                    "if parameters are unused only in some iterations (a branch), pass find_unused_parameters=True"
                ),
                trains=T(
                    "unchanged: each iteration trains what its forward used; DDP walks the graph to find the rest"
                ),
                code="model = DistributedDataParallel(model, find_unused_parameters=True)",
            ),
        ),
        "ddp_ready_twice": (
            Fix(
                summary=T("use the parameters only inside the DDP model's forward (not model.module.x outside it)"),
                trains=T("unchanged: the gradient of that use then goes through DDP's all-reduce"),
            ),
            Fix(
                summary=T(
                    "for checkpointing or several forwards per backward, use checkpoint(..., use_reentrant=False) "
                    "or model._set_static_graph()"
                ),
                trains=T("unchanged"),
            ),
        ),
    }
    if kind not in table:
        raise ValueError(
            f"message_fixes() got kind={kind!r}; pass one of the family's kinds: {', '.join(sorted(table))}."
        )
    return table[kind]
