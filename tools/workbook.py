"""Which cells of a course notebook go in the printed workbook, and the space to write in.

The workbook is what a workshop hands out: per notebook its goals, the key code
and pictures, and every prediction prompt and exercise task with ruled lines to
write on. The notebooks choose by cell tags, so the workbook
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
``summary``        never: a summary restates the answers, and would share a
                   page or a spread with the prompts; it is in the full handout
``solution``       never (nor ``navigation`` or ``colab``), whatever other tag it has
=================  ==========================================================

A prediction on paper needs the code it asks about and must not show its
answer. The cells after a ``predict`` prompt, up to the next heading or the
next ``predict``/``exercise``/``summary`` cell, are its *reveal*: the first code
cell of the reveal is the code the prompt asks about and prints inside the
prompt's block (code only, kept on one page with the prompt and its lines; a
cell where the learner types the guess or the answer, ``guess = ...`` or a
function whose body is ``...``, is skipped: on paper the ruled lines take it).
No other reveal cell prints: its code or text is the answer. A notebook that
wants a picture printed after a prompt gives it its own heading. A code cell
tagged ``predict`` is its own code.

An ``exercise`` prompt prints the same way with the code it asks about: the
first code cell after it (up to the next heading, prompt or solution) that is
neither the learner's entry cell nor a check (a call of ``course.check_...`` or
``course.verify``); its outputs never print.

A notebook with no ``summary`` tag lends its last markdown cell that opens with
a ``Summary`` heading. ``<details>`` blocks (collapsed answers) are dropped from
every workbook cell. The number of ruled lines can be set per cell with the
cell metadata ``"answer_lines": 6``.
"""

from __future__ import annotations

import ast
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
INCLUDED = {PREDICT, EXERCISE, WORKBOOK, WORKBOOK_CODE}
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


def _is_blank(node: ast.stmt) -> bool:
    """``name = ...`` or ``def f(...): ...`` (a docstring and ``...`` at most): a place for the learner's answer."""
    if isinstance(node, ast.Assign):
        return isinstance(node.value, ast.Constant) and node.value.value is Ellipsis
    if isinstance(node, ast.FunctionDef):
        body = [
            b
            for b in node.body
            if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str))
        ]
        return (
            len(body) == 1
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and body[0].value.value is Ellipsis
        )
    return False


def is_entry(cell: nbformat.NotebookNode) -> bool:
    """A cell where the learner writes a guess or an answer: only ``name = ...`` lines or ``def f(...): ...`` blanks."""
    if cell.cell_type != "code":
        return False
    try:
        tree = ast.parse(cell.source)
    except SyntaxError:
        return False
    return bool(tree.body) and all(_is_blank(node) for node in tree.body)


_CHECK = re.compile(r"\bcourse\.(?:check_\w+|verify)\(")


def is_check(cell: nbformat.NotebookNode) -> bool:
    """A cell that judges the learner's answer (it calls ``course.check_...`` or ``course.verify``)."""
    return cell.cell_type == "code" and bool(_CHECK.search(cell.source))


def asked_code(notebook: nbformat.NotebookNode, at: int) -> int | None:
    """The code cell the prompt (or task) at ``at`` asks about: itself if it is code, else the first code cell of
    its reveal that is neither the learner's entry cell (``guess = ...``: on paper the ruled lines take it) nor,
    after an exercise, a check."""
    if notebook.cells[at].cell_type == "code":
        return at
    task = EXERCISE in tags(notebook.cells[at])
    for i in reveal(notebook, at):
        cell = notebook.cells[i]
        if task and SOLUTION in tags(cell):
            return None  # what follows a task's solution is no longer the task's
        if (
            cell.cell_type == "code"
            and not tags(cell) & EXCLUDED
            and not is_entry(cell)
            and not (task and is_check(cell))
        ):
            return i
    return None


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


