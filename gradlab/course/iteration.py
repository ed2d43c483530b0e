"""Put the training loop's lines in any order, run one iteration for real, see what happens.

Data first: :data:`STEPS` are the loop's lines, :data:`PRESETS` the orders the
course compares, :func:`run_order` runs one iteration on fresh networks and
returns an :class:`Outcome` (plain data), :func:`outcome_table` renders every
preset's outcome as static HTML. The widget that drives this is in
:mod:`gradlab.course.widgets`.
"""

from __future__ import annotations

import html
import linecache
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

import gradlab
from gradlab.drawing import GraphView
from gradlab.graph import walk
from gradlab.i18n import _, _t, ljust, width

from .networks import Pair, batches, make_pair
from .questions import Localized

__all__ = [
    "STEPS",
    "PRESETS",
    "Preset",
    "Outcome",
    "OrderError",
    "run_order",
    "run_iteration",
    "outcome_table",
    "HTMLText",
    "preset_title",
]

#: The lines of the training loop, by step id, in the order the menu lists them.
#: Each label is the exact code :func:`run_order` executes.
STEPS: dict[str, str] = {
    "forward_1": "pred_1 = n_1(x)",
    "loss_1": "loss_1 = criterion(y, pred_1)",
    "backward_1": "loss_1.backward()",
    "backward_1_retain": "loss_1.backward(retain_graph=True)",
    "step_1": "opt_1.step()",
    "forward_2": "pred_2 = n_2(pred_1)",
    "forward_2_detached": "pred_2 = n_2(pred_1.detach())",
    "loss_2": "loss_2 = criterion(y, pred_2)",
    "backward_2": "loss_2.backward()",
    "backward_2_inputs": "loss_2.backward(inputs=list(n_2.parameters()))",
    "step_2": "opt_2.step()",
    "zero_grad_1": "opt_1.zero_grad()",
    "zero_grad_2": "opt_2.zero_grad()",
    "backward_joint": "(loss_1 + loss_2).backward()",
}

# Names each step reads that an earlier step must define.
_NEEDS: dict[str, tuple[str, ...]] = {
    "loss_1": ("pred_1",),
    "backward_1": ("loss_1",),
    "backward_1_retain": ("loss_1",),
    "forward_2": ("pred_1",),
    "forward_2_detached": ("pred_1",),
    "loss_2": ("pred_2",),
    "backward_2": ("loss_2",),
    "backward_2_inputs": ("loss_2",),
    "backward_joint": ("loss_1", "loss_2"),
}
# The losses whose gradients a backward step sends into the parameters.
_BACKWARD_OF: dict[str, tuple[str, ...]] = {
    "backward_1": ("loss_1",),
    "backward_1_retain": ("loss_1",),
    "backward_2": ("loss_2",),
    "backward_2_inputs": ("loss_2",),
    "backward_joint": ("loss_1", "loss_2"),
}
# A backward with inputs= sends gradient into those parameters only (the network named here).
_ONLY_INTO: dict[str, str] = {"backward_2_inputs": "n_2"}
_DEFINED_BY: dict[str, tuple[str, ...]] = {
    "pred_1": ("forward_1",),
    "loss_1": ("loss_1",),
    "pred_2": ("forward_2", "forward_2_detached"),
    "loss_2": ("loss_2",),
}


@dataclass(frozen=True)
class Preset:
    """A named order of :data:`STEPS`, and whether network 2 detaches inside its forward."""

    steps: tuple[str, ...]
    detach_inside: bool = False
    note: str = ""


_LOOP_1 = ("forward_1", "zero_grad_1", "loss_1")
_LOOP_2 = ("zero_grad_2", "loss_2", "backward_2", "step_2")


