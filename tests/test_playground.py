"""The playground and the quizzes, driven from Python without a browser."""

from __future__ import annotations

import html
import json

import pytest

from gradlab import course
from gradlab.course import PRESETS, QUESTIONS, STEPS, Quiz, outcome_table, playground, quiz, run_order

pytestmark = pytest.mark.course

N_1 = [f"n_1.linear_{i}.{p}" for i in (1, 2) for p in ("weight", "bias")]
N_2 = [f"n_2.linear_{i}.{p}" for i in (1, 2) for p in ("weight", "bias")]
FREED = "Trying to backward through the graph a second time"
STALE = "is at version 2; expected version 1"
JOINT = "joint backward (both losses train n_1)"
INPUTS = "loss_2 into n_2 only (inputs=)"
RECOMPUTE = "recompute n_1 after its step"


# ------------------------------------------------------------------ data layer


def test_steps_and_presets_are_consistent() -> None:
    assert STEPS["forward_1"] == "pred_1 = n_1(x)"
    assert STEPS["backward_1_retain"] == "loss_1.backward(retain_graph=True)"
    assert STEPS["forward_2_detached"] == "pred_2 = n_2(pred_1.detach())"
    assert STEPS["backward_joint"] == "(loss_1 + loss_2).backward()"
    assert STEPS["backward_2_inputs"] == "loss_2.backward(inputs=list(n_2.parameters()))"
    assert list(PRESETS) == [
        "original loop",
        "retain_graph=True",
        "detach inside network 2",
        "n_2 on detached pred_1",
        INPUTS,
        JOINT,
        RECOMPUTE,
    ]
    for preset in PRESETS.values():
        assert all(step in STEPS for step in preset.steps)
    assert [name for name, p in PRESETS.items() if p.detach_inside] == ["detach inside network 2"]


def test_preset_notes_say_what_each_order_trains() -> None:
    notes = {name: preset.note for name, preset in PRESETS.items()}
    assert all(notes.values())
    # The corrected story (issue #14): the original loop never trains n_1 with loss_2, so (a) repairs it.
    assert "would arrive after opt_1.step()" in notes["original loop"]
    assert "n_2 on detached pred_1" in notes["original loop"]
    assert notes["n_2 on detached pred_1"].startswith("fix (a), the original loop repaired")
    assert "different training" in notes[JOINT]
    assert "stays at its random initialization" in notes["detach inside network 2"]
    for note in notes.values():
        assert "stops training" not in note and "no longer trains" not in note


def test_original_loop_frees_the_graph() -> None:
    o = run_order(PRESETS["original loop"])
    assert not o.ok and o.error_type == "RuntimeError"
    assert o.error.startswith(FREED)
    assert o.steps[o.failed_step] == "backward_2"
    assert o.diagnosis.startswith("error[GL0001 graph freed]: ")
    assert "--> playground:4\n" in o.diagnosis and "loss_1.backward()" in o.diagnosis
    assert o.diagnosis_details.startswith("backward() failed") or o.diagnosis_details.startswith("backward() would")
    assert "loss_2.backward(inputs=list(n_2.parameters()))" in o.diagnosis_details  # every fix, not only the first
    assert list(o.changed) == N_1  # opt_1.step() ran, opt_2.step() never did


def test_retain_graph_hits_the_version_counter() -> None:
    o = run_order(PRESETS["retain_graph=True"])
    assert not o.ok and STALE in o.error
    assert "n_1.linear_2.weight" in o.diagnosis and "Adam.step()" in o.diagnosis
    assert "--> playground:5\n" in o.diagnosis and "opt_1.step()" in o.diagnosis


def test_detach_inside_runs_but_n2_linear_1_gets_no_gradient() -> None:
    o = run_order(PRESETS["detach inside network 2"])
    assert o.ok and o.error is None and o.diagnosis is None
    assert o.detach_inside
    assert o.no_grad == ["n_2.linear_1.weight", "n_2.linear_1.bias"]
    assert "n_2.linear_1.weight" in o.unchanged
    assert o.grad_from["n_1.linear_1.weight"] == ("loss_1",)


