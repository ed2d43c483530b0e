"""The family's other messages (GL0005 to GL0015): what each says, why it happens, its fixes."""

from __future__ import annotations

import re
from dataclasses import replace

import torch

from ..advice import message_fixes
from ..explanation import Explanation
from ..i18n import T, Words
from ..location import Location
from ..messages import Message
from .modified_in_place import base_node

__all__ = ["BUILDERS", "at_checkpoint"]


def _node_wording(node: str | None) -> Words:
    if node is None:
        return T("any torch release")
    if re.search(r"Backward\d+$", node):
        return T("torch 1.10 to 2.12 (node names like SplitBackward0)")
    return T("torch 2.13 or later (node names without 'Backward', like Split)")


# NOTE [Fixed texts]: the kinds whose message has no part to read (no index, node or name)
# differ only in their sentences, so one builder reads them from this table (built per call:
# the sentences are in gradlab's language of the moment).
def _fixed_texts() -> dict[str, tuple[Words, Words, tuple[Words, ...], tuple[Words, ...]]]:
    """(summary, torch's wording, what the message says, likely causes) of each kind with fixed texts."""
    return {
        "non_scalar_output": (
            T(
                "backward() was called without gradient= on a tensor with more than one element, so autograd does"
                " not know how to weigh its elements."
            ),
            T("any torch release ('real scalar outputs' for a complex output)"),
            (
                T(
                    "'implicitly created' is the gradient of the output with respect to itself: for a scalar loss it"
                    " is 1; for a vector autograd would need one weight per element (a vector-Jacobian product)."
                ),
            ),
            (
                T("The loss was not reduced: a per-sample loss (reduction='none') or the model's output itself."),
                T("A reduction over the wrong dimension left a vector (loss.mean(dim=0) of a 2-D loss)."),
            ),
        ),
        "numpy_requires_grad": (
            T(
                ".numpy() was called on a tensor that is part of a graph: numpy arrays cannot carry gradients, so"
                " torch refuses to drop them silently."
            ),
            T("any torch release"),
            (T("'requires grad' means the tensor is a parameter or was computed from one in a graph."),),
            (
                T("Printing, plotting or logging a model output or a loss (plt.plot(pred), np.mean(loss))."),
                T("A metric or a loss term computed in numpy (that part could not train anything)."),
            ),
        ),
        "detach_view_in_place": (
            T("detach_() was called on a view; a view shares its base's graph, so it cannot leave the graph in place."),
            T("any torch 1.x or 2.x release (the DDP sentence since 1.7)"),
            (T("detach_() changes the tensor itself; detach() returns a new tensor and works on views."),),
            (
                T("x[:n].detach_() or a slice of a hidden state detached in place."),
                T("Under DDP with gradient_as_bucket_view=True: p.grad.detach_() in a hand-written zero_grad."),
            ),
        ),
        "inference_saved": (
            T(
                "A tensor created under torch.inference_mode() was used by an op that saves it for backward;"
                " inference tensors have no version counter, so autograd cannot save them."
            ),
            T("torch 1.9 or later (inference_mode)"),
            (
                T(
                    "Inference tensors are cheaper than no_grad tensors because autograd keeps no bookkeeping for them;"
                    " that is also why they cannot take part in a graph later."
                ),
            ),
            (
                T(
                    "Data or features precomputed under inference_mode() (a cache, a frozen encoder) then used in training."
                ),
                T("A tensor returned by an evaluation function decorated with @torch.inference_mode()."),
            ),
        ),
        "hook_no_grad": (
            T(
                "register_hook() was called on a tensor that does not require grad: no gradient will ever reach it,"
                " so a hook there could never run."
            ),
            T("any torch release"),
            (T("A tensor hook runs when its gradient is computed; without requires_grad there is none."),),
            (
                T("The tensor was computed under torch.no_grad(), or was .detach()ed, or is an input batch."),
                T("The parameter was frozen (requires_grad=False) before the hook was registered."),
            ),
        ),
    }


