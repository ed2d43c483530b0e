"""Which cells of a course notebook go in the printed workbook, and the space to write in.

The workbook is what a workshop hands out: per notebook its goals, the key code
and pictures, every prediction prompt and exercise task with ruled lines to
write on, and the summary. The notebooks choose by cell tags, so the workbook
follows the course:

=================  ==========================================================
tag                in the workbook
=================  ==========================================================
(first markdown)   always: the title and the learning goals (the first one not excluded below)
``predict``        the prompt, then ruled lines ("Your prediction")
``exercise``       the task, then more ruled lines ("Your answer"); a code
                   cell shows its code, never its outputs
``workbook``       as it is: code with its outputs and pictures, or text
``summary``        as it is
``solution``       never (nor ``navigation`` or ``colab``), whatever other tag it has
=================  ==========================================================

A notebook with no ``summary`` tag lends its last markdown cell that opens with
a ``Summary`` heading. ``<details>`` blocks (collapsed answers) are dropped from
every workbook cell. The number of ruled lines can be set per cell with the
cell metadata ``"answer_lines": 6``.
"""

from __future__ import annotations

import copy
import re

import nbformat

PREDICT, EXERCISE, SOLUTION, WORKBOOK, SUMMARY, NAVIGATION, COLAB = (
    "predict",
    "exercise",
    "solution",
    "workbook",
    "summary",
    "navigation",
    "colab",
)
INCLUDED = {PREDICT, EXERCISE, WORKBOOK, SUMMARY}
EXCLUDED = {SOLUTION, NAVIGATION, COLAB}
ANSWER_LINES = {PREDICT: 4, EXERCISE: 7}

_DETAILS = re.compile(r"<details\b.*?</details\s*>", re.I | re.S)
_SUMMARY_HEADING = re.compile(r"^\s*#{1,6}\s*Summary\b", re.I)


def tags(cell: nbformat.NotebookNode) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def prompts(notebook: nbformat.NotebookNode, tag: str = PREDICT) -> list[nbformat.NotebookNode]:
    """The cells tagged ``tag`` that the workbook prints (a ``solution`` tag wins)."""
    return [cell for cell in notebook.cells if tag in tags(cell) and not tags(cell) & EXCLUDED]


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
    result = copy.deepcopy(notebook)
    result.cells = []
    for at, original in enumerate(notebook.cells):
        cell_tags = tags(original)
        if cell_tags & EXCLUDED:
            continue
        if not (at in (first_markdown, summary) or cell_tags & INCLUDED):
            continue
        cell = copy.deepcopy(original)
        if cell.cell_type == "markdown":
            cell.source = _DETAILS.sub("", cell.source).rstrip()
        kind = PREDICT if PREDICT in cell_tags else EXERCISE if EXERCISE in cell_tags else None
        if kind is None:
            result.cells.append(cell)
            continue
        lines = int(cell.metadata.get("answer_lines", ANSWER_LINES[kind]))
        space = answer_space(kind, labels["prediction" if kind == PREDICT else "answer"], lines)
        if cell.cell_type == "markdown":
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
