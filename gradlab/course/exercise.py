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

import ast
import html
import inspect
import math
import numbers
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from gradlab.i18n import _, _t

from .networks import Pair, make_pair
from .words import say, say_t

__all__ = [
    "Verdict",
    "verify",
    "pending",
    "check_running_total",
    "check_one_batch",
    "check_error_kind",
    "check_guess",
    "check_in_place_rewrite",
    "check_masked_tanh",
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
    if isinstance(last_loss, torch.Tensor) or not isinstance(last_loss, numbers.Real) or isinstance(last_loss, bool):
        return _not_yet(_("store the last loss as a number: last_loss = loss_2.item()."))
    last_loss = float(last_loss)  # a Python or a NumPy number
    with torch.random.fork_rng(devices=[]):  # make_pair seeds torch: leave the learner's generator as it was
        untouched = make_pair(seed=0, softmax=False).n_2
    if all(torch.equal(p, q) for p, q in zip(n_2.state_dict().values(), untouched.state_dict().values())):
        return _not_yet(
            _(
                "n_2's parameters are exactly where make_pair put them: no step changed them. Does your loss reach "
                "n_2 (not a number rebuilt with .item(), not another network), and does opt_2.step() run after "
                "its backward?"
            )
        )
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


# ---------------------------------------------------------------- notebooks 00-04
#
# check_guess compares a one-line guess made before a reveal; the checks of code the
# learner writes are in their own modules: a measurement of an optimizer's writes (02)
# and saved-tensor hooks that keep the version check (03) in versions.py, notebook
# 01's repaired iteration in repair.py, notebook 04's "build it" steps in engine.py.
# Each runs the learner's code on its own fresh tensors and judges it by gradients or
# parameters; any wrong answer, including one that raises, gets a ✗ and a reason.

__all__ += ["check_guess"]


def _normalised(value: object) -> object:
    if isinstance(value, str):
        return " ".join(value.lower().replace("_", " ").replace("-", " ").split())
    return value


def check_guess(guess: object, expected: object, *, success: str, hint: str, tol: float | None = None) -> Verdict:
    """Compare a guess written down before a reveal with what the cell then showed.

    ``expected`` is the revealed value. A guess left as ``...`` gets a gentle line,
    never an error: guessing is optional. Words compare without case, spaces or
    underscores (``"modified in place"`` matches ``"modified_in_place"``); an error
    kind may be spelled in any way :func:`check_error_kind` accepts (``"GL0002"``),
    also inside a tuple (``(1, "graph freed")``); numbers compare within ``tol``; a list or tuple
    of names compares with a set in any order.

    Example::

        >>> check_guess("Graph freed", "graph_freed", success="failure 1.", hint="look at the message")
        ✓ your guess was right: failure 1.
        >>> check_guess(2, 1, success="one batch ran.", hint="count the batches printed")
        ✗ not what happened: count the batches printed
        >>> check_guess(..., "graph_freed", success="failure 1.", hint="look at the message")
        … you did not guess this time: next time, write your guess down before you run the cell.
    """
    if guess is Ellipsis:
        return Verdict(
            False, _("… you did not guess this time: next time, write your guess down before you run the cell."), True
        )

    def same(g: object, e: object) -> bool:
        if isinstance(e, str) and _kind_named(e) is not None:
            return _kind_named(g) == _kind_named(e)
        if isinstance(e, (set, frozenset)) and isinstance(g, (set, frozenset, list, tuple)):
            return len(set(g)) == len(g) and {_normalised(v) for v in g} == {_normalised(v) for v in e}
        return _equal(_normalised(g), _normalised(e), tol)

    if isinstance(expected, tuple) and isinstance(guess, Sequence) and not isinstance(guess, str):
        right = len(guess) == len(expected) and all(same(g, e) for g, e in zip(guess, expected))
    else:
        right = same(guess, expected)
    if right:
        return Verdict(True, "✓ " + _t("your guess was right: {success}", success=success))
    return Verdict(False, "✗ " + _t("not what happened: {hint}", hint=hint))


def _empty_function(*args: object) -> None: ...


def _is_template(fn: object) -> bool:
    """Whether ``fn`` is a function whose body is only ``...`` (the exercise not done yet).

    ``...``, ``pass`` and ``return None`` compile alike, so the source decides where it can
    be read (a notebook cell's can): only a ``def`` whose body is ``...`` (after a
    docstring) is the empty template; ``return None`` is an answer, judged as one.
    """
    code = getattr(fn, "__code__", None)
    if code is None or code.co_code != _empty_function.__code__.co_code or code.co_names != ():
        return False
    if getattr(fn, "__name__", "") == "<lambda>":
        return False  # a lambda cannot hold the template's ``...`` body: an answer
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError):
        return True  # no source to read: the compiled body says "nothing yet"
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False  # a lambda: an answer
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a docstring
    return (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value is Ellipsis
    )


