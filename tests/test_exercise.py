"""course.verify and gradlab.saved_table, on real answers and real autograd graphs."""

from __future__ import annotations

import contextlib
import copy
import doctest

import pytest
import scenarios
import torch

import gradlab
import gradlab.course.exercise
import gradlab.course.repair
import gradlab.course.versions
from gradlab import course

pytestmark = pytest.mark.course


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
        assert record.node in row and str(record.name) in row and row.endswith(record.status)


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
    for module in (gradlab.course.exercise, gradlab.course.repair, gradlab.course.versions):
        result = doctest.testmod(module)
        assert result.attempted >= 2 and result.failed == 0, module.__name__


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
    assert not verdict.passed and "exactly where make_pair put them" in verdict.text


# ------------------------------------------------------------ notebooks 00-04: guesses and code exercises


def test_guess_left_out_is_gentle_and_words_compare_loosely() -> None:
    verdict = course.check_guess(..., "graph_freed", success="s", hint="h")
    assert verdict.pending and not verdict.passed and "you did not guess" in str(verdict)
    assert course.check_guess(" Modified-in place", "modified_in_place", success="s", hint="h").passed
    assert not course.check_guess("graph freed", "modified_in_place", success="s", hint="h").passed
    assert course.check_guess([4.0, 4.0, 4.0], torch.tensor([4.0, 4.0, 4.0]).tolist(), success="s", hint="h")
    assert not course.check_guess("raises", [4.0, 4.0, 4.0], success="s", hint="h").passed


def _writes(make_optimizer, backward=True, version=False, through_data=False, step=True):
    layer = torch.nn.Linear(3, 1)
    optimizer = make_optimizer(layer.parameters())
    if backward:
        layer(torch.ones(2, 3)).sum().backward()
    read = (lambda: layer.weight.data._version) if through_data else (lambda: layer.weight._version)
    before = read()
    if step:
        optimizer.step()
    return read() - (0 if version else before)


@pytest.mark.parametrize(
    "answer, reason",
    [
        (lambda make: _writes(make, version=True), "that is the weight's version"),
        (lambda make: _writes(make, backward=False), "skips a parameter without a gradient"),
        (lambda make: _writes(make, through_data=True), "layer.weight.data is a new tensor"),
        (lambda make: _writes(make, step=False), "never stepped"),
        (lambda make: 1, "writes(AdamW) returned 1"),
        (lambda make: "1", "return a whole number"),
        (lambda make: 1 / 0, "ZeroDivisionError"),
        (42, "should be a function"),
    ],
)
def test_writes_counter_wrong_answers_fail_with_their_reason(answer, reason: str) -> None:
    verdict = course.check_writes_counter(answer)
    assert not verdict.passed and not verdict.pending and reason in str(verdict)


def test_writes_counter_right_answer_passes_and_template_is_neutral() -> None:
    assert course.check_writes_counter(_writes).passed
    assert course.check_writes_counter(lambda make: torch.tensor(_writes(make))).passed

    def writes(make_optimizer): ...

    assert course.check_writes_counter(writes).pending


def _pack_version(t):
    return t, t._version


def _unpack_checked(packed):
    t, version = packed
    if t._version != version:
        raise RuntimeError("a saved tensor was modified in place")
    return t


def _identity(t):
    return t


@pytest.mark.parametrize(
    "pack, unpack, raises", [(_pack_version, _unpack_checked, True), (lambda t: t.clone(), _identity, False)]
)
def test_saved_hooks_right_answers_pass(pack, unpack, raises: bool) -> None:
    verdict = course.check_saved_hooks(pack, unpack)
    assert verdict.passed and ("raise" in str(verdict)) == raises


@pytest.mark.parametrize(
    "pack, unpack, reason",
    [
        (_identity, _identity, "backward ran and gave"),  # the notebook's identity hooks
        (lambda t: t.data, _identity, "backward ran and gave"),  # the .data trick
        (lambda t: t.detach(), _identity, "backward ran and gave"),
        (lambda t: t._version, _identity, "must give back the tensor"),
        (_pack_version, lambda p: p[0] * 2, "not autograd's"),
        (_pack_version, lambda p: 1 / 0, "ZeroDivisionError"),
        (lambda t: 1 / 0, _identity, "pack_hook raised ZeroDivisionError: division by zero while the forward of w * w"),
        ("lambda t: t", _identity, "pack_hook should be a function"),
        (_identity, None, "unpack_hook should be a function"),
    ],
)
def test_saved_hooks_wrong_answers_fail_with_their_reason(pack, unpack, reason: str) -> None:
    verdict = course.check_saved_hooks(pack, unpack)
    assert not verdict.passed and not verdict.pending and reason in str(verdict)