def _presets() -> dict[str, Preset]:
    return {
        "original loop": Preset(
            (*_LOOP_1, "backward_1", "step_1", "forward_2", *_LOOP_2),
            note=_(
                "fails: loss_2.backward() needs the part of the graph loss_1.backward() freed. Had it run, it "
                "would train what 'n_2 on detached pred_1' trains: loss_2's gradient for n_1 would arrive after "
                "opt_1.step(), and the next opt_1.zero_grad() clears it"
            ),
        ),
        "retain_graph=True": Preset(
            (*_LOOP_1, "backward_1_retain", "step_1", "forward_2", *_LOOP_2),
            note=_("fails: the graph is kept, but opt_1.step() changed a weight it saved; retain_graph is not the fix"),
        ),
        "detach inside network 2": Preset(
            (*_LOOP_1, "backward_1", "step_1", "forward_2", *_LOOP_2),
            detach_inside=True,
            note=_("runs, but n_2.linear_1 gets no gradient from any loss: it stays at its random initialization"),
        ),
        "n_2 on detached pred_1": Preset(
            (*_LOOP_1, "backward_1", "step_1", "forward_2_detached", *_LOOP_2),
            note=_(
                "fix (a), the original loop repaired: n_1 learns from loss_1, n_2 from loss_2 on n_1's output as data"
            ),
        ),
        "loss_2 into n_2 only (inputs=)": Preset(
            (*_LOOP_1, "backward_1", "step_1", "forward_2", "zero_grad_2", "loss_2", "backward_2_inputs", "step_2"),
            note=_("the original order, repaired in one line: trains exactly what 'n_2 on detached pred_1' trains"),
        ),
        "joint backward (both losses train n_1)": Preset(
            (
                "forward_1",
                "forward_2",
                "zero_grad_1",
                "zero_grad_2",
                "loss_1",
                "loss_2",
                "backward_joint",
                "step_1",
                "step_2",
            ),
            note=_(
                "fix (b), a different training: one backward of loss_1 + loss_2 before any step, so n_1 learns "
                "from both losses"
            ),
        ),
        "recompute n_1 after its step": Preset(
            (*_LOOP_1, "backward_1", "step_1", "forward_1", "forward_2_detached", *_LOOP_2),
            note=_("fix (c): n_1 learns from loss_1 only, n_2 from network 1's output after this step's update"),
        ),
    }


#: The orders the course compares: notebook 06's forms and the two "fixes" that are not.
#: Each note says what the order trains, in the language in effect (NOTE [Texts in the language in
#: effect] in questions.py); the keys are the presets' ids.
PRESETS: Mapping[str, Preset] = Localized(_presets)


def _preset_titles() -> dict[str, str]:
    return {
        "original loop": _("original loop"),
        "retain_graph=True": "retain_graph=True",
        "detach inside network 2": _("detach inside network 2"),
        "n_2 on detached pred_1": _("n_2 on detached pred_1"),
        "loss_2 into n_2 only (inputs=)": _("loss_2 into n_2 only (inputs=)"),
        "joint backward (both losses train n_1)": _("joint backward (both losses train n_1)"),
        "recompute n_1 after its step": _("recompute n_1 after its step"),
        "custom": _("custom"),
    }


def preset_title(name: str) -> str:
    """A preset's name as the menu and the table show it, in the language in effect (its id otherwise)."""
    return _preset_titles().get(name, name)