def test_detached_input_trains_both_and_n1_only_from_loss_1() -> None:
    o = run_order(PRESETS["n_2 on detached pred_1"])
    assert o.ok
    assert list(o.changed) == N_1 + N_2
    assert all(o.grad_from[p] == ("loss_1",) for p in N_1)
    assert all(o.grad_from[p] == ("loss_2",) for p in N_2)


def test_inputs_repairs_the_original_order_like_fix_a() -> None:
    o = run_order(PRESETS[INPUTS])
    a = run_order(PRESETS["n_2 on detached pred_1"])
    assert o.ok and not o.no_grad and list(o.changed) == N_1 + N_2
    assert o.grad_from == a.grad_from  # loss_2 reaches n_2 only: inputs= narrows the backward
    assert o.losses == a.losses
    assert PRESETS[INPUTS].steps[:8] == PRESETS["original loop"].steps[:8]  # every line in its place


def test_recompute_trains_n1_from_loss_1_only() -> None:
    o = run_order(PRESETS[RECOMPUTE])
    assert o.ok and not o.no_grad and list(o.changed) == N_1 + N_2
    assert all(o.grad_from[p] == ("loss_1",) for p in N_1)
    assert all(o.grad_from[p] == ("loss_2",) for p in N_2)
    assert PRESETS[RECOMPUTE].steps.count("forward_1") == 2


def test_sum_in_place_of_loss_2_backward_still_fails() -> None:
    steps = list(PRESETS["original loop"].steps)
    steps[steps.index("backward_2")] = "backward_joint"
    o = run_order(steps)
    assert not o.ok and o.error.startswith(FREED)


def test_joint_backward_trains_everything() -> None:
    o = run_order(PRESETS[JOINT])
    assert o.ok and not o.no_grad and not o.unchanged
    assert all(o.grad_from[p] == ("loss_1", "loss_2") for p in N_1)
    assert o.graph.startswith("autograd graph: ")


def test_detach_flag_and_softmax() -> None:
    assert run_order(PRESETS["original loop"].steps, detach_inside=True).ok
    o = run_order(PRESETS[JOINT], softmax=True)
    assert o.ok and not o.changed  # softmax over one output: every gradient is zero


def test_order_errors_say_what_to_add() -> None:
    o = run_order(["forward_1", "backward_1"])
    assert not o.ok and o.error_type == "OrderError"
    assert o.error == "loss_1 is not defined yet: add 'loss_1 = criterion(y, pred_1)' before 'loss_1.backward()'"
    o = run_order(["loss_2"])
    assert o.error.startswith(
        "pred_2 is not defined yet: add 'pred_2 = n_2(pred_1)' or 'pred_2 = n_2(pred_1.detach())'"
    )
    o = run_order(["forward_1", "loss_1", "backward_1", "backward_1"])
    assert o.failed_step == 3 and o.error.startswith(FREED)


def test_runs_are_deterministic() -> None:
    assert run_order(PRESETS[JOINT]) == run_order(PRESETS[JOINT])
    assert str(outcome_table()) == str(outcome_table())


@pytest.mark.parametrize(
    "steps, error",
    [
        ("forward_1", TypeError),
        ([], ValueError),
        (["forward_3"], ValueError),
        ([1], TypeError),
    ],
)
def test_bad_steps(steps: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="step"):
        run_order(steps)  # type: ignore[arg-type]


