"""gradlab where people train: PyTorch Lightning, the Hugging Face Trainer, Accelerate and torch.compile (issue #30).

Every script in tests/scripts/frameworks/ trains a tiny model built in the script (from a config for
Transformers; nothing is downloaded: the runs are offline) with the real framework, as a user would
write it. For each:

* ``python -m gradlab run`` gives the exit code and stdout of ``python``, and its stderr is python's
  with gradlab's note after it (a failing script) or exactly python's (a correct one: no warning, no
  note);
* the note of a failing script names the user's modules and the user's line (in ``training_step``,
  ``compute_loss`` or ``forward``), never a framework's frame, and its first fix is an edit of the
  user's file which, applied as printed, runs clean;
* the claims of a fix (which loss trains which module) are compared with what trains, measured by
  :func:`gradlab.record_training` on the patched script (tests/framework_probe.py).

The frameworks are the ``frameworks`` extra; a test is skipped, with the reason, when its framework is
absent. A script runs in its own process (a framework's import and a fit take seconds): each command
runs once per session and is shared by the tests that read it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import gradlab_spoke

from gradlab.edits import Edit, apply_edits

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts" / "frameworks"
PROBE = Path(__file__).resolve().parent / "framework_probe.py"
FRAMEWORK_FILES = re.compile(r"site-packages|/(lightning|pytorch_lightning|transformers|accelerate)/")


def needs(*packages: str) -> pytest.MarkDecorator:
    """Skip unless every package is installed (the ``frameworks`` extra)."""
    absent = [p for p in packages if importlib.util.find_spec(p) is None]
    return pytest.mark.skipif(
        bool(absent), reason=f'needs {", ".join(absent)}: pip install "torch-gradlab[frameworks]"'
    )


LIGHTNING, HF, ACCELERATE = needs("lightning"), needs("transformers"), needs("accelerate")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONSTARTUP", None)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


@functools.cache
def _run(args: tuple[str, ...], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def python(script: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run((str(SCRIPTS / script), *args))


def gradlab_run(script: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(("-m", "gradlab", "run", str(SCRIPTS / script), *args))


@functools.cache
def probe(script: str | Path, *args: str) -> dict[str, Any]:
    """What gradlab saw when ``gradlab run`` ran the script, and what trained (tests/framework_probe.py)."""
    path = SCRIPTS / script
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"gradlab-probe-{os.getpid()}-{path.stem}-{'-'.join(args)}.json"
    result = _run((str(PROBE), str(out), str(path), *args))
    assert out.exists(), result.stderr[-3000:]
    data: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return data


def line_of(script: str, code: str) -> int:
    """The number of the first line of ``script`` that is ``code`` (indentation aside)."""
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == code)


def _note(stderr: str) -> str:
    _, sep, note = stderr.partition("\ngradlab: ")
    assert sep, stderr[-3000:]
    return note


# -- failing scripts -------------------------------------------------------------------------------------------

# script, args, framework mark, error code, the tensor named, the user's line that wrote or kept it (in
# training_step, compute_loss or forward), and the first fix's new code.
FAILING = [
    ("lightning_auto_inplace.py", (), LIGHTNING, "GL0002", "output of Sigmoid", "gate *= 2.0", "gate = gate * 2.0"),
    (
        "lightning_accumulate_state.py",
        (),
        LIGHTNING,
        "GL0001",
        None,
        "out, self.hidden = self.rnn(x, self.hidden)",
        "self.hidden = self.hidden.detach()",
    ),
    (
        "lightning_manual_gan.py",
        (),
        LIGHTNING,
        "GL0002",
        "discriminator.2.weight",
        "opt_d.step()",
        "out_fake = self.discriminator(fake)",
    ),
    (
        "hf_compute_loss_inplace.py",
        (),
        HF,
        "GL0002",
        "output of Softmax",
        "probs.clamp_(min=1e-4)",
        "probs = probs.clamp(min=1e-4)",
    ),
    ("hf_forward_inplace.py", (), HF, "GL0002", "output of Tanh", "pooled += 0.1", "pooled = pooled + 0.1"),
    (
        "hf_trainer_stale.py",
        ("adamw_torch",),
        HF,
        "GL0002",
        "model.classifier.weight",
        'self.previous = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits',
        "self.previous = model(input_ids=inputs['input_ids'], attention_mask=inputs['attention_mask']).logits.detach()",
    ),
    (
        "hf_trainer_adversarial.py",
        (),
        HF,
        "GL0002",
        "critic.2.weight",
        "self.critic_opt.step()",
        "critic_out = self.critic(outputs.hidden_states[-1][:, 0])",
    ),
    (
        "accelerate_backward_step.py",
        (),
        ACCELERATE,
        "GL0002",
        "encoder.2.weight",
        "opt_encoder.step()",
        "head_loss = nn.functional.mse_loss(head(z.detach()), y)",
    ),
    (
        "accelerate_accumulate_anchor.py",
        (),
        ACCELERATE,
        "GL0001",
        None,
        "anchor = embed(torch.ones(1, 8))",
        "anchor = embed(torch.ones(1, 8))",
    ),
    (
        "compile_step.py",
        (),
        needs(),
        "GL0002",
        "encoder.2.weight",
        "opt_encoder.step()",
        "head_loss = nn.functional.mse_loss(head(z.detach()), y)",
    ),
]

# Where the first fix cannot be an edit yet: the failing backward is run by the framework (HF's Trainer), so the
# frame gradlab reads for the fix is the script's `trainer.train()`, not compute_loss, which built the graph (the
# note of issue #30 says what the lead's modules must change).
FIRST_FIX_XFAIL = {
    "hf_trainer_stale.py": "carried state kept on the Trainer in compute_loss: the fix names `loss`, not self.previous",
    "hf_trainer_adversarial.py": "the critic's step in compute_loss: the fixes are sentences (no frame of compute_loss)",
}


def _failing_params() -> list[Any]:
    return [pytest.param(*row[:2], *row[3:], marks=row[2], id=row[0]) for row in FAILING]


def _user_script(note: str) -> None:
    """The note points at lines of the scripts, never at a framework's files."""
    for line in note.splitlines():
        if line.startswith(("  --> ", "   = tensor:", "   = needed by:")):
            assert not FRAMEWORK_FILES.search(line), line
            assert "tests/scripts/frameworks/" in line, line


