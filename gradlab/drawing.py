"""Draw the backward graph: DOT text from :func:`gradlab.collect`'s records, rendered by Graphviz.

:func:`draw` collects (once) and returns a :class:`GraphView`; the view only
renders those records, as DOT text (:attr:`GraphView.source`), as a text tree
(:meth:`GraphView.text`) or, when Graphviz's ``dot`` is installed, as SVG/PNG/PDF.
Its words follow :func:`gradlab.set_language`; in Chinese the pictures name a CJK
font after DejaVu Sans (NOTE [Fonts for the language in effect] in :mod:`gradlab.plots`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from pathlib import Path

import torch

from .graph import Graph, GraphNode, collect, collect_active, direct_modules, module_of_nodes, roots_of
from .i18n import _, _t
from .names import NamesLike
from .plots import FONT, picture_language
from .recorder import Scope
from .saved import SavedTensor

__all__ = ["GraphView", "draw", "INSTALL_GRAPHVIZ", "DEFAULT_MAX_NODES", "install_graphviz"]

#: The commands that install Graphviz, one per package manager.
_INSTALL_COMMANDS = "sudo apt-get install graphviz | brew install graphviz | conda install -c conda-forge graphviz"

#: The one line shown wherever a picture would need Graphviz's ``dot`` (English; :func:`install_graphviz`
#: gives it in the language in effect).
INSTALL_GRAPHVIZ = "Install Graphviz to see this graph drawn: " + _INSTALL_COMMANDS


def install_graphviz() -> str:
    """The line that says how to install Graphviz, in the language in effect.

    Example::

        >>> install_graphviz() == INSTALL_GRAPHVIZ      # in English
        True
    """
    return _t("Install Graphviz to see this graph drawn: {commands}", commands=_INSTALL_COMMANDS)


#: Above this many nodes a notebook shows the summary line only (render explicitly with .svg()/.save()).
DEFAULT_MAX_NODES = 400

MONO_FONT = "DejaVu Sans Mono"
COLLAPSE_MODES = (False, "module")

# Colours: one meaning each, repeated in the legend.
_PARAM, _OP, _CUSTOM, _SAVED = "#cfe2f3", "#eeeeee", "#fff2cc", "#fce5cd"
_STALE, _STALE_FILL, _OUT, _OUT_FILL, _GREY, _CUT = "#cc0000", "#f4cccc", "#1c4587", "#c9daf8", "#999999", "#b45f06"

_MAX_INDENT = 24
_PNG_TREE_LINES = 60


@dataclass(frozen=True)
class _Output:
    """One output handed to :func:`draw`: its label (None: ``output`` or ``output <number>``), root node id, shape."""

    label: str | None
    node_id: int
    shape: tuple[int, ...]
    number: int | None = None

    @property
    def text(self) -> str:
        """The label, or the default one in the language in effect."""
        if self.label is not None:
            return self.label
        return _("output") if self.number is None else _t("output {number}", number=self.number)


# -- collecting -------------------------------------------------------------------------------------


def _outputs_of(output_or_outputs: object) -> tuple[list[torch.Tensor], list[str | None], list[int | None]]:
    """Split draw()'s first argument into tensors, their labels (None: a default) and numbers; validates like collect()."""
    what = "draw() output"
    if isinstance(output_or_outputs, Mapping):
        if not output_or_outputs:
            raise ValueError("draw() got an empty dict; pass e.g. {'loss_1': loss_1, 'loss_2': loss_2}")
        for key in output_or_outputs:
            if not isinstance(key, str):
                raise TypeError(
                    f"draw() dict keys must be strings (the labels), got {key!r}; "
                    "pass e.g. {'loss_1': loss_1, 'loss_2': loss_2}"
                )
        tensors = list(output_or_outputs.values())
        labels: list[str | None] = list(output_or_outputs)
        numbers: list[int | None] = [None] * len(tensors)
    elif isinstance(output_or_outputs, torch.Tensor):
        tensors, labels, numbers = [output_or_outputs], [None], [None]
    elif isinstance(output_or_outputs, Sequence) and not isinstance(output_or_outputs, (str, bytes)):
        if not output_or_outputs:
            raise ValueError("draw() got an empty list; pass a tensor such as the loss, or e.g. [loss_1, loss_2]")
        tensors = list(output_or_outputs)
        labels, numbers = [None] * len(tensors), list(range(len(tensors)))
    else:
        roots_of(output_or_outputs, what)  # raises its TypeError
        raise AssertionError("unreachable")  # pragma: no cover
    roots_of(tensors, what)
    return tensors, labels, numbers


