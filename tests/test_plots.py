"""gradlab.plots: the figures carry the texts a learner needs, and change no global matplotlib state."""

from __future__ import annotations

import re
import sys

import matplotlib

matplotlib.use("Agg")  # headless; set here, before pyplot is imported anywhere in this module

import matplotlib.pyplot as plt
import pytest
import scenarios
import torch

import gradlab
from gradlab import course, grad_report, plot_grads, timeline
from gradlab.course import plot_losses, plot_predictions

pytestmark = pytest.mark.library


def texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out.extend(t.get_text() for t in ax.texts)
        out.append(ax.get_title(loc="left"))
        out.append(ax.get_title())
        out.append(ax.get_title(loc="right"))
        out.extend(t.get_text() for t in ax.get_yticklabels())
        legend = ax.get_legend()
        if legend is not None:
            out.extend(t.get_text() for t in legend.get_texts())
    return out


@pytest.fixture
def failing_tracker():
    """The course's original loop under track: step 1 before backward 2 -> in-place error."""
    s = scenarios.fresh()
    with gradlab.track(names=s.names) as tracker, pytest.raises(RuntimeError, match="is at version 2; expected"):
        scenarios.original_loop(retain_graph=True, state=s)
    return tracker


def test_timeline_explains_the_version_error(failing_tracker):
    fig = timeline(failing_tracker)
    found = texts(fig)
    assert "n_1.linear_2.weight" in found
    assert any("Adam.step()" in t and "v1 -> v2" in t for t in found)
    assert any("expected version 1, is at version 2" in t for t in found)
    assert any(t.startswith("backward(retain_graph=True)") for t in found)
    assert any(t == "saved (v1)" for t in found)
    red_lines = [ln for ax in fig.axes for ln in ax.lines if ln.get_color() == "#cc0000" and ln.get_linewidth() == 2]
    assert red_lines, "the failing backward is a red vertical line"


