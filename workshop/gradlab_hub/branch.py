"""``make hub-branch BRANCH=workshop-2027-03-14``: a branch for the day, its notebooks without stored outputs.

The course commits its notebooks with their outputs (nbval re-executes and compares
them). On the hub, stored outputs spoil the predictions: the answer is on the screen
before the learner runs the cell. This makes a branch in this checkout, at ``HEAD``
(or ``--at``), with one more commit that clears the outputs of every course notebook
of both editions (``notebooks/NN_*.ipynb`` and ``notebooks/zh/NN_*.ipynb``): no outputs,
no execution counts, no widget state. Everything else, ``gradlab/`` included, is
unchanged, so ``make hub-pin`` finds the branch's gradlab to be the hub's.

Nothing in the working tree, the index or the current branch changes: the commit is
made from blobs and a private index. Then push the branch to your fork and pin it::

    git push origin workshop-2027-03-14
    make hub-pin REPO=https://github.com/YOU/gradlab REF=workshop-2027-03-14
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from .settings import REPO

__all__ = ["cleared", "make_branch"]

_NOTEBOOK = re.compile(r"^notebooks/(?:zh/)?[0-9][0-9]_[^/]*\.ipynb$")


def cleared(text: str) -> str:
    """A notebook's JSON with every code cell's outputs and execution count removed, and no widget state.

    Example::

        >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1", execution_count=3,
        ...     outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)])])
        >>> cell = nbformat.reads(cleared(nbformat.writes(nb)), as_version=4).cells[0]
        >>> cell.outputs, cell.execution_count, cell.source
        ([], None, '1 + 1')
    """
    nb = nbformat.reads(text, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    out = nbformat.writes(nb)
    return out if out.endswith("\n") else out + "\n"


def _git(*args: str, env: dict[str, str] | None = None, data: str | None = None, cwd: Path = REPO) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **(env or {})}, input=data, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def make_branch(name: str, *, at: str = "HEAD", checkout: Path = REPO) -> tuple[str, int]:
    """Create branch ``name`` at ``at`` plus one commit clearing the notebooks' outputs; (commit, notebooks cleared)."""
    if subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, cwd=checkout).returncode:
        raise ValueError(f"{name!r} is not a branch name git accepts; e.g. workshop-2027-03-14")
    if _git("branch", "--list", name, cwd=checkout).strip():
        raise ValueError(f"the branch {name} exists already; choose another name or delete it (git branch -D {name})")
    base = _git("rev-parse", "--verify", f"{at}^{{commit}}", cwd=checkout).strip()
    paths = [p for p in _git("ls-tree", "-r", "--name-only", base, cwd=checkout).splitlines() if _NOTEBOOK.match(p)]
    if not paths:
        raise ValueError(f"{at} has no course notebooks (notebooks/NN_*.ipynb)")
    with tempfile.TemporaryDirectory(prefix="gradlab-branch-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _git("read-tree", base, env=index, cwd=checkout)
        changed = 0
        for path in paths:
            text = _git("show", f"{base}:{path}", cwd=checkout)
            empty = cleared(text)
            if empty != text:
                blob = _git("hash-object", "-w", "--stdin", data=empty, cwd=checkout).strip()
                _git("update-index", "--cacheinfo", f"100644,{blob},{path}", env=index, cwd=checkout)
                changed += 1
        tree = _git("write-tree", env=index, cwd=checkout).strip()
    message = (
        "workshop: notebooks without stored outputs\n\n"
        f"Made by make hub-branch from {base[:10]}: every course notebook of both editions\n"
        "without outputs, so the answers to the predictions are not on the screen before a\n"
        "learner runs the cell. gradlab/ and everything else as in that commit.\n"
    )
    who = {}
    if not subprocess.run(["git", "config", "user.email"], capture_output=True, cwd=checkout).stdout.strip():
        who = {"GIT_AUTHOR_NAME": "gradlab workshop", "GIT_AUTHOR_EMAIL": "workshop@localhost"}
        who |= {"GIT_COMMITTER_NAME": who["GIT_AUTHOR_NAME"], "GIT_COMMITTER_EMAIL": who["GIT_AUTHOR_EMAIL"]}
    commit = _git("commit-tree", tree, "-p", base, env=who, data=message, cwd=checkout).strip()
    _git("branch", name, commit, cwd=checkout)
    return commit, changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make hub-branch", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the branch to create, e.g. workshop-2027-03-14")
    parser.add_argument("--at", default="HEAD", help="the commit it starts from (default: %(default)s)")
    options = parser.parse_args(argv)
    try:
        commit, changed = make_branch(options.name, at=options.at)
    except (ValueError, RuntimeError) as error:
        print(f"hub-branch: {error}", file=sys.stderr)
        return 2
    print(f"branch {options.name} at {commit[:10]}: {changed} notebooks without stored outputs (both editions)")
    print(f"next: git push YOUR-FORK {options.name}")
    print(f"      make hub-pin REPO=https://github.com/YOU/gradlab REF={options.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
