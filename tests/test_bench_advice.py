"""The bug-injection benchmark of gradlab's advice (benchmarks/advice/): its scripts, operators and harness.

No figure of gradlab is asserted here (those are measured by ``make bench-advice``):
these tests check the yardstick. The correct scripts run clean and train every
parameter their optimizers hold; each operator makes the transform it names, on
small sources and on the scripts, touching nothing else; each operator breaks at
least one script with an autograd error; and the harness judges a hand-made right
fix as fitting the original and wrong ones as not, reads ``gradlab fix``'s output,
and relies on runs that repeat exactly across processes.

Three processes run the scripts: the oracle on the originals and the chosen
mutants, the oracle on the hand-patched copies (and the originals again), and one
``gradlab fix``.
"""

from __future__ import annotations

import ast
import difflib
import shutil
from pathlib import Path
from typing import Any

import pytest
from loading import load_module

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "advice"
run = load_module(BENCH / "run.py", "gradlab_bench_advice_run")
mutations = run.mutations
oracle = run.oracle

SCRIPTS = run.scripts()

# For each operator, a script on which (by the benchmark's own measurement) some site fails; every mutant of
# that operator on that script is run, and at least one must fail with an autograd error.
FAILS_ON = {
    "inplace_augassign": "transformer_lm",
    "inplace_activation": "distillation",
    "inplace_method": "flow",
    "drop_detach": "actor_critic",
    "drop_state_detach": "char_rnn",
    "step_before_backward": "vae",
    "hoist_invariant": "gnn",
    "accumulate_loss": "tbptt_forecaster",
    "no_grad_wrap": "ae_prior",
    "double_backward": "ae_prior",
    "item_rebuild": "reinforce",
    "item_rebuild_leaf": "maml",
    "inference_data": "char_rnn",
    "param_inplace": "gan",
    "drop_retain_graph": "multitask",
    "drop_reduction": "pinn",
}


def mutate(operator: str, source: str) -> list[str]:
    return [m.source for m in mutations.OPERATORS[operator].mutate(source)]


# ------------------------------------------------------------------------------------------------ operators


