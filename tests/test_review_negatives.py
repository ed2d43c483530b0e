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
