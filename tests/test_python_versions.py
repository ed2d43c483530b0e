"""What differs between the Pythons gradlab supports (3.11, 3.12, 3.13), tested on the one running.

``make test-python PY=3.13`` runs these (with every other library test) on another Python.
From 3.13 a function's ``frame.f_locals`` is a write-through proxy (PEP 667), not a
snapshot dict: gradlab must read the user's names without clearing it and without
keeping their tensors alive.
"""

from __future__ import annotations

import gc
import sys
import warnings
import weakref

import pytest
import torch

import gradlab
from gradlab import notices
from gradlab.location import frame_names

pytestmark = pytest.mark.library


def _stale_loss() -> torch.Tensor:
    """A loss whose graph saved sigmoid's output, then changed in place."""
    a = torch.randn(3, requires_grad=True)
    c = (a * 2).sigmoid()
    c.mul_(2)
    return c.sum()


def test_check_inside_a_function_diagnoses() -> None:
    def train_step() -> tuple[gradlab.Diagnosis, float]:
        weights = torch.randn(3, requires_grad=True)
        squashed = (weights * 2).sigmoid()
        squashed.mul_(2)
        loss = squashed.sum()
        d = gradlab.check(loss)
        return d, squashed.detach().sum().item()  # the function's locals are still there after check()

    d, total = train_step()
    assert not d.ok
    assert "modified in place" in str(d)
    assert total > 0


def test_frame_names_leaves_the_locals_and_keeps_nothing_alive() -> None:
    def body() -> tuple[dict[str, object], bool, bool]:
        tensor = torch.ones(2)
        ref = weakref.ref(tensor)
        names = frame_names(sys._getframe())
        seen = names.get("tensor") is tensor
        names.clear()
        still_bound = tensor is ref()  # reading the names did not unbind the local
        del tensor
        gc.collect()
        return names, seen and still_bound, ref() is None

    _, seen_and_bound, freed = body()
    assert seen_and_bound
    assert freed, "frame_names kept the function's tensor alive after the function deleted it"


def test_a_backward_inside_a_function_gets_the_note() -> None:
    def train_step() -> None:
        loss = _stale_loss()
        loss.backward()

    with gradlab.track(), pytest.raises(RuntimeError) as info:
        train_step()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "gradlab: " in notes
    assert "modified" in notes


def test_a_failed_diagnosis_warns_once_and_keeps_the_users_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("'FrameLocalsProxy' object has no attribute 'clear'")

    monkeypatch.setattr(gradlab.Tracker, "_failure_diagnosis", broken)
    monkeypatch.setattr(notices, "_warned", set())
    errors: list[RuntimeError] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with gradlab.track(), pytest.raises(RuntimeError) as info:
                _stale_loss().backward()
            errors.append(info.value)
    said = [w for w in caught if issubclass(w.category, gradlab.GradlabWarning)]
    assert len(said) == 1, [str(w.message) for w in caught]
    text = str(said[0].message)
    assert "AttributeError" in text and "without gradlab's note" in text
    assert f"Python {sys.version_info.major}.{sys.version_info.minor}" in text
    for e in errors:
        assert "is at version" in str(e)  # torch's own message, unchanged
        assert not any("gradlab" in n for n in getattr(e, "__notes__", []))
