"""course.verify and gradlab.saved_table, on real answers and real autograd graphs."""

from __future__ import annotations

import doctest

import pytest
import scenarios
import torch

import gradlab
import gradlab.course.exercise
from gradlab import course


def _verify(value, expected=..., **kw):
    kw.setdefault("success", "right")
    kw.setdefault("hint", "look again")
    if expected is ...:
        return course.verify(value, **kw)
    return course.verify(value, expected=expected, **kw)


# ------------------------------------------------------------------ verify


def test_passing_answer_displays_a_check_mark_line() -> None:
    verdict = _verify(4, 4, success="4 nodes lost their buffers.")
    assert verdict.passed and bool(verdict)
    assert str(verdict) == repr(verdict) == "✓ 4 nodes lost their buffers."
    assert "✓ 4 nodes lost their buffers." in verdict._repr_html_()


def test_wrong_answer_gives_the_hint_and_does_not_raise() -> None:
    verdict = _verify(3, 4, hint="count network 1's nodes")
    assert not verdict.passed and not bool(verdict)
    assert repr(verdict) == "✗ not yet: count network 1's nodes"
    assert "#c62828" in verdict._repr_html_()


def test_html_is_escaped() -> None:
    assert "&lt;b&gt;" in _verify(False, hint="<b>")._repr_html_()


def test_ellipsis_placeholder_asks_for_an_answer() -> None:
    verdict = _verify(..., 4, hint="count them")
    assert not verdict.passed
    assert str(verdict) == "… your answer goes in the cell above: replace the ... there, then run this cell again."


@pytest.mark.parametrize(
    "condition, passed",
    [
        (True, True),
        (False, False),
        (torch.tensor(True), True),
        (torch.tensor([False]), False),
    ],
)
def test_conditions(condition: object, passed: bool) -> None:
    assert _verify(condition).passed is passed


@pytest.mark.parametrize("value", [1, 0.0, "yes", torch.tensor([True, True]), torch.tensor(1.0), None])
def test_non_boolean_condition_is_a_type_error_that_says_what_to_pass(value: object) -> None:
    with pytest.raises(TypeError, match="expected="):
        _verify(value)


@pytest.mark.parametrize(
    "value, expected, passed",
    [
        ((1, 2), (1, 2), True),
        ([1, 2], (1, 2), True),  # list and tuple compare element by element
        ((1, 3), (1, 2), False),
        ((1, 2, 3), (1, 2), False),
        ("AddmmBackward0", "AddmmBackward0", True),
        ("Addmm", "AddmmBackward0", False),
        ({"n_1.linear_1.weight", "n_1.linear_1.bias"}, {"n_1.linear_1.bias", "n_1.linear_1.weight"}, True),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        (0.1 + 0.2, 0.3, True),  # floats within a relative 1e-6
        (0.3001, 0.3, False),
        (True, 1, False),  # a bool is not a number answer
        (1, True, False),
        (None, 4, False),
    ],
)
def test_values(value: object, expected: object, passed: bool) -> None:
    assert _verify(value, expected).passed is passed


def test_tensors_compare_by_shape_and_values() -> None:
    w = torch.nn.Linear(10, 1).weight
    assert _verify(w.t().shape, (10, 1)).passed
    assert _verify(w.t().shape, torch.Size([10, 1])).passed
    assert not _verify(w.shape, (10, 1)).passed
    assert _verify(w.detach().clone(), w.detach()).passed
    assert not _verify(w.detach() + 1e-3, w.detach()).passed
    assert not _verify(w.detach().t(), w.detach()).passed  # same values, other shape
    assert _verify(torch.tensor([1, 2]), torch.tensor([1, 2])).passed
    assert not _verify(torch.tensor([1, 2]), torch.tensor([1, 3])).passed
    assert _verify(torch.tensor(2.0), 2).passed  # one-element tensor vs number
    assert not _verify(torch.tensor([2.0, 2.0]), 2).passed


