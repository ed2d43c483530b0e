"""SIZING.md is what the committed session runs give, and the per-learner model holds for each run.

The runs themselves (``make hub-session``) need root and real JupyterHub processes; this reads their
committed results (workshop/results/) and needs neither.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import workshop_sizing  # noqa: E402

pytestmark = [pytest.mark.course, pytest.mark.slow]

COURSE = sorted(path.name for path in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def runs() -> list[workshop_sizing.Run]:
    return [workshop_sizing.load(n) for n in workshop_sizing.RUNS]


def test_sizing_md_is_generated_from_the_committed_results() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "workshop_sizing.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_each_run_is_the_course_as_it_is_every_notebook_of_one_edition(runs: list[workshop_sizing.Run]) -> None:
    assert [run.learners for run in runs] == [1, 10, 30]
    for run in runs:
        assert [Path(path).name for path in run.report["notebooks"]] == COURSE, run.learners
        # Every learner ran their notebooks, or the run names what stopped them.
        accounts = set(run.report["learner_cpu_s"])
        assert len(accounts) == run.learners
        for name in accounts - set(run.per_learner):
            assert any(problem.startswith(f"{name}: ") for problem in run.report["problems"]), name
        ran = {Path(nb).name for data in run.per_learner.values() for nb in data.get("notebooks", {})}
        assert ran == set(COURSE), run.learners
        # Once the learners left, the culling stopped every kernel.
        assert run.samples[-1]["kernels"] == 0, run.learners


def test_the_per_learner_memory_model_holds_for_every_run(runs: list[workshop_sizing.Run]) -> None:
    model = workshop_sizing.model_from(runs[0])
    assert 100 < model.server_mb < 200 and 200 < model.kernel_mb < 500 and model.cpu_s > 60
    for run in runs:
        result = workshop_sizing.check(model, run)
        assert workshop_sizing.memory_holds(result), (run.learners, result)


def test_the_cpu_model_holds_where_sizing_md_says_it_does(runs: list[workshop_sizing.Run]) -> None:
    # N = 1 and N = 10 ran the whole course; N = 30 (each learner a third of it, 48 minutes at a
    # load average over 60) costs more per learner than the model says, and SIZING.md says why.
    model = workshop_sizing.model_from(runs[0])
    verdicts = {run.learners: workshop_sizing.check(model, run) for run in runs}
    assert workshop_sizing.cpu_holds(verdicts[1]) and workshop_sizing.cpu_holds(verdicts[10])
    assert verdicts[30]["cpu_ratio"] > workshop_sizing.CPU_BAND[1], "the model underestimates it"
    text = workshop_sizing.SIZING.read_text(encoding="utf-8")
    assert "| holds / **does not hold** |" in text and "where the model's CPU check fails at N = 30" in text


def test_a_drifted_sizing_md_is_caught(runs: list[workshop_sizing.Run]) -> None:
    text = workshop_sizing.SIZING.read_text(encoding="utf-8")
    rendered = workshop_sizing.render(text, runs)
    assert rendered == text
    tampered = text.replace("| N = 30 |", "| N = 31 |", 1)
    assert tampered != text and workshop_sizing.render(tampered, runs) == text
