"""Stable codes for the autograd errors gradlab decodes: one table, in one place.

Each kind of error has a code (``GL0001`` ...) that never changes meaning: the
note's header prints it (``gradlab: error[GL0002 modified in place]: ...``),
``python -m gradlab explain GL0002`` prints its long form (like ``rustc
--explain``; :func:`gradlab.explanation.explain_code`), and docs/codes.md is generated from :data:`CODES` (a test keeps it
in step). New kinds get the next free number; a code is never reused.

Example::

    >>> code_for("modified_in_place").code
    'GL0002'
    >>> by_code("gl0001").kind
    'graph_freed'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .i18n import _, _t, language, set_language

__all__ = ["Code", "CODES", "code_for", "by_code", "is_code", "index_markdown"]


@dataclass(frozen=True)
class Code:
    """One kind of autograd error: its stable ``code``, ``kind`` and an ``example`` of torch's text.

    ``example`` is a message as torch 2.13 prints it (long forms and tests decode it);
    ``title`` the kind's short name in the note's header, in gradlab's language.
    """

    code: str
    kind: str
    example: str

    @property
    def title(self) -> str:
        """The kind's short name, as the note's header prints it (``modified in place``)."""
        return _titles()[self.kind]

    def header(self) -> str:
        """``error[GL0002 modified in place]``: the head of a note, without the message."""
        return _t("error[{code} {title}]", code=self.code, title=self.title)


def _titles() -> dict[str, str]:
    return {
        "graph_freed": _("graph freed"),
        "modified_in_place": _("modified in place"),
        "no_grad_fn": _("no grad_fn"),
        "leaf_in_place": _("leaf in place"),
        "non_scalar_output": _("non-scalar output"),
        "unused_input": _("input not used"),
        "numpy_requires_grad": _("numpy of a tensor that requires grad"),
        "multi_view_in_place": _("multi-view in place"),
        "detach_view_in_place": _("detach_ of a view"),
        "inference_saved": _("inference tensor saved"),
        "hook_no_grad": _("hook on a tensor without grad"),
        "anomaly_nan": _("nan in backward"),
        "checkpoint_metadata": _("checkpoint recomputed differently"),
        "ddp_unfinished_reduction": _("DDP parameters unused"),
        "ddp_ready_twice": _("DDP parameter ready twice"),
        "custom_view_in_place": _("custom Function's view in place"),
    }


#: Every code, in order. Append only: a code's meaning never changes.
CODES: tuple[Code, ...] = (
    Code(
        "GL0001",
        "graph_freed",
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
        "if you need to access saved tensors after calling backward.",
    ),
    Code(
        "GL0002",
        "modified_in_place",
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[torch.FloatTensor [10, 1]], which is output 0 of AsStrided, is at version 2; expected version 1 "
        "instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True, check_nan=False).",
    ),
    Code(
        "GL0003",
        "no_grad_fn",
        "element 0 of tensors does not require grad and does not have a grad_fn",
    ),
    Code(
        "GL0004",
        "leaf_in_place",
        "a leaf Variable that requires grad is being used in an in-place operation.",
    ),
    Code(
        "GL0005",
        "non_scalar_output",
        "grad can be implicitly created only for scalar outputs",
    ),
    Code(
        "GL0006",
        "unused_input",
        "The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True "
        "if this is the desired behavior.",
    ),
    Code(
        "GL0007",
        "numpy_requires_grad",
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
    ),
    Code(
        "GL0008",
        "multi_view_in_place",
        "Output 0 of Split is a view and is being modified inplace. This view is the output of a function that "
        "returns multiple views. Such functions do not allow the output views to be modified inplace. You should "
        "replace the inplace operation by an out-of-place one.",
    ),
    Code(
        "GL0009",
        "detach_view_in_place",
        "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for "
        "training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence "
        "detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
        "function in torch/optim/optimizer.py as the solution.",
    ),
    Code(
        "GL0010",
        "inference_saved",
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
        "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
        "it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.",
    ),
    Code(
        "GL0011",
        "hook_no_grad",
        "cannot register a hook on a tensor that doesn't require gradient",
    ),
    Code(
        "GL0012",
        "anomaly_nan",
        "Function 'SqrtBackward0' returned nan values in its 0th output.",
    ),
    Code(
        "GL0013",
        "checkpoint_metadata",
        "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than during "
        "the forward pass. tensor at position 0: saved metadata: {'shape': torch.Size([1]), 'dtype': "
        "torch.float32, 'device': device(type='cpu')} recomputed metadata: {'shape': torch.Size([2]), 'dtype': "
        "torch.float32, 'device': device(type='cpu')}",
    ),
    Code(
        "GL0014",
        "ddp_unfinished_reduction",
        "Expected to have finished reduction in the prior iteration before starting a new one. This error "
        "indicates that your module has parameters that were not used in producing loss. Parameter indices which "
        "did not receive grad for rank 0: 2 3",
    ),
    Code(
        "GL0015",
        "ddp_ready_twice",
        "Expected to mark a variable ready only once. This error is caused by one of the following reasons: "
        "1) Use of a module parameter outside the `forward` function. Parameter at index 1 with name a.bias has "
        "been marked as ready twice.",
    ),
    Code(
        "GL0016",
        "custom_view_in_place",
        "Output 0 of BackwardHookFunction is a view and is being modified inplace. This view was created inside a "
        "custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace "
        "would override the custom backward associated with the custom Function, leading to incorrect gradients. "
        "This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
    ),
)

_BY_KIND = {c.kind: c for c in CODES}
_BY_CODE = {c.code: c for c in CODES}
_CODE = re.compile(r"GL\d{4}", re.I)


def code_for(kind: str) -> Code | None:
    """The code of an error ``kind`` (``Explanation.kind``, ``Problem.kind``), or None for one without a code."""
    return _BY_KIND.get(kind)


def is_code(text: str) -> bool:
    """Whether ``text`` has the shape of a code (``GL0001``; any case)."""
    return _CODE.fullmatch(text.strip()) is not None


def by_code(code: str) -> Code:
    """The entry of ``code`` (``"GL0001"``, any case); ValueError for a code gradlab does not have."""
    if not isinstance(code, str):
        raise TypeError(f"by_code() got {type(code).__name__}; pass a code as a str, like 'GL0001'.")
    entry = _BY_CODE.get(code.strip().upper())
    if entry is None:
        raise ValueError(
            f"gradlab has no error code {code!r}; pass one of {CODES[0].code} to {CODES[-1].code} "
            "(python -m gradlab explain --codes lists them)."
        )
    return entry


def index_markdown() -> str:
    """The index of every code as Markdown, in English (docs/codes.md is this text)."""
    previous = language()
    set_language("en")
    try:
        titles = {c.kind: c.title for c in CODES}
    finally:
        set_language(previous)
    lines = [
        "# gradlab's error codes",
        "",
        "Generated from `gradlab/codes.py` (`python tools/codes_index.py`); a test checks it does not drift.",
        "`python -m gradlab explain CODE` prints the long form of a code.",
        "",
        "| code | kind | title | torch's message begins |",
        "|---|---|---|---|",
    ]
    for c in CODES:
        head = c.example.split(". ")[0].replace("|", "\\|")
        if len(head) > 90:
            head = head[:87] + "..."
        lines.append(f"| {c.code} | `{c.kind}` | {titles[c.kind]} | {head} |")
    return "\n".join(lines) + "\n"
