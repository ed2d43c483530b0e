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
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from gradlab.i18n import _, _t

from .networks import Pair, make_pair
from .training import train

__all__ = [
    "Verdict",
    "verify",
    "pending",
    "check_running_total",
    "check_one_batch",
    "check_guess",
    "check_detach_moved",
    "check_repair",
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
    elif isinstance(total_loss, numbers.Real) and not isinstance(total_loss, bool):
        value = float(total_loss)  # a Python or a NumPy number (loss_1.detach().numpy() gives one)
    else:
        return _not_yet(
            _t(
                "total_loss is a {kind}: it should be one number, the sum of the losses (total_loss += loss_1.item()).",
                kind=type(total_loss).__name__,
            )
        )
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


# -- notebooks 05-08: guesses, moving the detach (05), repairing the loop (06) ------------------------


def check_guess(guess: object, expected: object, *, right: str, wrong: str, tol: float | None = None) -> Verdict:
    """Compare a guess recorded before a reveal with what the notebook then showed.

    ``guess`` is what the learner wrote in a ``guess = ...`` cell above the
    reveal; it is compared with ``expected`` as :func:`verify` compares an answer.
    ``right`` is said when they match, ``wrong`` (what the reveal showed) when they
    do not. A guess left as ``...`` gets a neutral line: guessing is optional.

    Example::

        >>> check_guess("equal", "equal", right="bitwise equal.", wrong="they are bitwise equal.")
        ✓ your guess was right: bitwise equal.
        >>> check_guess("close", "equal", right="bitwise equal.", wrong="they are bitwise equal.")
        ✗ you guessed 'close': they are bitwise equal.
        >>> check_guess(..., "equal", right="bitwise equal.", wrong="they are bitwise equal.")
        … you did not guess this time; the output above is the answer.
    """
    for label, text in (("right", right), ("wrong", wrong)):
        if not isinstance(text, str) or not text.strip():
            raise TypeError(f"check_guess() needs {label}= as a non-empty sentence, got {text!r}")
    if guess is Ellipsis:
        return Verdict(False, _("… you did not guess this time; the output above is the answer."), pending=True)
    if verify(guess, expected, success=right, hint=wrong, tol=tol).passed:
        return Verdict(True, "✓ " + _t("your guess was right: {right}", right=right))
    return Verdict(False, "✗ " + _t("you guessed {guess}: {wrong}", guess=_shown(guess), wrong=wrong))


def _shown(value: object) -> str:
    text = repr(sorted(value) if isinstance(value, (set, frozenset)) else value)
    return text if len(text) <= 80 else text[:77] + "..."


def _unreached(output: torch.Tensor, params: Mapping[str, torch.nn.Parameter]) -> tuple[list[str], list[str]]:
    """The parameters ``output`` reaches and those it does not (one backward with ``torch.autograd.grad``)."""
    grads = torch.autograd.grad(output.sum(), list(params.values()), retain_graph=True, allow_unused=True)
    reached = [name for name, g in zip(params, grads) if g is not None]
    return reached, [name for name, g in zip(params, grads) if g is None]


def check_detach_moved(pair: object, pred_1: object, pred_2: object) -> Verdict:
    """Exercise (notebook 05): move the detach out of network 2, to where network 1's output enters it.

    ``pair`` holds networks without the detach inside, ``pred_1`` is
    ``pair.n_1(x)``, and ``pred_2`` the learner's network 2 output. Right: ``pred_2``
    is network 2 on ``pred_1``'s values, and its graph reaches every parameter of
    network 2 and none of network 1 (checked by one ``torch.autograd.grad``; no
    ``.grad`` is written). Each wrong form gets what it trains.

    Example::

        >>> from gradlab.course import make_pair
        >>> pair = make_pair(seed=0, softmax=False)
        >>> pred_1 = pair.n_1(torch.randn(10, 1))
        >>> check_detach_moved(pair, pred_1, pair.n_2(pred_1.detach()))
        ✓ loss_2 trains every layer of network 2 and nothing of network 1: fix (a), n_2(pred_1.detach()).
        >>> check_detach_moved(pair, pred_1, pair.n_2(pred_1))
        ✗ not yet: pred_2's graph still runs back into network 1 (n_1.linear_1.weight, n_1.linear_1.bias, n_1.linear_2.weight, n_1.linear_2.bias): detach network 1's output where it enters network 2.
    """
    if pred_2 is Ellipsis:
        return pending()
    if not isinstance(pair, Pair) or not isinstance(pred_1, torch.Tensor):
        raise TypeError("check_detach_moved(pair, pred_1, pred_2): pass the exercise's pair, pred_1 and your pred_2")
    if not isinstance(pred_2, torch.Tensor):
        return _not_yet(
            _t(
                "pred_2 is a {kind}; it should be network 2's output, a tensor: pred_2 = n_2(...).",
                kind=type(pred_2).__name__,
            )
        )
    with torch.no_grad():
        wanted = pair.n_2(pred_1)
    if pred_2.shape != wanted.shape or not torch.allclose(pred_2.detach(), wanted):
        return _not_yet(
            _(
                "pred_2 is not network 2 applied to network 1's output: its input must be pred_1 (with the detach), "
                "not x, and the network must be pair.n_2."
            )
        )
    if pred_2.grad_fn is None:
        return _not_yet(
            _(
                "pred_2 has no graph (it is a leaf, or detached after network 2): loss_2 could train nothing. "
                "Detach network 1's output, the input of network 2, not network 2's output."
            )
        )
    names_1 = {f"n_1.{name}": p for name, p in pair.n_1.named_parameters()}
    names_2 = {f"n_2.{name}": p for name, p in pair.n_2.named_parameters()}
    into_1, _not_1 = _unreached(pred_2, names_1)
    if into_1:
        return _not_yet(
            _t(
                "pred_2's graph still runs back into network 1 ({names}): detach network 1's output where it "
                "enters network 2.",
                names=", ".join(into_1),
            )
        )
    reached_2, frozen = _unreached(pred_2, names_2)
    if not reached_2:
        return _not_yet(_("pred_2 does not come from the pair's network 2: compute it with pair.n_2."))
    if frozen:
        return _not_yet(
            _t(
                "{names} get no gradient from pred_2: a detach inside network 2 still cuts them off. "
                "The detach belongs on network 2's input.",
                names=", ".join(frozen),
            )
        )
    return _right(_("loss_2 trains every layer of network 2 and nothing of network 1: fix (a), n_2(pred_1.detach())."))


def _state_steps(optimizer: torch.optim.Optimizer) -> int:
    steps = [state.get("step") for state in optimizer.state.values()]
    counts = [int(s.item()) if isinstance(s, torch.Tensor) else int(s) for s in steps if s is not None]
    return max(counts, default=0)


def check_repair(pair: object, steps: int = 20) -> Verdict:
    """Exercise (notebook 06): repair the loop notebook 02 left failing, keeping what it trains.

    ``pair`` is the :class:`Pair` the learner's loop trained, from
    ``make_pair(seed=0, softmax=False, lr=3e-2)`` on ``batches(steps, seed=0)``.
    Right: both networks end bitwise where fix (a) ends them (the original loop's
    training: network 1 from ``loss_1`` only, network 2 from ``loss_2`` on network
    1's output). Each wrong result is told what it trained instead.

    Example::

        >>> from gradlab.course import train
        >>> check_repair(train("detach_input", steps=20, softmax=False, lr=3e-2).pair)
        ✓ both networks end bitwise where the original loop would leave them: network 1 trained by loss_1 only, network 2 by loss_2.
        >>> check_repair(train("joint", steps=20, softmax=False, lr=3e-2).pair)
        ✗ not yet: network 1 ended elsewhere: loss_2 trained it too (one backward of the sum is fix (b), a different training). Keep network 1 on loss_1 alone.
    """
    if pair is Ellipsis:
        return pending()
    if not isinstance(pair, Pair):
        return _not_yet(
            _t(
                "pair is a {kind}; it should be the course.make_pair(seed=0, softmax=False, lr=3e-2) your loop "
                "trained.",
                kind=type(pair).__name__,
            )
        )
    start = make_pair(seed=0, softmax=False, lr=3e-2)
    lrs = {group["lr"] for opt in (pair.opt_1, pair.opt_2) for group in opt.param_groups}
    if (
        pair.n_1.softmax
        or pair.n_2.softmax
        or lrs != {3e-2}
        or not all(a.shape == b.shape for a, b in zip(pair.n_1.parameters(), start.n_1.parameters()))
    ):
        return _not_yet(_("start from pair = course.make_pair(seed=0, softmax=False, lr=3e-2), as the loop does."))
    if pair.n_2.detach_inside:
        return _not_yet(
            _(
                "that is the fix that circulates (detach_inside=True, notebook 05): n_2.linear_1 never learns. "
                "Keep network 2 whole."
            )
        )
    done = (_state_steps(pair.opt_1), _state_steps(pair.opt_2))
    if done != (steps, steps):
        return _not_yet(
            _t(
                "opt_1 stepped {n_1} times and opt_2 {n_2} times, not {steps} each: the loop stopped early (an error?) "
                "or ran another number of batches. Run it on course.batches({steps}, seed=0).",
                n_1=done[0],
                n_2=done[1],
                steps=steps,
            )
        )
    meant = train("detach_input", steps=steps, softmax=False, lr=3e-2).pair
    assert meant is not None
    same = {
        net: all(torch.equal(p, q) for p, q in zip(mine.parameters(), ref.parameters()))
        for net, mine, ref in (("n_1", pair.n_1, meant.n_1), ("n_2", pair.n_2, meant.n_2))
    }
    if not same["n_1"]:
        return _not_yet(
            _(
                "network 1 ended elsewhere: loss_2 trained it too (one backward of the sum is fix (b), a different "
                "training). Keep network 1 on loss_1 alone."
            )
        )
    if not same["n_2"]:
        return _not_yet(
            _(
                "network 1 is right, network 2 ended elsewhere: it learned from another input (network 1's output "
                "after its step is fix (c), a different training) or another loss. Feed it pred_1 as the loop does."
            )
        )
    return _right(
        _(
            "both networks end bitwise where the original loop would leave them: network 1 trained by loss_1 only, "
            "network 2 by loss_2."
        )
    )
