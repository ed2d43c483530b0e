"""Checks for the part of the course where the learner builds autograd's mechanism (notebook 04).

Six steps, each judged by running the learner's code on fresh values and comparing with
PyTorch as the oracle:

1. :func:`check_engine`: a scalar engine, ``Value`` (micrograd's shape) with saved values
   that remember their version, freed after backward: gradients as torch's, and the
   engine's own "modified by an inplace operation" and "backward a second time";
2. :func:`check_sigmoid_function`: ``torch.autograd.Function`` with ``ctx.save_for_backward``,
   whose saved output autograd version-checks (a ``ctx.y`` attribute it does not);
3. :func:`check_inplace_function`: an in-place Function that calls ``ctx.mark_dirty``;
4. :func:`check_visible_write`: a write torch cannot see, made visible with
   ``torch.autograd.graph.increment_version``;
5. :func:`check_tanh_function`: a backward repaired with ``torch.autograd.gradcheck``;
6. :func:`check_second_derivative`: a second derivative through ``create_graph=True``.

Every answer gets a :class:`~gradlab.course.exercise.Verdict`, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .exercise import Verdict, _is_template, _not_yet, _right, pending
from .words import say, say_t

__all__ = [
    "check_engine",
    "check_sigmoid_function",
    "check_inplace_function",
    "check_visible_write",
    "check_tanh_function",
    "check_second_derivative",
]


def _error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(":, ")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


# ---------------------------------------------------------------- 1. the engine

_METHODS = ("add_", "__mul__", "exp", "backward")


class _Problem(Exception):
    """A finding about the learner's engine: its sentence is the ✗ line's reason."""


def _run(what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except _Problem:
        raise
    except Exception as e:  # the learner's engine: an error is a finding, told with what was being done
        raise _Problem(say_t("{what} raised {error}.", what=what, error=_error(e))) from e


def _grads(Value: Any, build: Callable[..., Any], *values: float) -> list[float]:
    inputs = [Value(v) for v in values]
    out = _run(say("building the expression"), lambda: build(*inputs))
    _run(say("backward()"), out.backward)
    return [float(v.grad) for v in inputs]


def _torch_grads(build: Callable[..., Any], *values: float) -> list[float]:
    inputs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    build(*inputs).backward()
    return [float(t.grad) for t in inputs]  # type: ignore[arg-type]


def _expect_raise(what: str, fn: Callable[[], Any]) -> str | None:
    """``fn``'s RuntimeError message, or None if it ran; any other error is a finding."""
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    except Exception as e:  # the learner's engine
        raise _Problem(say_t("{what} raised {error}, not a RuntimeError.", what=what, error=_error(e))) from e
    return None


