"""GL0003 ``no_grad_fn``: backward on a tensor without a graph; the line that cut it, when a tracker saw it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from ..advice import message_fixes
from ..explanation import Explanation
from ..i18n import T
from ..messages import Message

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["explain", "located_cut", "no_graph"]


def explain(m: Message) -> Explanation:
    return Explanation(
        kind="no_grad_fn",
        summary=T(
            "Element {index} of the tensors you called backward on has no graph:"
            " it does not require grad, so there is nothing to differentiate.",
            index=m.index,
        ),
        message=m.text,
        torch_wording=T("any torch release"),
        meaning=(
            T("The loss was computed from tensors none of which requires grad, or outside autograd's recording."),
        ),
        causes=(
            T("The forward ran under torch.no_grad() or torch.inference_mode() (e.g. an eval loop)."),
            T("The parameters have requires_grad=False (frozen) or the input was .detach()ed."),
            T("The loss was rebuilt from numbers: torch.tensor(loss.item()) or a numpy round trip."),
        ),
        fixes=message_fixes("no_grad_fn"),
    )


def located_cut(explanation: Explanation, tensors: Sequence[object], recorder: Recorder | None) -> Explanation | None:
    """``explanation`` located at the cut a tracker saw behind a backward on ``tensors``, or None if it saw none.

    The one rule for the note after the error and for :func:`gradlab.check` before the backward.
    """
    found = recorder.cut_for(tensors) if recorder is not None else None
    if found is None:
        return None
    cut, exact = found
    return explanation.located(cut.label, cut.location, exact)


def no_graph(tensors: Sequence[object], recorder: Recorder | None = None) -> Explanation | None:
    """Why a backward on ``tensors`` would fail for want of a graph (GL0003), before it runs; None if it would not.

    torch refuses the first tensor that does not require grad ("element i of tensors does
    not require grad and does not have a grad_fn"); under a tracker (``recorder``) the
    explanation names the line that cut the graph, as the note after the error does.

    Example::

        >>> w = torch.ones(2, requires_grad=True)
        >>> no_graph([(w * 2).sum().detach()]).code
        'GL0003'
        >>> no_graph([(w * 2).sum()]) is None
        True
    """
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor) and not t.requires_grad:
            text = f"element {i} of tensors does not require grad and does not have a grad_fn"  # torch's words
            explanation = explain(Message("no_grad_fn", text, index=i))
            return located_cut(explanation, tensors, recorder) or explanation
    return None
