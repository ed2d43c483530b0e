"""Shared pytest configuration: which tests are the library's, and which are slow.

``make test-fast`` runs ``-m "library and not slow"``: the library's unit tests
and doctests, without subprocesses, browsers or notebooks. ``make test-torch``
runs ``-m library`` against another torch release.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

# tests/scripts/ holds training scripts that test_cli.py runs in subprocesses;
# importing them (e.g. for --doctest-modules) would run them.
# tests/corpus/cases/ holds the corpus's failing scripts, for the same reason.
collect_ignore = ["scripts", "corpus"]

ROOT = Path(__file__).resolve().parent.parent

#: Test files that test the gradlab library (they may use the course's networks as data).
LIBRARY_TESTS = frozenset(
    {
        "test_causes.py",
        "test_causes_unseen.py",
        "test_recorded_intent.py",
        "test_cli.py",
        "test_corpus.py",
        "test_ddp.py",
        "test_double_backward_custom.py",
        "test_edits.py",
        "test_fix.py",
        "test_draw.py",
        "test_explain.py",
        "test_fail_open.py",
        "test_family.py",
        "test_fonts.py",
        "test_i18n.py",
        "test_inspectors.py",
        "test_intent.py",
        "test_notes.py",
        "test_packaging.py",
        "test_internals.py",
        "test_inplace_coverage.py",
        "test_layout.py",
        "test_memory.py",
        "test_messages.py",
        "test_never_masks.py",
        "test_no_leaks.py",
        "test_observation_only.py",
        "test_plots.py",
        "test_properties.py",
        "test_python_versions.py",
        "test_session.py",
        "test_silent_writes.py",
        "test_silent_writes_cli.py",
        "test_tracker_sees.py",
    }
)

#: Test files that start processes (python, JupyterLab, Chromium, a hub) or print PDFs.
SLOW_TESTS = frozenset(
    {
        "test_binder.py",
        "test_browser.py",
        "test_causes.py",
        "test_recorded_intent.py",
        "test_cli.py",
        "test_colab.py",
        "test_corpus.py",
        "test_ddp.py",
        "test_field_guide.py",
        "test_fix.py",
        "test_handout.py",
        "test_lab.py",
        "test_packaging.py",
        "test_silent_writes_cli.py",
        "test_workshop.py",
    }
)


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
    for item in items:
        path = Path(item.path)
        if path.name in LIBRARY_TESTS or (
            path.suffix == ".py" and path.is_relative_to(ROOT / "gradlab") and "course" not in path.parts
        ):
            item.add_marker(pytest.mark.library)
        if path.name in SLOW_TESTS or path.name.startswith(("test_workshop", "test_handout")):
            item.add_marker(pytest.mark.slow)


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
