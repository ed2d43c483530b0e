"""The checks of notebook 04's "build it" part (gradlab/course/engine.py), fed right answers, equivalent forms and
the plausible wrong ones, with PyTorch as the oracle for every claim a check makes."""

from __future__ import annotations

import doctest

import pytest
import torch
from torch.autograd import Function

import gradlab.course.engine
from gradlab import course
from gradlab.course import engine

pytestmark = pytest.mark.course

# The engine as notebook 04's solution writes it; the wrong answers below are this text with one change each.
ENGINE = '''import math


class Saved:
    """A value saved for backward, and the version it had when it was saved."""

    def __init__(self, value):
        self.value = value
        self.version = value.version

    def get(self):
        if self.value is None:
            raise RuntimeError("Trying to backward through the graph a second time: this saved value was freed")
        if self.value.version != self.version:
            raise RuntimeError(
                "a value needed for backward has been modified by an inplace operation: "
                f"is at version {self.value.version}; expected version {self.version} instead"
            )
        return self.value.data

    def free(self):
        self.value = None


class Value:
    """A number that remembers how it was made."""

    def __init__(self, data, parents=(), backward=None, saved=()):
        self.data = float(data)
        self.grad = 0.0
        self.version = 0  # in-place writes so far
        self.parents = parents  # the values this one was computed from
        self.backward_fn = backward  # out's gradient -> one gradient per parent
        self.saved = list(saved)  # the Saved objects backward_fn reads; freed after it ran

    def add_(self, amount):  # an in-place write
        self.data += amount
        self.version += 1
        return self

    def __add__(self, other):  # needs nothing saved: the gradient is 1 for both
        return Value(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):  # needs both inputs
        a, b = Saved(self), Saved(other)
        return Value(self.data * other.data, (self, other), lambda g: (g * b.get(), g * a.get()), (a, b))

    def exp(self):  # needs its output
        out = Value(math.exp(self.data), (self,))
        saved = Saved(out)
        out.backward_fn, out.saved = (lambda g: (g * saved.get(),)), [saved]
        return out

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if id(v) not in seen:
                seen.add(id(v))
                for parent in v.parents:
                    visit(parent)
                order.append(v)

        visit(self)
        self.grad = 1.0
        for v in reversed(order):  # a value after every value computed from it
            if v.backward_fn is not None:
                for parent, grad in zip(v.parents, v.backward_fn(v.grad)):
                    parent.grad += grad
                for saved in v.saved:
                    saved.free()
'''


def _engine(**changes: str) -> type:
    source = ENGINE
    for old, new in changes.items():
        assert old in source, old
        source = source.replace(old, new)
    namespace: dict[str, object] = {}
    exec(compile(source, "engine_answer", "exec"), namespace)
    return namespace["Value"]  # type: ignore[return-value]


def test_the_solution_engine_passes_and_agrees_with_torch() -> None:
    Value = _engine()
    assert engine.check_engine(Value).passed
    x, y = Value(2.0), Value(-3.0)
    (x * y + x.exp()).backward()
    tx, ty = torch.tensor(2.0, requires_grad=True), torch.tensor(-3.0, requires_grad=True)
    (tx * ty + tx.exp()).backward()
    assert x.grad == pytest.approx(tx.grad.item()) and y.grad == pytest.approx(ty.grad.item())


