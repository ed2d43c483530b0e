"""Units of the handout builder that need no browser: the traceback cut and the workbook's cells."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from loading import load_module

pytestmark = [pytest.mark.course, pytest.mark.slow]

TOOLS = Path(__file__).resolve().parent.parent / "tools"


tracebacks = load_module(TOOLS / "handout_tracebacks.py", "handout_tracebacks")
workbook = load_module(TOOLS / "workbook.py", "workbook")
LABELS = {"prediction": "Your prediction", "answer": "Your answer"}


# ------------------------------------------------------------------ tracebacks


@pytest.mark.parametrize(
    "path, library",
    [
        ("<site-packages>/torch/_tensor.py", "torch"),
        ("/usr/lib/python3/dist-packages/torch/autograd/graph.py", "torch"),
        ("/opt/venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py", "numpy"),
        ("/opt/venv/lib/python3.11/site-packages/six.py", "six"),
        ("gradlab/track.py", "gradlab"),
        ("/srv/course/gradlab/course/networks.py", "gradlab"),
        ("/usr/lib/python3.11/contextlib.py", "Python"),
        ("<cell>", None),
        ("/srv/course/notebooks/helpers.py", None),
        ("/srv/gradlab/notebooks/helpers.py", None),  # a checkout named after the project is the reader's code
        ("train.py", None),
    ],
)
def test_library_frames_are_told_from_the_readers_own(path: str, library: str | None) -> None:
    assert tracebacks.library_of(path) == library


@pytest.mark.parametrize(
    "entry, path",
    [
        ("\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[4]\x1b[39m\x1b[32m, line 14\x1b[39m\n---> 14 x\n", "<cell>"),
        ("Input In [3], in <cell line: 2>()\n", "<cell>"),
        (
            "\x1b[36mFile <site-packages>/torch/_tensor.py:623\x1b[39m, in \x1b[36mTensor.backward\x1b[39m(self)\n",
            "<site-packages>/torch/_tensor.py",
        ),
        (
            '  File "/usr/lib/python3.11/contextlib.py", line 144, in __exit__\n    next(self.gen)\n',
            "/usr/lib/python3.11/contextlib.py",
        ),
        ("File ~/course/train.py:17, in main()\n", "~/course/train.py"),
        ("\x1b[31mRuntimeError\x1b[39m: Trying to backward through the graph a second time", None),
        ("\ngradlab: backward() would fail (autograd graph: 3 nodes)", None),
        ("\x1b[31m-------------------------------\x1b[39m", None),
    ],
)
def test_frame_entries_are_recognised(entry: str, path: str | None) -> None:
    assert tracebacks.frame_file(entry) == path


def test_a_cut_keeps_cells_errors_notes_and_counts_each_run_of_library_frames() -> None:
    cell = "Cell In[5], line 2\n----> 2 step()\n"
    own = "File ~/course/train.py:9, in step()\n----> 9 loss.backward()\n"
    torch_frame = "File <site-packages>/torch/_tensor.py:623, in Tensor.backward(self)\n"
    gradlab_frame = "File gradlab/track.py:94, in _Spy.__torch_function__(self)\n"
    stdlib = 'File "/usr/lib/python3.11/contextlib.py", line 144, in __exit__\n'
    entries = [
        "-" * 40,
        "RuntimeError     Traceback (most recent call last)",
        cell,
        stdlib,
        own,
        torch_frame,
        gradlab_frame,
        torch_frame,
        "RuntimeError: the error line",
        "\ngradlab: the diagnosis note",
    ]
    assert tracebacks.cut_traceback(entries) == [
        "-" * 40,
        "RuntimeError     Traceback (most recent call last)",
        cell,
        "… 1 library frame omitted (Python)\n",
        own,
        "… 3 library frames omitted (torch, gradlab)\n",
        "RuntimeError: the error line",
        "\ngradlab: the diagnosis note",
    ]


def test_frames_hidden_by_ipython_count_into_the_omitted_line() -> None:
    entries = [
        "Cell In[9], line 7\n----> 7 loss.backward()\n",
        "File <site-packages>/torch/_tensor.py:623, in Tensor.backward(self)\n",
        "    \x1b[31m[... skipping hidden 2 frame]\x1b[39m\n",
        "File gradlab/saved.py:40, in unpack(p)\n",
        "    [... skipping hidden 1 frame]\n",
        "RuntimeError: the error line",
    ]
    assert tracebacks.cut_traceback(entries) == [
        entries[0],
        "… 5 library frames omitted (torch, gradlab)\n",
        "RuntimeError: the error line",
    ]
    only_hidden = ["Cell In[1], line 1\n", "    [... skipping hidden 3 frames]\n", "ValueError: x"]
    assert tracebacks.cut_traceback(only_hidden)[1] == "… 3 library frames omitted\n"


def test_without_context_a_cell_frame_keeps_only_its_failing_line() -> None:
    cell = (
        "\x1b[36mCell In[4], line 14\x1b[39m\n\x1b[32m     13\x1b[39m     loss_2 = criterion(y, pred_2)\n"
        "\x1b[32m---> \x1b[39m\x1b[32m14\x1b[39m     loss_2.backward()\n\x1b[32m     15\x1b[39m     opt_2.step()\n"
    )
    own = "File ~/course/train.py:9, in step()\n      8 x = 1\n----> 9 loss.backward()\n"
    entries = [cell, own, "RuntimeError: boom"]
    assert tracebacks.cut_traceback(entries) == entries
    short = tracebacks.cut_traceback(entries, context=False)
    assert [tracebacks.plain(entry) for entry in short] == [
        "Cell In[4], line 14\n---> 14     loss_2.backward()\n",
        own,  # only cell frames lose their context: the workbook prints the cell right above
        "RuntimeError: boom",
    ]


def test_a_traceback_of_the_readers_code_only_is_left_whole() -> None:
    entries = ["Cell In[1], line 1\n----> 1 1/0\n", "ZeroDivisionError: division by zero"]
    assert tracebacks.cut_traceback(entries) == entries
    assert tracebacks.cut_traceback([]) == []


def test_a_chained_exception_keeps_both_errors_and_the_link_between_them() -> None:
    entries = [
        "Cell In[2], line 3\n",
        "File <site-packages>/torch/nn/modules/module.py:1775, in _call_impl()\n",
        "KeyError: 'w'",
        "\nThe above exception was the direct cause of the following exception:\n",
        "Cell In[2], line 5\n",
        "File <site-packages>/torch/serialization.py:1, in load()\n",
        "RuntimeError: bad",
    ]
    cut = tracebacks.cut_traceback(entries)
    assert [e for e in cut if "omitted" in e] == ["… 1 library frame omitted (torch)\n"] * 2
    assert "KeyError: 'w'" in cut and "RuntimeError: bad" in cut
    assert any("direct cause" in e for e in cut)


# ------------------------------------------------------------------ workbook cells


def notebook(*cells: tuple[str, str, list[str]]) -> nbformat.NotebookNode:
    """A notebook of (kind, source, tags) cells; a code cell's output repeats its source in capitals."""
    nb = nbformat.v4.new_notebook()
    for kind, source, tags in cells:
        if kind == "code":
            cell = nbformat.v4.new_code_cell(
                source, outputs=[nbformat.v4.new_output("stream", name="stdout", text=source.upper())]
            )
        else:
            cell = nbformat.v4.new_markdown_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


