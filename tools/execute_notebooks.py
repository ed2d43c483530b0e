#!/usr/bin/env python
"""Re-execute the course notebooks in place, reproducibly (`make notebooks`).

For each notebook (default: every ``notebooks/[0-9][0-9]_*.ipynb``):

1. the last cell becomes the generated navigation cell (tag ``navigation``:
   "← previous | index | next →" from the sorted notebook list and titles),
   and the first two become the generated Colab cells (tag ``colab``): an
   "Open in Colab" link, and a code cell that installs the course when it runs
   in Colab and does nothing elsewhere;
2. a fresh ``python3`` kernel of this environment runs it top to bottom, with
   cwd ``notebooks/`` and ``PYTHONHASHSEED=0``; only cells tagged
   ``raises-exception`` may raise;
3. volatile data is removed: execution timing, widget state, the Python
   patch version, and machine paths in outputs (the rules of
   ``tests/nbval_sanitize.cfg``, plus this checkout's own paths).

``--check`` runs nothing and lists what is not clean (tests/test_notebooks_clean.py
runs the same check on every committed notebook); ``--navigation-only`` only
rewrites the navigation cells, e.g. after a notebook was added or renamed.

Usage::

    python tools/execute_notebooks.py                      # all notebooks
    python tools/execute_notebooks.py notebooks/03_*.ipynb # some
    python tools/execute_notebooks.py --check
    python tools/execute_notebooks.py --navigation-only
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
SANITIZE_CFG = REPO / "tests" / "nbval_sanitize.cfg"
INDEX = "00_start_here.ipynb"
NAVIGATION_TAG = "navigation"
NAVIGATION_ID = "navigation"
PATTERN = "[0-9][0-9]_*.ipynb"

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# language_info as ipykernel reports it, minus "version" (the patch release varies).
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
}
#: Cell metadata written by execution (nbclient, JupyterLab, the classic ExecuteTime extension).
VOLATILE_CELL_METADATA = ("execution", "ExecuteTime")
#: Notebook metadata that changes on every run or machine.
VOLATILE_NOTEBOOK_METADATA = ("widgets", "papermill")
#: Strings that reveal a machine path in a committed output.
MACHINE_PATH_MARKERS = ("/tmp/", "/root/", "/home/", "/Users/", "ipykernel_")
#: Environment of every kernel, on top of the caller's.
KERNEL_ENV = {
    "PYTHONHASHSEED": "0",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # no debugger warning on stderr
    "JUPYTER_PLATFORM_DIRS": "1",
    "SOURCE_DATE_EPOCH": "0",  # matplotlib: no dates in saved figures
    "TZ": "UTC",
}


# ----------------------------------------------------------------- navigation


def course_notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    """The course notebooks in order: ``NN_name.ipynb``, sorted by name."""
    return sorted(folder.glob(PATTERN))


def title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """Text of the first ``# `` heading in the notebook's markdown cells."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return fallback


def _link(text: str, target: str) -> str:
    text = text.replace("[", r"\[").replace("]", r"\]")
    return f"[{text}]({target})"


#: The index link's label in each edition's folder (notebooks/ is English, notebooks/zh/ Chinese).
INDEX_LABELS = {"en": "Index", "zh": "目录"}


def edition(folder: Path) -> str:
    """``zh`` for notebooks/zh/, ``en`` otherwise."""
    return "zh" if folder.name == "zh" else "en"


def navigation_source(names: Sequence[str], titles: Sequence[str], current: str, index_label: str = "Index") -> str:
    """Markdown of the navigation cell of ``current`` among ``names``.

    The index link is left out where the previous link already points there.

    Example::

        >>> names = ["00_start_here.ipynb", "01_a.ipynb", "02_b.ipynb"]
        >>> print(navigation_source(names, ["00 Start", "01 A", "02 B"], "02_b.ipynb"))
        ---
        [← 01 A](01_a.ipynb) | [Index: 00 Start](00_start_here.ipynb)
    """
    names = list(names)
    position = names.index(current)
    index_title = titles[names.index(INDEX)] if INDEX in names else index_label
    parts = []
    if position > 0:
        parts.append(_link(f"← {titles[position - 1]}", names[position - 1]))
    previous = names[position - 1] if position > 0 else None
    if INDEX not in (current, previous):
        separator = "：" if index_label == INDEX_LABELS["zh"] else ": "
        parts.append(_link(f"{index_label}{separator}{index_title}", INDEX))
    if position + 1 < len(names):
        parts.append(_link(f"{titles[position + 1]} →", names[position + 1]))
    return "---\n" + " | ".join(parts)