def test_saved_hooks_template_is_neutral() -> None:
    def pack_hook(t): ...

    assert course.check_saved_hooks(pack_hook, _identity).pending


# -- notebooks 09 and 11: error kinds, guesses, the in-place rewrite, the repaired loop ---------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "modified_in_place",
        "modified in place",
        "Modified-In-Place",
        "GL0002",
        "gl0002 modified in place",
        "[GL0002]",
        "inplace",
    ],
)
def test_error_kind_accepts_every_spelling_gradlab_prints(answer: str) -> None:
    assert course.check_error_kind(answer, "modified_in_place", success="right", hint="look again").passed


@pytest.mark.parametrize(
    "answer", ["graph_freed", "graph freed", "GL0001", "GL0001 modified in place", "in place of", ""]
)
def test_error_kind_rejects_another_kind_with_the_hint(answer: str) -> None:
    verdict = course.check_error_kind(answer, "modified_in_place", success="right", hint="look again")
    assert not verdict.passed and verdict.text.endswith("look again")


@pytest.mark.parametrize("answer", [2, None, True, ["modified_in_place"], torch.tensor(1.0)])
def test_error_kind_of_another_type_is_a_verdict_that_says_to_answer_with_a_string(answer: object) -> None:
    verdict = course.check_error_kind(answer, "graph_freed", success="right", hint="look again")
    assert not verdict.passed and "answer with a string" in verdict.text


def test_error_kind_in_the_language_in_effect() -> None:
    from gradlab.codes import code_for

    title = code_for("graph_freed").title  # the note's header words, as the learner read them
    assert course.check_error_kind(title, "graph_freed", success="right", hint="no").passed


def test_a_guess_left_out_gets_a_gentle_line_not_an_error() -> None:
    verdict = course.check_guess(..., expected=1, success="one", hint="count")
    assert verdict.pending and not verdict.passed and "did not guess" in verdict.text
    assert "✓" not in verdict.text and "✗" not in verdict.text


@pytest.mark.parametrize(
    ("guess", "expected", "passed"),
    [
        ((1, "graph freed"), (1, "graph_freed"), True),
        ((1, "GL0001"), (1, "graph_freed"), True),
        ((2, "graph_freed"), (1, "graph_freed"), False),
        ((1, "modified_in_place"), (1, "graph_freed"), False),
        ("runs", "modified_in_place", False),
        ("modified in place", "modified_in_place", True),
        (False, False, True),
        (0, False, False),
        ("no", False, False),
        (None, 1, False),
        (["n_2.linear_2.weight", "n_2.linear_2.bias"], {"n_2.linear_2.bias", "n_2.linear_2.weight"}, True),
        (("n_2.linear_2.bias", "n_2.linear_2.weight"), {"n_2.linear_2.bias", "n_2.linear_2.weight"}, True),
        ({"n_2.linear_2.weight"}, {"n_2.linear_2.bias", "n_2.linear_2.weight"}, False),
        (["n_2.linear_2.weight", "n_2.linear_2.weight"], {"n_2.linear_2.bias", "n_2.linear_2.weight"}, False),
        ("n_2.linear_2.weight", {"n_2.linear_2.weight"}, False),
    ],
)
def test_guesses_compared_after_the_reveal(guess: object, expected: object, passed: bool) -> None:
    verdict = course.check_guess(guess, expected, success="it ran once", hint="count again")
    assert verdict.passed is passed
    assert verdict.text == ("✓ your guess was right: it ran once" if passed else "✗ not what happened: count again")


def _exp_exercise() -> tuple[torch.Tensor, torch.Tensor]:
    """Notebook 09's Exercise 1, as its cell writes it."""
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    h = torch.exp(w)
    h += 1
    return w, h.sum()


def _out_of_place(w: torch.Tensor) -> torch.Tensor:
    h = torch.exp(w)
    h = h + 1
    return h.sum()


def _clone_then_write_09(w: torch.Tensor) -> torch.Tensor:
    h = torch.exp(w).clone()
    h += 1
    return h.sum()


def _data_trick_09(w: torch.Tensor) -> torch.Tensor:
    h = torch.exp(w)
    h.data += 1  # notebook 04's warning: autograd does not see this write
    return h.sum()


def _no_grad_write(w: torch.Tensor) -> torch.Tensor:
    h = torch.exp(w)
    with torch.no_grad():
        h += 1
    return h.sum()


def _already_backwarded(w: torch.Tensor) -> torch.Tensor:
    fixed = _out_of_place(w)
    fixed.backward()
    return fixed


