"""Binder launch: binder/ matches the course lock, and repo2docker reads it as intended."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.course, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
LOCK = ROOT / "requirements" / "course.lock"
GENERATOR = ROOT / "tools" / "binder_requirements.py"
REPO2DOCKER = Path(sys.executable).parent / "jupyter-repo2docker"

TEST_ONLY = {"pytest", "pytest-xdist", "pytest-timeout", "hypothesis", "playwright", "jupyter-repo2docker"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """{normalized name: version} of the ``name==version`` lines of a requirements file."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name, _, version = line.partition("==")
            found[normalize(name)] = version
    return found


def run_generator(*args: str) -> subprocess.CompletedProcess[str]:
    """tools/binder_requirements.py; skips the test where this environment is not the lock's (exit code 2)."""
    result = subprocess.run(
        [sys.executable, str(GENERATOR), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    if result.returncode == 2:  # it reads the installed packages' metadata: only the lock's environment will do
        pytest.skip(f"this environment does not hold requirements/course.lock ({result.stderr.strip()})")
    return result


def test_binder_versions_equal_the_lock() -> None:
    lock = pins(LOCK)
    binder = pins(BINDER / "requirements.txt")
    assert binder["torch"] == lock["torch"] + "+cpu", "Binder must install the CPU-only torch wheel"
    differ = {
        name: (version, lock.get(name))
        for name, version in binder.items()
        if name != "torch" and version != lock.get(name)
    }
    assert not differ, f"binder/requirements.txt differs from the lock (binder, lock): {differ}"
    assert not TEST_ONLY & binder.keys(), "test-only packages do not belong on Binder"
    for needed in ("jupyterlab", "ipywidgets", "ipykernel", "matplotlib", "graphviz", "torchviz"):
        assert needed in binder, f"{needed} is missing from binder/requirements.txt"


def test_binder_requirements_header_and_cpu_index() -> None:
    text = (BINDER / "requirements.txt").read_text(encoding="utf-8")
    assert "generated, do not edit" in text.splitlines()[0]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text.splitlines()


def test_binder_requirements_are_up_to_date() -> None:
    result = run_generator("--check")
    assert result.returncode == 0, result.stderr


def test_check_detects_a_drifted_copy(tmp_path: Path) -> None:
    drifted = tmp_path / "requirements.txt"
    text = (BINDER / "requirements.txt").read_text(encoding="utf-8")
    drifted.write_text(re.sub(r"^numpy==.*$", "numpy==1.0.0", text, flags=re.M), encoding="utf-8")
    assert drifted.read_text(encoding="utf-8") != text
    result = run_generator("--check", "--output", str(drifted))
    assert result.returncode == 1
    assert "drifted" in result.stderr and "numpy==1.0.0" in result.stderr

    missing = tmp_path / "absent.txt"
    assert run_generator("--check", "--output", str(missing)).returncode == 1


def test_binder_runtime_apt_and_postbuild() -> None:
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"
    assert "graphviz" in (BINDER / "apt.txt").read_text(encoding="utf-8").split()
    post_build = BINDER / "postBuild"
    text = post_build.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash")
    assert "pip install --no-cache-dir --no-deps -e ." in text
    assert "jupyter trust" in text
    assert subprocess.run(["bash", "-n", str(post_build)]).returncode == 0


@pytest.mark.skipif(not REPO2DOCKER.exists(), reason=f"jupyter-repo2docker is not installed next to {sys.executable}")
def test_repo2docker_dockerfile_installs_the_course() -> None:
    # --no-build only writes the Dockerfile (with --debug, to stdout): no Docker daemon needed.
    result = subprocess.run(
        [str(REPO2DOCKER), "--no-build", "--debug", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    dockerfile = result.stdout
    # repo2docker escapes paths of build files (".", "-" become "-2e", "-2d").
    unescaped = re.sub(r"-([0-9a-f]{2})", lambda m: chr(int(m[1], 16)), dockerfile)
    assert "python=3.11" in result.stderr
    assert "environment.py-3.11-linux-64.lock" in unescaped
    assert re.search(r"apt-get install --yes --no-install-recommends .*\bgraphviz\b", dockerfile)
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    assert "./binder/postBuild" in dockerfile


def test_every_binder_link_opens_a_committed_notebook() -> None:
    """The badges of both READMEs open a notebook that exists (English and Chinese editions)."""
    import re

    opened = []
    for readme in ["README.md", "README.zh-CN.md"]:
        text = (ROOT / readme).read_text(encoding="utf-8")
        for path in re.findall(r"mybinder\.org/v2/gh/[^)\s]*?urlpath=lab/tree/([^)\s&]+)", text):
            assert (ROOT / path).is_file(), f"{readme}: Binder opens {path}, which is not in the repository"
            opened.append(path)
    assert "notebooks/00_start_here.ipynb" in opened and "notebooks/zh/00_start_here.ipynb" in opened