def test_an_engine_ordered_by_creation_is_another_right_answer() -> None:
    """A value is made after its parents, so running the backward functions newest first is a topological order."""
    Value = _engine(
        **{
            "        self.data = float(data)\n": (
                "        self.data = float(data)\n        Value.made = getattr(Value, 'made', 0) + 1\n"
                "        self.made = Value.made\n"
            ),
            "        for v in reversed(order):  # a value after every value computed from it": (
                "        for v in sorted(order, key=lambda v: -v.made):"
            ),
        }
    )
    assert engine.check_engine(Value).passed


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"parent.grad += grad": "parent.grad = grad"}, "+=, not ="),
        ({"        self.version += 1\n": ""}, "adds one to the version"),
        ({"        if self.value.version != self.version:\n": "        if False:\n"}, "compare the versions and raise"),
        ({"                for saved in v.saved:\n                    saved.free()\n": ""}, "must free what it read"),
        ({"        for v in reversed(order):": "        for v in order:"}, "reverse topological order"),
        (
            {
                "        saved = Saved(out)\n": "        saved = Saved(self)\n",
                "(g * saved.get(),)": "(g * math.exp(saved.get()),)",
            },
            "y = x.exp(); y.add_(1.0); y.backward() ran without an error",
        ),
        (
            {
                "        return Value(self.data + other.data, (self, other), lambda g: (g, g))": (
                    "        kept = Saved(self)\n"
                    "        return Value(self.data + other.data, (self, other), lambda g: (g + 0 * kept.get(), g), (kept,))"
                )
            },
            "add keeps nothing",
        ),
        (
            {
                "    def exp(self):  # needs its output\n": "    def exp(self):  # needs its output\n        raise ValueError('todo')\n"
            },
            "raised ValueError",
        ),
    ],
    ids=[
        "assigns-grad",
        "no-version",
        "no-version-check",
        "no-free",
        "no-order",
        "exp-saves-input",
        "add-saves",
        "raises",
    ],
)
def test_engine_wrong_answers_get_their_reason(changes: dict[str, str], reason: str) -> None:
    verdict = engine.check_engine(_engine(**changes))
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text, verdict.text


def test_engine_template_is_neutral_and_a_half_written_one_is_named() -> None:
    class Value:
        def __init__(self, data, parents=(), backward=None, saved=()):
            self.data, self.grad, self.version = float(data), 0.0, 0

        def add_(self, amount): ...

        def __mul__(self, other): ...

        def exp(self): ...

        def backward(self): ...

    assert engine.check_engine(Value).pending
    Value.add_ = _engine().add_  # type: ignore[method-assign]
    verdict = engine.check_engine(Value)
    assert not verdict.passed and "not written yet: Value.__mul__, Value.exp, Value.backward" in verdict.text
    assert engine.check_engine(...).pending
    assert "should be the class you wrote" in engine.check_engine(3).text


# -- 2. a Function that saves its output -------------------------------------------------------------------------


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + torch.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


class SigmoidFromInput(Function):  # saves x and recomputes: right, and a write into the output does not matter
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * s * (1 - s)


class SigmoidAsAttribute(Function):  # ctx.y: no version check, a silently wrong gradient after a write
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.y * (1 - ctx.y)


class SigmoidWrongDerivative(Sigmoid):
    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 + y)


@pytest.mark.parametrize("answer", [Sigmoid, SigmoidFromInput])
def test_sigmoid_function_right_forms_pass(answer) -> None:
    assert engine.check_sigmoid_function(answer).passed


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (SigmoidAsAttribute, "ctx.save_for_backward(y)"),
        (SigmoidWrongDerivative, "gradcheck fails"),
        (torch.sigmoid, "should be a class"),
    ],
)
def test_sigmoid_function_wrong_answers_get_their_reason(answer, reason: str) -> None:
    verdict = engine.check_sigmoid_function(answer)
    assert not verdict.passed and reason in verdict.text, verdict.text


def test_the_attribute_claim_holds_against_torch() -> None:
    """The check's reason for ctx.y, against torch: save_for_backward raises after a write, ctx.y does not."""
    for cls, raises in ((Sigmoid, True), (SigmoidAsAttribute, False)):
        x = torch.tensor([0.5, -1.0], requires_grad=True)
        y = cls.apply(x)
        with torch.no_grad():
            y.mul_(2)
        if raises:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
        else:
            y.sum().backward()


# -- 3. mark_dirty ---------------------------------------------------------------------------------------------------


