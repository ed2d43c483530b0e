"""Observation only, on a compatibility corpus: scripts run under ``gradlab run`` exactly as under ``python``.

``tests/scripts/compat/`` holds one correct script per torch feature people
combine with debugging (``autograd.grad`` over generators, ``torch.func``,
forward-mode AD, checkpoint in both modes, ``torch.compile``, autocast,
parametrizations, ``mark_dirty``, hooks, sparse and complex tensors, DDP) and a
few failing ones. Each correct script must exit with the same status and print
the same stdout and stderr under ``python -m gradlab run`` as under ``python``;
the only difference allowed is gradlab's own say (its warnings, its note after
the error). Each failing script of ``tests/`` (``tests/scripts``, the causes'
scripts, the corpus's ``broken.py``) must print torch's traceback and error
line byte for byte, gradlab's note after it.

The scripts run in forked children of two processes (``tests/forked.py``: one
per mode), not in two hundred interpreters; the first tests check that those
children print what real interpreters print.
"""

from __future__ import annotations

import json
import linecache
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed
from conftest import gloo_retried, gradlab_spoke, needs_raw_saved

pytestmark = [pytest.mark.library, pytest.mark.slow]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
COMPAT = TESTS / "scripts" / "compat"
FORKED = TESTS / "forked.py"

#: The compatibility scripts that fail under python (on purpose), with what torch's error must say
#: (torch 2.4 names nodes with their Backward0 suffix).
FAILING = {
    "gat_softmax.py": r"which is output 0 of Div(Backward0)?,",  # not Exp (NOTE [Which node torch names])
    "checkpoint_input_modified_reentrant.py": r"output 0 of Mul(Backward0)?, is at version 1; expected version 0",
    "checkpoint_input_modified_non_reentrant.py": r"output 0 of Mul(Backward0)?, is at version 2; expected version 1",
    "func_inplace.py": r"which is output 0 of Sigmoid(Backward0)?,",
}
#: Scripts that run a torch.func transform: gradlab steps aside only where torch shows its hooks (2.13; not 2.4).
TRANSFORMS = ("forward_ad.py", "func_grad.py", "func_inplace.py", "func_jacrev.py", "func_per_sample.py")
HOOKS_VISIBLE = hasattr(torch._C._autograd, "_top_saved_tensors_default_hooks")
OLD_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 10)


def _on_this_torch(scripts: list[str]) -> list[object]:
    """``scripts`` as parameters, marked where this torch lacks what gradlab needs to run them as python does."""
    xfail = pytest.mark.xfail(
        not HOOKS_VISIBLE,
        reason=f"torch {torch.__version__} does not show its saved-tensor hooks: gradlab cannot step aside "
        "inside torch.func, and torch refuses its hooks (gradlab says so once)",
        strict=True,
    )
    marks = {name: xfail for name in TRANSFORMS}
    # without Node._raw_saved_*.data (torch 2.4) the diagnosis reads the checkpoint's saved tensors, and
    # the checkpoint runs the block again: its warnings print (NOTE [Other hooks' saved tensors])
    marks["checkpoint_input_modified_non_reentrant.py"] = needs_raw_saved
    return [pytest.param(s, marks=marks[s]) if s in marks else s for s in scripts]


DISTRIBUTED = ("ddp_gloo.py",)  # run under torchrun, below
CORRECT = sorted(p.name for p in COMPAT.glob("*.py") if p.name not in FAILING and p.name not in DISTRIBUTED)
#: Every failing script of tests/ (the distributed ones need torchrun: tests/test_ddp.py runs them).
FAILING_ELSEWHERE = sorted(
    str(p.relative_to(TESTS))
    for p in (
        *(TESTS / "scripts").glob("*.py"),
        *(TESTS / "scripts" / "causes").glob("*.py"),
        *(TESTS / "corpus" / "cases").glob("*/broken.py"),
    )
    if not p.name.startswith("ddp_") and not p.name.endswith("_intended.py")
)
ALL = [str(COMPAT / name) for name in (*CORRECT, *FAILING)] + [str(TESTS / s) for s in FAILING_ELSEWHERE]