def _fixed(m: Message) -> Explanation:
    """The explanation of a message with fixed texts (NOTE [Fixed texts])."""
    summary, wording, meaning, causes = _fixed_texts()[m.kind]
    return Explanation(
        kind=m.kind,
        summary=summary,
        message=m.text,
        torch_wording=wording,
        meaning=meaning,
        causes=causes,
        fixes=message_fixes(m.kind),
    )


def _unused_input(m: Message) -> Explanation:
    which = T("the input at index {index}", index=m.index) if m.index is not None else T("one of the inputs")
    return Explanation(
        kind="unused_input",
        summary=T(
            "torch.autograd.grad() was asked for the gradient with respect to {which}, but the output does not"
            " depend on it through the graph.",
            which=which,
        ),
        message=m.text,
        torch_wording=T("torch 2.13 or later (names the index)")
        if m.index is not None
        else T("torch 1.x to 2.12 (One of the differentiated Tensors)"),
        meaning=(
            T(
                "'differentiated Tensors' are the inputs= of torch.autograd.grad(); the index counts them from 0,"
                " in the order you passed them."
            ),
            T("allow_unused=True returns None for such inputs instead of raising."),
        ),
        causes=(
            T("The input was replaced before use: a copy, .detach(), .to(device) or a re-created tensor was used."),
            T("The parameter belongs to a layer the forward did not call (a branch not taken, an unused head)."),
        ),
        fixes=message_fixes("unused_input"),
    )


def _multi_view_in_place(m: Message) -> Explanation:
    base = base_node(m.node) if m.node else None
    return Explanation(
        kind="multi_view_in_place",
        summary=T(
            "An in-place write went to output {nr} of {base}, one of several views that one op returned;"
            " autograd cannot rebase such views, so it refuses the write.",
            nr=m.output_nr,
            base=base,
        ),
        message=m.text,
        torch_wording=_node_wording(m.node),
        output_of=m.node,
        output_nr=m.output_nr,
        meaning=(
            T(
                "'Output {nr} of {node}' is the view the write went to: the {nr}th result of {base}"
                " (split, chunk, unbind and similar return several views of one tensor).",
                nr=m.output_nr,
                node=m.node,
                base=base,
            ),
            T(
                "A write to one view changes the memory the others share; autograd can record it for a single"
                " view, not for an op that returned several."
            ),
        ),
        causes=(
            T("x.split()/chunk()/unbind() (or a, b = x) followed by an in-place op on one part (a += 1, a.relu_())."),
            T("An inplace=True layer applied to one chunk."),
        ),
        fixes=message_fixes("multi_view_in_place"),
    )


def _custom_view_in_place(m: Message) -> Explanation:
    hook = (m.node or "").startswith("BackwardHookFunction")  # "...Backward" up to torch 2.12
    return Explanation(
        kind="custom_view_in_place",
        summary=T(
            "An in-place write went to output {nr} of {node}, a view a custom autograd Function returned; recording"
            " the write would bypass the Function's own backward and give wrong gradients, so torch forbids it.",
            nr=m.output_nr,
            node=m.node,
        ),
        message=m.text,
        torch_wording=T("any torch release"),
        output_of=m.node,
        output_nr=m.output_nr,
        meaning=(
            T(
                "'Output {nr} of {node}' is the tensor written to: output {nr} of the custom Function {node}"
                " (a view of its input, or its input returned as-is).",
                nr=m.output_nr,
                node=m.node,
            ),
            T(
                "BackwardHookFunction is the Function register_full_backward_hook() wraps a module's inputs and"
                " outputs in: the first in-place op after such a module writes to its view."
            )
            if hook
            else T("A write to it would bypass the Function's backward, so the gradients would be wrong."),
        ),
        causes=(
            T(
                "A module with register_full_backward_hook() followed by an inplace=True activation"
                " (nn.ReLU(inplace=True) right after a hooked conv), or an in-place op on its output."
            ),
            T("A custom autograd.Function whose forward returns its input, or a view of it, written in place after."),
        ),
        fixes=message_fixes("custom_view_in_place"),
    )


