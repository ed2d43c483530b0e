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
