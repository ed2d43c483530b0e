"""``python -m gradlab.course workshop-link``: one nbgitpuller link for a whole room.

A learner who opens the link on a JupyterHub logs in, gets their own server, and
nbgitpuller clones the course repository into their home (or, on later clicks,
merges the instructor's updates without touching the learner's edits), then opens
the start notebook in JupyterLab. The link has the form nbgitpuller's own link
generator builds::

    {hub}/hub/user-redirect/git-pull?repo={repo}&urlpath=lab/tree/{target}/{file}&branch={branch}&targetpath={target}

``targetpath`` is given explicitly so the folder in the learner's home, and
therefore the path JupyterLab opens, do not depend on how the repository URL ends.

The command refuses what cannot work in the room: an SSH repository URL (learners'
servers have no SSH key) and a start notebook that is not in the course (checked in
the course checkout this gradlab runs from, or ``--checkout DIR``). Whether the
branch exists in the repository, with every notebook, is checked by the workshop
hub's ``make hub-pin`` (workshop/RUNSHEET.md).

Example::

    >>> print(pull_link("https://hub.example.org", "https://github.com/gradlab/gradlab"))
    https://hub.example.org/hub/user-redirect/git-pull?repo=https%3A%2F%2Fgithub.com%2Fgradlab%2Fgradlab&urlpath=lab%2Ftree%2Fgradlab%2Fnotebooks%2F00_start_here.ipynb&branch=main&targetpath=gradlab
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode, urlsplit

__all__ = [
    "DEFAULT_OPEN",
    "WorkshopLinkError",
    "check_open",
    "check_repo",
    "course_checkout",
    "main",
    "pull_link",
    "pull_parameters",
    "target_name",
]

DEFAULT_OPEN = "notebooks/00_start_here.ipynb"
# git's SSH forms: ssh://host/path, git+ssh://, ssh+git://, and scp-like user@host:path.
_SSH_URL = re.compile(r"^(?:(?:git\+)?ssh(?:\+git)?://|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!//))")

# A folder name nbgitpuller creates in the learner's home: no separators, no leading dot.
_TARGET = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


class WorkshopLinkError(ValueError):
    """An argument of :func:`pull_link` cannot make a working link; the message says what to pass."""


def target_name(repo: str) -> str:
    """Folder nbgitpuller clones ``repo`` into: the last path part without ``.git``.

    Example::

        >>> target_name("https://github.com/gradlab/gradlab.git")
        'gradlab'
        >>> target_name("/srv/courses/gradlab/")
        'gradlab'
    """
    name = repo.rstrip("/").rsplit("/", 1)[-1]
    name = name.removesuffix(".git")
    if not _TARGET.match(name):
        raise WorkshopLinkError(f"cannot name a folder after the repository {repo!r}; pass --targetpath NAME")
    return name


def check_repo(repo: str) -> None:
    """Refuse a repository URL learners' servers cannot clone: an SSH URL needs a key they do not have.

    Example::

        >>> check_repo("https://github.com/ada/gradlab")
        >>> check_repo("git@github.com:ada/gradlab.git")
        Traceback (most recent call last):
        ...
        gradlab.course.workshop.WorkshopLinkError: --repo 'git@github.com:ada/gradlab.git' is an SSH URL: learners' servers have no SSH key, so nbgitpuller cannot clone it; pass the https:// clone URL, e.g. https://github.com/ada/gradlab
    """
    if not repo.strip():
        raise WorkshopLinkError("--repo is empty; pass the course repository's clone URL")
    text = repo.strip()
    if _SSH_URL.match(text):
        if "://" in text:
            parts = urlsplit(text)
            host, path = parts.hostname or "HOST", parts.path
        else:
            host, _, path = text.split("@", 1)[1].partition(":")
        raise WorkshopLinkError(
            f"--repo {repo!r} is an SSH URL: learners' servers have no SSH key, so nbgitpuller cannot clone it; "
            f"pass the https:// clone URL, e.g. https://{host}/{path.strip('/').removesuffix('.git')}"
        )


def course_checkout() -> Path | None:
    """The course checkout this gradlab runs from (``gradlab/`` next to ``notebooks/``), if it is one."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "notebooks").is_dir() else None