def _engine_findings(Value: Any) -> None:
    x = _run("Value(2.0)", lambda: Value(2.0))
    for attribute in ("data", "grad", "version"):
        if not hasattr(x, attribute):
            raise _Problem(say_t("a Value has no .{name}: keep the attributes __init__ sets.", name=attribute))
    _run("x.add_(1.0)", lambda: x.add_(1.0))
    if not (_close(float(x.data), 3.0) and x.version == 1):
        raise _Problem(
            say_t(
                "after x = Value(2.0); x.add_(1.0), x.data is {data} and x.version {version}: an in-place write "
                "changes the data and adds one to the version.",
                data=x.data,
                version=x.version,
            )
        )
    cases = [
        ("x * y", lambda a, b: a * b, False),
        ("x * x + y", lambda a, b: a * a + b, True),
        ("x * y + x.exp()", lambda a, b: a * b + a.exp(), True),
        ("(x * y) * (x * y) + x * y", lambda a, b: (lambda p: p * p + p)(a * b), False),
    ]
    for text, build, twice in cases:
        got = _grads(Value, build, 2.0, -3.0)
        want = _torch_grads(build, 2.0, -3.0)
        if not all(_close(g, w) for g, w in zip(got, want)):
            if any(g == 0 != w for g, w in zip(got, want)):
                hint = " " + say(
                    "An input got 0: backward sets the output's grad to 1, then runs each value's backward after "
                    "the values computed from it (a reverse topological order), so every gradient has arrived."
                )
            elif twice:
                hint = " " + say("x is used twice: each use adds its share to x.grad (+=, not =).")
            else:
                hint = " " + say(
                    "x * y is used twice: its backward may run only after both uses added their gradient "
                    "(a reverse topological order: every value after the values computed from it)."
                )
            raise _Problem(
                say_t(
                    "for {expression} at x = 2, y = -3 your gradients are (x: {gx:g}, y: {gy:g}); torch's are "
                    "(x: {wx:g}, y: {wy:g}).{hint}",
                    expression=text,
                    gx=got[0],
                    gy=got[1],
                    wx=want[0],
                    wy=want[1],
                    hint=hint,
                )
            )

    def saved_then_written(build: Callable[[Any], Any], written: Callable[[Any, Any], Any]) -> Callable[[], None]:
        def run() -> None:
            x = Value(2.0)
            out = build(x)
            written(x, out).add_(1.0)
            out.backward()

        return run

    stale = [
        ("y = x * x; x.add_(1.0); y.backward()", saved_then_written(lambda x: x * x, lambda x, out: x)),
        ("y = x.exp(); y.add_(1.0); y.backward()", saved_then_written(lambda x: x.exp(), lambda x, out: out)),
    ]
    for text, run in stale:
        if _expect_raise(text, run) is None:
            raise _Problem(
                say_t(
                    "{code} ran without an error, though its backward reads the value written after the forward "
                    "(mul reads its inputs, exp its output): save that value with its version, and let Saved.get "
                    "compare the versions and raise, as autograd does.",
                    code=text,
                )
            )

    def write_before(x: Any) -> Any:
        x.add_(1.0)
        return x * x

    def write_add_input(x: Any) -> Any:
        out = x + Value(1.0)
        x.add_(1.0)
        return out

    def write_exp_input(x: Any) -> Any:
        out = x.exp()
        x.add_(1.0)
        return out

    fine = [
        ("x.add_(1.0); y = x * x; y.backward()", write_before, 6.0),
        ("y = x + z; x.add_(1.0); y.backward()", write_add_input, 1.0),
        ("y = x.exp(); x.add_(1.0); y.backward()", write_exp_input, math.e**2),
    ]
    for text, make, expected in fine:
        x = Value(2.0)

        def run(make: Callable[[Any], Any] = make, x: Any = x) -> None:
            make(x).backward()

        message = _expect_raise(text, run)
        if message is not None:
            raise _Problem(
                say_t(
                    "{code} raised {message!r}: an operation keeps only what its backward reads (add keeps nothing, "
                    "exp its output), and a write before the forward is no change since the save.",
                    code=text,
                    message=message,
                )
            )
        if not _close(float(x.grad), expected):
            raise _Problem(
                say_t("after {code}, x.grad is {got:g}; torch gives {want:g}.", code=text, got=x.grad, want=expected)
            )
    x, z = Value(2.0), Value(-3.0)
    y = x * z
    y.backward()
    if _expect_raise("a second y.backward()", y.backward) is None:
        raise _Problem(
            say(
                "y = x * z; y.backward(); y.backward() ran twice: backward must free what it read (Saved.free), "
                "and Saved.get must raise when its value was freed."
            )
        )


def check_engine(Value: object) -> Verdict:
    """Exercise (notebook 04): the learner's scalar engine, ``Value``, with saved values and versions.

    Judged against torch: gradients of four expressions (a value used twice, a shared
    subexpression), an in-place write after the save raising at backward (``x * x`` saves
    ``x``, ``exp`` its output), no error where nothing saved was written (``+`` saves
    nothing, a write before the forward), and a second backward raising once the first
    freed the saved values.

    Example::

        >>> class Value:
        ...     def __init__(self, data): self.data, self.grad, self.version = data, 0.0, 0
        ...     def add_(self, amount): self.data += amount
        ...     def __mul__(self, other): return Value(self.data * other.data)
        ...     def exp(self): return Value(2.718281828 ** self.data)
        ...     def backward(self): self.grad = 1.0
        >>> print(check_engine(Value))
        ✗ not yet: after x = Value(2.0); x.add_(1.0), x.data is 3.0 and x.version 0: an in-place write changes the data and adds one to the version.
    """
    if Value is Ellipsis:
        return pending()
    if not isinstance(Value, type):
        return _not_yet(say("Value should be the class you wrote: class Value: ..."))
    methods = [getattr(Value, name, None) for name in _METHODS]
    if methods and all(_is_template(m) for m in methods):
        return pending()
    unwritten = [name for name, m in zip(_METHODS, methods) if m is None or _is_template(m)]
    if unwritten:
        return _not_yet(say_t("not written yet: Value.{names}.", names=", Value.".join(unwritten)))
    try:
        _engine_findings(Value)
    except _Problem as problem:
        return _not_yet(str(problem))
    except Exception as e:  # the learner's engine, in a way the findings did not foresee
        return _not_yet(say_t("the engine raised {error}.", error=_error(e)))
    return _right(
        say(
            "your engine's gradients are torch's, it raises when a saved value was written in place, and a "
            "second backward finds its saved values freed."
        )
    )