_GRADLAB_WARNING = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (GradlabWarning|UnusedStepWarning|SilentWriteWarning): ")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONWARNINGS", None)
    return env


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, dict[str, object]]]:
    """``runs[mode][script]``: exit code, stdout and stderr of every script, run once per mode (both modes at once)."""
    started = {
        mode: subprocess.Popen(
            [sys.executable, str(FORKED), mode, *ALL],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )
        for mode in ("python", "gradlab")
    }
    out: dict[str, dict[str, dict[str, object]]] = {}
    for mode, process in started.items():
        stdout, stderr = process.communicate(timeout=3000)
        assert process.returncode == 0, stderr[-3000:]
        records = [json.loads(line) for line in stdout.splitlines()]
        out[mode] = {str(r["script"]): r for r in records}
        assert sorted(out[mode]) == sorted(ALL), stderr[-3000:]
    return out


def without_gradlabs_warnings(stderr: str) -> str:
    """``stderr`` without the warnings gradlab gives (header, message lines, and the quoted source line)."""
    lines = stderr.splitlines(keepends=True)
    kept: list[str] = []
    i = 0
    while i < len(lines):
        m = _GRADLAB_WARNING.match(lines[i])
        if m is None:
            kept.append(lines[i])
            i += 1
            continue
        source = "  " + linecache.getline(m["file"], int(m["line"])).strip() + "\n"
        j = i
        while j < len(lines) and lines[j] != source:
            j += 1
        assert j < len(lines), f"a gradlab warning without its source line: {lines[i]!r}"
        i = j + 1
    return "".join(kept)


def _same_run_with_gradlabs_say(plain: dict[str, object], tracked: dict[str, object]) -> None:
    """``tracked`` printed what ``plain`` printed; past torch's error, only gradlab's note."""
    assert tracked["code"] == plain["code"]
    assert tracked["stdout"] == plain["stdout"]
    before, after = str(plain["stderr"]), without_gradlabs_warnings(str(tracked["stderr"]))
    assert after[: len(before)] == before
    rest = after[len(before) :]
    assert rest == "" or rest.startswith("\ngradlab"), rest[:500]


# -- the forked children print what real interpreters print -------------------------------------


@pytest.mark.parametrize("script", ["torch_warnings.py", "gat_softmax.py"])
def test_a_forked_child_prints_what_a_real_interpreter_prints(runs, script: str) -> None:
    path = str(COMPAT / script)
    for mode, command in (("python", [path]), ("gradlab", ["-m", "gradlab", "run", path])):
        real = subprocess.run([sys.executable, *command], capture_output=True, text=True, env=_env(), cwd=ROOT)
        child = runs[mode][path]
        assert (child["code"], child["stdout"], child["stderr"]) == (real.returncode, real.stdout, real.stderr)


# -- correct scripts: the same run --------------------------------------------------------------


@pytest.mark.parametrize("script", _on_this_torch(CORRECT))
def test_a_correct_script_runs_under_gradlab_as_under_python(runs, script: str) -> None:
    plain, tracked = runs["python"][str(COMPAT / script)], runs["gradlab"][str(COMPAT / script)]
    if plain["code"] != 0 and OLD_TORCH:  # torch 2.4's backward(inputs=) refuses a generator: so must gradlab
        _same_run_with_gradlabs_say(plain, tracked)
        return
    assert plain["code"] == 0, plain["stderr"]
    assert plain["stdout"], "each script prints what it computed, so that a changed result shows"
    assert tracked["code"] == 0 and tracked["stdout"] == plain["stdout"]
    assert without_gradlabs_warnings(str(tracked["stderr"])) == plain["stderr"]


@pytest.mark.skipif(not HOOKS_VISIBLE, reason=f"torch {torch.__version__} does not show its saved-tensor hooks")
@pytest.mark.parametrize("script", ["func_grad.py", "func_per_sample.py", "func_jacrev.py", "func_inplace.py"])
def test_gradlab_steps_aside_inside_torch_func_and_says_so_once(runs, script: str) -> None:
    path = COMPAT / script
    stderr = str(runs["gradlab"][str(path)]["stderr"])
    said = re.findall(
        rf"^{re.escape(str(path))}:(\d+): GradlabWarning: gradlab steps aside inside (.*?):", stderr, re.M
    )
    assert len(said) == 1, stderr[:2000]
    line, what = said[0]
    assert what == "torch.func.{grad, vjp, jacrev, hessian}"
    assert re.search(r"\b(grad|jacrev|hessian)\(", linecache.getline(str(path), int(line))), "the user's call"


