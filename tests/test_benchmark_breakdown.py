"""The benchmark's per-step breakdown of track() (``benchmarks/run.py --profile``).

No timing is asserted (timings live in benchmarks/): this checks that the tool
counts the tracker's calls as autograd makes them and leaves the tracker as it was.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from loading import load_module

from gradlab import course
from gradlab.recorder import Recorder

pytestmark = pytest.mark.library

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"


def test_the_breakdown_counts_each_hook_per_step_and_restores_the_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    run = load_module(RUN, "gradlab_benchmarks_run", monkeypatch)
    before = {name: Recorder.__dict__[name] for name in (*run._TIMED, "record_backward")}
    table = run.breakdown_track(course.batches(4, seed=0), rounds=1)
    calls = dict(re.findall(r"^\| inside (\S+)[^|]*\| [\d.]+ \| ([\d.]+) \|$", table, re.M))
    # The corrected loop, per step: two small networks save 13 tensors, which one
    # backward unpacks; two optimizers step once each.
    assert calls == {
        "pack": "13.0",
        "unpack": "13.0",
        "record_backward": "1.0",
        "step_started": "2.0",
        "step_finished": "2.0",
    }
    assert "| the rest:" in table
    assert {name: Recorder.__dict__[name] for name in before} == before
