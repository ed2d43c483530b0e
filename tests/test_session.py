"""Which tracker is active: nesting joins the outer tracker, threads do not share trackers, and torch is restored."""

from __future__ import annotations

import sys
import threading
import warnings

import pytest
import scenarios
import torch

import gradlab
from gradlab import session, writes

pytestmark = pytest.mark.library


def _gradlab_notes(error: BaseException) -> list[str]:
    return [n for n in getattr(error, "__notes__", []) if n.lstrip().startswith("gradlab:")]


def test_nested_track_joins_the_outer_one_and_notes_once() -> None:
    s = scenarios.fresh()
    with gradlab.track() as outer:
        with gradlab.track(names=s.names) as inner, pytest.raises(RuntimeError) as info:
            scenarios.original_loop(retain_graph=True, state=s)
        assert session.active() is outer and outer.active and not inner.active
    error = info.value
    assert len(_gradlab_notes(error)) == 1
    # The outer tracker recorded the step's write while the inner one was open...
    assert [e.op for e in outer.writes] == ["Adam.step()"]
    # ...and the inner one saw the same events, named with its own names.
    assert [e.tensor for e in inner.writes] == ["n_1.linear_2.weight (transposed view)"]
    assert inner.diagnosis_for(error) is outer.diagnosis_for(error) is not None
    problem = inner.diagnosis_for(error).problems[0]
    assert problem.tensor == "n_1.linear_2.weight (transposed view)" and problem.modified_by == "Adam.step()"


def test_callable_names_name_the_log_like_a_dict() -> None:
    """``names=`` a callable (what ``%load_ext gradlab`` and ``gradlab run`` pass) names saves and writes too."""
    logs = {}
    for how in ("dict", "callable"):
        s = scenarios.fresh()
        names = s.names if how == "dict" else (lambda s=s: s.names)
        with gradlab.track(names=names) as tracker, pytest.raises(RuntimeError):
            scenarios.original_loop(retain_graph=True, state=s)
        logs[how] = [(e.kind, e.tensor) for e in tracker.events if e.kind in ("saved", "write")]
    assert ("write", "n_1.linear_2.weight (transposed view)") in logs["dict"]
    assert logs["callable"] == logs["dict"]


def test_callable_names_see_modules_made_after_the_tracker_started() -> None:
    """The session tracker starts before the notebook defines its model: the next backward picks it up."""
    namespace: dict[str, object] = {}
    with gradlab.track(names=lambda: gradlab.modules_in(namespace)) as tracker:
        lin = torch.nn.Linear(2, 1)
        namespace["lin"] = lin
        x = torch.ones(3, 2, requires_grad=True)
        lin(x).sum().backward()  # the first forward's saves are not named yet; this backward looks again
        lin(x).sum().backward()
    saved = [e.tensor for e in tracker.events if e.kind == "saved"]
    assert saved == ["lin.weight (transposed view)"]


def test_inner_names_take_precedence_inside_its_block() -> None:
    lin = torch.nn.Linear(2, 1)
    x = torch.ones(3, 2, requires_grad=True)
    with gradlab.track(names={"outer_name": lin}) as outer:
        loss = lin(x).sum()
        with gradlab.track(names={"inner_name": lin}):
            assert outer.namer().name_of(lin.weight) == "inner_name.weight"
        assert outer.namer().name_of(lin.weight) == "outer_name.weight"
    del loss


def test_closing_out_of_order_is_a_clear_error() -> None:
    outer = gradlab.track()
    inner = gradlab.track()
    outer.__enter__()
    inner.__enter__()
    try:
        with pytest.raises(RuntimeError, match="reverse order"):
            outer.__exit__(None, None, None)
    finally:
        inner.__exit__(None, None, None)
        outer.__exit__(None, None, None)
    assert session.active() is None and not writes.installed()


