"""Fail open: when torch words its errors differently or drops a private API, gradlab still runs the user's code.

Each change is simulated on the real torch (monkeypatching torch's wording as
gradlab reads it, or the private accessor), and the user's training must come
out bitwise the same as without gradlab, with one warning saying what gradlab
cannot do.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import gradlab
from gradlab import backwards, internals, messages, notices, recorder, registry, steps, writes
from gradlab.cli import run_script

pytestmark = pytest.mark.library


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test reads torch's wording anew and may warn again; the real wording is back afterwards."""
    monkeypatch.setattr(notices, "_warned", set())
    messages.wording.cache_clear()
    yield
    messages.wording.cache_clear()


def _train(tracked: bool) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LeakyReLU(inplace=True), torch.nn.Linear(4, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    with gradlab.track(names={"model": model}) if tracked else _nothing():
        for _ in range(3):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _gradlab_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, gradlab.GradlabWarning)]


def _trains_the_same_with_one_warning(about: str) -> None:
    plain = _train(tracked=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracked = _train(tracked=True)
        tracked_again = _train(tracked=True)
    assert plain.keys() == tracked.keys()
    assert all(torch.equal(plain[k], tracked[k]) and torch.equal(plain[k], tracked_again[k]) for k in plain)
    said = _gradlab_warnings(caught)
    assert len(said) == 1 and about in said[0], said  # once, however many trackers start


def _stale() -> RuntimeError:
    w = torch.ones(3, requires_grad=True)
    y = (w * w).sum()
    with torch.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError) as info:
        y.backward()
    return info.value


def test_a_reworded_in_place_message_does_not_stop_track(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "_provoke", lambda build: "a saved tensor changed (worded as no torch words it yet)")
    _trains_the_same_with_one_warning("cannot read how this torch")
    with gradlab.track():
        error = _stale()  # the user's error still reaches the user, in torch 2.13's words
    assert "has been modified by an inplace operation" in str(error)
    assert gradlab.explain(error).kind == "modified_in_place"


def test_a_probe_that_raises_does_not_stop_track(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(build: str) -> str:
        raise TypeError("a torch whose autograd works differently")

    monkeypatch.setattr(messages, "_provoke", broken)
    _trains_the_same_with_one_warning("cannot read how this torch")


def test_a_missing_private_accessor_does_not_stop_track(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch._C, "_current_autograd_node")
    _trains_the_same_with_one_warning("_current_autograd_node")


def test_wrappers_that_cannot_be_installed_do_not_stop_track(monkeypatch: pytest.MonkeyPatch) -> None:
    def gone() -> Iterator[tuple[object, str]]:
        raise AttributeError("module 'torch._C' has no attribute '_nn'")
        yield  # pragma: no cover - a generator, as the real one

    monkeypatch.setattr(internals, "nn_functions", gone)
    before = dict(vars(torch.Tensor))
    _trains_the_same_with_one_warning("cannot watch in-place writes")
    assert not writes.installed()
    assert dict(vars(torch.Tensor)) == before


# The parts of the recorder whose failure the hooks must survive: the save's line, the
# registry's lookup (an in-place write), a backward call's record, an optimizer step's record.
_BROKEN = {
    "user_location": (recorder, "user_location"),
    "watched": (registry.Registry, "watched"),
    "begin": (backwards.Backwards, "begin"),
    "started": (steps.Steps, "started"),
}


@pytest.mark.parametrize("broken", list(_BROKEN))
def test_a_failure_inside_gradlabs_hooks_does_not_reach_the_users_code(
    monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """A bug in gradlab's bookkeeping (simulated) leaves the user's forward, writes, backward and steps as they were."""

    def bug(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug in gradlab's bookkeeping")

    monkeypatch.setattr(*_BROKEN[broken], bug)
    _trains_the_same_with_one_warning("failed while recording")
    w = torch.ones(2, requires_grad=True)
    with gradlab.track():
        y = (w * w).sum()  # saves w: the in-place write below goes through the recorder
        with torch.no_grad():
            w.add_(1)
        assert w.tolist() == [2.0, 2.0]
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()  # torch's error still reaches the user


def test_gradlab_run_runs_the_script_when_the_tracker_cannot_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(self: gradlab.Tracker) -> gradlab.Tracker:
        raise gradlab.GradlabError(
            "gradlab cannot read torch's in-place message: 'one of the variables needed for gradient computation "
            "has been modified by an inplace operation: [torch.FloatTensor [2]] is at version 1; expected version "
            "0 instead.'"
        )

    monkeypatch.setattr(gradlab.Tracker, "__enter__", refuse)
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint('trained', torch.ones(2).sum().item())\n", encoding="utf-8")
    err = io.StringIO()
    assert run_script(script, stderr=err) == 0
    assert capsys.readouterr().out == "trained 2.0\n"
    text = err.getvalue()
    assert "could not start its tracker" in text and "without gradlab's notes" in text
    assert "Traceback" not in text and "Explanation" not in text


def test_gradlab_run_reports_the_scripts_own_error_when_the_tracker_cannot_stop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(self: gradlab.Tracker, *exc: object) -> None:
        raise gradlab.GradlabError("a bug in gradlab")

    monkeypatch.setattr(gradlab.Tracker, "__exit__", refuse)
    script = tmp_path / "fails.py"
    script.write_text("raise ValueError('the script failed')\n", encoding="utf-8")
    err = io.StringIO()
    try:
        assert run_script(script, stderr=err) == 1
    finally:
        monkeypatch.undo()
        left = gradlab.session.active()  # the refused exit left the tracker open: close it for real
        if left is not None:
            left.__exit__(None, None, None)
    assert gradlab.session.active() is None and not writes.installed()
    text = err.getvalue()
    assert "ValueError: the script failed" in text  # the script's error, printed as python prints it
    assert [line for line in text.splitlines() if "GradlabError" in line] == [
        "gradlab: gradlab could not stop its tracker (GradlabError: a bug in gradlab); the script runs as under "
        "python, without gradlab's notes."
    ]


def test_explain_does_not_decode_gradlabs_own_error() -> None:
    quoted = (
        "gradlab cannot read torch's in-place message: 'one of the variables needed for gradient computation has "
        "been modified by an inplace operation: [torch.FloatTensor [2]] is at version 1; expected version 0 "
        "instead.'"
    )
    assert gradlab.explain(RuntimeError(quoted)).kind == "modified_in_place"  # the text alone would be decoded
    own = gradlab.explain(gradlab.GradlabError(quoted))
    assert own.kind == "not_autograd" and "gradlab itself" in own.summary
    pasted = f'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\ngradlab.notices.GradlabError: {quoted}'
    assert gradlab.explain(pasted).kind == "not_autograd"
    assert gradlab.explain(pasted.replace("gradlab.notices.GradlabError", "RuntimeError")).kind == "modified_in_place"
