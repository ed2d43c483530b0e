"""A prediction is made before its answer is in sight: nothing above a prompt states its answer, and the code it
asks about carries no comment that says what running it does. (On paper, the same rule for the prompt's page and
the facing one: ``test_handout.py::test_each_prediction_prints_with_its_code_and_never_with_its_answer``.)

What states a prompt's answer is :func:`workbook.answer_texts`: every sentence of the text that reveals it, every
line of the outputs that show it, the ``success=`` sentence of the check that compares the guess with it, and the
phrases the prompt's metadata declares. The tests here read the committed notebooks of both editions, with no
browser; the unit tests below feed them made-up notebooks, so that each rule is seen to fail.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import nbformat
import pytest
from loading import load_module

ROOT = Path(__file__).resolve().parent.parent
handout = load_module(ROOT / "tools" / "handout.py", "handout")
import workbook  # noqa: E402  (tools/ is on sys.path once handout is loaded)

pytestmark = pytest.mark.course

EDITIONS = {
    "en": sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
    "zh": sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")),
}
#: Shorter than this (word characters in English, Chinese characters in Chinese, code spans left out), a
#: sentence is too common to give an answer away by itself.
SHORTEST = {"en": 24, "zh": 8}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def squeezed(text: str) -> str:
    """Only the word characters, lower case: what survives any line breaking, markup and spacing."""
    return "".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower()))


def long_enough(text: str, lang: str) -> bool:
    """Whether ``text`` says enough, outside its code spans, to give an answer away by itself."""
    prose = re.sub(r"`[^`]*`", " ", text)
    return len(_CJK.findall(prose) if lang == "zh" else squeezed(prose)) >= SHORTEST[lang]


def seen_before(notebook: nbformat.NotebookNode, at: int) -> str:
    """What a learner has read above the cell at ``at``: the text, the comments and the outputs (squeezed)."""
    parts = []
    for cell in notebook.cells[:at]:
        if workbook.tags(cell) & {"solution", "navigation", "colab"}:
            continue
        if cell.cell_type == "markdown":
            parts.append(workbook._DETAILS.sub("", cell.source))
        else:
            parts += workbook.code_comments(cell.source)
            parts += [workbook._output_text(output) for output in cell.get("outputs", [])]
    return squeezed("\n".join(parts))


def shown_with(notebook: nbformat.NotebookNode, at: int) -> str:
    """The prompt and the code it asks about: what the learner is meant to see (squeezed)."""
    code = workbook.asked_code(notebook, at)
    return squeezed(notebook.cells[at].source + ("\n" + notebook.cells[code].source if code is not None else ""))


def answered_above(notebook: nbformat.NotebookNode, lang: str) -> list[str]:
    """Each prompt whose answer the notebook states above it, with the sentence that does."""
    found = []
    for at, cell in enumerate(notebook.cells):
        if cell not in workbook.prompts(notebook):
            continue
        before, shown = seen_before(notebook, at), shown_with(notebook, at)
        for where, text in workbook.answer_texts(notebook, at, lang):
            if where.endswith("output"):
                continue  # an output repeats what cells above printed (the error studied, the note's last line)
            key = squeezed(text)
            if (where == "declared" or long_enough(text, lang)) and key not in shown and key in before:
                found.append(f"cell {at}: its answer ({where}) {text.strip()[:70]!r} is above it")
    return found


def outcome_comments(notebook: nbformat.NotebookNode, lang: str) -> list[str]:
    """Each prompt whose code carries a comment saying what running it does (``# no error``)."""
    found = []
    for at, cell in enumerate(notebook.cells):
        if cell not in workbook.prompts(notebook):
            continue
        code = workbook.asked_code(notebook, at)
        if code is None:
            continue
        for comment in workbook.code_comments(notebook.cells[code].source):
            if workbook.OUTCOME_WORDS[lang].search(comment):
                found.append(f"cell {at}: the code it asks about (cell {code}) says {comment!r}")
    return found


CASES = [(lang, path) for lang, paths in EDITIONS.items() for path in paths]


@pytest.mark.parametrize(("lang", "path"), CASES, ids=[f"{lang}-{path.stem[:2]}" for lang, path in CASES])
def test_nothing_above_a_prompt_states_its_answer(lang: str, path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    assert answered_above(notebook, lang) == []


@pytest.mark.parametrize(("lang", "path"), CASES, ids=[f"{lang}-{path.stem[:2]}" for lang, path in CASES])
def test_the_code_a_prompt_asks_about_does_not_say_what_it_does(lang: str, path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    assert outcome_comments(notebook, lang) == []


# ---------------------------------------------------------------- the rules, on made-up notebooks


def made_up(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    return notebook


def tagged(cell: nbformat.NotebookNode, *tags: str, **metadata: object) -> nbformat.NotebookNode:
    cell.metadata["tags"] = list(tags)
    cell.metadata.update(metadata)
    return cell


md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell


def reveal_output(text: str) -> nbformat.NotebookNode:
    return code("print(result)", outputs=[nbformat.v4.new_output("stream", name="stdout", text=text)])


def test_an_answer_stated_in_the_goals_is_found_and_an_open_prompt_is_not() -> None:
    answer = "The loss never changes, and gradlab.track warns at the step."
    prompt = tagged(md("**Predict:** will the loss change in 50 steps?"), "predict")
    check = code(f"course.check_guess(guess, outcome, success={answer!r}, hint='look at the weights')")
    spoiled = made_up(md(f"# 08\n\nIt learns nothing: {answer}"), prompt, code("train()"), check)
    assert answered_above(spoiled, "en") == [
        "cell 1: its answer (cell 3 check) 'The loss never changes, and gradlab.track warns at the step.' is above it"
    ]
    fine = made_up(md("# 08\n\nDoes it learn?"), prompt, code("train()"), check)
    assert answered_above(fine, "en") == []


def test_a_sentence_of_the_reveal_above_the_prompt_is_found_and_a_repeated_output_is_not() -> None:
    """On screen an output above may repeat a line of the reveal (the error studied, a note's last line); on
    paper the reveal's outputs are looked for too (test_handout.py)."""
    prompt = tagged(md("**Predict:** how many graphs are alive after the forward?"), "predict")
    text = md("Two graphs are alive during the next forward pass. The rest is freed.")
    output = "retain_graph=True: graphs holding saved tensors 1 -> 50 (+1 graph per step)"
    above = made_up(md("## Memory\n\nTwo graphs are alive during the next forward pass, as shown below."), prompt,
                    code("run()"), text)  # fmt: skip
    assert [line.split(" '")[0] for line in answered_above(above, "en")] == ["cell 1: its answer (cell 3 text)"]
    printed_above = made_up(reveal_output(output + "\n"), prompt, code("run()"), reveal_output(output + "\n"))
    assert answered_above(printed_above, "en") == []
    assert ("cell 3 output", output) in workbook.answer_texts(printed_above, 1)


def test_a_declared_phrase_catches_a_summary_in_its_own_words() -> None:
    prompt = tagged(
        md("**Predict:** is the gradient through `.data` right?"),
        "predict",
        reveals={"en": ["its gradient is wrong"], "zh": ["它的梯度是错的"]},
    )
    notebook = made_up(md("## Summary\n\n- A write through .data: its gradient is wrong."), prompt, code("y.data *= 2"))
    assert answered_above(notebook, "en") == ["cell 1: its answer (declared) 'its gradient is wrong' is above it"]
    assert ("declared", "它的梯度是错的") in workbook.answer_texts(notebook, 1, "zh")
    assert answered_above(made_up(md("## Start"), prompt, code("y.data *= 2")), "en") == []


def test_a_comment_that_says_what_the_code_does_is_found() -> None:
    prompt = tagged(md("**Predict:** will it raise?"), "predict")
    notebook = made_up(prompt, code("with hooks():\n    loss.backward()  # no error\n"))
    assert outcome_comments(notebook, "en") == ["cell 0: the code it asks about (cell 1) says '# no error'"]
    notebook = made_up(prompt, code("with hooks():\n    loss.backward()  # the line to watch\n"))
    assert outcome_comments(notebook, "en") == []
    zh = made_up(prompt, code("loss.backward()  # 不报错\n"))
    assert outcome_comments(zh, "zh") == ["cell 0: the code it asks about (cell 1) says '# 不报错'"]