def test_a_tracker_cannot_be_entered_twice() -> None:
    tracker = gradlab.track()
    with tracker, pytest.raises(RuntimeError, match="already active"):
        tracker.__enter__()


_OWNERS = (
    torch.Tensor,
    torch,
    torch._C._nn,
    torch.nn.functional,  # its own names for torch's in-place builtins (F.relu_ is torch.relu_)
    sys.modules["torch._VF"],
    torch.autograd,
    torch.autograd.grad_mode.no_grad,  # NOTE [Cuts] in writes.py
    torch.autograd.grad_mode.inference_mode,
    torch.optim.Optimizer,  # zero_grad(), for the loop's intent (NOTE [Intent from the record] in loop.py)
    torch.nn.Module,
    torch.autograd.graph,  # disable_saved_tensors_hooks (NOTE [Stepping aside] in writes.py)
    warnings,  # _showwarnmsg (NOTE [Warnings keep the user's frame] in writes.py)
)


def _snapshot() -> list[dict[str, object]]:
    return [dict(vars(owner)) for owner in _OWNERS]


def _same_objects(before: list[dict[str, object]]) -> None:
    """Every patched owner has exactly the entries it had, each the very same object."""
    for owner, then in zip(_OWNERS, before):
        now = dict(vars(owner))
        assert sorted(now) == sorted(then), f"{owner.__name__}: {sorted(set(now) ^ set(then))[:5]} ..."
        changed = [name for name in then if now[name] is not then[name]]
        assert changed == [], f"{owner.__name__}: {changed[:5]} ..."


def _stale_backward() -> None:
    w = torch.ones(3, requires_grad=True)
    y = (w * w).sum()  # saves w
    with torch.no_grad():
        w.mul_(2)
    y.backward()


@pytest.mark.parametrize("how", ["plain", "nested", "an error inside", "an error inside the nested one"])
def test_torch_is_restored_exactly_after_the_last_tracker(how: str) -> None:
    before = _snapshot()
    add_ = torch.Tensor.add_
    with gradlab.track():
        assert torch.Tensor.add_ is not add_ and writes.installed()
        assert {owner for owner, _ in writes.patched()} == set(_OWNERS)  # the snapshot covers every owner
        assert len(writes.patched()) > 300
        if how == "nested":
            with gradlab.track(names={}):
                pass
        elif how == "an error inside":
            with pytest.raises(RuntimeError):
                _stale_backward()
        elif how == "an error inside the nested one":
            with pytest.raises(RuntimeError), gradlab.track():
                _stale_backward()
        assert writes.installed()
    assert not writes.installed() and writes.patched() == []
    _same_objects(before)


def test_torch_is_restored_exactly_when_the_block_raises() -> None:
    before = _snapshot()
    with pytest.raises(ZeroDivisionError), gradlab.track(), gradlab.track():
        _ = 1 / 0
    _same_objects(before)


def test_the_snapshot_sees_a_leftover_entry() -> None:
    """The comparison above fails for what the old restore left: an inherited method set back on torch.Tensor."""
    before = _snapshot()
    assert "add_" not in vars(torch.Tensor)  # inherited from torch._C.TensorBase
    torch.Tensor.add_ = torch.Tensor.add_  # type: ignore[method-assign]  # what setattr(owner, name, getattr(...)) did
    try:
        with pytest.raises(AssertionError, match="add_"):
            _same_objects(before)
    finally:
        del torch.Tensor.add_
    _same_objects(before)


# -- track() and record_training() share one install (writes.observe_backward) -------------------


class _Inside(Exception):
    """Raised inside the blocks, to exit them through an exception."""


