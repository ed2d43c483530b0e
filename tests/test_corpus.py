"""The corpus of user-style failing scripts (tests/corpus/): the scripts, the oracle, and the judge of gradlab's first fix.

Everything runs once per session (``evaluation``): the broken and intended
scripts through the oracle in one subprocess, the driver under
``gradlab.track()`` in another, the patched copies in a third.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import torch
from corpus import oracle
from corpus.catalog import Case, all_cases
from corpus.judge import Evaluation, check_agreements, evaluate

pytestmark = [pytest.mark.library, pytest.mark.slow]

CASES = all_cases()
BY_NAME = {c.name: c for c in CASES}
STEPS = 3

# The judge's expected failures on today's gradlab: one line per case, removed when gradlab's first fix
# fits the intent and its claims are true (strict: a case that starts passing fails until its line goes).
JUDGE_XFAIL: dict[str, str] = {}

# Deliberately wrong variants of intended scripts: (case, old text, new text, what the oracle must say).
WRONG = [
    ("gan_no_retain", "        fake = gen(z)\n", "        fake = gen(z).detach()\n", "has no gradient"),
    (
        "multitask_two_adamw",
        "        feats = encoder(xb)\n",
        "        feats = encoder(xb).detach()\n",
        "has no gradient",
    ),
    (
        "step_before_backward",
        "        outputs = model(inputs)\n",
        "        outputs = model(inputs.mul(1.01))\n",
        "differs",
    ),
]


# Variants that train exactly what intended.py trains, in another floating-point order (NOTE [Tolerance]
# in oracle.py): the oracle must find them equal.
EQUIVALENT = [
    (
        "a2c_shared_trunk",
        "intended",
        "        actor_loss.backward(retain_graph=True)\n        critic_loss.backward()\n",
        "        (actor_loss + critic_loss).backward()\n",
    ),
    (
        "epoch_forward_scheduler",
        "broken",
        "    logits = mlp(X_train)\n    for start in range(0, N, BS):\n",
        "    for start in range(0, N, BS):\n        logits = mlp(X_train)\n",
    ),
]


# Small scripts that pin the oracle's rules down (run in the same oracle process as the corpus).
RULES = {
    "never_steps": """
import torch
torch.manual_seed(0)
net = torch.nn.Linear(3, 1)
opt_used = torch.optim.SGD(net.parameters(), lr=0.1)
opt_unused = torch.optim.SGD(torch.nn.Linear(3, 1).parameters(), lr=0.1)
for i in range(100):
    opt_used.zero_grad()
    net(torch.randn(4, 3)).pow(2).mean().backward()
    opt_used.step()
""",
    "list_and_zeroed": """
import torch
torch.manual_seed(0)
net_a, net_b = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([*net_a.parameters(), *net_b.parameters(), w], lr=0.1)
x = torch.randn(4, 3)
loss_c = net_a(x).sum()
loss_c.backward()
opt.zero_grad(set_to_none=False)  # zeroes loss_c's gradient: loss_c trains nothing
loss_a = net_a(x).pow(2).mean() + (x @ w).sum()
loss_b = net_b(x).abs().mean()
torch.autograd.backward([loss_a, loss_b])
opt.step()
""",
    "finishes": """
