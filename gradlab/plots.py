"""Plots of gradlab's records with matplotlib: version timelines and gradient norms.

matplotlib is imported when a plot is made (``pip install gradlab[plots]``).
Each function takes records (a tracker's events, a :class:`GradReport`),
returns a new ``matplotlib.figure.Figure`` and changes no global state: no
rcParams, no style, no backend. The figure is closed in pyplot's registry before
it is returned, so a notebook shows it once (as the cell's value) and nothing
the caller created is touched.

The labels are in the language of :func:`gradlab.set_language`; in Chinese the
texts get a CJK font next to DejaVu Sans (:func:`picture_fonts`, NOTE [Fonts
for the language in effect]).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .events import Event
from .grads import GradReport
from .i18n import _, _t, language, set_language
from .notices import GradlabWarning

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["timeline", "plot_grads"]

RED, GREY, BLUE = "#cc0000", "#777777", "#1c4587"

#: Marker and line style per curve, so curves differ in greyscale print and for colour-blind readers too.
LINE_STYLES: tuple[tuple[str, str], ...] = (("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", "-"), ("x", "--"))


def line_style(index: int, points: int) -> dict[str, object]:
    """Matplotlib keyword arguments for the ``index``-th curve of ``points`` points."""
    marker, line = LINE_STYLES[index % len(LINE_STYLES)]
    return {"marker": marker, "linestyle": line, "markersize": 3, "markevery": max(1, points // 20)}


def needs_matplotlib(function: str) -> None:
    """Raise an ImportError that says what to install when matplotlib is missing (``function`` draws)."""
    try:
        import matplotlib.pyplot  # noqa: F401 - imported to see that it is there
    except ModuleNotFoundError as e:
        if not (e.name or "matplotlib").startswith("matplotlib"):
            raise  # matplotlib is there but one of its own dependencies is not: its own error says which
        from . import _DISTRIBUTION

        raise ImportError(
            _t(
                '{function} draws with matplotlib, which is not installed: pip install "{distribution}[plots]" '
                "(or pip install matplotlib)",
                function=function,
                distribution=_DISTRIBUTION,
            ),
            name="matplotlib",
        ) from e


def new_figure(rows: int, cols: int, size: tuple[float, float], **kw: Any) -> tuple[Figure, Any]:
    """A fresh figure and axes grid (``axes[row][col]``), already released from pyplot's registry."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False, **kw)
    plt.close(fig)
    return fig, axes


# -- fonts ------------------------------------------------------------------------------------------

# NOTE [Fonts for the language in effect]
# DejaVu Sans (matplotlib's default family, and drawing.FONT for Graphviz) has no Chinese glyphs:
# drawn with it alone, Chinese labels become empty boxes. In a language written with Han characters,
# a picture's texts get a CJK family AFTER DejaVu Sans: Latin text looks exactly as in English, and
# each glyph DejaVu lacks comes from the CJK font (matplotlib and Graphviz's pango both fall back
# glyph by glyph along the family list). matplotlib reads rcParams["font.family"] when a text is
# created, so the plotting functions create their figures inside a temporary rc_context and nothing
# global changes; in English they never enter it, so English pictures stay byte-identical.
# The family is looked up once per process in matplotlib's font list. matplotlib caches that list on
# disk the first time it runs, so a font installed afterwards (fonts-noto-cjk after pip install
# matplotlib) is not in it: the system's CJK font files are then added to the running font manager
# (FontManager.addfont; rcParams and the cache on disk are left alone). With no CJK font at all, the
# picture is made in English (the language is switched for the duration of the call) and gradlab
# warns once, naming the package to install, rather than drawing boxes without a word.

#: Families with Chinese glyphs, preferred first (Noto Sans CJK is Debian's fonts-noto-cjk).
CJK_FAMILIES: tuple[str, ...] = (
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Noto Sans SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "Noto Sans CJK HK",
    "Noto Sans CJK KR",
    "Source Han Sans CN",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "PingFang SC",
    "Hiragino Sans GB",
    "Microsoft YaHei",
    "SimHei",
    "Arial Unicode MS",
)
#: The Debian/Ubuntu package that provides the first of :data:`CJK_FAMILIES`.
CJK_PACKAGE = "fonts-noto-cjk"
#: Text font of the pictures; the CJK family comes after it.
FONT = "DejaVu Sans"

_CJK_FILE = re.compile(r"cjk|sourcehan|wqy|wenquanyi|droidsansfallback|simhei|msyh|pingfang|hiragino", re.I)
#: Languages written with Han characters (language codes before the ``_``).
_HAN_LANGUAGES = ("zh",)