def test_torchs_warnings_keep_the_users_line(runs) -> None:
    """Warnings torch raises inside calls gradlab wraps show the script's lines, as often as under python."""
    path = str(COMPAT / "torch_warnings.py")
    plain = str(runs["python"][path]["stderr"])
    shown = re.findall(rf"^{re.escape(path)}:(\d+): (\w+Warning)", plain, re.M)
    # torch.tensor(t) on lines 7, 8 and (once for three calls) 10; scatter_ on 12; grad_variables= on 14;
    # only_inputs= on 15 (C++ warnings, and Python ones with stacklevel=2)
    assert [line for line, _ in shown] == ["7", "8", "10", "12", "14", "15"], plain
    assert runs["gradlab"][path]["stderr"] == plain
    assert not gradlab_spoke(plain)


# -- failing scripts: torch's error, byte for byte -----------------------------------------------


@pytest.mark.parametrize("script", _on_this_torch(sorted(FAILING)))
def test_a_failing_compat_script_raises_torchs_error(runs, script: str) -> None:
    plain, tracked = runs["python"][str(COMPAT / script)], runs["gradlab"][str(COMPAT / script)]
    assert plain["code"] == 1 and re.search(FAILING[script], str(plain["stderr"]))
    _same_run_with_gradlabs_say(plain, tracked)


@pytest.mark.parametrize("script", FAILING_ELSEWHERE)
def test_each_script_of_the_tests_raises_torchs_error_under_gradlab(runs, script: str) -> None:
    plain, tracked = runs["python"][str(TESTS / script)], runs["gradlab"][str(TESTS / script)]
    if plain["code"] == 0:  # a script that trains (silently wrong): gradlab may warn, nothing else
        assert tracked["code"] == 0 and tracked["stdout"] == plain["stdout"]
        assert without_gradlabs_warnings(str(tracked["stderr"])) == plain["stderr"]
        return
    _same_run_with_gradlabs_say(plain, tracked)


@pytest.mark.parametrize(
    ("script", "tensor", "saved_by", "versions"),
    [
        pytest.param(
            "checkpoint_input_modified_non_reentrant.py",
            "output of Add [3, 4]",
            "torch.utils.checkpoint",
            (1, 2),
            marks=needs_raw_saved,  # without it, reading the block's saved tensors runs the block again
        ),
        ("checkpoint_input_modified_reentrant.py", "output of Mul [3, 4]", "CheckpointFunctionBackward", (0, 1)),
    ],
)
def test_the_note_inside_a_checkpoint_names_the_checkpoints_input(
    runs, script: str, tensor: str, saved_by: str, versions: tuple[int, int]
) -> None:
    """The stale tensor is the checkpoint's input (hidden), its versions going up: never a tensor of the block.

    Before, a non-reentrant checkpoint's note named a tensor of the block (read while the
    checkpoint recomputed it) with the input's versions: ``mul_: version 1 -> 0``.
    """
    stderr = str(runs["gradlab"][str(COMPAT / script)]["stderr"])
    note = stderr[stderr.index("\ngradlab: ") :]
    saved, now = versions
    assert note.splitlines()[1] == (
        f"gradlab: error[GL0002 modified in place]: {tensor} was changed by mul_ after autograd saved it"
    )
    assert "hidden.mul_(3)" in note and f"mul_: version {saved} -> {now}" in note
    assert f"saved by {saved_by} at version {saved}" in note
    assert "weight" not in note and "Sigmoid" not in note


# -- DDP under torchrun --------------------------------------------------------------------------


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch built without distributed")
def test_ddp_on_gloo_runs_under_gradlab_as_under_python(tmp_path: Path) -> None:
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    assert torchrun is not None
    script = str(COMPAT / "ddp_gloo.py")
    done = []
    for command in ([script], ["-m", "gradlab", "run", script]):
        run = gloo_retried(
            lambda command=command: subprocess.run(
                [torchrun, "--standalone", "--nproc_per_node=2", *command],  # standalone: a free port of its own
                capture_output=True,
                text=True,
                env=dict(_env(), TMPDIR=str(tmp_path)),
                cwd=tmp_path,
                timeout=300,
            )
        )
        done.append(run)
    plain, tracked = done
    assert plain.returncode == 0 and plain.stdout.splitlines()[-1] == "True", plain.stderr[-2000:]
    assert (tracked.returncode, tracked.stdout) == (plain.returncode, plain.stdout)
    assert without_gradlabs_warnings(tracked.stderr) == plain.stderr
