"""Each cause gradlab tells apart, on a user-style script written for it (tests/scripts/causes/).

For every script: the note's cause is the expected one; the first fix carries code only as checked edits
of the script; applied exactly as printed, the script runs, and the gradients each optimizer step uses
equal those of the hand-written intended version (``NAME_intended.py``), real torch as the oracle; the
fix's ``claims`` name the models the intended version trains with that loss; and ``check()`` called right
before the failing backward gives the same cause and first fix as the note.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import gradlab
from gradlab.edits import Edit, apply_edits
from gradlab.names import modules_in

pytestmark = [pytest.mark.library, pytest.mark.slow]

CAUSES = Path(__file__).parent / "scripts" / "causes"

# script -> (cause, what each loss trains after the first fix, as (loss, modules)), read from the intended version
EXPECTED: dict[str, tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "double_backward": ("same_loss_twice", (("out", ("net",)),)),
    "stale_forward": ("stale_forward", (("loss", ("net",)),)),
    "reinforce_buffer": ("list_never_cleared", (("loss", ("policy",)),)),
    "lstm_state": ("carried_state", (("loss", ("head", "lstm")),)),
    "maml_fast_weights": ("fast_weights_in_place", (("outer_loss", ("w1", "w2")),)),  # parameters of no module, by name
    "shared_encoder": (
        "optimizer_step",
        (("reg_loss", ("encoder", "reg_head")), ("cls_loss", ("cls_head", "encoder"))),
    ),
    "gan_no_retain": ("attached_output", (("g_loss", ("G",)), ("d_loss", ("D",)))),
    # a model no optimizer holds, EMA-written under no_grad after its forward: its output is a target
    "ema_target": ("untracked_write", (("loss", ("online",)),)),
    # a buffer divided by, then updated under no_grad in the same forward: the division reads a copy
    "buffer_normalizer": ("untracked_write", (("value_loss", ("critic",)),)),
    # a tensor computed before the loop from the weights the loop's own forward uses: a constant
    "reference_logits": ("stale_forward", (("objective", ("policy",)),)),
    # state kept on an object (obj.attr = f(obj.attr, ...)) across iterations: detached where it is kept
    "kept_memory": ("carried_state", (("loss", ("encoder",)),)),
    # opt.step() moved between the loss's forward and its backward: moved back after the backward
    "step_moved_early": ("step_before_backward", (("loss", ("net",)),)),
    # a tensor a constructor computed through a model no optimizer holds, kept on the module: detached there
    "latent_average_kept": ("stale_forward", (("loss", ("net",)),)),
    # nn.Embedding(max_norm=...) renormalises its weight in place at lookup: read a copy where it is saved
    "embedding_max_norm": ("untracked_write", (("loss", ("emb", "head")),)),
    # the model's whole forward hoisted above the loop: moved into it
    "hoisted_model_forward": ("stale_forward", (("loss", ("model",)),)),
    # two buffers redrawn in place by every forward, the forward run twice before one backward: both writes
    # out of place (NOTE [Every stale write])
    "jitter_buffers_redrawn": ("inplace_op", (("loss", ("head", "jitter")),)),
    # state kept on submodules' attributes across forwards (NOTE [State kept on modules]): reset by the class's
    # own method after the backward; a preallocated buffer written and read back: detached where it is read
    "leaky_cells_state_kept": ("carried_state", (("loss", ("net",)),)),
    "slot_memory_written": ("carried_state", (("err", ("out", "reader")),)),
}


def _run(source: str, filename: str) -> tuple[BaseException | None, list[list[torch.Tensor | None]]]:
    """Run ``source`` under track(); the gradients each optimizer step used, in order, and the error raised."""
    steps: list[list[torch.Tensor | None]] = []

    def before_step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        steps.append([None if p.grad is None else p.grad.clone() for g in opt.param_groups for p in g["params"]])

    ns: dict[str, Any] = {"__name__": "__main__", "__file__": filename}
    ns["gradlab"] = gradlab
    ns["_CHECKED"] = []  # the probe's check() results (a global: the failing backward may run in a function)
    _NAMESPACES[:] = [ns]
    handle = register_optimizer_step_pre_hook(before_step)
    error: BaseException | None = None
    try:
        with gradlab.track(names=lambda: modules_in(ns)):
            exec(compile(source, filename, "exec"), ns)
    except RuntimeError as e:
        error = e
    finally:
        handle.remove()
    return error, steps


_NAMESPACES: list[dict[str, Any]] = []  # the namespace of the latest run (the probe's check() result)


def _same(a: list[list[torch.Tensor | None]], b: list[list[torch.Tensor | None]]) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y)
        and all(
            (p is None and q is None) or (p is not None and q is not None and torch.allclose(p, q))
            for p, q in zip(x, y)
        )
        for x, y in zip(a, b)
    )


def _diagnosis(script: str) -> gradlab.Diagnosis:
    path = CAUSES / f"{script}.py"
    error, _ = _run(path.read_text(), str(path))
    assert error is not None, f"{script} should fail"
    return gradlab.last_diagnosis(error)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_the_cause_is_told_apart(script: str) -> None:
    d = _diagnosis(script)
    assert d.cause == EXPECTED[script][0], str(d)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_the_first_fix_applied_as_printed_trains_what_the_intended_version_trains(script: str) -> None:
    path = CAUSES / f"{script}.py"
    fix = _diagnosis(script).fixes[0]
    assert fix.edits, f"{script}: the first fix should be checked code\n{fix.lines()}"
    assert all(isinstance(e, Edit) and e.filename == str(path) for e in fix.edits)
    # what is printed is what is applied (a deletion prints nothing)
    assert fix.code == "\n".join(textwrap.dedent(e.text) for e in fix.edits if e.text)
    assert fix.applicability == "machine-applicable"
    patched = apply_edits(path.read_text(), fix.edits)
    error, steps = _run(patched, str(path.with_name(f"{script}_patched.py")))
    assert error is None, f"{script}: the patched script fails: {error}"
    intended = CAUSES / f"{script}_intended.py"
    _, want = _run(intended.read_text(), str(intended))
    assert steps and _same(steps, want), f"{script}: the gradients of the optimizer steps differ from the intended ones"
    assert dict(fix.claims) == dict(EXPECTED[script][1])  # the failing loss's and the loop's other losses


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_check_before_the_backward_agrees_with_the_note(script: str, tmp_path: Path) -> None:
    path = CAUSES / f"{script}.py"
    note = _diagnosis(script)
    source = path.read_text()
    # check(loss) inserted right before the failing backward, as the note quotes it
    needed = note.needed_by
    assert needed is not None
    line = source.splitlines()[needed.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    loss = line.strip().split(".backward(")[0]
    probe = Edit(str(path), needed.lineno, needed.lineno - 1, f"{indent}_CHECKED.append(gradlab.check({loss}))")
    copy = tmp_path / f"{script}.py"
    copy.write_text(apply_edits(source, [probe]))
    error, _ = _run(copy.read_text(), str(copy))
    assert error is not None
    again = gradlab.last_diagnosis(error)  # the note of the copy (its lines moved down by one)
    checked = _NAMESPACES[-1]["_CHECKED"][-1]  # the check right before the backward that failed
    _NAMESPACES.clear()
    assert not checked.ok
    assert (
        (checked.cause, _words(checked.fixes[0]))
        == (again.cause, _words(again.fixes[0]))
        == (
            note.cause,
            _words(note.fixes[0]),
        )
    )
    assert checked.fixes[0].code == again.fixes[0].code == note.fixes[0].code


def _words(fix: gradlab.Fix) -> str:
    """The fix's summary without the file:lines it names (the probe moves the lines)."""
    return re.sub(r" \(at [^)]*\)| \([^)]*\.py:\d+\)| at \S+\.py:\d+(?:, \S+\.py:\d+)*", "", str(fix.summary))