# ---------------------------------------------------------------- 2. a Function that saves for backward


def _is_function(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, torch.autograd.Function)


def _not_a_function_class(name: str) -> Verdict:
    return _not_yet(
        say_t(
            "{name} should be a class: class {name}(torch.autograd.Function): ... with forward and backward.", name=name
        )
    )


def _unwritten(cls: type) -> bool:
    return all(_is_template(getattr(cls, m, None)) for m in ("forward", "backward"))


def _gradcheck(apply: Callable[..., torch.Tensor], x: torch.Tensor) -> str | None:
    """None when ``torch.autograd.gradcheck`` passes on ``apply`` at ``x`` (float64); else why not."""
    try:
        torch.autograd.gradcheck(apply, (x,))
    except Exception as e:  # GradcheckError, or the learner's error
        return _error(e)
    return None


_X = [0.5, -1.0, 2.0]


def check_sigmoid_function(Sigmoid: object) -> Verdict:
    """Exercise (notebook 04): ``Sigmoid``, a ``torch.autograd.Function`` that saves its output with ``save_for_backward``.

    Right: the values of ``torch.sigmoid``, a backward that ``gradcheck`` accepts, and a
    saved output that autograd version-checks: a write into the output after the forward
    makes backward raise (or, if the forward saved a copy or its input, leaves the gradient
    right). Keeping the output as ``ctx.y`` gives a silently wrong gradient after the
    write, and gets ✗.
    """
    if Sigmoid is Ellipsis:
        return pending()
    if not _is_function(Sigmoid):
        return _not_a_function_class("Sigmoid")
    assert isinstance(Sigmoid, type)
    if _unwritten(Sigmoid):
        return pending()
    x = torch.tensor(_X, requires_grad=True)
    try:
        y = Sigmoid.apply(x)  # type: ignore[attr-defined]
    except Exception as e:  # the learner's Function
        return _not_yet(say_t("Sigmoid.apply(x) raised {error}.", error=_error(e)))
    if not isinstance(y, torch.Tensor) or not torch.allclose(y.detach(), torch.sigmoid(x.detach()), atol=1e-6):
        return _not_yet(
            say("Sigmoid.apply(x) does not give torch.sigmoid(x)'s values: forward returns 1 / (1 + exp(-x)).")
        )
    failed = _gradcheck(Sigmoid.apply, torch.tensor(_X, dtype=torch.float64, requires_grad=True))  # type: ignore[attr-defined]
    if failed is not None:
        return _not_yet(
            say_t(
                "gradcheck fails on your backward ({error}): sigmoid's derivative is y * (1 - y), times the "
                "incoming gradient.",
                error=failed,
            )
        )
    x = torch.tensor(_X, requires_grad=True)
    y = Sigmoid.apply(x)  # type: ignore[attr-defined]
    with torch.no_grad():
        y.mul_(2)
    try:
        (grad,) = torch.autograd.grad(y.sum(), x)
    except RuntimeError:
        return _right(
            say(
                "the values and gradcheck are right, and a write into the saved output after the forward makes the "
                "backward raise, as it does for torch.sigmoid."
            )
        )
    right = torch.sigmoid(x.detach()) * (1 - torch.sigmoid(x.detach()))
    if torch.allclose(grad, right, atol=1e-6):
        return _right(
            say(
                "the values and gradcheck are right, and a write into the output leaves the gradient right: your "
                "forward saved a copy or its input. (Saving the output itself is what torch.sigmoid does.)"
            )
        )
    return _not_yet(
        say(
            "after a write into the output, backward ran and gave a wrong gradient: the forward kept y where "
            "autograd does not check its version (an attribute such as ctx.y). Save it with "
            "ctx.save_for_backward(y) and read it back with ctx.saved_tensors."
        )
    )


