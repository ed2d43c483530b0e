"""Writes the version counter misses: fused optimizer steps, ``.data``, a counter put back, custom kernels.

On torch 2.13 (CPU) ``fused=True`` Adam, AdamW, SGD and Adagrad change every
parameter without moving its version counter, so a backward through a graph that
saved a parameter before such a step runs silently on the new weights. These tests
prove that fact on the installed torch, then that under ``gradlab.track()``:

* the step is recorded as a write (``counted=False``: the counter missed it);
* ``check()`` before the backward is not ok; the backward warns
  (:class:`gradlab.SilentWriteWarning`, with the note) and computes exactly what
  torch computes; ``strict=True`` raises torch's in-place error instead;
* the foreach and for-loop paths move the counter: torch's own error, no warning;
* a correct fused loop gives no warning; training results are bitwise unchanged
  under ``track()`` and ``track(verify_saved=True)``;
* ``.data``, ``torch.autograd._unsafe_preserve_version_counter`` and (with
  ``verify_saved=True``) a write gradlab cannot see are reported too.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn

import gradlab
from gradlab.fingerprint import fingerprint

pytestmark = pytest.mark.library

#: Every optimizer of torch.optim that takes fused=, with settings that touch each code path.
FUSED = {
    "Adam": lambda ps, **kw: torch.optim.Adam(ps, lr=1e-2, **kw),
    "AdamW": lambda ps, **kw: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, **kw),
    "SGD": lambda ps, **kw: torch.optim.SGD(ps, lr=0.05, momentum=0.9, **kw),
    "Adagrad": lambda ps, **kw: torch.optim.Adagrad(ps, lr=0.05, **kw),
}


def _fused_optimizers() -> list[str]:
    """The optimizers of torch.optim whose constructor takes ``fused`` (the list the tests must cover)."""
    out = []
    for name in dir(torch.optim):
        cls = getattr(torch.optim, name)
        optimizer = isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)
        if optimizer and cls is not torch.optim.Optimizer and "fused" in inspect.signature(cls.__init__).parameters:
            out.append(name)
    return sorted(out)


def _supports_fused(name: str) -> bool:
    p = nn.Parameter(torch.ones(2))
    try:
        opt = FUSED[name]([p], fused=True)
        p.grad = torch.ones(2)
        opt.step()
    except (RuntimeError, TypeError, ValueError):
        return False
    return True


def test_every_fused_optimizer_of_torch_optim_is_covered() -> None:
    assert set(_fused_optimizers()) == set(FUSED)


@contextlib.contextmanager
def no_silent_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.SilentWriteWarning)
        yield


class Pair:
    """Two chained networks: ``loss_2`` backprops through ``n_1``'s last weight (saved by its addmm)."""

    def __init__(self, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.n_1 = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 4))
        self.n_2 = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1))
        with torch.no_grad():
            for p in (*self.n_1.parameters(), *self.n_2.parameters()):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        self.x = torch.randn(8, 3, generator=g)
        self.names = {"n_1": self.n_1, "n_2": self.n_2}

    def forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.n_1(self.x)
        return h.pow(2).mean(), self.n_2(h).pow(2).mean()


def _stale_loop(pair: Pair, opt_1: torch.optim.Optimizer) -> tuple[torch.Tensor, Callable[[], None]]:
    """The retain_graph loop up to the stale backward: returns loss_2 and that backward."""
    loss_1, loss_2 = pair.forward()
    opt_1.zero_grad()
    loss_1.backward(retain_graph=True)
    opt_1.step()
    return loss_2, lambda: loss_2.backward()


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_step_leaves_the_version_counter_alone_in_torch(name: str) -> None:
    if not _supports_fused(name):
        pytest.skip(f"this torch build has no fused {name}")
    pair = Pair()
    opt_1 = FUSED[name](pair.n_1.parameters(), fused=True)
    w = pair.n_1[2].weight
    before, version = w.detach().clone(), w._version
    _loss_2, backward = _stale_loop(pair, opt_1)
    assert not torch.equal(before, w.detach())  # the step changed the weight ...
    assert w._version == version  # ... and its counter did not move: torch cannot see it
    backward()  # so plain torch runs the stale backward without any error