def test_a_fix_that_gives_up_what_an_optimizer_steps_on_is_not_first_and_says_so() -> None:
    d = _diagnosis("shared_encoder")
    first, *rest = d.fixes
    assert first.summary.startswith("recompute feats")
    detach = next(f for f in rest if f.summary.startswith("detach encoder's output"))
    assert "It gives up what your loop asks for: opt_reg.step() follows reg_loss.backward()" in detach.trains
    assert dict(detach.claims)["reg_loss"] == ("reg_head",) and detach.applicability != "machine-applicable"


def test_the_carried_lstm_state_is_detached_element_wise_and_none_is_left_alone() -> None:
    fix = _diagnosis("lstm_state").fixes[0]
    assert fix.code == "state = None if state is None else tuple(s.detach() for s in state)"


def test_fast_weights_are_rebuilt_as_a_list_not_rebound_in_the_loop() -> None:
    fix = _diagnosis("maml_fast_weights").fixes[0]
    assert fix.code == "fast = [p - (0.1 * g) for p, g in zip(fast, grads)]"


def test_the_note_ends_with_a_line_that_runs_where_it_is_read() -> None:
    d = _diagnosis("stale_forward")
    assert d.fixes and len(d.fixes) == 1  # one fix: no line pointing to others
    d = _diagnosis("shared_encoder")
    last = str(d).splitlines()[-1]
    assert "print(diagnosis.details())" not in last
    assert "python -m gradlab run --verbose" in last or "gradlab.last_diagnosis().details()" in last


