"""Multiple-choice questions with an explanation for every answer, right or wrong.

:class:`Quiz` is the data and the grading (:meth:`Quiz.check` works without a
browser); :data:`QUESTIONS` holds the course's questions by id, in the language
of :func:`gradlab.set_language`. The widget
(:func:`gradlab.course.quiz`, in :mod:`gradlab.course.widgets`) shows one: one
button per option, and the explanation of the chosen option appears below.
Options are shown in a shuffled order that depends only on the question, so the
right answer is not always first and a notebook shows the same order on every
run. Displayed without a live kernel (HTML handout, untrusted notebook) a quiz
shows the question and its options, with the answers folded in a ``<details>``
block; its plain text never gives the answer away.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from gradlab.i18n import _, _t

__all__ = ["QUESTIONS", "Quiz", "question", "Localized"]


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
            raise TypeError(
                "options must be a mapping of at least two option texts to their explanations, "
                "e.g. {'4': 'Right: ...', '5': 'No: ...'}"
            )
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
        return (
            _t("Right: {explanation}", explanation=why) if correct else _t("Not quite: {explanation}", explanation=why)
        )

    def shuffled(self, key: str | None = None) -> Quiz:
        """The same quiz with its options in an order fixed by ``key`` (default: the question).

        The order comes from a hash of ``key`` and each option's position in
        the order the options were written, never their text: it is the same
        on every run and machine, differs from question to question, and is
        the same in every language the texts are translated into (a course
        question's key is its id, so both editions show the answer under the
        same letter).

        Example::

            >>> q = Quiz("2 + 2?", {"4": "Yes.", "5": "No.", "22": "No: that joins the digits."}, answer="4")
            >>> q.shuffled("sum").options == q.shuffled("sum").options
            True
        """
        seed = self.question if key is None else key
        if not isinstance(seed, str):
            raise TypeError(f"key must be a string, not {type(seed).__name__}")
        # NOTE [Quiz order across languages]: hash positions, not option texts. The texts are translated,
        # so an order keyed by them put the answer under another letter in each edition of the course.
        written = list(self.options)
        order = sorted(range(len(written)), key=lambda i: hashlib.sha256(f"{seed}/{i}".encode()).hexdigest())
        return Quiz(self.question, {written[i]: self.options[written[i]] for i in order}, self.answer)

    def __str__(self) -> str:
        # Question and options only: a plain-text view must not give the answer away.
        lines = [self.question]
        lines += [f"  {chr(ord('a') + i)}) {option}" for i, option in enumerate(self.options)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        options = "".join(f"<li>{html.escape(o)}</li>" for o in self.options)
        mark = " " + html.escape(_("✓ (the answer)"))
        answers = "".join(
            f"<li><b>{html.escape(o)}</b>{mark if o == self.answer else ''}{html.escape(_(': '))}{html.escape(why)}</li>"
            for o, why in self.options.items()
        )
        return (
            f'<div class="gradlab-quiz"><p><b>{html.escape(_("Quiz:"))}</b> {html.escape(self.question)}</p>'
            f'<ol type="a">{options}</ol>'
            f"<details><summary>{html.escape(_('Answers'))}</summary><ul>{answers}</ul></details></div>"
        )


# NOTE [Texts in the language in effect]
# The course's tables of texts (QUESTIONS here, PRESETS in iteration.py, ORDERS in training.py) are
# read-only mappings whose values are built when they are read, in the language of
# gradlab.set_language: ``QUESTIONS["retain_graph"]`` after ``set_language("zh_CN")`` is the Chinese
# quiz. The keys are ids and never change. Each text is one _("...") call in the function that
# builds the table, so gettext finds it, and nothing is translated at import time.
V = TypeVar("V")


class Localized(Mapping[str, V]):
    """A read-only mapping whose values ``build()`` makes in the language in effect, each time it is read.

    Example::

        >>> greetings = Localized(lambda: {"hello": _("hello")})
        >>> greetings["hello"]
        'hello'
    """

    def __init__(self, build: Callable[[], dict[str, V]]) -> None:
        self._build = build

    def __getitem__(self, key: str) -> V:
        return self._build()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())

    def __contains__(self, key: object) -> bool:
        return key in self._build()

    def __repr__(self) -> str:
        return repr(self._build())


def _course_quiz(question: str, *options: tuple[str, str]) -> Quiz:
    """A course question: its options (text, explanation) written answer first."""
    return Quiz(question, dict(options), answer=options[0][0])


def _questions() -> dict[str, Quiz]:
    return {
        "freed_graph": _course_quiz(
            _(
                "Why does the original loop fail at loss_2.backward() with "
                "'Trying to backward through the graph a second time'?"
            ),
            (
                _("loss_1.backward() freed network 1's saved tensors, and loss_2's backward needs them"),
                _(
                    "pred_2 = n_2(pred_1) links loss_2 to n_1's part of the graph. A backward frees the tensors "
                    "its graph saved, so loss_2.backward() finds n_1's saved tensors gone."
                ),
            ),
            (
                _("opt_1.step() deleted the graph"),
                _(
                    "A step changes parameters in place; it frees nothing. The freeing is done by "
                    "loss_1.backward() (without retain_graph=True)."
                ),
            ),
            (
                _("loss_2.backward() is called twice"),
                _(
                    "Each loss's backward runs once, but loss_2's backward re-enters the part of the graph "
                    "loss_1.backward() already went through."
                ),
            ),
            (
                _("opt_2.zero_grad() removed network 2's gradients"),
                _("zero_grad() only resets .grad; the graph and its saved tensors are untouched."),
            ),
        ),
        "retain_graph": _course_quiz(
            _(
                "With retain_graph=True the error becomes '... is at version 2; expected version 1 instead'. "
                "What does it mean?"
            ),
            (
                _("A tensor autograd saved at version 1 was changed in place afterwards"),
                _(
                    "Every tensor counts its in-place writes. AddmmBackward0 saved n_1.linear_2.weight (as a "
                    "transposed view) at version 1; opt_1.step() updated it in place to version 2, so the "
                    "gradient would use the wrong values and autograd refuses."
                ),
            ),
            (
                _("The tensor was saved twice for backward"),
                _("The version counts in-place modifications, not how often a tensor is saved."),
            ),
            (
                _("The installed PyTorch is version 2 but the model was built for version 1"),
                _("Nothing to do with software versions: it is the tensor's own version counter."),
            ),
            (
                _("The graph was freed a second time"),
                _("That is the other error. retain_graph=True kept the graph; the problem now is a change in place."),
            ),
        ),
        "detach_inside": _course_quiz(
            _("Why is a .detach() inside network 2 (after its first layer) the wrong fix?"),
            (
                _("It silences the errors by cutting the graph: n_2.linear_1 never gets a gradient"),
                _(
                    "The detach stops every gradient below it: network 2's first layer gets no gradient "
                    "from any loss and stays at its random initialization, a layer of capacity lost. No error "
                    "tells you so; the grad table does."
                ),
            ),
            (
                _("It is the same as n_2(pred_1.detach())"),
                _(
                    "Both cut loss_2 off from network 1, which the original loop never trained with loss_2 "
                    "anyway. But detaching the input leaves every layer of network 2 learning; detaching inside "
                    "cuts network 2's own first layer off."
                ),
            ),
            (
                _("detach() copies the activations and doubles the memory"),
                _("detach() returns a tensor sharing the same storage, without grad history; it copies nothing."),
            ),
            (
                _("It makes the step sizes of Adam wrong"),
                _("Adam only sees the gradients it gets; the problem is that some parameters get none."),
            ),
        ),
        "original_intent": _course_quiz(
            _(
                "In the original loop, loss_2.backward() comes after opt_1.step(). Had it run, what would loss_2 "
                "have done to network 1's training?"
            ),
            (
                _(
                    "Nothing: its gradient for n_1 arrives after opt_1.step(), and opt_1.zero_grad() clears it "
                    "before the next step"
                ),
                _(
                    "So the loop trains n_1 from loss_1 only: fix (a), n_2(pred_1.detach()), is the loop "
                    "repaired. Run with the version check off, the original loop is bitwise equal to (a) after "
                    "100 steps (notebook 06)."
                ),
            ),
            (
                _("n_1 would learn from loss_1 + loss_2, as with (loss_1 + loss_2).backward()"),
                _(
                    "That is fix (b), a different training: there both gradients are in .grad before "
                    "opt_1.step(). In the original order loss_2's gradient arrives after the step."
                ),
            ),
            (
                _("n_1 would learn from loss_2 at the next iteration's step"),
                _(
                    "opt_1.zero_grad() runs before loss_1.backward() in every iteration, so loss_2's gradient "
                    "is cleared before any step uses it."
                ),
            ),
            (
                _("n_1 would learn wrong values, because the step changed its weights"),
                _(
                    "The step did change them, and with retain_graph=True autograd would refuse for that "
                    "(failure 2); but the original loop fails first, at the freed graph (failure 1), and even a "
                    "correct gradient would arrive after opt_1.step(), too late to be used."
                ),
            ),
        ),
        "repair_in_place": _course_quiz(
            _(
                "Which one-line change makes the original loop run, with every line in its place, and trains "
                "what the loop meant?"
            ),
            (
                "loss_2.backward(inputs=list(n_2.parameters()))",
                _(
                    "Backward then accumulates into network 2's parameters only and never enters network 1's "
                    "freed, stepped part of the graph. Same training as n_2(pred_1.detach()), bitwise "
                    "(notebook 06)."
                ),
            ),
            (
                "loss_1.backward(retain_graph=True)",
                _(
                    "The graph is kept, but opt_1.step() still changes a weight it saved: the error becomes "
                    "'... is at version 2; expected version 1' (failure 2)."
                ),
            ),
            (
                _("(loss_1 + loss_2).backward() instead of loss_2.backward()"),
                _(
                    "At that place loss_1's graph is already freed by loss_1.backward() and stepped by "
                    "opt_1.step(): it fails too. Fix (b) moves lines (both forwards, one backward of the sum, "
                    "then both steps), and it is a different training: loss_2 then trains network 1."
                ),
            ),
            (
                _("x = self.linear_1(x).detach() inside network 2"),
                _("It runs, but network 2's first layer then gets no gradient from any loss: not what the loop meant."),
            ),
        ),
        "softmax": _course_quiz(
            _("What does torch.softmax(x, dim=1) return for x of shape [10, 1] (one output per row)?"),
            (
                _("All ones: its gradient is zero, so nothing before it learns"),
                _(
                    "Each row is normalized over a single value: exp(v) / exp(v) = 1. A constant output has a "
                    "zero gradient. Tick 'softmax over dim=1' in the playground: no parameter changes."
                ),
            ),
            (
                _("The probabilities of the 10 samples, summing to 1"),
                _("That would be dim=0, across the batch, which mixes samples. dim=1 has one element."),
            ),
            (
                _("x unchanged"),
                _("softmax never returns its input: exp(v) / sum(exp) over one value is always 1."),
            ),
            (
                _("An error, because softmax needs at least two values"),
                _("It runs without a word, which is what makes this bug hard to find."),
            ),
        ),
    }


#: The course's questions by id, in the language in effect (NOTE [Texts in the language in effect]):
#: ``gradlab.course.quiz("retain_graph")`` shows one. Options are written answer first; :func:`quiz`
#: shuffles them for display.
QUESTIONS: Mapping[str, Quiz] = Localized(_questions)


def question(
    question: str | Quiz, options: Mapping[str, str] | None = None, answer: str | None = None
) -> tuple[Quiz, str | None]:
    """The quiz to show (a course question by id, a Quiz, or the parts of one) and the key of its option order."""
    if isinstance(question, Quiz):
        if options is not None or answer is not None:
            raise TypeError("pass either a Quiz or question, options and answer, not both")
        return question, None
    if options is None and answer is None and isinstance(question, str) and question in QUESTIONS:
        return QUESTIONS[question], question
    if options is None or answer is None:
        raise TypeError(
            "quiz() needs question, options (option text -> explanation) and answer, "
            f"or the id of one of the course's questions: {list(QUESTIONS)}"
        )
    return Quiz(question, options, answer), None