def navigation_cell(source: str) -> nbformat.NotebookNode:
    """The navigation markdown cell, with a fixed id so reruns give equal files."""
    cell = nbformat.v4.new_markdown_cell(source, metadata={"tags": [NAVIGATION_TAG]})
    cell.id = NAVIGATION_ID
    return cell


def is_navigation(cell: nbformat.NotebookNode) -> bool:
    return NAVIGATION_TAG in cell.get("metadata", {}).get("tags", [])


def expected_navigation(path: Path, folder: Path | None = None) -> str:
    """Navigation source ``path`` should end with, from the notebooks next to it."""
    folder = folder or path.parent
    paths = course_notebooks(folder)
    names = [p.name for p in paths]
    titles = [title(nbformat.read(p, as_version=4), p.stem) for p in paths]
    return navigation_source(names, titles, path.name, INDEX_LABELS[edition(folder)])


def set_navigation(nb: nbformat.NotebookNode, source: str) -> None:
    """Remove any navigation cell and append a fresh one as the last cell."""
    nb.cells = [cell for cell in nb.cells if not is_navigation(cell)]
    nb.cells.append(navigation_cell(source))


# ---------------------------------------------------------------------- Colab

COLAB_TAG = "colab"
#: The repository on GitHub, as Colab opens it and pip installs from it.
GITHUB_REPO = "gradlab/gradlab"


