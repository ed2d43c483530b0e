"""gradlab keeps nothing alive: bounded records under track(), no tensor or graph after use.

Long runs: 300 steps of the corrected loop under ``track()`` keep the
tracker's own structures bounded (resident memory is measured in benchmarks/). Lifetimes: after the context
exits, and after every inspector call (check, saved_tensors, collect,
grad_report, draw), a weak reference to the loss, to a tensor its graph saved
and to the model dies once the last user reference is gone.
"""

from __future__ import annotations

import contextlib
import gc
import types
import weakref
from collections.abc import Callable, Iterator

import pytest
import scenarios
import torch

import gradlab
from gradlab import course
from gradlab.backwards import Backwards

pytestmark = pytest.mark.library


def _corrected_step(pair: course.Pair, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    pred_1 = pair.n_1(x)
    pred_2 = pair.n_2(pred_1)
    pair.opt_1.zero_grad()
    pair.opt_2.zero_grad()
    loss = pair.criterion(y, pred_1) + pair.criterion(y, pred_2)
    loss.backward()
    pair.opt_1.step()
    pair.opt_2.step()
    return loss


def _registry_refs(tracker: gradlab.Tracker) -> int:
    return tracker.stats()["registry_records"]


def test_long_run_under_track_is_bounded() -> None:
    pair = course.make_pair(0, softmax=False)
    data = course.batches(50, seed=1)
    registry_max = 0
    with gradlab.track(names=pair.names) as tracker:
        for i in range(300):  # ~4,000 saved tensors: three pruning periods
            x, y = data[i % len(data)]
            _corrected_step(pair, x, y)
            registry_max = max(registry_max, _registry_refs(tracker))
        assert len(tracker.events) <= tracker.MAX_EVENTS
        assert tracker.events.maxlen == tracker.MAX_EVENTS
        stats = tracker.stats()
        assert 0 < stats["freed"] <= Backwards.MAX_FREED
        assert stats["open_steps"] == 0
        # Pruned every 1,024 packs: never more than one pruning period of dead records.
        assert registry_max <= 1_024 + 64, registry_max
        assert stats["registry_storages"] <= 1_024 + 64
        assert stats["saved"] > 3 * 1_024
    stats = tracker.stats()
    assert stats["registry_storages"] == stats["registry_records"] == stats["open_steps"] == stats["freed"] == 0


def test_many_events_stay_within_the_bound() -> None:
    w = torch.zeros(2, requires_grad=True)
    with gradlab.track(names={"w": w}) as tracker:
        y = (w * w).sum()
        with torch.no_grad():
            for _ in range(tracker.MAX_EVENTS + 500):
                w.add_(1)  # each write to the saved w is an event
        assert len(tracker.events) == tracker.MAX_EVENTS
        assert tracker.events[-1].index == tracker.stats()["events"] - 1
    del y


def _dies(make: Callable[[], Iterator[object]]) -> None:
    """``make`` yields objects to watch, then cleans up its own references; all must die."""
    gen = make()
    refs = [weakref.ref(obj) for obj in gen]
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"still alive: {[type(a).__name__ for a in alive]}"


def test_nothing_alive_after_track_exits() -> None:
    def make():
        pair = course.make_pair(0, softmax=False)
        x, y = course.batches(1)[0]
        with gradlab.track(names=pair.names) as tracker:
            loss = _corrected_step(pair, x, y)
            kept = pair.n_1(x).sigmoid()  # SigmoidBackward0 saves its output
            saved = kept.grad_fn._saved_result
            tracker.check(kept.sum())
            yield loss
            yield kept
            yield saved
            yield kept.grad_fn._saved_result
            yield pair.n_1
            yield pair.opt_1
            yield x
        del loss, kept, saved, pair, x, y

    _dies(make)


INSPECTORS: dict[str, Callable[[torch.Tensor, dict], object]] = {
    "check": lambda loss, names: gradlab.check(loss, names),
    "saved_tensors": lambda loss, names: gradlab.saved_tensors(loss, names),
    "collect": lambda loss, names: gradlab.collect(loss, names),
    "grad_report": lambda loss, names: gradlab.grad_report(names, loss=loss),
}
if hasattr(gradlab, "draw"):
    INSPECTORS["draw"] = lambda loss, names: gradlab.draw(loss, names).source


@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "tracked"])
@pytest.mark.parametrize("inspector", sorted(INSPECTORS))
def test_inspectors_keep_no_reference(inspector: str, tracked: bool) -> None:
    results = []

    def make():
        with gradlab.track() if tracked else contextlib.nullcontext():
            # a stale tensor makes the inspectors record writes and problems
            s = scenarios.stepped_before_backward_2()
            results.append(INSPECTORS[inspector](s.loss_2, s.names))
            results.append(INSPECTORS[inspector](s.loss_1, {"n_1": s.pair.n_1, "x": s.x}))
        yield s.loss_2
        yield s.pred_1
        yield s.pair.n_1.linear_2.weight
        yield s.pair.n_2
        yield s.x
        del s

    _dies(make)
    assert len(results) == 2  # the results themselves may live on; they hold no tensor


def test_results_hold_no_tensor() -> None:
    """Diagnosis, saved records and reports are plain data: no tensor anywhere inside."""
    pair = course.make_pair(0)
    x, y = course.batches(1)[0]
    with gradlab.track(names=pair.names):
        loss = pair.criterion(y, pair.n_2(pair.n_1(x)))
        loss.backward(retain_graph=True)
        found = [gradlab.check(loss), gradlab.saved_tensors(loss), gradlab.grad_report(pair.names, loss)]
    seen: set[int] = set()
    stack: list[object] = list(found)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        assert not isinstance(obj, (torch.Tensor, torch.nn.Module)), f"a result holds {type(obj).__name__}"
        assert type(obj).__module__ != "torch.autograd.graph" and not hasattr(type(obj), "next_functions"), (
            f"a result holds a graph node {obj!r}"
        )
        if isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue  # classes and modules are shared, not held by the result
        stack.extend(gc.get_referents(obj))


def test_saved_output_forms_no_cycle() -> None:
    """Sigmoid saves its own output; under track() that record must not keep the graph in a cycle.

    With the cyclic collector disabled, reference counting alone must free the
    output once the user drops it: no cycle at all, so nothing waits for gc.
    """
    x = torch.ones(4, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        with gradlab.track():
            y = torch.sigmoid(x * 2)
            z = torch.tanh(y)  # tanh saves its output as well
            out = weakref.ref(y)
            out_z = weakref.ref(z)
            node = weakref.ref(y.grad_fn._saved_result)
            del y, z
        assert out() is None and out_z() is None and node() is None
    finally:
        gc.enable()


def test_identity_hooks_would_leak_saved_outputs() -> None:
    """The premise of Packed's detach(): an identity pack hook keeps a saved output alive forever."""
    x = torch.ones(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = torch.sigmoid(x * 2)
    out = weakref.ref(y)
    del y
    gc.collect()
    assert out() is not None  # output -> node -> saved output: a cycle gc cannot see
