"""Which cells of a course notebook go in the printed workbook, and the space to write in.

The workbook is what a workshop hands out: per notebook its goals, the key code
and pictures, every prediction prompt and exercise task with ruled lines to
write on, and the summary. The notebooks choose by cell tags, so the workbook
follows the course:

=================  ==========================================================
tag                in the workbook
=================  ==========================================================
(first markdown)   always: the title and the learning goals (the first one not excluded below)
``predict``        the prompt, the code it asks about, then ruled lines
                   ("Your prediction"); never its answer (see below)
``exercise``       the task, then more ruled lines ("Your answer"); a code
                   cell shows its code, never its outputs
``workbook``       as it is: code with its outputs and pictures, or text
``workbook-code``  a code cell's code, without its outputs
``summary``        as it is
``solution``       never (nor ``navigation`` or ``colab``), whatever other tag it has
=================  ==========================================================

A prediction on paper needs the code it asks about and must not show its
answer. The cells after a ``predict`` prompt, up to the next heading or the
next ``predict``/``exercise``/``summary`` cell, are its *reveal*: the first code
cell of the reveal is the code the prompt asks about and prints inside the
prompt's block (code only, kept on one page with the prompt and its lines; a
cell where the learner types the guess, ``guess = ...``, is skipped: on paper
the ruled lines take it);
every other reveal cell prints as code only (a ``workbook`` code cell) or not at
all (markdown: it explains the answer). A notebook that wants a picture printed
after a prompt gives it its own heading. A code cell tagged ``predict`` is its
own code.

A notebook with no ``summary`` tag lends its last markdown cell that opens with
a ``Summary`` heading. ``<details>`` blocks (collapsed answers) are dropped from
every workbook cell. The number of ruled lines can be set per cell with the
cell metadata ``"answer_lines": 6``.
"""

from __future__ import annotations

import copy
import re

import nbformat

PREDICT, EXERCISE, SOLUTION, WORKBOOK, WORKBOOK_CODE, SUMMARY, NAVIGATION, COLAB = (
    "predict",
    "exercise",
    "solution",
    "workbook",
    "workbook-code",
    "summary",
    "navigation",
    "colab",
)
INCLUDED = {PREDICT, EXERCISE, WORKBOOK, WORKBOOK_CODE, SUMMARY}
EXCLUDED = {SOLUTION, NAVIGATION, COLAB}
ANSWER_LINES = {PREDICT: 4, EXERCISE: 7}

_DETAILS = re.compile(r"<details\b.*?</details\s*>", re.I | re.S)
_SUMMARY_HEADING = re.compile(r"^\s*#{1,6}\s*Summary\b", re.I)
_HEADING = re.compile(r"^\s*#{1,6}\s")


def tags(cell: nbformat.NotebookNode) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def prompts(notebook: nbformat.NotebookNode, tag: str = PREDICT) -> list[nbformat.NotebookNode]:
    """The cells tagged ``tag`` that the workbook prints (a ``solution`` tag wins)."""
    return [cell for cell in notebook.cells if tag in tags(cell) and not tags(cell) & EXCLUDED]


def reveal(notebook: nbformat.NotebookNode, at: int) -> list[int]:
    """The cells after the prompt at ``at`` that answer it: up to the next heading or prompt, task or summary."""
    found = []
    for after in range(at + 1, len(notebook.cells)):
        cell = notebook.cells[after]
        if (cell.cell_type == "markdown" and _HEADING.match(cell.source)) or tags(cell) & {PREDICT, EXERCISE, SUMMARY}:
            break
        found.append(after)
    return found


_ENTRY_LINE = re.compile(r"^\s*[A-Za-z_]\w*\s*=\s*\.\.\.\s*(?:#.*)?$")


def is_entry(cell: nbformat.NotebookNode) -> bool:
    """A cell where the learner writes a guess or an answer: every line ``name = ...`` (or a comment)."""
    lines = [line for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("#")]
    return cell.cell_type == "code" and bool(lines) and all(_ENTRY_LINE.match(line) for line in lines)


