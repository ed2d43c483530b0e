"""The course's own catalog (gradlab/course/locale): complete, in step with the code, and used in the language set."""

from __future__ import annotations

from pathlib import Path

import pytest
from loading import load_module

from gradlab import course
from gradlab.course import words
from gradlab.i18n import set_language

pytestmark = pytest.mark.course

REPO = Path(__file__).resolve().parent.parent
tool = load_module(REPO / "tools" / "course_words.py", "course_words")


def test_every_course_message_is_translated_with_its_placeholders() -> None:
    messages = tool.extract()
    assert len(messages) > 50
    found = [line for lang in tool.languages() for line in tool.problems(lang, messages)]
    assert tool.languages() == ["zh_CN"]
    assert not found, "\n".join(found[:20]) + "\n(fix: python tools/course_words.py update, then translate)"


def test_course_messages_are_not_in_the_library_catalog() -> None:
    library = (REPO / "gradlab" / "locale" / "zh_CN" / "LC_MESSAGES" / "gradlab.po").read_text(encoding="utf-8")
    doubled = [m for m in tool.extract() if f'msgid "{m}"' in library]
    assert not doubled, doubled[:5]


def test_the_language_set_for_gradlab_is_the_course_checks_language() -> None:
    def nothing(n_1, n_2, opt_1, opt_2, criterion, x, y):
        return None

    try:
        set_language("zh_CN")
        chinese = course.check_repaired_loop(nothing).text
        assert words.say("no loss") != "no loss"
    finally:
        set_language("en")
    english = course.check_repaired_loop(nothing).text
    assert "never ran" in english and "never ran" not in chinese
    assert "opt_1.step()" in chinese  # code stays as code


@pytest.mark.parametrize("message", ["a message the catalog does not hold {x}"])
def test_a_message_without_a_translation_stays_english(message: str) -> None:
    try:
        set_language("zh_CN")
        assert words.say_t(message, x=1) == "a message the catalog does not hold 1"
    finally:
        set_language("en")


def test_the_example_runs() -> None:
    import doctest

    result = doctest.testmod(words)
    assert result.attempted >= 2 and result.failed == 0