@pytest.mark.parametrize("name", sorted(FUSED))
def test_track_records_a_fused_step_and_warns_at_the_backward(name: str) -> None:
    if not _supports_fused(name):
        pytest.skip(f"this torch build has no fused {name}")
    pair = Pair()
    opt_1 = FUSED[name](pair.n_1.parameters(), fused=True)
    with gradlab.track(names=pair.names) as tracker:
        loss_2, backward = _stale_loop(pair, opt_1)
        writes = [e for e in tracker.writes if e.op == f"{name}.step()"]
        assert writes and all(e.version_before == e.version_after for e in writes)
        assert {e.tensor for e in writes} == {"n_1.2.weight (transposed view)"}
        d = gradlab.check(loss_2)
        assert not d.ok
        problem = d.problems[0]
        assert problem.counter_missed and problem.modified_by == f"{name}.step()"
        assert problem.cause == "optimizer_step"
        assert not problem.writes[0].counted
        assert "would use the changed values" in str(d)
        with pytest.warns(gradlab.SilentWriteWarning) as record:
            backward()
    assert len(record) == 1
    text = str(record[0].message)
    assert "n_1.2.weight (transposed view)" in text
    assert f"{name}.step()" in text
    assert "opt_1.step()" in text  # the line of the step
    assert "h = self.n_1(self.x)" in text  # where it was saved
    assert "help:" in text and "trains:" in text
    assert record[0].filename == __file__  # points at the user's backward line
    assert tracker.notes and tracker.notes[-1] == text