@pytest.mark.parametrize("rewrite", [_out_of_place, _clone_then_write_09], ids=["out-of-place", "clone"])
def test_in_place_rewrite_right_answers_pass_and_leave_no_grad(rewrite) -> None:
    w, loss = _exp_exercise()
    verdict = course.check_in_place_rewrite(rewrite(w), loss, w)
    assert verdict.passed, verdict.text
    assert w.grad is None  # the check compares gradients without writing .grad


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (_data_trick_09, "not exp(w)"),
        (_no_grad_write, "would still fail (modified_in_place)"),
        (lambda w: _exp_exercise()[1], "would still fail (modified_in_place)"),  # the failing loss itself
        (_already_backwarded, "would still fail (graph_freed)"),
        (lambda w: _exp_exercise()[1].detach().requires_grad_(), "no graph back to w"),  # a leaf
        (lambda w: torch.tensor(_exp_exercise()[1].item(), requires_grad=True), "no graph back to w"),
        (lambda w: _out_of_place(w).detach(), "no graph back to w"),
        (lambda w: torch.exp(w).sum(), "keep the value"),
        (lambda w: torch.exp(w) + 1, "one number"),
        (lambda w: _out_of_place(torch.randn(3, requires_grad=True)) * 0 + _exp_exercise()[1].item(), "lead back"),
        (lambda w: "h.sum()", "is a str"),
        (lambda w: None, "is a NoneType"),
    ],
    ids=[
        "data",
        "no_grad",
        "unchanged",
        "freed",
        "leaf",
        "from-item",
        "detached",
        "value",
        "vector",
        "other-w",
        "str",
        "none",
    ],
)
def test_in_place_rewrite_wrong_answers_get_a_reason_never_an_exception(answer, reason: str) -> None:
    w, loss = _exp_exercise()
    verdict = course.check_in_place_rewrite(answer(w), loss, w)
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text, verdict.text


def test_in_place_rewrite_data_trick_shows_the_wrong_gradient() -> None:
    w, loss = _exp_exercise()
    text = course.check_in_place_rewrite(_data_trick_09(w), loss, w).text
    wrong = torch.exp(w.detach()) + 1  # what exp's backward computes from the changed h
    assert f"{wrong[0].item():.4f}" in text and f"{torch.exp(w.detach())[0].item():.4f}" in text


def test_in_place_rewrite_without_an_answer_is_neutral() -> None:
    w, loss = _exp_exercise()
    assert course.check_in_place_rewrite(..., loss, w).pending


# -- notebook 10's exercise: repair tanh-with-column-0-zeroed so that backward works ------------------


def _tanh_written_in_place(z):
    s = torch.tanh(z)
    s[:, 0] = 0  # tanh saved s for its backward
    return s


def _tanh_clone(z):
    s = torch.tanh(z).clone()
    s[:, 0] = 0
    return s


def _tanh_where(z):
    return torch.where(torch.arange(z.shape[1]) == 0, 0.0, torch.tanh(z))


def _tanh_cat(z):
    return torch.cat([torch.zeros(len(z), 1), torch.tanh(z[:, 1:])], dim=1)


def _tanh_mask(z):
    return torch.tanh(z) * torch.tensor([0.0, 1.0, 1.0])


def _tanh_data(z):
    s = torch.tanh(z)
    s.data[:, 0] = 0  # hidden from autograd
    return s


def _tanh_no_grad_write(z):
    s = torch.tanh(z)
    with torch.no_grad():
        s[:, 0] = 0
    return s


def _tanh_detached(z):
    s = torch.tanh(z).detach()
    s[:, 0] = 0
    return s


def _tanh_of_a_clone(z):
    s = torch.tanh(z.clone())  # the clone is tanh's input; its output is still written
    s[:, 0] = 0
    return s


def _tanh_raises(z):
    return torch.tanh(z) @ torch.ones(5)


def _tanh_writes_z(z):
    z.data[:, 0] = 0
    return torch.tanh(z)


@pytest.mark.parametrize("answer", [_tanh_clone, _tanh_where, _tanh_cat, _tanh_mask], ids=lambda f: f.__name__)
def test_masked_tanh_right_answers_pass(answer) -> None:
    verdict = course.check_masked_tanh(answer)
    assert verdict.passed and verdict.text.startswith("✓")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (_tanh_written_in_place, "backward fails with error[GL0002 modified in place]"),
        (_tanh_no_grad_write, "backward fails with error[GL0002 modified in place]"),
        (_tanh_of_a_clone, "backward fails with error[GL0002 modified in place]"),
        (_tanh_data, "column 0 still gets a gradient"),
        (_tanh_detached, "have no graph"),
        (_tanh_raises, "raised RuntimeError: size mismatch"),
        (_tanh_writes_z, "changed z itself"),
        (torch.tanh, "values differ"),
        (lambda z: [0.0], "returned a list"),
        (lambda z: torch.tanh(z)[:, 1:], "should keep z's shape"),
        (lambda z: torch.zeros_like(z).requires_grad_(), "values differ"),
        (3, "not a function of z"),
        (None, "not a function of z"),
    ],
    ids=[
        "in-place",
        "no-grad-write",
        "tanh-of-clone",
        "data",
        "detached",
        "raises",
        "writes-z",
        "no-mask",
        "list",
        "shape",
        "zeros",
        "int",
        "none",
    ],
)
def test_masked_tanh_wrong_answers_get_a_reason_never_an_exception(answer, reason: str) -> None:
    verdict = course.check_masked_tanh(answer)
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text, verdict.text


