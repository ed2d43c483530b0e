"""Committed notebooks are clean: executed in order, no volatile or machine data.

The rules live in tools/execute_notebooks.py (`problems`), next to the code
that makes notebooks clean; fix a failure with `make notebooks`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from loading import load_module

pytestmark = pytest.mark.course

REPO = Path(__file__).resolve().parent.parent


tool = load_module(REPO / "tools" / "execute_notebooks.py", "execute_notebooks")
NOTEBOOKS = tool.course_notebooks(REPO / "notebooks")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_clean(path: Path) -> None:
    found = tool.problems(path)
    assert not found, f"{path.name} (fix: make notebooks):\n" + "\n".join(found)


def test_start_notebook_exists() -> None:
    assert tool.INDEX in [p.name for p in NOTEBOOKS]


def _course(folder: Path, cells: list[nbformat.NotebookNode]) -> Path:
    """Write a one-notebook course in ``folder``; return the notebook's path."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 00 · Start here"), *cells])
    for number, cell in enumerate(nb.cells):
        cell.id = f"c{number}"
    nb.metadata["kernelspec"] = dict(tool.KERNELSPEC)
    nb.metadata["language_info"] = dict(tool.LANGUAGE_INFO)
    path = folder / tool.INDEX
    nbformat.write(nb, path)
    tool.set_navigation(nb, tool.expected_navigation(path))
    tool.set_colab(nb, path, renumber=True)
    nbformat.write(nb, path)
    return path


def _code(source: str, count: int | None, text: str = "") -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, execution_count=count)
    if text:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return cell


def test_clean_notebook_passes(tmp_path: Path) -> None:
    path = _course(tmp_path, [_code("print(1)", 1, "1\n"), _code("", None), _code("x = 2", 2)])
    assert tool.problems(path) == []


def test_checker_reports_a_bad_notebook(tmp_path: Path) -> None:
    timed = _code("print(1)", 2, "1\n")
    timed.metadata["execution"] = {"iopub.execute_input": "2024-01-01T00:00:00.000Z"}
    timed.metadata["ExecuteTime"] = {"end_time": "2024-01-01T00:00:01.000Z"}
    leaky = _code("import os", 1, "saved to /tmp/xyz and /home/me\n")
    unnumbered = _code("print(2)", None, "2\n")
    path = _course(tmp_path, [timed, leaky, unnumbered])
    nb = nbformat.read(path, as_version=4)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.metadata["language_info"]["version"] = "3.11.7"
    nbformat.write(nb, path)

    report = "\n".join(tool.problems(path))

    for expected in (
        "'execution'",
        "'ExecuteTime'",
        "'widgets'",
        "Python version",
        "'/tmp/'",
        "'/home/'",
        "outputs but no execution count",
        "execution counts are [1, 3, 2, None]",
    ):
        assert expected in report, f"not reported: {expected}\n{report}"


def test_checker_reports_missing_or_stale_navigation(tmp_path: Path) -> None:
    path = _course(tmp_path, [_code("x = 1", 1)])
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].source += " | [stale](01_gone.ipynb)"
    nbformat.write(nb, path)
    assert any("out of date" in p for p in tool.problems(path))

    nb.cells.pop()
    nbformat.write(nb, path)
    assert any("not the navigation cell" in p for p in tool.problems(path))


def test_navigation_links_neighbours_and_index() -> None:
    names = ["00_start_here.ipynb", "01_a.ipynb", "02_b.ipynb", "03_c.ipynb"]
    titles = ["00 · Start", "01 · A", "02 · B", "03 · C"]
    assert tool.navigation_source(names, titles, "00_start_here.ipynb") == "---\n[01 · A →](01_a.ipynb)"
    assert tool.navigation_source(names, titles, "02_b.ipynb") == (
        "---\n[← 01 · A](01_a.ipynb) | [Index: 00 · Start](00_start_here.ipynb) | [03 · C →](03_c.ipynb)"
    )
    assert tool.navigation_source(names, titles, "03_c.ipynb").endswith("[Index: 00 · Start](00_start_here.ipynb)")


def test_sanitize_rules_are_idempotent() -> None:
    rules = tool.sanitize_rules()
    assert len(rules) >= 4
    sample = (
        "File /tmp/ipykernel_4242/123456.py:3 at 0x7f3a2c1d5e80 took 1.25 s\n"
        "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py:825: UserWarning"
    )
    once = tool.clean_text(sample, rules)
    assert "/tmp/" not in once and "ipykernel_" not in once and "0x7f" not in once
    assert "<site-packages>/torch/autograd/graph.py" in once
    assert tool.clean_text(once, rules) == once


EDITIONS = [*NOTEBOOKS, *tool.course_notebooks(REPO / "notebooks" / "zh")]


@pytest.mark.parametrize("path", EDITIONS, ids=[p.relative_to(REPO / "notebooks").as_posix() for p in EDITIONS])
def test_each_notebook_opens_in_colab_and_installs_only_there(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(path, as_version=4)
    link, setup = nb.cells[0], nb.cells[1]
    url = f"https://colab.research.google.com/github/gradlab/gradlab/blob/main/{path.relative_to(REPO).as_posix()}"
    assert link.cell_type == "markdown" and f"]({url})" in link.source
    assert setup.cell_type == "code" and setup.outputs == []
    assert '"google.colab" in sys.modules' in setup.source and tool.COLAB_SOURCE in setup.source
    assert re.search(r"@v\d+\.\d+\.\d+\"", setup.source), "the install is pinned to a release tag, never a branch"
    ran: list[object] = []
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    exec(compile(setup.source, f"{path.name}: colab cell", "exec"), {})
    assert ran == [], "outside Colab the first cell runs nothing"


def test_the_readmes_link_every_notebook_in_colab() -> None:
    for readme, folders in (
        ("README.md", ("notebooks", "notebooks/zh")),
        ("README.zh-CN.md", ("notebooks/zh", "notebooks")),
    ):
        text = (REPO / readme).read_text(encoding="utf-8")
        linked = set(
            re.findall(r"colab\.research\.google\.com/github/gradlab/gradlab/blob/main/([^)\s]+\.ipynb)", text)
        )
        for folder in folders:
            for path in tool.course_notebooks(REPO / folder):
                assert f"{folder}/{path.name}" in linked, f"{readme} has no Colab link to {folder}/{path.name}"
        assert all((REPO / p).is_file() for p in linked), f"{readme} links a notebook that is not committed"