@pytest.mark.parametrize("name", sorted(FUSED))
def test_strict_raises_torchs_in_place_error_with_the_note(name: str) -> None:
    if not _supports_fused(name):
        pytest.skip(f"this torch build has no fused {name}")
    pair = Pair()
    opt_1 = FUSED[name](pair.n_1.parameters(), fused=True)
    with gradlab.track(names=pair.names, strict=True) as tracker:
        _, backward = _stale_loop(pair, opt_1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            backward()
    d = tracker.diagnosis_for(info.value)
    assert d is not None and d.problems[0].counter_missed
    v = d.problems[0].saved_version
    assert v is not None and f"is at version {v + 1}; expected version {v} instead" in str(info.value)  # foreach
    assert d.problems[0].tensor == "n_1.2.weight (transposed view)"
    note = "".join(info.value.__notes__)
    assert "the version counter missed the write" in note


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for_loop"])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_foreach_and_for_loop_steps_move_the_counter(name: str, foreach: bool) -> None:
    pair = Pair()
    opt_1 = FUSED[name](pair.n_1.parameters(), foreach=foreach)
    with gradlab.track(names=pair.names) as tracker, no_silent_warning():
        loss_2, backward = _stale_loop(pair, opt_1)
        writes = [e for e in tracker.writes if e.op == f"{name}.step()"]
        assert writes and all(e.version_after > e.version_before for e in writes)  # AdamW's decay: +2
        assert not gradlab.check(loss_2).problems[0].counter_missed
        v, now = writes[0].version_before, writes[0].version_after
        with pytest.raises(RuntimeError, match=f"is at version {now}; expected version {v} instead"):
            backward()


def test_the_warned_backward_computes_what_torch_computes_with_the_new_weights() -> None:
    # Observation only: the gradients equal plain torch's, and those come from the stepped weight.
    def run(tracked: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        torch.manual_seed(2)
        lin = nn.Linear(3, 2)
        opt = torch.optim.Adam(lin.parameters(), lr=0.5, fused=True)
        x = torch.randn(4, 3, requires_grad=True)
        ctx = gradlab.track() if tracked else contextlib.nullcontext()
        with ctx, warnings.catch_warnings():
            warnings.simplefilter("ignore", gradlab.SilentWriteWarning)
            old = lin.weight.detach().clone()
            loss = lin(x).pow(2).sum()  # addmm saves the weight (for x's gradient)
            loss.backward(retain_graph=True)
            opt.step()
            x.grad = None
            loss.backward()
        assert x.grad is not None
        return x.grad.clone(), old, lin.weight.detach().clone()

    plain, old, new = run(tracked=False)
    tracked, _, _ = run(tracked=True)
    assert torch.equal(plain, tracked)
    torch.manual_seed(2)
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    out = lin(x).detach()  # the activations the forward computed with the old weight
    assert torch.allclose(plain, 2 * out @ new) and not torch.allclose(plain, 2 * out @ old)


def test_a_correct_fused_loop_gives_no_warning() -> None:
    pair = Pair()
    opt = torch.optim.AdamW([*pair.n_1.parameters(), *pair.n_2.parameters()], lr=1e-2, fused=True)
    with gradlab.track(names=pair.names) as tracker, no_silent_warning():
        for _ in range(5):
            loss_1, loss_2 = pair.forward()
            opt.zero_grad()
            (loss_1 + loss_2).backward()
            opt.step()
    assert not [n for n in tracker.notes if "torch raised nothing" in n]


def test_a_fused_step_that_changes_nothing_is_not_a_write() -> None:
    # lr=0: the kernel runs but leaves every bit as it was; nothing to report.
    pair = Pair()
    opt_1 = torch.optim.SGD(pair.n_1.parameters(), lr=0.0, fused=True)
    with gradlab.track(names=pair.names) as tracker, no_silent_warning():
        _, backward = _stale_loop(pair, opt_1)
        assert not tracker.writes
        backward()


# -- other writes the counter misses -------------------------------------------------------------


def _saved_weight() -> tuple[nn.Parameter, torch.Tensor, torch.Tensor]:
    w = nn.Parameter(torch.linspace(-1, 1, 9).reshape(3, 3))
    x = torch.linspace(0, 1, 6).reshape(2, 3).requires_grad_()
    y = (x @ w).tanh()
    return w, x, y


def _data_write(w: torch.Tensor, y: torch.Tensor) -> None:
    w.data.add_(1)


def _preserved_counter(w: torch.Tensor, y: torch.Tensor) -> None:
    with torch.no_grad(), torch.autograd._unsafe_preserve_version_counter(w):
        w.mul_(2)


def _result_data_write(w: torch.Tensor, y: torch.Tensor) -> None:
    with torch.no_grad():
        y.data.mul_(2)  # tanh saved its result; .data has a counter of its own


def _numpy_write(w: torch.Tensor, y: torch.Tensor) -> None:
    w.detach().numpy()[:] += 1  # a write from outside torch: nothing gradlab wraps sees it


SEEN = {"data": _data_write, "preserved_counter": _preserved_counter, "result_data": _result_data_write}


@pytest.mark.parametrize("write", sorted(SEEN))
def test_writes_torch_cannot_see_run_silently_in_torch(write: str) -> None:
    w, _x, y = _saved_weight()
    saved = [w._version, y._version]
    SEEN[write](w, y)
    assert [w._version, y._version] == saved
    y.sum().backward()  # no error


@pytest.mark.parametrize("verify", [False, True], ids=["track", "verify_saved"])
@pytest.mark.parametrize("write", sorted(SEEN))
def test_track_reports_writes_behind_the_counter_and_who_made_them(write: str, verify: bool) -> None:
    with gradlab.track(verify_saved=verify) as tracker:
        w, _x, y = _saved_weight()
        loss = y.sum()
        SEEN[write](w, y)
        d = gradlab.check(loss, names={"w": w})
        assert not d.ok and d.problems[0].counter_missed
        assert d.problems[0].modified_by in {"add_", "mul_"}
        with pytest.warns(gradlab.SilentWriteWarning, match="was changed by (add_|mul_)"):
            loss.backward()
    assert tracker.notes


@pytest.mark.parametrize("write", sorted(SEEN))
def test_strict_raises_for_writes_behind_the_counter(write: str) -> None:
    with gradlab.track(strict=True):
        w, _x, y = _saved_weight()
        loss = y.sum()
        SEEN[write](w, y)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_only_verify_saved_sees_a_write_from_outside_torch() -> None:
    with gradlab.track(), no_silent_warning():
        w, x, y = _saved_weight()
        loss = y.sum()
        _numpy_write(w, y)
        assert gradlab.check(loss).ok  # gradlab saw no write, the counter did not move
        loss.backward()
    w, x, y = _saved_weight()
    with gradlab.track(names={"w": w}, verify_saved=True):
        y = (x @ w).tanh()
        loss = y.sum()
        _numpy_write(w, y)
        d = gradlab.check(loss)
        assert not d.ok
        problem = d.problems[0]
        assert problem.tensor == "w" and problem.counter_missed and problem.modified_by is None
        assert problem.cause == "untracked_write"
        assert "a write gradlab did not see" in str(d)
        with pytest.warns(gradlab.SilentWriteWarning, match="w was changed after autograd saved it"):
            loss.backward()


def test_a_no_grad_write_to_a_saved_result_moves_the_counter() -> None:
    # Not silent: torch.no_grad() still counts the write, so the backward raises, as in torch.
    with gradlab.track(verify_saved=True), no_silent_warning():
        _w, _x, y = _saved_weight()
        loss = y.sum()
        with torch.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError, match="output 0 of Tanh, is at version 1; expected version 0"):
            loss.backward()


def test_verify_saved_gives_no_warning_on_correct_training() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Dropout(0.1), nn.LayerNorm(8), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with gradlab.track(verify_saved=True) as tracker, no_silent_warning():
        for _ in range(5):
            loss = model(torch.randn(16, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not tracker.notes


def test_nested_tracker_strict_and_verify_apply_while_open() -> None:
    with gradlab.track() as outer:
        with gradlab.track(strict=True):
            w, _x, y = _saved_weight()
            loss = y.sum()
            _data_write(w, y)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                loss.backward()
        w, _x, y = _saved_weight()
        loss = y.sum()
        _data_write(w, y)
        with pytest.warns(gradlab.SilentWriteWarning):
            loss.backward()
        assert not outer.strict


@pytest.mark.parametrize("flag", ["strict", "verify_saved"])
def test_modes_must_be_booleans(flag: str) -> None:
    with pytest.raises(TypeError, match=f"{flag} must be True or False, not str; pass {flag}=True"):
        gradlab.track(**{flag: "yes"})


# -- observation only ----------------------------------------------------------------------------


def _train(name: str, fused: bool, mode: str) -> list[torch.Tensor]:
    """40 steps of the silent fused loop (loss_2's backward after opt_1.step()), then every state tensor."""
    pair = Pair(seed=7)
    kw = {"fused": True} if fused else {"foreach": False}
    opt_1 = FUSED[name](pair.n_1.parameters(), **kw)
    opt_2 = FUSED[name](pair.n_2.parameters(), **kw)
    ctx: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if mode != "plain":
        ctx = gradlab.track(names=pair.names, verify_saved=mode == "verify_saved")
    with ctx, warnings.catch_warnings():
        warnings.simplefilter("ignore", gradlab.SilentWriteWarning)
        for step in range(40):
            loss_1, loss_2 = pair.forward()
            opt_1.zero_grad()
            opt_2.zero_grad()
            if fused:  # the stale loop runs silently; a for-loop optimizer would raise
                loss_1.backward(retain_graph=True)
                opt_1.step()
                loss_2.backward()
            else:
                (loss_1 + loss_2).backward()
                opt_1.step()
            opt_2.step()
            assert step >= 0
    state = [v for o in (opt_1, opt_2) for s in o.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return [p.detach().clone() for p in (*pair.n_1.parameters(), *pair.n_2.parameters())] + [v.clone() for v in state]


@pytest.mark.parametrize("mode", ["track", "verify_saved"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "for_loop"])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_training_is_bitwise_unchanged(name: str, fused: bool, mode: str) -> None:
    if fused and not _supports_fused(name):
        pytest.skip(f"this torch build has no fused {name}")
    plain = _train(name, fused, "plain")
    observed = _train(name, fused, mode)
    assert len(plain) == len(observed) >= 8
    assert all(torch.equal(a, b) for a, b in zip(plain, observed, strict=True))


# -- fingerprints --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.complex64]
)
def test_a_fingerprint_changes_with_any_single_element(dtype: torch.dtype) -> None:
    t = (torch.arange(12) % 2 if dtype is torch.bool else torch.arange(12) * 0.5).to(dtype).reshape(3, 4)
    base = fingerprint(t)
    assert base is not None and fingerprint(t.clone()) == base
    for i in range(t.numel()):
        u = t.clone()
        flat = u.view(-1)
        flat[i] = (~flat[i]) if dtype is torch.bool else flat[i] + 1
        assert fingerprint(u) != base
    assert fingerprint(t.t()) == base  # a transposed view holds the same elements


def test_a_fingerprint_changes_nothing_and_has_none_for_sparse() -> None:
    w = nn.Parameter(torch.ones(2, 2))
    y = (w * w).sum()
    fingerprint(w)
    assert w._version == 0 and w.grad is None and y.grad_fn is not None
    assert fingerprint(torch.eye(3).to_sparse()) is None


def test_load_ext_warns_about_a_fused_step_in_a_notebook(ipython: Any) -> None:
    ip = ipython
    ip.run_cell("%load_ext gradlab")
    try:
        with pytest.warns(gradlab.SilentWriteWarning) as record:
            result = ip.run_cell(
                "import torch\n"
                "from torch import nn\n"
                "critic = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))\n"
                "actor = nn.Linear(2, 3)\n"
                "opt_critic = torch.optim.AdamW(critic.parameters(), lr=1e-2, fused=True)\n"
                "value = critic(actor(torch.randn(5, 2))).mean()\n"
                "opt_critic.zero_grad()\n"
                "value.backward(retain_graph=True)\n"
                "opt_critic.step()\n"
                "(-value).backward()\n"
            )
        assert result.success  # the cell runs as in plain torch
        assert "critic.2.weight (transposed view)" in str(record[0].message)  # named from the notebook's modules
        assert "AdamW.step()" in str(record[0].message)
    finally:
        ip.run_cell("%unload_ext gradlab")
        ip.user_ns.pop("gradlab_tracker", None)  # the shell is shared: the next %load_ext starts afresh


def test_a_long_stale_fused_loop_keeps_one_note_and_warns_once_per_line() -> None:
    pair = Pair()
    opt_1 = torch.optim.Adam(pair.n_1.parameters(), lr=1e-3, fused=True)
    with gradlab.track(names=pair.names) as tracker, warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")  # Python's default: a warning once per text and line
        for _ in range(20):
            _, backward = _stale_loop(pair, opt_1)
            backward()
    silent = [r for r in record if issubclass(r.category, gradlab.SilentWriteWarning)]
    assert len(silent) == 1
    assert len([n for n in tracker.notes if "torch raised nothing" in n]) == 1