@dataclass(frozen=True)
class Outcome:
    """What one iteration of an order did. Plain data: no tensors, no modules.

    ``ok`` is True when every step ran. Otherwise ``failed_step`` is the index
    (0-based) of the step that raised, ``error_type`` the exception's class
    name (``OrderError`` for a step that uses a name no earlier step defined)
    and ``error`` its exact message. ``diagnosis`` is gradlab's short note on
    an autograd error, ``diagnosis_details`` its full form (every problem, every
    fix with what it trains). ``got_grad`` lists the parameters whose ``.grad`` was set
    at some point, ``grad_from`` which losses' backward reached each parameter,
    ``changed`` the parameters whose values differ after the iteration, and
    ``graph`` the summary of the losses' backward graph.
    """

    steps: tuple[str, ...]
    detach_inside: bool
    softmax: bool
    ok: bool
    failed_step: int | None
    error_type: str | None
    error: str | None
    diagnosis: str | None
    parameters: tuple[str, ...]
    got_grad: tuple[str, ...]
    grad_from: dict[str, tuple[str, ...]] = field(repr=False)
    changed: tuple[str, ...]
    graph: str | None
    losses: dict[str, float] = field(repr=False)
    diagnosis_details: str | None = field(default=None, repr=False)

    @property
    def no_grad(self) -> list[str]:
        """Parameters that never got a gradient."""
        return [p for p in self.parameters if p not in self.got_grad]

    @property
    def unchanged(self) -> list[str]:
        """Parameters the iteration did not change."""
        return [p for p in self.parameters if p not in self.changed]

    def headline(self) -> str:
        """One line: ``ran all 10 lines of the iteration`` or ``line 9 `...` raised RuntimeError: ...``.

        A failure shows the first sentence of the error; lines are numbered
        from 1, as in the listing and in gradlab's ``playground:L`` locations.
        """
        if self.ok:
            return _t("ran all {n} lines of the iteration", n=len(self.steps))
        i = self.failed_step or 0
        first = (self.error or "").split(". ")[0].split("\n")[0]
        return _t(
            "line {line} `{code}` raised {error_type}: {error}",
            line=i + 1,
            code=STEPS[self.steps[i]],
            error_type=self.error_type,
            error=first,
        )

    def __str__(self) -> str:
        mark = _("✓ Success:") + " " if self.ok else "✗ "
        lines = [_listing(self.steps, self.failed_step), "", mark + self.headline()]
        if not self.ok:
            lines += ["", f"{self.error_type}: {self.error}"]
        if self.diagnosis:
            lines += ["", "gradlab: " + self.diagnosis]
        lines += ["", _params_text(self)]
        if self.graph:
            lines += ["", self.graph]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return _outcome_html(self)


class OrderError(Exception):
    """A step reads a name that no earlier step defined (Python would say NameError)."""


def _check_steps(steps: object) -> tuple[str, ...]:
    if isinstance(steps, Preset):
        steps = steps.steps
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise TypeError(f"steps must be a list of step ids such as ['forward_1', 'loss_1'], not {type(steps).__name__}")
    if not steps:
        raise ValueError("steps is empty; start with e.g. PRESETS['original loop'].steps")
    for s in steps:
        if not isinstance(s, str):
            raise TypeError(f"each step must be a step id string, found {type(s).__name__}: {s!r}")
        if s not in STEPS:
            raise ValueError(f"unknown step {s!r}; choose from {list(STEPS)}")
    return tuple(steps)


def _missing_message(name: str, step: str) -> str:
    fixes = _(" or ").join(f"'{STEPS[d]}'" for d in _DEFINED_BY[name])
    return _t("{name} is not defined yet: add {fixes} before '{step}'", name=name, fixes=fixes, step=STEPS[step])


def _program(steps: Sequence[str]) -> list[Any]:
    """Each step compiled as line ``i + 1`` of a file named ``playground``."""
    # NOTE [step locations]: the steps run as real code, compiled as the lines of
    # a pseudo-file "playground" registered in linecache, so gradlab.track names
    # the learner's line ("playground:5: opt_1.step()", 5 = the step's number)
    # instead of a frame inside gradlab or ipywidgets.
    lines = [STEPS[s] + "\n" for s in steps]
    linecache.cache[_FILENAME] = (sum(map(len, lines)), None, lines, _FILENAME)
    return [compile("\n" * i + line, _FILENAME, "exec") for i, line in enumerate(lines)]


_FILENAME = "playground"


def _param_names(pair: Pair) -> list[tuple[str, torch.nn.Parameter]]:
    return [(f"{net}.{name}", p) for net, module in pair.names.items() for name, p in module.named_parameters()]


def run_iteration(
    steps: Sequence[str], detach_inside: bool = False, seed: int = 0, softmax: bool = False, draw: bool = False
) -> tuple[Outcome, GraphView | None]:
    """:func:`run_order`, and with ``draw=True`` also the losses' graph as drawn after the iteration."""
    return _run(_check_steps(steps), detach_inside, seed, softmax, draw)


