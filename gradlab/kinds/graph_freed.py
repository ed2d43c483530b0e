"""GL0001 ``graph_freed``: a backward through a part of a graph an earlier backward freed, as its message says it."""

from __future__ import annotations

from ..advice import locating_fix
from ..causes import fixes_for
from ..explanation import Explanation
from ..i18n import T
from ..messages import Message

__all__ = ["explain"]


def explain(m: Message) -> Explanation:
    text = m.text
    if "retain_variables" in text:
        wording = T("torch 0.1-0.2 (retain_variables)")
    elif "buffers have already been freed" in text:
        wording = T("torch 0.3 to 1.x (buffers have already been freed)")
    elif "saved intermediate results" in text:
        wording = T("torch 1.x (saved intermediate results have already been freed)")
    elif "directly access saved tensors" in text:
        wording = T("torch >= 1.10 (or directly access saved tensors ...)")
    else:
        wording = T("unknown release (first sentence only)")
    return Explanation(
        kind="graph_freed",
        summary=T(
            "A backward went through part of a graph whose saved tensors were already freed"
            " by an earlier backward (or .grad_fn._saved_* was read after backward)."
        ),
        message=text.strip(),
        torch_wording=wording,
        meaning=(
            T("To save memory, backward frees the tensors each node saved as soon as it has used them."),
            T(
                "A second backward that reaches any of those nodes finds nothing to use and stops with"
                " this error, even if only a shared part of the graph is reached twice."
            ),
            T("retain_graph=True on the first backward keeps the saved tensors alive instead."),
        ),
        causes=(
            T(
                "Two losses built on one forward, each with its own backward (two chained networks,"
                " GAN: the generator's fake batch used for the discriminator loss and again for the"
                " generator loss; actor-critic sharing a trunk)."
            ),
            T(
                "A tensor carried across iterations keeps the old graph: an RNN hidden state passed to"
                " the next batch, a running sum of losses, a moving average that is not detached."
            ),
            T("Calling backward twice on the same loss (e.g. once for logging, once for training)."),
            T("Reading grad_fn._saved_* attributes after backward."),
        ),
        fixes=(
            locating_fix("graph_freed"),  # nothing in the message shows two models: find the earlier backward
            *fixes_for("shared_graph_freed")[:3],
            fixes_for("carried_state")[0],
            fixes_for("same_loss_twice")[0],
        ),
    )
