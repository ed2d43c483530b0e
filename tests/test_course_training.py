"""course.batches and course.train: the targets, their errors, and the claims notebook 05 makes with them."""

from __future__ import annotations

import doctest

import pytest
import torch

import gradlab.course.networks
import gradlab.course.training
from gradlab import course
from gradlab.i18n import width

pytestmark = pytest.mark.course

HINT_WORDS = ("pass", "must")


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _equal(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(p, q) for p, q in zip(a, b))


# ------------------------------------------------------------------ batches(target=)


def test_default_target_is_2x_bitwise() -> None:
    data = course.batches(4, seed=3, size=7)
    g = torch.Generator().manual_seed(3)
    for x, y in data:
        expected = torch.randn(7, 1, generator=g)
        assert torch.equal(x, expected)
        assert torch.equal(y, 2 * expected)
    assert all(torch.equal(y, y2) for (_, y), (_, y2) in zip(data, course.batches(4, 3, 7, target="2x")))


@pytest.mark.parametrize("target", ["2|x|", lambda x: torch.sin(2 * x)])
def test_target_changes_y_not_x(target: object) -> None:
    plain = course.batches(3, seed=1)
    other = course.batches(3, seed=1, target=target)  # type: ignore[arg-type]
    f = course.networks.TARGETS[target] if isinstance(target, str) else target
    for (x, _), (x2, y2) in zip(plain, other):
        assert torch.equal(x, x2)
        assert torch.equal(y2, f(x))  # type: ignore[operator]


def test_named_targets() -> None:
    x = torch.tensor([[-1.5], [0.0], [2.0]])
    assert torch.equal(course.networks.TARGETS["2x"](x), torch.tensor([[-3.0], [0.0], [4.0]]))
    assert torch.equal(course.networks.TARGETS["2|x|"](x), torch.tensor([[3.0], [0.0], [4.0]]))


@pytest.mark.parametrize(
    "target, error",
    [
        ("sin", ValueError),
        ("", ValueError),
        (3, TypeError),
        (None, TypeError),
        (torch.ones(3), TypeError),
        (lambda x: 2.0, TypeError),
        (lambda x: x.sum(), ValueError),
        (lambda x: x.flatten(), ValueError),
        (lambda x: (2 * x).long(), ValueError),
        (lambda: 2.0, TypeError),
        (torch.nn.Linear(2, 2), ValueError),
    ],
    ids=[
        "unknown name",
        "empty name",
        "int",
        "None",
        "tensor",
        "returns float",
        "scalar",
        "flat",
        "integer",
        "no argument",
        "raises inside",
    ],
)
def test_bad_targets_are_documented_errors(target: object, error: type[Exception]) -> None:
    for call in (
        lambda: course.batches(2, target=target),  # type: ignore[arg-type]
        lambda: course.train("detach_input", steps=2, target=target),  # type: ignore[arg-type]
    ):
        with pytest.raises(error) as caught:
            call()
        message = str(caught.value)
        assert "target" in message and any(w in message for w in HINT_WORDS), message


# ------------------------------------------------------------------ train(target=)


@pytest.mark.parametrize("order", sorted(course.ORDERS))
@pytest.mark.parametrize("softmax", [True, False])
def test_train_default_target_is_unchanged(order: str, softmax: bool) -> None:
    default = course.train(order, steps=5, softmax=softmax, lr=3e-2)
    explicit = course.train(order, steps=5, softmax=softmax, lr=3e-2, target="2x")
    assert (default.losses_1, default.losses_2, default.error) == (explicit.losses_1, explicit.losses_2, explicit.error)
    assert default.pair is not None and explicit.pair is not None
    assert _equal(_params(default.pair.n_1), _params(explicit.pair.n_1))
    assert _equal(_params(default.pair.n_2), _params(explicit.pair.n_2))


def test_train_with_a_target_is_the_loop_on_those_batches() -> None:
    result = course.train("detach_input", steps=20, softmax=False, lr=3e-2, target="2|x|")
    pair = course.make_pair(0, softmax=False, lr=3e-2)
    losses_2 = []
    for x, y in course.batches(20, target="2|x|"):
        pred_1 = pair.n_1(x)
        pair.opt_1.zero_grad()
        pair.criterion(y, pred_1).backward()
        pair.opt_1.step()
        pred_2 = pair.n_2(pred_1.detach())
        pair.opt_2.zero_grad()
        loss_2 = pair.criterion(y, pred_2)
        loss_2.backward()
        pair.opt_2.step()
        losses_2.append(loss_2.item())
    assert result.losses_2 == losses_2
    assert result.pair is not None and _equal(_params(result.pair.n_2), _params(pair.n_2))