def test_tol_is_absolute() -> None:
    assert _verify(0.30, 0.31, tol=0.02).passed
    assert not _verify(0.30, 0.31, tol=0.001).passed
    assert _verify(torch.tensor([1.0, 2.0]), torch.tensor([1.01, 2.0]), tol=0.02).passed
    with pytest.raises(ValueError, match="tol"):
        _verify(1.0, 1.0, tol=-1)


@pytest.mark.parametrize("kw", [{"success": ""}, {"hint": "  "}, {"hint": None}])
def test_success_and_hint_are_required_sentences(kw: dict) -> None:
    with pytest.raises(TypeError, match="non-empty sentence"):
        _verify(True, **kw)


def test_verify_on_the_course_failure() -> None:
    """The notebook-01 exercise: how many nodes of loss_2's graph lost their buffers."""
    pair = course.make_pair(seed=0)
    x, y = course.batches(1)[0]
    pred_1 = pair.n_1(x)
    loss_1 = pair.criterion(y, pred_1)
    loss_1.backward()
    loss_2 = pair.criterion(y, pair.n_2(pred_1))
    freed = len(gradlab.check(loss_2, pair.names).problems)
    assert freed == 4
    assert _verify(4, freed).passed
    assert not _verify(5, freed).passed


# ------------------------------------------------------------- saved_table


def _retain_graph_failure() -> tuple[course.Pair, torch.Tensor]:
    s = scenarios.stepped_before_backward_2()
    return s.pair, s.loss_2


def _cells(header: str, row: str) -> dict[str, str]:
    """Split a fixed-width row by the header's column offsets."""
    names = ["id", "node", "saved as", "tensor", "shape", "saved", "now", "status"]
    starts = [header.index(name) if name != "saved" else header.index("saved", header.index("shape")) for name in names]
    bounds = list(zip(starts, starts[1:] + [None]))
    return {name: row[a:b].strip() for name, (a, b) in zip(names, bounds)}


def test_table_names_the_stale_weight() -> None:
    pair, loss_2 = _retain_graph_failure()
    saved = gradlab.saved_tensors(loss_2, pair.names)
    header, *rows = gradlab.saved_table(saved).splitlines()
    assert header.split("  ")[0] == "id" and header.endswith("status")
    assert len(rows) == len(saved)
    stale = [_cells(header, r) for r in rows if r.endswith("modified_in_place")]
    assert stale == [
        {
            "id": stale[0]["id"],
            "node": "AddmmBackward0",
            "saved as": "mat2",
            "tensor": "n_1.linear_2.weight (transposed view)",
            "shape": "[10, 1]",
            "saved": "1",
            "now": "2",
            "status": "modified_in_place",
        }
    ]


def test_table_rows_match_the_records() -> None:
    pair, loss_2 = _retain_graph_failure()
    saved = gradlab.saved_tensors(loss_2, pair.names)
    rows = gradlab.saved_table(saved).splitlines()[1:]
    for record, row in zip(saved, rows):
        assert row.startswith(str(record.node_id) + " ")
        assert record.node in row and record.name in row and row.endswith(record.status)


def test_table_shows_freed_rows_with_unknown_shape() -> None:
    pair = course.make_pair(seed=0)
    x, y = course.batches(1)[0]
    pred_1 = pair.n_1(x)
    pair.criterion(y, pred_1).backward()
    loss_2 = pair.criterion(y, pair.n_2(pred_1))
    rows = [r for r in gradlab.saved_table(gradlab.saved_tensors(loss_2, pair.names)).splitlines() if "freed" in r]
    assert len(rows) == 5
    assert all(" ? " in r and r.split()[-3:] == ["-", "-", "freed"] for r in rows)