def draw(
    output_or_outputs: torch.Tensor | Sequence[torch.Tensor] | Mapping[str, torch.Tensor],
    names: NamesLike = None,
    *,
    collapse: bool | str = False,
    tracker: Scope | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> GraphView:
    """Draw the backward graph of a loss (or of several losses at once, so the shared part shows).

    ``output_or_outputs`` is a tensor, a list of tensors, or a dict of label to
    tensor (``{"loss_1": loss_1, "loss_2": loss_2}``: the labels appear on the
    outputs). ``names`` names parameters (``{"n_1": n_1}``) as in :func:`gradlab.collect`.
    The picture shows parameters (blue, name and shape), operations (grey,
    e.g. ``Addmm``) and, stacked under each operation, the tensors it saved for
    backward as small orange boxes with their version (``v1``): one modified in
    place in red with a double frame (``v1 -> v2``, ``by Adam.step()``), buffers
    freed by a backward greyed and dashed, inputs without grad history fed to a
    layer (data, or a ``.detach()``: the gradient stops there) dotted; and a legend.
    The data path runs straight down with the parameters beside it, so the
    course's two-network graph fits a notebook column (about 800 px wide).

    ``collapse="module"`` groups nodes into nested boxes by module (``n_1`` >
    ``n_1.linear_1``): parameters by their name, an op by the parameters it uses
    directly, an op without parameters (ReLU, softmax) by its neighbours; loss ops
    stay outside. Nothing is hidden, so the same saved tensors stay visible.

    ``tracker`` defaults to the active :func:`gradlab.track` tracker (it fills in who
    modified a tensor and where). ``max_nodes`` bounds what a notebook renders
    automatically: above it, the cell shows the summary line; ``.svg()``,
    ``.png()`` and ``.save()`` still render on request. Drawing reads only: it
    never runs backward, frees a buffer or writes ``.grad``.

    Example::

        >>> x = torch.ones(3, requires_grad=True)
        >>> view = draw({"y": x.sigmoid().sum()}, names={"x": x})
        >>> view
        autograd graph: 3 nodes, 1 saved tensors
        >>> view.source.splitlines()[0]
        'digraph autograd {'
    """
    if collapse is None:
        collapse = False
    if collapse is True or collapse not in COLLAPSE_MODES:
        raise ValueError(
            f"collapse must be False or 'module', got {collapse!r}; pass collapse='module' to group nodes by module"
        )
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int):
        raise TypeError(f"max_nodes must be an int, got {type(max_nodes).__name__}; pass e.g. max_nodes=400")
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be at least 1, got {max_nodes}")
    tensors, labels, numbers = _outputs_of(output_or_outputs)
    with picture_language():  # the records' descriptions in words the picture can show
        if tracker is None:
            graph = collect_active(tensors, names)[0]
        else:
            graph = collect(tensors, tracker.namer(names), tracker=tracker)
    outputs = tuple(
        _Output(label, node_id, tuple(t.shape), number)
        for label, node_id, t, number in zip(labels, graph.outputs, tensors, numbers)
    )
    return GraphView(graph, outputs, collapse, max_nodes)


# -- rendering: DOT ---------------------------------------------------------------------------------


# NOTE [Fast DOT text]
# draw() must stay at most as slow as torchviz.make_dot on a 900-node graph (benchmarks/run.py).
# Only labels vary per node, so each line is the quoted label plus an attribute tail rendered
# once per style (_tail, cached); _q escapes only when a label holds a quote or a backslash.
def _q(text: str) -> str:
    """A DOT double-quoted string."""
    if "\\" in text or '"' in text:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n") + '"'