@pytest.mark.parametrize("script, args, code, tensor, user_line, new_code", _failing_params())
def test_gradlab_run_is_python_then_the_note(script, args, code, tensor, user_line, new_code) -> None:
    plain, ours = python(script, *args), gradlab_run(script, *args)
    assert plain.returncode == ours.returncode == 1, ours.stderr[-3000:]
    assert ours.stdout == plain.stdout
    head, sep, _ = ours.stderr.partition("\ngradlab: error[")
    assert sep, ours.stderr[-3000:]
    assert head.rstrip("\n") + "\n" == plain.stderr  # the traceback as python prints it, then gradlab's note only
    assert ours.stderr.count("gradlab: error[") == 1


@pytest.mark.parametrize("script, args, code, tensor, user_line, new_code", _failing_params())
def test_the_note_names_the_users_modules_and_line(script, args, code, tensor, user_line, new_code) -> None:
    note = _note(gradlab_run(script, *args).stderr)
    assert note.startswith(f"error[{code} "), note
    _user_script(note)
    if tensor is not None:
        assert note.splitlines()[0].split(": ", 1)[1].startswith(tensor), note
    assert user_line in note, note  # the user's line: the write, what kept the graph, or the fix's code
    if code == "GL0002":  # where the write was made, or the tensor saved
        assert f"tests/scripts/frameworks/{script}:{line_of(script, user_line)}" in note, note
    seen = probe(script, *args)["diagnosis"]
    assert seen is not None
    for write in seen["writes"]:
        assert write[1] is not None and not FRAMEWORK_FILES.search(write[1]), write


