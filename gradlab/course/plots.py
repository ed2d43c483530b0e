"""The course's plots: loss curves of training runs and predictions against ``y = 2x``.

Like :mod:`gradlab.plots`, each function returns a new ``matplotlib.figure.Figure``,
closed in pyplot's registry, and changes no global state; in Chinese its texts get a
CJK font (:func:`gradlab.plots.picture_fonts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import torch

from gradlab.i18n import _, _t
from gradlab.plots import RED, line_style, new_figure, picture_fonts

from .networks import Pair
from .training import TrainResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_losses", "plot_predictions"]


# -- losses -----------------------------------------------------------------------------------------


def _curves(name: str, value: object) -> tuple[list[tuple[str, list[float]]], str | None]:
    if isinstance(value, TrainResult):
        return [("loss_1", list(value.losses_1)), ("loss_2", list(value.losses_2))], value.error
    if (
        isinstance(value, Sequence)
        and not isinstance(value, (str, bytes))
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return [(_("loss"), [float(v) for v in value])], None
    raise TypeError(
        f"losses[{name!r}] is a {type(value).__name__}; pass a list of floats or a TrainResult, "
        "e.g. {'joint': gradlab.train('joint')}"
    )


def _flat(values: Sequence[float]) -> bool:
    if len(values) < 2:
        return False
    scale = max(1e-12, max(abs(v) for v in values))
    return (max(values) - min(values)) <= 1e-6 * scale


@picture_fonts()
def plot_losses(losses: Mapping[str, object], *, overlay: bool = False) -> Figure:
    """Loss curves of several training variants, one panel each (or all on one with ``overlay=True``).

    ``losses`` maps a label to a list of floats or to a :class:`TrainResult`
    (drawn as ``loss_1`` and ``loss_2``). A curve that does not move is labelled
    ``flat: not learning`` in red; a run stopped by an error says so.

    Example::

        >>> fig = plot_losses({"joint": train("joint"), "softmax": [0.5, 0.5, 0.5]})   # doctest: +SKIP
    """
    if not isinstance(losses, Mapping) or not losses:
        raise TypeError(
            "plot_losses() takes a dict of label to losses, e.g. "
            "{'joint': gradlab.train('joint'), 'no softmax': [0.9, 0.4, 0.1]}"
        )
    panels = []
    for name, value in losses.items():
        if not isinstance(name, str):
            raise TypeError(f"plot_losses() labels must be strings, got {name!r}")
        panels.append((name, *_curves(name, value)))
    cols = 1 if overlay else len(panels)
    fig, axes = new_figure(1, cols, (4.2 * cols if not overlay else 7.0, 3.4), sharey=not overlay)
    for i, (name, curves, error) in enumerate(panels):
        ax = axes[0][0 if overlay else i]
        notes = []
        for curve, values in curves:
            label = f"{name}: {curve}" if overlay else curve
            if _flat(values):
                label = _t("{label} (flat: not learning)", label=label)
                notes.append(_t("{curve} flat: not learning", curve=curve))
            if values:
                ax.plot(range(1, len(values) + 1), values, label=label, **line_style(len(ax.get_lines()), len(values)))
        if error is not None:
            first = error.split(";")[0].split(". ")[0]
            notes.append(_t("stopped: {error}", error=first if len(first) <= 60 else first[:57] + "..."))
        if not any(values for _, values in curves):
            notes.append(_("no step completed"))
        if not overlay:
            ax.set_title(name, fontsize=10)
        y = 0.95
        for note in notes:
            ax.text(
                0.03,
                y,
                note if not overlay else f"{name}: {note}",
                transform=ax.transAxes,
                color=RED,
                fontsize=8,
                va="top",
            )
            y -= 0.08
        ax.set_xlabel(_("step"))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="best")
    axes[0][0].set_ylabel(_("loss"))
    fig.tight_layout()
    return fig


# -- predictions ------------------------------------------------------------------------------------


@picture_fonts()
def plot_predictions(
    models: Pair | Mapping[str, Callable[[torch.Tensor], torch.Tensor]], x: torch.Tensor | None = None
) -> Figure:
    """Predictions against the target ``y = 2x`` of the course's data.

    ``models`` is a :class:`Pair` (drawn as ``n_1(x)`` and ``n_2(n_1(x))``, the
    chain trained in the course) or a dict of label to module/callable. ``x`` is
    an ``(N, 1)`` tensor (default: 50 points in [-3, 3]). Runs under ``no_grad``.

    Example::

        >>> fig = plot_predictions(train("joint").pair)   # doctest: +SKIP
    """
    if isinstance(models, Pair):
        pair = models
        models = {"n_1(x)": pair.n_1, "n_2(n_1(x))": lambda t: pair.n_2(pair.n_1(t))}
    if not isinstance(models, Mapping) or not models:
        raise TypeError(
            "plot_predictions() takes a Pair (e.g. gradlab.train('joint').pair) or a dict of label to "
            "network, e.g. {'n_1': n_1}"
        )
    for name, fn in models.items():
        if not isinstance(name, str) or not callable(fn):
            raise TypeError(f"plot_predictions() needs label -> network (callable), got {name!r}: {type(fn).__name__}")
    if x is None:
        x = torch.linspace(-3, 3, 50).unsqueeze(1)
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != 1:
        raise TypeError("x must be a tensor of shape (N, 1), e.g. torch.linspace(-3, 3, 50).unsqueeze(1)")
    fig, axes = new_figure(1, 1, (6.0, 3.6))
    ax = axes[0][0]
    xs = x.detach().flatten().tolist()
    ax.plot(xs, [2 * v for v in xs], color="black", linestyle=(0, (1, 1)), linewidth=2, label=_("target y = 2x"))
    with torch.no_grad():
        for name, fn in models.items():
            ax.plot(xs, fn(x).detach().flatten().tolist(), label=name, **line_style(len(ax.get_lines()) - 1, len(xs)))
    ax.set_xlabel("x")
    ax.set_ylabel(_("prediction"))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
