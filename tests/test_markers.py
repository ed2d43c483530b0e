"""Which tests run where: every test file declares library, course or hub, and collection never breaks.

``make test-fast`` selects ``-m "library and not slow"``, the matrix ``-m library``
(tests/conftest.py). A file that declares none of the three stops the run, so it
cannot fall out of those selections unseen; the workshop's tests skip, with a
reason, where jupyterhub is not installed, instead of breaking collection for
every run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.library, pytest.mark.slow]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _pytest(*args: str, cwd: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}import sys, pytest; sys.exit(pytest.main({list(args)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=600, env=_env()
    )


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def test_every_test_file_declares_what_it_tests() -> None:
    """The declaration is in each file (pytestmark), read the way pytest reads it."""
    kinds = {"library", "course", "hub"}
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        declared = {kind for kind in kinds if f"pytest.mark.{kind}" in text.split("\ndef ", 1)[0]}
        assert len(declared) == 1, f"{path.name}: {sorted(declared)}"


def test_a_file_without_a_declaration_stops_the_run(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(TESTS / "conftest.py", tests / "conftest.py")
    (tests / "test_declared.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.library\n\n\ndef test_one():\n    assert True\n"
    )
    (tests / "test_forgotten.py").write_text("def test_two():\n    assert True\n")
    r = _pytest("-p", "no:cacheprovider", "-p", "no:xdist", "-q", "tests", cwd=tmp_path)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "declare none of the markers library, course, hub: tests/test_forgotten.py" in r.stderr
    (tests / "test_forgotten.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.course\n\n\ndef test_two():\n    assert True\n"
    )
    r = _pytest("-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-m", "library", "tests", cwd=tmp_path)
    assert r.returncode == 0 and "1 passed, 1 deselected" in r.stdout, r.stdout + r.stderr


def test_the_advice_tests_are_library_tests() -> None:
    r = _pytest(
        "-p", "no:cacheprovider", "-p", "no:xdist", "--collect-only", "-q", "-m", "library and not slow",
        "tests/test_advice.py", cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "tests/test_advice.py::" in r.stdout and "deselected" not in r.stdout.splitlines()[-1]


def test_without_jupyterhub_the_workshop_tests_skip_with_a_reason() -> None:
    prelude = textwrap.dedent(
        """\
        import sys
        sys.modules["jupyterhub"] = None  # as if it were not installed: importing it raises ImportError
        """
    )
    r = _pytest(
        "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rs",
        "tests/test_workshop.py", "tests/test_workshop_hub.py", "tests/test_markers.py::test_every_test_file_declares_what_it_tests",
        cwd=ROOT, prelude=prelude,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "1 passed, 2 skipped" in out and "errors" not in out
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    for name in ("test_workshop.py", "test_workshop_hub.py"):  # each with its reason, naming what is missing
        assert any(f"tests/{name}:" in line and "JupyterHub" in line for line in skipped), skipped