# ---------------------------------------------------------------- 3. an in-place Function: mark_dirty


def check_inplace_function(Double_: object) -> Verdict:
    """Exercise (notebook 04): ``Double_``, a Function that doubles its input in place and calls ``ctx.mark_dirty``.

    Judged on ``a = x * 1; Double_.apply(a)``: ``a`` doubled, and ``a.sum().backward()``
    giving ``x.grad == 2`` (without ``mark_dirty`` ``a`` keeps its old history and the
    gradient is 1). On a leaf that requires grad, autograd must refuse the write, which it
    does only when told with ``mark_dirty``.
    """
    if Double_ is Ellipsis:
        return pending()
    if not _is_function(Double_):
        return _not_a_function_class("Double_")
    assert isinstance(Double_, type)
    if _unwritten(Double_):
        return pending()
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    a = x * 1
    try:
        out = Double_.apply(a)  # type: ignore[attr-defined]
    except Exception as e:  # the learner's Function
        return _not_yet(say_t("Double_.apply(a) raised {error}.", error=_error(e)))
    if not torch.allclose(a.detach(), 2 * x.detach()):
        return _not_yet(say("a is not doubled after Double_.apply(a): the forward writes into its input (x.mul_(2))."))
    if out is not a:
        return _not_yet(
            say_t(
                "Double_.apply(a) returned a new tensor, and a itself kept its old history ({node}): autograd was not "
                "told the forward wrote into a. Call ctx.mark_dirty(x) and return x.",
                node=type(a.grad_fn).__name__,
            )
        )
    try:
        (grad,) = torch.autograd.grad(a.sum(), x)
    except Exception as e:  # the learner's backward
        return _not_yet(say_t("a.sum().backward() raised {error}.", error=_error(e)))
    if not torch.allclose(grad, torch.full_like(grad, 2.0)):
        return _not_yet(
            say_t(
                "x.grad is {got}, not 2 everywhere: the backward of a doubling returns 2 * grad.",
                got=[round(v, 4) for v in grad.tolist()],
            )
        )
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    try:
        Double_.apply(leaf)  # type: ignore[attr-defined]
    except RuntimeError:
        return _right(
            say(
                "a is doubled in place, its history is your Function's (x.grad is 2), and autograd refuses the write "
                "into a leaf: mark_dirty told it what the forward wrote."
            )
        )
    return _not_yet(say("Double_.apply wrote into a leaf that requires grad without an error: call ctx.mark_dirty(x)."))


# ---------------------------------------------------------------- 4. a write torch cannot see: increment_version


def check_visible_write(scale_: object) -> Verdict:
    """Exercise (notebook 04): ``scale_(t, k)`` runs a kernel that writes ``t`` where torch cannot see, and makes it visible.

    Right: ``t`` scaled by ``k``, its version moved by one, so that a backward through a
    saved ``t`` raises instead of computing a silently wrong gradient
    (``torch.autograd.graph.increment_version(t)`` after the kernel).
    """
    if scale_ is Ellipsis or _is_template(scale_):
        return pending()
    if not callable(scale_):
        return _not_yet(say("scale_ should be a function: def scale_(t, k): ..."))
    t = torch.tensor([1.0, -2.0, 3.0])
    before = t._version
    try:
        scale_(t, 2.0)
    except Exception as e:  # the learner's function
        return _not_yet(say_t("scale_(t, 2.0) raised {error}.", error=_error(e)))
    if not torch.allclose(t, torch.tensor([2.0, -4.0, 6.0])):
        return _not_yet(say("scale_(t, 2.0) does not double t: let the kernel write it."))
    moved = t._version - before
    if moved == 0:
        return _not_yet(
            say(
                "t's version did not move: the kernel writes memory autograd does not watch. Tell autograd: "
                "torch.autograd.graph.increment_version(t) after the kernel."
            )
        )
    if moved > 1:
        return _not_yet(say_t("t's version moved by {n}: one write, one version.", n=moved))
    x = torch.tensor(_X, requires_grad=True)
    y = x.sigmoid()
    try:
        scale_(y, 2.0)
    except Exception as e:  # the learner's function, on a tensor with a graph
        return _not_yet(say_t("scale_(y, 2.0) on y = x.sigmoid() raised {error}.", error=_error(e)))
    try:
        torch.autograd.grad(y.sum(), x)
    except RuntimeError:
        return _right(
            say(
                "the kernel's write now moves the version: a backward that needs the old values raises instead of "
                "computing a silently wrong gradient."
            )
        )
    return _not_yet(
        say("after scale_(y, 2.0) on y = x.sigmoid(), backward ran without an error: bump y's own version.")
    )