# (operator, source, the mutants it must make, in source order)
UNIT = [
    (
        "inplace_augassign",
        "def f(x, w, y):\n    x = x * w\n    self.h = self.h + y\n    z = y - x\n    return x\n",
        [
            "def f(x, w, y):\n    x *= w\n    self.h = self.h + y\n    z = y - x\n    return x\n",
            "def f(x, w, y):\n    x = x * w\n    self.h += y\n    z = y - x\n    return x\n",
        ],
    ),
    (
        "inplace_activation",
        "h = F.relu(self.fc(x))\nact = nn.ReLU()\ndrop = nn.Dropout(0.1)\nkeep = F.relu(x, inplace=False)\n",
        [
            "h = F.relu(self.fc(x), inplace=True)\nact = nn.ReLU()\ndrop = nn.Dropout(0.1)\nkeep = F.relu(x, inplace=False)\n",
            "h = F.relu(self.fc(x))\nact = nn.ReLU(inplace=True)\ndrop = nn.Dropout(0.1)\nkeep = F.relu(x, inplace=False)\n",
            "h = F.relu(self.fc(x))\nact = nn.ReLU()\ndrop = nn.Dropout(0.1, inplace=True)\nkeep = F.relu(x, inplace=False)\n",
        ],
    ),
    (
        "inplace_method",
        "g = torch.sigmoid(a + b)\ne = g.exp()\nc = math.exp(1.0)\nm = s.masked_fill(mask, 0.0)\n",
        [
            "g = (a + b).sigmoid_()\ne = g.exp()\nc = math.exp(1.0)\nm = s.masked_fill(mask, 0.0)\n",
            "g = torch.sigmoid(a + b)\ne = g.exp_()\nc = math.exp(1.0)\nm = s.masked_fill(mask, 0.0)\n",
            "g = torch.sigmoid(a + b)\ne = g.exp()\nc = math.exp(1.0)\nm = s.masked_fill_(mask, 0.0)\n",
        ],
    ),
    (
        "drop_detach",
        "adv = (ret - v).detach()\nfor x in xs:\n    h = h.detach()\n    q = k.detach()\n",
        [
            "adv = (ret - v)\nfor x in xs:\n    h = h.detach()\n    q = k.detach()\n",
            "adv = (ret - v).detach()\nfor x in xs:\n    h = h.detach()\n    q = k\n",
        ],
    ),
    (
        "drop_state_detach",
        "for x in xs:\n    h = h.detach()\n    state = tuple(s.detach() for s in state)\n    out, h = rnn(x, h)\n",
        [
            "for x in xs:\n    state = tuple(s.detach() for s in state)\n    out, h = rnn(x, h)\n",
            "for x in xs:\n    h = h.detach()\n    out, h = rnn(x, h)\n",
        ],
    ),
    (
        "step_before_backward",
        "for x in xs:\n    loss = f(x)\n    loss.backward()\n    opt.step()\n    sched.step(1)\n",
        ["for x in xs:\n    loss = f(x)\n    opt.step()\n    loss.backward()\n    sched.step(1)\n"],
    ),
    (
        "hoist_invariant",
        "for i in range(3):\n    out = model(X)\n    y = model(i)\n    loss = out.sum()\n",
        ["out = model(X)\nfor i in range(3):\n    y = model(i)\n    loss = out.sum()\n"],
    ),
    (
        "accumulate_loss",
        "def train():\n    for x in xs:\n        loss = f(x)\n        loss.backward()\n",
        [
            "def train():\n    loss_total = 0.0\n    for x in xs:\n        loss = f(x)\n"
            "        loss_total = loss_total + loss\n        loss_total.backward()\n"
        ],
    ),
    (
        "no_grad_wrap",
        "x = batch[0]\nloss = crit(model(x), y)\nloss.backward()\nlog = str(loss)\n",
        [
            "x = batch[0]\nwith torch.no_grad():\n    loss = crit(model(x), y)\nloss.backward()\nlog = str(loss)\n",
        ],
    ),
    (
        "double_backward",
        "for x in xs:\n    loss.backward()\n",
        ["for x in xs:\n    loss.backward()\n    loss.backward()\n"],
    ),
    (
        "item_rebuild",
        "loss = f(x)\nloss.backward()\ngrads = torch.autograd.grad(inner, params)\n",
        [
            "loss = f(x)\nloss = torch.tensor(loss.item())\nloss.backward()\ngrads = torch.autograd.grad(inner, params)\n",
            "loss = f(x)\nloss.backward()\ninner = torch.tensor(inner.item())\ngrads = torch.autograd.grad(inner, params)\n",
        ],
    ),
    (
        "item_rebuild_leaf",
        "loss.backward()\n",
        ["loss = torch.tensor(loss.item(), requires_grad=True)\nloss.backward()\n"],
    ),
    (
        "inference_data",
        "X = torch.randn(8, 2)\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(2):\n    y = torch.ones(1)\n",
        [
            "with torch.inference_mode():\n    X = torch.randn(8, 2)\nmodel = Net()\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(2):\n    y = torch.ones(1)\n"
        ],
    ),
    (  # not data: a call of a model handed to the function, an autograd call, a graph kept on a parameter
        "inference_data",
        "def residual(net, x, policy):\n    u = net(x)\n    du = torch.autograd.grad(u.sum(), x)\n"
        "    loss = torch.stack(policy.saved)\n    noise = torch.randn(x.shape[0])\n",
        [
            "def residual(net, x, policy):\n    u = net(x)\n    du = torch.autograd.grad(u.sum(), x)\n"
            "    loss = torch.stack(policy.saved)\n    with torch.inference_mode():\n        noise = torch.randn(x.shape[0])\n"
        ],
    ),
    (
        "param_inplace",
        "def ema():\n    with torch.no_grad():\n        for p in m.parameters():\n            p.clamp_(-1, 1)\n"
        "    q.data.mul_(0.5)\n    with torch.no_grad():\n        y = m(x)\n",
        [
            "def ema():\n    for p in m.parameters():\n        p.clamp_(-1, 1)\n"
            "    q.data.mul_(0.5)\n    with torch.no_grad():\n        y = m(x)\n",
            "def ema():\n    with torch.no_grad():\n        for p in m.parameters():\n            p.clamp_(-1, 1)\n"
            "    q.mul_(0.5)\n    with torch.no_grad():\n        y = m(x)\n",
        ],
    ),
    (
        "drop_retain_graph",
        "a.backward(retain_graph=True)\ng = torch.autograd.grad(y, x, retain_graph=True, create_graph=True)\n",
        [
            "a.backward()\ng = torch.autograd.grad(y, x, retain_graph=True, create_graph=True)\n",
            "a.backward(retain_graph=True)\ng = torch.autograd.grad(y, x, create_graph=True)\n",
        ],
    ),
    (
        "drop_reduction",
        "loss = ((p - y) ** 2).mean()\nkl = torch.sum(q)\nm = x.mean(dim=1)\n",
        [
            "loss = ((p - y) ** 2)\nkl = torch.sum(q)\nm = x.mean(dim=1)\n",
            "loss = ((p - y) ** 2).mean()\nkl = q\nm = x.mean(dim=1)\n",
        ],
    ),
]