def _anomaly_nan(m: Message) -> Explanation:
    base = base_node(m.node) if m.node else None
    return Explanation(
        kind="anomaly_nan",
        summary=T(
            "Anomaly mode found nan in the gradient that the backward of {base} computed (its output {nr}).",
            base=base,
            nr=m.output_nr,
        ),
        message=m.text,
        torch_wording=_node_wording(m.node),
        output_of=m.node,
        output_nr=m.output_nr,
        anomaly_mode=True,
        meaning=(
            T(
                "'{node}' is the backward node whose result is nan; its forward op is {base}, and anomaly mode"
                " printed the forward line that created it above the error.",
                node=m.node,
                base=base,
            ),
            T(
                "'its {nr}th output' counts the gradients that node returns, one per input of {base}, from 0"
                " (torch writes 1th for the second).",
                nr=m.output_nr,
                base=base,
            ),
        ),
        causes=(
            T(
                "A function whose derivative is infinite at the point reached: sqrt(0), log(0), x / 0, pow(0, "
                "fractional), acos(1), norm of a zero vector."
            ),
            T("The forward was already inf or nan (too large a learning rate, an overflow)."),
        ),
        fixes=message_fixes("anomaly_nan"),
    )


def _checkpoint_metadata(m: Message) -> Explanation:
    where = T("the tensor at position {index}", index=m.index) if m.index is not None else T("a saved tensor")
    return Explanation(
        kind="checkpoint_metadata",
        summary=T(
            "torch.utils.checkpoint recomputed the forward during backward and {where} came out with a"
            " different shape, dtype or device than in the first forward.",
            where=where,
        ),
        message=m.text,
        torch_wording=T("torch 2.1 or later (non-reentrant checkpoint)"),
        meaning=(
            T(
                "'position' counts the tensors the checkpointed function saved for backward, in the order it"
                " saved them; 'saved metadata' is the first forward's, 'recomputed metadata' the recomputation's."
            ),
        ),
        causes=(
            T("The function reads state that changed in between: a counter, a flag set by the training loop."),
            T("Randomness that decides a shape (random crop, dropout of whole tokens) without preserve_rng_state."),
        ),
        fixes=message_fixes("checkpoint_metadata"),
    )


def _ddp_unfinished(m: Message) -> Explanation:
    which: Words
    if m.parameters:
        which = ", ".join(m.parameters)
    elif m.parameter_indices:
        which = T("the parameters at indices {indices}", indices=", ".join(str(i) for i in m.parameter_indices))
    else:
        which = T("some parameters")
    meaning = [
        T(
            "DDP all-reduces each parameter's gradient when backward reaches it; a new iteration started before"
            " the previous one's reduction finished, because some parameters never got a gradient."
        ),
    ]
    if m.parameter_indices:
        meaning.append(
            T(
                "'Parameter indices which did not receive grad for rank {rank}' counts list(model.parameters()) from"
                " 0 on that process; TORCH_DISTRIBUTED_DEBUG=INFO prints their names.",
                rank=m.rank,
            )
        )
    return Explanation(
        kind="ddp_unfinished_reduction",
        summary=T("DDP's backward did not reach {which}, so its gradient reduction never finished.", which=which),
        message=m.text,
        torch_wording=T("torch 1.x and 2.x"),
        meaning=tuple(meaning),
        causes=(
            T("A layer defined in __init__ but not used in forward (an auxiliary head, an old layer)."),
            T("A branch not taken in this iteration (if/else in forward), so its parameters got no gradient."),
            T("A .detach() (or no_grad) on the path cut the parameters off from the loss."),
        ),
        fixes=message_fixes("ddp_unfinished_reduction", m.parameters),
        parameters=m.parameters,
    )


