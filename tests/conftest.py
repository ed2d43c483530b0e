"""Shared pytest configuration: what each test file tests, declared by the file itself.

Each ``tests/test_*.py`` says what it tests with a module marker
(``pytestmark``), one of:

* ``library``: the gradlab library alone (it may use the course's networks as
  data). ``make test-fast`` runs ``-m "library and not slow"``; ``make
  test-torch``, ``test-python`` and ``test-matrix`` run ``-m library`` on other
  torch releases and Pythons.
* ``course``: the course (notebooks, exercises, handout, workshop recipe,
  Binder, Colab, the lab).
* ``hub``: a real workshop JupyterHub with learner accounts.

and ``slow`` as well when it starts processes, browsers or hubs. A test file
that declares none of the three stops the run with a message: a new file never
falls out of ``make test-fast`` (or into it) unseen. Doctests need no marker:
those of ``gradlab/`` are library tests, those of ``gradlab/course/`` course
tests; the notebooks are course tests.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

# tests/scripts/ holds training scripts that test_cli.py runs in subprocesses;
# importing them (e.g. for --doctest-modules) would run them.
# tests/corpus/cases/ holds the corpus's failing scripts, for the same reason.
collect_ignore = ["scripts", "corpus"]

ROOT = Path(__file__).resolve().parent.parent

#: What a test can be about: every test file declares one (see the module docstring).
KINDS = ("library", "course", "hub")


#: Lines a test asks to show in the terminal summary (the corpus judge's figures); not shown under xdist.
SUMMARY_LINES = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SUMMARY_LINES] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for line in config.stash.get(SUMMARY_LINES, []):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def summary_lines(pytestconfig: pytest.Config) -> list[str]:
    """Append a line here to have it printed in the terminal summary."""
    return pytestconfig.stash[SUMMARY_LINES]


@pytest.fixture
def ipython() -> object:
    """IPython's global test shell (started once per process, then reused)."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    return start_ipython() or get_ipython()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    undeclared: set[str] = set()
    library, course = ROOT / "gradlab", ROOT / "gradlab" / "course"
    for item in items:
        path = Path(item.path)
        if path.is_relative_to(course) or path.suffix == ".ipynb":
            item.add_marker(pytest.mark.course)
        elif path.is_relative_to(library):
            item.add_marker(pytest.mark.library)
        elif not any(item.get_closest_marker(kind) for kind in KINDS):
            undeclared.add(str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path))
    if undeclared:
        raise pytest.UsageError(
            "these test files declare none of the markers "
            + ", ".join(KINDS)
            + ": "
            + ", ".join(sorted(undeclared))
            + "; add pytestmark = pytest.mark.library (or course, or hub; with pytest.mark.slow if it starts "
            "processes) after the imports (tests/conftest.py says which is which)"
        )


# Private torch features gradlab degrades without (gradlab/internals.py warns once and says what it
# can no longer tell). Measured absent on torch 2.4.1, present on 2.10 to 2.15; a test that needs one
# is skipped only where it is absent *and* torch is older than 2.10, so a newer torch that drops one
# still fails its canary in tests/test_internals.py.
def _has(feature: str) -> bool:
    from gradlab import internals

    return internals.check_all().get(feature, False)


_OLD_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 10)
needs_raw_saved = pytest.mark.skipif(
    _OLD_TORCH and not _has("raw_saved"),
    reason=f"torch {torch.__version__} has no _raw_saved_*.data: gradlab cannot read a stale saved tensor's view origin",
)
needs_input_metadata = pytest.mark.skipif(
    _OLD_TORCH and not _has("input_metadata"),
    reason=f"torch {torch.__version__} has no Node._input_metadata",
)
needs_hooks_stack = pytest.mark.skipif(
    not hasattr(torch._C._autograd, "_top_saved_tensors_default_hooks"),
    reason=f"torch {torch.__version__} cannot show its saved-tensor hook stack to a test",
)


#: gradlab's own files: the checkout itself may sit in a folder named gradlab, as a user's `git clone` makes it
PACKAGE_DIR = str(Path(__file__).resolve().parent.parent / "gradlab") + "/"
_GRADLAB_WORDS = re.compile(r"\bgradlab: |\b(GradlabWarning|UnusedStepWarning|SilentWriteWarning)\b")


def gradlab_spoke(text: str) -> bool:
    """Whether ``text`` (a run's stderr) has a word of gradlab's: its note, one of its warnings, a frame of its files.

    A path that merely passes through a folder named gradlab (the checkout's) does not count.
    """
    return PACKAGE_DIR in text or _GRADLAB_WORDS.search(text) is not None


#: What torchrun prints when gloo's teardown aborts a rank (C++'s words, then the agent's report of SIGABRT).
GLOO_ABORT = ("terminate called without an active exception", "Signal 6 (SIGABRT)")


def gloo_retried(
    run: Callable[[], subprocess.CompletedProcess[str]], attempts: int = 8
) -> subprocess.CompletedProcess[str]:
    """``run()`` (a torchrun command), run again while gloo's teardown in destroy_process_group() aborted a rank.

    That abort happens now and then on CPU, with or without gradlab (torch 2.13: about 1 run in 8 measured alone;
    three in a row once, in a full test run on two busy cores, and five in a row, on the plain python run, in a
    fresh-clone CI run of 2026-12-07; torch 2.15 too). Any other failure is returned at
    once, as is the last attempt's.
    """
    result = run()
    for _attempt in range(attempts - 1):
        if result.returncode == 0 or not any(sign in result.stderr for sign in GLOO_ABORT):
            break
        result = run()
    return result