def test_bad_flags() -> None:
    with pytest.raises(TypeError, match="detach_inside"):
        run_order(["forward_1"], detach_inside="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        run_order(["forward_1"], seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="presets"):
        outcome_table({})
    with pytest.raises(ValueError, match="preset must be one of"):
        playground("nope")


def test_outcome_table() -> None:
    table = outcome_table()
    assert isinstance(table, str) and table.startswith("<table")
    assert FREED in table and STALE in table
    assert table._repr_html_() == str(table)
    lines = table.text.splitlines()
    assert len(lines) == len(PRESETS)
    assert all(html.escape(preset.note) in table for preset in PRESETS.values())
    assert lines[2].startswith(
        "detach inside network 2: ran all 10 lines of the iteration; no gradient: n_2.linear_1.weight"
    )
    assert lines[0].startswith("original loop: line 9 `loss_2.backward()` raised RuntimeError: " + FREED)


# ---------------------------------------------------------------------- widget


def _press_run(pg: course.Playground) -> str:
    pg.run.click()
    return pg.output_text()


def test_playground_presets_from_the_widget() -> None:
    pg = playground()
    assert pg.steps == list(PRESETS["original loop"].steps)
    text = _press_run(pg)
    assert FREED in text and "gradlab: error[GL0001 graph freed]" in text

    pg.preset.value = "retain_graph=True"
    text = _press_run(pg)
    assert STALE in text and "n_1.linear_2.weight" in text and "Adam.step()" in text

    pg.preset.value = "detach inside network 2"
    assert pg.detach.value is True
    text = _press_run(pg)
    assert "✓ Success" in text and not pg.outcome.error
    assert "n_2.linear_1.weight" in pg.outcome.no_grad

    pg.preset.value = "n_2 on detached pred_1"
    assert pg.detach.value is False
    _press_run(pg)
    assert pg.outcome.ok and list(pg.outcome.changed) == N_1 + N_2

    pg.preset.value = JOINT
    text = _press_run(pg)
    assert "✓ Success: ran all 9 lines of the iteration" in text and not pg.outcome.unchanged

    pg.preset.value = INPUTS
    _press_run(pg)
    assert pg.outcome.ok and list(pg.outcome.changed) == N_1 + N_2


def test_playground_shows_what_the_preset_trains() -> None:
    pg = playground()
    assert html.escape(PRESETS["original loop"].note) in pg.note.value
    summary, folded = pg.note.value.split("</summary>")  # folded: the learner predicts before reading it
    assert "<details" in summary and PRESETS["original loop"].note not in summary
    assert html.escape(PRESETS["original loop"].note) in folded
    pg.preset.value = JOINT
    assert html.escape(PRESETS[JOINT].note) in pg.note.value
    pg.order.index = 0
    pg.remove.click()  # editing makes it a custom order
    assert pg.preset.value == "custom" and "your own order" in pg.note.value


def test_playground_folds_the_full_diagnosis_under_the_note() -> None:
    pg = playground()
    pg.run.click()
    page = pg.output.outputs[0]["data"]["text/html"]
    note, folded = page.split("<details>")
    assert "gradlab's diagnosis" in note and "error[GL0001 graph freed]" in note
    assert "diagnosis.details()" in folded and "Fixes, by what you want to train" in folded
    assert html.escape("loss_2.backward(inputs=list(n_2.parameters()))") in folded


def test_playground_output_has_html_and_a_graph() -> None:
    pg = playground(JOINT)
    pg.run.click()
    first, graph = pg.output.outputs
    assert "✓ Success" in first["data"]["text/html"]
    assert graph["data"]["text/plain"].startswith("autograd graph:")
    json.dumps(pg.output.outputs)  # syncable: no bytes


def test_editing_the_steps() -> None:
    pg = playground()
    n = len(pg.steps)
    pg.order.index = 0
    pg.step_choice.value = "zero_grad_2"
    pg.add.click()
    assert pg.steps[1] == "zero_grad_2" and len(pg.steps) == n + 1
    assert pg.preset.value == "custom" and pg.order.index == 1
    pg.up.click()
    assert pg.steps[:2] == ["zero_grad_2", "forward_1"] and pg.order.index == 0
    pg.up.click()  # already at the top: nothing happens
    assert pg.steps[0] == "zero_grad_2"
    pg.down.click()
    assert pg.steps[:2] == ["forward_1", "zero_grad_2"]
    pg.remove.click()
    assert pg.steps == list(PRESETS["original loop"].steps)
    # Move opt_1.step() after loss_2.backward(): the original loop still fails (graph freed).
    pg.order.index = pg.steps.index("step_1")
    for _ in range(4):
        pg.down.click()
    assert pg.steps.index("step_1") == pg.steps.index("backward_2") + 1
    assert FREED in _press_run(pg)
    pg.preset.value = "original loop"
    assert pg.steps == list(PRESETS["original loop"].steps)


def test_empty_order_is_reported_not_run() -> None:
    pg = playground()
    for _ in range(len(pg.steps)):
        pg.order.index = 0
        pg.remove.click()
    assert pg.steps == []
    assert "No steps" in _press_run(pg)


def test_callback_errors_appear_in_the_output() -> None:
    pg = playground()
    pg.order.options = [(" 1. not a step", "not_a_step")]  # what no control can produce: a real callback error
    pg.run.click()
    (shown,) = pg.output.outputs
    assert shown["name"] == "stderr"
    assert "Error in the widget callback" in shown["text"]
    assert "ValueError: unknown step 'not_a_step'" in shown["text"]


def test_playground_mimebundle_has_a_static_fallback() -> None:
    pg = playground()
    bundle = pg._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", "application/vnd.jupyter.widget-view+json"}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == pg.widget.model_id
    assert pg.widget.model_id not in bundle["text/plain"] + bundle["text/html"]
    assert bundle["text/html"] == playground()._repr_mimebundle_()["text/html"]


def test_playground_static_view_folds_the_outcomes_it_would_give_away() -> None:
    """The playground sits under a Predict prompt: a static view (handout, GitHub) folds every outcome."""
    bundle = playground()._repr_mimebundle_()
    before, folded = bundle["text/html"].split("<details>")
    assert FREED in folded and FREED not in before and "<table" in folded and "<table" not in before
    assert FREED not in bundle["text/plain"] and "✓" not in bundle["text/plain"]
    assert all(name in bundle["text/plain"] for name in PRESETS)


def test_import_does_not_load_ipywidgets() -> None:
    import subprocess
    import sys

    code = "import sys, gradlab; print('ipywidgets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# ------------------------------------------------------------------------ quiz

QUESTION = Quiz(
    "What does loss.backward() free?",
    {
        "The saved tensors": "Right: the buffers it saved for backward.",
        "The parameters": "No: parameters are leaves; backward writes their .grad.",
    },
    answer="The saved tensors",
)


def test_quiz_check() -> None:
    assert QUESTION.check("The saved tensors") == (True, "Right: the buffers it saved for backward.")
    assert QUESTION.check("The parameters")[0] is False
    assert QUESTION.feedback("The parameters").startswith("Not quite: ")
    with pytest.raises(ValueError, match="not an option"):
        QUESTION.check("The graph")
    with pytest.raises(TypeError, match="choice"):
        QUESTION.check(0)  # type: ignore[arg-type]


def test_quiz_validates() -> None:
    with pytest.raises(ValueError, match="not one of the options"):
        Quiz("q?", {"a": "x", "b": "y"}, answer="c")
    with pytest.raises(TypeError, match="at least two"):
        Quiz("q?", {"a": "x"}, answer="a")
    with pytest.raises(TypeError, match="question"):
        Quiz("", {"a": "x", "b": "y"}, answer="a")
    with pytest.raises(TypeError, match="explanation"):
        Quiz("q?", {"a": 1, "b": "y"}, answer="a")  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="needs question.*retain_graph"):
        quiz("q?")  # neither a course question id nor options and answer
    with pytest.raises(TypeError, match="not both"):
        quiz(QUESTION, {"a": "x"})
    with pytest.raises(TypeError, match="shuffle"):
        quiz("retain_graph", shuffle="yes")  # type: ignore[arg-type]