def test_timeline_labels_do_not_overlap(failing_tracker):
    """The print review's P6: the failure label ran into the write's label and across the lines."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = timeline(failing_tracker)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    labels = [t for ax in fig.axes for t in [*ax.texts, ax.title, ax._left_title, ax._right_title] if t.get_text()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    assert any("expected version 1" in text for text, _ in boxes)
    for i, (first, a) in enumerate(boxes):
        for second, b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"{first!r} overlaps {second!r}"
    failure = next(box for text, box in boxes if "expected version 1" in text)
    plots = [ax.get_window_extent(renderer) for ax in fig.axes]
    assert not any(failure.overlaps(area) for area in plots), "the failure label sits outside every plot area"


def test_timeline_selects_tensors(failing_tracker):
    fig = timeline(failing_tracker, tensors=["n_1.linear_2.weight"])
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="pick from"):
        timeline(failing_tracker, tensors=["n_3.weight"])
    with pytest.raises(TypeError, match="list of tensor names") as info:
        timeline(failing_tracker, tensors="n_1.linear_2.weight")
    assert "e.g. ['n_1." in str(info.value)  # an example from this tracker's own names


def test_timeline_and_plot_grads_errors_name_no_course_variables():
    """Said to somebody else's code, the messages must not speak of the course's n_1 and n_2."""
    lin = torch.nn.Linear(2, 1)
    with gradlab.track() as tracker:  # no names=: nothing to plot
        lin(torch.ones(3, 2)).sum().backward()
    with pytest.raises(ValueError) as empty:
        timeline(tracker)
    with pytest.raises(TypeError) as bad:
        timeline(tracker, tensors="lin.weight")
    messages = [str(empty.value), str(bad.value)]
    assert all("n_1" not in m and "n_2" not in m for m in messages), messages
    assert "names={'net': net}" in messages[0]


def test_timeline_bad_input():
    with pytest.raises(TypeError, match="gradlab.track"):
        timeline(5)
    with pytest.raises(TypeError, match="gradlab events"):
        timeline([1, 2])
    with gradlab.track() as tracker:
        pass
    with pytest.raises(ValueError, match="names="):
        timeline(tracker)


def test_plot_losses_labels_flat_and_stopped_runs():
    fig = plot_losses(
        {
            "joint": course.train("joint", steps=3),
            "softmax": [0.7, 0.7, 0.7],
            "original": course.train("original", steps=2),
        }
    )
    found = texts(fig)
    assert [ax.get_title() for ax in fig.axes] == ["joint", "softmax", "original"]
    assert any("flat: not learning" in t for t in found)
    assert any(t.startswith("stopped: Trying to backward") for t in found)
    assert "loss_1" in found and "loss_2" in found
    overlay = plot_losses({"a": [3.0, 2.0, 1.0], "b": [1.0, 1.0, 1.0]}, overlay=True)
    assert len(overlay.axes) == 1
    assert "a: loss" in texts(overlay) and "b: loss (flat: not learning)" in texts(overlay)


@pytest.mark.parametrize("bad", [None, [], {}, {"a": "1, 2"}, {"a": [1.0, "x"]}, {1: [1.0]}])
def test_plot_losses_bad_input(bad):
    with pytest.raises(TypeError, match="list of floats|dict of label|strings"):
        plot_losses(bad)


def _report(**kw) -> gradlab.GradReport:
    pair = course.make_pair(**kw)
    x, y = course.batches(1)[0]
    loss = pair.criterion(y, pair.n_2(pair.n_1(x)))
    loss.backward()
    return grad_report(pair.names, loss)


def test_plot_grads_shows_cut_off_and_zero_gradients():
    cut = texts(plot_grads(_report(softmax=False, detach_inside=True)))
    assert any(t.startswith("no gradient") for t in cut)
    assert any("not reached by the loss" in t for t in cut)
    assert "n_1.linear_1.weight [10, 1]" in cut
    zero = texts(plot_grads(_report(softmax=True)))
    assert "all zero" in zero
    healthy = plot_grads(_report(softmax=False))
    assert not any(t in ("no gradient", "all zero") for t in texts(healthy))
    assert len(healthy.axes[0].patches) == 8


def test_plot_grads_bad_input():
    with pytest.raises(TypeError, match="GradReport"):
        plot_grads({"n_1": 1.0})


def test_plot_predictions():
    pair = course.train("joint", steps=2, softmax=False).pair
    found = texts(plot_predictions(pair))
    assert {"target y = 2x", "n_1(x)", "n_2(n_1(x))"} <= set(found)
    with pytest.raises(TypeError, match="Pair"):
        plot_predictions([pair.n_1])
    with pytest.raises(TypeError, match=r"\(N, 1\)"):
        plot_predictions({"n_1": pair.n_1}, x=torch.ones(3))


def test_plots_change_no_global_state(failing_tracker):
    rc = dict(matplotlib.rcParams)
    figures = plt.get_fignums()
    mine = plt.figure()
    timeline(failing_tracker)
    plot_losses({"a": [1.0, 0.5]})
    plot_grads(_report(softmax=False))
    assert plt.get_fignums() == [*figures, mine.number]  # ours are released; the caller's stays open
    assert plt.gcf() is mine
    assert dict(matplotlib.rcParams) == rc
    plt.close(mine)


def test_plot_grads_says_when_there_is_no_bar_to_draw():
    zero = plot_grads(_report(softmax=True))  # the softmax over one output: every gradient is zero
    assert any(t.startswith("no bars: every gradient is all zero") for t in texts(zero))
    assert all(p.get_width() == 0 for p in zero.axes[0].patches)
    pair = course.make_pair(softmax=False)
    untouched = texts(plot_grads(grad_report(pair.names)))  # no backward yet: every .grad is None
    assert any(t.startswith("no bars: no parameter has a gradient") for t in untouched)
    healthy = texts(plot_grads(_report(softmax=False)))
    assert not any(t.startswith("no bars") for t in healthy)


def test_plots_without_matplotlib_say_what_to_install(failing_tracker, monkeypatch):
    from gradlab import _DISTRIBUTION

    s = scenarios.fresh()
    loss = s.pair.criterion(s.y, s.pair.n_1(s.x))
    loss.backward()
    report = grad_report(s.names, loss)
    with gradlab.measure_memory("one step") as trace:
        trace.record()
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # as if matplotlib were not installed
    for draw, name in (
        (lambda: timeline(failing_tracker), "timeline()"),
        (lambda: plot_grads(report), "plot_grads()"),
        (lambda: gradlab.plot_memory([trace]), "plot_memory()"),
    ):
        with pytest.raises(ImportError, match=re.escape(f'pip install "{_DISTRIBUTION}[plots]"')) as info:
            draw()
        assert str(info.value).startswith(name)
        assert info.value.name == "matplotlib"