def sources(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in nb.cells]


def test_the_workbook_takes_the_first_markdown_cell_and_the_tagged_cells() -> None:
    nb = notebook(
        ("code", "import torch", []),
        ("markdown", "# 01 · Title\n\n**Learning goals**\n\n- one", []),
        ("markdown", "Plain prose, screen only.", []),
        ("code", "loop()", ["workbook", "raises-exception"]),
        ("code", "hidden()", ["raises-exception"]),
        ("markdown", "A note for the workbook.", ["workbook"]),
        ("markdown", "## Summary\n\n- it", ["summary"]),
        ("markdown", "## Summary (an old one)", []),
        ("markdown", "[next](02_x.ipynb)", ["navigation"]),
    )
    chosen = workbook.workbook_notebook(nb, LABELS)
    assert sources(chosen) == [
        "# 01 · Title\n\n**Learning goals**\n\n- one",
        "loop()",
        "A note for the workbook.",
    ], "no summary: it restates the answers (the full handout prints it)"
    assert chosen.cells[1].outputs[0].text == "LOOP()", "key code keeps its outputs"
    assert len({cell.id for cell in chosen.cells}) == len(chosen.cells)
    assert len(nb.cells) == 9, "the notebook itself is left as it was"


def test_prompts_and_tasks_get_ruled_lines_and_solutions_never_print() -> None:
    nb = notebook(
        ("markdown", "# Title", []),
        ("markdown", "**Predict:** will it run?\n\n<details><summary>Answer</summary>No.</details>", ["predict"]),
        ("code", "# Solution\nanswer = 4", ["solution"]),
        ("markdown", "### Exercise\n\nCount the nodes.", ["exercise"]),
        ("code", "count = ...", ["exercise"]),
        ("markdown", "It is 4, see the drawing.", ["exercise", "solution"]),
        ("markdown", "Predict: twice?", ["predict", "solution"]),
    )
    nb.cells[1].metadata["answer_lines"] = 2
    chosen = workbook.workbook_notebook(nb, LABELS)
    text = "\n".join(sources(chosen))
    assert "answer = 4" not in text and "It is 4" not in text and "twice?" not in text, "solution wins"
    assert "No.</details>" not in text and "<details" not in text, "collapsed answers are dropped"
    predict, task, code, space = chosen.cells[1:]
    assert predict.source.startswith("**Predict:** will it run?")
    assert predict.source.count('class="handout-rule"') == 2 and "Your prediction" in predict.source
    assert task.source.count('class="handout-rule"') == workbook.ANSWER_LINES["exercise"]
    assert "Your answer" in task.source
    assert code.source == "count = ..." and code.outputs == [] and code.execution_count is None
    assert "Your answer" in space.source and space.metadata.tags == ["exercise"]
    assert [c.source for c in workbook.prompts(nb)] == [nb.cells[1].source], "prompts() skips solutions"


