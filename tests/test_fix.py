"""gradlab fix and gradlab.record_training: patched copies run in real subprocesses, training measured with real torch."""

from __future__ import annotations

import dataclasses
import gc
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import pytest
import torch
from torch import nn

import gradlab
from gradlab import Fix, FixReport, fix_script, record_training
from gradlab.edits import Edit
from gradlab.fix import judge
from gradlab.trained import LossRecord, StepRecord, TrainingRecord

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent

# A GAN whose generator's graph is freed by the discriminator's backward; it would train forever.
GAN = textwrap.dedent(
    """\
    import torch
    from torch import nn

    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    bce = nn.BCEWithLogitsLoss()
    while True:
        real = torch.randn(16, 2)
        fake = G(torch.randn(16, 4))
        opt_d.zero_grad()
        loss_d = bce(D(real), torch.ones(16, 1)) + bce(D(fake), torch.zeros(16, 1))
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = bce(D(fake), torch.ones(16, 1))
        loss_g.backward()
        opt_g.step()
        from helpers import log_line
        log_line(loss_g)
    """
)
# A sibling module the script imports, writing into a folder of the script's directory.
HELPERS = 'def log_line(loss):\n    with open("out/log.txt", "a") as f:\n        f.write(f"{loss.item():.4f}\\n")\n'


def _project(folder: Path) -> Path:
    """The GAN script, its helper module and its (empty) output folder in ``folder``."""
    (folder / "helpers.py").write_text(HELPERS)
    (folder / "out").mkdir()
    path = folder / "gan.py"
    path.write_text(GAN)
    return path


RIGHT = "    loss_d = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))"
WRONG = "    fake = G(torch.randn(16, 4)).detach()"


def _fixes(path: Path) -> list[Fix]:
    wrong = Fix(
        "Detach fake where G makes it",
        "loss_g trains nothing",
        edits=(Edit(str(path), 12, 12, WRONG),),
        applicability="maybe-incorrect",
    )
    right = Fix(
        "Detach fake where it enters D in loss_d",
        "loss_d trains D; loss_g trains G",
        edits=(Edit(str(path), 14, 14, RIGHT),),
        applicability="machine-applicable",
        claims=(("loss_d", ("D",)), ("loss_g", ("G",))),
    )
    past_end = Fix(
        "Edit beyond the file", "?", edits=(Edit(str(path), 90, 90, "x = 1"),), applicability="maybe-incorrect"
    )
    elsewhere = Fix("Edit torch", "?", edits=(Edit(torch.__file__, 1, 1, "x = 1"),), applicability="maybe-incorrect")
    return [wrong, right, past_end, elsewhere, Fix("In words only", "?")]


@pytest.fixture(scope="module")
def gan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FixReport]:
    folder = tmp_path_factory.mktemp("gan")
    path = _project(folder)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        report = fix_script(path, steps=2, timeout=120, fixes=_fixes(path))
    finally:
        os.chdir(cwd)
    return path, report


def test_the_original_run_fails_where_the_script_does(gan: tuple[Path, FixReport]) -> None:
    path, report = gan
    assert report.failed
    assert report.original.where == "gan.py:19"
    assert "backward through the graph a second time" in (report.original.message or "")
    assert [(s.optimizer, s.count, s.trained) for s in report.original.record.steps] == [
        ("opt_d", 1, (("loss_d", ("D",)),))
    ]
    assert path.read_text() == GAN  # trying fixes wrote nothing to the user's file
    assert list((path.parent / "out").iterdir()) == []  # the copies logged into their own mirror of out/


def test_a_fix_that_trains_the_wrong_thing_is_not_verified(gan: tuple[Path, FixReport]) -> None:
    _path, report = gan
    wrong = report.trials[0]
    assert wrong.run is not None and wrong.run.clean  # it runs: no autograd error
    assert not wrong.verified
    assert [(s.optimizer, s.count, s.trained) for s in wrong.run.record.steps if s.optimizer == "opt_g"] == [
        ("opt_g", 1, (("loss_g", ()),)),
        ("opt_g", 2, (("loss_g", ()),)),
    ]
    assert any("loss_g ran backward since opt_g.zero_grad() but trained none" in m for m in wrong.mismatches)