_Style = tuple[tuple[str, str], ...]


@cache
def _tail(style: _Style) -> str:
    """``, k1="v1", k2="v2"``: the attributes after a label, rendered once per style."""
    return "".join(f", {k}={_q(v)}" for k, v in style)


def _attrs(**kw: object) -> str:
    return "[" + ", ".join(f"{k}={_q(str(v))}" for k, v in kw.items()) + "]"


def _labelled(label: str, style: _Style) -> str:
    """``[label="...", k1="v1", ...]``, the same text as ``_attrs(label=label, k1=v1, ...)``."""
    return f"[label={_q(label)}{_tail(style)}]"


# One style per meaning; _legend repeats them in its own entries.
_PARAM_STYLE: _Style = (("fillcolor", _PARAM),)
_OP_STYLE: _Style = (("fillcolor", _OP),)
_CUSTOM_STYLE: _Style = (("fillcolor", _CUSTOM),)
_ROOT: _Style = (("color", _OUT), ("penwidth", "2"))

#: Saved-tensor labels wrap at about this many characters (a name in brackets is never split).
_WRAP = 28
#: Edge weight of the data path (op to op): kept straight and short, parameters beside it.
_DATA_WEIGHT = "4"


@dataclass(frozen=True)
class _Look:
    """How one saved tensor's cell is drawn: fill, border colour and line, text colour, double frame."""

    fill: str
    border: str
    line: str = ""  # "" (solid), "dashed" or "dotted"
    text: str | None = None
    double: bool = False


# NOTE [Saved tensors told apart without colour]
# Greyscale print and colour-blind readers (#18): each status differs from an ok saved tensor
# (thin solid frame) by more than its colour. Modified in place: a double frame and bold text;
# freed by a backward: a dashed frame and grey text; without grad history (data or .detach()):
# a dotted frame; unknown: dashed, "v?". The legend draws its entries with the same looks.
_SAVED_LOOK = _Look(_SAVED, _GREY)
_STALE_LOOK = _Look(_STALE_FILL, _STALE, text=_STALE, double=True)
_FREED_LOOK = _Look("white", _GREY, line="dashed", text=_GREY)
_UNKNOWN_LOOK = _Look("white", _GREY, line="dashed")
_CUT_LOOK = _Look("white", _CUT, line="dotted", text=_CUT)


def _h(text: str) -> str:
    """Text for an HTML-like label: escaped, line breaks as ``<BR/>``."""
    if "&" in text or "<" in text or ">" in text or '"' in text:
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return text.replace("\n", "<BR/>")


@cache
def _cell_parts(look: _Look) -> tuple[str, str]:
    """The opening and closing HTML of a saved tensor's table cell (rendered once per look)."""
    line = f' STYLE="{look.line}"' if look.line else ""
    font = '<FONT POINT-SIZE="9"' + (f' COLOR="{look.text}"' if look.text else "") + ">"
    if look.double:
        inner = (
            f'<TABLE BORDER="1" COLOR="{look.border}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" '
            f'BGCOLOR="{look.fill}"><TR><TD>'
        )
        return (
            f'<TD BORDER="1" COLOR="{look.border}" CELLPADDING="1" BGCOLOR="white">{inner}{font}<B>',
            "</B></FONT></TD></TR></TABLE></TD>",
        )
    return f'<TD BORDER="1" COLOR="{look.border}" BGCOLOR="{look.fill}"{line}>{font}', "</FONT></TD>"


def _cell(text: str, look: _Look) -> str:
    start, end = _cell_parts(look)
    return f"{start}{_h(text)}{end}"


def _shape(shape: tuple[int, ...] | None) -> str:
    return "?" if shape is None else str(list(shape))


