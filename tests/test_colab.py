"""The notebooks' Colab cell, run as on Colab: Python 3.12, a torch that is not the lock's, no gradlab.

Colab's kernel has its own torch (and matplotlib, IPython); the first code cell of each
notebook installs the course beside it when ``google.colab`` is imported. Here a fresh
virtual environment sees the packages of another environment (``.venv-py3.12``, which
``make test-python PY=3.12`` builds, with torch 2.15.0) the way Colab's kernel sees its
preinstalled ones, but not gradlab; a fake ``google.colab`` module is imported, and the
cell's install source (the release tag on GitHub) is pointed at a copy of this checkout.
pip runs offline. Then gradlab must import from the new install, torch must be untouched,
and notebook 01's first cells must run as they do in the course.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from loading import load_module

ROOT = Path(__file__).resolve().parent.parent
DONOR = Path(os.environ.get("GRADLAB_COLAB_PYTHON", ROOT / ".venv-py3.12" / "bin" / "python"))
NOTEBOOK = ROOT / "notebooks" / "01_the_original_loop.ipynb"

pytestmark = [
    pytest.mark.course,
    pytest.mark.slow,
    pytest.mark.skipif(
        not DONOR.exists(),
        reason="needs a Python 3.12 environment with a torch other than the lock's: make test-python PY=3.12 "
        "(or GRADLAB_COLAB_PYTHON=/path/to/python)",
    ),
]


def _lock_torch() -> str:
    lock = (ROOT / "requirements" / "course.lock").read_text(encoding="utf-8")
    return next(line.split("==", 1)[1] for line in lock.splitlines() if line.startswith("torch=="))


def _ask(python: Path | str, code: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    r = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=900, env=env, cwd=cwd or ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def test_the_colab_cell_installs_the_course_beside_another_torch(tmp_path: Path, monkeypatch) -> None:
    tool = load_module(ROOT / "tools" / "execute_notebooks.py", "gradlab_tools_execute_notebooks", monkeypatch)
    facts = json.loads(
        _ask(
            DONOR,
            "import json, sys, sysconfig, torch; print(json.dumps({'base': sys._base_executable, "
            "'purelib': sysconfig.get_paths()['purelib'], 'python': sys.version_info[:2], 'torch': torch.__version__}))",
        )
    )
    assert facts["python"] == [3, 12], "Colab runs Python 3.12"
    assert facts["torch"].split("+")[0] != _lock_torch(), "the point is a torch other than the lock's"

    colab = tmp_path / "colab"
    subprocess.run([facts["base"], "-m", "venv", str(colab)], check=True, timeout=600)
    python = colab / "bin" / "python"
    purelib = Path(_ask(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (purelib / "preinstalled.pth").write_text(facts["purelib"] + "\n")  # Colab's own packages, gradlab not among them
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "gradlab", src / "gradlab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1"
    )
    work = tmp_path / "content"  # Colab's working folder: no gradlab/ next to it
    work.mkdir()
    assert "missing" in _ask(
        python, "import importlib.util as u; print('missing' if u.find_spec('gradlab') is None else 'there')", env, work
    )

    cells = [c for c in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    setup = "".join(cells[0]["source"])
    assert tool.COLAB_SOURCE in setup
    setup = setup.replace(tool.COLAB_SOURCE, f"torch-gradlab[colab] @ {src.as_uri()}")
    first = ["".join(c["source"]) for c in cells[1:5]]
    assert "raises-exception" in cells[4]["metadata"].get("tags", []), (
        "notebook 01's fourth course cell fails on purpose"
    )
    driver = textwrap.dedent(
        f"""
        import json, sys, types
        google = types.ModuleType("google"); google.colab = types.ModuleType("google.colab")
        sys.modules.update({{"google": google, "google.colab": google.colab}})
        exec(compile({setup!r}, "colab cell", "exec"), {{}})

        import gradlab, torch
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        results = [shell.run_cell(code, silent=True) for code in {first!r}]
        print(json.dumps({{
            "gradlab": gradlab.__file__, "torch": torch.__version__, "torch_file": torch.__file__,
            "ok": [r.success for r in results],
            "error": repr(results[-1].error_in_exec),
        }}))
        """
    )
    out = json.loads(_ask(python, driver, env, work).strip().splitlines()[-1])
    assert out["gradlab"].startswith(str(colab)), "gradlab is imported from the install the cell made"
    assert out["torch"] == facts["torch"] and out["torch_file"].startswith(facts["purelib"]), (
        "Colab's torch is untouched"
    )
    assert not (purelib / "torch").exists(), "pip installed no torch of its own"
    assert out["ok"] == [True, True, True, False], out
    assert "backward through the graph a second time" in out["error"], out["error"]
