"""The course's widgets: the training-loop playground and the quiz.

Thin controls over plain data: :mod:`gradlab.course.iteration` runs the
iterations and :mod:`gradlab.course.questions` holds the questions; these classes only
wire buttons to them. Every callback writes into an ``ipywidgets.Output``, and any
exception it raises is shown there (:func:`errors_shown_in`), never lost in the
browser console. ipywidgets is imported only when a widget is built. The labels are
in the language of :func:`gradlab.set_language` when the widget is built; the code
of the steps is never translated.
"""

from __future__ import annotations

import base64
import html
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from gradlab.i18n import _, _t

from .iteration import PRESETS, STEPS, Outcome, _check_steps, outcome_table, preset_title, run_iteration
from .questions import Quiz
from .questions import question as quiz_question

__all__ = ["Playground", "playground", "QuizWidget", "quiz", "errors_shown_in"]


def _traceback_output(error: BaseException) -> dict[str, Any]:
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return {"output_type": "stream", "name": "stderr", "text": _("Error in the widget callback:") + "\n" + text}


@contextmanager
def errors_shown_in(output: Any) -> Iterator[None]:
    """Append any exception raised in the block to ``output`` (an ``ipywidgets.Output``) as its traceback.

    Widget callbacks run outside any cell, so an exception they raise would
    otherwise vanish into the browser console.
    """
    try:
        yield
    except Exception as e:
        output.outputs = (*output.outputs, _traceback_output(e))