def _not_a_function(name: str, example: str) -> Verdict:
    return _not_yet(_t("{name} should be a function: def {name}({example}): ...", name=name, example=example))


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
    # PyTorch's own word: "modified by an inplace operation"
    spelled = {"inplace": "modified_in_place", "in_place": "modified_in_place"}.get(spelled, spelled)
    spelled = spelled.replace("modified_by_an_inplace_operation", "modified_in_place").replace("inplace", "in_place")
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
    write through ``.data`` hides itself from autograd, and tanh's backward then reads
    the overwritten 0: column 0 gets 1) is told what is wrong with it.

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
        from gradlab import explain
        from gradlab.codes import code_for

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
                "autograd (.data, or a copy written back), so backward computed one there from what it read "
                "(after a .data write, 1 - 0**2 = 1 from the overwritten output)."
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


# -- notebook 05: where the detach goes when network 1's output reaches the loss twice -----------------

__all__ += ["check_residual_detach"]


def _unreached(output: torch.Tensor, params: Mapping[str, torch.nn.Parameter]) -> tuple[list[str], list[str]]:
    """The parameters ``output`` reaches and those it does not (one backward with ``torch.autograd.grad``)."""
    grads = torch.autograd.grad(output.sum(), list(params.values()), retain_graph=True, allow_unused=True)
    reached = [name for name, g in zip(params, grads) if g is not None]
    return reached, [name for name, g in zip(params, grads) if g is None]


def _entry(pair: Pair, pred_1: torch.Tensor, pred_2: torch.Tensor) -> str:
    """Which way ``pred_2``'s graph still enters network 1: the skip, network 2's input, or both."""
    (through,) = torch.autograd.grad(pred_2.sum(), pred_1, retain_graph=True, allow_unused=True)
    if through is None:
        return say("through a path that does not pass pred_1")
    p = pred_1.detach().requires_grad_()
    (slope,) = torch.autograd.grad(pair.n_2(p).sum(), p)
    if torch.allclose(through, torch.ones_like(through)):
        return say("through the skip, the + pred_1 outside network 2")
    if torch.allclose(through, slope):
        return say("through network 2's input")
    return say("through both: network 2's input and the skip")


def check_residual_detach(pair: object, pred_1: object, pred_2: object) -> Verdict:
    """Exercise (notebook 05): network 2 corrects network 1, ``pred_2 = pred_1 + n_2(pred_1)``; cut network 1 off.

    ``pair`` holds networks without the detach inside, ``pred_1`` is ``pair.n_1(x)``,
    ``pred_2`` the learner's. Right: the values of ``pred_1 + n_2(pred_1)``, and a graph
    that reaches every parameter of network 2 and none of network 1 (one
    ``torch.autograd.grad``; no ``.grad`` written). network 1's output enters the loss
    twice, so one detach is not enough: the verdict names the way still open.

    Example::

        >>> from gradlab.course import make_pair
        >>> pair = make_pair(seed=0, softmax=False)
        >>> pred_1 = pair.n_1(torch.randn(10, 1))
        >>> p = pred_1.detach()
        >>> check_residual_detach(pair, pred_1, p + pair.n_2(p)).passed
        True
        >>> print(check_residual_detach(pair, pred_1, pred_1 + pair.n_2(pred_1.detach())))  # doctest: +ELLIPSIS
        ✗ not yet: pred_2's graph still reaches network 1 (n_1.linear_1.weight, ...) through the skip, ...
    """
    if pred_2 is Ellipsis:
        return pending()
    if not isinstance(pair, Pair) or not isinstance(pred_1, torch.Tensor):
        raise TypeError("check_residual_detach(pair, pred_1, pred_2): pass the exercise's pair, pred_1 and your pred_2")
    if not isinstance(pred_2, torch.Tensor):
        return _not_yet(
            say_t("pred_2 is a {kind}; it should be a tensor, pred_1 + n_2(...)'s value.", kind=type(pred_2).__name__)
        )
    with torch.no_grad():
        wanted = pred_1 + pair.n_2(pred_1)
    if pred_2.shape != wanted.shape or not torch.allclose(pred_2.detach(), wanted):
        return _not_yet(
            say(
                "pred_2 does not have the values of pred_1 + pair.n_2(pred_1): keep what it computes, change only "
                "where the gradient can flow."
            )
        )
    if pred_2.grad_fn is None:
        return _not_yet(
            say(
                "pred_2 has no graph (detached as a whole, or computed under no_grad): loss_2 could train nothing, "
                "network 2 included."
            )
        )
    names_1 = {f"n_1.{name}": p for name, p in pair.n_1.named_parameters()}
    names_2 = {f"n_2.{name}": p for name, p in pair.n_2.named_parameters()}
    into_1, _not_1 = _unreached(pred_2, names_1)
    if into_1:
        return _not_yet(
            say_t(
                "pred_2's graph still reaches network 1 ({names}) {way}: every path from loss_2 into network 1 "
                "needs its own cut.",
                names=", ".join(into_1),
                way=_entry(pair, pred_1, pred_2),
            )
        )
    reached_2, frozen = _unreached(pred_2, names_2)
    if not reached_2:
        return _not_yet(say("pred_2 does not come from the pair's network 2: compute the correction with pair.n_2."))
    if frozen:
        return _not_yet(
            say_t(
                "{names} get no gradient from pred_2: a detach inside network 2 cuts them off. The cut belongs where "
                "network 1's output enters.",
                names=", ".join(frozen),
            )
        )
    return _right(
        say(
            "loss_2 reaches every layer of network 2 and nothing of network 1: both ways in, the skip and network "
            "2's input, are cut (one detached pred_1, used twice)."
        )
    )
