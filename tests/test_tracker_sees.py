"""What the tracker sees and names: every backward entry point, writes inside custom backward code,
calls made through a helper, and stale tensors named outside a tracker."""

from __future__ import annotations

import pytest
import torch
from conftest import needs_raw_saved
from torch import nn

import gradlab

pytestmark = pytest.mark.library


def _stale_loop(run_backward) -> tuple[gradlab.Tracker, RuntimeError]:
    lin = nn.Linear(2, 3)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = torch.ones(4, 2, requires_grad=True)
    with gradlab.track(names={"lin": lin}, warn=False) as tracker, pytest.raises(RuntimeError) as info:
        out = lin(x).sum()
        out.backward(retain_graph=True)
        opt.step()
        run_backward(out, x)
    return tracker, info.value


@pytest.mark.parametrize(
    "run_backward",
    [
        lambda out, x: out.backward(),
        lambda out, x: torch.autograd.backward(out),
        lambda out, x: torch.autograd.backward([out], grad_tensors=[torch.ones(())]),
        lambda out, x: torch.autograd.grad(out, x),
    ],
    ids=["Tensor.backward", "autograd.backward", "autograd.backward-list", "autograd.grad"],
)
def test_every_backward_entry_point_gets_the_note(run_backward) -> None:
    tracker, error = _stale_loop(run_backward)
    notes = [n for n in error.__notes__ if n.lstrip().startswith("gradlab:")]
    assert len(notes) == 1
    diagnosis = tracker.diagnosis_for(error)
    assert diagnosis.problems[0].tensor == "lin.weight (transposed view)"
    assert diagnosis.problems[0].modified_by == "SGD.step()"


class Scale(torch.autograd.Function):
    """A custom op whose backward (wrongly) writes into a tensor another node saved."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, shared: torch.Tensor) -> torch.Tensor:
        ctx.shared = shared
        return x * 2

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        ctx.shared.mul_(0.5)  # IN CUSTOM BACKWARD
        return grad * 2, None


def test_a_write_inside_a_custom_backward_is_recorded_with_its_line() -> None:
    w = torch.randn(3, requires_grad=True)
    shared = torch.randn(3)
    with gradlab.track(names={"w": w, "shared": shared}, warn=False) as tracker:
        y = (w * shared).sum()  # MulBackward0 saves shared
        Scale.apply(w, shared).sum().backward()
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0") as info:
            y.backward()
    problem = tracker.diagnosis_for(info.value).problems[0]
    assert problem.tensor == "shared" and problem.modified_by == "mul_"
    assert problem.code == "ctx.shared.mul_(0.5)  # IN CUSTOM BACKWARD"


class Trainer:
    """A helper that calls backward for the user, as some training frameworks do."""

    def backward(self, loss: torch.Tensor, retain: bool = False) -> None:
        loss.backward(retain_graph=retain)  # THE HELPER'S BACKWARD


def test_calls_through_a_helper_are_told_apart_by_their_callers() -> None:
    lin = nn.Linear(2, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    trainer = Trainer()
    x = torch.ones(3, 2, requires_grad=True)
    with gradlab.track(names={"lin": lin}, warn=False) as tracker, pytest.raises(RuntimeError) as info:
        out = lin(x).sum()
        trainer.backward(out, retain=True)  # FIRST CALL
        opt.step()
        trainer.backward(out)  # SECOND CALL
    d = tracker.diagnosis_for(info.value)
    assert d.needed_by.code == "loss.backward(retain_graph=retain)  # THE HELPER'S BACKWARD"
    assert [c.code for c in d.needed_by.callers] == ["trainer.backward(out)  # SECOND CALL"]
    assert "(called from" in str(d) and "# SECOND CALL" in str(d)


# -- names outside a tracker --------------------------------------------------------------------------


@needs_raw_saved
def test_outside_track_a_stale_view_of_a_buffer_is_named() -> None:
    class Embed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 8))
            self.register_buffer("pos", torch.randn(16, 8))

        def forward(self, n: int) -> torch.Tensor:
            return self.weight[:n] * self.pos[:n]  # saves a view of the buffer

    model = Embed()
    loss = model(4).sum()
    with torch.no_grad():
        model.pos.add_(1)
    d = gradlab.check(loss, names={"model": model})
    (problem,) = d.problems
    assert problem.tensor == "model.pos (view)"


def test_outside_track_layernorm_weight_and_bias_are_told_apart() -> None:
    ln = nn.LayerNorm(4)
    x = torch.randn(2, 4, requires_grad=True)
    loss = ln(x).pow(2).sum()
    with torch.no_grad():
        ln.bias.add_(1)  # same shape and version as the weight: only the bias changed
    d = gradlab.check(loss, names={"ln": ln})
    assert [p.tensor for p in d.problems] == ["ln.bias"]


def test_outside_track_a_named_plain_tensor_is_named() -> None:
    x = torch.randn(4, 4, requires_grad=True)
    y = torch.randn(4, 4, requires_grad=True)
    z = x * y
    w = z * y
    z.add_(2)
    d = gradlab.check(w.sum(), names={"x": x, "y": y, "z": z})
    assert [p.tensor for p in d.problems] == ["z"]


def test_a_name_that_cannot_be_known_is_a_description_never_a_wrong_name() -> None:
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)  # same shape and version as the stale tensor, but not it
    h = a * 2
    out = (h * h).sum()
    with torch.no_grad():
        h.add_(1)
    d = gradlab.check(out, names={"a": a, "b": b})
    assert d.problems[0].tensor == "output of Mul [3]"


def test_the_traceback_has_no_frame_of_gradlab_below_the_backward_call() -> None:
    """The frames under gradlab's backward wrapper are torch's only: the unpack hook that raised is taken out."""
    import traceback

    _, error = _stale_loop(lambda out, x: out.backward())
    frames = traceback.extract_tb(error.__traceback__)
    names = [f.name for f in frames]
    below = frames[names.index("record_backward") + 1 :]
    assert below and not any(f.filename.endswith(("saved.py", "tracker.py", "writes.py")) for f in below)
    assert below[-1].filename.endswith("graph.py")  # torch's backward engine raised it, as without gradlab