def test_masked_tanh_without_an_answer_is_neutral() -> None:
    verdict = course.check_masked_tanh(...)
    assert verdict.pending and "✓" not in verdict.text and "✗" not in verdict.text


def test_masked_tanh_a_constant_with_the_right_values_is_caught_by_its_gradient() -> None:
    """Right values, no dependence on z through the graph: the gradient check, not the values, rejects it."""

    def rebuilt(z):
        values = torch.tanh(z.detach()) * torch.tensor([0.0, 1.0, 1.0])
        return values + 0 * z.sum()  # a graph to z whose gradient is zero

    verdict = course.check_masked_tanh(rebuilt)
    assert not verdict.passed and "not tanh's gradient" in verdict.text


# -- notebooks 05-08: moving the detach (05), repairing the loop (06), running total (07) -----------


def test_running_total_numpy_number_passes_and_other_types_fail_with_a_reason() -> None:
    total, losses, graphs = _running_total(lambda t, loss: t + loss.detach().numpy())
    assert course.check_running_total(total, losses, graphs).passed  # a NumPy float is a number
    for wrong in ("3.0", [1.0, 2.0], None):
        verdict = course.check_running_total(wrong, losses, graphs)
        assert not verdict.passed and "it should be one number" in verdict.text


# -- the repair checks of notebooks 01, 06 and 11: judged by the gradient each step used ----------------------------
#
# Every answer is a function (n_1, n_2, opt_1, opt_2, criterion, x, y) -> None, one iteration. ``_loop`` writes the
# two-network iteration with the variations a learner tries; the named answers below are the forms the notebooks'
# solutions give, their equivalents, and the plausible wrong ones (the "run it anyway" loop under identity hooks,
# writes the counter misses, a missing zero_grad, a detach in the wrong place, another training).


def _loop(
    second_input=lambda pred_1, n_1, x: pred_1,
    backward_2=lambda loss_2, n_2: loss_2.backward(),
    retain=False,
    zero_1=True,
    zero_2=True,
    step_1=lambda n_1, opt_1: opt_1.step(),
    around=contextlib.nullcontext,
):
    def iteration(n_1, n_2, opt_1, opt_2, criterion, x, y):
        with around():
            pred_1 = n_1(x)
            if zero_1:
                opt_1.zero_grad()
            loss_1 = criterion(y, pred_1)
            loss_1.backward(retain_graph=retain)
            step_1(n_1, opt_1)
            pred_2 = n_2(second_input(pred_1, n_1, x))
            if zero_2:
                opt_2.zero_grad()
            loss_2 = criterion(y, pred_2)
            backward_2(loss_2, n_2)
            opt_2.step()

    return iteration


def _identity_hooks():
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


def _step_preserving_versions(n_1, opt_1):
    with contextlib.ExitStack() as stack:
        for p in n_1.parameters():
            stack.enter_context(torch.autograd._unsafe_preserve_version_counter(p))
        opt_1.step()


def _step_through_data(n_1, opt_1):
    for p in n_1.parameters():
        p.data.add_(-0.001 * p.grad)  # a hand-made step the version counter does not see


def _sum_before_steps(n_1, n_2, opt_1, opt_2, criterion, x, y):  # fix (b): another training
    pred_1 = n_1(x)
    opt_1.zero_grad()
    opt_2.zero_grad()
    (criterion(y, pred_1) + criterion(y, n_2(pred_1))).backward()
    opt_1.step()
    opt_2.step()


def _with_autograd_grad(n_1, n_2, opt_1, opt_2, criterion, x, y):  # the same training, gradients set by hand
    pred_1 = n_1(x)
    loss_1, loss_2 = criterion(y, pred_1), criterion(y, n_2(pred_1))
    p_1, p_2 = list(n_1.parameters()), list(n_2.parameters())
    for p, g in zip(p_1 + p_2, torch.autograd.grad(loss_1, p_1, retain_graph=True) + torch.autograd.grad(loss_2, p_2)):
        p.grad = g
    opt_1.step()
    opt_2.step()


