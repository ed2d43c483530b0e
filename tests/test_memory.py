"""gradlab.measure_memory against real torch: which loops pile up autograd graphs."""

from __future__ import annotations

import sys

import pytest
import torch

import gradlab
from gradlab import course
from gradlab.memory import MemoryTrace, measure_memory, plot_memory, rss_bytes

pytestmark = pytest.mark.library


def _loop(retain: bool, keep: bool, steps: int, size: int = 256, trace: MemoryTrace | None = None) -> object:
    """The course's corrected (joint) loop; ``retain`` backwards each loss with retain_graph=True,
    ``keep`` adds every loss to a running total (the real leak pattern). Returns the total."""
    pair = course.make_pair(seed=0, softmax=False)
    n_1, n_2, opt_1, opt_2, criterion = pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion
    total_loss = 0
    for x, y in course.batches(steps, seed=0, size=size):
        pred_1 = n_1(x)
        pred_2 = n_2(pred_1)
        opt_1.zero_grad()
        opt_2.zero_grad()
        loss_1 = criterion(y, pred_1)
        loss_2 = criterion(y, pred_2)
        if retain:
            loss_1.backward(retain_graph=True)
            loss_2.backward(retain_graph=True)
        else:
            (loss_1 + loss_2).backward()
        opt_1.step()
        opt_2.step()
        if keep:
            total_loss += loss_1 + loss_2
        if trace is not None:
            trace.record()
    return total_loss


def _measure(retain: bool, keep: bool, steps: int = 20, size: int = 256) -> MemoryTrace:
    with measure_memory(f"retain={retain}, keep={keep}") as trace:
        _loop(retain, keep, steps, size, trace)
    return trace


def test_exported():
    assert gradlab.measure_memory is measure_memory
    assert gradlab.plot_memory is plot_memory
    assert {"MemoryTrace", "measure_memory", "plot_memory"} <= set(gradlab.__all__)


def test_retain_graph_alone_does_not_pile_up():
    trace = _measure(retain=True, keep=False)
    # Only the current step's graph is alive (loss_1/loss_2 still name it); each is freed on rebinding.
    assert trace.graphs == [1] * 20
    assert len(set(trace.saved_bytes)) == 1 and trace.saved_bytes[0] > 0
    assert trace.saved_growth == 0 and trace.graphs_per_step == 0


def test_corrected_loop_frees_everything_at_backward():
    trace = _measure(retain=False, keep=False)
    assert trace.graphs == [0] * 20
    assert trace.saved_tensors == [0] * 20 and trace.saved_bytes == [0] * 20


def test_kept_losses_with_retain_graph_pile_up_one_graph_per_step():
    trace = _measure(retain=True, keep=True)
    assert trace.graphs == list(range(1, 21))
    per_step = {b - a for a, b in zip(trace.saved_bytes, trace.saved_bytes[1:])}
    assert len(per_step) == 1 and per_step.pop() > 0  # the same bytes every step: linear growth
    assert trace.graphs_per_step == 1.0
    assert "+1 graph per step" in str(trace)


def test_kept_losses_without_retain_keep_nodes_but_no_saved_tensors():
    with measure_memory("kept, no retain") as trace:
        total_loss = _loop(retain=False, keep=True, steps=20, trace=trace)
    assert trace.graphs == [0] * 20  # backward freed every saved tensor...
    small = gradlab.collect(_loop(retain=False, keep=True, steps=2))
    big = gradlab.collect(total_loss)
    assert len(big.nodes) > 5 * len(small.nodes)  # ...but the running total keeps every graph's nodes
    assert all(s.status == "freed" for s in big.saved)


def test_counts_what_torch_saves():
    """Oracle: torch's own pack-hook calls, and the tensors gradlab.saved_tensors finds."""
    packed = []
    pair = course.make_pair(seed=0, softmax=False)
    x, y = course.batches(1)[0]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        loss = pair.criterion(y, pair.n_2(pair.n_1(x)))
    with measure_memory() as trace:
        loss2 = pair.criterion(y, pair.n_2(pair.n_1(x)))
        trace.record()
    assert trace.saved_tensors == [len(packed)]
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in packed}
    assert trace.saved_bytes == [sum(storages.values())]
    assert len([s for s in gradlab.saved_tensors(loss2) if s.shape is not None]) == len(packed)
    del loss, loss2


def test_shared_storage_counts_once_and_release_after_block():
    x = torch.ones(1000, requires_grad=True)
    with measure_memory() as trace:
        y = (x * x).sum()  # MulBackward0 saves x twice
        trace.record()
    assert trace.saved_tensors == [2] and trace.saved_bytes == [4000]
    y.backward()
    trace.record()  # recorded after the block: backward released both
    assert trace.saved_tensors[-1] == 0 and trace.graphs[-1] == 0


def test_dropping_the_last_reference_frees_a_retained_graph():
    w = torch.ones(10, requires_grad=True)
    with measure_memory() as trace:
        loss = (w.sigmoid() * 2).sum()
        loss.backward(retain_graph=True)
        trace.record()
        del loss
        trace.record()
    assert trace.graphs == [1, 0]


def test_in_place_error_still_raised_inside():
    """The pack hook keeps PyTorch's version check: the original loop with retain_graph still fails."""
    pair = course.make_pair(seed=0)
    x, y = course.batches(1)[0]
    with measure_memory(), pytest.raises(RuntimeError, match="modified by an inplace operation"):
        pred_1 = pair.n_1(x)
        pair.opt_1.zero_grad()
        loss_1 = pair.criterion(y, pred_1)
        loss_1.backward(retain_graph=True)
        pair.opt_1.step()
        pred_2 = pair.n_2(pred_1)
        pair.opt_2.zero_grad()
        loss_2 = pair.criterion(y, pred_2)
        loss_2.backward()


def test_str_is_stable():
    a, b = _measure(retain=True, keep=True, steps=5), _measure(retain=True, keep=True, steps=5)
    assert str(a) == str(b)
    assert str(a).startswith("retain=True, keep=True: graphs holding saved tensors 1 -> 5 (+1 graph per step)")
    assert "flat" in str(_measure(retain=True, keep=False, steps=5))
    assert str(MemoryTrace("empty")) == "empty: no steps recorded"


def test_rss_bytes_without_psutil(monkeypatch):
    assert rss_bytes() > 0
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil -> ImportError
    value = rss_bytes()
    assert value is None or value > 0


def test_plot_memory():
    traces = [_measure(retain=True, keep=False, steps=3), _measure(retain=True, keep=True, steps=3)]
    fig = plot_memory(traces)
    assert len(fig.axes) == 2
    assert [line.get_label() for line in fig.axes[0].lines] == [t.label for t in traces]
    assert len(plot_memory({t.label: t for t in traces}).axes) == 2
    with pytest.raises(TypeError, match="MemoryTrace"):
        plot_memory([[1, 2, 3]])
