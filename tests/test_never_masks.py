"""track() never masks PyTorch's own in-place error, and identity saved-tensor hooks do.

Every scenario runs three times: plain torch, inside ``gradlab.track()``, and
inside identity ``saved_tensors_hooks``. Plain torch and track() must raise the
same RuntimeError with the same text (gradlab's diagnosis goes into a note,
never into the message). Identity hooks raise nothing: that is the premise of
NOTE [Saved-tensor hooks and the version check] in gradlab/saved.py, and the
reason gradlab's pack hook stores the version. If a torch release changes this,
``test_identity_hooks_mask_the_error`` says so.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import scenarios
import torch
from conftest import needs_hooks_stack
from torch import nn

import gradlab

pytestmark = pytest.mark.library


def course_retain_graph() -> None:
    """The course's loop with retain_graph=True: opt_1.step() then loss_2.backward()."""
    scenarios.original_loop(retain_graph=True)


def relu_inplace_after_sigmoid() -> None:
    """Sigmoid saves its output; ReLU(inplace=True) then overwrites it."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    y = nn.ReLU(inplace=True)(torch.sigmoid(lin(torch.randn(4, 3))))
    y.sum().backward()


class Square(torch.autograd.Function):
    """A custom Function that saves its input."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def custom_function_input() -> None:
    w = torch.ones(3, requires_grad=True)
    a = w * 1
    y = Square.apply(a)
    a.add_(1)
    y.sum().backward()


def builtin_saved_input() -> None:
    """sin saves its (non-leaf) input; the input is then modified in place."""
    w = torch.ones(3, requires_grad=True)
    a = w * 1
    y = a.sin()
    a.add_(1)
    y.sum().backward()


SCENARIOS: dict[str, Callable[[], None]] = {
    "course_retain_graph": course_retain_graph,
    "relu_inplace_after_sigmoid": relu_inplace_after_sigmoid,
    "custom_function_input": custom_function_input,
    "builtin_saved_input": builtin_saved_input,
}


def _error_of(scenario: Callable[[], None]) -> RuntimeError:
    with pytest.raises(RuntimeError) as info:
        scenario()
    return info.value


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_plain_torch_raises_the_inplace_error(name: str) -> None:
    err = _error_of(SCENARIOS[name])
    assert "modified by an inplace operation" in str(err)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_track_raises_the_same_error_as_torch(name: str) -> None:
    plain = _error_of(SCENARIOS[name])
    with gradlab.track():
        tracked = _error_of(SCENARIOS[name])
    assert type(tracked) is type(plain)
    assert str(tracked) == str(plain)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_track_with_names_raises_the_same_error_as_torch(name: str) -> None:
    plain = _error_of(SCENARIOS[name])
    with gradlab.track(names=dict):
        tracked = _error_of(SCENARIOS[name])
    assert str(tracked) == str(plain)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_error_under_anomaly_mode(name: str) -> None:
    """The hint text differs under anomaly mode; gradlab must follow it."""
    with torch.autograd.detect_anomaly(check_nan=False):
        plain = _error_of(SCENARIOS[name])
        with gradlab.track():
            tracked = _error_of(SCENARIOS[name])
    assert str(tracked) == str(plain)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_identity_hooks_mask_the_error(name: str) -> None:
    """The premise of gradlab's design: identity hooks silently skip the version check."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        SCENARIOS[name]()  # no error: the stale tensor is used as if nothing happened


@needs_hooks_stack
def test_tracker_is_undone_after_the_error() -> None:
    """An error inside track() leaves no hook behind: the next plain run behaves like torch."""
    with pytest.raises(RuntimeError), gradlab.track():
        course_retain_graph()
    assert torch._C._len_torch_function_stack() == 0
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None
    err = _error_of(course_retain_graph)
    assert "modified by an inplace operation" in str(err)