def _zero_grad_after_the_step(n_1, n_2, opt_1, opt_2, criterion, x, y):  # cleared at the end instead
    pred_1 = n_1(x)
    criterion(y, pred_1).backward()
    opt_1.step()
    opt_1.zero_grad()
    criterion(y, n_2(pred_1.detach())).backward()
    opt_2.step()
    opt_2.zero_grad()


def _allow_mutation(n_1, n_2, opt_1, opt_2, criterion, x, y):  # the code as written, with copies: fix 4
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        _loop(retain=True)(n_1, n_2, opt_1, opt_2, criterion, x, y)


def _detach_inside(n_1, n_2, opt_1, opt_2, criterion, x, y):
    n_2.detach_inside = True
    _loop()(n_1, n_2, opt_1, opt_2, criterion, x, y)


def _zero_grad_between(n_1, n_2, opt_1, opt_2, criterion, x, y):
    pred_1 = n_1(x)
    opt_1.zero_grad()
    criterion(y, pred_1).backward()
    opt_1.step()
    loss_2 = criterion(y, n_2(pred_1.detach()))
    loss_2.backward()
    opt_2.zero_grad()  # after the backward: the step sees no gradient
    opt_2.step()


def _step_twice(n_1, n_2, opt_1, opt_2, criterion, x, y):
    _loop(lambda pred_1, n_1, x: pred_1.detach())(n_1, n_2, opt_1, opt_2, criterion, x, y)
    opt_2.step()


def _backward_2_twice(n_1, n_2, opt_1, opt_2, criterion, x, y):
    def twice(loss_2, n_2):
        loss_2.backward(retain_graph=True)
        loss_2.backward()

    _loop(lambda pred_1, n_1, x: pred_1.detach(), twice)(n_1, n_2, opt_1, opt_2, criterion, x, y)


def _only_n_1(n_1, n_2, opt_1, opt_2, criterion, x, y):
    opt_1.zero_grad()
    criterion(y, n_1(x)).backward()
    opt_1.step()


def _returns_none(n_1, n_2, opt_1, opt_2, criterion, x, y):
    return None


def _template(n_1, n_2, opt_1, opt_2, criterion, x, y): ...  # the notebook's empty cell


def _raises(*args):
    raise ZeroDivisionError("division by zero")


_DETACHED = _loop(lambda pred_1, n_1, x: pred_1.detach())
_RIGHT = {
    "detach": _DETACHED,
    "inputs=": _loop(backward_2=lambda loss_2, n_2: loss_2.backward(inputs=list(n_2.parameters()))),
    "pred_1.data": _loop(lambda pred_1, n_1, x: pred_1.data),  # a .data read: no write hidden, same training
    "autograd.grad": _with_autograd_grad,
    "zero_grad-at-the-end": _zero_grad_after_the_step,
    "allow_mutation_on_saved_tensors": _allow_mutation,
}
_WRONG = {
    "original": (_loop(), "(failure 1)"),
    "retain_graph": (_loop(retain=True), "(failure 2)"),
    "identity-hooks": (_loop(retain=True, around=_identity_hooks), "version check switched off"),
    "preserve-version": (_loop(retain=True, step_1=_step_preserving_versions), "the version counter did not see"),
    "data-step": (_loop(retain=True, step_1=_step_through_data), "the version counter did not see"),
    "no-zero_grad-2": (_loop(lambda pred_1, n_1, x: pred_1.detach(), zero_2=False), "opt_2.zero_grad()"),
    "no-zero_grad-1": (_loop(lambda pred_1, n_1, x: pred_1.detach(), zero_1=False), "opt_1.zero_grad()"),
    "sum": (_sum_before_steps, "opt_1.step() used loss_1 + loss_2; the intent is loss_1."),
    "recompute": (_loop(lambda pred_1, n_1, x: n_1(x).detach()), "after opt_1.step() (pred_1 recomputed"),
    "detach-inside": (_detach_inside, "n_2.linear_1.weight, n_2.linear_1.bias had no gradient"),
    "zero_grad-between": (_zero_grad_between, "zero_grad() ran between the backward and the step"),
    "step-twice": (_step_twice, "opt_2.step() ran 2 times"),
    "backward-twice": (_backward_2_twice, "n_2 got loss_2's gradient twice"),
    "n_2-untrained": (_only_n_1, "opt_2.step() never ran"),
    "return-None": (_returns_none, "opt_1.step() never ran"),
    "no-arguments": (lambda: None, "raised TypeError"),
    "raises": (_raises, "raised ZeroDivisionError"),
    "number": (3, "should be a function"),
    "text": ("def repaired(...)", "should be a function"),
}