# ---------------------------------------------------------------- 5. gradcheck


def check_tanh_function(Tanh: object) -> Verdict:
    """Exercise (notebook 04): repair ``Tanh``'s backward until ``torch.autograd.gradcheck`` passes.

    Right: the values of ``torch.tanh``, and ``gradcheck`` passing in float64 (the
    derivative is ``1 - y ** 2``, times the incoming gradient).
    """
    if Tanh is Ellipsis:
        return pending()
    if not _is_function(Tanh):
        return _not_a_function_class("Tanh")
    assert isinstance(Tanh, type)
    x = torch.tensor(_X, dtype=torch.float64, requires_grad=True)
    try:
        y = Tanh.apply(x)  # type: ignore[attr-defined]
    except Exception as e:  # the learner's Function
        return _not_yet(say_t("Tanh.apply(x) raised {error}.", error=_error(e)))
    if not isinstance(y, torch.Tensor) or not torch.allclose(y.detach(), torch.tanh(x.detach())):
        return _not_yet(say("Tanh.apply(x) does not give torch.tanh(x)'s values."))
    failed = _gradcheck(Tanh.apply, x)  # type: ignore[attr-defined]
    if failed is not None:
        return _not_yet(
            say_t(
                "gradcheck still fails ({error}): compare the numerical and the analytical Jacobian it prints, "
                "then the backward's formula with tanh's derivative.",
                error=failed,
            )
        )
    return _right(say("gradcheck passes: the backward agrees with finite differences of the forward."))


# ---------------------------------------------------------------- 6. create_graph


def check_second_derivative(second: object, x: torch.Tensor) -> Verdict:
    """Exercise (notebook 04): sigmoid's second derivative at ``x``, from two ``torch.autograd.grad`` calls.

    Right: ``s * (1 - s) * (1 - 2 * s)`` with ``s = sigmoid(x)``. The first derivative
    (``s * (1 - s)``) gets its own ✗.
    """
    if second is Ellipsis:
        return pending()
    if not isinstance(x, torch.Tensor):
        raise TypeError("check_second_derivative(second, x): pass your second derivative and the exercise's x")
    if not isinstance(second, torch.Tensor):
        return _not_yet(say_t("second is a {type}; it should be a tensor of x's shape.", type=type(second).__name__))
    s = torch.sigmoid(x.detach())
    first, wanted = s * (1 - s), s * (1 - s) * (1 - 2 * s)
    if second.shape != x.shape:
        return _not_yet(say_t("second has shape {shape}; x has {want}.", shape=list(second.shape), want=list(x.shape)))
    got = second.detach().to(wanted.dtype)
    if torch.allclose(got, wanted, atol=1e-6):
        return _right(
            say(
                "that is s * (1 - s) * (1 - 2s): the first grad kept its graph (create_graph=True), so the second "
                "could differentiate it."
            )
        )
    if torch.allclose(got, first, atol=1e-6):
        return _not_yet(say("that is the first derivative, s * (1 - s): differentiate it once more."))
    return _not_yet(say("that is not sigmoid's second derivative at x, s * (1 - s) * (1 - 2s)."))
