"""An instructor who forks: the link generator's refusals, make hub-branch, make hub-pin, and resetting a notebook.

Real git repositories in a temporary directory stand for the instructor's fork; nbgitpuller's
own ``GitPuller`` stands for a learner's clicks on the link (no hub, no network).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gradlab.course import workshop

pytest.importorskip("jupyterhub", reason="the workshop hub's modules need JupyterHub (requirements/course.lock)")

REPO = Path(__file__).resolve().parent.parent
WORKSHOP = REPO / "workshop"
sys.path.insert(0, str(WORKSHOP))

from gradlab_hub import branch, pin, settings  # noqa: E402

pytestmark = [pytest.mark.course, pytest.mark.slow]

needs_git = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode, reason="no git")
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x",
}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True).stdout


def notebook_with_output(text: str) -> str:
    cell = nbformat.v4.new_code_cell(
        "print(1)", execution_count=1, outputs=[nbformat.v4.new_output("stream", name="stdout", text=text)]
    )
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"), cell])) + "\n"


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """A small course repository: both editions' notebooks with outputs, gradlab/, a tag."""
    course = tmp_path / "fork"
    for path in ("notebooks/00_start_here.ipynb", "notebooks/01_loop.ipynb", "notebooks/zh/00_start_here.ipynb"):
        (course / path).parent.mkdir(parents=True, exist_ok=True)
        (course / path).write_text(notebook_with_output(f"stored answer of {path}\n"))
    (course / "gradlab").mkdir()
    (course / "gradlab" / "__init__.py").write_text("__version__ = '0'\n")
    git("init", "-q", "-b", "main", cwd=course)
    git("add", ".", cwd=course)
    git("commit", "-q", "-m", "course", cwd=course)
    git("tag", "v1", cwd=course)
    return course


# -- the link generator ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("repo", "https"),
    [
        ("git@github.com:ada/gradlab.git", "https://github.com/ada/gradlab"),
        ("ssh://git@github.com:22/ada/gradlab.git", "https://github.com/ada/gradlab"),
        ("git+ssh://git@gitlab.com/ada/gradlab", "https://gitlab.com/ada/gradlab"),
    ],
)
def test_the_link_generator_refuses_ssh_urls_and_names_the_https_one(repo: str, https: str) -> None:
    with pytest.raises(workshop.WorkshopLinkError, match="no SSH key") as refused:
        workshop.pull_link("https://hub.example.org", repo)
    assert str(refused.value).endswith(f"pass the https:// clone URL, e.g. {https}")
    for fine in ("https://github.com/ada/gradlab", "git://127.0.0.1:9418/gradlab.git", "/srv/gradlab"):
        workshop.check_repo(fine)