@pytest.mark.parametrize("check", [course.check_repaired_iteration, course.check_repaired_loop], ids=["01", "06/11"])
@pytest.mark.parametrize("answer", list(_RIGHT.values()), ids=list(_RIGHT))
def test_repair_checks_pass_the_forms_that_train_what_the_loop_means(check, answer) -> None:
    verdict = check(answer)
    assert verdict.passed, verdict.text


@pytest.mark.parametrize("check", [course.check_repaired_iteration, course.check_repaired_loop], ids=["01", "06/11"])
@pytest.mark.parametrize(("answer", "reason"), list(_WRONG.values()), ids=list(_WRONG))
def test_repair_checks_give_each_wrong_answer_its_reason_never_an_exception(check, answer, reason: str) -> None:
    verdict = check(answer)
    assert not verdict.passed and not verdict.pending and verdict.text.startswith("✗"), verdict.text
    assert reason in verdict.text, verdict.text


def test_the_run_it_anyway_loop_trains_the_same_parameters_and_still_fails() -> None:
    """The identity-hook loop's parameters equal fix (a)'s, bitwise (notebook 06), so only the probe tells it."""
    runs = {}
    for label, answer in (("hooks", _WRONG["identity-hooks"][0]), ("detach", _DETACHED)):
        pair = course.make_pair(seed=0, softmax=False)
        for x, y in course.batches(3, seed=0):
            answer(pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion, x, y)
        runs[label] = [p.detach().clone() for p in pair.n_1.parameters()] + [p.detach() for p in pair.n_2.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(runs["hooks"], runs["detach"]))
    assert not course.check_repaired_loop(_WRONG["identity-hooks"][0]).passed


def test_the_version_check_probe_tells_the_hooks_apart() -> None:
    from gradlab.course.repair import version_check_probe

    assert version_check_probe() == "on"
    with _identity_hooks():
        assert version_check_probe() == "off"
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        assert version_check_probe() == "copies"
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        assert version_check_probe() == "copies"
    with gradlab.track(warn=False):
        assert version_check_probe() == "on"


@pytest.mark.parametrize(
    "check", [course.check_repaired_iteration, course.check_repaired_loop, course.check_guided_loop]
)
def test_repair_checks_without_an_answer_are_neutral(check) -> None:
    assert check(_template).pending and check(...).pending


def test_repair_checks_leave_no_hooks_and_no_state_behind() -> None:
    before = gradlab.course.repair.version_check_probe()
    course.check_repaired_loop(_WRONG["identity-hooks"][0])
    course.check_repaired_loop(_raises)
    assert gradlab.course.repair.version_check_probe() == before == "on"
    pair = course.make_pair(seed=0, softmax=False)
    assert not pair.n_1._forward_pre_hooks and not pair.opt_1._optimizer_step_pre_hooks


# -- notebook 06's guided loop: loss_2 also trains n_1, at half weight --------------------------------------


def _guided(n_1, n_2, opt_1, opt_2, criterion, x, y, retain=False):  # as the exercise hands it over: fails
    pred_1 = n_1(x)
    pred_2 = n_2(pred_1)
    loss_1 = criterion(y, pred_1)
    loss_2 = criterion(y, pred_2)
    opt_1.zero_grad()
    (loss_1 + 0.5 * loss_2).backward(retain_graph=retain)
    opt_1.step()
    opt_2.zero_grad()
    loss_2.backward()
    opt_2.step()


def _guided_losses(n_1, n_2, criterion, x, y):
    pred_1 = n_1(x)
    return criterion(y, pred_1), criterion(y, n_2(pred_1)), pred_1


def _guided_inputs(n_1, n_2, opt_1, opt_2, criterion, x, y):
    loss_1, loss_2, _ = _guided_losses(n_1, n_2, criterion, x, y)
    opt_1.zero_grad()
    opt_2.zero_grad()
    (loss_1 + 0.5 * loss_2).backward(inputs=list(n_1.parameters()), retain_graph=True)
    loss_2.backward(inputs=list(n_2.parameters()))
    opt_1.step()
    opt_2.step()


def _guided_one_backward(n_1, n_2, opt_1, opt_2, criterion, x, y):
    loss_1, loss_2, pred_1 = _guided_losses(n_1, n_2, criterion, x, y)
    opt_1.zero_grad()
    opt_2.zero_grad()
    (loss_1 + 0.5 * loss_2 + 0.5 * criterion(y, n_2(pred_1.detach()))).backward()
    opt_1.step()
    opt_2.step()