class Double_(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


class DoubleWithoutMarkDirty(Double_):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        return x


class DoubleOutOfPlace(Double_):
    @staticmethod
    def forward(ctx, x):
        return 2 * x


class DoubleWrongBackward(Double_):
    @staticmethod
    def backward(ctx, grad):
        return grad


def test_inplace_function_with_mark_dirty_passes() -> None:
    assert engine.check_inplace_function(Double_).passed


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (DoubleWithoutMarkDirty, "Call ctx.mark_dirty(x)"),
        (DoubleOutOfPlace, "a is not doubled"),
        (DoubleWrongBackward, "not 2 everywhere"),
    ],
)
def test_inplace_function_wrong_answers_get_their_reason(answer, reason: str) -> None:
    verdict = engine.check_inplace_function(answer)
    assert not verdict.passed and reason in verdict.text, verdict.text


def test_the_mark_dirty_claim_holds_against_torch() -> None:
    """Without mark_dirty the written tensor keeps its old history: its gradient is 1, not 2."""
    for cls, want in ((Double_, 2.0), (DoubleWithoutMarkDirty, 1.0)):
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        a = x * 1
        cls.apply(a)
        a.sum().backward()
        assert torch.equal(x.grad, torch.full_like(x, want))


# -- 4. increment_version ------------------------------------------------------------------------------------------


def kernel_scale_(t: torch.Tensor, k: float) -> None:
    t.detach().numpy()[...] *= k  # writes the memory directly: no version moves


def scale_visible(t, k):
    kernel_scale_(t, k)
    torch.autograd.graph.increment_version(t)


def scale_hidden(t, k):
    kernel_scale_(t, k)


def scale_twice(t, k):
    kernel_scale_(t, k)
    torch.autograd.graph.increment_version(t)
    torch.autograd.graph.increment_version(t)


def scale_through_data(t, k):
    t.data.mul_(k)


def test_visible_write_passes_and_the_kernel_alone_is_silent() -> None:
    assert engine.check_visible_write(scale_visible).passed
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    y = x.sigmoid()
    scale_hidden(y, 2.0)
    y.sum().backward()  # the claim: without increment_version, no error (a silently wrong gradient)
    s = torch.sigmoid(torch.tensor([0.5, -1.0]))
    assert not torch.allclose(x.grad, s * (1 - s))


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (scale_hidden, "increment_version(t)"),
        (scale_through_data, "version did not move"),
        (scale_twice, "moved by 2"),
        (lambda t, k: None, "does not double t"),
    ],
)
def test_visible_write_wrong_answers_get_their_reason(answer, reason: str) -> None:
    verdict = engine.check_visible_write(answer)
    assert not verdict.passed and reason in verdict.text, verdict.text


# -- 5. gradcheck, 6. create_graph ---------------------------------------------------------------------------------


class TanhAsGiven(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y)


class TanhRepaired(TanhAsGiven):
    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y**2)


def test_tanh_repaired_passes_gradcheck_and_the_given_one_does_not() -> None:
    assert engine.check_tanh_function(TanhRepaired).passed
    verdict = engine.check_tanh_function(TanhAsGiven)
    assert not verdict.passed and "gradcheck still fails" in verdict.text
    assert not engine.check_tanh_function(Sigmoid).passed


def test_second_derivative_through_create_graph() -> None:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (first,) = torch.autograd.grad(Sigmoid.apply(x).sum(), x, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), x)
    assert engine.check_second_derivative(second, x).passed
    assert "the first derivative" in engine.check_second_derivative(first.detach(), x).text
    assert "not sigmoid's second derivative" in engine.check_second_derivative(torch.zeros(3), x).text
    assert "is a float" in engine.check_second_derivative(1.0, x).text
    assert engine.check_second_derivative(..., x).pending
    (plain,) = torch.autograd.grad(Sigmoid.apply(x).sum(), x)  # no create_graph: no graph to differentiate
    assert plain.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(plain.sum(), x)


def test_checks_are_public_in_the_course_and_their_examples_run() -> None:
    for name in engine.__all__:
        assert getattr(course, name) is getattr(engine, name)
    result = doctest.testmod(gradlab.course.engine)
    assert result.attempted >= 1 and result.failed == 0