import torch
net = torch.nn.Linear(2, 1)
opt = torch.optim.Adam(net.parameters())
net(torch.ones(1, 2)).sum().backward()
opt.step()
""",
}


@pytest.fixture(scope="session")
def rule_scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rules")
    for name, text in RULES.items():
        (folder / f"{name}.py").write_text(text.lstrip())
    return {name: folder / f"{name}.py" for name in RULES}


def _variant(case: str, of: str, old: str, new: str, folder: Path) -> Path:
    source = BY_NAME[case].variant_path(of).read_text()
    assert old in source, f"{case}/{of}.py no longer has {old!r}"
    path = folder / f"{of}.py"
    path.write_text(source.replace(old, new))
    return path


@pytest.fixture(scope="session")
def equivalent_scripts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return [
        _variant(c, of, old, new, tmp_path_factory.mktemp(f"equivalent{i}"))
        for i, (c, of, old, new) in enumerate(EQUIVALENT)
    ]


@pytest.fixture(scope="session")
def wrong_scripts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return [
        _variant(name, "intended", old, new, tmp_path_factory.mktemp(f"wrong{i}"))
        for i, (name, old, new, _) in enumerate(WRONG)
    ]


def _edits_from(case: Case, variant: str) -> list[dict[str, object]]:
    """The edits that turn broken.py into a variant, as gradlab.edits.Edit fields (a hand-made 'fix')."""
    old = case.broken.read_text().splitlines()
    new = case.variant_path(variant).read_text().splitlines()
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append({"filename": str(case.broken), "start": i1 + 1, "end": i2, "text": "\n".join(new[j1:j2])})
    return edits


def _hand_made_fixes() -> list[tuple[Case, dict[str, object]]]:
    gan, multi, sbb = BY_NAME["gan_no_retain"], BY_NAME["multitask_two_adamw"], BY_NAME["step_before_backward"]
    line = multi.broken.read_text().splitlines().index("        feats = encoder(xb)") + 1
    return [
        (gan, {"edits": _edits_from(gan, "intended"), "claims": [["loss_d", ["disc"]], ["loss_g", ["gen"]]]}),
        (gan, {"edits": _edits_from(gan, "intended"), "claims": [["loss_d", ["disc"]], ["loss_g", ["gen", "disc"]]]}),
        (
            multi,
            {
                "edits": [
                    {
                        "filename": str(multi.broken),
                        "start": line,
                        "end": line,
                        "text": "        feats = encoder(xb).detach()",
                    }
                ],
                "claims": [["cls_loss", ["cls_head"]], ["reg_loss", ["reg_head"]]],
            },
        ),
        (BY_NAME["double_backward_plain"], {"edits": [], "claims": [["out", ["net"]]]}),
        # the claim names the module as the training function calls it: model, main's classifier
        (sbb, {"edits": _edits_from(sbb, "intended"), "claims": [["loss", ["model"]]]}),
    ]


@pytest.fixture(scope="session")
def evaluation(
    wrong_scripts: list[Path], equivalent_scripts: list[Path], rule_scripts: dict[str, Path], summary_lines: list[str]
) -> Evaluation:
    # The intended variant of one case runs twice: two runs of one script must compare equal.
    again = BY_NAME["gan_retain_graph"].variant_path("intended")
    ev = evaluate(
        CASES,
        steps=STEPS,
        extra=[*wrong_scripts, *equivalent_scripts, *rule_scripts.values(), again],
        extra_fixes=_hand_made_fixes(),
    )
    for phase, seconds in ev.seconds.items():
        summary_lines.append(f"corpus: {phase}: {seconds:.1f} s")
    summary_lines.append(ev.figure_line())
    return ev


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 22
    for case in CASES:
        assert case.description and case.intent, case.name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_broken_fails_as_the_case_says(case: Case, evaluation: Evaluation) -> None:
    rec = evaluation.records[f"{case.name}/broken"]
    assert rec.status == "error" and rec.error_type == "RuntimeError", rec.summary()
    assert rec.error_kind() == case.error, rec.summary()
    # within its first few iterations: no optimizer got to its step budget
    assert all(n < STEPS for n in rec.step_counts().values()), rec.summary()


@pytest.mark.parametrize(
    ("case", "variant"), [(c, v) for c in CASES for v in c.variants], ids=lambda x: x if isinstance(x, str) else x.name
)
def test_intended_runs_clean_and_trains_what_the_case_says(case: Case, variant: str, evaluation: Evaluation) -> None:
    rec = evaluation.records[f"{case.name}/{variant}"]
    assert rec.status == "budget", rec.summary()
    counts = rec.step_counts()
    # every optimizer stepped; the run stopped when the last one reached the budget (a WGAN's critic steps more often)
    assert set(counts) == set(case.intent) and min(counts.values()) == STEPS, rec.summary()
    assert oracle.trained(rec) == case.expected_trained()
    assert oracle.optimizer_modules(rec) == case.expected_modules()


def test_intended_variants_are_different_trainings(evaluation: Evaluation) -> None:
    # where a case has two readings, they must differ, or they are one reading
    for case in CASES:
        variants = list(case.variants)
        for a in variants:
            for b in variants:
                if a < b:
                    ra, rb = evaluation.records[f"{case.name}/{a}"], evaluation.records[f"{case.name}/{b}"]
                    assert oracle.compare(ra, rb), f"{case.name}: {a}.py and {b}.py train the same"


@pytest.mark.parametrize("index", range(len(WRONG)), ids=[w[0] for w in WRONG])
def test_the_oracle_reports_a_wrong_variant(index: int, wrong_scripts: list[Path], evaluation: Evaluation) -> None:
    name, _, _, words = WRONG[index]
    right = evaluation.records[f"{name}/intended"]
    wrong = evaluation.records[str(wrong_scripts[index])]
    differences = oracle.compare(right, wrong)
    assert differences, f"the oracle saw no difference between {name}/intended.py and its wrong variant"
    assert any(words in d for d in differences), differences


@pytest.mark.parametrize("index", range(len(EQUIVALENT)), ids=[e[0] for e in EQUIVALENT])
def test_the_oracle_finds_the_same_training_in_another_order_equal(
    index: int, equivalent_scripts: list[Path], evaluation: Evaluation
) -> None:
    name = EQUIVALENT[index][0]
    rec = evaluation.records[str(equivalent_scripts[index])]
    assert rec.status == "budget", rec.summary()
    assert oracle.compare(evaluation.records[f"{name}/intended"], rec) == []


def test_two_runs_of_one_script_compare_equal(evaluation: Evaluation) -> None:
    again = str(BY_NAME["gan_retain_graph"].variant_path("intended"))
    assert oracle.compare(evaluation.records["gan_retain_graph/intended"], evaluation.records[again]) == []


def test_a_nan_matches_a_nan_in_the_same_entry_only() -> None:
    # a script whose arithmetic overflows computes the same NaN gradients each run; a NaN against a number differs
    def record(*values: float) -> oracle.Record:
        grads: dict[str, torch.Tensor | None] = {"net.weight": torch.tensor(values)}
        step = oracle.Step(optimizer="opt", index=1, grads=grads, credit={})
        return oracle.Record(script="s.py", status="budget", steps=[step], optimizers={"opt": ["net.weight"]})

    nan = float("nan")
    assert oracle.compare(record(1.0, nan), record(1.0, nan)) == []
    assert oracle.compare(record(1.0, nan), record(1.0, 2.0))
    assert oracle.compare(record(nan, 2.0), record(1.0, nan))


def test_what_trained_what_counts_only_gradients_a_step_used(evaluation: Evaluation) -> None:
    # loss_g's backward reaches disc's parameters too, but opt_d.zero_grad() drops that gradient before opt_d steps
    rec = evaluation.records["gan_no_retain/intended"]
    reached = {p for b in rec.backwards if b.loss == "loss_g" for p in b.changed}
    assert any(p.startswith("disc.") for p in reached)
    assert oracle.trained(rec)["loss_g"] == {"gen"}


def test_an_optimizer_that_never_steps_stops_the_run_at_the_cap(
    rule_scripts: dict[str, Path], evaluation: Evaluation
) -> None:
    rec = evaluation.records[str(rule_scripts["never_steps"])]
    assert rec.status == "budget"
    assert rec.step_counts() == {"opt_used": oracle.CAP * STEPS}


def test_a_list_of_losses_a_zeroed_gradient_and_a_raw_tensor(
    rule_scripts: dict[str, Path], evaluation: Evaluation
) -> None:
    rec = evaluation.records[str(rule_scripts["list_and_zeroed"])]
    assert rec.status == "finished"
    assert oracle.trained(rec) == {"loss_a": {"net_a", "w"}, "loss_b": {"net_b"}}
    assert rec.optimizers["opt"][-1] == "w"
    assert [b.loss for b in rec.backwards] == ["loss_c", "[loss_a, loss_b]"]


def test_a_script_that_ends_before_the_budget_is_finished(
    rule_scripts: dict[str, Path], evaluation: Evaluation
) -> None:
    rec = evaluation.records[str(rule_scripts["finishes"])]
    assert rec.status == "finished" and rec.step_counts() == {"opt": 1}
    assert oracle.trained(rec) == {"net(torch.ones(1, 2)).sum()": {"net"}}


def test_loss_terms_split_sums_into_named_losses() -> None:
    assert oracle.loss_terms("actor_loss + 0.5 * critic_loss") == ["actor_loss", "critic_loss"]
    assert oracle.loss_terms("(loss / ACCUM_STEPS)") == ["loss"]
    assert oracle.loss_terms("scaler.scale(loss)") == ["scaler.scale(loss)"]
    assert oracle.loss_terms("[loss_a, -loss_b]") == ["loss_a", "loss_b"]


def test_the_judge_itself_accepts_a_right_fix_and_rejects_wrong_ones(evaluation: Evaluation) -> None:
    # hand-made fixes (HAND_MADE_FIXES), so the judge is tested whatever gradlab prints today
    right, false_claim, detach, no_edits, alias = evaluation.extra_verdicts
    assert (right.fits, right.trains_true) == (True, True), right.why
    assert (false_claim.fits, false_claim.trains_true) == (True, False)
    # detaching the encoder's output runs clean, but reg_loss no longer trains the encoder opt_reg holds
    assert detach.patched is not None and detach.patched.status == "budget"
    assert not detach.fits and "encoder.0." in detach.why and "has no gradient" in detach.why, detach.why
    assert detach.trains_true  # its claim (reg_loss trains reg_head only) is true of what it does
    assert not no_edits.fits and "no edits" in no_edits.why
    assert (alias.fits, alias.trains_true) == (True, True), alias.why
    assert evaluation.records["step_before_backward/intended"].aliases["classifier"] == ["model"]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=JUDGE_XFAIL[c.name]))
        if c.name in JUDGE_XFAIL
        else c
        for c in CASES
    ],
    ids=lambda c: c.name,
)
def test_gradlab_first_fix_fits_the_intent_and_trains_what_it_claims(case: Case, evaluation: Evaluation) -> None:
    v = evaluation.verdicts[case.name]
    assert v.fix is not None, f"gradlab gave no fix (the script raised {v.tracked_error!r} under track())"
    assert v.fits, f"the first fix ({v.fix['summary']}) does not give the intended training: {v.why}"
    assert v.trains_true, (
        f"the first fix claims {v.fix['claims']}, the patched script trained "
        f"{oracle.trained(v.patched) if v.patched else 'nothing (it was not run)'}"
    )


def test_the_xfail_table_names_only_cases() -> None:
    assert set(JUDGE_XFAIL) <= set(BY_NAME)


def test_the_oracle_refuses_bad_input_with_a_sentence(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pass the path of a Python file"):
        oracle.run(tmp_path / "missing.py")
    (tmp_path / "train.py").write_text("pass\n")
    with pytest.raises(ValueError, match="steps must be a positive int"):
        oracle.run(tmp_path / "train.py", steps=0)


@pytest.mark.parametrize("name", ["forward_once_reused", "gan_retain_graph", "maml_fast_weights_sub"])
def test_the_oracle_records_the_gradients_a_plain_run_steps_with(
    name: str, evaluation: Evaluation, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the script run here, in this process, with nothing but a step hook of the test's own
    import runpy

    import torch
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    seen: list[list[torch.Tensor | None]] = []

    def hook(opt: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        seen.append([None if p.grad is None else p.grad.clone() for g in opt.param_groups for p in g["params"]])

    script = BY_NAME[name].variant_path("intended")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the oracle's process runs
    handle = register_optimizer_step_pre_hook(hook)
    monkeypatch.setattr("sys.argv", [str(script)])
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        handle.remove()
        torch.set_num_threads(threads)
    rec = evaluation.records[f"{name}/intended"]
    assert len(seen) >= len(rec.steps)
    for step, plain in zip(rec.steps, seen):
        recorded = [step.grads[p] for p in rec.optimizers[step.optimizer]]
        assert len(recorded) == len(plain)
        for a, b in zip(recorded, plain):
            assert (a is None) == (b is None)
            assert a is None or b is None or torch.equal(a, b), f"{step.optimizer} step {step.index}"


# Cases where gradlab.check() cannot be put right before the failing backward, with the reason (the driver
# says why; strict: a case that becomes checkable fails until its line goes). Today every case is checkable.
CHECK_IMPOSSIBLE: dict[str, str] = {}


@pytest.fixture(scope="session")
def agreements() -> dict[str, dict[str, object]]:
    return check_agreements([c.broken for c in CASES])


@pytest.mark.parametrize("case", [c.name for c in CASES])
def test_check_before_the_failing_backward_gives_the_notes_cause_and_first_fix(
    case: str, agreements: dict[str, dict[str, object]]
) -> None:
    """``gradlab.check(loss)`` inserted right before the failing backward (a copy of broken.py) names the same
    cause and the same first fix (summary and code) as the note on the error that backward then raises."""
    found = agreements.get(str(BY_NAME[case].broken.resolve()))
    assert found is not None, f"{case}: the driver did not report it"
    if case in CHECK_IMPOSSIBLE:
        assert not found["possible"] and found["why"] == CHECK_IMPOSSIBLE[case]
        return
    assert found["possible"], f"{case}: {found['why']}"
    assert found["check"] == found["note"], f"{case}: check() said {found['check']}, the note {found['note']}"
    assert isinstance(found["note"], dict) and found["note"]["cause"]
