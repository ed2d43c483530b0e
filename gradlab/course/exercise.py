"""Exercise checks for the notebooks.

:func:`verify` turns a learner's answer into a :class:`Verdict` that displays
one deterministic line, ``✓ ...`` or ``✗ not yet: ...``; it never raises on a
wrong answer, so *Run All* keeps going. An answer not given yet (left as
``...``) gets a neutral line that gives nothing away, so a notebook stored with
empty answer cells shows no answer. :func:`check_running_total` and
:func:`check_one_batch` judge two exercises whose right answers take more than
one form; each likely wrong answer gets a hint that is true for it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from gradlab.i18n import _, _t

from .networks import Pair, batches, make_pair

__all__ = [
    "Verdict",
    "verify",
    "pending",
    "check_running_total",
    "check_one_batch",
    "check_error_kind",
    "check_guess",
    "check_in_place_rewrite",
    "check_repaired_loop",
]

_UNSET = object()


@dataclass(frozen=True)
class Verdict:
    """The result of :func:`verify`: ``passed`` and the line shown to the learner.

    Displays as that line (``text/plain``) or as a coloured paragraph
    (``text/html``); ``bool(verdict)`` is ``passed``.
    """

    passed: bool
    text: str
    pending: bool = False

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        if self.pending:
            return f'<p style="color:#555"><i>{html.escape(self.text)}</i></p>'
        color = "#2e7d32" if self.passed else "#c62828"
        return f'<p style="color:{color}"><b>{html.escape(self.text)}</b></p>'


def _as_condition(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.numel() == 1:
        return bool(value.item())
    if type(value).__name__ == "bool_":  # numpy.bool_, without importing numpy
        return bool(value)
    raise TypeError(
        f"verify() without expected= takes a True/False condition, not {type(value).__name__}; "
        "pass the value and what it should be instead, e.g. verify(answer, expected=4, success=..., hint=...)"
    )


def _close(a: float, b: float, tol: float | None) -> bool:
    if tol is None:
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return math.isclose(a, b, rel_tol=0.0, abs_tol=tol)


def _equal(value: object, expected: object, tol: float | None) -> bool:
    """Whether a learner's ``value`` matches ``expected`` (tensors by shape and values)."""
    if isinstance(value, torch.Tensor) or isinstance(expected, torch.Tensor):
        if not (isinstance(value, torch.Tensor) and isinstance(expected, torch.Tensor)):
            tensor: torch.Tensor
            other: object
            if isinstance(value, torch.Tensor):
                tensor, other = value, expected
            else:
                assert isinstance(expected, torch.Tensor)
                tensor, other = expected, value
            if tensor.numel() != 1 or isinstance(other, (str, bytes)) or not isinstance(other, (int, float, bool)):
                return False
            return _equal(tensor.item(), other, tol)
        if value.shape != expected.shape:
            return False
        if value.is_floating_point() or expected.is_floating_point():
            atol = 1e-12 if tol is None else tol
            rtol = 1e-6 if tol is None else 0.0
            return bool(torch.allclose(value.double(), expected.double(), rtol=rtol, atol=atol))
        return bool(torch.equal(value, expected))
    if isinstance(value, bool) or isinstance(expected, bool):
        return type(value) is type(expected) and value == expected
    if isinstance(value, (int, float)) and isinstance(expected, (int, float)):
        if isinstance(value, float) or isinstance(expected, float):
            return _close(float(value), float(expected), tol)
        return value == expected
    if isinstance(value, Mapping) and isinstance(expected, Mapping):
        return value.keys() == expected.keys() and all(_equal(value[k], expected[k], tol) for k in expected)
    if (
        isinstance(value, Sequence)
        and isinstance(expected, Sequence)
        and not isinstance(value, (str, bytes))
        and not isinstance(expected, (str, bytes))
    ):
        return len(value) == len(expected) and all(_equal(a, b, tol) for a, b in zip(value, expected))
    try:
        return bool(value == expected)
    except (TypeError, ValueError, RuntimeError):
        return False


