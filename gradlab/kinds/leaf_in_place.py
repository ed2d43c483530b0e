"""GL0004 ``leaf_in_place``: an in-place write to a leaf tensor that requires grad (a parameter, an input)."""

from __future__ import annotations

from ..advice import message_fixes
from ..explanation import Explanation
from ..i18n import T
from ..messages import Message

__all__ = ["explain"]


def explain(m: Message) -> Explanation:
    if m.view:
        summary = T(
            "An in-place operation was applied to a view of a leaf tensor that requires grad"
            " (a parameter or a tensor you created with requires_grad=True)."
        )
    else:
        summary = T(
            "An in-place operation was applied to a leaf tensor that requires grad"
            " (a parameter or a tensor you created with requires_grad=True)."
        )
    return Explanation(
        kind="leaf_in_place",
        summary=summary,
        message=m.text,
        torch_wording=T("any torch release"),
        meaning=(
            T(
                "autograd cannot record an in-place change to a leaf: its .grad is defined with"
                " respect to the value you created, so overwriting it is refused."
            ),
        ),
        causes=(
            T("A manual parameter update written as w -= lr * w.grad outside torch.no_grad()."),
            T("Initialising or clipping a parameter in place (w[0] = 0, w.clamp_()) with grad enabled."),
        ),
        fixes=message_fixes("leaf_in_place"),
    )
