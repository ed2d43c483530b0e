"""``python -m gradlab.course workshop-link``: one nbgitpuller link for a whole room.

A learner who opens the link on a JupyterHub logs in, gets their own server, and
nbgitpuller clones the course repository into their home (or, on later clicks,
merges the instructor's updates without touching the learner's edits), then opens
the start notebook in JupyterLab. The link has the form nbgitpuller's own link
generator builds::

    {hub}/hub/user-redirect/git-pull?repo={repo}&urlpath=lab/tree/{target}/{file}&branch={branch}&targetpath={target}

``targetpath`` is given explicitly so the folder in the learner's home, and
therefore the path JupyterLab opens, do not depend on how the repository URL ends.

Example::

    >>> print(pull_link("https://hub.example.org", "https://github.com/gradlab/gradlab"))
    https://hub.example.org/hub/user-redirect/git-pull?repo=https%3A%2F%2Fgithub.com%2Fgradlab%2Fgradlab&urlpath=lab%2Ftree%2Fgradlab%2Fnotebooks%2F00_start_here.ipynb&branch=main&targetpath=gradlab
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from urllib.parse import urlencode, urlsplit

__all__ = ["DEFAULT_OPEN", "WorkshopLinkError", "main", "pull_link", "pull_parameters", "target_name"]

DEFAULT_OPEN = "notebooks/00_start_here.ipynb"

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
    if not repo.strip():
        raise WorkshopLinkError("--repo is empty; pass the course repository's clone URL")
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
    return parser.parse_args(list(argv))


def main(argv: list[str]) -> int:
    """Print the link; exit status 2 with a one-line reason when an argument cannot work."""
    options = _parse_args(argv)
    try:
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