def test_the_right_fix_is_verified_and_its_table_says_what_trained_what(gan: tuple[Path, FixReport]) -> None:
    _path, report = gan
    right = report.trials[1]
    assert right.verified and right.mismatches == ()
    assert right.run is not None and right.run.outcome == "budget"  # the endless loop stopped after 2 steps each
    assert [(s.optimizer, s.count, s.trained) for s in right.run.record.steps] == [
        ("opt_d", 1, (("loss_d", ("D",)),)),
        ("opt_g", 1, (("loss_g", ("G",)),)),
        ("opt_d", 2, (("loss_d", ("D",)),)),
        ("opt_g", 2, (("loss_g", ("G",)),)),
    ]
    text = report.render()
    assert "+" + RIGHT in text and "-    loss_d = bce(D(real), torch.ones(16, 1)) + bce(D(fake)," in text
    assert "=> verified" in text and "Verified: fix 2 of 5." in text
    table = right.run.record.table().splitlines()
    assert table[0].split() == ["step", "optimizer", "loss", "trained"]
    assert table[2].split() == ["1", "opt_g", "loss_g", "G"]


def test_apply_writes_only_the_verified_diff(gan: tuple[Path, FixReport], tmp_path: Path) -> None:
    path, report = gan
    copy = tmp_path / "gan.py"
    copy.write_text(GAN)
    trial = report.trials[1]
    mine = FixReport(
        str(copy),
        report.original,
        [report.trials[0], dataclasses.replace(trial, patched={str(copy): trial.patched[str(path)]})],
        report.steps,
        {str(copy): GAN},
    )
    assert mine.apply().number == 2
    assert copy.read_text() == GAN.replace(GAN.splitlines()[13], RIGHT)


def test_apply_needs_unsafe_for_a_fix_that_may_change_what_trains(gan: tuple[Path, FixReport], tmp_path: Path) -> None:
    path, report = gan
    copy = tmp_path / "gan.py"
    copy.write_text(GAN)
    trial = dataclasses.replace(
        report.trials[1], applicability="maybe-incorrect", patched={str(copy): report.trials[1].patched[str(path)]}
    )
    mine = FixReport(str(copy), report.original, [trial], report.steps, {str(copy): GAN})
    with pytest.raises(ValueError, match="pass --unsafe"):
        mine.apply()
    assert copy.read_text() == GAN
    mine.apply(unsafe=True)
    assert RIGHT in copy.read_text()


def test_apply_refuses_a_file_changed_since_the_run(gan: tuple[Path, FixReport], tmp_path: Path) -> None:
    path, report = gan
    copy = tmp_path / "gan.py"
    copy.write_text(GAN + "# edited meanwhile\n")
    trial = dataclasses.replace(report.trials[1], patched={str(copy): report.trials[1].patched[str(path)]})
    mine = FixReport(str(copy), report.original, [trial], report.steps, {str(copy): GAN})
    with pytest.raises(ValueError, match="changed since gradlab fix read it"):
        mine.apply()
    assert copy.read_text().endswith("# edited meanwhile\n")


# -- the command ---------------------------------------------------------------------------------


