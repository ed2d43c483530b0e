"""GL0001 ``graph_freed``: a backward through a part of a graph an earlier backward freed, as its message says it;
located, when no backward raised it, at the read of saved tensors after the backward that freed them."""

from __future__ import annotations

import ast
import traceback
from dataclasses import replace
from types import FrameType

from ..advice import locating_fix
from ..causes import fixes_for
from ..claims import failure_claims, loop_claims
from ..context import Context
from ..edits import Edit
from ..evidence import Failure
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, source_of
from ..i18n import T
from ..judge import judged
from ..location import Location, frame_names
from ..loop import read_site
from ..messages import Message
from ..rewrite import call_with_keyword
from ..source import names, parse, preceding, runs_backward, statement_at

__all__ = ["explain", "locate"]


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
            T("Reading grad_fn._saved_* attributes after backward."),  # the last: locate() puts it first
        ),
        fixes=(
            locating_fix("graph_freed"),  # nothing in the message shows two models: find the earlier backward
            *fixes_for("shared_graph_freed")[:3],
            fixes_for("carried_state")[0],
            fixes_for("same_loss_twice")[0],
        ),
    )


# NOTE [Saved tensors read after the backward]
# Code may read a graph's saved tensors after its backward: a helper that walks loss.grad_fn and sums the bytes
# of each node's _saved_* tensors, torchviz's make_dot with show_saved, a debugging print of a node's saved
# input. The backward freed them, and the read raises the freed-graph error with no backward running (the
# traceback holds no backward or autograd.grad frame). The backward that freed them is the one the code ran
# last before the read, in the same block of the read's function or of a caller's: the statement before it on
# the same path that runs a backward of a name the read also uses. The fix is the one torch's message gives,
# at that backward: retain_graph=True. It changes no gradient and no step, only how long the saved tensors live;
# it claims what the loop's losses train as the code stands.
_BACKWARD_FRAMES = frozenset({"backward", "grad", "_engine_run_backward", "run_backward", "_make_grads"})


def locate(f: Failure) -> Explanation:
    """The message's explanation; when the error came from reading saved tensors after a backward, located at that
    read and at the backward, with retain_graph=True there first (NOTE [Saved tensors read after the backward])."""
    e = explain(f.message)
    found = _read_after_backward(f)
    if found is None or f.location is None:
        return e
    at, fix = found
    spans = (
        Span(f.location, T("read here: saved tensors of a graph whose backward already ran")),
        Span(at, T("freed: this backward released the graph's saved tensors")),
    )
    causes = (e.causes[-1], *e.causes[:-1])  # reading grad_fn._saved_* after backward: the one the code shows
    return replace(e, spans=spans, causes=causes, fixes=(fix, *e.fixes))


def _read_after_backward(f: Failure) -> tuple[Location, Fix] | None:
    if f.error is None or f.location is None or f.site is None:
        return None
    if any(frame.name in _BACKWARD_FRAMES for frame in traceback.extract_tb(f.error.__traceback__)):
        return None  # a backward raised it: the graph's own diagnosis, or another cause
    frames = [(f.site.filename, f.location.lineno, None), *((fr.f_code.co_filename, at, fr) for fr, at in f.outer)]
    for filename, line, frame in frames:
        tree = parse(source_of(filename))
        st = statement_at(tree, line) if tree is not None else None
        if tree is None or st is None or runs_backward(st):
            continue
        read = names(st, ast.Load)
        earlier = [b for b in preceding(tree, st.lineno) if runs_backward(b) and names(b, ast.Load) & read]
        if not earlier:
            continue
        back = earlier[-1]
        call = next(
            (
                c
                for c in ast.walk(back)
                if isinstance(c, ast.Call)
                and (
                    (isinstance(c.func, ast.Attribute) and c.func.attr in ("backward", "grad"))
                    or ast.unparse(c.func).endswith("autograd.backward")
                )
            ),
            None,
        )
        lines = source_of(filename).splitlines()
        if call is None or any(k.arg == "retain_graph" for k in call.keywords) or not 0 < back.lineno <= len(lines):
            return None
        new = call_with_keyword(lines[back.lineno - 1], call, "retain_graph", "True")
        if new is None:
            return None
        at = Location(filename, back.lineno)
        fix = Fix(
            summary=T(
                "keep the graph {call} frees: retain_graph=True there; the code reads its saved tensors after it "
                "({read})",
                call=ast.unparse(call),
                read=ast.unparse(st).splitlines()[0],
            ),
            trains=T(
                "the same as your code: retain_graph=True only keeps the saved tensors for the read after the "
                "backward; the gradients and the steps do not change"
            ),
            edits=(Edit(filename, back.lineno, back.lineno, new),),
            claims=failure_claims(f) or _claims_at(f, frame, tree, back.lineno),
        )
        judged_fix = judged([Proposal(fix, None, True)], Context(site=f.site))
        return (at, judged_fix[0]) if judged_fix else None
    return None


def _claims_at(
    f: Failure, frame: FrameType | None, tree: ast.Module, line: int
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What the backward at ``line`` (of the failing function when ``frame`` is None, else of ``frame``'s) and those
    after it train as the code stands: the claims of a fix that changes no training, read where that backward is."""
    before = preceding(tree, line)
    if not before:
        return ()
    site = f.site if frame is None else read_site(frame)
    namespace = f.namespace if frame is None else frame_names(frame)
    return loop_claims(site, namespace, before[-1].lineno)