def test_a_summary_heading_stands_in_for_a_missing_summary_tag() -> None:
    nb = notebook(
        ("markdown", "# Title", []),
        ("markdown", "## Summary of the setup", ["workbook"]),
        ("markdown", "middle", ["workbook"]),
        ("markdown", "## Summary\n\n- the end", ["workbook"]),
        ("markdown", "---\nnext", ["navigation"]),
    )
    assert workbook.summary_at(nb) == 3
    assert sources(workbook.workbook_notebook(nb, LABELS)) == ["# Title", "## Summary of the setup", "middle"]
    nb.cells[2].metadata["tags"] = ["summary"]
    assert workbook.summary_at(nb) == 2, "a tag wins"
    assert sources(workbook.workbook_notebook(nb, LABELS)) == [
        "# Title",
        "## Summary of the setup",
        "## Summary\n\n- the end",
    ]


def test_frames_a_cell_prints_are_cut_like_a_traceback() -> None:
    """Anomaly mode's forward trace, printed by a cell: the cell's and course code's frames stay, torch's are counted."""
    printed = (
        "Error detected in AddmmBackward0. Traceback of forward call that caused the error:\n"
        '  File "<cell>", line 3, in <module>\n'
        "    pred_1 = n_1(x)\n"
        '  File "<site-packages>/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl\n'
        "    return self._call_impl(*args, **kwargs)\n"
        '  File "<site-packages>/torch/nn/modules/module.py", line 1789, in _call_impl\n'
        "    return forward_call(*args, **kwargs)\n"
        '  File "<gradlab>/course/networks.py", line 66, in forward\n'
        "    x = self.linear_2(x)\n"
        '  File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", line 134, in forward\n'
        "    return F.linear(input, self.weight, self.bias)\n"
        " (Triggered internally at python_anomaly_mode.cpp:122.)\n"
    )
    assert tracebacks.cut_printed_frames(printed) == (
        "Error detected in AddmmBackward0. Traceback of forward call that caused the error:\n"
        '  File "<cell>", line 3, in <module>\n'
        "    pred_1 = n_1(x)\n"
        "  … 2 library frames omitted (torch)\n"
        '  File "<gradlab>/course/networks.py", line 66, in forward\n'
        "    x = self.linear_2(x)\n"
        "  … 1 library frame omitted (torch)\n"
        " (Triggered internally at python_anomaly_mode.cpp:122.)\n"
    )
    plain = "loss 0.25\nFile names are not frames\n"
    assert tracebacks.cut_printed_frames(plain) == plain


