"""Give a learner the course's version of one notebook back, keeping theirs beside it.

On the hub, ``git checkout notebooks/X.ipynb`` does not restore the original: each
click on the workshop link makes nbgitpuller commit the learner's edits ("Automatic
commit by nbgitpuller") before it merges the course's updates, so the learner's own
version is what ``HEAD`` holds. The learner's own way back (notebook 00) is to delete
the file and open the link again: nbgitpuller checks a deleted file out of the branch
it fetched (tests/test_workshop_pin.py runs it). The course's version is that upstream
branch (``@{upstream}``, e.g. ``origin/main``); :func:`reset_notebook` restores it for
the instructor, as the learner (files keep their owner), after copying the learner's
version to ``X.mine-HHMMSS.ipynb`` so no work is lost::

    sudo make hub-reset NAME=ada NOTEBOOK=notebooks/05_the_detach_fix.ipynb
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["reset_notebook"]


def _as(name: str) -> dict[str, Any]:
    """``subprocess`` arguments that run a command as ``name`` (nothing when we are that account)."""
    entry = pwd.getpwnam(name)
    if os.geteuid() == entry.pw_uid:
        return {}

    def drop() -> None:
        os.initgroups(name, entry.pw_gid)
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)

    return {"preexec_fn": drop, "env": {"HOME": entry.pw_dir, "PATH": "/usr/bin:/bin"}}


def reset_notebook(name: str, notebook: str, *, target: str = "gradlab", home: Path | None = None) -> Path | None:
    """Restore ``notebook`` (a path in the course) in ``name``'s copy; where their own version was kept.

    Returns None when the learner had no file there (it is simply restored).
    """
    if ".." in Path(notebook).parts or Path(notebook).is_absolute():
        raise ValueError(f"{notebook!r} must be a path inside the course, e.g. notebooks/05_the_detach_fix.ipynb")
    repo = (home or Path(pwd.getpwnam(name).pw_dir)) / target
    if not (repo / ".git").is_dir():
        raise ValueError(f"{repo} is not a course copy: has {name} clicked the workshop link yet?")
    run = _as(name)
    known = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"@{{upstream}}:{notebook}"], capture_output=True, **run
    )
    if known.returncode:
        raise ValueError(f"the course has no {notebook}; the notebooks are in {repo / 'notebooks'}")
    current = repo / notebook
    kept = None
    if current.exists():
        kept = current.with_name(f"{current.stem}.mine-{time.strftime('%H%M%S')}{current.suffix}")
        subprocess.run(["cp", "-p", str(current), str(kept)], check=True, **run)
    subprocess.run(["git", "-C", str(repo), "checkout", "@{upstream}", "--", notebook], check=True, **run)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradlab_hub.reset", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the learner's user name")
    parser.add_argument("notebook", help="path in the course, e.g. notebooks/05_the_detach_fix.ipynb")
    parser.add_argument("--target", default="gradlab", help="the course folder in their home (default %(default)s)")
    options = parser.parse_args(argv)
    if shutil.which("git") is None:
        print("hub-reset: git is missing", file=sys.stderr)
        return 2
    try:
        kept = reset_notebook(options.name, options.notebook, target=options.target)
    except (KeyError, ValueError) as error:
        print(f"hub-reset: {error}", file=sys.stderr)
        return 2
    print(f"{options.name}: {options.notebook} is the course's version again", end="")
    print(f"; their own version is {kept.name}" if kept else "")
    print("(in JupyterLab: close the notebook's tab without saving, then open it again)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