def _is_cut(s: SavedTensor, direct: Mapping[int, str]) -> bool:
    """A saved input without grad history (``requires_grad`` False when saved) fed to an op that uses
    a module's parameters: data, or a ``.detach()``; the gradient stops there."""
    return s.requires_grad is False and s.status == "ok" and s.node_id in direct


def _described(s: SavedTensor) -> str:
    """``mat1 = output of Relu [10, 10]``; the shape is added when the name does not say it."""
    shape = _shape(s.shape)
    return f"{s.attribute} = {s.name}" + ("" if shape in s.name else f" {shape}")


@lru_cache(maxsize=4096)
def _wrap(text: str, width: int = _WRAP) -> str:
    """Break ``text`` into lines of about ``width`` characters between words; ``(...)`` and ``[...]`` stay whole."""
    if len(text) <= width:
        return text
    words: list[str] = []
    depth = 0
    for part in text.split(" "):
        if depth > 0 and words:
            words[-1] += " " + part
        else:
            words.append(part)
        if "(" in part or "[" in part or ")" in part or "]" in part:
            depth += part.count("(") + part.count("[") - part.count(")") - part.count("]")
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def _saved_label(s: SavedTensor, cut: bool) -> tuple[str, _Look]:
    if s.status == "freed":
        label = _t("{attribute}: freed", attribute=s.attribute)
        if s.where:
            label += "\n" + _t("by the backward at {where}", where=s.where)
        return label, _FREED_LOOK
    head = _wrap(_described(s))
    if s.status == "modified_in_place":
        label = f"{head}\nv{s.saved_version} -> v{s.current_version}"
        if s.modified_by:
            label += "\n" + _t("by {op}", op=s.modified_by)
        if s.where:
            label += "\n" + _t("at {where}", where=s.where)
        return label, _STALE_LOOK
    if s.status == "unknown":
        return f"{head}\nv?", _UNKNOWN_LOOK
    if cut:
        return f"{head}\nv{s.saved_version}\n" + _("no grad history\n(data or .detach())"), _CUT_LOOK
    return f"{head}\nv{s.saved_version}", _SAVED_LOOK


def _node_text(n: GraphNode) -> tuple[str, _Style]:
    if n.kind == "leaf":
        label = (
            n.label if n.given is None else f"{n.label}\n{_shape(n.shape)}"
        )  # an unnamed leaf ("leaf [3]") shows it already
        return label, _PARAM_STYLE
    if n.kind == "custom":
        return f"{n.label}\n" + _("(custom Function)"), _CUSTOM_STYLE
    return n.label, _OP_STYLE


def _node_line(n: GraphNode, roots: set[int], cells: Sequence[str] = ()) -> str:
    """A node; one that saved tensors is a small table: the op on top, its saved tensors stacked under it."""
    label, style = _node_text(n)
    if not cells:
        if n.id in roots:
            style += _ROOT
        return f"n{n.id} {_labelled(label, style)};"
    frame = f' COLOR="{_OUT}" BORDER="2"' if n.id in roots else ' BORDER="1"'
    head = f'<TR><TD STYLE="rounded" BGCOLOR="{dict(style)["fillcolor"]}"{frame}>{_h(label)}</TD></TR>'
    rows = "".join(f"<TR>{c}</TR>" for c in cells)
    table = f'<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="3">{head}{rows}</TABLE>'
    return f'n{n.id} [shape="plain", style="", label=<{table}>];'


def _plain_side(graph: Graph) -> set[int]:
    """Parameters and the single-input ops right after them (``T`` of a weight): drawn beside the data path."""
    by_id = {n.id: n for n in graph.nodes}
    side: dict[int, bool] = {}
    for start in by_id:
        chain = [start]
        while chain[-1] not in side:
            n = by_id[chain[-1]]
            if n.kind == "leaf" or len(n.next_ids) != 1:
                side[n.id] = n.kind == "leaf"
            else:
                chain.append(n.next_ids[0])
        known = side[chain[-1]]
        for node_id in chain:
            side[node_id] = known
    return {i for i, s in side.items() if s}