def test_quiz_widget_shows_the_explanation_on_click() -> None:
    w = quiz(QUESTION)
    w.buttons["The parameters"].click()
    assert w.feedback_text() == "Not quite: No: parameters are leaves; backward writes their .grad."
    assert w.buttons["The parameters"].button_style == "danger"
    w.buttons["The saved tensors"].click()
    assert w.feedback_text().startswith("Right: ")
    assert w.buttons["The saved tensors"].button_style == "success"
    assert w.buttons["The parameters"].button_style == ""


@pytest.mark.parametrize("key", list(QUESTIONS))
def test_course_questions_grade_every_option(key: str) -> None:
    q = QUESTIONS[key]
    w = quiz(key)
    assert w.quiz.question == q.question and w.quiz.answer == q.answer
    assert sorted(w.buttons) == sorted(q.options)
    for option, button in w.buttons.items():
        button.click()
        right = option == q.answer
        assert w.feedback_text() == ("Right: " if right else "Not quite: ") + q.options[option]
        assert button.button_style == ("success" if right else "danger")


def test_course_question_order_is_shuffled_and_deterministic() -> None:
    shown = {key: [b.description for b in quiz(key).widget.children[1].children] for key in QUESTIONS}
    assert shown == {key: list(quiz(key).buttons) for key in QUESTIONS}  # the same on every call
    assert shown == {key: list(q.shuffled(key).options) for key, q in QUESTIONS.items()}
    positions = [shown[key].index(q.answer) for key, q in QUESTIONS.items()]
    assert positions != [0] * len(QUESTIONS)  # the answer is not always first
    assert any(shown[key] != list(q.options) for key, q in QUESTIONS.items())
    assert list(quiz("retain_graph", shuffle=False).buttons) == list(QUESTIONS["retain_graph"].options)