@pytest.mark.parametrize("script, args, code, tensor, user_line, new_code", _failing_params())
def test_the_first_fix_is_an_edit_of_the_users_file_that_runs(
    script, args, code, tensor, user_line, new_code, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if script in FIRST_FIX_XFAIL:
        request.applymarker(pytest.mark.xfail(reason=FIRST_FIX_XFAIL[script], strict=True))
    fix = probe(script, *args)["diagnosis"]["fixes"][0]
    assert fix["edits"], fix["summary"]
    path = SCRIPTS / script
    edits = [Edit(*e) for e in fix["edits"]]
    assert all(e.filename == str(path) for e in edits)
    assert any(new_code in e.text for e in edits), fix["edits"]
    patched = tmp_path / script
    patched.write_text(apply_edits(path.read_text(), edits))
    ran = _run((str(patched), *args), tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]


# -- correct scripts: no false alarm ---------------------------------------------------------------------------

CORRECT = [
    pytest.param("lightning_correct.py", (), marks=LIGHTNING, id="lightning"),
    pytest.param("hf_trainer_correct.py", (), marks=HF, id="hf-trainer"),
    pytest.param("accelerate_correct.py", (), marks=ACCELERATE, id="accelerate"),
    pytest.param("compile_correct.py", (), id="compile-aot_eager"),
]


@pytest.mark.parametrize("script, args", CORRECT)
def test_a_correct_script_runs_under_gradlab_exactly_as_under_python(script: str, args: tuple[str, ...]) -> None:
    plain, ours = python(script, *args), gradlab_run(script, *args)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert (ours.returncode, ours.stdout, ours.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert not gradlab_spoke(ours.stderr)


# -- torch.compile with inductor, where this machine's compiler allows --------------------------------------------


@functools.cache
def _inductor_compiles() -> str | None:
    """None when inductor compiles a tiny model here, else why not."""
    code = (
        "import torch\n"
        "f = torch.compile(torch.nn.Linear(2, 1), backend='inductor')\n"
        "f(torch.ones(3, 2, requires_grad=True)).sum().backward()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=_env())
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["inductor failed"])[-1]


def test_inductor_names_the_weight_the_writer_and_the_line() -> None:
    why = _inductor_compiles()
    if why is not None:
        pytest.skip(f"torch.compile(backend='inductor') cannot compile on this machine: {why}")
    plain, ours = python("compile_step.py", "inductor"), gradlab_run("compile_step.py", "inductor")
    assert plain.returncode == ours.returncode == 1 and ours.stdout == plain.stdout
    note = _note(ours.stderr)
    assert note.startswith("error[GL0002 modified in place]: encoder.2.weight was changed by SGD.step()"), note
    assert f"--> tests/scripts/frameworks/compile_step.py:{line_of('compile_step.py', 'opt_encoder.step()')}" in note


# -- intent when the framework owns the loop ---------------------------------------------------------------------


def _trained_by(record: dict[str, Any], loss: str) -> set[str]:
    """The modules ``loss`` trained at any optimizer step of the record (its gradient, used by a step)."""
    return {m for step in record["steps"] for name, modules in step[4] for m in modules if name == loss}


CLAIMED = [
    pytest.param("lightning_manual_gan.py", marks=[LIGHTNING], id="lightning-gan"),
    pytest.param("compile_step.py", id="compile"),
    pytest.param("accelerate_backward_step.py", marks=[ACCELERATE], id="accelerate"),
]


@pytest.mark.parametrize("script", CLAIMED)
def test_the_first_fixs_claims_are_what_trains_after_it(script: str, tmp_path: Path) -> None:
    """``Fix.claims`` (the ``trains:`` line as data) against record_training on the patched script."""
    fix = probe(script)["diagnosis"]["fixes"][0]
    assert fix["claims"] and fix["edits"], fix
    path = SCRIPTS / script
    patched = tmp_path / script
    patched.write_text(apply_edits(path.read_text(), [Edit(*e) for e in fix["edits"]]))
    ran = probe(patched)
    assert ran["exit"] == 0 and ran["diagnosis"] is None, ran.get("error")
    for loss, modules in fix["claims"]:
        assert _trained_by(ran["record"], loss) == set(modules), (loss, modules, ran["record"]["steps"])


@LIGHTNING
def test_the_record_of_the_gan_in_manual_optimization() -> None:
    """What ran before the failing `manual_backward(g_loss)`: opt_d stepped the discriminator on d_loss (the record
    names the LightningModule's models by attribute, and the loss of manual_backward by its argument)."""
    steps = probe("lightning_manual_gan.py")["record"]["steps"]
    assert [s[:2] for s in steps] == [["opt_d", 1]], steps
    assert steps[0][4] == [["d_loss", ["discriminator"]]], steps


@HF
def test_the_trainers_own_optimizer_is_read_from_the_record() -> None:
    """The adversary's step in compute_loss fails the Trainer's backward at step 2: what the Trainer's AdamW
    stepped after that backward at step 1 is the record. The trains: line says the failing loss trains the model
    and the critic learns from critic_loss only; the script as the first fix would make it (the critic's output
    recomputed after its step) trains that, measured."""
    note = probe("hf_trainer_adversarial.py")["diagnosis"]["note"]
    trains = next(line for line in note.splitlines() if line.startswith("   = trains: "))
    assert "trains model through the updated critic" in trains, note
    assert "critic learns from critic_loss only" in trains, note
    fixed = probe("hf_trainer_adversarial_intended.py")
    assert fixed["exit"] == 0, fixed.get("error")
    trainer_steps = [s for s in fixed["record"]["steps"] if s[5] == ["model"]]  # the Trainer's AdamW holds `model`
    critic_steps = [s for s in fixed["record"]["steps"] if s[0].endswith("critic_opt")]
    assert len(trainer_steps) == 3 and len(critic_steps) == 2, fixed["record"]["steps"]
    assert all(["trainer.train()", ["model"]] in s[4] for s in trainer_steps), trainer_steps  # the loss trains model
    assert all([loss for loss, _ in s[4]] == ["critic_loss"] for s in critic_steps), critic_steps  # critic: only that


# -- the Trainer's default fused AdamW: the version counter misses the write ----------------------------------------


@HF
def test_the_trainers_fused_adamw_gets_the_silent_write_warning_in_the_users_code() -> None:
    plain, ours = python("hf_trainer_stale.py"), gradlab_run("hf_trainer_stale.py")
    assert plain.returncode == ours.returncode == 0 and ours.stdout == plain.stdout
    assert plain.stdout.startswith("optimizer: AdamW True\n")  # the Trainer's default: fused AdamW (torch >= 2.8)
    assert not gradlab_spoke(plain.stderr) and "SilentWriteWarning" in ours.stderr
    seen = [w for w in probe("hf_trainer_stale.py")["warnings"] if w[0] == "SilentWriteWarning"]
    assert seen, ours.stderr[-3000:]
    text, filename = seen[0][1], seen[0][2]
    assert filename == str(SCRIPTS / "hf_trainer_stale.py")  # the warning points at the user's script
    assert "model.classifier.weight (transposed view) was changed by AdamW.step()" in text, text
    assert "the version counter missed the write" in text
    kept = line_of("hf_trainer_stale.py", FAILING[5][5])
    assert f"saved by AddmmBackward0 at version 2, at tests/scripts/frameworks/hf_trainer_stale.py:{kept}:" in text


# -- the callbacks ------------------------------------------------------------------------------------------------


@LIGHTNING
def test_the_lightning_callback_tracks_and_checks_intent_at_step_1() -> None:
    plain = python("lightning_callback.py")
    assert plain.returncode == 0, plain.stderr[-3000:]
    out = plain.stdout.splitlines()
    assert "correct: reports 1 ok True kinds []" in out and "correct: warnings []" in out
    assert "cut: reports 1 ok False kinds ['unreachable']" in out  # the detached encoder, before its backward
    assert "correct: tracker active after fit False" in out and "cut: tracker active after fit False" in out
    assert any(line.startswith("inplace: note gradlab: error[GL0002 modified in place]: ") for line in out)
    assert "inplace: tracker active after fit False" in out  # closed by on_exception
    ours = gradlab_run("lightning_callback.py")  # gradlab run works unchanged with the callback
    assert (ours.returncode, ours.stdout) == (plain.returncode, plain.stdout)


@HF
def test_the_hf_callback_tracks_and_checks_intent_at_step_1() -> None:
    plain = python("hf_callback.py")
    assert plain.returncode == 0, plain.stderr[-3000:]
    out = plain.stdout.splitlines()
    assert "correct: reports 1 ok True kinds []" in out and "correct: warnings []" in out
    assert "cut: reports 1 ok False kinds ['unreachable']" in out
    assert "stale: warnings ['SilentWriteWarning', 'SilentWriteWarning']" in out  # fused AdamW, tracked every step
    assert all(f"{case}: tracker active after train False" in out for case in ("correct", "cut", "stale"))
    assert all("hf_callback.py:" in line for line in out if " warning at " in line)  # the user's line, not ours
    ours = gradlab_run("hf_callback.py")
    assert (ours.returncode, ours.stdout) == (plain.returncode, plain.stdout)


@pytest.mark.parametrize(
    "module, blocked",
    [("lightning", ("lightning", "pytorch_lightning")), ("huggingface", ("transformers",))],
)
def test_a_missing_framework_names_the_extra_to_install(module: str, blocked: tuple[str, ...]) -> None:
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None  # as if not installed\n"
        "try:\n"
        f"    import gradlab.integrations.{module}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"gradlab.integrations.{module} needs " in r.stdout
    assert 'pip install "torch-gradlab[frameworks]"' in r.stdout


def test_importing_gradlab_imports_no_framework() -> None:
    code = (
        "import sys, gradlab, gradlab.integrations\n"
        "with gradlab.track():\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('lightning', 'pytorch_lightning', 'lightning_fabric', 'transformers', 'accelerate')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