def test_the_colab_cells_never_print_and_the_title_stays_first() -> None:
    nb = notebook(
        ("markdown", "[![Open in Colab](badge.svg)](https://colab.research.google.com/github/x)", ["colab"]),
        ("code", 'if "google.colab" in sys.modules: ...', ["colab"]),
        ("markdown", "# 01 · Title\n\n**Learning goals**\n\n- one", []),
        ("markdown", "## Summary\n\n- it", ["summary"]),
    )
    assert sources(workbook.workbook_notebook(nb, LABELS)) == ["# 01 · Title\n\n**Learning goals**\n\n- one"]


def test_a_prompt_prints_with_the_code_it_asks_about_and_without_its_answer() -> None:
    nb = notebook(
        ("markdown", "# Title", []),
        ("markdown", "**Predict:** will this loop run?", ["predict"]),
        ("code", "for step in range(2):\n    loss.backward()", ["raises-exception"]),
        ("markdown", "It fails at the second backward: the answer.", []),
        ("code", "print(report)", ["workbook"]),
        ("markdown", "The answer again, tagged for print.", ["workbook"]),
        ("markdown", "## Key code after the reveal", []),
        ("code", "draw(graph)", ["workbook"]),
        ("code", "setup_code()", ["workbook-code"]),
    )
    assert workbook.reveal(nb, 1) == [2, 3, 4, 5], "up to the next heading"
    assert workbook.asked_code(nb, 1) == 2
    chosen = workbook.workbook_notebook(nb, LABELS)
    prompt = chosen.cells[1].source
    assert prompt.startswith("**Predict:** will this loop run?")
    code_at, lines_at = prompt.index("for step in range(2):"), prompt.index("Your prediction")
    assert "```python\n" in prompt and code_at < lines_at, "the code, then the ruled lines, in one block"
    text = "\n".join(sources(chosen))
    assert "the answer" not in text and "tagged for print" not in text, "what explains the answer is not printed"
    assert "print(report)" not in text, "nor the code that shows it, even tagged workbook (no orphan In [ ]:)"
    assert sources(chosen).count("for step in range(2):\n    loss.backward()") == 0, "the asked code prints once"
    drawing = next(cell for cell in chosen.cells if cell.source == "draw(graph)")
    assert drawing.outputs[0].text == "DRAW(GRAPH)", "after a heading a workbook cell keeps its outputs"
    setup = next(cell for cell in chosen.cells if cell.source == "setup_code()")
    assert setup.outputs == [], "workbook-code prints the code alone"


