"""The distribution as pip sees it: the wheel's and the sdist's metadata, built from this checkout.

``make dist`` builds both into ``dist/``, runs ``twine check`` and then these tests on
those files (``GRADLAB_DIST=dist``); without that variable the tests build their own into
a temporary folder, from a copy of the files a build reads (the checkout stays untouched).
"""

from __future__ import annotations

import email
import email.message
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

import gradlab

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The Pythons the README's compatibility table reports as tested.
TESTED_PYTHONS = ("3.11", "3.12", "3.13")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("GRADLAB_DIST")
    if given:
        return Path(given).resolve()
    pytest.importorskip("build", reason="the build package is in requirements/course.lock: make setup")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "gradlab", src / "gradlab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {dist}, found {found}"
    return found[0]


@pytest.fixture(scope="module")
def wheel(dist: Path) -> zipfile.ZipFile:
    return zipfile.ZipFile(_one(dist, "torch_gradlab-*.whl"))


@pytest.fixture(scope="module")
def metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    return email.message_from_bytes(wheel.read(name))


def test_the_distribution_name_is_the_one_gradlab_names() -> None:
    assert PYPROJECT["project"]["name"] == gradlab._DISTRIBUTION == "torch-gradlab"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"pip install {gradlab._DISTRIBUTION}" in readme


def test_wheel_metadata_name_version_licence_python(metadata: email.message.Message) -> None:
    assert metadata["Name"] == "torch-gradlab"
    assert metadata["Version"] == gradlab.__version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    python = SpecifierSet(metadata["Requires-Python"])
    assert python == SpecifierSet(PYPROJECT["project"]["requires-python"]) == SpecifierSet(">=3.11,<3.14")
    assert all(f"{v}.0" in python for v in TESTED_PYTHONS) and "3.10.9" not in python and "3.14.0" not in python
    classifiers = metadata.get_all("Classifier") or []
    shown = sorted(
        c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert shown == list(TESTED_PYTHONS)
    assert not any(c.startswith("License ::") for c in classifiers)  # the SPDX expression says it (PEP 639)


def test_wheel_requires_torch_only(metadata: email.message.Message) -> None:
    requires = metadata.get_all("Requires-Dist") or []
    parsed = [Requirement(r) for r in requires]
    always = [r for r in parsed if r.marker is None]
    assert [(r.name, r.specifier) for r in always] == [("torch", SpecifierSet(">=2.4,<2.16"))]
    plots = [r for r in parsed if r.marker is not None and r.marker.evaluate({"extra": "plots"})]
    assert [(r.name, r.specifier) for r in plots] == [("matplotlib", SpecifierSet(">=3.8,<4"))]


def test_wheel_holds_the_library_and_its_licence(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "gradlab/__init__.py" in names and "gradlab/py.typed" in names
    assert "gradlab/locale/zh_CN/LC_MESSAGES/gradlab.po" in names
    licences = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert licences and wheel.read(licences[0]) == (ROOT / "LICENSE").read_bytes()
    assert not [n for n in names if n.startswith(("tests/", "notebooks/", "tools/"))]


def test_sdist_holds_the_licence(dist: Path) -> None:
    with tarfile.open(_one(dist, "torch_gradlab-*.tar.gz")) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"LICENSE", "pyproject.toml", "README.md", "gradlab/__init__.py"} <= names


def test_citation_names_this_version_and_the_licences() -> None:
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^cff-version: 1\.2\.0$", text, re.M)
    assert re.search(rf'^version: "{re.escape(gradlab.__version__)}"$', text, re.M)
    assert re.search(r"^license:\n  - MIT\n  - CC-BY-4.0$", text, re.M)
    assert (ROOT / "LICENSES" / "CC-BY-4.0.txt").read_text(encoding="utf-8").startswith("Attribution 4.0 International")