def verify(value: object, expected: object = _UNSET, *, success: str, hint: str, tol: float | None = None) -> Verdict:
    """Check an exercise answer and return a :class:`Verdict` to display.

    Without ``expected``, ``value`` is a condition (``True``/``False``, or a
    one-element bool tensor). With it, ``value`` must equal ``expected``:
    tensors by shape and values, floats within ``tol`` (default: relative
    1e-6), lists and tuples element by element. An answer left as ``...``
    gets a neutral reminder to fill it in (it names neither the answer nor the hint).

    Example::

        >>> verify(4, expected=4, success="4 nodes lost their buffers.", hint="count network 1's nodes")
        ✓ 4 nodes lost their buffers.
        >>> verify(3, expected=4, success="4 nodes lost their buffers.", hint="count network 1's nodes")
        ✗ not yet: count network 1's nodes
        >>> verify(..., expected=4, success="4 nodes lost their buffers.", hint="count network 1's nodes")
        … your answer goes in the cell above: replace the ... there, then run this cell again.
    """
    for label, text in (("success", success), ("hint", hint)):
        if not isinstance(text, str) or not text.strip():
            raise TypeError(f"verify() needs {label}= as a non-empty sentence, got {text!r}")
    if value is Ellipsis:
        return pending()
    if expected is _UNSET:
        passed = _as_condition(value)
    else:
        if tol is not None and not (isinstance(tol, (int, float)) and tol >= 0):
            raise ValueError(f"tol must be a non-negative number, got {tol!r}")
        passed = _equal(value, expected, tol)
    return _right(success) if passed else _not_yet(hint)


def _right(text: str) -> Verdict:
    return Verdict(True, f"✓ {text}")


def _not_yet(hint: str) -> Verdict:
    return Verdict(False, "✗ " + _t("not yet: {hint}", hint=hint))


def pending() -> Verdict:
    """The neutral line for an answer not given yet."""
    return Verdict(
        False, _("… your answer goes in the cell above: replace the ... there, then run this cell again."), pending=True
    )


def check_running_total(total_loss: object, losses: Sequence[float], graphs: Sequence[int]) -> Verdict:
    """Exercise: log a running total of the losses without keeping every step's graph.

    ``total_loss`` is the learner's total, ``losses`` each step's loss as a number,
    ``graphs`` what :func:`gradlab.measure_memory` counted after each step. Right:
    a number (``+= loss.item()``) or a tensor with no graph (``+= loss.detach()``)
    that equals the sum, with at most one graph alive after every step.

    Example::

        >>> check_running_total(3.0, [1.0, 2.0], [1, 1])
        ✓ at most one graph alive after every step, and total_loss is the sum of the losses, with no graph.
        >>> check_running_total(2.0, [1.0, 2.0], [1, 1])
        ✗ not yet: total_loss is not the sum of the losses: add each step's loss to it (+=), do not replace it.
    """
    if total_loss is Ellipsis:
        return pending()
    if not isinstance(graphs, Sequence) or not isinstance(losses, Sequence):
        raise TypeError("check_running_total(total_loss, losses, trace.graphs): pass the trace's graphs list")
    if isinstance(total_loss, torch.Tensor):
        if total_loss.grad_fn is not None:
            return _not_yet(
                _t(
                    "total_loss is a tensor with a graph (its grad_fn is {grad_fn}): adding loss_1 to it keeps every "
                    "step's graph alive; add a number (loss_1.item()) or a tensor without history (loss_1.detach()).",
                    grad_fn=total_loss.grad_fn.name(),
                )
            )
        if total_loss.numel() != 1:
            return _not_yet(_("total_loss should be one number, the sum of the losses."))
        value = float(total_loss.item())
    elif isinstance(total_loss, (int, float)) and not isinstance(total_loss, bool):
        value = float(total_loss)
    else:
        raise TypeError(f"total_loss is a {type(total_loss).__name__}; it should be a number or a tensor")
    if not math.isclose(value, sum(losses), rel_tol=1e-6, abs_tol=1e-9):
        return _not_yet(
            _("total_loss is not the sum of the losses: add each step's loss to it (+=), do not replace it.")
        )
    if graphs and max(graphs) > 1:
        return _not_yet(
            _t(
                "{n} graphs were alive after a step: something still holds the old graphs (a list of loss tensors, "
                "or a total with a graph).",
                n=max(graphs),
            )
        )
    return _right(
        _("at most one graph alive after every step, and total_loss is the sum of the losses, with no graph.")
    )