def test_the_link_generator_refuses_a_notebook_the_course_does_not_have(
    fork: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--hub", "https://hub.example.org", "--repo", "https://github.com/ada/gradlab", "--checkout", str(fork)]
    assert workshop.main([*argv, "--open", "notebooks/03_version_counters.ipynb"]) == 2
    err = capsys.readouterr().err
    assert "notebooks/03_version_counters.ipynb is not in the course" in err
    assert "notebooks/00_start_here.ipynb, notebooks/01_loop.ipynb, notebooks/zh/00_start_here.ipynb" in err
    assert workshop.main([*argv, "--open", "notebooks/zh/00_start_here.ipynb"]) == 0
    assert "urlpath=lab%2Ftree%2Fgradlab%2Fnotebooks%2Fzh%2F00_start_here.ipynb" in capsys.readouterr().out
    # Without --checkout, the course this gradlab runs from is the reference.
    assert workshop.course_checkout() == REPO
    assert workshop.main(argv[:4] + ["--open", "notebooks/04_version_counters.ipynb"]) == 0
    assert workshop.main(argv[:4] + ["--repo", "git@github.com:ada/gradlab.git"]) == 2
    assert "no SSH key" in capsys.readouterr().err


# -- make hub-branch ----------------------------------------------------------------------------


@needs_git
def test_hub_branch_clears_both_editions_outputs_and_touches_nothing_else(fork: Path) -> None:
    (fork / "notebooks" / "01_loop.ipynb").write_text("an uncommitted edit\n")
    head = git("rev-parse", "HEAD", cwd=fork).strip()
    commit, changed = branch.make_branch("workshop-day", checkout=fork)
    assert changed == 3 and git("rev-parse", "workshop-day", cwd=fork).strip() == commit
    assert git("rev-parse", "HEAD", cwd=fork).strip() == head, "the current branch stays where it was"
    assert (fork / "notebooks" / "01_loop.ipynb").read_text() == "an uncommitted edit\n", "the work tree is untouched"
    assert git("rev-parse", "workshop-day^", cwd=fork).strip() == head
    changed_paths = git("diff", "--name-only", head, "workshop-day", cwd=fork).split()
    assert changed_paths == [
        "notebooks/00_start_here.ipynb",
        "notebooks/01_loop.ipynb",
        "notebooks/zh/00_start_here.ipynb",
    ]
    for path in changed_paths:
        nb = nbformat.reads(git("show", f"workshop-day:{path}", cwd=fork), as_version=4)
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code), path
        assert code[0].source == "print(1)"
    with pytest.raises(ValueError, match="exists already"):
        branch.make_branch("workshop-day", checkout=fork)
    with pytest.raises(ValueError, match="not a branch name"):
        branch.make_branch("two words", checkout=fork)


# -- make hub-pin -------------------------------------------------------------------------------


@needs_git
def test_hub_pin_checks_the_branch_and_every_notebook_and_refuses_a_tag(fork: Path, tmp_path: Path) -> None:
    branch.make_branch("workshop-day", checkout=fork)
    pinned = pin.pin(str(fork), "workshop-day", checkout=fork)
    assert pinned.ref == "workshop-day" and pinned.commit == git("rev-parse", "workshop-day", cwd=fork).strip()
    assert pinned.notebooks == tuple(pin.course_notebooks(fork)) and len(pinned.notebooks) == 3
    assert pin.drift(pinned, fork) is None, "the branch's gradlab/ is the checkout's"

    with pytest.raises(pin.PinError, match=r"has no branch day-2 \(its branches: main, workshop-day\)"):
        pin.pin(str(fork), "day-2", checkout=fork)
    with pytest.raises(pin.PinError, match="v1 is a tag .* cannot update the copy on the next click"):
        pin.pin(str(fork), "v1", checkout=fork)
    with pytest.raises(pin.PinError, match="REPO .* is an SSH URL"):
        pin.pin("git@github.com:ada/gradlab.git", "main", checkout=fork)
    with pytest.raises(pin.PinError, match="cannot read"):
        pin.pin(str(tmp_path / "nothing-here"), "main", checkout=fork)
    # A notebook the hub's course has and the branch lacks: every learner would get a 404.
    git("checkout", "-q", "-b", "old", cwd=fork)
    git("rm", "-q", "notebooks/zh/00_start_here.ipynb", cwd=fork)
    git("commit", "-q", "-m", "old layout", cwd=fork)
    git("checkout", "-q", "main", cwd=fork)
    with pytest.raises(pin.PinError, match="lacks 1 notebook.*notebooks/zh/00_start_here.ipynb"):
        pin.pin(str(fork), "old", checkout=fork)
    # A branch whose gradlab/ is not the hub's: pinned, with the warning make hub prints.
    git("checkout", "-q", "-b", "newer", cwd=fork)
    (fork / "gradlab" / "__init__.py").write_text("__version__ = '1'\n")
    git("commit", "-q", "-am", "newer gradlab", cwd=fork)
    git("checkout", "-q", "main", cwd=fork)
    assert "make hub-deps" in (pin.drift(pin.pin(str(fork), "newer", checkout=fork), fork) or "")