def _legend(statuses: set[str], has_cut: bool, has_outputs: bool) -> str:
    """One node: a table of what each look means, each entry drawn the way the graph draws it."""
    parameter, operation = _h(_("parameter\n(name, shape)")), _h(_("operation\n(backward node)"))
    rows = [
        f'<TD STYLE="rounded" BORDER="1" COLOR="black" BGCOLOR="{_PARAM}">{parameter}</TD>',
        f'<TD STYLE="rounded" BORDER="1" COLOR="black" BGCOLOR="{_OP}">{operation}</TD>',
        _cell(_("saved tensor, under the\noperation that saved it\n(shape, version)"), _SAVED_LOOK),
    ]
    if "modified_in_place" in statuses:
        rows.append(_cell(_("modified in place\nbackward will fail"), _STALE_LOOK))
    if "freed" in statuses:
        rows.append(_cell(_("freed by a backward\n(normal afterwards)"), _FREED_LOOK))
    if has_cut:
        rows.append(_cell(_("input without grad history\n(gradient stops here)"), _CUT_LOOK))
    if has_outputs:
        rows.append(f'<TD STYLE="rounded" BORDER="2" COLOR="{_OUT}" BGCOLOR="{_OUT_FILL}">{_h(_("output"))}</TD>')
    table = (
        f'<TABLE BORDER="1" STYLE="dashed" COLOR="{_GREY}" CELLBORDER="0" CELLSPACING="4" CELLPADDING="3">'
        f'<TR><TD><FONT POINT-SIZE="10">{_h(_("legend"))}</FONT></TD></TR>'
        + "".join(f"<TR>{r}</TR>" for r in rows)
        + "</TABLE>"
    )
    return f'  legend [shape="plain", style="", fontsize="9", label=<{table}>];'


def to_dot(graph: Graph, outputs: Sequence[_Output] = (), collapse: bool | str = False) -> str:
    """DOT text for ``graph``: identical for identical records (node ids ``n0, n1, ...``).

    Arrows point the way data flowed forward (parameters at the top, the loss at
    the bottom), as in ``torchviz.make_dot``; gradients flow against them. The
    tensors an operation saved for backward are stacked under it, in one box
    with the operation, so a two-network graph stays narrow; the edges of the
    data path are weighted so it runs straight down, with parameters beside it.
    In Chinese the font is a list, DejaVu Sans then a CJK family (NOTE [Fonts for
    the language in effect] in :mod:`gradlab.plots`); in English it is DejaVu Sans.
    """
    with picture_language() as cjk:
        return _dot_text(graph, outputs, collapse, FONT if cjk is None else f"{FONT},{cjk}")


