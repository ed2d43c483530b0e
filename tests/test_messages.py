"""gradlab.messages: torch's autograd messages read in every wording, and written as the installed torch words them."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import torch

import gradlab
from gradlab import messages

pytestmark = pytest.mark.library

LEGACY = (
    "one of the variables needed for gradient computation has been modified by an inplace operation: "
    "[torch.FloatTensor [10, 1]], which is output 0 of TBackward, is at version 2; expected version 1 instead."
)


def _torch_message(build) -> str:
    with pytest.raises(RuntimeError) as info:
        build()
    return str(info.value)


def _exp_output() -> None:
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    y.mul_(2)
    y.sum().backward()


def _transposed_weight() -> None:
    lin = torch.nn.Linear(1, 10)
    out = lin(torch.ones(4, 1, requires_grad=True))
    with torch.no_grad():
        lin.weight.add_(1)
    out.sum().backward()


def _leaf() -> None:
    w = torch.ones(3, requires_grad=True)
    y = (w * w).sum()
    with torch.no_grad():
        w.add_(1)
    y.backward()


def _leaky_relu_in_place() -> None:
    x = torch.ones(3, requires_grad=True)
    y = torch.nn.functional.leaky_relu(x * 1, 0.1, inplace=True)
    y.add_(1)
    y.sum().backward()


def _copy_slices() -> None:
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    z = y.sin()  # saves its input y
    y[0] = 5  # a write through a view: y's grad_fn becomes CopySlices
    z.sum().backward()


def _activation_on_a_view(activation: Callable[[torch.Tensor], torch.Tensor]) -> None:
    # NOTE [The output of an in-place op on a view]: a Linear's 3-d output is a view; the activation writes into
    # it and saves its result inside a CopySlices node; a later write makes that result stale
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 6)
    h = activation(lin(torch.randn(2, 3, 4)))
    h.mul_(2)
    h.sum().backward()


def _relu_module_on_a_view() -> None:
    _activation_on_a_view(torch.nn.ReLU(inplace=True))


def _leaky_relu_on_a_view() -> None:
    _activation_on_a_view(torch.nn.LeakyReLU(0.2, inplace=True))


def _elu_on_a_view() -> None:
    _activation_on_a_view(torch.nn.ELU(inplace=True))


def _sigmoid_on_a_view() -> None:
    _activation_on_a_view(torch.sigmoid_)


@pytest.mark.parametrize(
    "build",
    [
        _exp_output,
        _transposed_weight,
        _leaf,
        _leaky_relu_in_place,
        _copy_slices,
        _relu_module_on_a_view,
        _leaky_relu_on_a_view,
        _elu_on_a_view,
        _sigmoid_on_a_view,
    ],
)
@pytest.mark.parametrize("anomaly", [False, True], ids=["plain", "anomaly"])
def test_message_under_track_equals_torch(build, anomaly: bool) -> None:
    """The same failure, raised by torch alone and by gradlab's re-check: byte for byte the same text."""
    with torch.autograd.set_detect_anomaly(anomaly), pytest.warns(UserWarning) if anomaly else _nothing():
        plain = _torch_message(build)
    with (
        torch.autograd.set_detect_anomaly(anomaly),
        pytest.warns(UserWarning) if anomaly else _nothing(),
        gradlab.track(),
    ):
        tracked = _torch_message(build)
    assert tracked == plain


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


@pytest.mark.parametrize(
    ("name", "printed"),
    [
        ("AsStridedBackward0", "AsStrided"),
        ("LeakyReluBackward1", "LeakyRelu1"),
        ("PowBackward2", "Pow2"),
        ("SaveOutputBackward", "SaveOutput"),
        ("MyBackwardHelperBackward", "MyBackwardHelper"),
        ("FooBackward0BarBackward", "FooBackward0Bar"),
        ("SumBackwardAutogradNestedTensor1", "SumBackwardAutogradNestedTensor1"),
        ("torch::autograd::CopySlices", "torch::autograd::CopySlices"),
    ],
)
def test_node_names_are_shortened_as_torch_2_13_does(name: str, printed: str) -> None:
    """torch 2.13+ only touches a trailing Backward<digits> (measured on 2.13, 2.14.1, 2.15.0)."""
    assert messages.Wording("", "", "Backward<N>").node_name(name) == printed
    assert messages.Wording("", "", "").node_name(name) == name  # 2.4 to 2.12 print name() as it is


def test_wording_is_read_from_torch_not_copied() -> None:
    w = messages.wording(False)
    assert "{type}" in w.main and "{which}" in w.main
    # The template reproduces exactly what torch just raised for a fresh case.
    text = _torch_message(_leaf)
    m = messages.find(text)
    assert m is not None and m.shape == (3,)
    assert messages.stale_message("torch.FloatTensor", (3,), None, 0, m.current_version, m.expected_version) == text


def test_wording_probe_runs_in_its_own_thread_even_under_hooks() -> None:
    messages.wording.cache_clear()
    seen = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        seen.append(messages.wording(False))
    assert seen[0].main.startswith("one of the variables needed")
    assert threading.active_count() >= 1


@pytest.mark.parametrize(
    ("text", "kind", "node", "shape"),
    [
        (LEGACY, "modified_in_place", "TBackward", (10, 1)),
        (LEGACY.replace("TBackward", "AsStridedBackward0"), "modified_in_place", "AsStridedBackward0", (10, 1)),
        (
            "\x1b[31mRuntimeError\x1b[0m: Trying to backward through the graph a second time (or directly access "
            "saved tensors after they have already been freed).",
            "graph_freed",
            None,
            None,
        ),
        ("element 0 of tensors does not require grad and does not have a grad_fn", "no_grad_fn", None, None),
        ("a leaf Variable that requires grad is being used in an in-place operation.", "leaf_in_place", None, None),
    ],
)
def test_find_reads_every_wording(text: str, kind: str, node: str | None, shape: tuple[int, ...] | None) -> None:
    m = messages.find(text)
    assert m is not None and m.kind == kind and m.node == node and m.shape == shape


def test_find_reads_the_cause_of_a_chained_exception() -> None:
    try:
        try:
            _leaf()
        except RuntimeError as inner:
            raise ValueError("wrapped") from inner
    except ValueError as outer:
        m = messages.find(outer)
    assert m is not None and m.kind == "modified_in_place"
    assert messages.find("nothing to see") is None


def test_is_autograd_error_only_for_the_two_errors() -> None:
    assert messages.is_autograd_error(RuntimeError(LEGACY))
    assert messages.is_autograd_error(RuntimeError(messages.FREED_HEAD + "."))
    assert not messages.is_autograd_error(ValueError(LEGACY))
    assert not messages.is_autograd_error(
        RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    )
