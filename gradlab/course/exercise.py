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

__all__ = ["Verdict", "verify", "pending", "check_running_total", "check_one_batch", "check_masked_tanh"]

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


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def check_masked_tanh(scores: object) -> Verdict:
    """Exercise: repair ``scores(z)``, tanh of the logits with column 0 set to 0, so that backward works.

    ``scores`` is the learner's function. It is called on a fixed ``z`` that requires
    grad; the result must be ``tanh(z)`` with column 0 zero, keep its graph, and
    backward must give tanh's gradient ``1 - tanh(z)**2`` in every column but 0, where
    the output is a constant and the gradient 0. Every answer gets a verdict, never an
    exception: one that raises, returns something else or trains a wrong gradient (a
    write through ``.data`` hides itself from autograd and keeps tanh's gradient in
    column 0) is told what is wrong with it.

    Example::

        >>> import torch
        >>> check_masked_tanh(lambda z: torch.tanh(z) * torch.tensor([0.0, 1.0, 1.0]))
        ✓ backward runs, and the gradient is tanh's in columns 1 and 2 and 0 in column 0, where the output is a constant.
        >>> def scores(z):
        ...     s = torch.tanh(z)
        ...     s[:, 0] = 0
        ...     return s
        >>> print(check_masked_tanh(scores))  # doctest: +ELLIPSIS
        ✗ not yet: backward fails with error[GL0002 modified in place]: ...
    """
    if scores is Ellipsis:
        return pending()
    if not callable(scores):
        return _not_yet(
            _t(
                "scores is {type}, not a function of z; define one: def scores(z): ..., returning the scores.",
                type=type(scores).__name__,
            )
        )
    z = torch.linspace(-2.0, 2.0, 12).reshape(4, 3).requires_grad_()
    before = z.detach().clone()
    try:
        out = scores(z)
    except Exception as error:  # the learner's code: any exception is an answer to explain, not to raise
        return _not_yet(_t("scores(z) raised {error}.", error=_first_line(error)))
    try:
        return _judge_scores(z, before, out)
    except Exception as error:  # a tensor the comparisons cannot handle (another device, a subclass): still a verdict
        return _not_yet(_t("the check could not compare what scores(z) returned: {error}.", error=_first_line(error)))


def _judge_scores(z: torch.Tensor, before: torch.Tensor, out: object) -> Verdict:
    """The verdict of :func:`check_masked_tanh` on what ``scores(z)`` returned."""
    if not torch.equal(z.detach(), before):
        return _not_yet(_("scores(z) changed z itself: build the scores from z without writing into it."))
    if not isinstance(out, torch.Tensor):
        return _not_yet(_t("scores(z) returned a {type}; return a tensor.", type=type(out).__name__))
    if out.shape != z.shape:
        return _not_yet(
            _t(
                "scores(z) has shape {shape}; it should keep z's shape {expected}.",
                shape=list(out.shape),
                expected=list(z.shape),
            )
        )
    mask = torch.tensor([0.0, 1.0, 1.0])
    expected = torch.tanh(before) * mask
    if not torch.allclose(out.detach().double(), expected.double(), atol=1e-6):
        return _not_yet(_("the values differ from tanh(z) with column 0 set to 0."))
    if not out.requires_grad:
        return _not_yet(
            _(
                "the scores have no graph (a detach, or no_grad around the forward): backward cannot reach z through them."
            )
        )
    weights = torch.linspace(0.5, 1.5, 12).reshape(4, 3)
    try:
        (grad,) = torch.autograd.grad(out, z, grad_outputs=weights, allow_unused=True)
    except Exception as error:  # as above
        from gradlab.codes import code_for
        from gradlab.explanation import explain

        found = explain(error)
        entry = code_for(found.kind)
        if found.kind == "modified_in_place" and entry is not None:
            return _not_yet(
                _t(
                    "backward fails with {header}: tanh saved its output for its backward, and that output was "
                    "written in place; set column 0 without writing into it (a mask, torch.where, or a clone).",
                    header=entry.header(),
                )
            )
        if entry is not None:
            return _not_yet(_t("backward fails with {header}: {summary}", header=entry.header(), summary=found.summary))
        return _not_yet(_t("backward fails with {error}.", error=_first_line(error)))
    right = weights * (1 - torch.tanh(before) ** 2) * mask
    if grad is None:
        return _not_yet(_("the scores do not depend on z through the graph: backward gives z no gradient."))
    if torch.allclose(grad[:, 1:], right[:, 1:], atol=1e-6) and not torch.allclose(grad[:, 0], right[:, 0], atol=1e-6):
        return _not_yet(
            _(
                "column 0 still gets a gradient though its output is a constant 0: the write was hidden from "
                "autograd (.data, or a copy written back), so backward used tanh's gradient there."
            )
        )
    if not torch.allclose(grad, right, atol=1e-6):
        return _not_yet(_("backward runs, but z's gradient is not tanh's gradient 1 - tanh(z)**2 with column 0 at 0."))
    return _right(
        _(
            "backward runs, and the gradient is tanh's in columns 1 and 2 and 0 in column 0, where the output is a "
            "constant."
        )
    )
