"""The benchmark's per-step breakdown of track() and its guard (``benchmarks/cost.py``).

No timing is asserted (timings live in benchmarks/): this checks that the tool
counts the tracker's calls as autograd makes them and leaves the tracker as it
was, and that the guard judges a row by its baseline and re-measures before failing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from loading import load_module

from gradlab import course
from gradlab.recorder import Recorder

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"

pytestmark = pytest.mark.library


@pytest.fixture
def cost(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.delitem(sys.modules, "measure", raising=False)
    return load_module(BENCH / "cost.py", "gradlab_benchmarks_cost", monkeypatch)


def test_the_breakdown_counts_each_hook_per_step_and_restores_the_recorder(cost) -> None:  # type: ignore[no-untyped-def]
    before = {name: Recorder.__dict__[name] for name in (*cost.TIMED, "record_backward")}
    data = course.batches(4, seed=0)

    def fresh() -> tuple:
        pair = course.make_pair(0, softmax=False)
        return (lambda: [course.joint_step(pair, x, y) for x, y in data]), None

    table = cost.breakdown_table(cost.breakdown(fresh, len(data), rounds=1))
    calls = dict(re.findall(r"^\| inside (\S+)[^|]*\| [\d.]+ \| ([\d.]+) \|$", table, re.M))
    # The corrected loop, per step: two small networks save 13 tensors, which one
    # backward unpacks; two optimizers zero their gradients and step once each.
    assert calls == {
        "pack": "13.0",
        "unpack": "13.0",
        "record_backward": "1.0",
        "step_started": "2.0",
        "step_finished": "2.0",
        "zero_grad_called": "2.0",
    }
    assert "| the rest:" in table
    assert {name: Recorder.__dict__[name] for name in before} == before


def _result(cost, ratios: list[float]) -> dict:  # type: ignore[no-untyped-def]
    return {
        "workload": "cnn",
        "optimizer": "SGD",
        "repetitions": len(ratios),
        "rows": [{"variant": "track()", "vs_plain": cost.median(ratios)}],
        "rounds": {"track()": ratios},
    }


def test_the_guard_passes_a_row_within_5_percent_and_fails_one_worse_twice(cost) -> None:  # type: ignore[no-untyped-def]
    baseline = {"cnn SGD": 1.02}
    again: list[dict] = []

    def remeasure(result: dict) -> dict:
        again.append(result)
        return _result(cost, [1.20, 1.21, 1.19])

    ok = cost.guard([_result(cost, [1.05, 1.07, 1.06])], baseline, remeasure)  # 1.06 <= 1.02 * 1.05
    assert ok[0]["status"] == "ok" and not again
    worse = cost.guard([_result(cost, [1.20, 1.22, 1.18])], baseline, remeasure)
    assert worse[0]["status"] == "WORSE" and len(again) == 1


def test_the_guard_forgives_one_slow_run_that_the_second_does_not_repeat(cost) -> None:  # type: ignore[no-untyped-def]
    def remeasure(result: dict) -> dict:
        return _result(cost, [1.00, 1.01, 1.02, 1.03])

    (verdict,) = cost.guard([_result(cost, [1.09, 1.10, 1.11])], {"cnn SGD": 1.02}, remeasure)
    assert verdict["status"] == "ok (re-measured)" and verdict["pooled"] <= verdict["line"]
    (new,) = cost.guard([_result(cost, [1.09])], {}, remeasure)
    assert new["status"] == "no baseline"


def test_a_row_over_its_line_is_judged_against_the_baseline_code_in_the_same_rounds(cost) -> None:  # type: ignore[no-untyped-def]
    def side_by_side(ratio_to_baseline: float):  # type: ignore[no-untyped-def]
        def measure(result: dict) -> dict:
            base = [1.0, 1.1, 0.9, 1.2]
            return {
                "rows": [{"variant": "track()", "vs_plain": 1.5}],
                "cpu": {"track()": [b * ratio_to_baseline for b in base], cost.BASELINE_VARIANT: base},
            }

        return measure

    busy = _result(cost, [1.30, 1.31, 1.29])  # far over 1.02 * 1.05, but so is the baseline code today
    (ok,) = cost.guard([busy], {"cnn SGD": 1.02}, lambda r: r, side_by_side(1.02))
    assert ok["status"].startswith("ok") and ok["vs_baseline_code"] == pytest.approx(1.02)
    (worse,) = cost.guard([busy], {"cnn SGD": 1.02}, lambda r: r, side_by_side(1.08))
    assert worse["status"].startswith("WORSE")


def test_the_baseline_commit_is_imported_beside_todays_gradlab_and_restores_torch(cost, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil
    import subprocess

    import torch

    inside = subprocess.run(["git", "rev-parse", "HEAD"], cwd=BENCH, capture_output=True, text=True)
    if shutil.which("git") is None or inside.returncode:
        pytest.skip("not a git clone: the guard then re-measures instead")
    before = dict(vars(torch.Tensor))
    package = cost.baseline_gradlab("HEAD", tmp_path)
    try:
        assert package is not None and package.__name__ == "gradlab_baseline"
        w = torch.ones(2, requires_grad=True)
        with package.track() as tracker:
            y = (w * w).sum()
            with torch.no_grad():
                w.add_(1)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.backward()
        assert [e.op for e in tracker.writes] == ["add_", "add_"]  # the baseline's own tracker saw the write
        assert dict(vars(torch.Tensor)) == before
    finally:
        for name in [m for m in sys.modules if m == "gradlab_baseline" or m.startswith("gradlab_baseline.")]:
            del sys.modules[name]