def test_shuffled_keeps_the_quiz_and_depends_on_the_key() -> None:
    q = Quiz("Pick one", {str(i): f"option {i}" for i in range(8)}, answer="3")
    a, b = q.shuffled("a"), q.shuffled("b")
    assert a == q.shuffled("a") and a.options == dict(q.options) and a.answer == "3"
    assert list(a.options) != list(b.options)  # 8! orders: two keys giving the same one is a 1 in 40320 chance
    assert list(q.shuffled().options) == list(q.shuffled(q.question).options)
    assert a.check("3") == (True, "option 3") and a.check("4") == (False, "option 4")


def test_shuffled_order_follows_positions_not_texts() -> None:
    """A translated quiz (other texts, the same written order) is shuffled into the same order under the same key."""
    english = Quiz("Which?", {f"option {i}": f"why {i}" for i in range(6)}, answer="option 2")
    translated = Quiz("哪一个？", {f"选项 {i}": f"原因 {i}" for i in range(6)}, answer="选项 2")
    order = [[list(q.options).index(o) for o in q.shuffled("key").options] for q in (english, translated)]
    assert order[0] == order[1] and order[0] != list(range(6))
    assert list(translated.shuffled("key").options)[order[0].index(2)] == translated.answer


def test_quiz_static_fallback() -> None:
    w = quiz(QUESTION.question, QUESTION.options, QUESTION.answer)
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    assert "<details>" in page and page.index("What does loss.backward() free?") < page.index("<details>")
    before, folded = page.split("<details>")
    assert "✓ (the answer)" in folded and "(the answer)" not in before
    assert "Right: the buffers" in folded and "Right: the buffers" not in before
    assert bundle["text/plain"].splitlines() == [
        "What does loss.backward() free?",
        *(f"  {c}) {o}" for c, o in zip("ab", w.buttons)),
    ]


@pytest.mark.parametrize("key", list(QUESTIONS))
def test_course_question_text_does_not_reveal_the_answer(key: str) -> None:
    q = QUESTIONS[key]
    bundle = quiz(key)._repr_mimebundle_()
    plain = bundle["text/plain"]
    assert q.question in plain and all(option in plain for option in q.options)
    assert "answer" not in plain.lower().replace(q.question.lower(), "")
    assert not any(why in plain for why in q.options.values())
    before, folded = bundle["text/html"].split("<details>")
    assert "(the answer)" not in before and f"{html.escape(q.answer)}</b> ✓ (the answer)" in folded