def test_every_operator_has_a_unit_case() -> None:
    assert {op for op, _, _ in UNIT} == set(mutations.OPERATORS)
    assert len(mutations.OPERATORS) >= 10


@pytest.mark.parametrize(("operator", "source", "expected"), UNIT, ids=[f"{u[0]}-{i}" for i, u in enumerate(UNIT)])
def test_an_operator_makes_its_transform_on_a_known_shape(operator: str, source: str, expected: list[str]) -> None:
    assert mutate(operator, source) == expected


def test_an_operator_finds_no_site_where_its_shape_is_absent() -> None:
    plain = "import torch\n\nx = 1\nprint(x)\n"
    assert all(mutate(op, plain) == [] for op in mutations.OPERATORS)


def _changed_original_lines(original: str, mutant: str) -> list[tuple[int, int]]:
    """The (first, last) 1-based original lines of each changed run; an insertion is (k + 1, k): before line k + 1."""
    a, b = original.splitlines(), mutant.splitlines()
    return [(i1 + 1, i2) for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b).get_opcodes() if tag != "equal"]


def test_the_mutants_of_the_scripts_are_valid_python_and_differ_only_where_the_operator_acts() -> None:
    counts: dict[str, int] = {}
    for family, path in SCRIPTS.items():
        source = path.read_text()
        for m in mutations.mutants_of(family, source):
            ast.parse(m.source)  # valid Python
            assert m.source != source
            first, last = m.lines
            for start, end in _changed_original_lines(source, m.source):
                # a changed run lies inside the site's lines; an insertion sits at most one line before them
                assert first - 1 <= start and end <= last, (m.name, m.description, (start, end), m.lines)
            counts[m.operator] = counts.get(m.operator, 0) + 1
    assert set(counts) == set(mutations.OPERATORS), f"operators without a site in the scripts: {counts}"


def test_mutants_are_deterministic() -> None:
    path = SCRIPTS["actor_critic"]
    a = [(m.name, m.source) for m in mutations.mutants_of("actor_critic", path.read_text())]
    b = [(m.name, m.source) for m in mutations.mutants_of("actor_critic", path.read_text())]
    assert a == b and len({name for name, _ in a}) == len(a)


# ------------------------------------------------------------------------------------------------ the runs


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-advice")