def needs_cjk_font() -> bool:
    """Whether the language in effect is written with Han characters (``zh_CN``), so pictures need a CJK font."""
    return language().split("_", 1)[0].lower() in _HAN_LANGUAGES


def _installed_cjk_family() -> str | None:
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    return next((family for family in CJK_FAMILIES if family in known), None)


@cache
def cjk_family() -> str | None:
    """The first of :data:`CJK_FAMILIES` matplotlib can draw with, or None; looked up once per process.

    Example::

        >>> cjk_family()                         # doctest: +SKIP
        'Noto Sans CJK SC'
    """
    found = _installed_cjk_family()
    if found is None:  # NOTE [Fonts for the language in effect]: installed after matplotlib's cache was made
        from matplotlib import font_manager

        for path in font_manager.findSystemFonts():
            if _CJK_FILE.search(Path(path).name):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):  # pragma: no cover - an unreadable font file
                    continue
        found = _installed_cjk_family()
    return found


@cache
def _warn_no_cjk_font() -> None:
    """Warn, once per process, that pictures are drawn in English for want of a CJK font."""
    warnings.warn(
        _t(
            "no font with Chinese glyphs is installed, so gradlab draws its pictures with English labels; "
            "install one (Debian/Ubuntu: {command}) and restart the kernel",
            command=f"sudo apt-get install {CJK_PACKAGE}",
        ),
        GradlabWarning,
        stacklevel=2,
    )


@contextmanager
def _in_english() -> Iterator[None]:
    before = language()
    set_language("en")
    try:
        yield
    finally:
        set_language(before)


@contextmanager
def picture_language() -> Iterator[str | None]:
    """Inside: the words of a picture are in a language its fonts can show; yields the CJK family to add.

    English (or any language written without Han characters): changes nothing,
    yields None. Chinese: yields the CJK family (:func:`cjk_family`), or, when
    none is installed, warns once (:class:`gradlab.GradlabWarning`, naming
    ``fonts-noto-cjk``), switches the words to English inside the block and
    yields None. NOTE [Fonts for the language in effect].
    """
    if not needs_cjk_font():
        yield None
        return
    family = cjk_family()
    if family is not None:
        yield family
        return
    _warn_no_cjk_font()
    with _in_english():
        yield None


@contextmanager
def picture_fonts(*families: str) -> Iterator[None]:
    """matplotlib texts created inside can show the language in effect: a temporary ``font.family``.

    In Chinese the texts' family is ``families`` (default DejaVu Sans) followed by
    the CJK family; in English nothing changes. The rcParams are restored on
    exit (``matplotlib.rc_context``); a text keeps the family it was created
    with, so a figure made inside renders the same later. Also a decorator.

    Example::

        >>> with picture_fonts():                # doctest: +SKIP
        ...     fig, axes = new_figure(1, 1, (4.0, 3.0))
    """
    with picture_language() as cjk:
        if cjk is None:
            yield
            return
        import matplotlib

        with matplotlib.rc_context({"font.family": [*(families or (FONT,)), cjk]}):
            yield


# -- timeline ---------------------------------------------------------------------------------------


def _events_of(tracker: object) -> list[Event]:
    usage = "pass the tracker of `with gradlab.track(names=...) as tracker:` (or a list of its events)"
    if hasattr(tracker, "events"):
        events = list(tracker.events)
    elif isinstance(tracker, (list, tuple)):
        events = list(tracker)
    else:
        raise TypeError(f"timeline() takes a gradlab tracker, not {type(tracker).__name__}; {usage}")
    if not all(isinstance(e, Event) for e in events):
        raise TypeError(f"timeline() found something other than gradlab events; {usage}")
    return events


def _error_text(e: Event, versions: dict[str, int], saved_at: dict[str, int]) -> tuple[str, list[str]]:
    """The failing backward's label and the tensors it names, from the event or from the versions seen."""
    if e.version_before is not None and e.version_after is not None:
        text = _t(
            "expected version {expected}, is at version {found}", expected=e.version_before, found=e.version_after
        )
        return text, [e.tensor] if e.tensor else []
    stale = [t for t in saved_at if versions.get(t, saved_at[t]) != saved_at[t]]
    if stale:
        t = stale[0]
        return _t("expected version {expected}, is at version {found}", expected=saved_at[t], found=versions[t]), stale
    return _("backward raised"), []