def _one_step(net: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    opt.zero_grad()
    net(torch.ones(3, 2)).sum().backward()
    opt.step()


@pytest.mark.parametrize("raised", [False, True], ids=["returning", "raising"])
@pytest.mark.parametrize("exit_first", ["track", "record_training"])
@pytest.mark.parametrize("enter_first", ["track", "record_training"])
def test_track_and_record_training_restore_torch_in_any_exit_order(
    enter_first: str, exit_first: str, raised: bool
) -> None:
    """Entered in either order, exited in either order, with or without an exception: torch is exactly restored."""
    net = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    _one_step(net, opt)  # a first step imports torch's lazy submodules (torch._dynamo): before the snapshot
    before = _snapshot()
    backward = torch.autograd.backward
    blocks = {"track": gradlab.track(), "record_training": gradlab.record_training()}
    entered = {}
    for name in (enter_first, "record_training" if enter_first == "track" else "track"):
        entered[name] = blocks[name].__enter__()
    assert torch.autograd.backward is not backward and writes.installed()
    _one_step(net, opt)
    error = _Inside() if raised else None
    exc = (type(error), error, None) if error is not None else (None, None, None)
    last = "record_training" if exit_first == "track" else "track"
    if exit_first == "track":
        blocks["track"].__exit__(*exc)
    else:
        assert not blocks["record_training"].__exit__(*exc)  # an exception of the block is not swallowed
    assert torch.autograd.backward is not backward and writes.installed()  # the other block still watches
    _one_step(net, opt)
    if last == "track":
        blocks["track"].__exit__(*exc)
    else:
        assert not blocks["record_training"].__exit__(*exc)
    assert torch.autograd.backward is backward and not writes.installed() and writes.patched() == []
    _same_objects(before)
    record = entered["record_training"]
    # record_training saw both backwards when it exited last, else the first one only
    assert len(record.backwards) == (2 if last == "record_training" else 1)
    assert [s.count for s in record.steps] == ([1, 2] if last == "record_training" else [1])
    backwards = [e for e in entered["track"].events if e.kind == "backward"]
    assert len(backwards) == (2 if last == "track" else 1)


def test_one_install_serves_nested_record_training_blocks() -> None:
    net = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    _one_step(net, opt)
    before = _snapshot()
    with gradlab.record_training() as outer:
        with gradlab.track(), gradlab.record_training() as inner:
            _one_step(net, opt)
        _one_step(net, opt)
    assert (len(outer.backwards), len(inner.backwards)) == (2, 1)
    assert not writes.installed()
    _same_objects(before)


def test_another_thread_is_not_tracked() -> None:
    """A tracker in this thread neither sees nor changes what another thread runs."""
    results: dict[str, object] = {}

    def other() -> None:
        results["active"] = session.active()
        try:
            scenarios.original_loop(retain_graph=True)
        except RuntimeError as e:
            results["notes"] = _gradlab_notes(e)

    with gradlab.track() as tracker:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert results == {"active": None, "notes": []}
    assert tracker.writes == []


def test_ipython_session_tracker_and_a_cell_tracker_note_once(ipython, capsys: pytest.CaptureFixture[str]) -> None:
    ip = ipython
    ip.run_cell("%load_ext gradlab")
    try:
        ip.run_cell(
            "import gradlab, scenarios\n"
            "s = scenarios.fresh()\n"
            "with gradlab.track(names=s.names) as cell_tracker:\n"
            "    scenarios.original_loop(retain_graph=True, state=s)\n"
        )
        text = capsys.readouterr()
        out = text.out + text.err
        assert out.count("gradlab: error[GL0002 modified in place]") == 1
        assert "unpack_hook" not in out and "record_backward" not in out  # gradlab's frames are not shown
        assert "n_1.linear_2.weight (transposed view)" in out
        session_tracker = ip.user_ns["gradlab_tracker"]
        assert [(e.op, e.tensor) for e in session_tracker.writes] == [
            ("Adam.step()", "n_1.linear_2.weight (transposed view)")
        ]
        assert [e.op for e in ip.user_ns["cell_tracker"].writes] == ["Adam.step()"]
    finally:
        ip.run_cell("%unload_ext gradlab")
    assert session.active() is None and not writes.installed()