def check_one_batch(n_2: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, last_loss: object) -> Verdict:
    """Exercise: overfit one batch with network 2 on the input a perfect network 1 gives it (``2 * x``).

    Passes when ``n_2`` maps ``2 * x`` to ``y`` on the batch (loss below 0.05) and
    ``last_loss`` is that loss as a number. Training on ``x`` instead also drives a
    loss down, but then ``n_2(2 * x)`` is about ``4 * x``: that answer is told so.
    """
    if last_loss is Ellipsis:
        return pending()
    if not isinstance(n_2, torch.nn.Module):
        raise TypeError("check_one_batch(n_2, x, y, last_loss): pass network 2, the batch and the last loss")
    if not isinstance(last_loss, float):
        return _not_yet(_("store the last loss as a number: last_loss = loss_2.item()."))
    with torch.no_grad():
        on_target = float(torch.nn.functional.mse_loss(n_2(2 * x), y))
        on_x = float(torch.nn.functional.mse_loss(n_2(x), y))
    if on_target >= 0.05 and on_x < 0.05:
        return _not_yet(
            _(
                "n_2 maps x to y: it was trained on input x. Its input is network 1's output, which a perfect "
                "network 1 makes 2 * x: train on n_2(2 * x)."
            )
        )
    if on_target >= 0.05:
        return _not_yet(
            _t(
                "on input 2 * x, n_2's loss is {loss}, not below 0.05: train longer (200 steps of Adam, lr=0.01) "
                "on n_2(2 * x) against y.",
                loss=f"{on_target:.3f}",
            )
        )
    if not math.isclose(last_loss, on_target, rel_tol=0.5, abs_tol=0.01):
        return _not_yet(_("last_loss is not the loss of n_2(2 * x) against y after training."))
    return _right(_("network 2 drives the loss on one batch towards zero: it can learn."))


# -- notebooks 09 (in the wild) and 11 (the playground) --------------------------------------------------------------


def _kind_named(answer: object) -> str | None:
    """The error kind ``answer`` names, in any spelling gradlab prints; None if it names none.

    ``"modified_in_place"`` (the kind), ``"modified in place"`` (the note's header), ``"GL0002"`` (the code),
    ``"GL0002 modified in place"`` and the header's title in the language in effect all name the same kind.
    """
    from gradlab.codes import CODES, by_code, is_code

    if not isinstance(answer, str) or not answer.strip():
        return None
    text = answer.strip().strip("[]").strip()
    head = text.split()[0]
    if is_code(head):
        try:
            code = by_code(head)
        except ValueError:
            return None
        rest = text[len(head) :].strip()
        return code.kind if not rest or _kind_named(rest) == code.kind else None
    spelled = "_".join(text.lower().replace("-", " ").split())
    for code in CODES:
        if spelled == code.kind or text == code.title:
            return code.kind
    return spelled if spelled == "runs" else None


def check_error_kind(answer: object, expected: str, *, success: str, hint: str) -> Verdict:
    """Check an answer that names an error kind (or ``"runs"``), in any spelling gradlab prints.

    ``expected`` is a kind as :attr:`gradlab.Diagnosis.kinds` gives it (``"graph_freed"``) or ``"runs"``. The
    answer may be the kind, the note's header words (``"graph freed"``), the code (``"GL0001"``) or the header's
    title in the language in effect. Any other answer, of any type, gets ✗ with the hint.

    Example::

        >>> check_error_kind("modified in place", "modified_in_place", success="exp saved h.", hint="look again")
        ✓ exp saved h.
        >>> check_error_kind(2, "modified_in_place", success="exp saved h.", hint="look again")
        ✗ not yet: answer with a string: 'graph_freed', 'modified_in_place' or 'runs'.
    """
    if answer is Ellipsis:
        return pending()
    if not isinstance(answer, str):
        return _not_yet(_("answer with a string: 'graph_freed', 'modified_in_place' or 'runs'."))
    return _right(success) if _kind_named(answer) == expected else _not_yet(hint)


