"""gradlab.course.environment(): versions, Graphviz found or not, install hints."""

from __future__ import annotations

import importlib
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.course

# The module, not the function of the same name that gradlab re-exports.
envmod = importlib.import_module("gradlab.course.readiness")


def _fake_dot(folder: Path, version: str = "9.1.0") -> None:
    dot = folder / "dot"
    dot.write_text(f"#!/bin/sh\necho 'dot - graphviz version {version} (20240101.0000)' >&2\n")
    dot.chmod(dot.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def no_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH holds only an empty folder: `dot` cannot be found."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.skipif(sys.platform == "win32", reason="fake dot is a shell script")
def test_dot_found_with_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_dot(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    report = envmod.environment()
    assert report.graphviz_found
    assert report.dot_version == "9.1.0"
    assert "9.1.0" in str(report)
    assert "apt-get install graphviz" not in str(report)
    assert "apt-get" not in report._repr_html_()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_real_dot_is_found() -> None:
    report = envmod.environment()
    assert report.graphviz_found
    assert report.dot_version and report.dot_version[0].isdigit()


def test_dot_missing_gives_install_lines(no_dot: None) -> None:
    report = envmod.environment()
    assert not report.graphviz_found
    assert report.dot_version is None
    text, page = str(report), report._repr_html_()
    for line in ("sudo apt-get install graphviz", "brew install graphviz", "conda install -c conda-forge graphviz"):
        assert line in text
        assert line in page
    assert "not found" in text


def test_summary_is_the_same_with_or_without_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The start notebook prints summary(); its stored output must match on every machine.
    monkeypatch.setenv("PATH", str(tmp_path))
    without = envmod.environment().summary()
    _fake_dot(tmp_path)
    with_dot = envmod.environment().summary()
    assert without == with_dot
    assert without.endswith(": ready")
    assert os.sep + "tmp" not in without


def test_versions_are_reported() -> None:
    import torch

    import gradlab

    report = envmod.environment()
    assert report.ready
    assert report.gradlab == gradlab.__version__
    assert report.torch == torch.__version__.split("+")[0]
    assert report.python == ".".join(map(str, sys.version_info[:3]))
    assert report.summary() == f"torch {report.torch}, gradlab {gradlab.__version__}: ready"


def test_old_or_missing_torch_is_not_ready() -> None:
    old = envmod.EnvironmentReport(python="3.11.0", torch="2.1.0", gradlab="0.1.0", dot_version=None, ipywidgets=None)
    assert not old.ready and "not ready" in old.summary()
    missing = envmod.EnvironmentReport(python="3.11.0", torch=None, gradlab="0.1.0", dot_version=None, ipywidgets=None)
    assert not missing.ready and "make setup" in missing.summary()
    assert "not installed" in str(missing)


def test_html_escapes_values() -> None:
    report = envmod.EnvironmentReport(
        python="3.11.0", torch="2.13.0", gradlab="<b>", dot_version="2.43.0", ipywidgets="8.1.9"
    )
    assert "<b>" not in report._repr_html_().replace("<table>", "")
    assert "&lt;b&gt;" in report._repr_html_()


def test_setup_stores_notebook_figures_at_print_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """course.setup() in a kernel: figures as retina PNG, twice the pixels at the same display size."""
    import base64

    import IPython
    from IPython.core.getipython import get_ipython as current
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    from gradlab import course

    # the shell matplotlib_inline configures (another test of the process may have made one already)
    shell = current() or InteractiveShell.instance()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    # a kernel's formatter makes every type; a terminal test shell (IPython's global one) only text/plain
    monkeypatch.setattr(shell.display_formatter, "active_types", list(shell.display_formatter.format_types))
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    figure = Figure(figsize=(4, 2), dpi=100)
    figure.add_subplot().plot([0, 1], [1, 0])
    try:
        course.setup(seed=0)
        data, metadata = shell.display_formatter.format(figure)
        png = data["image/png"]
        png = base64.b64decode(png) if isinstance(png, str) else png  # IPython stores it as base64 text
        width = int.from_bytes(png[16:20], "big")
        assert metadata["image/png"]["width"] * 2 == width, (metadata, width)
        assert width >= 700, "about 400 px on screen, twice that in the notebook's file"
    finally:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
        InteractiveShell.clear_instance()


def test_setup_outside_a_kernel_changes_no_display_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython

    from gradlab import course

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    course.setup(seed=0)  # a script: nothing to select, no error
