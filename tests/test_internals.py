"""Canaries: every private torch API gradlab uses still works on the installed torch.

``gradlab.internals`` is the only module that touches them. When a torch release
renames one, the matching test here fails (and gradlab warns once at run time,
naming what it can no longer tell, instead of reporting something wrong).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from conftest import needs_input_metadata, needs_raw_saved

import gradlab
from gradlab import internals, notices

pytestmark = pytest.mark.library


@pytest.mark.parametrize(
    "access",
    [
        pytest.param(a, marks={"raw_saved": needs_raw_saved, "input_metadata": needs_input_metadata}.get(a, ()))
        for a in sorted(internals.check_all())
    ],
)
def test_private_access_works(access: str) -> None:
    assert internals.check_all()[access], f"internals.{access} no longer works on torch {torch.__version__}"


def test_version_counts_in_place_writes_shared_by_views() -> None:
    x = torch.zeros(3)
    v = x[:2]
    assert internals.version(x) == internals.version(v) == 0
    v.add_(1)
    assert internals.version(x) == 1


@needs_raw_saved
def test_raw_saved_reads_a_stale_tensor_without_the_check() -> None:
    b = torch.ones(4, 4)
    w = torch.ones(2, 4, requires_grad=True)
    y = (w * b[:2]).sum()
    fn = y.grad_fn.next_functions[0][0]
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fn._saved_other  # noqa: B018 - the accessor refuses the stale tensor
    (raw,) = internals.raw_saved(fn, "_saved_other")
    assert raw is not None and raw.data_ptr() == b.data_ptr() and internals.version(raw) == 1


def test_current_node_inside_and_outside_backward() -> None:
    seen = []

    def unpack(t: torch.Tensor) -> torch.Tensor:
        node = internals.current_node()
        seen.append(node.name() if node is not None else None)
        return t

    x = torch.ones(2, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        y = x.exp().sum()
    assert internals.current_node() is None
    y.grad_fn.next_functions[0][0]._saved_result  # noqa: B018 - an unpack outside the engine
    y.backward()
    assert seen == [None, "ExpBackward0"]


def test_a_missing_feature_warns_once_and_degrades(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch._C, "_current_autograd_node")
    monkeypatch.setattr(notices, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert internals.current_node() is None
        assert internals.current_node() is None
    messages = [str(w.message) for w in caught if issubclass(w.category, gradlab.GradlabWarning)]
    assert len(messages) == 1
    assert "torch._C._current_autograd_node()" in messages[0] and "which backward freed a node" in messages[0]


def test_in_place_functions_of_torch_nn_are_listed() -> None:
    names = {name for _, name in internals.nn_functions()}
    assert {"leaky_relu_", "elu_", "hardtanh_"} <= names