def asked_code(notebook: nbformat.NotebookNode, at: int) -> int | None:
    """The code cell the prompt at ``at`` asks about: itself if it is code, else the first code cell of its
    reveal that is not the learner's entry cell (``guess = ...``: on paper the ruled lines take the guess)."""
    if notebook.cells[at].cell_type == "code":
        return at
    return next(
        (
            i
            for i in reveal(notebook, at)
            if notebook.cells[i].cell_type == "code"
            and not tags(notebook.cells[i]) & EXCLUDED
            and not is_entry(notebook.cells[i])
        ),
        None,
    )


def code_block(source: str) -> str:
    """``source`` as a fenced Python block of a markdown cell (a fence longer than any backtick run in it)."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", source)), default=0))
    return f"{fence}python\n{source.rstrip()}\n{fence}"


def answer_space(kind: str, label: str, lines: int) -> str:
    """Ruled lines to write on, as an HTML block (a markdown cell passes it through)."""
    rules = '<div class="handout-rule"></div>' * lines
    return (
        f'<div class="handout-answer handout-answer-{kind}">'
        f'<div class="handout-answer-label">{label}</div>{rules}</div>'
    )


def _summary_fallback(notebook: nbformat.NotebookNode) -> int | None:
    if any(SUMMARY in tags(cell) for cell in notebook.cells):
        return None
    found = None
    for at, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown" and _SUMMARY_HEADING.match(cell.source) and not tags(cell) & EXCLUDED:
            found = at
    return found


def workbook_notebook(notebook: nbformat.NotebookNode, labels: dict[str, str]) -> nbformat.NotebookNode:
    """A copy of ``notebook`` holding only its workbook cells, prompts followed by ruled lines.

    ``labels`` names the ruled space: ``labels["prediction"]`` under a
    ``predict`` cell, ``labels["answer"]`` under an ``exercise`` cell.
    """
    first_markdown = next(
        (at for at, cell in enumerate(notebook.cells) if cell.cell_type == "markdown" and not tags(cell) & EXCLUDED),
        None,
    )
    summary = _summary_fallback(notebook)
    asked: dict[int, int] = {}  # code cell -> the markdown prompt it prints in
    answers: set[int] = set()  # cells that reveal a prompt's answer
    for at, cell in enumerate(notebook.cells):
        if PREDICT in tags(cell) and not tags(cell) & EXCLUDED:
            answers.update(reveal(notebook, at))
            code = asked_code(notebook, at)
            if code is not None and code != at:
                asked[code] = at
    prompt_code = {prompt: notebook.cells[code].source for code, prompt in asked.items()}
    result = copy.deepcopy(notebook)
    result.cells = []
    for at, original in enumerate(notebook.cells):
        cell_tags = tags(original)
        if cell_tags & EXCLUDED or at in asked:
            continue
        if not (at in (first_markdown, summary) or cell_tags & INCLUDED):
            continue
        if at in answers and original.cell_type == "markdown":
            continue  # it explains the answer
        cell = copy.deepcopy(original)
        if cell.cell_type == "markdown":
            cell.source = _DETAILS.sub("", cell.source).rstrip()
        if cell.cell_type == "code" and (at in answers or WORKBOOK_CODE in cell_tags):
            cell.outputs = []
            cell.execution_count = None
        kind = PREDICT if PREDICT in cell_tags else EXERCISE if EXERCISE in cell_tags else None
        if kind is None:
            result.cells.append(cell)
            continue
        lines = int(cell.metadata.get("answer_lines", ANSWER_LINES[kind]))
        space = answer_space(kind, labels["prediction" if kind == PREDICT else "answer"], lines)
        if cell.cell_type == "markdown":
            if at in prompt_code:
                cell.source += "\n\n" + code_block(prompt_code[at])
            cell.source += "\n\n" + space
            result.cells.append(cell)
        else:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
            result.cells.append(cell)
            after = nbformat.v4.new_markdown_cell(space, metadata={"tags": [kind]})
            result.cells.append(after)
    for number, cell in enumerate(result.cells):
        cell["id"] = f"workbook-{number}"
    return result