def _dot_text(graph: Graph, outputs: Sequence[_Output], collapse: bool | str, font: str) -> str:
    roots = {o.node_id for o in outputs} | set(graph.outputs)
    direct = direct_modules(graph)
    module = module_of_nodes(graph) if collapse == "module" else {}
    body: dict[str, list[str]] = {}  # module path ("" = top level) -> lines

    statuses: set[str] = set()
    has_cut = False
    cells: dict[int, list[str]] = {}
    for s in graph.saved:
        cut = _is_cut(s, direct)
        has_cut = has_cut or cut
        statuses.add(s.status)
        label, look = _saved_label(s, cut)
        cells.setdefault(s.node_id, []).append(_cell(label, look))
    for n in graph.nodes:
        body.setdefault(module.get(n.id, ""), []).append(_node_line(n, roots, cells.get(n.id, ())))

    lines = [
        "digraph autograd {",
        f"  graph {_attrs(fontname=font, rankdir='TB', nodesep='0.25', ranksep='0.3')};",
        f"  node {_attrs(fontname=font, fontsize='11', shape='box', style='rounded,filled', height='0.3')};",
        f"  edge {_attrs(fontname=font, fontsize='9', arrowsize='0.7')};",
    ]
    lines.extend("  " + line for line in body.get("", []))
    # Nested clusters, parents before children, siblings sorted by name.
    paths = sorted({p for m in body if m for p in _prefixes(m)})
    open_paths: list[str] = []
    for path in paths:
        while open_paths and not path.startswith(open_paths[-1] + "."):
            open_paths.pop()
            lines.append("  " * (len(open_paths) + 1) + "}")
        indent = "  " * (len(open_paths) + 1)
        lines.append(f"{indent}subgraph {_q('cluster_' + path)} {{")
        lines.append(f"{indent}  graph {_attrs(label=path, fontsize='10', style='rounded', color=_GREY)};")
        lines.extend(f"{indent}  {line}" for line in body.get(path, []))
        open_paths.append(path)
    while open_paths:
        open_paths.pop()
        lines.append("  " * (len(open_paths) + 1) + "}")

    side = _plain_side(graph)
    data = f' [weight="{_DATA_WEIGHT}"]'
    lines.extend(f"  n{m} -> n{n.id}{'' if m in side else data};" for n in graph.nodes for m in n.next_ids)
    for i, o in enumerate(outputs):
        label = o.text + "\n" + _shape(o.shape)
        out = _attrs(label=label, shape="ellipse", style="filled,bold", color=_OUT, fillcolor=_OUT_FILL)
        lines.append(f"  o{i} {out};")
        lines.append(f"  n{o.node_id} -> o{i} {_attrs(color=_OUT, penwidth='2')};")
    lines.append(_legend(statuses, has_cut, bool(outputs)))
    if outputs:  # the legend below the first output, where the picture has room, not beside it
        lines.append(f"  o0 -> legend {_attrs(style='invis')};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


# -- rendering: text tree ---------------------------------------------------------------------------


def _saved_text(s: SavedTensor, cut: bool) -> str:
    if s.status == "freed":
        if s.where:
            return _t("saved {attribute}: freed by the backward at {where}", attribute=s.attribute, where=s.where)
        return _t("saved {attribute}: freed", attribute=s.attribute)
    tensor = _described(s)
    if s.status == "modified_in_place":
        versions = f"v{s.saved_version} -> v{s.current_version}"
        parts = [_t("saved {tensor}, {versions} MODIFIED IN PLACE", tensor=tensor, versions=versions)]
        if s.modified_by:
            parts.append(_t("by {op}", op=s.modified_by))
        if s.where:
            parts.append(_t("at {where}", where=s.where))
        return " ".join(parts)
    if s.status == "unknown":
        return _t("saved {tensor}, version unknown", tensor=tensor)
    text = _t("saved {tensor}, {version}", tensor=tensor, version=f"v{s.saved_version}")
    if cut:
        text += "  <- " + " ".join(_("no grad history\n(data or .detach())").split("\n"))
    return text


def to_text(graph: Graph, outputs: Sequence[_Output] = ()) -> str:
    """The graph as an indented tree from the outputs down to the parameters.

    A node reached a second time is written once and then referred to by id
    (``n4 Addmm (shown above)``). Iterative; indentation stops growing after
    24 levels, so a 20,000-node chain stays readable line by line.
    """
    by_id = {n.id: n for n in graph.nodes}
    saved: dict[int, list[SavedTensor]] = {}
    for s in graph.saved:
        saved.setdefault(s.node_id, []).append(s)
    direct = direct_modules(graph)
    labels: dict[int, list[str]] = {}
    for o in outputs:
        labels.setdefault(o.node_id, []).append(o.text)
    lines = [graph.summary()]
    shown: set[int] = set()
    stack: list[tuple[int, str, str, int]] = []  # (node id, prefix of this line, prefix of its children, depth)
    for root in reversed(list(dict.fromkeys(graph.outputs))):
        stack.append((root, "", "", 0))
    while stack:
        node_id, prefix, child_prefix, depth = stack.pop()
        n = by_id[node_id]
        if n.kind == "leaf":
            text = f"{n.label} {_shape(n.shape)}" if n.given is not None else n.label
        else:
            text = f"n{n.id} {n.label}" + (" " + _("(custom Function)") if n.kind == "custom" else "")
        if node_id in labels:
            text = f"[{', '.join(labels[node_id])}] " + text
        if node_id in shown and n.kind != "leaf":
            lines.append(prefix + _t("{node} (shown above)", node=text))
            continue
        shown.add(node_id)
        lines.append(prefix + text)
        kids = list(n.next_ids)
        bar = "│  " if kids else "   "
        lines.extend(f"{child_prefix}{bar}{_saved_text(s, _is_cut(s, direct))}" for s in saved.get(node_id, ()))
        deeper = depth + 1 < _MAX_INDENT
        for k, m in reversed(list(enumerate(kids))):
            last = k == len(kids) - 1
            branch = "└─ " if last else "├─ "
            nxt = child_prefix + ("   " if last else "│  ") if deeper else child_prefix
            stack.append((m, child_prefix + branch, nxt, depth + 1))
    return "\n".join(lines)


# -- the view -----------------------------------------------------------------------------------------


def _dot_program() -> str:
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "Graphviz's `dot` program is not on PATH, so the graph cannot be rendered. "
            + INSTALL_GRAPHVIZ
            + " (then restart the kernel). GraphView.source and .text() work "
            "without it."
        )
    return dot