def _ddp_ready_twice(m: Message) -> Explanation:
    which = (
        m.parameters[0]
        if m.parameters
        else (T("the parameter at index {index}", index=m.index) if m.index is not None else T("a parameter"))
    )
    return Explanation(
        kind="ddp_ready_twice",
        summary=T(
            "DDP saw the gradient of {which} arrive twice in one iteration; it reduces each parameter once per backward.",
            which=which,
        ),
        message=m.text,
        torch_wording=T("torch 1.x and 2.x"),
        meaning=(
            T(
                "'mark a variable ready' is DDP's hook on a parameter's gradient; twice means two autograd paths"
                " reached it in one backward that DDP did not plan for."
            ),
        ),
        causes=(
            T("A parameter used outside the DDP model's forward (model.module.weight in the loss)."),
            T("Reentrant checkpointing (use_reentrant=True) over the same layers, or two forwards per backward."),
        ),
        fixes=message_fixes("ddp_ready_twice"),
        parameters=m.parameters,
    )


_METADATA = re.compile(
    r"tensor at position (?P<index>\d+):\s*saved metadata: (?P<saved>\{.*?\})\s*recomputed metadata: (?P<again>\{.*?\})"
)


def at_checkpoint(error: BaseException, explanation: Explanation) -> Explanation:
    """A checkpoint's recomputation that differed, located: the checkpointed function, the tensor's two metadata.

    The function is read from torch's own frame in the traceback (the recompute
    function's closure); the metadata from the message.
    """
    found = _checkpointed_function(error)
    chain: list[BaseException] = [error]
    while len(chain) < 8 and (chain[-1].__cause__ or chain[-1].__context__) is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]
    # in debug mode torch raises its log, from the CheckpointError that has the metadata
    metadata = next((m for x in chain if (m := _METADATA.search(" ".join(str(x).split()))) is not None), None)
    meaning = explanation.meaning
    if metadata is not None:
        meaning = (
            T(
                "The tensor at position {index} was {saved} in the forward and {again} when recomputed.",
                index=metadata["index"],
                saved=metadata["saved"],
                again=metadata["again"],
            ),
            *meaning,
        )
    if found is None:
        return replace(explanation, meaning=meaning)
    name, where = found
    return replace(explanation, meaning=meaning, checkpointed=name, checkpointed_at=where)


def _checkpointed_function(error: BaseException) -> tuple[str, Location] | None:
    """The user's function torch.utils.checkpoint ran again, from the frames of ``error``'s traceback."""
    from ..location import _library_file

    tb = error.__traceback__
    while tb is not None:
        recompute = getattr(tb.tb_frame.f_locals.get("frame"), "recompute_fn", None)
        for cell in getattr(recompute, "__closure__", None) or ():
            try:
                fn = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            target = type(fn).forward if isinstance(fn, torch.nn.Module) else getattr(fn, "__func__", fn)
            code = getattr(target, "__code__", None)
            if code is not None and not _library_file(code.co_filename):
                return getattr(target, "__qualname__", code.co_name), Location(code.co_filename, code.co_firstlineno)
        tb = tb.tb_next
    return None


#: The builder of each kind of the family, by kind.
BUILDERS = {
    "non_scalar_output": _fixed,
    "unused_input": _unused_input,
    "numpy_requires_grad": _fixed,
    "multi_view_in_place": _multi_view_in_place,
    "detach_view_in_place": _fixed,
    "inference_saved": _fixed,
    "hook_no_grad": _fixed,
    "anomaly_nan": _anomaly_nan,
    "checkpoint_metadata": _checkpoint_metadata,
    "ddp_unfinished_reduction": _ddp_unfinished,
    "ddp_ready_twice": _ddp_ready_twice,
    "custom_view_in_place": _custom_view_in_place,
}
