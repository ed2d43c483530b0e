"""Every in-place op of torch is watched by a gradlab wrapper, or left out on purpose with the reason.

The list of in-place ops comes from torch itself: every ``aten`` schema whose first
argument is written (``Tensor(a!) self``) and whose name ends in ``_`` (``out=``
overloads aside). Each op's Python entry points (``torch.Tensor.<op>``,
``torch.<op>``, ``torch._VF.<op>``, ``torch._C._nn.<op>``) must be wrapped while a
tracker is active; an op with no entry point must be named in
``gradlab.writes.NOT_WRAPPED``. Then the entry points that issue #21 found unseen
(``F.dropout(inplace=True)``, ``nn.Dropout(inplace=True)``) name the write.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gradlab
from gradlab import writes

pytestmark = pytest.mark.library


def _inplace_ops() -> set[str]:
    ops = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::") or not schema.arguments:
            continue
        first = schema.arguments[0].alias_info
        name = schema.name[len("aten::") :]
        if name.endswith("_") and first is not None and first.is_write and "out" not in schema.overload_name:
            ops.add(name)
    return ops


OWNERS: list[tuple[str, Any]] = [
    ("torch.Tensor", torch.Tensor),
    ("torch", torch),
    ("torch._VF", sys.modules["torch._VF"]),
    ("torch._C._nn", torch._C._nn),
]


def _entry_points(op: str) -> list[tuple[str, Any]]:
    return [(label, owner) for label, owner in OWNERS if callable(getattr(owner, op, None))]


def _without_binding() -> set[str]:
    """The ops NOT_WRAPPED names as having no Python binding."""
    reason = writes.NOT_WRAPPED["aten ops without a Python binding"]
    named = set(re.findall(r"\w+", reason))
    return {op for op in _inplace_ops() if op in named}


def test_torch_lists_its_in_place_ops() -> None:
    ops = _inplace_ops()
    assert len(ops) > 200  # torch 2.13: 248
    assert {"add_", "mul_", "copy_", "dropout_", "relu_", "leaky_relu_", "_foreach_add_"} <= ops


def test_every_in_place_op_is_wrapped_or_left_out_with_a_reason() -> None:
    not_data = {"requires_grad_"}  # NOT_WRAPPED: its name ends in _ but it writes no data
    assert all(any(name in key.split(", ") for key in writes.NOT_WRAPPED) for name in not_data)
    with gradlab.track():
        wrapped = {(id(owner), name) for owner, name in writes.patched()}
        unwrapped: dict[str, list[str]] = {}
        for op in sorted(_inplace_ops() - not_data):
            points = _entry_points(op)
            if not points:
                unwrapped[op] = ["no Python entry point"]
                continue
            missing = [label for label, owner in points if (id(owner), op) not in wrapped]
            if missing:
                unwrapped[op] = missing
    # Only the ops NOT_WRAPPED names for having no binding are left: a new op of a new torch fails here.
    assert unwrapped == {op: ["no Python entry point"] for op in _without_binding()}
    assert _without_binding()  # the reason names real ops of this torch (else the check above is empty)


def test_not_wrapped_says_why_for_each_entry() -> None:
    assert writes.NOT_WRAPPED and all(len(reason.split()) >= 8 for reason in writes.NOT_WRAPPED.values())


def test_the_vf_wrappers_go_away_exactly() -> None:
    vf = sys.modules["torch._VF"]
    before = dict(vars(vf))
    with gradlab.track():
        assert "dropout_" in vars(vf)  # an own entry, found before VFModule.__getattr__
    assert vars(vf) == before
    assert vf.dropout_ is torch._C._VariableFunctions.dropout_


DROPOUTS = {
    "F.dropout": lambda t: F.dropout(t, 0.5, training=True, inplace=True),
    "nn.Dropout": lambda t: nn.Dropout(0.5, inplace=True)(t),
    "F.dropout1d": lambda t: F.dropout1d(t, 0.5, training=True, inplace=True),
    "F.alpha_dropout": lambda t: F.alpha_dropout(t, 0.5, training=True, inplace=True),
    "F.feature_alpha_dropout": lambda t: F.feature_alpha_dropout(t, 0.5, training=True, inplace=True),
    "F.threshold": lambda t: F.threshold(t, 0.1, 0.0, inplace=True),
}
LABELS = {
    "F.dropout": "dropout_",
    "nn.Dropout": "dropout_",
    "F.dropout1d": "feature_dropout_",
    "F.alpha_dropout": "alpha_dropout_",
    "F.feature_alpha_dropout": "feature_alpha_dropout_",
    "F.threshold": "threshold_",
}


@pytest.mark.parametrize("call", sorted(DROPOUTS))
def test_an_in_place_dropout_after_tanh_is_named_as_the_writer(call: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=True)
    with gradlab.track() as tracker:
        h = x.tanh()  # saves its output
        DROPOUTS[call](h)
        loss = h.sum()
        d = gradlab.check(loss)
        writer = d.problems[0].modified_by
        assert not d.ok and writer is not None and LABELS[call] in writer.split(", ")  # dropout1d: also (un)squeeze_
        with pytest.raises(RuntimeError, match=r"output 0 of Tanh, is at version \d+; expected version 0") as info:
            loss.backward()
    assert LABELS[call] in "".join(info.value.__notes__)
    assert "who wrote it is unknown" not in "".join(info.value.__notes__)
    assert LABELS[call] in [e.op for e in tracker.writes]