def _columns(row: str) -> int:
    """How many monospace columns ``row`` takes: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in row)


def _render_text_png(text: str, cjk: str | None = None) -> bytes | None:
    """A picture of ``text`` in a monospace font, then ``cjk`` for Chinese glyphs (matplotlib, Agg, no global
    state); None if unavailable."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        return None
    import io

    rows = text.splitlines()
    width = max(_columns(r) for r in rows) if rows else 1
    fig = Figure(figsize=(max(2.0, 0.075 * width + 0.4), 0.19 * len(rows) + 0.3), dpi=100)
    FigureCanvasAgg(fig)
    family = MONO_FONT if cjk is None else [MONO_FONT, cjk]
    fig.text(0.02, 1 - 0.1 / (0.19 * len(rows) + 0.3), text, family=family, fontsize=9.5, va="top", ha="left")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


_SCREEN_DPI = 96  # Graphviz's default resolution, the size a graph shows at on screen


def _display_size(png: bytes, scale: int) -> dict[str, object]:
    """The width and height (from the PNG's header) at which a picture drawn at ``scale`` times the pixels shows."""
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    return {"width": max(1, width // scale), "height": max(1, height // scale)}


class GraphView:
    """A drawn backward graph: DOT text, a text tree, and pictures when Graphviz is installed.

    In a notebook it shows as a PNG (or, without Graphviz, a picture of the text
    tree with the install line); its text form is always the one summary line.
    """

    def __init__(
        self,
        graph: Graph,
        outputs: Sequence[_Output] = (),
        collapse: bool | str = False,
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> None:
        self.graph = graph
        self.outputs = tuple(outputs)
        self.collapse = collapse
        self.max_nodes = max_nodes

    @cached_property
    def source(self) -> str:
        """The DOT text: identical on every run for the same graph."""
        return to_dot(self.graph, self.outputs, self.collapse)

    def text(self) -> str:
        """The graph as a readable text tree (no Graphviz needed)."""
        return to_text(self.graph, self.outputs)

    def pipe(self, format: str, *options: str) -> bytes:
        """Render with ``dot -T<format>`` (and Graphviz ``options`` such as ``-Gdpi=192``); RuntimeError with the
        install line when ``dot`` is missing."""
        if not isinstance(format, str) or not format.isalnum():
            raise ValueError(f"format must be a Graphviz output format such as 'svg' or 'png', got {format!r}")
        if not all(isinstance(o, str) and re.fullmatch(r"-[GNE]\w+=[\w.]+", o) for o in options):
            raise ValueError(f"options must be Graphviz attributes such as '-Gdpi=192', got {options!r}")
        dot = _dot_program()
        done = subprocess.run(
            [dot, f"-T{format}", *options], input=self.source.encode("utf-8"), capture_output=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"Graphviz's dot failed ({done.returncode}): {done.stderr.decode('utf-8', 'replace').strip()}"
            )
        return done.stdout

    def svg(self) -> str:
        """The graph as SVG text (needs Graphviz's ``dot``)."""
        return self.pipe("svg").decode("utf-8")

    def png(self) -> bytes:
        """The graph as PNG bytes (needs Graphviz's ``dot``)."""
        return self.pipe("png")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the graph to ``path``, by suffix: ``.gv``/``.dot`` (DOT text), ``.svg``, ``.png``, ``.pdf``.

        Example::

            >>> view.save("graph.gv")            # doctest: +SKIP
            PosixPath('graph.gv')
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"save() takes a file path such as 'graph.svg', not {type(path).__name__}")
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix in (".gv", ".dot"):
            p.write_text(self.source, encoding="utf-8")
        elif suffix in (".svg", ".png", ".pdf"):
            p.write_bytes(self.pipe(suffix[1:]))
        else:
            raise ValueError(
                f"save() writes .gv, .dot, .svg, .png or .pdf files, got {p.name!r}; pass e.g. 'graph.svg'"
            )
        return p

    @property
    def too_large(self) -> bool:
        """More nodes than ``max_nodes``: notebooks show the summary instead of a picture."""
        return len(self.graph.nodes) > self.max_nodes

    def _fallback_text(self) -> str:
        """What a notebook shows without Graphviz: the install line, then the text tree (first lines)."""
        tree = self.text().splitlines()
        if len(tree) > _PNG_TREE_LINES:
            more = _t("... {n} more lines: view.text()", n=len(tree) - _PNG_TREE_LINES)
            tree = tree[:_PNG_TREE_LINES] + [more]
        return "\n".join([install_graphviz(), "", *tree])

    def __repr__(self) -> str:
        return self.graph.summary()

    # NOTE [What nbval compares]
    # nbval 0.11 (nbval/plugin.py, IPyNbFile.__init__ and compare_outputs) drops the
    # keys in skip_compare -- by default metadata, traceback, execution_count, the
    # widget-view mimetype and, unless --nbdime is given, image/png and image/jpeg --
    # and then requires the SAME SET of remaining mimetypes in the stored and the
    # fresh output ("Missing/Unexpected output fields"), with equal values. So every
    # other mimetype (text/plain, text/html, text/markdown, text/latex) must be identical
    # with and without Graphviz. The bundle therefore always carries the same
    # text/plain (the summary line) and puts everything that depends on Graphviz in
    # image/png: the drawn graph with dot, a picture of the text tree and the install
    # line without it. PNG also shows in untrusted notebooks (HTML/SVG may not).
    # NOTE [Pictures at print resolution]
    # Graphviz draws PNG at 96 dpi; a notebook's PNG goes on paper too (the handout prints the
    # stored outputs), where 96 ppi looks soft and a graph scaled down to the page has labels of a
    # few points. So the notebook gets the graph at twice the pixels (-Gdpi=192) with its display
    # size in the output's metadata (half the pixels): the screen shows it as large as before,
    # paper gets about 200 ppi. nbval skips metadata and image/png (NOTE [What nbval compares]).
    def _repr_mimebundle_(
        self, include: object = None, exclude: object = None
    ) -> dict[str, object] | tuple[dict[str, object], dict[str, object]]:
        summary = repr(self)
        if self.too_large:
            return {
                "text/plain": f"{summary}\n(over {self.max_nodes} nodes: not drawn automatically; "
                "use .save('graph.svg') or .text())"
            }
        bundle: dict[str, object] = {"text/plain": summary}
        if shutil.which("dot") is not None:
            try:
                png = self.pipe("png", f"-Gdpi={2 * _SCREEN_DPI}")
            except RuntimeError:
                pass
            else:
                bundle["image/png"] = png
                return bundle, {"image/png": _display_size(png, 2)}
        with picture_language() as cjk:
            picture = _render_text_png(self._fallback_text(), cjk)
        if picture is not None:
            bundle["image/png"] = picture
        return bundle