def timeline(tracker: object, tensors: Sequence[str] | None = None) -> Figure:
    """The version counter of each watched tensor over a :func:`gradlab.track` block.

    One row per tensor: a dot where it was saved for backward (at that version),
    a step up at each in-place write (labelled with the op, e.g. ``Adam.step()``,
    and the line), grey vertical lines at each ``backward()`` and a red one at a
    backward that raised, labelled ``expected version 1, is at version 2``.
    ``tensors`` picks names (default: every tensor in the events; views are
    shown as their base tensor).

    Example::

        >>> import torch
        >>> from gradlab import track
        >>> lin = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        >>> with track(names={"lin": lin}) as tracker:
        ...     loss = lin(torch.ones(4, 2)).sum()
        ...     loss.backward(retain_graph=True)
        ...     opt.step()
        >>> fig = timeline(tracker)              # doctest: +SKIP
    """
    events = _events_of(tracker)
    # Views share their base's version counter: rows are keyed by the user's name
    # (``w (transposed view)`` is plotted as ``w``), which each event carries as data.
    bases = {e.tensor: e.given or e.tensor for e in events if e.tensor}
    names: list[str] = []
    for e in events:
        if e.kind in ("saved", "write") and e.tensor and bases[e.tensor] not in names:
            names.append(bases[e.tensor])
    if tensors is not None:
        if (
            isinstance(tensors, str)
            or not isinstance(tensors, Sequence)
            or not all(isinstance(t, str) for t in tensors)
        ):
            example = names[0] if names else "model.weight"
            raise TypeError(f"tensors= must be a list of tensor names as the tracker shows them, e.g. [{example!r}]")
        missing = [t for t in tensors if bases.get(t, t) not in names]
        if missing:
            raise ValueError(
                f"tensors {missing} do not appear in the tracker's events; "
                f"pick from {names or 'none (were the tensors named in track(names=...)?)'}"
            )
        names = [bases.get(t, t) for t in tensors]
    if not names:
        raise ValueError(
            "the tracker saw no named tensor being saved or modified; run the forward, step and backward "
            "inside `with gradlab.track(names=...) as tracker:`, naming your modules by the variables that "
            "hold them (names={'net': net} for a module held in net)"
        )
    needs_matplotlib("timeline()")
    with picture_fonts():
        return _draw_timeline(events, names, bases)


def _draw_timeline(events: list[Event], names: list[str], bases: dict[str, str]) -> Figure:
    fig, axes = new_figure(len(names), 1, (9.0, 1.2 + 1.5 * len(names)), sharex=True)
    xs = [e.index for e in events]
    x_end = (max(xs) if xs else 0) + 1
    versions: dict[str, int] = {}
    saved_at: dict[str, int] = {}
    rows = {name: axes[i][0] for i, name in enumerate(names)}
    steps: dict[str, tuple[list[float], list[int]]] = {name: ([], []) for name in names}
    for e in events:
        name = bases[e.tensor] if e.tensor else None
        if e.kind == "saved" and name is not None and e.version_after is not None:
            saved_at[name] = e.version_after
            versions.setdefault(name, e.version_after)
            if name in rows:
                ax = rows[name]
                ax.plot([e.index], [e.version_after], "o", color=BLUE, zorder=3)
                ax.annotate(
                    _t("saved (v{version})", version=e.version_after),
                    (e.index, e.version_after),
                    textcoords="offset points",
                    xytext=(4, 6),
                    fontsize=8,
                    color=BLUE,
                )
        elif e.kind == "write" and name is not None and e.version_after is not None:
            before = e.version_before if e.version_before is not None else versions.get(name, 0)
            versions[name] = e.version_after
            if name in rows:
                xs_, ys_ = steps[name]
                if not xs_:
                    xs_.append(events[0].index - 0.5)
                    ys_.append(before)
                xs_.append(e.index)
                ys_.append(e.version_after)
                ax = rows[name]
                ax.plot([e.index], [e.version_after], "^", color=RED, zorder=3)
                where = f"\n{e.where}" if e.where else ""
                ax.annotate(
                    f"{e.op}: v{before} -> v{e.version_after}{where}",
                    (e.index, e.version_after),
                    textcoords="offset points",
                    xytext=(4, -22),
                    fontsize=8,
                    color=RED,
                )
        elif e.kind == "backward":
            for ax in rows.values():
                ax.axvline(e.index, color=GREY, linestyle="--", linewidth=1)
            top = axes[0][0]
            top.annotate(
                e.op,
                (e.index, 1),
                xycoords=("data", "axes fraction"),
                textcoords="offset points",
                xytext=(3, -10),
                fontsize=8,
                color=GREY,
            )
        elif e.kind == "error":
            text, stale = _error_text(e, versions, saved_at)
            for ax in rows.values():
                ax.axvline(e.index, color=RED, linewidth=2)
            label_ax = rows.get(bases.get(stale[0], stale[0]), axes[0][0]) if stale else axes[0][0]
            # Above the row, right of its name: inside the axes it crossed the version line, the
            # backward() line and the label of the write that caused it (the print review's P6).
            label_ax.set_title(
                _t("backward failed:\n{reason}", reason=text).replace(":\n", ": ").replace("\n", ""),
                loc="right",
                fontsize=9,
                color=RED,
                fontweight="bold",
            )
    for name, ax in rows.items():
        xs_, ys_ = steps[name]
        start = versions.get(name, saved_at.get(name, 0)) if not xs_ else None
        if xs_:
            xs_.append(x_end)
            ys_.append(ys_[-1])
            ax.step(xs_, ys_, where="post", color=BLUE, linewidth=1.5)
        elif start is not None:
            ax.plot([xs[0] - 0.5 if xs else 0, x_end], [start, start], color=BLUE, linewidth=1.5)
        low = min([*ys_, saved_at.get(name, 0), versions.get(name, 0)])
        high = max([*ys_, saved_at.get(name, 0), versions.get(name, 0)])
        ax.set_ylim(low - 0.8, high + 0.8)
        ax.set_yticks(range(low, high + 1))
        ax.set_ylabel(_("version"), fontsize=8)
        ax.set_title(name, loc="left", fontsize=10)
    bottom = axes[-1][0]
    bottom.set_xlim((xs[0] if xs else 0) - 0.5, x_end)
    bottom.set_xticks(xs)
    bottom.set_xlabel(_("tracker event"))
    fig.suptitle(_("version counters of the saved tensors"), fontsize=11)
    fig.tight_layout()
    return fig