def test_table_adds_who_modified_it_inside_track() -> None:
    with gradlab.track() as tracker:
        s = scenarios.stepped_before_backward_2()
        text = gradlab.saved_table(gradlab.saved_tensors(s.loss_2, s.names))
    assert not tracker.active
    header, *rows = text.splitlines()
    assert header.endswith("modified by  where")
    stale = [r for r in rows if "modified_in_place" in r]
    line = scenarios.line_of(scenarios.stepped_before_backward_2, "p.opt_1.step()")
    assert len(stale) == 1 and "Adam.step()" in stale[0] and stale[0].endswith(f"scenarios.py:{line}: p.opt_1.step()")


def test_table_is_deterministic() -> None:
    texts = {gradlab.saved_table(gradlab.saved_tensors(_retain_graph_failure()[1], None)) for _ in range(3)}
    assert len(texts) == 1


def test_empty_table() -> None:
    assert gradlab.saved_table([]) == "(no saved tensors)"


@pytest.mark.parametrize("bad", [None, "text", 3])
def test_table_rejects_what_is_not_a_list_of_records(bad: object) -> None:
    with pytest.raises(TypeError, match="saved_tensors"):
        gradlab.saved_table(bad)


def test_table_rejects_a_single_record_or_a_diagnosis_in_the_list() -> None:
    pair, loss_2 = _retain_graph_failure()
    saved = gradlab.saved_tensors(loss_2, pair.names)
    with pytest.raises(TypeError, match="saved_tensors"):
        gradlab.saved_table(saved[0])
    with pytest.raises(TypeError, match="contains a Diagnosis"):
        gradlab.saved_table([gradlab.check(loss_2)])


def test_docstring_examples_run() -> None:
    result = doctest.testmod(gradlab.course.exercise)
    assert result.attempted >= 2 and result.failed == 0


# -- checks that judge the answer: right answers pass, likely wrong ones get a true hint --------------


def _running_total(update) -> tuple[object, list[float], list[int]]:
    pair = course.make_pair(seed=0, softmax=False)
    n_1, opt_1, criterion = pair.n_1, pair.opt_1, pair.criterion
    total_loss, losses = 0, []
    with gradlab.measure_memory("exercise") as trace:
        for x, y in course.batches(6, seed=0, size=50):
            opt_1.zero_grad()
            loss_1 = criterion(y, n_1(x))
            loss_1.backward(retain_graph=True)
            opt_1.step()
            total_loss = update(total_loss, loss_1)
            losses.append(loss_1.item())
            trace.record()
    return total_loss, losses, trace.graphs


@pytest.mark.parametrize(
    "update", [lambda t, loss: t + loss.item(), lambda t, loss: t + loss.detach()], ids=["item", "detach"]
)
def test_running_total_right_answers_pass(update) -> None:
    assert course.check_running_total(*_running_total(update)).passed


@pytest.mark.parametrize(
    ("update", "hint"),
    [
        (lambda t, loss: t + loss, "keeps every step's graph alive"),
        (lambda t, loss: loss.item(), "is not the sum of the losses"),
    ],
    ids=["keeps-graph", "replaces"],
)
def test_running_total_wrong_answers_fail_with_a_true_hint(update, hint: str) -> None:
    verdict = course.check_running_total(*_running_total(update))
    assert not verdict.passed and hint in verdict.text


def test_running_total_without_an_answer_is_neutral() -> None:
    verdict = course.check_running_total(..., [1.0], [1])
    assert verdict.pending and not verdict.passed and "✓" not in verdict.text and "✗" not in verdict.text


def _one_batch(inputs) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor, float]:
    pair = course.make_pair(seed=0, softmax=False, lr=1e-2)
    x, y = course.batches(1)[0]
    n_2, opt_2, criterion = pair.n_2, pair.opt_2, pair.criterion
    for _ in range(200):
        opt_2.zero_grad()
        loss_2 = criterion(y, n_2(inputs(x)))
        loss_2.backward()
        opt_2.step()
    return n_2, x, y, loss_2.item()