def check_open(open_path: str, checkout: Path | None) -> None:
    """Refuse a start notebook (or folder) that is not in the course ``checkout``; the message lists what is.

    Example::

        >>> import tempfile
        >>> course = Path(tempfile.mkdtemp())
        >>> (course / "notebooks").mkdir(); (course / "notebooks" / "00_start_here.ipynb").touch()
        >>> check_open("notebooks/00_start_here.ipynb", course)
        >>> check_open("notebooks/03_version_counters", course)
        Traceback (most recent call last):
        ...
        gradlab.course.workshop.WorkshopLinkError: --open notebooks/03_version_counters is not in the course; its start notebooks: notebooks/00_start_here.ipynb
    """
    if checkout is None:
        raise WorkshopLinkError(
            f"cannot check that {open_path} is in the course: this gradlab is not in a course checkout; "
            "pass --checkout DIR (a clone of the course repository)"
        )
    opened = open_path.strip("/")
    if (checkout / opened).exists():
        return
    known = sorted(
        path.relative_to(checkout).as_posix()
        for folder in (checkout / "notebooks", checkout / "notebooks" / "zh")
        for path in folder.glob("[0-9][0-9]_*.ipynb")
    )
    raise WorkshopLinkError(
        f"--open {opened} is not in the course; its start notebooks: "
        + (", ".join(known) if known else f"none found in {checkout / 'notebooks'}")
    )


def pull_parameters(
    repo: str,
    *,
    branch: str = "main",
    open_path: str = DEFAULT_OPEN,
    targetpath: str | None = None,
) -> dict[str, str]:
    """The query parameters of the link, in nbgitpuller's order (``repo, urlpath, branch``, then ``targetpath``).

    ``urlpath`` is where JupyterLab opens after the pull, relative to the learner's
    server: ``lab/tree/{targetpath}/{open_path}``.

    Example::

        >>> pull_parameters("https://github.com/gradlab/gradlab", open_path="notebooks/01_the_original_loop.ipynb")["urlpath"]
        'lab/tree/gradlab/notebooks/01_the_original_loop.ipynb'
    """
    check_repo(repo)
    if not branch.strip():
        raise WorkshopLinkError("--branch is empty; pass the branch learners should get, e.g. main")
    target = targetpath if targetpath is not None else target_name(repo)
    if not _TARGET.match(target):
        raise WorkshopLinkError(f"--targetpath {target!r} is not a plain folder name (letters, digits, ._-)")
    opened = open_path.strip("/")
    if not opened or ".." in opened.split("/"):
        raise WorkshopLinkError(f"--open {open_path!r} must be a path inside the repository, e.g. {DEFAULT_OPEN}")
    return {"repo": repo, "urlpath": f"lab/tree/{target}/{opened}", "branch": branch, "targetpath": target}


def pull_link(
    hub: str,
    repo: str,
    *,
    branch: str = "main",
    open_path: str = DEFAULT_OPEN,
    targetpath: str | None = None,
) -> str:
    """The nbgitpuller link that puts ``repo`` into each learner's home on ``hub``.

    Args:
        hub: the JupyterHub's public URL, e.g. ``https://hub.example.org`` (a path
            prefix such as ``https://example.org/jupyter`` is kept).
        repo: the course repository's clone URL (anything ``git clone`` accepts).
        branch: the branch learners get.
        open_path: the file JupyterLab opens, relative to the repository.
        targetpath: the folder in the learner's home (default: the repository's name).

    Example::

        >>> pull_link("http://127.0.0.1:8000/", "https://github.com/gradlab/gradlab").split("?")[0]
        'http://127.0.0.1:8000/hub/user-redirect/git-pull'
    """
    parts = urlsplit(hub)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WorkshopLinkError(f"--hub {hub!r} is not an http(s) URL; pass e.g. https://hub.example.org")
    if parts.query or parts.fragment:
        raise WorkshopLinkError(f"--hub {hub!r} has a query or fragment; pass the hub's base URL only")
    base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    query = urlencode(pull_parameters(repo, branch=branch, open_path=open_path, targetpath=targetpath))
    return f"{base}/hub/user-redirect/git-pull?{query}"


def _parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gradlab.course workshop-link",
        description="Print the nbgitpuller link that puts the course into each learner's JupyterHub home.",
    )
    parser.add_argument("--hub", required=True, help="the hub's public URL, e.g. https://hub.example.org")
    parser.add_argument("--repo", required=True, help="the course repository's clone URL")
    parser.add_argument("--branch", default="main", help="branch learners get (default: %(default)s)")
    parser.add_argument(
        "--open", dest="open_path", default=DEFAULT_OPEN, help="file to open after the pull (default: %(default)s)"
    )
    parser.add_argument("--targetpath", default=None, help="folder in each learner's home (default: the repo's name)")
    parser.add_argument(
        "--checkout",
        type=Path,
        default=None,
        help="the course checkout --open is checked in (default: the one this gradlab runs from)",
    )
    return parser.parse_args(list(argv))


def main(argv: list[str]) -> int:
    """Print the link; exit status 2 with a one-line reason when an argument cannot work."""
    options = _parse_args(argv)
    try:
        check_open(options.open_path, options.checkout or course_checkout())
        link = pull_link(
            options.hub,
            options.repo,
            branch=options.branch,
            open_path=options.open_path,
            targetpath=options.targetpath,
        )
    except WorkshopLinkError as error:
        print(f"workshop-link: {error}", file=sys.stderr)
        return 2
    print(link)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
