"""gradlab.edits: a fix as an edit of the user's file, checked before it is printed as code."""

from __future__ import annotations

import pytest

from gradlab.edits import Edit, apply_edits, check_edits, unified_diff

pytestmark = pytest.mark.library

LOOP = "h = None\nfor x in xs:\n    h = rnn(x, h)\n    loss = head(h).sum()\n    loss.backward()\n"
NAMES = {"xs", "rnn", "head"}


def test_replace_insert_and_delete() -> None:
    replaced = apply_edits(LOOP, [Edit("t.py", 3, 3, "    h = rnn(x, None if h is None else h.detach())")])
    assert replaced.splitlines()[2] == "    h = rnn(x, None if h is None else h.detach())"
    inserted = apply_edits(LOOP, [Edit("t.py", 3, 2, "    h = h.detach()")])
    assert inserted.splitlines()[2:4] == ["    h = h.detach()", "    h = rnn(x, h)"]
    deleted = apply_edits(LOOP, [Edit("t.py", 5, 5, "")])
    assert "loss.backward()" not in deleted and deleted.count("\n") == 4


def test_edits_refer_to_the_original_lines() -> None:
    both = apply_edits(LOOP, [Edit("t.py", 5, 5, "    loss.backward()  # b"), Edit("t.py", 2, 1, "# a")])
    assert both.splitlines()[1] == "# a" and both.splitlines()[-1] == "    loss.backward()  # b"


def test_bad_edits_are_refused_with_a_sentence() -> None:
    with pytest.raises(ValueError, match="overlap"):
        apply_edits(LOOP, [Edit("t.py", 2, 3, "x"), Edit("t.py", 3, 4, "y")])
    with pytest.raises(ValueError, match="past the end"):
        apply_edits(LOOP, [Edit("t.py", 9, 9, "x")])
    with pytest.raises(ValueError, match="start - 1"):
        Edit("t.py", 3, 1, "x")
    with pytest.raises(TypeError, match="path of the file"):
        Edit("", 1, 1, "x")


def test_check_accepts_code_that_parses_and_uses_known_names() -> None:
    assert check_edits(LOOP, [Edit("t.py", 3, 3, "    h = rnn(x, None if h is None else h.detach())")], NAMES) is None
    new = "    hs = [t.detach() for t in h]\n    f = lambda t: t.detach()\n    h = tuple(map(f, hs))"
    assert check_edits(LOOP, [Edit("t.py", 3, 2, new)], NAMES) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("    state = state.detach()", "names the script does not have there: state"),
        ("    return self.main(x)", "'return' outside function"),
        ("    h = rnn(x, h.detach(", "does not parse"),
        ("    出错的损失.backward(inputs=list(model_2.parameters()))", "model_2, 出错的损失"),
    ],
)
def test_check_refuses_code_that_would_not_run(text: str, reason: str) -> None:
    found = check_edits(LOOP, [Edit("t.py", 5, 5, text)], NAMES)
    assert found is not None and reason in found


def test_unified_diff_names_the_file() -> None:
    patched = apply_edits(LOOP, [Edit("t.py", 3, 2, "    h = h.detach()")])
    diff = unified_diff(LOOP, patched, "train.py")
    assert diff.startswith("--- a/train.py\n+++ b/train.py\n") and "+    h = h.detach()\n" in diff
