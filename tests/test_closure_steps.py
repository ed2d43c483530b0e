"""``optimizer.step(closure)`` under ``track()`` and ``record_training()``: the closure's code is the user's.

Lightning's automatic optimization (and LBFGS) run the forward, ``zero_grad()`` and backward inside
the optimizer's step (NOTE [Closure steps] in gradlab/steps.py). Plain torch here; the frameworks
themselves are in tests/test_frameworks.py.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import gradlab

pytestmark = pytest.mark.library


def _model() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    return net, torch.optim.SGD(net.parameters(), lr=0.1)


def test_a_write_inside_the_closure_is_named_and_located() -> None:
    net, opt = _model()
    x = torch.randn(5, 4)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        gate = torch.sigmoid(net(x))
        gate *= 2.0  # the write: sigmoid saved its output
        loss = gate.sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="modified by an inplace operation") as raised, gradlab.track():
        opt.step(closure)
    diagnosis = gradlab.last_diagnosis(raised.value)
    problem = diagnosis.problems[0]
    assert problem.modified_by == "__imul__"  # not "unknown": the closure's write was recorded
    assert problem.writes[0].location is not None and problem.writes[0].location.code.startswith("gate *= 2.0")


def test_no_missing_gradient_warning_before_the_closure_has_run_its_backward() -> None:
    net, opt = _model()
    x, y = torch.randn(5, 4), torch.randn(5, 1)

    def closure() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track() as tracker:
            for _ in range(3):
                opt.step(closure)
    assert tracker.notes == []  # the step's gradients are checked once the closure has made them


def test_the_step_is_recorded_after_the_closures_backward() -> None:
    net, opt = _model()
    x, y = torch.randn(5, 4), torch.randn(5, 1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        return loss

    with gradlab.track() as tracker:
        opt.step(closure)
        calls = [(c.kind, c.after) for c in tracker._recorder().optimizer_calls]
    assert calls == [("zero_grad", 0), ("step", 1)]  # zero_grad before the backward, the step after it


def test_a_closure_that_raises_leaves_no_step_in_the_record() -> None:
    _, opt = _model()

    def closure() -> torch.Tensor:
        raise ValueError("the user's bug")

    with gradlab.track() as tracker, gradlab.record_training() as record:
        with pytest.raises(ValueError, match="the user's bug"):
            opt.step(closure)
        calls = [c.kind for c in tracker._recorder().optimizer_calls]
    assert calls == [] and record.steps == []


def test_record_training_counts_the_closures_backward_for_its_step() -> None:
    net, opt = _model()
    x, y = torch.randn(5, 4), torch.randn(5, 1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        return loss

    with gradlab.record_training() as record:
        for _ in range(2):
            opt.step(closure)
    assert [(s.optimizer, s.count, s.trained) for s in record.steps] == [
        ("opt", 1, (("loss", ("net",)),)),
        ("opt", 2, (("loss", ("net",)),)),
    ]


def test_a_closure_step_trains_exactly_as_without_gradlab() -> None:
    def run(tracked: bool) -> list[torch.Tensor]:
        net, _ = _model()
        opt = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=4)
        x, y = torch.randn(5, 4), torch.randn(5, 1)

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(x), y)
            loss.backward()
            return loss

        if tracked:
            with gradlab.track():
                for _ in range(3):
                    opt.step(closure)
        else:
            for _ in range(3):
                opt.step(closure)
        return [p.detach().clone() for p in net.parameters()]

    assert all(torch.equal(a, b) for a, b in zip(run(False), run(True)))