def test_one_batch_right_answer_passes() -> None:
    assert course.check_one_batch(*_one_batch(lambda x: 2 * x)).passed


def test_one_batch_trained_on_x_fails_and_says_so() -> None:
    verdict = course.check_one_batch(*_one_batch(lambda x: x))
    assert not verdict.passed and "it was trained on input x" in verdict.text


def test_one_batch_untrained_fails() -> None:
    pair = course.make_pair(seed=0, softmax=False)
    x, y = course.batches(1)[0]
    verdict = course.check_one_batch(pair.n_2, x, y, 1.0)
    assert not verdict.passed and "not below 0.05" in verdict.text


# -- notebooks 05-08: guesses, moving the detach (05), repairing the loop (06), running total (07) ----


def test_running_total_numpy_number_passes_and_other_types_fail_with_a_reason() -> None:
    total, losses, graphs = _running_total(lambda t, loss: t + loss.detach().numpy())
    assert course.check_running_total(total, losses, graphs).passed  # a NumPy float is a number
    for wrong in ("3.0", [1.0, 2.0], None):
        verdict = course.check_running_total(wrong, losses, graphs)
        assert not verdict.passed and "it should be one number" in verdict.text


@pytest.mark.parametrize(
    ("guess", "passed"),
    [("equal", True), ("close", False), (["equal"], False), (None, False), (torch.tensor(1.0), False)],
)
def test_guess_is_compared_after_the_reveal(guess: object, passed: bool) -> None:
    verdict = course.check_guess(guess, "equal", right="bitwise equal.", wrong="they are bitwise equal.")
    assert verdict.passed is passed
    assert verdict.text.startswith("✓ your guess was right" if passed else "✗ you guessed ")


def test_guess_not_given_is_neutral() -> None:
    verdict = course.check_guess(..., {"n_2.linear_2.weight"}, right="right.", wrong="wrong.")
    assert verdict.pending and "did not guess" in verdict.text and "n_2" not in verdict.text


def test_guess_of_a_set_shows_it_sorted() -> None:
    verdict = course.check_guess({"b", "a"}, {"a"}, right="right.", wrong="only a.")
    assert verdict.text == "✗ you guessed ['a', 'b']: only a."


def _detach_exercise() -> tuple[course.Pair, torch.Tensor]:
    pair = course.make_pair(seed=0, softmax=False)
    x, _y = course.batches(1)[0]
    return pair, pair.n_1(x)


def test_detach_moved_to_the_input_passes_and_is_what_fix_a_trains() -> None:
    pair, pred_1 = _detach_exercise()
    pred_2 = pair.n_2(pred_1.detach())
    assert course.check_detach_moved(pair, pred_1, pred_2).passed
    # the check's claim, against real torch: every n_2 parameter gets a gradient, no n_1 parameter does
    pred_2.sum().backward()
    assert all(p.grad is not None for p in pair.n_2.parameters())
    assert all(p.grad is None for p in pair.n_1.parameters())


def _inside_copy(pair: course.Pair) -> torch.nn.Module:
    inside = course.make_pair(seed=0, softmax=False, detach_inside=True).n_2
    inside.load_state_dict(pair.n_2.state_dict())
    return inside


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (lambda pair, pred_1, x: pair.n_2(pred_1), "still runs back into network 1"),
        (lambda pair, pred_1, x: pair.n_2(x), "is not network 2 applied to network 1's output"),
        (lambda pair, pred_1, x: pred_1.detach(), "is not network 2 applied to network 1's output"),
        (lambda pair, pred_1, x: pair.n_2(pred_1).detach(), "has no graph"),
        (lambda pair, pred_1, x: pair.n_2(pred_1).detach().requires_grad_(), "has no graph"),
        (lambda pair, pred_1, x: pair.n_2(pred_1).sum().item(), "is a float"),
        (lambda pair, pred_1, x: "n_2(pred_1.detach())", "is a str"),
        (lambda pair, pred_1, x: _inside_copy(pair)(pred_1.detach()), "does not come from the pair's network 2"),
    ],
    ids=["no-detach", "input-x", "pred_1", "output-detached", "leaf", "number", "text", "other-net"],
)
def test_detach_moved_wrong_answers_fail_with_a_reason(answer, reason: str) -> None:
    pair, pred_1 = _detach_exercise()
    x, _y = course.batches(1)[0]
    verdict = course.check_detach_moved(pair, pred_1, answer(pair, pred_1, x))
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text