@needs_git
def test_make_hub_prints_the_pinned_links_for_both_editions(fork: Path, tmp_path: Path) -> None:
    from gradlab_hub import hub

    state = tmp_path / "state"
    chosen = settings.Settings.from_env(
        {
            "GRADLAB_HUB_WORKSHOP_CODE": "amber-otter-42",
            "GRADLAB_HUB_ADMIN_PASSWORD": "a" * 40,
            "GRADLAB_HUB_STATE_DIR": str(state),
            "GRADLAB_HUB_PUBLIC_URL": "https://hub.example.org",
        }
    )
    unpinned = hub.announcement(chosen, "metadata: blocked")
    assert "NOT pinned" in unpinned and "make hub-pin" in unpinned
    pinned = pin.Pin(
        repo="https://github.com/ada/gradlab",
        ref="workshop-day",
        commit="0" * 40,
        gradlab_tree=pin.local_gradlab_tree() or "",
        notebooks=tuple(pin.course_notebooks()),
    )
    pin.save_pin(state, pinned)
    assert pin.load_pin(state) == pinned and (state.stat().st_mode & 0o777) == 0o700
    printed = hub.announcement(chosen, "metadata: blocked")
    found = dict(re.findall(r"learners' link \((\S+)\):\s+(\S+)", printed))
    assert found == {
        start: workshop.pull_link("https://hub.example.org", pinned.repo, branch="workshop-day", open_path=start)
        for start in ("notebooks/00_start_here.ipynb", "notebooks/zh/00_start_here.ipynb")
    }
    assert "NOT pinned" not in printed and hub.COURSE_REPO not in printed