def _guided_zero_between(n_1, n_2, opt_1, opt_2, criterion, x, y):
    loss_1, loss_2, _ = _guided_losses(n_1, n_2, criterion, x, y)
    opt_1.zero_grad()
    (loss_1 + 0.5 * loss_2).backward(retain_graph=True)
    opt_2.zero_grad()  # drops the half of loss_2 the sum gave n_2
    loss_2.backward(inputs=list(n_2.parameters()))
    opt_1.step()
    opt_2.step()


def _guided_autograd_grad(n_1, n_2, opt_1, opt_2, criterion, x, y):
    loss_1, loss_2, _ = _guided_losses(n_1, n_2, criterion, x, y)
    p_1, p_2 = list(n_1.parameters()), list(n_2.parameters())
    grads = torch.autograd.grad(loss_1 + 0.5 * loss_2, p_1, retain_graph=True) + torch.autograd.grad(loss_2, p_2)
    for p, g in zip(p_1 + p_2, grads):
        p.grad = g
    opt_1.step()
    opt_2.step()


def _guided_steps_after(n_1, n_2, opt_1, opt_2, criterion, x, y):  # n_1 gets 1.5 x loss_2
    loss_1, loss_2, _ = _guided_losses(n_1, n_2, criterion, x, y)
    opt_1.zero_grad()
    (loss_1 + 0.5 * loss_2).backward(retain_graph=True)
    opt_2.zero_grad()
    loss_2.backward()
    opt_1.step()
    opt_2.step()


def _guided_n_2_one_and_a_half(n_1, n_2, opt_1, opt_2, criterion, x, y):
    loss_1, loss_2, _ = _guided_losses(n_1, n_2, criterion, x, y)
    opt_1.zero_grad()
    opt_2.zero_grad()
    (loss_1 + 0.5 * loss_2).backward(retain_graph=True)
    loss_2.backward(inputs=list(n_2.parameters()))
    opt_1.step()
    opt_2.step()


def _guided_detached(n_1, n_2, opt_1, opt_2, criterion, x, y):  # runs; loss_2 no longer guides n_1
    pred_1 = n_1(x)
    loss_1, loss_2 = criterion(y, pred_1), criterion(y, n_2(pred_1.detach()))
    opt_1.zero_grad()
    opt_2.zero_grad()
    loss_1.backward()
    loss_2.backward()
    opt_1.step()
    opt_2.step()


def _guided_no_zero_grad(n_1, n_2, opt_1, opt_2, criterion, x, y):
    loss_1, loss_2, _ = _guided_losses(n_1, n_2, criterion, x, y)
    (loss_1 + 0.5 * loss_2).backward(inputs=list(n_1.parameters()), retain_graph=True)
    loss_2.backward(inputs=list(n_2.parameters()))
    opt_1.step()
    opt_2.step()


@pytest.mark.parametrize(
    "answer",
    [_guided_inputs, _guided_one_backward, _guided_zero_between, _guided_autograd_grad],
    ids=["inputs=", "one-backward", "zero_grad-between", "autograd.grad"],
)
def test_guided_loop_right_forms_pass(answer) -> None:
    verdict = course.check_guided_loop(answer)
    assert verdict.passed, verdict.text


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (_guided, "(failure 1): a backward ran through what an earlier backward freed"),
        (lambda *a: _guided(*a, retain=True), "(failure 2): a step changed a weight"),
        (lambda *a: _loop_under_hooks(_guided, *a), "version check switched off"),
        (_guided_steps_after, "opt_1.step() used loss_1 + 1.5 × loss_2; the intent is loss_1 + 0.5 × loss_2."),
        (_guided_n_2_one_and_a_half, "opt_2.step() used 1.5 × loss_2; the intent is loss_2."),
        (_guided_detached, "No gradient of loss_2 reached n_1 before its step"),
        (_sum_before_steps, "opt_1.step() used loss_1 + loss_2; the intent is loss_1 + 0.5 × loss_2."),
        (_guided_no_zero_grad, "opt_1.zero_grad()"),
        (_returns_none, "opt_1.step() never ran"),
    ],
    ids=[
        "as-given",
        "retain_graph",
        "identity-hooks",
        "steps-after",
        "n_2-1.5",
        "detached",
        "sum",
        "no-zero_grad",
        "none",
    ],
)
def test_guided_loop_wrong_answers_get_their_reason(answer, reason: str) -> None:
    verdict = course.check_guided_loop(answer)
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text, verdict.text


def _loop_under_hooks(iteration, n_1, n_2, opt_1, opt_2, criterion, x, y):
    with _identity_hooks():
        iteration(n_1, n_2, opt_1, opt_2, criterion, x, y, retain=True)