def check_guess(guess: object, expected: object, *, success: str, hint: str) -> Verdict:
    """Compare a guess written before a reveal with what the notebook then showed.

    A guess left as ``...`` gets a gentle line, never an error; an error kind may be spelled as
    :func:`check_error_kind` accepts.

    Example::

        >>> check_guess(..., expected=1, success="one batch ran.", hint="count the batches printed")
        … you did not guess this time: the answer is above. Next time, write your guess before you run on.
        >>> check_guess(2, expected=1, success="one batch ran.", hint="count the batches printed")
        ✗ not what happened: count the batches printed
    """
    if guess is Ellipsis:
        return Verdict(
            False,
            _("… you did not guess this time: the answer is above. Next time, write your guess before you run on."),
            pending=True,
        )
    if isinstance(expected, str) and _kind_named(expected) is not None:
        right = _kind_named(guess) == _kind_named(expected)
    elif isinstance(expected, tuple) and isinstance(guess, Sequence) and not isinstance(guess, str):
        right = len(guess) == len(expected) and all(
            (_kind_named(g) == _kind_named(e)) if isinstance(e, str) and _kind_named(e) else _equal(g, e, None)
            for g, e in zip(guess, expected)
        )
    else:
        right = _equal(guess, expected, None)
    if right:
        return Verdict(True, "✓ " + _t("your guess was right: {success}", success=success))
    return Verdict(False, "✗ " + _t("not what happened: {hint}", hint=hint))


def check_in_place_rewrite(fixed_loss: object, loss: torch.Tensor, w: torch.Tensor) -> Verdict:
    """Exercise (notebook 09): ``h = torch.exp(w); h += 1; loss = h.sum()`` rewritten so that backward works.

    Right: a one-number tensor with a graph back to ``w`` that passes :func:`gradlab.check`, equals ``loss``, and
    whose gradient with respect to ``w`` is ``exp(w)``, the gradient of ``exp(w) + 1`` summed. The gradient is
    compared, so a write autograd does not see (``h.data += 1``, which passes every other test) gets ✗; a leaf, a
    tensor without a graph or anything that is not a tensor gets ✗ with its reason, never an exception. The
    check runs one backward with ``torch.autograd.grad`` and keeps the graph: no ``.grad`` is written.
    """
    import gradlab

    if fixed_loss is Ellipsis:
        return pending()
    if not isinstance(fixed_loss, torch.Tensor):
        return _not_yet(
            _t(
                "fixed_loss is a {type}; it should be the tensor your rewrite computes, ending in h.sum().",
                type=type(fixed_loss).__name__,
            )
        )
    if fixed_loss.numel() != 1:
        return _not_yet(_("fixed_loss should be one number, like loss: end the rewrite with h.sum()."))
    if fixed_loss.grad_fn is None:
        return _not_yet(
            _(
                "fixed_loss has no graph back to w (it is a leaf, or was made from a number or under no_grad): "
                "backward from it would train nothing. Compute it from w, as loss is."
            )
        )
    diagnosis = gradlab.check(fixed_loss, {"w": w})
    if not diagnosis.ok:
        return _not_yet(
            _t(
                "backward from fixed_loss would still fail ({kind}): the rewrite must not write into a tensor "
                "exp saved, and its graph must not be freed by a backward you ran.",
                kind=diagnosis.kinds[0] if diagnosis.kinds else "?",
            )
        )
    if not torch.allclose(fixed_loss.detach().double(), loss.detach().double(), rtol=1e-6, atol=1e-9):
        return _not_yet(
            _t(
                "fixed_loss is {value}, loss is {loss}: keep the value, change only how it is computed.",
                value=f"{float(fixed_loss.detach()):.4f}",
                loss=f"{float(loss.detach()):.4f}",
            )
        )
    try:
        (grad,) = torch.autograd.grad(fixed_loss, w, retain_graph=True, allow_unused=True)
    except RuntimeError as e:
        return _not_yet(_t("backward from fixed_loss fails: {error}", error=str(e).split(". ")[0]))
    if grad is None:
        return _not_yet(_("fixed_loss does not lead back to w: backward from it would not train w."))
    intended = torch.exp(w.detach())
    if not torch.allclose(grad, intended, rtol=1e-5, atol=1e-7):
        return _not_yet(
            _t(
                "backward runs, but the gradient for w is {grad}, not exp(w) = {intended}: the + 1 was written "
                "where autograd does not see it (.data, or under no_grad), and exp's backward read the changed h.",
                grad=_values(grad),
                intended=_values(intended),
            )
        )
    return _right(
        _(
            "backward runs, fixed_loss equals loss, and the gradient for w is exp(w): the write no longer reaches "
            "the tensor exp saved."
        )
    )


def _values(t: torch.Tensor) -> str:
    return "[" + ", ".join(f"{v:.4f}" for v in t.detach().flatten().tolist()[:4]) + "]"