def _run(
    steps: tuple[str, ...], detach_inside: bool, seed: int, softmax: bool, want_view: bool = False
) -> tuple[Outcome, GraphView | None]:
    pair = make_pair(seed, softmax=softmax)
    pair.n_2.detach_inside = detach_inside  # same initial weights with or without the detach
    x, y = batches(1, seed)[0]
    scope: dict[str, Any] = {
        "n_1": pair.n_1,
        "n_2": pair.n_2,
        "opt_1": pair.opt_1,
        "opt_2": pair.opt_2,
        "criterion": pair.criterion,
        "x": x,
        "y": y,
    }
    params = _param_names(pair)
    before = {name: p.detach().clone() for name, p in params}
    got_grad: set[str] = set()
    grad_from: dict[str, list[str]] = {name: [] for name, _p in params}
    failed = error_type = error = diagnosis = details = None
    program = _program(steps)
    with gradlab.track(pair.names, warn=False) as tracker:
        for i, step in enumerate(steps):
            try:
                for name in _NEEDS.get(step, ()):
                    if name not in scope:
                        raise OrderError(_missing_message(name, step))
                exec(program[i], scope)
            except Exception as e:
                failed, error_type, error = i, type(e).__name__, str(e)
                diag = tracker.diagnosis_for(e)
                if diag is not None:
                    diagnosis, details = str(diag), diag.details()
            got_grad.update(name for name, p in params if p.grad is not None)
            if failed is not None:
                break
            for loss in _BACKWARD_OF.get(step, ()):
                reached = {id(fn.variable) for fn in walk([scope[loss].grad_fn]) if hasattr(fn, "variable")}
                only = _ONLY_INTO.get(step)
                for name, p in params:
                    if only is not None and not name.startswith(only + "."):
                        continue
                    if id(p) in reached and loss not in grad_from[name]:
                        grad_from[name].append(loss)
        losses = {
            n: scope[n]
            for n in ("loss_1", "loss_2")
            if isinstance(scope.get(n), torch.Tensor) and scope[n].grad_fn is not None
        }
        # Collected while the tracker is active: it knows who modified what, and where.
        graph = gradlab.collect(list(losses.values()), tracker.namer(), tracker=tracker).summary() if losses else None
        view = _view(losses, pair.names) if losses and want_view else None
    names = [name for name, _p in params]
    outcome = Outcome(
        steps=steps,
        detach_inside=detach_inside,
        softmax=softmax,
        ok=failed is None,
        failed_step=failed,
        error_type=error_type,
        error=error,
        diagnosis=diagnosis,
        parameters=tuple(names),
        got_grad=tuple(n for n in names if n in got_grad),
        grad_from={n: tuple(v) for n, v in grad_from.items()},
        changed=tuple(name for name, p in params if not torch.equal(before[name], p.detach())),
        graph=graph,
        losses={n: float(scope[n].item()) for n in ("loss_1", "loss_2") if isinstance(scope.get(n), torch.Tensor)},
        diagnosis_details=details,
    )
    return outcome, view