def _version() -> str:
    """gradlab's ``__version__``, read from the source (this script must not import gradlab)."""
    text = (REPO / "gradlab" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    assert found, "gradlab/__init__.py has no __version__ line"
    return found[1]


#: What the Colab cell installs: the course at the release tag of this version (a pinned ref, never a branch).
COLAB_SOURCE = f"torch-gradlab[colab] @ git+https://github.com/{GITHUB_REPO}@v{_version()}"

#: The Colab cells' words in each edition.
COLAB_WORDS = {
    "en": {
        "badge": "Open in Colab",
        "link": "Run this notebook in Google Colab (the first code cell installs the course there).",
        "comment": "# In Colab only: install the course beside Colab's own torch (pip may not replace it); elsewhere: nothing",
        "keep": "# the torch Colab installed, exactly",
    },
    "zh": {
        "badge": "在 Colab 中打开",
        "link": "在 Google Colab 中运行本笔记本（第一个代码单元格会在那里安装课程）。",
        "comment": "# 仅在 Colab 中：在 Colab 自带的 torch 旁安装课程（pip 不得替换它），在其他地方什么也不做",
        "keep": "# 原样保留 Colab 装好的 torch",
    },
}


def colab_url(path: Path) -> str:
    """The Colab address of the committed notebook at ``path`` (either edition)."""
    try:
        relative = path.resolve().relative_to(REPO).as_posix()
    except ValueError:  # a notebook outside the checkout (a test's): where it would be committed
        relative = f"notebooks/{'zh/' if edition(path.parent) == 'zh' else ''}{path.name}"
    return f"https://colab.research.google.com/github/{GITHUB_REPO}/blob/main/{relative}"


def colab_cells(path: Path) -> list[nbformat.NotebookNode]:
    """The two generated first cells of ``path``: the "Open in Colab" link and the install cell (fixed ids)."""
    words = COLAB_WORDS[edition(path.parent)]
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    link = nbformat.v4.new_markdown_cell(
        f"[![{words['badge']}]({badge})]({colab_url(path)}) {words['link']}", metadata={"tags": [COLAB_TAG]}
    )
    link.id = "colab-link"
    code = nbformat.v4.new_code_cell(
        f"""{words["comment"]}
import sys

if "google.colab" in sys.modules:
    import subprocess
    from importlib.metadata import version

    course = "{COLAB_SOURCE}"
    keep = f"torch=={{version('torch')}}"  {words["keep"]}
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", course, keep], check=True)""",
        metadata={"tags": [COLAB_TAG]},
    )
    code.id = "colab-setup"
    return [link, code]


def is_colab(cell: nbformat.NotebookNode) -> bool:
    return COLAB_TAG in cell.get("metadata", {}).get("tags", [])


def is_generated(cell: nbformat.NotebookNode) -> bool:
    """A cell this script writes (navigation, Colab): never edited or translated by hand."""
    return is_navigation(cell) or is_colab(cell)


def set_colab(nb: nbformat.NotebookNode, path: Path, renumber: bool = False) -> None:
    """Put fresh Colab cells first (replacing old ones).

    ``renumber``: without executing, give the install cell execution count 1 and move every
    later count up by one, as a run would (the install cell prints nothing outside Colab).
    """
    old = next((c for c in nb.cells if is_colab(c) and c.cell_type == "code"), None)
    nb.cells = [c for c in nb.cells if not is_colab(c)]
    link, code = colab_cells(path)
    nb.cells[:0] = [link, code]
    if not renumber:
        return
    if old is not None:
        code.execution_count = old.execution_count
        return
    code.execution_count = 1
    for cell in nb.cells[2:]:
        if cell.cell_type == "code" and cell.execution_count is not None:
            cell.execution_count += 1
            for output in cell.outputs:
                if output.get("execution_count") is not None:
                    output["execution_count"] += 1


# ------------------------------------------------------------------ cleaning


def sanitize_rules(cfg: Path = SANITIZE_CFG) -> list[tuple[str, str]]:
    """The (regex, replacement) pairs of the nbval sanitize file, in order."""
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", cfg.read_text(), flags=re.MULTILINE)


def _local_paths() -> list[tuple[str, str]]:
    """This machine's paths that may appear in tracebacks, longest first."""
    pairs = [(str(REPO) + os.sep, "")]
    for prefix in {sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"]}:
        pairs.append((str(Path(prefix)) + os.sep, "<python>/"))
    pairs.append((str(Path.home()) + os.sep, "~/"))
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def clean_text(text: str, rules: Iterable[tuple[str, str]]) -> str:
    """Apply the sanitize rules, then replace this machine's own paths."""
    for regex, replacement in rules:
        text = re.sub(regex, replacement, text)
    for path, replacement in _local_paths():
        text = text.replace(path, replacement)
    return text


def _map_output_text(output: nbformat.NotebookNode, fix: Any) -> None:
    if "text" in output:
        output.text = fix(output.text)
    if "traceback" in output:
        output.traceback = [fix(line) for line in output.traceback]
    for key, value in output.get("data", {}).items():
        if key.startswith("text/") and isinstance(value, str):
            output.data[key] = fix(value)


def strip_volatile(nb: nbformat.NotebookNode, rules: Sequence[tuple[str, str]]) -> None:
    """Remove what changes between runs and machines (in place)."""
    for key in VOLATILE_NOTEBOOK_METADATA:
        nb.metadata.pop(key, None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = dict(LANGUAGE_INFO)
    for number, cell in enumerate(nb.cells):
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        if "id" not in cell and nb.get("nbformat_minor", 0) >= 5:
            cell.id = f"cell-{number}"
        for output in cell.get("outputs", []):
            output.get("metadata", {}).pop("execution", None)
            _map_output_text(output, lambda text: clean_text(text, rules))


def _output_strings(output: nbformat.NotebookNode) -> list[str]:
    strings: list[str] = []
    _map_output_text(output, lambda text: strings.append(text) or text)
    return strings


def problems(path: Path, navigation: str | None = None) -> list[str]:
    """What is not clean in the notebook at ``path`` (empty list: clean).

    Args:
        path: the notebook.
        navigation: the navigation source it should end with; default: the
            one generated from the notebooks next to it.
    """
    nb = nbformat.read(path, as_version=4)
    found: list[str] = []
    for key in VOLATILE_NOTEBOOK_METADATA:
        if key in nb.metadata:
            found.append(f"notebook metadata has volatile '{key}'")
    if "version" in nb.metadata.get("language_info", {}):
        found.append("notebook metadata language_info has the Python version")
    if nb.metadata.get("kernelspec") != KERNELSPEC:
        found.append(f"kernelspec is {nb.metadata.get('kernelspec')}, expected {KERNELSPEC}")
    counts = []
    for number, cell in enumerate(nb.cells, start=1):
        where = f"cell {number}"
        for key in VOLATILE_CELL_METADATA:
            if key in cell.metadata:
                found.append(f"{where}: volatile metadata '{key}'")
        if cell.cell_type != "code":
            continue
        if cell.source.strip():
            counts.append(cell.execution_count)
        elif cell.execution_count is not None:
            found.append(f"{where}: empty cell with execution count {cell.execution_count}")
        if cell.outputs and cell.execution_count is None:
            found.append(f"{where}: outputs but no execution count")
        for output in cell.outputs:
            for text in _output_strings(output):
                for marker in MACHINE_PATH_MARKERS:
                    if marker in text:
                        found.append(f"{where}: machine path '{marker}' in an output")
    if counts != list(range(1, len(counts) + 1)):
        found.append(
            f"execution counts are {counts}, expected 1..{len(counts)} in order "
            "(run it with tools/execute_notebooks.py)"
        )
    if not nb.cells or not is_navigation(nb.cells[-1]):
        found.append("last cell is not the navigation cell (tag 'navigation')")
    else:
        expected = navigation if navigation is not None else expected_navigation(path)
        if nb.cells[-1].source != expected:
            found.append("navigation cell is out of date (run tools/execute_notebooks.py)")
    if sum(is_navigation(cell) for cell in nb.cells) > 1:
        found.append("more than one navigation cell")
    expected_colab = colab_cells(path)
    shown_colab = [(c.cell_type, c.source) for c in nb.cells[:2] if is_colab(c)]
    if shown_colab != [(c.cell_type, c.source) for c in expected_colab]:
        found.append("the first two cells are not the current Colab cells (run tools/execute_notebooks.py)")
    if sum(is_colab(cell) for cell in nb.cells) != 2:
        found.append("expected exactly two Colab cells (tag 'colab')")
    return found


# ----------------------------------------------------------------- execution


def execute(path: Path, navigation: str, rules: Sequence[tuple[str, str]], timeout: int) -> None:
    """Regenerate navigation, run ``path`` in a fresh kernel, clean it, save it."""
    nb = nbformat.read(path, as_version=4)
    set_navigation(nb, navigation)
    set_colab(nb, path)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout,
        allow_errors=False,  # except cells tagged raises-exception
        record_timing=False,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    env = {**os.environ, **KERNEL_ENV}
    # The kernel must import this checkout's gradlab even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    client.execute(env=env, cwd=str(NOTEBOOKS))
    strip_volatile(nb, rules)
    nbformat.validate(nb)
    nbformat.write(nb, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="default: every notebooks/NN_*.ipynb and notebooks/zh/NN_*.ipynb"
    )
    parser.add_argument("--check", action="store_true", help="only report what is not clean")
    parser.add_argument(
        "--navigation-only", action="store_true", help="only regenerate the navigation cells (no execution)"
    )
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    options = parser.parse_args(argv)

    editions = [NOTEBOOKS, NOTEBOOKS / "zh"]
    every = [p for folder in editions for p in course_notebooks(folder)]
    chosen = [p.resolve() for p in options.notebooks] or every
    rules = sanitize_rules()
    failed = 0
    for path in chosen:
        if path not in every:
            print(f"{path}: not a course notebook (notebooks/{PATTERN} or notebooks/zh/{PATTERN})", file=sys.stderr)
            failed += 1
            continue
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        navigation = expected_navigation(path)
        if options.check:
            found = problems(path, navigation)
            for problem in found:
                print(f"{shown}: {problem}")
            failed += bool(found)
            continue
        if options.navigation_only:
            nb = nbformat.read(path, as_version=4)
            set_navigation(nb, navigation)
            set_colab(nb, path, renumber=True)
            nbformat.write(nb, path)
            continue
        print(f"executing {shown} ...", flush=True)
        try:
            execute(path, navigation, rules, options.timeout)
        except CellExecutionError as error:
            print(f"{shown}: a cell failed (tag it raises-exception if that is intended)\n{error}", file=sys.stderr)
            failed += 1
    if failed:
        print(f"{failed} notebook(s) failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