# -- gradients --------------------------------------------------------------------------------------


def _nothing_to_learn(statuses: frozenset[str]) -> str:
    """What plot_grads writes when no parameter has a nonzero gradient (by the statuses seen)."""
    if statuses == {"zero"}:
        return _("no bars: every gradient is all zero,\nso they cannot train any parameter")
    if statuses == {"none"}:
        return _("no bars: no parameter has a gradient (.grad is None):\nno backward reached them")
    return _("no bars: every gradient is all zero or None,\nso they cannot train any parameter")


def plot_grads(report: GradReport) -> Figure:
    """One horizontal bar per parameter: its gradient norm; ``no gradient`` and ``all zero`` in red.

    A layer cut off by a ``.detach()`` (``.grad`` is None) and a layer whose
    gradient is all zeros (e.g. behind a softmax over one output) stand out.
    When no parameter has a nonzero gradient there is no bar to draw, and the
    picture says so in a box (``no bars: every gradient is all zero, ...``).

    Example::

        >>> fig = plot_grads(grad_report({"n_1": n_1, "n_2": n_2}, loss))   # doctest: +SKIP
    """
    if not isinstance(report, GradReport):
        raise TypeError(
            f"plot_grads() takes the GradReport of gradlab.grad_report(names, loss), not {type(report).__name__}"
        )
    if not report.rows:
        raise ValueError(
            "the GradReport has no rows; pass grad_report(names, loss) after a backward, naming your modules "
            "(names={'net': net} for a module held in net)"
        )
    needs_matplotlib("plot_grads()")
    with picture_fonts():
        return _draw_grads(report)


def _draw_grads(report: GradReport) -> Figure:
    rows = list(report.rows)
    fig, axes = new_figure(1, 1, (7.5, 0.9 + 0.38 * len(rows)))
    ax = axes[0][0]
    ys = list(range(len(rows)))[::-1]
    norms = [r.norm if r.status == "ok" and r.norm is not None else 0.0 for r in rows]
    colors = [BLUE if r.status == "ok" else RED for r in rows]
    ax.barh(ys, norms, color=colors, height=0.6)
    top = max(norms) if any(norms) else 1.0
    for y, r, n in zip(ys, rows, norms):
        if r.status == "none":
            text = _("no gradient")
        elif r.status == "zero":
            text = _("all zero")
        else:
            text = f"{n:.3g}"
        if r.reached is False:
            text = _t("{gradient} (not reached by the loss)", gradient=text)
        ax.text(
            n + 0.01 * top,
            y,
            text,
            va="center",
            fontsize=8,
            color=BLUE if r.status == "ok" else RED,
            fontweight="normal" if r.status == "ok" else "bold",
        )
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r.name} {list(r.shape)}" for r in rows], fontsize=8)
    ax.set_xlim(0, top * 1.35)
    ax.set_xlabel(_("gradient norm"))
    if not report.learning:  # no bar has a length: say so in the picture, not with an empty chart
        ax.set_xticks([0])
        ax.text(
            0.62,
            0.5,
            _nothing_to_learn(frozenset(r.status for r in rows)),
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=9,
            color=RED,
            fontweight="bold",
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": RED},
        )
    ax.set_title(_("gradient per parameter"), fontsize=10)
    fig.tight_layout()
    return fig