def run_order(
    steps: Sequence[str] | Preset, detach_inside: bool = False, seed: int = 0, softmax: bool = False
) -> Outcome:
    """Run one iteration of ``steps`` for real, on fresh seeded networks, under :func:`gradlab.track`.

    Every step is the code of :data:`STEPS` run in order; the first error stops
    the iteration and is returned, never raised (a step that uses a name no
    earlier step defined gives a clear ``OrderError`` instead of a NameError).
    ``detach_inside=True`` makes network 2 detach its first layer's output;
    ``softmax=True`` keeps the original softmax over dim=1 (then every gradient
    is zero and nothing changes).

    Example::

        >>> out = run_order(PRESETS["original loop"].steps)
        >>> out.ok, out.error.startswith("Trying to backward through the graph a second time")
        (False, True)
        >>> run_order(["loss_1"]).error
        "pred_1 is not defined yet: add 'pred_1 = n_1(x)' before 'loss_1 = criterion(y, pred_1)'"
    """
    if isinstance(steps, Preset):
        detach_inside = detach_inside or steps.detach_inside
    checked = _check_steps(steps)
    for flag, value in (("detach_inside", detach_inside), ("softmax", softmax)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be True or False, not {type(value).__name__}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    return _run(checked, detach_inside, seed, softmax)[0]


def _view(losses: Mapping[str, torch.Tensor], names: Mapping[str, Any]) -> GraphView:
    """gradlab.draw's view of the losses' graph."""
    return gradlab.draw(dict(losses), names=names)


# ---------------------------------------------------------------- rendering


def _listing(steps: Sequence[str], failed: int | None = None) -> str:
    return "\n".join(f"{'>>' if i == failed else '  '} {i + 1:>2}. {STEPS[s]}" for i, s in enumerate(steps))


def _compact(names: Sequence[str], every: Sequence[str]) -> str:
    """``n_1 (all)``, ``n_2.linear_1.weight, n_2.linear_1.bias`` or ``none``."""
    if not names:
        return _("none")
    parts = []
    for net in dict.fromkeys(n.split(".")[0] for n in every):
        mine = [n for n in every if n.split(".")[0] == net]
        chosen = [n for n in mine if n in names]
        if chosen and chosen == mine:
            parts.append(_t("{network} (all)", network=net))
        else:
            parts.extend(chosen)
    return ", ".join(parts)


def _grad_from_text(losses: Sequence[str]) -> str:
    return " + ".join(losses) if losses else "-"


def _params_text(o: Outcome) -> str:
    parameter, got, source, changed = _("parameter"), _("got grad"), _("grad from"), _("changed")
    name_width = max(width(p) for p in [*o.parameters, parameter])
    got_width, source_width = max(8, width(got)), max(15, width(source))
    lines = [f"{ljust(parameter, name_width)}  {ljust(got, got_width)}  {ljust(source, source_width)}  {changed}"]
    for p in o.parameters:
        got_it = _("yes") if p in o.got_grad else _("NO")
        lines.append(
            f"{ljust(p, name_width)}  {ljust(got_it, got_width)}  "
            f"{ljust(_grad_from_text(o.grad_from.get(p, ())), source_width)}  {_('yes') if p in o.changed else _('no')}"
        )
    return "\n".join(lines)


def _pre(text: str, color: str = "") -> str:
    style = "white-space:pre-wrap" + (f";color:{color}" if color else "")
    return f'<pre style="{style}">{html.escape(text)}</pre>'


_RED = "#c62828"


def _cell(content: str, color: str | None = None, tag: str = "td") -> str:
    """A table cell aligned left and top (notebook front ends right-align table cells by default)."""
    style = "text-align:left;vertical-align:top" + (f";color:{color}" if color else "")
    return f'<{tag} style="{style}">{content}</{tag}>'


def _outcome_html(o: Outcome) -> str:
    failed = ' style="color:#c62828;font-weight:bold"'
    items = "".join(
        f"<li{failed if i == o.failed_step else ''}><code>{html.escape(STEPS[s])}</code></li>"
        for i, s in enumerate(o.steps)
    )
    flags = []
    if o.detach_inside:
        flags.append(_("network 2 detaches inside"))
    if o.softmax:
        flags.append(_("softmax over dim=1"))
    parts = [f"<ol>{items}</ol>"]
    if flags:
        parts.append(f"<p><i>{html.escape(', '.join(flags))}</i></p>")
    if o.ok:
        parts.append(f'<p style="color:#2e7d32"><b>{html.escape(_("✓ Success:"))}</b> {html.escape(o.headline())}.</p>')
    else:
        step = o.steps[o.failed_step or 0]
        raised = html.escape(_("✗ line {line} {code} raised {error_type}")).format(
            line=(o.failed_step or 0) + 1,
            code=f"<code>{html.escape(STEPS[step])}</code>",
            error_type=html.escape(str(o.error_type)),
        )
        parts.append(f'<p style="color:#c62828"><b>{raised}</b></p>')
        parts.append(_pre(f"{o.error_type}: {o.error}", "#c62828"))
    if o.diagnosis:
        heading = html.escape(_("gradlab's diagnosis"), quote=False)
        parts.append(f"<p><b>{heading}</b></p>" + _pre(o.diagnosis))
        if o.diagnosis_details:
            summary = html.escape(_("diagnosis.details(): every problem, every fix with what it trains"))
            parts.append(f"<details><summary>{summary}</summary>" + _pre(o.diagnosis_details) + "</details>")
    yes, no = html.escape(_("yes")), html.escape(_("no"))
    rows = "".join(
        "<tr>"
        + _cell(f"<code>{html.escape(p)}</code>")
        + _cell(yes if p in o.got_grad else no, None if p in o.got_grad else _RED)
        + _cell(html.escape(_grad_from_text(o.grad_from.get(p, ()))))
        + _cell(yes if p in o.changed else no, None if p in o.changed else _RED)
        + "</tr>"
        for p in o.parameters
    )
    headers = (_("parameter"), _("got a gradient"), _("gradient from"), _("changed"))
    head = "".join(_cell(html.escape(h), tag="th") for h in headers)
    parts.append(f"<table><tr>{head}</tr>{rows}</table>")
    return "".join(parts)


class HTMLText(str):
    """An HTML string that notebooks render as HTML; ``.text`` is its plain-text version."""

    text: str

    def __new__(cls, html_text: str, text: str) -> HTMLText:
        self = super().__new__(cls, html_text)
        self.text = text
        return self

    def _repr_html_(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)


def outcome_table(presets: Mapping[str, Preset] = PRESETS, seed: int = 0) -> HTMLText:
    """HTML table of what one iteration of each preset does: the static view of the playground.

    Runs :func:`run_order` on each preset; the same ``seed`` gives the same table.
    The result is a ``str`` of HTML that a notebook renders as the table (its
    ``.text`` attribute is a plain-text summary).

    Example::

        >>> table = outcome_table()
        >>> "Trying to backward through the graph a second time" in table
        True
        >>> print(table.text.splitlines()[3])
        n_2 on detached pred_1: ran all 10 lines of the iteration; no gradient: none; changed: n_1 (all), n_2 (all)
    """
    if not isinstance(presets, Mapping) or not presets:
        raise TypeError("presets must be a non-empty mapping of name to Preset, e.g. gradlab.PRESETS")
    for name, preset in presets.items():
        if not isinstance(preset, Preset):
            raise TypeError(f"presets[{name!r}] must be a Preset, not {type(preset).__name__}")
    rows, lines = [], []
    for name, preset in presets.items():
        o = run_order(preset, seed=seed)
        title = preset_title(name)
        if o.ok:
            result = f'<span style="color:#2e7d32">{html.escape(_("✓ runs"))}</span>'
        else:
            step = o.steps[o.failed_step or 0]
            failed = html.escape(_("✗ line {line} {code}: {error_type}")).format(
                line=(o.failed_step or 0) + 1,
                code=f"<code>{html.escape(STEPS[step])}</code>",
                error_type=html.escape(str(o.error_type)),
            )
            result = f'<span style="color:#c62828">{failed}</span>' + _pre(str(o.error))
        diagnosis = _pre(o.diagnosis) if o.diagnosis else ""
        code = html.escape("\n".join(STEPS[s] for s in o.steps))
        flag = f"<br><i>{html.escape(_('network 2 detaches inside'))}</i>" if o.detach_inside else ""
        rows.append(
            "<tr>"
            + _cell(f"<b>{html.escape(title)}</b>{flag}<br>{html.escape(preset.note)}")
            + _cell(f"<pre>{code}</pre>")
            + _cell(result + diagnosis)
            + _cell(html.escape(_compact(o.no_grad, o.parameters)))
            + _cell(html.escape(_compact(o.changed, o.parameters)))
            + "</tr>"
        )
        lines.append(
            _t(
                "{preset}: {headline}; no gradient: {no_gradient}; changed: {changed}",
                preset=title,
                headline=o.headline(),
                no_gradient=_compact(o.no_grad, o.parameters),
                changed=_compact(o.changed, o.parameters),
            )
        )
    headers = (_("preset"), _("one iteration"), _("result"), _("no gradient"), _("changed"))
    head = "".join(_cell(html.escape(h), tag="th") for h in headers)
    table = f'<table class="gradlab-outcomes"><tr>{head}</tr>' + "".join(rows) + "</table>"
    return HTMLText(table, "\n".join(lines))