def summary_at(notebook: nbformat.NotebookNode) -> int | None:
    """Where the notebook's summary is: the cell tagged ``summary``, else its last markdown cell that opens with a
    ``Summary`` heading."""
    tagged = [at for at, cell in enumerate(notebook.cells) if SUMMARY in tags(cell) and not tags(cell) & EXCLUDED]
    if tagged:
        return tagged[-1]
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
    summary = summary_at(notebook)
    asked: dict[int, int] = {}  # code cell -> the markdown prompt (or task) it prints in
    answers: set[int] = set()  # cells that reveal a prompt's answer
    for at, cell in enumerate(notebook.cells):
        if tags(cell) & EXCLUDED:
            continue
        if PREDICT in tags(cell):
            answers.update(reveal(notebook, at))
        if tags(cell) & {PREDICT, EXERCISE} and cell.cell_type == "markdown":
            code = asked_code(notebook, at)
            if code is not None and code not in asked:
                asked[code] = at
    prompt_code = {prompt: notebook.cells[code].source for code, prompt in asked.items()}
    result = copy.deepcopy(notebook)
    result.cells = []
    for at, original in enumerate(notebook.cells):
        cell_tags = tags(original)
        if cell_tags & EXCLUDED or at in asked:
            continue
        if at == summary or not (at == first_markdown or cell_tags & INCLUDED):
            continue
        if at in answers:
            continue  # it shows or explains the answer
        cell = copy.deepcopy(original)
        if cell.cell_type == "markdown":
            cell.source = _DETAILS.sub("", cell.source).rstrip()
        if cell.cell_type == "code" and WORKBOOK_CODE in cell_tags:
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


# ---------------------------------------------------------------- what gives a prediction away

#: Words a code comment uses to state what running the code does ("# no error"): never in the code a prompt
#: asks about.
OUTCOME_WORDS = {
    "en": re.compile(r"(?i)\b(?:no error|raises?|fails?|runs fine|works|silently)\b"),
    "zh": re.compile(r"不报错|没有报错|报错了|会报错|出错|失败|静默"),
}
_CLAUSE = re.compile(r"(?<=[.;:!?])\s+|(?<=[。；：！？])|\n\s*[-*]\s+|\n\n")


def _clauses(text: str) -> list[str]:
    return [part.strip() for part in _CLAUSE.split(text) if part and part.strip()]


def _success_texts(source: str) -> list[str]:
    """The ``success=`` sentences of the checks a code cell runs (what the answer was, in the course's words)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg == "success" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.append(value.value)
    return found


def _output_text(output: nbformat.NotebookNode) -> str:
    data = output.get("data", {})
    html = re.sub(r"<[^>]+>", " ", data.get("text/html", ""))
    return "\n".join([output.get("text", ""), output.get("evalue", ""), data.get("text/plain", ""), html])


def answer_texts(notebook: nbformat.NotebookNode, at: int, lang: str = "en") -> list[tuple[str, str]]:
    """What states the answer of the prompt at ``at``, as ``(where, text)``: each sentence of its reveal's text,
    each line of its reveal's outputs, the ``success=`` sentence of each check it runs, and the phrases the
    prompt's metadata declares (``"reveals": {"en": [...], "zh": [...]}``: a summary's own words, say).
    A test looks for them wherever the prompt is read before its reveal: above it on screen, on its page and
    the facing one on paper.
    """
    found: list[tuple[str, str]] = []
    for i in reveal(notebook, at):
        cell = notebook.cells[i]
        if cell.cell_type == "markdown":
            text = re.sub(r"```.*?```", "\n\n", _DETAILS.sub("", cell.source), flags=re.S)  # quoted output
            text = "\n".join(line for line in text.splitlines() if not _HEADING.match(line))
            found += [(f"cell {i} text", clause) for clause in _clauses(text)]
        elif cell.cell_type == "code":
            found += [(f"cell {i} check", clause) for text in _success_texts(cell.source) for clause in _clauses(text)]
            if is_check(cell) or "check_guess(" in cell.source:
                continue  # a verdict line, not the answer
            for output in cell.get("outputs", []):
                found += [(f"cell {i} output", line) for line in _output_text(output).splitlines() if line.strip()]
    declared = notebook.cells[at].get("metadata", {}).get("reveals", {})
    found += [("declared", text) for text in declared.get(lang, [])]
    return found


def code_comments(source: str) -> list[str]:
    """The comments of a code cell (``#`` to the end of a line, outside strings)."""
    import io
    import tokenize

    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.findall(r"#.*$", source, flags=re.M)