@pytest.fixture(scope="module")
def chosen(work: Path) -> list[Any]:
    """The mutants of FAILS_ON, written as the harness writes them."""
    outcomes = []
    for operator, family in FAILS_ON.items():
        outcomes += [o for o in run.write_mutants({family: SCRIPTS[family]}, work, [operator])]
    return outcomes


@pytest.fixture(scope="module")
def first_records(chosen: list[Any]) -> dict[str, Any]:
    """One oracle process: every original, then the chosen mutants."""
    paths = [*SCRIPTS.values(), *(o.path for o in chosen)]
    records = run.run_oracle(paths, "test")
    return {"originals": dict(zip(SCRIPTS, records[: len(SCRIPTS)])), "mutants": records[len(SCRIPTS) :]}


def test_every_script_runs_clean_and_trains_every_parameter_its_optimizers_hold(first_records: dict[str, Any]) -> None:
    assert len(SCRIPTS) >= 15
    for family, rec in first_records["originals"].items():
        assert rec.status == "finished", f"{family}: {rec.summary()}"
        assert rec.error_message is None
        counts = rec.step_counts()
        assert counts and min(counts.values()) >= 4, f"{family}: too few steps to judge a fix: {counts}"
        for opt, params in rec.optimizers.items():
            for p in params:
                grads = [s.grads.get(p) for s in rec.steps if s.optimizer == opt]
                assert any(g is not None and bool(g.any()) for g in grads), f"{family}: {opt} never trains {p}"


def test_each_operator_breaks_a_script_with_an_autograd_error(chosen: list[Any], first_records: dict[str, Any]) -> None:
    run.classify(chosen, first_records["mutants"])
    failing = {o.mutant.operator for o in chosen if o.status == "failing"}
    assert failing == set(FAILS_ON), f"operators with no failing mutant: {sorted(set(FAILS_ON) - failing)}"
    for o in chosen:
        if o.status == "failing":
            assert o.error_kind in oracle.ERROR_KINDS


def _mutant(family: str, operator: str, index: int) -> Any:
    return next(m for m in mutations.mutants_of(family, SCRIPTS[family].read_text(), [operator]) if m.index == index)


def _edit(path: Path, start: int, end: int, text: str) -> dict[str, Any]:
    return {"filename": str(path), "start": start, "end": end, "text": text}


@pytest.fixture(scope="module")
def hand_fixes(work: Path) -> dict[str, Any]:
    """Mutants, and fixes written by hand (not gradlab's), in the driver's dump format."""
    folder = work / "hand"
    aug = _mutant("transformer_lm", "inplace_augassign", 1)  # x += self.attn(self.ln1(x))
    dbl = _mutant("ae_prior", "double_backward", 0)  # recon.backward() twice
    paths = {}
    for m in (aug, dbl):
        p = folder / "mutants" / m.name / f"{m.family}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(m.source)
        paths[m.name] = p
    aug_line = aug.lines[0]
    original_line = SCRIPTS["transformer_lm"].read_text().splitlines()[aug_line - 1]
    assert original_line.strip() == "x = x + self.attn(self.ln1(x))"
    dbl_line = dbl.lines[0]
    indent = original_line[: len(original_line) - len(original_line.lstrip())]
    backward = SCRIPTS["ae_prior"].read_text().splitlines()[dbl_line - 1]
    assert backward.strip() == "recon.backward()"
    return {
        "right (the original line back)": (
            aug,
            paths[aug.name],
            [_edit(paths[aug.name], aug_line, aug_line, original_line)],
        ),
        "wrong (the residual branch's input detached)": (
            aug,
            paths[aug.name],
            [_edit(paths[aug.name], aug_line, aug_line, f"{indent}x = x + self.attn(self.ln1(x.detach()))")],
        ),
        "right (the repeated backward deleted)": (
            dbl,
            paths[dbl.name],
            [_edit(paths[dbl.name], dbl_line + 1, dbl_line + 1, "")],
        ),
        "wrong (retain_graph=True: the gradient counted twice)": (
            dbl,
            paths[dbl.name],
            [_edit(paths[dbl.name], dbl_line, dbl_line, backward.replace("()", "(retain_graph=True)"))],
        ),
        "no edits": (dbl, paths[dbl.name], []),
    }