def test_guided_loop_claims_hold_against_torch() -> None:
    """The right form steps n_1 with the gradient of loss_1 + 0.5 * loss_2, computed here by torch directly."""
    pair = course.make_pair(seed=0, softmax=False)
    x, y = course.batches(1, seed=0)[0]
    seen = {}

    def record(optimizer, args, kwargs):
        seen["n_1"] = [p.grad.clone() for p in pair.n_1.parameters()]

    pair.opt_1.register_step_pre_hook(record)
    reference = copy.deepcopy(pair.n_1), copy.deepcopy(pair.n_2)
    _guided_inputs(pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion, x, y)
    pred_1 = reference[0](x)
    loss = pair.criterion(y, pred_1) + 0.5 * pair.criterion(y, reference[1](pred_1))
    want = torch.autograd.grad(loss, list(reference[0].parameters()))
    assert all(torch.allclose(a, b, atol=1e-7) for a, b in zip(seen["n_1"], want))


# -- notebook 05's exercise: network 2 corrects network 1 through a skip; cut network 1 off ------------------------


def _detach_inside_too(pair, pred_1):
    pair.n_2.detach_inside = True  # the circulating fix kept, besides the cut at the input
    p = pred_1.detach()
    return p + pair.n_2(p)


def _residual_exercise() -> tuple[course.Pair, torch.Tensor]:
    pair = course.make_pair(seed=0, softmax=False)
    x, _y = course.batches(1)[0]
    return pair, pair.n_1(x)


def _detached_once(pair, pred_1):
    p = pred_1.detach()
    return p + pair.n_2(p)


@pytest.mark.parametrize(
    "answer",
    [
        _detached_once,
        lambda pair, pred_1: pred_1.detach() + pair.n_2(pred_1.detach()),
        lambda pair, pred_1: pair.n_2(pred_1.detach()) + pred_1.detach(),
        lambda pair, pred_1: pred_1.data + pair.n_2(pred_1.data),
    ],
    ids=["one-detach", "two-detaches", "swapped", "data"],
)
def test_residual_detach_right_answers_pass(answer) -> None:
    pair, pred_1 = _residual_exercise()
    verdict = course.check_residual_detach(pair, pred_1, answer(pair, pred_1))
    assert verdict.passed, verdict.text


def test_residual_detach_claim_holds_against_torch() -> None:
    pair, pred_1 = _residual_exercise()
    _detached_once(pair, pred_1).sum().backward()
    assert all(p.grad is not None for p in pair.n_2.parameters())
    assert all(p.grad is None for p in pair.n_1.parameters())


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (lambda pair, pred_1: pred_1 + pair.n_2(pred_1.detach()), "through the skip"),
        (lambda pair, pred_1: pred_1.detach() + pair.n_2(pred_1), "through network 2's input"),
        (lambda pair, pred_1: pred_1 + pair.n_2(pred_1), "through both"),
        (lambda pair, pred_1: (pred_1 + pair.n_2(pred_1)).detach(), "has no graph"),
        (lambda pair, pred_1: pair.n_2(pred_1.detach()), "does not have the values"),
        (lambda pair, pred_1: pred_1.detach() + pair.n_2(pred_1.detach()).detach(), "has no graph"),
        (lambda pair, pred_1: float((pred_1 + pair.n_2(pred_1)).detach().sum()), "is a float"),
        (_detach_inside_too, "n_2.linear_1.weight, n_2.linear_1.bias get no gradient"),
        (lambda pair, pred_1: pred_1.detach() + _inside_copy(pair)(pred_1.detach()), "not come from the pair's"),
    ],
    ids=[
        "skip-open",
        "input-open",
        "both-open",
        "all-detached",
        "no-skip",
        "n_2-detached",
        "number",
        "detach-inside",
        "other-network",
    ],
)
def test_residual_detach_wrong_answers_name_the_way_still_open(answer, reason: str) -> None:
    pair, pred_1 = _residual_exercise()
    verdict = course.check_residual_detach(pair, pred_1, answer(pair, pred_1))
    assert not verdict.passed and verdict.text.startswith("✗") and reason in verdict.text, verdict.text


def _inside_copy(pair: course.Pair) -> torch.nn.Module:
    """Network 2 with the pair's weights and the detach inside: a module that is not the pair's."""
    inside = course.make_pair(seed=0, softmax=False, detach_inside=True).n_2
    inside.load_state_dict(pair.n_2.state_dict())
    return inside


def test_residual_detach_without_an_answer_is_neutral_and_bad_setup_is_a_type_error() -> None:
    pair, pred_1 = _residual_exercise()
    assert course.check_residual_detach(pair, pred_1, ...).pending
    with pytest.raises(TypeError, match="pass the exercise's pair"):
        course.check_residual_detach(None, pred_1, pred_1)
