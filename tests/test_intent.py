"""gradlab.check_intent and UnusedStepWarning: the silent failures, found without touching training."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

import gradlab
from gradlab import course

pytestmark = pytest.mark.library


def _loop_losses(pair: course.Pair, x: torch.Tensor, y: torch.Tensor, detach_at_entry: bool):
    pred_1 = pair.n_1(x)
    pred_2 = pair.n_2(pred_1.detach() if detach_at_entry else pred_1)
    return pair.criterion(y, pred_1), pair.criterion(y, pred_2)


def test_detach_inside_network_2_cuts_off_its_first_layer() -> None:
    pair = course.make_pair(0, softmax=False, detach_inside=True)
    x, y = course.batches(1)[0]
    loss_1, loss_2 = _loop_losses(pair, x, y, detach_at_entry=True)
    report = gradlab.check_intent({"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")}, names=pair.names)
    assert [m.kind for m in report.mismatches] == ["unreachable"]
    (m,) = report.mismatches
    assert m.loss == "loss_2" and m.parameters == ("n_2.linear_1.weight", "n_2.linear_1.bias")
    assert "cannot reach n_2.linear_1.weight, n_2.linear_1.bias" in str(report)


def test_softmax_over_size_one_gives_exactly_zero_gradients() -> None:
    pair = course.make_pair(0, softmax=True)
    x, y = course.batches(1)[0]
    loss_1, loss_2 = _loop_losses(pair, x, y, detach_at_entry=True)
    report = gradlab.check_intent({"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")}, names=pair.names)
    assert [(m.kind, m.loss) for m in report.mismatches] == [("zero", "loss_1"), ("zero", "loss_2")]
    assert report.mismatches[0].parameters == tuple(f"n_1.linear_{i}.{p}" for i in (1, 2) for p in ("weight", "bias"))
    assert "softmax over a dimension of size 1" in str(report)


def test_corrected_course_loops_have_no_report() -> None:
    for softmax in (False,):
        pair = course.make_pair(0, softmax=softmax)
        x, y = course.batches(1)[0]
        loss_1, loss_2 = _loop_losses(pair, x, y, detach_at_entry=True)  # fix (a)
        assert gradlab.check_intent({"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")}, names=pair.names).ok
        loss_1, loss_2 = _loop_losses(pair, x, y, detach_at_entry=False)  # fix (b): loss_2 trains both
        intent = {"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, ["n_1", "n_2"])}
        assert gradlab.check_intent(intent, names=pair.names, backward=loss_1 + loss_2).ok


def test_loss_2_reaching_n_1_is_reported_when_it_should_train_n_2_only() -> None:
    pair = course.make_pair(0, softmax=False)
    x, y = course.batches(1)[0]
    loss_1, loss_2 = _loop_losses(pair, x, y, detach_at_entry=False)
    report = gradlab.check_intent({"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")}, names=pair.names)
    (m,) = report.mismatches
    assert (m.kind, m.loss) == ("unwanted", "loss_2") and m.parameters[0] == "n_1.linear_1.weight"
    assert "declared for loss_1 only" in m.sentence


def _gan():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    return G, D, nn.BCEWithLogitsLoss(), torch.randn(16, 4), torch.randn(16, 2)


def test_the_sum_fix_in_a_gan_runs_but_the_intent_check_reports_it() -> None:
    G, D, bce, z, real = _gan()
    fake = G(z)
    out_fake = D(fake)
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(out_fake, torch.zeros(16, 1))
    g_loss = bce(out_fake, torch.ones(16, 1))
    total = d_loss + g_loss
    assert gradlab.check(total, names={"G": G, "D": D}).ok  # the sum fix runs: check() has nothing to say
    report = gradlab.check_intent(
        {"d_loss": (d_loss, "D"), "g_loss": (g_loss, "G")}, names={"G": G, "D": D}, backward=total
    )
    kinds = {(m.kind, m.loss) for m in report.mismatches}
    assert ("unwanted", "d_loss") in kinds  # d_loss pushes G (it should only train D)
    assert ("mixed", "g_loss") in kinds  # one backward adds g_loss's push into D's gradient
    unwanted = next(m for m in report.mismatches if m.kind == "unwanted")
    assert set(unwanted.parameters) == {f"G.{n}" for n, _ in G.named_parameters()}


def test_the_corrected_gan_loop_has_no_report() -> None:
    G, D, bce, z, real = _gan()
    fake = G(z)
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    g_loss = bce(D(fake), torch.ones(16, 1))  # g_loss trains G through D: D's gradient from it is discarded
    report = gradlab.check_intent({"d_loss": (d_loss, "D"), "g_loss": (g_loss, "G")}, names={"G": G, "D": D})
    assert report.ok, str(report)


def test_check_intent_changes_nothing() -> None:
    pair = course.make_pair(0, softmax=False)
    x, y = course.batches(1)[0]
    loss_1, loss_2 = _loop_losses(pair, x, y, detach_at_entry=False)
    before = copy.deepcopy(pair.n_1.state_dict()), copy.deepcopy(pair.opt_1.state_dict())
    with gradlab.track(names=pair.names) as tracker:
        gradlab.check_intent({"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")}, names=pair.names)
    assert all(p.grad is None for p in [*pair.n_1.parameters(), *pair.n_2.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(before[0].values(), pair.n_1.state_dict().values()))
    assert pair.opt_1.state_dict() == before[1]
    assert [e for e in tracker.events if e.kind == "backward"] == []  # its own gradients are not the user's backward
    (loss_1 + loss_2).backward()  # the graph is still usable


@pytest.mark.parametrize(
    ("intent", "error"),
    [
        ({}, TypeError),
        ({"l": "not a pair"}, TypeError),
        ({"l": (None, "n_1")}, TypeError),
        ({"l": ("loss", "nope")}, TypeError),
    ],
)
def test_bad_input_says_what_to_pass(intent: dict, error: type[Exception]) -> None:
    pair = course.make_pair(0)
    with pytest.raises(error, match="pass|must|needs|names|takes"):
        gradlab.check_intent(intent, names=pair.names)


def test_unknown_names_are_reported_with_the_choices() -> None:
    pair = course.make_pair(0)
    x, y = course.batches(1)[0]
    loss_1, _ = _loop_losses(pair, x, y, detach_at_entry=True)
    report = gradlab.check_intent({"loss_1": (loss_1, "n_3")}, names=pair.names)
    m = next(m for m in report.mismatches if m.kind == "unknown_name")
    assert m.parameters == ("n_3",) and not report.ok
    assert "'n_3'" in m.sentence and "choose from n_1, n_2" in m.sentence


def test_a_frozen_backbone_is_reported_not_raised() -> None:
    torch.manual_seed(0)
    backbone, head = torch.nn.Linear(3, 4), torch.nn.Linear(4, 1)
    backbone.requires_grad_(False)
    loss = head(backbone(torch.randn(5, 3))).pow(2).mean()
    report = gradlab.check_intent({"loss": (loss, ["backbone", "head"])}, names={"backbone": backbone, "head": head})
    assert [m.kind for m in report.mismatches] == ["frozen"]
    assert report.mismatches[0].parameters == ("backbone.bias", "backbone.weight")
    assert "requires_grad=False" in report.mismatches[0].sentence


def test_a_loss_rebuilt_from_item_is_reported_as_having_no_graph() -> None:
    net = torch.nn.Linear(3, 1)
    loss = torch.tensor(net(torch.randn(4, 3)).pow(2).mean().item())
    report = gradlab.check_intent({"loss": (loss, "net")}, names={"net": net})
    assert [m.kind for m in report.mismatches] == ["no_graph"] and ".item()" in report.mismatches[0].sentence


def test_a_bias_cancelled_by_the_loss_form_is_a_note_not_a_mismatch() -> None:
    torch.manual_seed(0)
    critic = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    real, fake = torch.randn(16, 2), torch.randn(16, 2)
    loss = critic(fake).mean() - critic(real).mean()  # WGAN critic loss: the last bias cancels
    report = gradlab.check_intent({"loss": (loss, "critic")}, names={"critic": critic})
    assert report.ok, str(report)
    assert len(report.notes) == 1 and "critic.2.bias" in report.notes[0] and "by its form" in report.notes[0]
    # real torch agrees: that bias's gradient is exactly zero, the weight's is not
    g_w, g_b = torch.autograd.grad(loss, [critic[2].weight, critic[2].bias])
    assert bool(g_b.eq(0).all()) and bool(g_w.ne(0).any())


# -- UnusedStepWarning: the silent failures in a running loop ----------------------------------------


def _train(pair: course.Pair, steps: int = 3, warn: bool = True) -> gradlab.Tracker:
    with gradlab.track(names=pair.names, warn=warn) as tracker:
        for x, y in course.batches(steps):
            pred_1 = pair.n_1(x)
            pair.opt_1.zero_grad()
            loss_1 = pair.criterion(y, pred_1)
            loss_1.backward()
            pair.opt_1.step()
            pred_2 = pair.n_2(pred_1.detach())
            pair.opt_2.zero_grad()
            loss_2 = pair.criterion(y, pred_2)
            loss_2.backward()
            pair.opt_2.step()
    return tracker


def test_a_step_without_gradient_is_noted_once_per_parameter() -> None:
    pair = course.make_pair(0, softmax=False, detach_inside=True)
    with pytest.warns(gradlab.UnusedStepWarning) as caught:
        tracker = _train(pair)
    texts = [str(w.message) for w in caught]
    assert len(texts) == 1
    assert "n_2.linear_1.weight, n_2.linear_1.bias had no gradient (.grad is None)" in texts[0]
    assert texts[0].startswith("Adam.step() at tests/test_intent.py:")
    assert caught[0].filename.endswith("test_intent.py")  # points at the user's line
    assert tracker.notes == texts


def test_a_step_with_all_zero_gradients_is_noted() -> None:
    pair = course.make_pair(0, softmax=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker = _train(pair, warn=False)
    assert not [w for w in caught if issubclass(w.category, gradlab.UnusedStepWarning)]  # warn=False
    assert len(tracker.notes) == 2
    assert all("had an all-zero gradient, so this step's gradient cannot train them" in n for n in tracker.notes)


def test_the_corrected_loop_is_never_noted() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        tracker = _train(course.make_pair(0, softmax=False), steps=5)
    assert tracker.notes == []


# -- silent failures a running loop shows: held by no optimizer, left the model, cancelled by form ----------


def _loop(model: nn.Module, opt: torch.optim.Optimizer, steps: int, loss_of: Any) -> gradlab.Tracker:
    torch.manual_seed(0)
    with gradlab.track(names={"model": model}) as tracker:
        for _ in range(steps):
            loss = loss_of(model, torch.randn(16, 4))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return tracker


def test_a_layer_unfrozen_after_the_optimizer_was_built_is_noted_and_truly_does_not_learn() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    model[0].requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model[0].requires_grad_(True)  # unfrozen, never added to the optimizer
    before = model[0].weight.detach().clone()
    with pytest.warns(gradlab.UnusedStepWarning, match="no optimizer holds them") as caught:
        tracker = _loop(model, opt, 8, lambda m, x: m(x).pow(2).mean())
    held = [n for n in tracker.notes if "no optimizer holds them" in n]
    assert len(held) == 1 and "model.0.weight, model.0.bias get a gradient" in held[0]
    assert caught[0].filename.endswith("test_intent.py")
    # real torch agrees: the layer has a gradient, and no step moved it
    assert model[0].weight.grad is not None and bool(model[0].weight.grad.ne(0).any())
    assert torch.equal(model[0].weight, before)


def test_a_layer_replaced_after_the_optimizer_was_built_is_noted_on_both_sides() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = nn.Linear(8, 1)  # a new head; the optimizer still holds the old one
    new_head = model[2].weight.detach().clone()
    with pytest.warns(gradlab.UnusedStepWarning):
        tracker = _loop(model, opt, 8, lambda m, x: m(x).pow(2).mean())
    left = [n for n in tracker.notes if "are in none of your models" in n]
    assert len(left) == 1 and "2 of its parameters ([1, 8], [1])" in left[0]
    assert not [n for n in tracker.notes if "had no gradient" in n]  # said once, as what it is
    assert any("model.2.weight, model.2.bias get a gradient, but no optimizer holds them" in n for n in tracker.notes)
    assert torch.equal(model[2].weight, new_head)  # real torch: the new head never learns


@pytest.mark.parametrize("normed", [False, True], ids=["plain", "weight-normed"])
def test_a_bias_the_loss_cancels_is_a_note_not_a_warning(normed: bool) -> None:
    # the last layer weight-normed: its weights are parametrizations.weight.original0 and original1, beside its bias
    torch.manual_seed(0)
    last = nn.Linear(8, 1)
    critic = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), weight_norm(last) if normed else last)
    opt = torch.optim.SGD(critic.parameters(), lr=0.01)
    real, fake = torch.randn(16, 4) + 1, torch.randn(16, 4)

    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track(names={"critic": critic}) as tracker:
            for _ in range(3):
                loss = critic(fake).mean() - critic(real).mean()  # a WGAN critic's loss
                opt.zero_grad()
                loss.backward()
                opt.step()
    assert len(tracker.notes) == 1 and "critic.2.bias had an all-zero gradient while the rest" in tracker.notes[0]
    assert critic[2].bias.grad is not None and bool(critic[2].bias.grad.eq(0).all())  # real torch agrees


def test_a_cancelled_bias_is_a_note_without_names_too() -> None:
    # a pairwise ranker: score(good) - score(bad) cancels the last layer's bias; the model is a local no name reaches
    torch.manual_seed(0)
    score = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(score.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track() as tracker:
            for _ in range(3):
                good, bad = torch.randn(16, 4) + 0.5, torch.randn(16, 4)
                loss = torch.relu(1.0 - score(good) + score(bad)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    assert len(tracker.notes) == 1 and "parameter [1] had an all-zero gradient while the rest" in tracker.notes[0]
    assert score[2].bias.grad is not None and bool(score[2].bias.grad.eq(0).all())  # real torch agrees
    assert bool(score[2].weight.grad.ne(0).any())


def test_a_layer_behind_a_zero_initialised_one_is_not_noted_for_its_first_step() -> None:
    # LoRA's B starts at zero, so A's gradient is all-zero at the first step and not after (NOTE [Zero once])
    torch.manual_seed(0)
    base = nn.Linear(6, 6).requires_grad_(False)
    lora_a, lora_b = nn.Linear(6, 2, bias=False), nn.Linear(2, 6, bias=False)
    nn.init.zeros_(lora_b.weight)
    opt = torch.optim.Adam([*lora_a.parameters(), *lora_b.parameters()], lr=1e-2)
    a_grads = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track(names={"lora_a": lora_a, "lora_b": lora_b}) as tracker:
            for _ in range(4):
                x = torch.randn(8, 6)
                loss = (base(x) + lora_b(lora_a(x))).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                a_grads.append(lora_a.weight.grad.clone())
                opt.step()
    assert tracker.notes == []
    assert bool(a_grads[0].eq(0).all()) and all(bool(g.ne(0).any()) for g in a_grads[1:])  # real torch agrees


def test_a_bias_the_loss_never_reads_is_a_note_not_a_warning() -> None:
    # forces from an energy: the loss is made of d(energy)/dx, which never reads the energy's last bias
    torch.manual_seed(0)
    energy = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.Adam(energy.parameters(), lr=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track(names={"energy": energy}) as tracker:
            for _ in range(3):
                x = torch.randn(32, 2, requires_grad=True)
                (force,) = torch.autograd.grad(energy(x).sum(), x, create_graph=True)
                loss = (force + x.detach()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    assert len(tracker.notes) == 1 and "energy.2.bias had no gradient while the rest of their layer" in tracker.notes[0]
    assert energy[2].bias.grad is None and bool(energy[2].weight.grad.ne(0).any())  # real torch agrees


def test_a_layer_fed_zeros_is_a_note_not_a_warning() -> None:
    # self-conditioning switched off: the previous estimate is replaced by zeros, so the layer reading it gets an
    # all-zero weight gradient while its bias, and the rest of the model, learn
    torch.manual_seed(0)
    model = nn.ModuleDict({"inp": nn.Linear(6, 8), "cond": nn.Linear(6, 8), "out": nn.Linear(8, 1)})
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track(names={"model": model}) as tracker:
            for _ in range(3):
                x = torch.randn(16, 6)
                h = model["inp"](x) + model["cond"](torch.zeros_like(x))
                loss = model["out"](torch.tanh(h)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    assert (
        len(tracker.notes) == 1
        and "model.cond.weight had an all-zero gradient while their layer's bias" in (tracker.notes[0])
    )
    # real torch agrees: the weight's gradient is the output's gradient times the (zero) input; the bias learns
    assert bool(model["cond"].weight.grad.eq(0).all()) and bool(model["cond"].bias.grad.ne(0).any())


def test_an_all_zero_gradient_that_stays_is_still_noted() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.warns(gradlab.UnusedStepWarning, match="model.0.weight, model.0.bias had an all-zero gradient, so"):
        tracker = _loop(model, opt, 3, lambda m, x: m[1](m[0](x) * 0).mean() + m(x).detach().mean())
    # the second layer's input is zeros, its bias learns: a note (the layer is connected; the data is zero)
    assert any("model.1.weight had an all-zero gradient while their layer's bias" in n for n in tracker.notes)
    # real torch: the first layer's output is multiplied by zero, so only the last bias learns
    assert all(bool(p.grad.eq(0).all()) for p in (model[0].weight, model[0].bias, model[1].weight))
    assert bool(model[1].bias.grad.ne(0).any())


def test_two_optimizers_of_one_loop_hold_every_parameter_and_draw_no_note() -> None:
    torch.manual_seed(0)
    model = nn.ModuleDict({"enc": nn.Linear(4, 4), "head": nn.Linear(4, 1)})
    opt_enc = torch.optim.SGD(model["enc"].parameters(), lr=0.1)
    opt_head = torch.optim.Adam(model["head"].parameters(), lr=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.UnusedStepWarning)
        with gradlab.track(names={"model": model}) as tracker:
            for _ in range(10):
                loss = model["head"](model["enc"](torch.randn(8, 4))).pow(2).mean()
                opt_enc.zero_grad()
                opt_head.zero_grad()
                loss.backward()
                opt_enc.step()
                opt_head.step()
    assert tracker.notes == []


def test_check_intent_names_declared_parameters_no_optimizer_in_names_holds() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    model[0].requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model[0].requires_grad_(True)  # unfrozen after the optimizer was built
    loss = model(torch.randn(8, 4)).pow(2).mean()
    report = gradlab.check_intent({"loss": (loss, "model")}, names={"model": model}, optimizers=[opt])
    assert [(m.kind, m.parameters) for m in report.mismatches] == [("unheld", ("model.0.weight", "model.0.bias"))]
    assert "none of your optimizers holds them" in report.mismatches[0].sentence
    # without optimizers= nothing can be said about them; with all of them held, nothing is
    assert gradlab.check_intent({"loss": (loss, "model")}, names={"model": model}).ok
    opt.add_param_group({"params": list(model[0].parameters())})
    assert gradlab.check_intent({"loss": (loss, "model")}, names={"model": model}, optimizers=[opt]).ok
