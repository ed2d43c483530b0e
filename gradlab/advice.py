"""What to do about each kind of autograd failure: gradlab's fix advice, in one place.

Every text that tells a user how to fix an autograd error lives here:
:func:`gradlab.check`, :func:`gradlab.explain`, the command line, the IPython
extension and the course render it from this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .diagnosis import Problem

__all__ = ["fix_options"]

_FREED_FIXES = [
    "Call backward once per graph: add the losses that share it and call backward on the sum "
    "(in the course: forward both networks, then (loss_1 + loss_2).backward()).",
    "If the second model should treat the first one's output as data, detach it where it enters "
    "(in the course: n_2(pred_1.detach())).",
    "State carried from one iteration to the next (an RNN's hidden state, a running total of losses): "
    "detach it at the start of each iteration (h = h.detach()), or keep loss.item() instead of the tensor.",
    "If you need the graph again, recompute the forward pass instead of reusing the old output.",
    "retain_graph=True on the first backward only helps when nothing modifies the saved tensors "
    "in between; otherwise it turns this error into the in-place one.",
]
_STEP_FIXES = [
    "Run every backward before the optimizer.step() that changes the weights it saved: "
    "zero all, backward all (or their sum), then step all.",
    "If the model whose weights changed should not learn from this loss, feed its output in "
    "detached (in the course: n_2(pred_1.detach())).",
    "If you must step in between, recompute the forward pass after the step, so the new graph "
    "saves the new weights (in a GAN: run the discriminator again on the fake batch).",
]
_OP_FIXES = [
    "Replace the in-place op with its out-of-place form: x = x + 1 for x += 1, torch.where(...) for "
    "x[i] = v, nn.ReLU() for nn.ReLU(inplace=True).",
]


def fix_options(kind: str, problems: Sequence[Problem] = ()) -> list[str]:
    """Fix options for one kind of problem, the likeliest first.

    For an in-place problem, a write by an ``optimizer.step()`` puts the ordering
    fixes first; a write by an op puts "use the out-of-place form" first; when
    nobody recorded the writer (outside :func:`gradlab.track`), both are listed.
    """
    if kind == "graph_freed":
        return list(_FREED_FIXES)
    if kind != "modified_in_place":
        raise ValueError(f"kind must be 'graph_freed' or 'modified_in_place', not {kind!r}")
    writers = [p.modified_by for p in problems if p.kind == kind and p.modified_by]
    by_step = any(w.endswith(".step()") for w in writers)
    by_op = any(not w.endswith(".step()") for w in writers)
    if by_op and not by_step:
        return _OP_FIXES + _STEP_FIXES
    if by_step and not by_op:
        return _STEP_FIXES + [
            "If the tensor was changed by your own code, use the out-of-place op (x = x + 1, not x += 1)."
        ]
    return _STEP_FIXES + _OP_FIXES