def test_last_diagnosis_says_what_to_pass_when_there_is_none() -> None:
    with pytest.raises(ValueError, match=r"inside gradlab\.track\(\)"):
        gradlab.last_diagnosis(RuntimeError("not from a backward gradlab watched"))
    with pytest.raises(TypeError, match="takes an exception"):
        gradlab.last_diagnosis("an error message")  # type: ignore[arg-type]
    d = _diagnosis("double_backward")
    assert d.cause == "same_loss_twice"  # the diagnosis travels with the error, after the tracker closed


def test_only_a_recurrent_state_is_called_truncated_backpropagation_through_time() -> None:
    lstm = _diagnosis("lstm_state").fixes[0]
    kept = _diagnosis("kept_memory").fixes[0]
    assert "(truncated backpropagation through time)" in lstm.summary  # out, state = lstm(x, state)
    assert (
        "truncated" not in kept.summary
        and kept.code == "self.items = torch.cat([self.items, feats])[-self.size :].detach()"
    )
    assert len(_diagnosis("kept_memory").fixes) == 1  # no "backpropagate through the whole sequence" for a bank


def test_state_kept_on_modules_is_reset_by_its_class_or_detached_where_the_forward_reads_it() -> None:
    reset = _diagnosis("leaky_cells_state_kept").fixes[0]
    assert reset.code == "net.apply(lambda m: m.clear_state() if isinstance(m, LeakyCell) else None)"
    assert "self.mem" in reset.summary and not reset.keeps_forward  # the later forwards start from rest
    detach = _diagnosis("slot_memory_written").fixes
    assert detach[0].code == "self.slots = self.slots.detach()\nself.slots[: k.shape[0]] = k"
    assert detach[0].keeps_forward and not any("clear" in f.summary for f in detach)  # no reset method: no reset


def variant_diagnosis(script: Path, copy: Path, *replacements: tuple[str, str]) -> gradlab.Diagnosis:
    """The diagnosis of ``script`` with ``replacements`` (each old text must be there), written to ``copy`` (its
    own file: its own lines) and run under track(); the variant must fail."""
    source = script.read_text()
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    copy.write_text(source)
    error, _ = _run(source, str(copy))
    assert error is not None, f"{copy.name} should fail"
    return gradlab.last_diagnosis(error)


def _ema_variant(tmp_path: Path, *replacements: tuple[str, str]) -> tuple[BaseException | None, str]:
    """ema_target.py with ``replacements``, written to ``tmp_path`` and run (its own file: its own lines)."""
    source = (CAUSES / "ema_target.py").read_text()
    for old, new in replacements:
        assert old in source
        source = source.replace(old, new)
    path = tmp_path / "ema_target.py"
    path.write_text(source)
    error, _ = _run(source, str(path))
    return error, source


def test_a_target_model_is_run_under_no_grad_only_when_no_optimizer_holds_it(tmp_path: Path) -> None:
    fix = _diagnosis("ema_target").fixes[0]
    assert fix.code == "with torch.no_grad():\n    z_t = target(view_b)"
    # the same script with the target's parameters in the optimizer: the target is trained, not a target
    error, _ = _ema_variant(
        tmp_path,
        (
            "torch.optim.Adam(online.parameters(), lr=1e-3)",
            "torch.optim.Adam([*online.parameters(), *target.parameters()])",
        ),
    )
    assert error is not None
    first = gradlab.last_diagnosis(error).fixes[0]
    assert "no_grad" not in (first.code or "") and not first.summary.startswith("run target's forward")


def test_an_optimizer_kept_on_an_object_makes_the_model_trained_not_a_target(tmp_path: Path) -> None:
    error, _ = _ema_variant(
        tmp_path,
        (
            "opt = torch.optim.Adam(online.parameters(), lr=1e-3)\n",
            "opt = torch.optim.Adam(online.parameters(), lr=1e-3)\n\n\nclass Keeper:\n    pass\n\n\n"
            "keeper = Keeper()\nkeeper.opt = torch.optim.SGD(target.parameters(), lr=0.1)\n",
        ),
        ("    opt.step()\n", "    opt.step()\n    keeper.opt.step()\n"),
    )
    assert error is not None
    first = gradlab.last_diagnosis(error).fixes[0]
    assert not first.summary.startswith("run target's forward")