def check_repaired_loop(repaired: object, steps: int = 3) -> Verdict:
    """Exercise (playground): repair one iteration of the original loop so it trains what the loop meant.

    ``repaired(n_1, n_2, opt_1, opt_2, criterion, x, y)`` runs one iteration. It runs ``steps`` iterations on
    fresh, seeded networks (no softmax), and its parameters are compared with the original loop's intent run
    beside it: ``n_1`` trained by ``loss_1`` alone and ``n_2`` by ``loss_2`` on ``n_1``'s output before the step
    (fix (a); the original loop run with the version check off trains exactly this, notebook 06). Whatever the
    answer does (raise, train the wrong thing, not be a function), the result is ✓ or ✗ with the reason.
    """
    if repaired is Ellipsis:
        return pending()
    if not callable(repaired):
        return _not_yet(_("repaired should be a function: def repaired(n_1, n_2, opt_1, opt_2, criterion, x, y): ..."))
    learner, reference = make_pair(seed=0, softmax=False), make_pair(seed=0, softmax=False)
    start = {name: [p.detach().clone() for p in net.parameters()] for name, net in learner.names.items()}
    for x, y in batches(steps, seed=0):
        try:
            repaired(learner.n_1, learner.n_2, learner.opt_1, learner.opt_2, learner.criterion, x, y)
        except Exception as e:  # any error of the learner's code is a verdict, never a crash
            return _not_yet(_raised(e))
        _intended_iteration(reference, x, y)
    still = [
        f"{name}.{p_name}"
        for name, net in learner.names.items()
        for (p_name, p), before in zip(net.named_parameters(), start[name])
        if torch.equal(p.detach(), before)
    ]
    if still:
        return _not_yet(
            _t(
                "{names} never changed over {steps} iterations: no gradient reached them (a detach cuts off "
                "every layer before it), or their optimizer never steps.",
                names=", ".join(still),
                steps=steps,
            )
        )

    def same(name: str) -> bool:
        pairs = zip(learner.names[name].parameters(), reference.names[name].parameters())
        return all(torch.allclose(p.detach(), q.detach(), rtol=1e-5, atol=1e-7) for p, q in pairs)

    if not same("n_1"):
        return _not_yet(
            _(
                "n_1 trained differently from loss_1 alone: does loss_2's gradient reach n_1 before "
                "opt_1.step() (one backward of the sum trains n_1 with both losses), or is a zero_grad() "
                "missing?"
            )
        )
    if not same("n_2"):
        return _not_yet(
            _(
                "n_2 trained differently from loss_2 on pred_1, network 1's output before its step: is n_2 fed "
                "another input (pred_1 recomputed after opt_1.step()), or is a zero_grad() missing?"
            )
        )
    return _right(
        _t(
            "over {steps} iterations n_1 learned from loss_1 alone and n_2 from loss_2 on n_1's output, as the "
            "original loop meant.",
            steps=steps,
        )
    )


def _intended_iteration(pair: Pair, x: torch.Tensor, y: torch.Tensor) -> None:
    """One iteration of fix (a), the original loop's intent: n_2 learns on n_1's output as data."""
    pred_1 = pair.n_1(x)
    pair.opt_1.zero_grad()
    loss_1 = pair.criterion(y, pred_1)
    loss_1.backward()
    pair.opt_1.step()
    pred_2 = pair.n_2(pred_1.detach())
    pair.opt_2.zero_grad()
    loss_2 = pair.criterion(y, pred_2)
    loss_2.backward()
    pair.opt_2.step()


def _raised(error: BaseException) -> str:
    import gradlab

    first = str(error).split(". ")[0].split("\n")[0]
    kind = gradlab.explain(error).kind if isinstance(error, RuntimeError) else None
    if kind == "graph_freed":
        return _t(
            "your iteration raised {type}: {message} (failure 1): which graph did loss_1.backward() free, and "
            "does loss_2's backward still need it?",
            type=type(error).__name__,
            message=first,
        )
    if kind == "modified_in_place":
        return _t(
            "your iteration raised {type}: {message} (failure 2): opt_1.step() changed a weight that loss_2's "
            "graph saved; should loss_2 reach n_1 at all?",
            type=type(error).__name__,
            message=first,
        )
    return _t("your iteration raised {type}: {message}", type=type(error).__name__, message=first)
