"""Scripts a rule was not written for, each near one (found by a review of this stop's rules): the rule must not
print a fix that does not run, or call a fix machine-applicable when it changes what trains.

Each script in tests/scripts/negatives/ fails under track() (real torch); the assertion says what its note must not
do, and the comment which guard keeps it so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_causes import _run

import gradlab

pytestmark = pytest.mark.library

NEGATIVES = Path(__file__).parent / "scripts" / "negatives"


def _fixes(script: str) -> tuple[gradlab.Fix, ...]:
    path = NEGATIVES / f"{script}.py"
    error, _ = _run(path.read_text(), str(path))
    assert error is not None, f"{script} should fail"
    return gradlab.last_diagnosis(error).fixes


def test_an_energy_differentiated_at_each_sampler_step_gets_no_retained_product() -> None:
    # NOTE [Products through one graph]: the same gradient each time (no vector of its own), and the sampler moves
    # x in place: retain_graph=True there would fail on the write (_another_vector)
    assert not any(
        "retain_graph=True" in e.text for f in _fixes("sampler_energy_differentiated_each_step") for e in f.edits
    )


def test_a_derivative_only_printed_is_not_given_create_graph() -> None:
    # NOTE [A derivative the loss is computed from]: the saliency map is printed, not returned or fitted
    fixes = _fixes("saliency_printed_then_loss")
    assert fixes and not any("create_graph=True" in e.text for f in fixes for e in f.edits), fixes[0].lines()
    assert any("retain_graph=True" in e.text for e in fixes[0].edits), fixes[0].lines()


def test_a_detach_a_backwarded_loss_reads_is_not_dropped_as_machine_applicable() -> None:
    # NOTE [An input cut off by a detach]: the backbone's features feed the loss this function backwards too
    dropped = [
        fix
        for fix in _fixes("penalty_on_frozen_backbone_features")
        if any(e.text.strip().startswith("feats = self.model.backbone(x)  #") for e in fix.edits)
    ]
    assert dropped, "the detach should still be offered, as a fix that changes what trains"
    for fix in dropped:
        assert fix.applicability != "machine-applicable", fix.lines()
        assert "stays as it is" not in str(fix.trains), fix.lines()


def test_a_switch_in_place_of_eval_says_which_layers_act_in_training_mode_again() -> None:
    # NOTE [A model whose eval branch cuts]: the bottleneck's own dropout and batch norm come back with its switch
    fix = _fixes("bottleneck_with_dropout_put_in_eval")[0]
    assert [e.text for e in fix.edits] == ["bottleneck.track_usage = False"], fix.lines()
    assert fix.applicability == "maybe-incorrect" and "Dropout" in str(fix.trains), fix.lines()


def test_a_score_function_estimator_is_not_reparameterised() -> None:
    # NOTE [A sample drawn without its reparameterisation]: act() takes the draw's log_prob (REINFORCE)
    assert not any(".rsample(" in e.text for f in _fixes("score_function_draws_sampled") for e in f.edits)


def test_a_model_passed_to_a_constructor_is_not_kept_on_self() -> None:
    # NOTE [A tensor built once in a constructor]: self.encoder = encoder would register the encoder in the head
    assert not any(
        "self.encoder = encoder" in e.text for f in _fixes("head_built_from_encoder_argument") for e in f.edits
    )


def test_a_state_named_self_gets_words_not_self_detach() -> None:
    """The carried state read in a method's frame is on one of self's attributes: never "self.detach()"."""
    from gradlab.causes.carried_state import carried_fixes
    from gradlab.context import Context

    fixes = carried_fixes(Context(loss="loss", carried="self", carried_kind="tensor"))
    assert fixes, "the carried state's sentence"
    assert all("self.detach()" not in str(p.fix.summary) for p in fixes), [str(p.fix.summary) for p in fixes]


# The review of the second stop of 2026-12-06 (batches y and z's rules), each script a near miss of one rule.


def test_a_recurrent_state_reset_at_the_step_is_not_reset_after_every_chunk() -> None:
    # NOTE [A reset only at the step]: the LSTM's (h, c) is a tuple each chunk replaces, not a bank forwards add to
    fixes = _fixes("stateful_lm_reset_with_the_step")
    assert not any("lm.reset_state()" in e.text for f in fixes for e in f.edits), fixes[0].lines()


@pytest.mark.parametrize("script", ["memory_reset_in_a_one_line_if", "memory_reset_after_semicolons"])
def test_a_reset_sharing_its_line_is_not_moved_with_the_line(script: str) -> None:
    # NOTE [A reset only at the step]: each call alone on its line, below the if's own line
    for f in _fixes(script):
        assert "if (" not in str(f.summary) and "opt.step() after every backward" not in str(f.summary), f.lines()
        assert not any(e.text.strip().startswith(("if ", "opt.step()")) for e in f.edits), f.lines()


@pytest.mark.parametrize("script", ["power_iteration_helper_writes_its_arguments", "max_norm_renorm_out_weight"])
def test_an_out_write_into_an_argument_or_a_weight_is_not_rebound(script: str) -> None:
    # NOTE [A write through out=]: a helper's argument is how it updates its caller's buffer; a module's weight
    # cannot be replaced by a plain tensor
    assert not any("drop out=" in str(f.summary) for f in _fixes(script))


def test_topk_values_through_numpy_are_values() -> None:
    # NOTE [numpy values that feed the loss]: topk's values feed the loss, so no .detach() first
    first = _fixes("topk_values_through_numpy")[0]
    assert ".detach() before .numpy()" not in str(first.summary), first.lines()


def test_positions_that_gather_values_are_no_cut() -> None:
    # NOTE [Positions on the loss's path]: Double DQN's argmax picks the target network's values with gather
    assert not any("soft-argmax" in str(f.summary) for f in _fixes("double_dqn_online_frozen"))


@pytest.mark.parametrize(
    "script, how",
    [("vae_sum_beside_mean_metrics", "sum"), ("masked_mean_written_out", "mean")],
)
def test_the_reduction_read_from_training_not_from_metrics(script: str, how: str) -> None:
    # non_scalar._reduction_read: losses in a no_grad helper say nothing; (l * mask).sum() / mask.sum() is a mean
    first = _fixes(script)[0]
    assert f"with the {how} your code uses" in str(first.summary), first.lines()


def test_the_cache_asked_for_over_two_lines_is_the_one_changed() -> None:
    # NOTE [A transform's cache kept across iterations]: the keyword's line of the caching transform's call, not the
    # reference distribution's ExpTransform(cache_size=1)
    first = _fixes("affine_cache_over_two_lines")[0]
    assert first.edits and all("ExpTransform" not in e.text for e in first.edits), first.lines()
    assert any("AffineTransform" in e.text and "cache_size=0" in e.text for e in first.edits), first.lines()


def test_a_model_differentiated_in_a_helper_file_is_not_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    # NOTE [A feature extractor left trainable]: the helper in another file takes autograd.grad of its parameters
    monkeypatch.syspath_prepend(str(NEGATIVES / "matching"))
    path = NEGATIVES / "matching" / "condense_with_helper.py"
    error, _ = _run(path.read_text(), str(path))
    assert error is not None
    fixes = gradlab.last_diagnosis(error).fixes
    assert not any("requires_grad_(False)" in e.text for f in fixes for e in f.edits), fixes[0].lines()


def test_a_loss_bound_anew_then_added_to_is_no_carried_state() -> None:
    # carried_state's reading of the saving line (_bound_before): `fit = fit + penalty` right after `fit = crit(...)`
    # carries nothing over; detaching `fit` there would drop the fit term from the loss
    fixes = _fixes("penalty_added_to_fresh_loss_profiles_kept")
    assert fixes and not any("fit.detach()" in e.text for f in fixes for e in f.edits), fixes[0].lines()


def test_a_numpy_array_among_the_frames_names_does_not_cost_the_diagnosis() -> None:
    # carried_state._read_after_store looks the object up by name: a membership test against the frame's values
    # compared a numpy array with it and raised "the truth value of an array is ambiguous" (the note was lost)
    fixes = _fixes("centres_beside_a_numpy_table")
    assert fixes and fixes[0].edits and "tracker.centres.detach()" in fixes[0].edits[0].text, fixes[0].lines()


def test_a_history_read_back_by_position_is_not_cleared() -> None:
    # NOTE [A history read back by position]: states[-1] makes the next state; a states.clear() after the backward
    # would make that read fail
    fixes = _fixes("history_read_back_by_position")
    assert fixes and not any("states.clear()" in e.text for f in fixes for e in f.edits), fixes[0].lines()


def test_a_callback_with_its_own_optimizer_keeps_its_step() -> None:
    # NOTE [A step repeated with the second backward]: the callback's optimizer never stepped between the two
    # backward calls, so its step is no repeat: the backward goes, the step stays (NOTE [A zero_grad() right before
    # the second backward]: its zero_grad() moves after it, so the step uses the first backward's gradient)
    fix = _fixes("calibration_callback_own_optimizer")[0]
    code = "\n".join(e.text for e in fix.edits)
    assert fix.edits and "loss.backward()" not in code, fix.lines()
    assert code.count("self.optimizer.step()") == 1 and code.index("step()") < code.index("zero_grad()"), fix.lines()


def test_a_manual_step_beside_a_weight_load_is_not_read_as_copies_loaded() -> None:
    # NOTE [Copies loaded into a model]: the refused write is a hand-written step (p -= lr * p.grad); the weight
    # load in the same function (copy_ under no_grad) is no copy of adapted weights, and no functional_call is offered
    fixes = _fixes("manual_step_beside_a_weight_load")
    assert fixes and not any("functional_call" in e.text for f in fixes for e in f.edits), [f.summary for f in fixes]