def test_the_reveal_stops_at_the_next_prompt_and_a_solution_is_never_the_asked_code() -> None:
    nb = notebook(
        ("markdown", "**Predict:** one?", ["predict"]),
        ("code", "# Solution\nanswer = 1", ["solution"]),
        ("code", "shown()", []),
        ("markdown", "**Predict:** two?", ["predict"]),
        ("markdown", "no code before the summary", []),
        ("markdown", "## Summary\n\n- s", ["summary"]),
    )
    assert workbook.reveal(nb, 0) == [1, 2] and workbook.asked_code(nb, 0) == 2
    assert workbook.reveal(nb, 3) == [4] and workbook.asked_code(nb, 3) is None
    chosen = workbook.workbook_notebook(nb, LABELS)
    assert "answer = 1" not in "\n".join(sources(chosen))
    assert "```" not in chosen.cells[-1].source and "Your prediction" in chosen.cells[-1].source


def test_code_with_backticks_keeps_its_fence() -> None:
    block = workbook.code_block('print("```")\n')
    assert block.startswith("````python\n") and block.endswith("\n````")


def test_the_learners_guess_cell_is_not_the_code_a_prompt_asks_about() -> None:
    nb = notebook(
        ("markdown", "**Predict:** does it run?", ["predict"]),
        ("code", 'guess = ...  # "runs" or "fails"', []),
        ("code", "loop()", ["raises-exception"]),
        ("code", "course.check_guess(guess, outcome)", []),
    )
    assert workbook.is_entry(nb.cells[1]) and not workbook.is_entry(nb.cells[2])
    assert not workbook.is_entry(nbformat.v4.new_code_cell("x = ...\nprint(x)")), "code that runs is not an entry"
    assert workbook.asked_code(nb, 0) == 2
    prompt = workbook.workbook_notebook(nb, LABELS).cells[0].source
    assert "loop()" in prompt and "guess = ..." not in prompt


def test_an_exercise_prints_the_code_it_asks_about_but_not_its_check_or_what_follows_its_solution() -> None:
    nb = notebook(
        ("markdown", "### Exercise: repair it\n\nThe loop below fails; repair it.", ["exercise"]),
        ("code", "def step():\n    loss.backward()", ["raises-exception"]),
        ("code", "def step():  # the loop above, repaired\n    ...", []),
        ("code", "course.check_actor_critic(step)", []),
        ("markdown", "<details>the fix</details>", ["solution"]),
        ("markdown", "What the repair drops:", []),
        ("code", "measure()", []),
    )
    assert workbook.is_entry(nb.cells[2]), "a function whose body is ... is the learner's entry"
    assert workbook.is_check(nb.cells[3]) and not workbook.is_check(nb.cells[1])
    assert workbook.asked_code(nb, 0) == 1
    task = workbook.workbook_notebook(nb, LABELS).cells[0].source
    assert "```python\ndef step():\n    loss.backward()\n```" in task and "Your answer" in task
    assert "check_actor_critic" not in task and "measure()" not in task
    nb.cells[1].metadata["tags"] = ["solution"]
    assert workbook.asked_code(nb, 0) is None, "past its solution, code is no longer the task's"


def test_what_gives_a_prompt_away_is_read_from_its_reveal() -> None:
    nb = notebook(
        ("markdown", "**Predict:** does it run?", ["predict"]),
        ("code", 'guess = ...  # "runs" or "fails"', []),
        ("code", "loop()", []),
        ("code", 'course.check_guess(guess, kind, success="it fails at the second backward.", hint="read it")', []),
        ("markdown", "## Heading\n\nFailure 1, again. Here the graph was freed.\n\n```text\nquoted output\n```", []),
    )
    nb.cells[0].metadata["reveals"] = {"en": ["fails twice"], "zh": ["失败两次"]}
    found = workbook.answer_texts(nb, 0)
    assert ("cell 3 check", "it fails at the second backward.") in found
    assert ("cell 2 output", "LOOP()") in found and ("declared", "fails twice") in found
    assert not any(where == "cell 3 output" for where, _ in found), "a check's verdict is not the answer"
    assert ("declared", "失败两次") in workbook.answer_texts(nb, 0, "zh")
    assert workbook.reveal(nb, 0) == [1, 2, 3], "a heading ends the reveal"
    assert workbook.code_comments('x = "# not a comment"  # a comment') == ["# a comment"]