def _display(data: dict[str, str]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def _view_output(view: Any) -> dict[str, Any]:
    """A GraphView as a display_data output an ``Output`` widget can sync (bytes as base64)."""
    data = {}
    for mime, value in view._repr_mimebundle_().items():
        data[mime] = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
    return _display(data)


def _note_html(preset: str) -> str:
    """The line under the preset menu: what the chosen preset trains, folded (the learner predicts it first)."""
    if preset not in PRESETS:
        note = _("your own order: predict what it trains, then press Run.")
        return f'<p style="margin:0 0 4px 0"><i>{html.escape(note)}</i></p>'
    summary = html.escape(_("what this preset trains (open it after your prediction)"))
    return (
        f'<details style="margin:0 0 4px 0"><summary><i>{summary}</i></summary>'
        f"<i>{html.escape(PRESETS[preset].note)}</i></details>"
    )


class Playground:
    """The playground's controls; build it with :func:`playground`.

    ``widget`` is the ``VBox`` to display; the controls are attributes so tests
    (and curious learners) can drive them from Python: set ``preset.value``,
    call ``run.click()``, read ``output.outputs``.
    """

    def __init__(
        self,
        *,
        widget: Any,
        preset: Any,
        note: Any,
        order: Any,
        step_choice: Any,
        add: Any,
        remove: Any,
        up: Any,
        down: Any,
        detach: Any,
        softmax: Any,
        run: Any,
        output: Any,
        seed: int = 0,
    ) -> None:
        self.widget = widget
        self.seed = seed
        self.preset = preset
        self.note = note
        self.order = order
        self.step_choice = step_choice
        self.add = add
        self.remove = remove
        self.up = up
        self.down = down
        self.detach = detach
        self.softmax = softmax
        self.run = run
        self.output = output
        self.outcome: Outcome | None = None

    @property
    def steps(self) -> list[str]:
        """The step ids currently listed, in order."""
        return [value for _label, value in self.order.options]

    @steps.setter
    def steps(self, steps: Sequence[str]) -> None:
        checked = _check_steps(steps) if len(steps) else ()
        self.order.options = [(f"{i + 1:>2}. {STEPS[s]}", s) for i, s in enumerate(checked)]

    def output_text(self) -> str:
        """Everything the output area shows, as plain text (for tests and screen readers)."""
        parts = []
        for out in self.output.outputs:
            parts.append(out.get("text") or out.get("data", {}).get("text/plain", ""))
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"<gradlab playground: {len(self.order.options)} steps>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # The live widget for a running kernel, and for the HTML handout, untrusted notebooks and
        # GitHub a static view whose outcomes are folded: the playground sits under a Predict prompt,
        # so a static view must not answer it before the reader opens it. The plain text names the
        # presets only (nbval skips the widget-view entry: its model id is random).
        data = dict(self.widget._repr_mimebundle_())
        table = outcome_table(seed=self.seed)
        names = ", ".join(preset_title(name) for name in PRESETS)
        data["text/plain"] = (
            _("gradlab playground (a widget: run the cell in a live kernel)")
            + "\n"
            + _t("presets: {names}", names=names)
        )
        intro = html.escape(
            _("{title}: run this cell in a live kernel to edit the steps. One iteration of each preset:"), quote=False
        ).format(title="<b>" + html.escape(_("gradlab playground"), quote=False) + "</b>")
        folded = html.escape(_("open it after your prediction"), quote=False)
        data["text/html"] = f"<p>{intro}</p><details><summary>{folded}</summary>{table}</details>"
        return data


def playground(preset: str = "original loop", seed: int = 0) -> Playground:
    """The interactive playground: reorder the loop's steps, run one iteration, see what happens.

    Choose a preset or build your own order (add, remove, move steps), tick
    "detach inside network 2", press Run. The output shows success or the exact
    error, gradlab's diagnosis, the graph, and which parameters got a gradient
    and changed. Any error inside a callback appears in the output too.

    Example::

        >>> pg = playground("joint backward (both losses train n_1)")
        >>> pg.run.click()
        >>> "Success" in pg.output_text()
        True
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {list(PRESETS)}, got {preset!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    import ipywidgets as w

    wide = w.Layout(width="auto")
    preset_menu = w.Dropdown(
        options=[(preset_title(name), name) for name in (*PRESETS, "custom")],
        value=preset,
        description=_("Preset"),
        layout=w.Layout(width="28em"),
        style={"description_width": "4em"},
    )
    note = w.HTML(_note_html(preset), layout=w.Layout(width="auto"))
    order = w.Select(options=[], rows=11, layout=w.Layout(width="28em"))
    order.add_class("gradlab-steps")
    step_choice = w.Dropdown(options=[(label, step) for step, label in STEPS.items()], layout=w.Layout(width="20em"))
    add = w.Button(
        description=_("Insert"),
        tooltip=_("insert the chosen step after the selected one"),
        icon="plus",
        layout=wide,
    )
    remove = w.Button(description=_("Remove"), icon="trash", layout=wide)
    up = w.Button(description=_("Up"), icon="arrow-up", layout=wide)
    down = w.Button(description=_("Down"), icon="arrow-down", layout=wide)
    detach = w.Checkbox(value=PRESETS[preset].detach_inside, description=_("detach inside network 2"), indent=False)
    softmax = w.Checkbox(value=False, description=_("softmax over dim=1 (the original Net)"), indent=False)
    run = w.Button(description=_("Run"), button_style="primary", icon="play")
    output = w.Output(layout=w.Layout(border="1px solid #ddd", padding="4px"))
    hint = _("Pick a preset or edit the steps, then press Run.")
    output.outputs = (_display({"text/plain": hint, "text/html": f"<p><i>{html.escape(hint, quote=False)}</i></p>"}),)
    title = html.escape(_("{title}: one iteration, fresh networks each Run."), quote=False).format(
        title="<b>" + html.escape(_("Training-loop playground"), quote=False) + "</b>"
    )
    widget = w.VBox(
        [
            w.HTML("<style>.gradlab-steps select { font-family: monospace; }</style>" + title),
            preset_menu,
            note,
            w.HBox([order, w.VBox([w.HBox([step_choice, add]), w.HBox([up, down, remove]), detach, softmax, run])]),
            output,
        ]
    )
    # Stable CSS classes: the browser test (and learners' custom CSS) find the controls by them.
    for control, name in (
        (widget, "playground"),
        (preset_menu, "preset"),
        (note, "note"),
        (run, "run"),
        (output, "output"),
    ):
        control.add_class(f"gradlab-{name}")
    pg = Playground(
        widget=widget,
        preset=preset_menu,
        note=note,
        order=order,
        step_choice=step_choice,
        add=add,
        remove=remove,
        up=up,
        down=down,
        detach=detach,
        softmax=softmax,
        run=run,
        output=output,
        seed=seed,
    )
    pg.steps = PRESETS[preset].steps
    _wire(pg, seed)
    return pg


def _wire(pg: Playground, seed: int) -> None:
    """Connect the controls' events to the playground's actions."""
    editing = {"quiet": False}

    def callback(fn: Callable[..., None]) -> Callable[..., None]:
        def handler(*args: Any) -> None:
            with errors_shown_in(pg.output):
                fn(*args)

        return handler

    def edit(steps: list[str], selected: int | None) -> None:
        editing["quiet"] = True
        try:
            pg.steps = steps  # may be empty while editing
            pg.preset.value = "custom"
        finally:
            editing["quiet"] = False
        if selected is not None and pg.order.options:
            pg.order.index = max(0, min(selected, len(pg.order.options) - 1))

    @callback
    def on_preset(change: dict[str, Any]) -> None:
        pg.note.value = _note_html(change["new"])
        if editing["quiet"] or change["new"] == "custom":
            return
        chosen = PRESETS[change["new"]]
        pg.steps = chosen.steps
        pg.detach.value = chosen.detach_inside

    @callback
    def on_add(_click: Any) -> None:
        steps = pg.steps
        at = pg.order.index + 1 if pg.order.index is not None else len(steps)
        steps.insert(at, pg.step_choice.value)
        edit(steps, at)

    @callback
    def on_remove(_click: Any) -> None:
        i = pg.order.index
        if i is None:
            return
        steps = pg.steps
        del steps[i]
        edit(steps, i)

    def mover(delta: int) -> Callable[[Any], None]:
        @callback
        def on_move(_click: Any) -> None:
            i = pg.order.index
            steps = pg.steps
            if i is None or not 0 <= i + delta < len(steps):
                return
            steps[i], steps[i + delta] = steps[i + delta], steps[i]
            edit(steps, i + delta)

        return on_move

    @callback
    def on_run(_click: Any) -> None:
        pg.output.outputs = ()
        steps = pg.steps
        if not steps:
            pg.output.outputs = (_display({"text/plain": _("No steps: add some, or pick a preset.")}),)
            return
        outcome, view = run_iteration(steps, bool(pg.detach.value), seed, bool(pg.softmax.value), draw=True)
        pg.outcome = outcome
        shown = [_display({"text/plain": str(outcome), "text/html": outcome._repr_html_()})]
        if view is not None:
            shown.append(_view_output(view))
        pg.output.outputs = tuple(shown)

    pg.preset.observe(on_preset, names="value")
    pg.add.on_click(on_add)
    pg.remove.on_click(on_remove)
    pg.up.on_click(mover(-1))
    pg.down.on_click(mover(+1))
    pg.run.on_click(on_run)


class QuizWidget:
    """A :class:`Quiz` on screen; build it with :func:`quiz`.

    ``buttons`` maps each option text to its button, in the order shown;
    clicking one writes the feedback into ``output`` (``feedback_text()`` reads
    it back).
    """

    def __init__(self, quiz: Quiz, widget: Any, buttons: dict[str, Any], output: Any) -> None:
        self.quiz = quiz
        self.widget = widget
        self.buttons = buttons
        self.output = output

    def feedback_text(self) -> str:
        """What the feedback area shows, as plain text."""
        return "\n".join(out.get("text") or out.get("data", {}).get("text/plain", "") for out in self.output.outputs)

    def __repr__(self) -> str:
        return f"<gradlab quiz: {self.quiz.question!r}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # Widget view for a live kernel; the question, its options and the
        # folded answers for everything else (plain text: no answer).
        data = dict(self.widget._repr_mimebundle_())
        data["text/plain"] = str(self.quiz)
        data["text/html"] = self.quiz._repr_html_()
        return data


def quiz(
    question: str | Quiz, options: Mapping[str, str] | None = None, answer: str | None = None, *, shuffle: bool = True
) -> QuizWidget:
    """A multiple-choice widget: click an option, read why it is right or wrong.

    Pass the id of a course question (a key of :data:`QUESTIONS`), a
    :class:`Quiz`, or a question, its options and the answer. With
    ``shuffle=True`` the options appear in the order of :meth:`Quiz.shuffled`
    (keyed by the question's id, or by its text), the same on every run.

    Example::

        >>> w = quiz("2 + 2?", {"4": "Yes.", "5": "No: that is 2 + 3."}, answer="4")
        >>> w.buttons["4"].click()
        >>> w.feedback_text()
        'Right: Yes.'
        >>> from gradlab.course import QUESTIONS
        >>> sorted(quiz("retain_graph").buttons) == sorted(QUESTIONS["retain_graph"].options)
        True
    """
    q, key = quiz_question(question, options, answer)
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be True or False, not {type(shuffle).__name__}")
    if shuffle:
        q = q.shuffled(key)
    import ipywidgets as w

    output = w.Output()
    buttons = {
        option: w.Button(description=option, tooltip=option, layout=w.Layout(width="auto", max_width="100%"))
        for option in q.options
    }

    def on_click(option: str) -> Any:
        def handler(_click: Any) -> None:
            with errors_shown_in(output):
                correct, why = q.check(option)
                for name, button in buttons.items():
                    button.button_style = ("success" if correct else "danger") if name == option else ""
                color = "#2e7d32" if correct else "#c62828"
                head = _("✓ Right:") if correct else _("✗ Not quite:")
                output.outputs = (
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {
                            "text/plain": q.feedback(option),
                            "text/html": f'<p style="color:{color}"><b>{html.escape(head)}</b> {html.escape(why)}</p>',
                        },
                    },
                )

        return handler

    for option, button in buttons.items():
        button.on_click(on_click(option))
    heading = f"<b>{html.escape(_('Quiz:'))}</b> {html.escape(q.question)}"
    widget = w.VBox([w.HTML(heading), w.VBox(list(buttons.values())), output])
    widget.add_class("gradlab-quiz")  # a stable hook for CSS and the browser test
    return QuizWidget(q, widget, buttons, output)
