"""Multiple-choice questions with an explanation for every answer, right or wrong.

:class:`Quiz` is the data and the grading (:meth:`Quiz.check` works without a
browser); :func:`quiz` builds the widget: one button per option, and the
explanation of the chosen option appears below. Displayed without a live
kernel (HTML handout, untrusted notebook) a quiz shows the question with the
answers folded in a ``<details>`` block.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .playground import errors_shown_in

__all__ = ["Quiz", "QuizWidget", "quiz"]


@dataclass(frozen=True)
class Quiz:
    """A question, its options (option text -> explanation) and the right option.

    Example::

        >>> q = Quiz("2 + 2?", {"4": "Yes.", "5": "No: that is 2 + 3."}, answer="4")
        >>> q.check("5")
        (False, 'No: that is 2 + 3.')
    """

    question: str
    options: Mapping[str, str]
    answer: str

    def __post_init__(self) -> None:
        if not isinstance(self.question, str) or not self.question.strip():
            raise TypeError("question must be a non-empty string")
        if not isinstance(self.options, Mapping) or len(self.options) < 2:
            raise TypeError("options must be a mapping of at least two option texts to their explanations, "
                            "e.g. {'4': 'Right: ...', '5': 'No: ...'}")
        for option, why in self.options.items():
            if not isinstance(option, str) or not isinstance(why, str) or not option.strip():
                raise TypeError(f"each option and its explanation must be non-empty strings, got {option!r}: {why!r}")
        if not isinstance(self.answer, str):
            raise TypeError(f"answer must be one of the option texts (a string), not {type(self.answer).__name__}")
        if self.answer not in self.options:
            raise ValueError(f"answer {self.answer!r} is not one of the options {list(self.options)}")
        object.__setattr__(self, "options", dict(self.options))

    def check(self, choice: str) -> tuple[bool, str]:
        """Whether ``choice`` (an option text) is right, and its explanation."""
        if not isinstance(choice, str):
            raise TypeError(f"choice must be one of the option texts (a string), not {type(choice).__name__}")
        if choice not in self.options:
            raise ValueError(f"{choice!r} is not an option; choose one of {list(self.options)}")
        return choice == self.answer, self.options[choice]

    def feedback(self, choice: str) -> str:
        """``Right: ...`` or ``Not quite: ...`` for ``choice``."""
        correct, why = self.check(choice)
        return f"{'Right' if correct else 'Not quite'}: {why}"

    def __str__(self) -> str:
        lines = [self.question]
        lines += [f"  {chr(ord('a') + i)}) {option}" for i, option in enumerate(self.options)]
        lines.append(f"Answer: {self.answer}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        options = "".join(f"<li>{html.escape(o)}</li>" for o in self.options)
        answers = "".join(
            f"<li><b>{html.escape(o)}</b>{' ✓ (the answer)' if o == self.answer else ''}: {html.escape(why)}</li>"
            for o, why in self.options.items())
        return (f'<div class="gradlab-quiz"><p><b>Quiz:</b> {html.escape(self.question)}</p>'
                f'<ol type="a">{options}</ol>'
                f"<details><summary>Answers</summary><ul>{answers}</ul></details></div>")


class QuizWidget:
    """A :class:`Quiz` on screen; build it with :func:`quiz`.

    ``buttons`` maps each option text to its button; clicking one writes the
    feedback into ``output`` (``feedback_text()`` reads it back).
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
        # Widget view for a live kernel; question + folded answers for everything else.
        data = dict(self.widget._repr_mimebundle_())
        data["text/plain"] = str(self.quiz)
        data["text/html"] = self.quiz._repr_html_()
        return data


def quiz(question: str | Quiz, options: Mapping[str, str] | None = None, answer: str | None = None) -> QuizWidget:
    """A multiple-choice widget: click an option, read why it is right or wrong.

    Pass a :class:`Quiz` or its three parts.

    Example::

        >>> w = quiz("2 + 2?", {"4": "Yes.", "5": "No: that is 2 + 3."}, answer="4")
        >>> w.buttons["4"].click()
        >>> w.feedback_text()
        'Right: Yes.'
    """
    if isinstance(question, Quiz):
        if options is not None or answer is not None:
            raise TypeError("pass either a Quiz or question, options and answer, not both")
        q = question
    else:
        if options is None or answer is None:
            raise TypeError("quiz() needs question, options (option text -> explanation) and answer")
        q = Quiz(question, options, answer)
    import ipywidgets as w

    output = w.Output()
    buttons = {option: w.Button(description=option, tooltip=option,
                                layout=w.Layout(width="auto", max_width="100%"))
               for option in q.options}

    def on_click(option: str) -> Any:
        def handler(_: Any) -> None:
            with errors_shown_in(output):
                correct, why = q.check(option)
                for name, button in buttons.items():
                    button.button_style = ("success" if correct else "danger") if name == option else ""
                color = "#2e7d32" if correct else "#c62828"
                head = "✓ Right" if correct else "✗ Not quite"
                output.outputs = ({"output_type": "display_data", "metadata": {},
                                   "data": {"text/plain": q.feedback(option),
                                            "text/html": f'<p style="color:{color}"><b>{head}:</b> '
                                                         f"{html.escape(why)}</p>"}},)
        return handler

    for option, button in buttons.items():
        button.on_click(on_click(option))
    widget = w.VBox([w.HTML(f"<b>Quiz:</b> {html.escape(q.question)}"),
                     w.VBox(list(buttons.values())), output])
    widget.add_class("gradlab-quiz")  # a stable hook for CSS and the browser test
    return QuizWidget(q, widget, buttons, output)
