"""``make hub-pin REPO=... REF=...``: the material learners pull, checked and remembered.

Learners' notebooks come from the repository and branch in the workshop link
(nbgitpuller clones it on the first click and merges its updates on later ones);
the hub runs the gradlab of its own checkout. An instructor who is not a
maintainer pins a branch of their own fork, and before the day this checks, from
the hub's machine:

1. the repository is one learners' servers can clone (https, not SSH);
2. ``REF`` is a branch of it (``git ls-remote``). A tag is refused: nbgitpuller
   clones a tag but cannot update the copy from one on the next click (it merges
   ``origin/REF``, which a tag does not make; tests/test_workshop_reset.py);
3. every notebook of the course (both editions, as in the hub's checkout) is on
   that branch (one shallow fetch of the branch into a scratch repository);
4. the branch's ``gradlab/`` is the hub's own (the same git tree), so the notebooks
   learners run call the gradlab their kernels import; otherwise it says to run
   ``make hub-deps`` from that commit.

The pin (repository, branch, commit) goes to ``pin.json`` in the hub's state
directory; ``make hub`` prints the learners' links from it, for both editions.

Usage::

    python -m gradlab_hub.pin --repo https://github.com/ada/gradlab --ref workshop-2027-03-14 [--hub URL]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from gradlab.course.workshop import WorkshopLinkError, check_repo, pull_link

from .settings import REPO, WORKSHOP

__all__ = ["PIN_FILE", "Pin", "PinError", "course_notebooks", "links", "load_pin", "pin", "save_pin"]

PIN_FILE = "pin.json"
START_NOTEBOOKS = ("notebooks/00_start_here.ipynb", "notebooks/zh/00_start_here.ipynb")


class PinError(ValueError):
    """The material cannot be pinned; the message says what to do."""


@dataclass(frozen=True)
class Pin:
    """What learners pull: ``repo`` at branch ``ref``, which was at ``commit`` when pinned."""

    repo: str
    ref: str
    commit: str
    gradlab_tree: str
    notebooks: tuple[str, ...]


def _git(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LANG": "C"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def course_notebooks(checkout: Path = REPO) -> list[str]:
    """The course's notebooks in ``checkout``, both editions, as paths in the repository."""
    return sorted(
        path.relative_to(checkout).as_posix()
        for folder in (checkout / "notebooks", checkout / "notebooks" / "zh")
        for path in folder.glob("[0-9][0-9]_*.ipynb")
    )


def local_gradlab_tree(checkout: Path = REPO) -> str | None:
    """The git tree of ``gradlab/`` the hub runs: its HEAD's, or None when it has uncommitted changes there."""
    if _git("diff", "--quiet", "HEAD", "--", "gradlab", cwd=checkout).returncode != 0:
        return None
    done = _git("rev-parse", "HEAD:gradlab", cwd=checkout)
    return done.stdout.strip() if done.returncode == 0 else None


