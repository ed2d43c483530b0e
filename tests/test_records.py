"""Notes as data, worded when shown (issue #35, deliver 3): the language of the moment, one mark, one way to name.

A diagnosis keeps names, lines, kinds, edits and claims; its words are :class:`gradlab.i18n.Text`, worded each
time it is shown. So a note made in English and printed after ``set_language("zh_CN")`` is Chinese throughout;
``gradlab.check`` and ``Tracker.check`` find names the one same way; the ``gradlab: `` mark is added once.
"""

from __future__ import annotations

import re

import pytest
import torch

import gradlab
from gradlab.i18n import set_language

pytestmark = pytest.mark.library


def _stepped() -> tuple[torch.Tensor, torch.nn.Module]:
    lin = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = torch.ones(4, 2, requires_grad=True)
    loss = lin(x).sum()
    loss.backward(retain_graph=True)
    opt.step()
    return loss, lin


@pytest.fixture
def english() -> object:
    set_language("en")
    yield
    set_language("en")


def test_a_diagnosis_made_in_english_shows_in_chinese_after_set_language(english: object) -> None:
    loss, lin = _stepped()
    d = gradlab.check(loss, names={"lin": lin})
    made_in_english = str(d)
    assert "was changed after autograd saved it" in made_in_english
    set_language("zh_CN")
    shown = str(d) + "\n" + d.details()
    assert "lin.weight（转置视图）" in shown  # the record's name, worded now
    for english_words in ("was changed by", "transposed view", "trains:", "help:", "cause:", "Fixes, by what"):
        assert english_words not in shown, english_words
    # what stays as it is: the user's code and names, torch's and gradlab's identifiers
    assert "GL0002" in shown and "lin.weight" in shown


def test_check_and_tracker_check_name_a_tensor_alike() -> None:
    """Without names=, both take the models of the caller's frame (check_in; review 2026-12-05 M2)."""

    def inside() -> tuple[gradlab.Problem, gradlab.Problem]:  # in a function, no names=: the frame's models name
        lin = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        x = torch.ones(4, 2, requires_grad=True)
        with gradlab.track() as t:
            loss = lin(x).sum()
            loss.backward(retain_graph=True)
            opt.step()
            return gradlab.check(loss).problems[0], t.check(loss).problems[0]

    by_check, by_tracker = inside()
    assert str(by_check.tensor) == str(by_tracker.tensor) == "lin.weight (transposed view)"
    assert (by_check.given, by_check.view) == (by_tracker.given, by_tracker.view) == ("lin.weight", "transposed")


def test_the_mark_is_added_once_under_a_traceback() -> None:
    loss, lin = _stepped()
    with pytest.raises(RuntimeError) as info, gradlab.track(names={"lin": lin}):
        loss.backward()
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("\ngradlab: error[GL0002")
    assert not str(gradlab.last_diagnosis(info.value)).startswith("gradlab:")
    assert len(re.findall(r"gradlab: gradlab:", notes[0])) == 0


def test_a_fix_keeps_its_words_as_data() -> None:
    loss, lin = _stepped()
    fix = gradlab.check(loss, names={"lin": lin}).fixes[0]
    assert isinstance(fix.trains, gradlab.i18n.Text) and isinstance(fix.summary, gradlab.i18n.Text)
    assert fix.trains.message.startswith("{")  # a message with fields, not a sentence made once
    assert str(fix.trains) == fix.trains  # and it reads as the str it shows