# ------------------------------------------------------------------ what notebook 05 shows


@pytest.mark.parametrize("target", ["2x", "2|x|"])
def test_detach_inside_trains_network_1_as_fix_a(target: str) -> None:
    inside = course.train("detach_inside", steps=30, softmax=False, lr=3e-2, target=target)
    fix_a = course.train("detach_input", steps=30, softmax=False, lr=3e-2, target=target)
    assert inside.pair is not None and fix_a.pair is not None
    assert inside.losses_1 == fix_a.losses_1
    assert _equal(_params(inside.pair.n_1), _params(fix_a.pair.n_1))
    start = course.make_pair(0, softmax=False, detach_inside=True)
    assert _equal(_params(inside.pair.n_2.linear_1), _params(start.n_2.linear_1))
    assert not _equal(_params(inside.pair.n_2.linear_2), _params(start.n_2.linear_2))


def test_frozen_first_layer_is_measurable_on_the_v() -> None:
    """Network 2 alone on y = 2|x|: with its first layer frozen it stays far above (notebook 05)."""
    final = {}
    for detach in (True, False):
        pair = course.make_pair(seed=0, softmax=False, detach_inside=detach, lr=3e-2)
        losses = []
        for x, y in course.batches(300, target="2|x|"):
            pair.opt_2.zero_grad()
            loss = pair.criterion(y, pair.n_2(x))
            loss.backward()
            pair.opt_2.step()
            losses.append(loss.item())
        final[detach] = sum(losses[-20:]) / 20
    assert final[True] > 0.02 and final[False] < 0.002
    assert final[True] > 30 * final[False]


def test_doctests() -> None:
    for module in (gradlab.course.networks, gradlab.course.training):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


# -- run_iterations, compare_parameters, Pair.snapshot: how notebook 06 runs and compares its forms ----------------


def _fix_a(n_1, n_2, opt_1, opt_2, criterion, x, y):
    pred_1 = n_1(x)
    opt_1.zero_grad()
    criterion(y, pred_1).backward()
    opt_1.step()
    opt_2.zero_grad()
    criterion(y, n_2(pred_1.detach())).backward()
    opt_2.step()


def _original(n_1, n_2, opt_1, opt_2, criterion, x, y):
    pred_1 = n_1(x)
    opt_1.zero_grad()
    criterion(y, pred_1).backward()
    opt_1.step()
    opt_2.zero_grad()
    criterion(y, n_2(pred_1)).backward()
    opt_2.step()


def test_run_iterations_is_train_for_the_same_loop_bitwise() -> None:
    by_hand = course.run_iterations(_fix_a, steps=20, softmax=False, lr=3e-2).snapshot()
    by_order = course.train("detach_input", steps=20, softmax=False, lr=3e-2).pair.snapshot()
    assert all(torch.equal(by_hand[net], by_order[net]) for net in ("n_1", "n_2"))


def test_run_iterations_lets_the_loops_own_error_through_and_rejects_what_is_not_a_loop() -> None:
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        course.run_iterations(_original, steps=1)
    with pytest.raises(TypeError, match="iteration must be a function"):
        course.run_iterations("fix_a")


def test_snapshot_is_a_copy() -> None:
    pair = course.make_pair(0)
    before = pair.snapshot()
    with torch.no_grad():
        pair.n_1.linear_1.weight.add_(1)
    assert not torch.equal(before["n_1"], pair.snapshot()["n_1"])
    assert torch.equal(before["n_2"], pair.snapshot()["n_2"])


def test_compare_parameters_pads_by_display_width_and_names_the_gap() -> None:
    zero = {"n_1": torch.zeros(3), "n_2": torch.zeros(3)}
    moved = {"n_1": torch.zeros(3), "n_2": torch.tensor([0.0, -0.5, 0.25])}
    text = course.compare_parameters({"(a) detach": zero, "(b) 联合反向传播": moved}, reference="(a) detach")
    lines = text.splitlines()
    assert lines[2].startswith("(b) 联合反向传播") and "bitwise equal" in lines[2] and "up to 0.50 apart" in lines[2]
    columns = {width(line[: line.index(cell)]) for line, cell in zip(lines, ("n_1", "bitwise", "bitwise"))}
    assert len(columns) == 1, text  # the n_1 column starts at one display column on every line
    with pytest.raises(ValueError, match="reference must be one of"):
        course.compare_parameters({"(a)": zero}, reference="(b)")