def pin(repo: str, ref: str, *, checkout: Path = REPO, notebooks: list[str] | None = None) -> Pin:
    """Check that learners can pull ``ref`` of ``repo`` with every notebook; the pin, or :class:`PinError`."""
    try:
        check_repo(repo)
    except WorkshopLinkError as error:
        raise PinError(str(error).replace("--repo", "REPO")) from None
    if not ref or ref.startswith(("-", "refs/")):
        raise PinError(f"REF={ref!r}: pass a branch name, e.g. REF=workshop-2027-03-14")
    listed = _git("ls-remote", "--heads", "--tags", "--", repo, timeout=120)
    if listed.returncode != 0:
        raise PinError(
            f"cannot read {repo} (git ls-remote: {listed.stderr.strip() or listed.returncode}); "
            "check the URL and that the repository is public"
        )
    refs: dict[str, str] = {}
    for line in listed.stdout.splitlines():
        sha, _, name = line.partition("\t")
        if name:
            refs[name] = sha
    branches = sorted(name.removeprefix("refs/heads/") for name in refs if name.startswith("refs/heads/"))
    if f"refs/heads/{ref}" not in refs:
        if f"refs/tags/{ref}" in refs:
            raise PinError(
                f"{ref} is a tag of {repo}: nbgitpuller clones a tag but cannot update the copy on the next click; "
                f"pin a branch made at it: git branch workshop-{ref} {ref} && git push YOUR-FORK workshop-{ref}, "
                f"then REF=workshop-{ref}"
            )
        raise PinError(
            f"{repo} has no branch {ref} (its branches: {', '.join(branches) or 'none'}); "
            f"push it first: git push YOUR-FORK {ref}"
        )
    wanted = notebooks if notebooks is not None else course_notebooks(checkout)
    with tempfile.TemporaryDirectory(prefix="gradlab-pin-") as scratch:
        _git("init", "--quiet", "--bare", scratch)
        fetched = _git("fetch", "--quiet", "--depth", "1", "--", repo, f"refs/heads/{ref}", cwd=Path(scratch))
        if fetched.returncode != 0:
            raise PinError(f"cannot fetch {ref} from {repo}: {fetched.stderr.strip()}")
        commit = _git("rev-parse", "FETCH_HEAD", cwd=Path(scratch)).stdout.strip()
        files = set(_git("ls-tree", "-r", "--name-only", "FETCH_HEAD", cwd=Path(scratch)).stdout.splitlines())
        tree = _git("rev-parse", "FETCH_HEAD:gradlab", cwd=Path(scratch)).stdout.strip()
    missing = [path for path in wanted if path not in files]
    if missing:
        raise PinError(
            f"{ref} of {repo} lacks {len(missing)} notebook(s) learners open: {', '.join(missing[:6])}"
            + (" ..." if len(missing) > 6 else "")
            + "; push the branch made from this checkout (make hub-branch)"
        )
    return Pin(repo=repo, ref=ref, commit=commit, gradlab_tree=tree, notebooks=tuple(wanted))


def save_pin(state_dir: Path, chosen: Pin) -> Path:
    """Write the pin to ``pin.json`` in the (private) state directory; its path."""
    state_dir.mkdir(parents=True, exist_ok=True)
    state_dir.chmod(0o700)
    path = state_dir / PIN_FILE
    path.write_text(json.dumps(asdict(chosen), indent=1) + "\n", encoding="utf-8")
    return path


def load_pin(state_dir: Path) -> Pin | None:
    """The pin ``make hub-pin`` saved, or None."""
    try:
        data = json.loads((state_dir / PIN_FILE).read_text(encoding="utf-8"))
        return Pin(**{**data, "notebooks": tuple(data["notebooks"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def links(hub: str, chosen: Pin) -> dict[str, str]:
    """The learners' links for the pinned material: one per edition's start notebook present on the branch."""
    return {
        start: pull_link(hub, chosen.repo, branch=chosen.ref, open_path=start)
        for start in START_NOTEBOOKS
        if start in chosen.notebooks
    }


def drift(chosen: Pin, checkout: Path = REPO) -> str | None:
    """Why the hub's gradlab differs from the pinned branch's, or None when they are the same."""
    local = local_gradlab_tree(checkout)
    if local is None:
        return "the hub's checkout has uncommitted changes in gradlab/"
    if local != chosen.gradlab_tree:
        return (
            f"gradlab/ on {chosen.ref} ({chosen.commit[:10]}) is not the hub's: check out that commit here "
            "(git checkout --detach " + chosen.commit[:10] + ") and run make hub-deps"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make hub-pin", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="the repository learners pull (your fork's https URL)")
    parser.add_argument("--ref", required=True, help="the branch learners pull")
    parser.add_argument(
        "--hub", default=None, help="the hub's public URL for the printed links (default: GRADLAB_HUB_PUBLIC_URL)"
    )
    options = parser.parse_args(argv)
    state = Path(os.environ.get("GRADLAB_HUB_STATE_DIR") or WORKSHOP / "state").resolve()
    try:
        chosen = pin(options.repo, options.ref)
    except PinError as error:
        print(f"hub-pin: {error}", file=sys.stderr)
        return 2
    path = save_pin(state, chosen)
    print(
        f"pinned: {chosen.repo} branch {chosen.ref} (at {chosen.commit[:10]}), {len(chosen.notebooks)} notebooks checked"
    )
    problem = drift(chosen)
    print(f"  warning: {problem}" if problem else "  gradlab/ on that branch is the hub's own")
    hub = options.hub or os.environ.get("GRADLAB_HUB_PUBLIC_URL") or "http://127.0.0.1:8000"
    for start, link in links(hub, chosen).items():
        print(f"  learners' link ({start}): {link}")
    print(f"  saved in {path}; make hub prints these links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
