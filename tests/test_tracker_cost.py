"""What keeps track() cheap, checked structurally (timings live in benchmarks/, never here).

Each test pins one decision of issue #17: what a save does and does not do, when
names are worked out, when saved records are indexed by storage, what the in-place
wrappers do inside an optimizer step, and what starting a tracker imports.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest
import torch

import gradlab
from gradlab import course, location, saved
from gradlab.recorder import Recorder

pytestmark = pytest.mark.library


def _step(pair: course.Pair, x: torch.Tensor, y: torch.Tensor) -> None:
    course.joint_step(pair, x, y)


def test_a_saved_parameter_is_kept_as_is_and_an_output_as_a_detached_alias() -> None:
    w = torch.randn(3, requires_grad=True)
    records: list[saved.Packed] = []

    def pack(t: torch.Tensor) -> saved.Packed:
        records.append(saved.Packed(t))
        return records[-1]

    with torch.autograd.graph.saved_tensors_hooks(pack, saved.unpack_hook):
        y = (w * 2).sigmoid()  # mul saves nothing it needs from w (a constant factor); sigmoid saves its output
        z = (w * w).sum()
    by_fn = {p.fn_name: p for p in records}
    assert by_fn["SigmoidBackward0"].tensor.grad_fn is None  # no cycle with the node that saved it
    leaf = [p for p in records if p.fn_name is None]
    assert leaf and all(p.tensor is w for p in leaf)  # no detach: a leaf cannot form that cycle
    z.backward()
    y.sum().backward()
    assert w.grad is not None


def test_names_are_worked_out_when_the_log_is_read() -> None:
    pair = course.make_pair(0, softmax=False)
    x, y = course.batches(1)[0]
    with gradlab.track(names=pair.names) as t:
        _step(pair, x, y)
        pending = t.stats()["names_pending"]  # saved events of named tensors, not named yet
        names = [e.tensor for e in t.events if e.kind == "saved"]
        assert pending == len(names) > 0
        assert t.stats()["names_pending"] == 0  # reading the log worked every name out, once
        names = set(names)
    assert "n_1.linear_2.weight (transposed view)" in names
    assert names <= {f"n_{i}.linear_{j}.weight (transposed view)" for i in (1, 2) for j in (1, 2)}


def test_names_survive_the_model_after_the_block() -> None:
    lin = torch.nn.Linear(2, 1)
    x = torch.ones(4, 2, requires_grad=True)
    with gradlab.track(names={"lin": lin}) as t:
        lin(x).sum()
    del lin
    gc.collect()
    assert [e.tensor for e in t.events if e.kind == "saved"] == ["lin.weight (transposed view)"]


def test_a_training_loop_never_indexes_its_saved_tensors_by_storage() -> None:
    pair = course.make_pair(0, softmax=False)
    data = course.batches(20)
    with gradlab.track() as t:
        for x, y in data:
            _step(pair, x, y)
            assert t.stats()["registry_records"] == 0  # the backward freed every record before the step looked
        assert t.stats()["pending"] < 1024


def test_kept_graphs_are_indexed_and_their_writes_seen() -> None:
    w = torch.zeros(2, requires_grad=True)
    with gradlab.track(names={"w": w}) as t:
        y = (w * w).sum()
        with torch.no_grad():
            w.add_(1)
        assert t.stats()["registry_records"] and not t.stats()["pending"]
        assert [e.op for e in t.writes] == ["add_", "add_"]  # w was saved twice (self and other)
    del y


def test_in_place_calls_inside_an_optimizer_step_go_straight_to_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    original = Recorder.record_inplace

    def spy(self: Recorder, fn: object, label: str, args: tuple, kwargs: dict) -> object:
        seen.append(label)
        return original(self, fn, label, args, kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Recorder, "record_inplace", spy)
    pair = course.make_pair(0, softmax=False)
    x, y = course.batches(1)[0]
    with gradlab.track():
        _step(pair, x, y)  # Adam's single-tensor path: dozens of in-place calls, all inside step()
    assert seen == []


def test_a_line_seen_before_costs_no_new_location() -> None:
    def here() -> location.Location | None:
        return location.user_location()

    assert here() is here()


def test_tracker_memory_holds_no_saved_record_after_the_block() -> None:
    pair = course.make_pair(0, softmax=False)
    x, y = course.batches(1)[0]
    with gradlab.track() as t:
        _step(pair, x, y)
        ref = weakref.ref(pair.n_1)
    assert not t.stats()["pending"] and not t.stats()["registry_records"]
    del pair
    gc.collect()
    assert ref() is None


def test_starting_a_tracker_imports_nothing_a_diagnosis_alone_needs() -> None:
    code = (
        "import sys, torch, gradlab\n"
        "from gradlab import cli\n"
        "with gradlab.track():\n"
        "    (torch.ones(2, requires_grad=True) * 2).sum().backward()\n"
        "late = [m for m in ('gradlab.diagnosis', 'gradlab.advice', 'gradlab.graph', 'gradlab.explanation',\n"
        "                    'gradlab.drawing', 'gradlab.plots', 'matplotlib') if m in sys.modules]\n"
        "print(late)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