def _gradlab(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", "LANGUAGE": ""}
    return subprocess.run(
        [sys.executable, "-m", "gradlab", *args],
        cwd=cwd,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_script_that_never_fails_has_nothing_to_fix(tmp_path: Path) -> None:
    script = tmp_path / "ok.py"
    script.write_text("import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nprint('done')\n")
    done = _gradlab("fix", "ok.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Nothing to fix: ok.py ran to its end without an autograd error." in done.stdout


def test_the_command_runs_the_failing_script_and_writes_nothing_without_apply(tmp_path: Path) -> None:
    script = _project(tmp_path)
    done = _gradlab("fix", "--steps", "1", "gan.py", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "gradlab fix: gan.py fails at gan.py:19: RuntimeError: Trying to backward" in done.stdout
    assert script.read_text() == GAN
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gan.py", "helpers.py", "out"]
    assert list((tmp_path / "out").iterdir()) == []


DOUBLE = textwrap.dedent(
    """\
    import torch

    net = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(100):
        out = net(torch.randn(4, 3)).pow(2).sum()
        opt.zero_grad()
        out.backward()
        out.backward()
        opt.step()
    """
)


def test_apply_writes_gradlabs_verified_fix_and_the_script_then_runs(tmp_path: Path) -> None:
    script = tmp_path / "double.py"
    script.write_text(DOUBLE)
    done = _gradlab("fix", "--apply", "double.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "=> verified" in done.stdout and "Applied fix" in done.stdout
    assert script.read_text() != DOUBLE
    again = _gradlab("fix", "double.py", cwd=tmp_path)  # the patched script no longer fails
    assert again.returncode == 0 and "Nothing to fix: double.py ran to its end" in again.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "fix needs a script"),
        (("missing.py",), "can't open file 'missing.py': no such file"),
        (("--steps", "0", "x.py"), "--steps needs a number above 0"),
        (("--unsafe", "x.py"), "--unsafe only goes with --apply"),
        (("-m", "train"), "not -m MODULE"),
    ],
)
def test_bad_input_gets_a_sentence_and_exit_2(tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    done = _gradlab("fix", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert said in done.stderr


def test_a_script_that_reads_stdin_when_none_is_given(tmp_path: Path) -> None:
    (tmp_path / "asks.py").write_text("n = int(input('steps? '))\n")
    done = _gradlab("fix", "asks.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "asks.py reads its standard input and none was given" in done.stderr
    given = _gradlab("fix", "asks.py", cwd=tmp_path, stdin="3\n")  # the same input reaches the script
    assert given.returncode == 0 and "Nothing to fix" in given.stdout


def test_a_fix_whose_edits_cannot_be_applied_is_said_so(gan: tuple[Path, FixReport]) -> None:
    _path, report = gan
    problems = [t.problem or "" for t in report.trials[2:]]
    assert problems[0].startswith("cannot be applied: its edits cannot be applied to gan.py: edit of lines 90-90")
    assert "outside the script's folder" in problems[1]
    assert problems[2] == "a sentence, not an edit: not run"
    assert [t.run for t in report.trials[2:]] == [None, None, None]


# -- record_training, against torch ---------------------------------------------------------------


def _shared_encoder_step(record_names: bool) -> tuple[TrainingRecord | None, list[torch.Tensor]]:
    torch.manual_seed(1)
    encoder, cls_head, reg_head = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(4, 1)
    opt_cls = torch.optim.SGD([*encoder.parameters(), *cls_head.parameters()], lr=0.1)
    opt_reg = torch.optim.SGD([*encoder.parameters(), *reg_head.parameters()], lr=0.1)
    x = torch.randn(5, 3)

    def loop() -> None:
        for _ in range(2):
            h = encoder(x)
            cls_loss = cls_head(h).logsumexp(1).mean()
            reg_loss = reg_head(h).pow(2).mean()
            opt_cls.zero_grad()
            cls_loss.backward(retain_graph=True)
            opt_cls.step()
            opt_reg.zero_grad()
            reg_loss.backward()
            opt_reg.step()

    if not record_names:
        loop()
        return None, [p.detach().clone() for m in (encoder, cls_head, reg_head) for p in m.parameters()]
    with record_training() as record:
        loop()
    return record, [p.detach().clone() for m in (encoder, cls_head, reg_head) for p in m.parameters()]


def test_record_training_says_which_loss_trained_which_module() -> None:
    record, _params = _shared_encoder_step(True)
    assert record is not None
    assert record.aliases["encoder"] == "encoder"
    assert [(s.optimizer, s.count, s.trained) for s in record.steps] == [
        ("opt_cls", 1, (("cls_loss", ("cls_head", "encoder")),)),
        ("opt_reg", 1, (("reg_loss", ("encoder", "reg_head")),)),
        ("opt_cls", 2, (("cls_loss", ("cls_head", "encoder")),)),
        ("opt_reg", 2, (("reg_loss", ("encoder", "reg_head")),)),
    ]


def test_two_optimizers_reached_by_one_name_get_two_labels() -> None:
    """A local ``opt`` in two training functions: two optimizers, each with its own steps counted from 1."""
    x = torch.randn(4, 3)
    teacher, student = nn.Linear(3, 1), nn.Linear(3, 1)

    def train(model: nn.Module, kind: type[torch.optim.Optimizer]) -> None:
        opt = kind(model.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()

    with record_training(names={"teacher": teacher, "student": student}) as record:
        train(teacher, torch.optim.SGD)
        train(student, torch.optim.Adam)
    assert [(s.optimizer, s.count) for s in record.steps] == [("opt", 1), ("opt", 2), ("opt #2", 1), ("opt #2", 2)]


def test_record_training_agrees_with_torch_on_what_a_loss_reaches() -> None:
    torch.manual_seed(2)
    a, b, unused = nn.Linear(2, 2), nn.Linear(2, 1), nn.Linear(2, 1)
    opt = torch.optim.SGD([*a.parameters(), *b.parameters(), *unused.parameters()], lr=0.1)
    x = torch.randn(4, 2)
    losses = {"loss_a": lambda: a(x).pow(2).sum(), "loss_b": lambda: b(a(x).detach()).sum()}
    reached = {}
    for name, make in losses.items():  # the oracle: torch's own gradients, nonzero
        grads = torch.autograd.grad(make(), [*a.parameters(), *b.parameters(), *unused.parameters()], allow_unused=True)
        owners = ["a", "a", "b", "b", "unused", "unused"]
        reached[name] = tuple(sorted({o for o, g in zip(owners, grads) if g is not None and bool(g.ne(0).any())}))
    with record_training(names={"a": a, "b": b, "unused": unused}) as record:
        opt.zero_grad()
        loss_a = losses["loss_a"]()
        loss_a.backward()
        loss_b = losses["loss_b"]()
        loss_b.backward()
        opt.step()
    assert {r.loss: r.trained for r in record.backwards} == reached
    assert record.steps[0].untrained() == ("unused",)


def test_a_backward_whose_inputs_leave_an_optimizer_out_is_not_meant_for_it() -> None:
    torch.manual_seed(3)
    encoder, decoder = nn.Linear(3, 2), nn.Linear(2, 3)
    enc_opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
    dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    with record_training() as record:
        z = encoder(x)
        recon_loss = (decoder(z) - x).pow(2).mean()
        dec_opt.zero_grad()
        recon_loss.backward(retain_graph=True)
        vae_loss = recon_loss + z.pow(2).mean()
        enc_opt.zero_grad()
        vae_loss.backward(inputs=list(encoder.parameters()))
        dec_opt.step()
        enc_opt.step()
    assert [(s.optimizer, s.trained) for s in record.steps] == [
        ("dec_opt", (("recon_loss", ("decoder",)),)),
        ("enc_opt", (("vae_loss", ("encoder",)),)),
    ]
    assert judge(record, TrainingRecord(None, None)) == []


def test_record_training_changes_no_training_result_and_keeps_nothing_alive() -> None:
    _record, watched = _shared_encoder_step(True)
    _none, plain = _shared_encoder_step(False)
    assert all(torch.equal(p, q) for p, q in zip(watched, plain))
    net = nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    before = torch.autograd.backward
    with record_training() as rec:
        net(torch.ones(1, 2)).sum().backward()
        opt.step()
    alive = weakref.ref(net)
    del net, opt
    gc.collect()
    assert alive() is None and len(rec.steps) == 1
    assert torch.autograd.backward is before  # the wrapper is gone


def test_one_module_under_two_names_is_one_module_with_aliases() -> None:
    net = nn.Linear(2, 1)
    model = net
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with record_training() as record:
        model(torch.ones(3, 2)).sum().backward()
        opt.step()
    assert record.aliases["net"] == record.aliases["model"] in ("net", "model")
    assert record.steps[0].modules == (record.aliases["net"],)


def test_record_training_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="steps= must be a whole number"):
        record_training(steps=0)
    with pytest.raises(TypeError, match="names= must be a mapping"):
        record_training(names=3)  # type: ignore[arg-type]


def test_judge_checks_the_claims_against_what_was_measured() -> None:
    run = TrainingRecord(None, None)
    run.backwards = [LossRecord(0, "loss_g", "t.py:3", ("D", "G"))]  # loss_g reaches D, but only opt_g steps on it
    run.steps = [StepRecord("opt_g", 1, "t.py:4", ("loss_g",), (("loss_g", ("G",)),), ("G",))]
    assert judge(run, TrainingRecord(None, None), [("loss_g", ("G",))]) == []
    assert judge(run, TrainingRecord(None, None), [("loss_g", ("D", "G"))]) == [
        "the fix says loss_g trains D, G; it trained G"
    ]
    run.aliases = {"gen": "G", "G": "G"}  # G was also seen as gen
    assert judge(run, TrainingRecord(None, None), [("loss_g", ("gen",))]) == []
    assert judge(run, TrainingRecord(None, None), [("loss_x", ("G",))]) == [
        "the fix says what loss_x trains, but no backward of loss_x ran"
    ]
    # parameters no named module holds (models kept in a dict) cannot be claimed: not compared
    run.steps = [StepRecord("opt_g", 1, "t.py:4", ("loss_g",), (("loss_g", ("G", "parameters of opt_g")),), ("G",))]
    run.unnamed = {"parameters of opt_g"}
    assert judge(run, TrainingRecord(None, None), [("loss_g", ("G",))]) == []
    assert judge(run, TrainingRecord(None, None), [("loss_g", ())]) == [
        "the fix says loss_g trains nothing; it trained G"
    ]


def test_judge_lets_a_fix_rewrite_a_loss_but_not_drop_what_it_trained() -> None:
    before = TrainingRecord(None, None)
    before.steps = [StepRecord("opt", 1, None, ("running_loss",), (("running_loss", ("model",)),), ("model",))]
    rewritten = TrainingRecord(None, None)
    rewritten.steps = [StepRecord("opt", 1, None, ("loss / 4",), (("loss / 4", ("model",)),), ("model",))]
    assert judge(rewritten, before) == []
    dropped = TrainingRecord(None, None)
    dropped.steps = [
        StepRecord("opt", 1, None, ("running_loss", "aux"), (("running_loss", ()), ("aux", ("model",))), ("model",))
    ]
    assert judge(dropped, before) == [
        "opt, step 1: running_loss ran backward since opt.zero_grad() but trained none of its modules (model)",
        "opt, step 1: before the fix running_loss trained model; after it, it does not",
    ]


def test_judge_lets_a_loss_of_a_shared_window_train_the_other_optimizers_modules() -> None:
    """Two optimizers zeroed together, two losses backwarded, both stepped (an actor-critic loop over its
    optimizers): the actor's loss reaches none of the critic's modules, and that is what the code means; a loss
    that trains no module of any optimizer stepping then is still a mismatch."""
    shared = TrainingRecord(None, None)
    shared.steps = [
        StepRecord(
            "opt", 1, None, ("actor_loss", "critic_loss"), (("actor_loss", ("actor",)), ("critic_loss", ())), ("actor",)
        ),
        StepRecord(
            "opt #2",
            1,
            None,
            ("actor_loss", "critic_loss"),
            (("actor_loss", ()), ("critic_loss", ("critic",))),
            ("critic",),
        ),
    ]
    assert judge(shared, TrainingRecord(None, None)) == []
    alone = TrainingRecord(None, None)
    alone.steps = [
        StepRecord("opt", 1, None, ("a", "b"), (("a", ("m",)), ("b", ())), ("m",)),
        StepRecord("opt #2", 1, None, ("a", "b"), (("a", ()), ("b", ())), ("n",)),
    ]
    assert judge(alone, TrainingRecord(None, None)) == [
        "opt, step 1: b ran backward since opt.zero_grad() but trained none of its modules (m)",
        "opt #2, step 1: b ran backward since opt #2.zero_grad() but trained none of its modules (n)",
    ]  # a trained m, stepped by opt at the same count: not idle


def test_the_public_names_are_exported() -> None:
    assert {"record_training", "TrainingRecord", "fix_script", "FixReport", "FixTrial"} <= set(gradlab.__all__)


# -- the checks that need no intent (NOTE [Oracles] in gradlab.fix) ----------------------------------------

# A gated block: `h /= 1 + g` writes in place to the output of sigmoid, which sigmoid saved.
FILM = textwrap.dedent(
    """\
    import torch
    from torch import nn

    torch.manual_seed(0)
    body, gate = nn.Linear(3, 4), nn.Linear(3, 4)
    opt = torch.optim.SGD([*body.parameters(), *gate.parameters()], lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 4)
    while True:
        opt.zero_grad()
        h = torch.sigmoid(body(x))
        g = gate(x)
        h /= 1 + g
        loss = ((h - y) ** 2).mean()
        loss.backward()
        opt.step()
    """
)


@pytest.fixture(scope="module")
def film(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FixReport]:
    path = tmp_path_factory.mktemp("film") / "film.py"
    path.write_text(FILM)

    def fix(text: str, keeps: bool | None) -> Fix:
        return Fix("rewrite the write", "the same", edits=(Edit(str(path), 12, 12, text),), keeps_forward=keeps)

    candidates = [
        fix("    h = h / 1 + g", True),  # the parentheses lost: other values, the same modules trained
        fix("    h = h / (1 + g)", True),  # the exact out-of-place form
        fix("    h = h / (1 + g.detach())", None),  # runs and trains both modules, with another gradient
    ]
    return path, fix_script(path, steps=2, fixes=candidates)


def test_a_rewrite_that_changes_the_forward_is_not_verified(film: tuple[Path, FixReport]) -> None:
    _, report = film
    lost = report.trials[0]
    assert lost.run is not None and lost.run.clean  # it runs, and trains body and gate
    assert not lost.verified and any("keeps the forward" in m for m in lost.mismatches), lost.mismatches


def test_the_exact_rewrite_passes_every_check(film: tuple[Path, FixReport]) -> None:
    _, report = film
    exact = report.trials[1]
    assert exact.verified, exact.mismatches
    assert report.original.reference  # a write to a tensor that is no parameter: checked against the code as written


def test_a_fix_with_another_gradient_fails_the_code_as_written(film: tuple[Path, FixReport]) -> None:
    _, report = film
    other = report.trials[2]
    assert other.run is not None and other.run.clean
    assert not other.verified and any("allow_mutation_on_saved_tensors" in m for m in other.mismatches), (
        other.mismatches
    )


def test_gradlabs_own_first_fix_for_the_lost_parentheses_case_is_the_exact_one(tmp_path: Path) -> None:
    path = tmp_path / "film.py"
    path.write_text(FILM)
    report = fix_script(path, steps=2)
    assert report.trials and report.trials[0].verified, report.render()
    assert "h = h / (1 + g)" in report.trials[0].diff