def test_detach_moved_names_the_frozen_layer_of_a_detach_inside() -> None:
    pair = course.make_pair(seed=0, softmax=False, detach_inside=True)
    x, _y = course.batches(1)[0]
    pred_1 = pair.n_1(x)
    verdict = course.check_detach_moved(pair, pred_1, pair.n_2(pred_1.detach()))
    assert not verdict.passed and "n_2.linear_1.weight, n_2.linear_1.bias get no gradient" in verdict.text


def test_detach_moved_without_an_answer_is_neutral_and_bad_setup_is_a_type_error() -> None:
    pair, pred_1 = _detach_exercise()
    assert course.check_detach_moved(pair, pred_1, ...).pending
    with pytest.raises(TypeError, match="pass the exercise's pair"):
        course.check_detach_moved(None, pred_1, pred_1)


def _repaired(form: str, steps: int = 20) -> course.Pair:
    """The loop notebook 02 left failing (retain_graph=True, opt_1.step() before loss_2.backward()), repaired by ``form``."""
    pair = course.make_pair(seed=0, softmax=False, lr=3e-2)
    n_1, n_2, opt_1, opt_2, criterion = pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion
    for x, y in course.batches(steps, seed=0):
        if form == "joint":
            course.joint_step(pair, x, y)
            continue
        pred_1 = n_1(x)
        opt_1.zero_grad()
        loss_1 = criterion(y, pred_1)
        loss_1.backward(retain_graph=True)
        opt_1.step()
        if form == "recompute":
            pred_1 = n_1(x)
        pred_2 = n_2(pred_1.detach() if form in ("detach", "recompute") else pred_1)
        opt_2.zero_grad()
        loss_2 = criterion(y, pred_2)
        loss_2.backward(inputs=list(n_2.parameters()) if form == "inputs" else None)
        opt_2.step()
    return pair


@pytest.mark.parametrize("form", ["inputs", "detach"])
def test_repair_right_forms_pass(form: str) -> None:
    assert course.check_repair(_repaired(form)).passed


def test_repair_as_written_under_allow_mutation_passes() -> None:
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        pair = _repaired("as written")
    assert course.check_repair(pair).passed


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: _repaired("joint"), "loss_2 trained it too"),
        (lambda: _repaired("recompute"), "network 2 ended elsewhere"),
        (lambda: _repaired("inputs", steps=5), "opt_1 stepped 5 times and opt_2 5 times, not 20"),
        (lambda: course.train("original", steps=20, softmax=False, lr=3e-2).pair, "opt_2 0 times"),
        (lambda: course.train("detach_inside", steps=20, softmax=False, lr=3e-2).pair, "n_2.linear_1 never learns"),
        (lambda: course.train("detach_input", steps=20, softmax=True, lr=3e-2).pair, "start from pair ="),
        (lambda: course.make_pair(seed=0, softmax=False, lr=3e-2), "opt_1 stepped 0 times"),
        (lambda: course.make_pair(seed=0, softmax=False, lr=3e-2).n_1, "pair is a Net"),
    ],
    ids=["joint", "recompute", "fewer-steps", "failed", "detach-inside", "softmax", "untrained", "a-network"],
)
def test_repair_wrong_results_fail_with_what_they_trained(make, reason: str) -> None:
    verdict = course.check_repair(make())
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text


def test_repair_without_an_answer_is_neutral() -> None:
    assert course.check_repair(...).pending