@needs_git
def test_make_hub_pin_and_hub_branch_run_from_make(fork: Path, tmp_path: Path) -> None:
    branch.make_branch("workshop-day", checkout=fork)
    env = {**os.environ, "GRADLAB_HUB_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        ["make", "--no-print-directory", "hub-pin", f"REPO={fork}", "REF=workshop-day", "HUB=https://hub.example.org"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # The fork lacks most of the course's notebooks: refused, with what is missing.
    assert done.returncode == 2 and "lacks" in done.stderr and "notebooks/02_retain_graph.ipynb" in done.stderr
    assert not (tmp_path / "state" / "pin.json").exists()
    usage = subprocess.run(["make", "--no-print-directory", "hub-pin"], cwd=REPO, capture_output=True, text=True)
    assert usage.returncode == 2 and "REPO=" in usage.stdout
    dry = subprocess.run(["make", "-n", "hub-branch", "BRANCH=day-1"], cwd=REPO, capture_output=True, text=True)
    assert "-m gradlab_hub.branch day-1" in dry.stdout


# -- resetting a notebook: what nbgitpuller does on the learner's clicks ------------------------


def _click(bare: Path, target: Path, ref: str) -> None:
    from nbgitpuller.pull import GitPuller

    for _ in GitPuller(str(bare), str(target), branch=ref).pull():
        pass


@needs_git
def test_deleting_a_notebook_and_opening_the_link_again_restores_the_courses_version(
    fork: Path, tmp_path: Path
) -> None:
    pytest.importorskip("nbgitpuller", reason="nbgitpuller is in requirements/course.lock")
    bare = tmp_path / "fork.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(fork), str(bare)], check=True)
    copy = tmp_path / "home" / "gradlab"
    _click(bare, copy, "main")  # the first click clones
    mine = copy / "notebooks" / "01_loop.ipynb"
    other = copy / "notebooks" / "00_start_here.ipynb"
    mine.write_text("my broken attempt\n")
    other.write_text("my notes in 00\n")
    _click(bare, copy, "main")  # the next click commits the learner's edits, then merges
    assert "Automatic commit by nbgitpuller" in git("log", "--format=%s", cwd=copy)
    # What 00 says for a clone of one's own is wrong here: git checkout gives the learner's version back.
    git("checkout", "--", "notebooks/01_loop.ipynb", cwd=copy)
    assert mine.read_text() == "my broken attempt\n"
    # What 00 says for the hub: delete the notebook, open the link again.
    mine.unlink()
    _click(bare, copy, "main")
    assert mine.read_text() == (fork / "notebooks" / "01_loop.ipynb").read_text()
    assert other.read_text() == "my notes in 00\n", "the learner's other work stays"


@needs_git
def test_a_tag_cannot_be_pulled_twice_which_is_why_hub_pin_wants_a_branch(fork: Path, tmp_path: Path) -> None:
    pytest.importorskip("nbgitpuller", reason="nbgitpuller is in requirements/course.lock")
    bare = tmp_path / "fork.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(fork), str(bare)], check=True)
    copy = tmp_path / "home" / "gradlab"
    _click(bare, copy, "v1")  # the first click clones the tag
    assert (copy / "notebooks" / "01_loop.ipynb").exists()
    with pytest.raises(subprocess.CalledProcessError):
        _click(bare, copy, "v1")  # the second one fails: there is no origin/v1 to merge


# -- no learner is told to use git on the hub -----------------------------------------------------

GIT_COMMAND = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?(?:checkout|restore|reset|stash|pull|clone|fetch|merge)\b")
HUB = re.compile(r"(?i)\bhub\b|jupyterhub|workshop link|工作坊")
LOCAL = re.compile(r"(?i)your own machine|自己的电脑")


def learner_texts() -> dict[str, str]:
    """Every piece of text a learner reads, by where it comes from, split into paragraphs and list items."""
    sources: dict[str, str] = {}
    for path in sorted([*(REPO / "notebooks").glob("*.ipynb"), *(REPO / "notebooks" / "zh").glob("*.ipynb")]):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                sources[f"{path.relative_to(REPO)} {cell.id}"] = cell.source
    for path in sorted((REPO / "tools").glob("handout_cheatsheet*.html")):
        sources[str(path.relative_to(REPO))] = re.sub(r"<(?:li|p|tr|h\d)\b", "\n\n<", path.read_text(encoding="utf-8"))
    for name in ("handout_book.py", "workbook.py", "handout.py"):
        sources[f"tools/{name}"] = (REPO / "tools" / name).read_text(encoding="utf-8")
    from gradlab_hub import config

    sources["the hub's sign-in page"] = config.LOGIN_NOTE
    blocks = {}
    for where, text in sources.items():
        for number, block in enumerate(re.split(r"\n\s*\n|\n(?=\s*[-*] )", text)):
            blocks[f"{where} #{number}"] = block
    return blocks


def test_no_learner_facing_text_tells_hub_users_to_use_git() -> None:
    blocks = learner_texts()
    assert len(blocks) > 500, "the check reads the notebooks of both editions and the handout's sources"
    with_git = {where: block for where, block in blocks.items() if GIT_COMMAND.search(block)}
    told_on_hub = {where: block for where, block in with_git.items() if HUB.search(block)}
    assert told_on_hub == {}, f"git commands where the hub is meant: {told_on_hub}"
    unscoped = {where: block for where, block in with_git.items() if not LOCAL.search(block)}
    assert unscoped == {}, f"git commands not said to be for one's own machine: {unscoped}"
    # And 00 tells hub learners what to do instead, in both editions.
    for edition in ("notebooks/00_start_here.ipynb", "notebooks/zh/00_start_here.ipynb"):
        hub_items = [b for w, b in blocks.items() if w.startswith(edition) and HUB.search(b) and "Delete" in b]
        assert len(hub_items) == 1, edition
        assert re.search(r"(?i)link|链接", hub_items[0]), "open the workshop link again"


def test_the_pin_file_is_what_make_hub_reads(tmp_path: Path) -> None:
    chosen = pin.Pin("https://github.com/ada/gradlab", "day", "1" * 40, "2" * 40, ("notebooks/00_start_here.ipynb",))
    path = pin.save_pin(tmp_path / "state", chosen)
    assert json.loads(path.read_text())["ref"] == "day"
    assert pin.load_pin(tmp_path / "state") == chosen
    assert pin.load_pin(tmp_path / "elsewhere") is None
    assert list(pin.links("https://hub.example.org", chosen)) == ["notebooks/00_start_here.ipynb"]