@pytest.fixture(scope="module")
def verdicts(hand_fixes: dict[str, Any], work: Path) -> dict[str, Any]:
    """The hand-made fixes judged as the harness judges gradlab's, in one oracle process (with the originals again)."""
    copies, why = [], {}
    for i, (label, (m, path, edits)) in enumerate(hand_fixes.items()):
        copy, reason = run.patched_copy(path, {"edits": edits}, work / "hand" / "patched" / str(i))
        if copy is None:
            why[label] = reason
        else:
            copies.append((label, m, copy))
    records = run.run_oracle([c for _, _, c in copies] + list(SCRIPTS.values()), "test, hand-made fixes")
    originals = dict(zip(SCRIPTS, records[len(copies) :]))
    judged = {}
    for (label, m, _), rec in zip(copies, records):
        judged[label] = run.judge(originals[m.family], rec)
    return {"judged": judged, "why": why, "originals": originals}


def test_the_harness_judges_a_hand_made_right_fix_as_fitting_and_wrong_ones_as_not(verdicts: dict[str, Any]) -> None:
    judged = verdicts["judged"]
    assert judged["right (the original line back)"] == (True, "")
    assert judged["right (the repeated backward deleted)"] == (True, "")
    fits, why = judged["wrong (the residual branch's input detached)"]
    assert not fits and "differ" in why, why
    fits, why = judged["wrong (retain_graph=True: the gradient counted twice)"]
    assert not fits and "differ" in why, why
    assert verdicts["why"] == {"no edits": "the first fix has no edits (it cannot be applied as given)"}


def test_the_originals_repeat_exactly_in_another_process(
    first_records: dict[str, Any], verdicts: dict[str, Any]
) -> None:
    # (b) compares a patched mutant, run in one process, with the original, run in another
    for family, rec in first_records["originals"].items():
        again = verdicts["originals"][family]
        assert oracle.compare(rec, again, rtol=0, atol=0) == [], family


def test_the_harness_reads_gradlab_fix_and_takes_the_copy_it_wrote(work: Path) -> None:
    m = _mutant("image_cnn", "inplace_augassign", 0)  # x *= w[:, :, None, None]
    path = work / "cli" / m.name / "image_cnn.py"
    path.parent.mkdir(parents=True)
    path.write_text(m.source)
    outcome = run.Outcome(m, path, status="failing")
    copy = run.run_gradlab_fix(outcome, work / "cli")
    fix = outcome.fix
    assert fix["exit_code"] in (0, 1), fix
    assert outcome.verified == (fix["exit_code"] == 0) == (fix["verified_number"] is not None)
    if outcome.verified:  # the copy holds the verified fix, applied by gradlab fix itself
        assert copy is not None and copy.read_text() != m.source
        assert fix["applied_number"] == fix["verified_number"]
        assert fix["verified_fix"]["applicability"] in ("machine-applicable", "maybe-incorrect")
    else:
        assert copy is None and fix["applied_number"] is None
    assert fix["tried"] >= (fix["verified_number"] or 0)
    shutil.rmtree(path.parent)


def test_reading_gradlab_fix_output_without_a_verified_fix() -> None:
    text = (
        "gradlab fix: vae.py fails at vae.py:64: RuntimeError: grad can be implicitly created only for scalar outputs\n"
        "gradlab has no fix for this failure.\n\nNo fix verified (0 tried).\n"
    )
    assert run.read_fix_output(text) == {
        "verified_number": None,
        "tried": 0,
        "applied_number": None,
        "verified_fix": None,
    }
