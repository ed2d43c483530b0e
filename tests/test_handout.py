"""The workshop handout (tools/handout.py): HTML pages, course map, handout.pdf, workbook.pdf, cheatsheet.pdf.

The PDF tests print with headless Chromium and read the PDFs with poppler and
pypdf; they skip with the apt line to run when Chromium or poppler is missing.
Each printed course (the sample notebooks below, the committed notebooks) is
built once per module. The unit tests of the traceback cut and of the
workbook's choice of cells are in tests/test_handout_units.py.
"""

from __future__ import annotations

import base64
import html
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import nbformat
import pytest
from loading import load_module

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
HANDOUT = ROOT / "tools" / "handout.py"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
POPPLER = shutil.which("pdftotext") and shutil.which("pdfinfo")
needs_print = pytest.mark.skipif(
    not (CHROMIUM and POPPLER),
    reason="needs Chromium and poppler: apt-get install chromium poppler-utils (or make system-deps)",
)

# 1x1 red PNG; a graph as tiny SVG, as a stored Graphviz output would be.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
    )
).decode()
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><text x="2" y="14">MulBackward0</text></svg>'


handout = load_module(HANDOUT, "handout")
import handout_paper  # noqa: E402  (tools/ is on sys.path once handout is loaded)
import handout_print  # noqa: E402
import handout_tracebacks  # noqa: E402
import workbook  # noqa: E402

pytestmark = [pytest.mark.course, pytest.mark.slow]


def words(text: str) -> str:
    """Text as pdftotext and a reader see it: ligatures split, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text))


def build(notebooks: Path, out: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(HANDOUT), "--notebooks", str(notebooks), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result, time.monotonic() - started


def pdf_pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, flags=re.M).group(1))


def pdf_raw(pdf: Path) -> list[str]:
    """The text of each page, line by line as pdftotext lays it out (reading order)."""
    # reading order (no -layout): table cells stay whole instead of interleaving
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True)
    pages = text.stdout.split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def pdf_text(pdf: Path) -> list[str]:
    """The text of each page, whitespace collapsed."""
    return [words(page) for page in pdf_raw(pdf)]


def contents(pdf: Path, pages: int = 1) -> dict[str, int]:
    """The table of contents on the cover (its first ``pages`` pages): each entry's text and the page number at its right."""
    text = subprocess.run(
        ["pdftotext", "-layout", "-f", "1", "-l", str(pages), str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    return {words(m.group(1)): int(m.group(2)) for m in re.finditer(r"^\s*(\S.*?)\s{2,}(\d+)\s*$", text, re.M)}


FOOTER = re.compile(r"^\d+\s*/\s*\d+$")


def body_lines(page: str, running: set[str]) -> list[str]:
    """A page's lines without the running header (its first lines) and the page number (its last)."""
    lines = [line.strip() for line in unicodedata.normalize("NFKC", page).splitlines() if line.strip()]
    while lines and lines[0] in running:
        lines.pop(0)
    if lines and FOOTER.match(lines[-1]):
        lines.pop()
    return lines


def running_heads(chapters) -> set[str]:
    """Every text a running header can hold: the chapter titles and the book names."""
    labels = handout.LABELS["en"]
    return {handout.plain_text(c.title) for c in chapters} | {
        labels["course"],
        f"{labels['workbook']} · {labels['course']}",
    }


def markdown_text(source: str) -> str:
    """The HTML of a markdown cell with the numbers of ordered lists written out (tags kept)."""
    rendered = handout.markdown2html_mistune(source)

    def number(match: re.Match[str]) -> str:
        start = int(match.group(1) or 1)
        items = re.split(r"<li\b[^>]*>", match.group(2))
        return items[0] + "".join(f"{start + i}. {item}" for i, item in enumerate(items[1:]))

    return re.sub(r'<ol\b(?:[^>]*\bstart="(\d+)")?[^>]*>(.*?)</ol>', number, rendered, flags=re.S)


def visible(markup: str) -> str:
    """Text without tags."""
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def markdown_pieces(source: str) -> list[str]:
    """The text of a markdown cell block by block (paragraph, list item, table cell, heading, code).

    pdftotext may read a table column by column; within a block it keeps the order.
    """
    blocks = r"</?(?:p|li|td|th|tr|h[1-6]|pre|blockquote|ul|ol|table|div)\b[^>]*>"
    pieces = [visible(piece) for piece in re.split(blocks, markdown_text(source))]
    return [piece for piece in pieces if tokens(piece)]


def contains_tokens(haystack: list[str], needle: list[str]) -> bool:
    return f" {' '.join(needle)} " in f" {' '.join(haystack)} "


REMOTE = [
    re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?\s*(https?:)?//""", re.I),
    re.compile(r"""<link\b[^>]*\bhref\s*=\s*["']?\s*(https?:)?//""", re.I),
    re.compile(r"""<(?!a\b)\w+\b[^>]*\b(src|srcset|poster|data)\s*=\s*["']?\s*(https?:)?//""", re.I),
]
REMOTE_CSS = re.compile(r"""(url\(\s*["']?|@import\s+["'])(https?:)?//""", re.I)


def remote_references(page: str) -> list[str]:
    """Tags and stylesheets that would fetch from the network (plain <a> links are fine)."""
    styles = "\n".join(re.findall(r"<style\b[^>]*>(.*?)</style\s*>", page, flags=re.I | re.S))
    found = [m.group(0) for pattern in REMOTE for m in pattern.finditer(page)]
    return found + [m.group(0) for m in REMOTE_CSS.finditer(styles)]


# A frame inside a library, as a traceback prints it: IPython's "File <path>:line, in f(...)"
# or plain Python's 'File "<path>", line N'; and two functions only torch's frames show.
LIBRARY_FRAME = re.compile(
    r'^\s*File\s+"?[^\s"]*(?:site-packages|dist-packages|torch[/\\]|gradlab[/\\])'
    r"|_engine_run_backward|handle_torch_function",
    re.M,
)


# ------------------------------------------------------------------ word splits


_TAIL = re.compile(r"([A-Za-z0-9_]+)$")
_HEAD = re.compile(r"^([A-Za-z0-9_]+)")


def split_words(pages: list[str], source: str) -> list[str]:
    """Places where the layout broke a line inside a word of ``source``.

    Two lines ``...TBac`` / ``kward ...`` are split inside a word when ``TBackward``
    is a word of the source and the source never has ``TBac`` and ``kward`` apart.
    ``source`` is everything the document prints (cell sources, outputs, labels).
    """
    collapsed = " ".join(unicodedata.normalize("NFKC", source).split())
    vocabulary = set(re.findall(r"[A-Za-z0-9_]+", collapsed))
    found = []
    for number, page in enumerate(pages, start=1):
        lines = [line.strip() for line in page.splitlines() if line.strip()]
        for upper, lower in zip(lines, lines[1:]):
            tail, head = _TAIL.search(upper), _HEAD.search(lower)
            if not (tail and head) or tail.group(1) + head.group(1) not in vocabulary:
                continue
            if head.group(1).isdigit() and (tail.group(1).isdigit() or re.match(r"\d+[.)]\s", lower)):
                continue  # a number on the next line, or a list item's number: no word was cut
            if tail.group(1).endswith("_"):
                continue  # a name wrapped after an underscore (a table's narrow column): no word was cut
            apart = (
                rf"(?<![A-Za-z0-9_]){re.escape(tail.group(1))}[^A-Za-z0-9_]+{re.escape(head.group(1))}(?![A-Za-z0-9_])"
            )
            if not re.search(apart, collapsed):
                found.append(f"page {number}: {upper[-30:]!r} / {lower[:30]!r}")
    return found


def printed_source(notebooks: list[Path]) -> str:
    """Everything the books print of these notebooks, plus the builder's own words."""
    parts = [text for labels in handout.LABELS.values() for text in labels.values()]
    for path in notebooks:
        notebook = handout.print_outputs(nbformat.read(path, as_version=4))
        for cell in notebook.cells:
            parts.append(cell.source)
            if cell.cell_type == "markdown":
                parts.append(visible(markdown_text(cell.source)))
            for output in cell.get("outputs", []):
                parts.append(output.get("text", ""))
                parts.append(output.get("evalue", ""))
                parts.extend(handout_tracebacks.plain(entry) for entry in output.get("traceback", []))
                for mime, value in output.get("data", {}).items():
                    if mime.startswith("text/"):
                        parts.append(html.unescape(re.sub(r"<[^>]+>", " ", value)))
    return "\n".join(parts)


def test_split_words_finds_a_word_broken_by_the_layout() -> None:
    source = "output 0 of TBackward) was modified\nReorder so every backward runs before the weights"
    broken = ["output 0 of TBac\nkward) was modified", "Reorder so every backward runs before t\nhe weights"]
    assert split_words(broken, source) == [
        "page 1: 'output 0 of TBac' / 'kward) was modified'",
        "page 2: 'o every backward runs before t' / 'he weights'",
    ]
    fine = ["output 0 of\nTBackward) was\nmodified", "Reorder so every backward runs\nbefore the weights"]
    assert split_words(fine, source) == []
    assert split_words(["was\nmodified\nReorder"], source) == [], "line breaks of the source itself are fine"


# ------------------------------------------------------------------ sample notebooks


def ansi_traceback() -> list[str]:
    """An IPython traceback as a notebook stores it: a cell frame, torch and gradlab frames, a note."""
    red, green, cyan, end = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[39m"
    library = [
        f"{cyan}File <site-packages>/torch/_tensor.py:623{end}, in {cyan}Tensor.backward{end}(self)\n"
        f"{green}--> 623{end} torch.autograd.backward(self, gradient)\n",
        f"{cyan}File gradlab/track.py:283{end}, in {cyan}Tracker._backward{end}(self, func)\n"
        f"{green}--> 283{end} return func(*args, **kwargs)\n",
        f"{cyan}File <site-packages>/torch/autograd/__init__.py:395{end}, in {cyan}backward{end}(tensors)\n"
        f"{green}--> 395{end} _engine_run_backward(tensors)\n",
        f"{cyan}File <site-packages>/torch/autograd/graph.py:979{end}, in {cyan}_engine_run_backward{end}()\n"
        f"{green}--> 979{end} return Variable._execution_engine.run_backward(\n",
    ]
    return [
        f"{red}---------------------------------------------------------------------------{end}",
        f"{red}RuntimeError{end}                              Traceback (most recent call last)",
        f"{cyan}Cell{end}{cyan} {end}{green}In[7]{end}{green}, line 3{end}\n"
        f"{green}      1{end} y = x.sigmoid()\n{green}      2{end} y.detach().mul_(2)\n"
        f"{green}----> 3{end} y.sum().backward()\n",
        *library,
        f"{red}RuntimeError{end}: one of the variables needed for gradient computation has been modified "
        "by an inplace operation: [torch.FloatTensor [3]], which is output 0 of SigmoidBackward0, "
        "is at version 1; expected version 0 instead.",
        "\ngradlab: backward() would fail (autograd graph: 3 nodes, 1 saved tensor, 1 modified in place).\n"
        "Modified in place:\n  - output of Sigmoid [3], saved by SigmoidBackward0 at version 0, is now "
        "at version 1: modified by mul_ at cell:2",
    ]


LONG_LINE = (
    "A tensor autograd saved for backward (10x1 torch.float32, output 0 of TBackward) was modified "
    "in place 1 time after it was saved (version 1 -> 2), so backward cannot use it. Reorder so every "
    "backward runs before any optimizer.step() that modifies the weights its graph saved: forward both, "
    "zero both, loss_1.backward(retain_graph=True) (the two graphs share network 1) and loss_2.backward()."
)

PREDICT_ONE = "**Predict:** will `y.sum().backward()` run after `y.detach().mul_(2)`? Write *yes* or *no*, and why."
PREDICT_TWO = "Predict: at which version is the weight after two steps?\n\n1. version 1\n2. version 3"
EXERCISE_TASK = "### Exercise\n\nFind the line that bumps the version counter of `n_1.linear_2.weight`."


def write_sample_notebooks(folder: Path) -> list[str]:
    """Two throwaway notebooks with every kind of output and every cell tag; their titles."""
    folder.mkdir(parents=True, exist_ok=True)
    md, code, out = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell, nbformat.v4.new_output

    def tagged(cell, *tags, **metadata):
        cell.metadata["tags"] = list(tags)
        cell.metadata.update(metadata)
        return cell

    first = nbformat.v4.new_notebook()
    first.cells = [
        md(
            "# Sample one: `backward()` twice\n\n**Learning goals**\n\n"
            "- read the *first* error\n- find the freed buffer\n\nSee [PyTorch](https://pytorch.org) "
            'and $y = x^2$.\n\n<script src="https://cdn.example.org/evil.js"></script>\n\n'
            "![remote](https://example.org/cat.png)\n\nNext: [sample two](01_sample_two.ipynb)"
        ),
        code(
            "show_graph()",
            outputs=[
                out("display_data", data={"image/svg+xml": SVG, "text/plain": "<graph>"}),
                out("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
            ],
        ),
        code(
            "slider",
            outputs=[
                out(
                    "display_data",
                    data={
                        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "abc"},
                        "text/html": "<b>static fallback of the slider</b>",
                        "text/plain": "IntSlider(value=3)",
                    },
                ),
                out(
                    "display_data",
                    data={
                        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "def"},
                        "text/plain": "VBox(children=(Plain fallback,))",
                    },
                ),
            ],
        ),
        md("The address is printed: [https://pytorch.org/docs](https://pytorch.org/docs) as it is."),
        tagged(md("---\n[Sample two: version counters →](01_sample_two.ipynb) NAVIGATION_MARKER"), "navigation"),
    ]
    first.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}

    second = nbformat.v4.new_notebook()
    second.cells = [
        md("# Sample two: version counters\n\n## Learning goals\n\n1. name the in-place op"),
        tagged(
            code(
                "y = x.sigmoid()\ny.detach().mul_(2)\ny.sum().backward()",
                outputs=[
                    out(
                        "error",
                        ename="RuntimeError",
                        evalue="one of the variables needed ...",
                        traceback=ansi_traceback(),
                    )
                ],
            ),
            "raises-exception",
            "workbook",
        ),
        tagged(md(PREDICT_ONE), "predict"),
        tagged(
            code("# Solution\nanswer = 'no'", outputs=[out("stream", name="stdout", text="SOLUTION_OUTPUT_MARKER\n")]),
            "solution",
        ),
        tagged(md(EXERCISE_TASK), "exercise"),
        tagged(
            code(
                "versions = ...  # your code", outputs=[out("stream", name="stdout", text="EXERCISE_OUTPUT_MARKER\n")]
            ),
            "exercise",
        ),
        tagged(
            md("<details><summary>Solution</summary>\n\nThe optimizer step: SOLUTION_DETAILS_MARKER\n\n</details>"),
            "solution",
            "exercise",
        ),
        md("This paragraph is only in the full book: FULL_ONLY_MARKER."),
        tagged(code("print(explanation)", outputs=[out("stream", name="stdout", text=LONG_LINE + "\n")]), "workbook"),
        tagged(md(PREDICT_TWO), "predict", answer_lines=2),
        tagged(md("## Summary\n\n- version counters count in-place writes: SUMMARY_MARKER"), "summary"),
        tagged(md("---\n[← Sample one](00_sample_one.ipynb) NAVIGATION_MARKER"), "navigation"),
        md("## Learning goals elsewhere\n\n- ignored, the first list wins"),
    ]
    nbformat.write(first, folder / "00_sample_one.ipynb")
    nbformat.write(second, folder / "01_sample_two.ipynb")
    (folder / "notes.ipynb").write_text("not a course notebook: no NN_ prefix", encoding="utf-8")
    return ["Sample one: backward() twice", "Sample two: version counters"]


# ------------------------------------------------------------------ fast: no browser


def test_titles_and_goals_are_read_from_markdown(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    chapters = handout.read_chapters(tmp_path)
    assert [c.path.name for c in chapters] == ["00_sample_one.ipynb", "01_sample_two.ipynb"]
    assert chapters[0].title == "Sample one: `backward()` twice"
    assert chapters[0].goals == ["read the *first* error", "find the freed buffer"]
    assert chapters[1].goals == ["name the in-place op"]
    assert handout.language_of(chapters) == "en"


def test_widget_outputs_become_their_static_fallback(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    notebook = nbformat.read(tmp_path / "00_sample_one.ipynb", as_version=4)
    static = handout.static_outputs(notebook)
    outputs = static.cells[2].outputs
    assert [sorted(o.data) for o in outputs] == [["text/html", "text/plain"], ["text/plain"]]
    assert "widgets" not in static.metadata
    assert WIDGET_VIEW in notebook.cells[2].outputs[0].data, "the input notebook is left as it was"


def test_print_outputs_cut_every_error_traceback(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    notebook = nbformat.read(tmp_path / "01_sample_two.ipynb", as_version=4)
    traceback = handout.print_outputs(notebook).cells[1].outputs[0].traceback
    text = "\n".join(handout_tracebacks.plain(entry) for entry in traceback)
    assert "Cell In[7], line 3" in text and "y.sum().backward()" in text
    assert "… 4 library frames omitted (torch, gradlab)" in text
    assert text.index("omitted") < text.index("RuntimeError: one of the variables")
    assert "gradlab: backward() would fail" in text, "the diagnosis note under the error stays"
    assert not LIBRARY_FRAME.search(text), text
    assert len(notebook.cells[1].outputs[0].traceback) == 9, "the input notebook is left as it was"


def test_remote_scripts_and_stylesheets_are_stripped() -> None:
    page = (
        '<script src="https://cdnjs.cloudflare.com/mathjax.js"></script><script>var x = 1;</script>'
        '<link rel="stylesheet" href="//cdn.example.org/a.css"><img alt="cat" src="http://e.org/c.png">'
        '<a href="https://pytorch.org">PyTorch</a>'
    )
    assert remote_references(page) and handout.remote_references(page)
    clean = handout.strip_remote(page)
    assert remote_references(clean) == [] and handout.remote_references(clean) == []
    assert "var x = 1;" in clean and '<a href="https://pytorch.org">' in clean
    assert "[image: cat]" in clean


def test_a_page_that_would_still_load_remotely_fails_the_build() -> None:
    page = '<style>@import "https://fonts.example.org/a.css";</style><p>url(https://ok.example.org) as text</p>'
    with pytest.raises(handout.HandoutError, match="fonts.example.org"):
        handout.offline_page(page, "page.html")
    assert remote_references(page) == ['@import "https://']


def test_missing_chromium_names_the_apt_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_sample_notebooks(tmp_path)
    arguments = ["--notebooks", str(tmp_path), "--out", str(tmp_path / "out"), "--chromium", "no-such-chromium"]
    assert handout.main(arguments) == 1
    assert "apt-get install chromium" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_links_print_their_page_or_their_address(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    chapters = handout.read_chapters(tmp_path)
    page = (
        '<p><a href="01_sample_two.ipynb">sample two</a>, <a href="https://pytorch.org/docs/autograd.html">'
        'the docs</a>, <a href="https://pytorch.org">https://pytorch.org</a>, <a href="#local">here</a></p>'
    )
    printed = handout.print_links(page, chapters, " (p.\u00a0{n})")
    assert '<a href="#chapter-01_sample_two">sample two</a>' in printed
    assert '(p.\u00a0<span data-page-of="chapter-01_sample_two">00</span>)' in printed
    shown = html.unescape(re.sub(r"<[^>]+>", "", printed))
    assert "the docs (https://pytorch.org/docs/autograd.html)" in shown
    assert "https://pytorch.org (" not in shown, "a link whose text is its address prints it once"
    assert '<a href="#local">here</a></p>' in printed


def test_a_chinese_edition_gets_chinese_labels_and_cjk_fonts(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    notebook = nbformat.read(tmp_path / "00_sample_one.ipynb", as_version=4)
    notebook.cells[0].source = notebook.cells[0].source.replace("Sample one", "示例一：反向传播两次")
    nbformat.write(notebook, tmp_path / "00_sample_one.ipynb")
    chapters = handout.read_chapters(tmp_path)
    assert handout.language_of(chapters) == "zh"
    book = handout.Book(
        "zh",
        "workbook",
        "t",
        "练习册",
        "<title>x</title>",
        '<body class="jp-Notebook">',
        [(chapters[0], "<p>cells</p>")],
        handout.workbook_cover(chapters, "zh"),
    )
    page = book.html()
    assert '<html lang="zh-Hans">' in page
    assert "目录" in page and "姓名" in page and "用户名" in page
    assert '"Noto Sans CJK SC"' in page, "a CJK font is in the font stack"
    assert 'content: "示例一：反向传播两次: backward() twice"' in page, "the running header"


def test_every_chapter_of_a_book_has_a_title_heading_for_the_outline(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    chapters = handout.read_chapters(tmp_path)
    book = handout.Book(
        "en", "workbook", "t", "r", "<title>x</title>", '<body class="jp-Notebook">',
        [(chapters[0], "<h1>Sample one: <code>backward()</code> twice</h1><p>a</p>"), (chapters[1], "<p>b</p>")],
        handout.workbook_cover(chapters, "en"),
    )  # fmt: skip
    page = book.html()
    assert page.count("<h1") == 2 and "<h1>Sample two: version counters</h1><p>b</p>" in page


# ------------------------------------------------------------------ slow: print the PDFs


@pytest.fixture(scope="module")
def sample_handout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    if not (CHROMIUM and POPPLER):
        pytest.skip("needs Chromium and poppler: apt-get install chromium poppler-utils")
    folder = tmp_path_factory.mktemp("sample_notebooks")
    titles = write_sample_notebooks(folder)
    out = tmp_path_factory.mktemp("sample_handout")
    # in this process; the committed course below goes through the command line, as make handout does
    assert handout.main(["--notebooks", str(folder), "--out", str(out)]) == 0
    return folder, out, titles


@pytest.fixture(scope="module")
def committed_handout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    if not NOTEBOOKS:
        pytest.skip("no committed notebooks/NN_*.ipynb yet")
    if not (CHROMIUM and POPPLER):
        pytest.skip("needs Chromium and poppler: apt-get install chromium poppler-utils")
    out = tmp_path_factory.mktemp("handout")
    result, seconds = build(ROOT / "notebooks", out)
    assert result.returncode == 0, result.stderr
    return out, seconds


@pytest.fixture(scope="module")
def committed_zh_handout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ZH_NOTEBOOKS:
        pytest.skip("no Chinese edition notebooks/zh/NN_*.ipynb")
    if not (CHROMIUM and POPPLER):
        pytest.skip("needs Chromium and poppler: apt-get install chromium poppler-utils")
    out = tmp_path_factory.mktemp("handout_zh")
    result, _ = build(ROOT / "notebooks" / "zh", out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module", params=["en", "zh"])
def edition(request: pytest.FixtureRequest) -> tuple[str, list[Path], Path]:
    """Each committed edition: its language, its notebooks and the folder of its built books."""
    if request.param == "en":
        out, _ = request.getfixturevalue("committed_handout")
        return "en", NOTEBOOKS, out
    return "zh", ZH_NOTEBOOKS, request.getfixturevalue("committed_zh_handout")


@pytest.mark.slow
@needs_print
def test_sample_pages_are_static_and_offline(sample_handout: tuple[Path, Path, list[str]]) -> None:
    _, out, titles = sample_handout
    page = (out / "00_sample_one.html").read_text(encoding="utf-8")
    assert "static fallback of the slider" in page
    assert html.escape("VBox(children=(Plain fallback,))") in page
    assert WIDGET_VIEW not in page and "require.js" not in page and "MathJax" not in page
    svg = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert svg and "MulBackward0" in base64.b64decode(svg.group(1)).decode(), "stored SVG graph embedded"
    assert "data:image/png;base64," in page, "stored PNG embedded"
    assert 'href="01_sample_two.html"' in page, "links between notebooks point at the pages"
    assert 'href="https://pytorch.org"' in page, "plain links in markdown stay"
    assert remote_references(page) == []
    second = (out / "01_sample_two.html").read_text(encoding="utf-8")
    assert "4 library frames omitted (torch, gradlab)" in second and "torch/_tensor.py" not in second
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "find the freed buffer" in index and "name the in-place op" in index
    assert "ignored, the first list wins" not in index
    assert 'href="workbook.pdf"' in index and 'href="handout.pdf"' in index
    assert not (out / "notes.html").exists()
    assert pdf_pages(out / "cheatsheet.pdf") == 1
    text = " ".join(pdf_text(out / "handout.pdf"))
    for title in titles:
        assert title in text


@pytest.mark.slow
@needs_print
def test_sample_workbook_prints_what_the_tags_choose(sample_handout: tuple[Path, Path, list[str]]) -> None:
    _, out, titles = sample_handout
    pages = pdf_raw(out / "workbook.pdf")
    text = words(" ".join(pages))
    body = tokens(text)
    for title in titles:
        assert title in text
    assert "read the first error" in text and "name the in-place op" in text, "learning goals"
    for prompt in [PREDICT_ONE, PREDICT_TWO, EXERCISE_TASK]:
        assert contains_tokens(body, tokens(visible(markdown_text(prompt)))), prompt
    assert contains_tokens(body, tokens("1. version 1 2. version 3")), "the numbers of a list are printed"
    assert "versions = ..." in text and "# your code" in text, "an exercise's code cell is printed..."
    assert "EXERCISE_OUTPUT_MARKER" not in text, "...without its outputs"
    assert text.count("Your prediction") == 2 and text.count("Your answer") == 2
    assert "SUMMARY_MARKER" not in text, "a summary restates the answers: the full handout prints it"
    assert "y.detach().mul_(2)" in text and "Cell In[7], line 3" in text
    assert "4 library frames omitted (torch, gradlab)" in text
    assert "gradlab: backward() would fail" in text
    assert not LIBRARY_FRAME.search("\n".join(pages))
    assert "torch.autograd.backward" in handout_tracebacks.plain("".join(ansi_traceback())), "the check has bite"
    for absent in [
        "SOLUTION_OUTPUT_MARKER",
        "SOLUTION_DETAILS_MARKER",
        "FULL_ONLY_MARKER",
        "NAVIGATION_MARKER",
        "static fallback of the slider",
        "ignored, the first list wins",
    ]:
        assert absent not in text, f"{absent} is not for the workbook"
    full = words(" ".join(pdf_raw(out / "handout.pdf")))
    for present in ["SOLUTION_OUTPUT_MARKER", "SOLUTION_DETAILS_MARKER", "FULL_ONLY_MARKER", "SUMMARY_MARKER"]:
        assert present in full, f"the full handout has {present} (solutions printed open)"
    assert "NAVIGATION_MARKER" not in full, "navigation links are not printed"
    assert "Your prediction" not in full, "no ruled lines in the full handout"


@pytest.mark.slow
@needs_print
def test_sample_books_have_contents_headers_and_outline(sample_handout: tuple[Path, Path, list[str]]) -> None:
    _, out, titles = sample_handout
    for name in ["handout", "workbook"]:
        pdf = out / f"{name}.pdf"
        pages = pdf_text(pdf)
        raw = pdf_raw(pdf)
        total = len(pages)
        outline = handout_print.outline(pdf)
        top = [(title, page) for depth, title, page in outline if depth == 0]
        parts = titles + ([handout.LABELS["en"]["index_title"]] if name == "handout" else [])
        assert [title for title, _ in top] == parts, f"{name}: one bookmark per notebook (and the handout's index)"
        starts = [page for _, page in top]
        assert starts[0] == 2 and starts == sorted(starts), f"{name}: the cover is page 1 alone"
        assert contents(pdf, top[0][1] - 1) == dict(top), f"{name}: the contents give each notebook's first page"
        for title, page in top:
            assert title in pages[page - 1], f"{name}: {title!r} starts on page {page}"
        for number in range(2, total + 1):
            lines = [line.strip() for line in raw[number - 1].splitlines() if line.strip()]
            if name == "handout":  # a notebook from a new page, its title in the running header
                chapter = parts[max(i for i, start in enumerate(starts) if start <= number)]
            else:  # the workbook flows on from one notebook to the next: the header names the book
                chapter = f"{handout.LABELS['en']['workbook']} · {handout.LABELS['en']['course']}"
            assert lines[0] == chapter, f"{name} page {number}: running header {lines[0]!r}"
            assert lines[-1].replace(" ", "") == f"{number}/{total}", f"{name} page {number}: {lines[-1]!r}"
        assert not re.search(r"(?m)^\s*\d+\s*/\s*\d+\s*$", raw[0]), f"{name}: no page number on the cover"
    full = pdf_text(out / "handout.pdf")
    start_two = {t: p for d, t, p in handout_print.outline(out / "handout.pdf") if d == 0}[titles[1]]
    assert f"Next: sample two (p. {start_two})" in " ".join(full), "a link to a notebook prints its page"
    assert "See PyTorch (https://pytorch.org) and" in " ".join(full), "a web link prints its address"
    assert "https://pytorch.org/docs as it is" in " ".join(full), "...once when the text is the address"


@pytest.mark.slow
@needs_print
def test_sample_books_wrap_between_words(sample_handout: tuple[Path, Path, list[str]]) -> None:
    folder, out, _ = sample_handout
    source = printed_source(sorted(folder.glob("[0-9][0-9]_*.ipynb")))
    for name in ["handout", "workbook"]:
        pages = pdf_raw(out / f"{name}.pdf")
        assert "TBackward" in " ".join(pages), "the long output line is printed"
        assert split_words(pages, source) == [], name


@pytest.mark.slow
@needs_print
def test_the_word_split_check_catches_a_layout_that_breaks_anywhere(tmp_path: Path) -> None:
    """The check above, on a real print: JupyterLab's word-break: break-all splits words; ours does not."""
    pre = f"<pre style='width: 70mm; font-size: 9pt; white-space: pre-wrap; {{}}'>{html.escape(LONG_LINE)}</pre>"
    pages = {}
    with handout_print.Printer(CHROMIUM) as printer:
        for name, css in [("anywhere", "word-break: break-all;"), ("words", "overflow-wrap: break-word;")]:
            page = tmp_path / f"{name}.html"
            page.write_text(f"<!DOCTYPE html><meta charset='utf-8'>{pre.format(css)}", encoding="utf-8")
            printer.pdf(page, tmp_path / f"{name}.pdf")
            pages[name] = pdf_raw(tmp_path / f"{name}.pdf")
    assert split_words(pages["anywhere"], LONG_LINE), "break-all splits words and the check sees it"
    assert split_words(pages["words"], LONG_LINE) == []


@pytest.mark.slow
@needs_print
def test_handout_pdf_has_every_notebook(committed_handout: tuple[Path, float]) -> None:
    out, seconds = committed_handout
    pages = pdf_text(out / "handout.pdf")
    count = pdf_pages(out / "handout.pdf")
    # the reference book prints every cell at 10 pt text and 8.5 pt code (86 pages at 9.5/7.5 pt, 99 at 10/8.5
    # for 11 notebooks): ten pages a notebook on average is the bound of a course that stays readable at a desk
    assert len(NOTEBOOKS) + 1 <= count <= 1 + 10 * len(NOTEBOOKS), f"{count} pages"
    chapters = handout.read_chapters(ROOT / "notebooks")
    outline = handout_print.outline(out / "handout.pdf")
    top = [(title, page) for depth, title, page in outline if depth == 0]
    assert [title for title, _ in top] == [words(handout.plain_text(c.title)) for c in chapters] + ["Index"], (
        "the outline has one entry per notebook, in course order, then the index"
    )
    assert contents(out / "handout.pdf", top[0][1] - 1) == dict(top), (
        "the cover lists each notebook with its first page"
    )
    for title, page in top:
        assert title in pages[page - 1], f"{title!r} starts on page {page}"
    assert seconds < 120, f"the handout took {seconds:.0f} s to build"


@pytest.mark.slow
@needs_print
def test_workbook_holds_every_title_and_prediction_prompt(committed_handout: tuple[Path, float]) -> None:
    out, _ = committed_handout
    chapters = handout.read_chapters(ROOT / "notebooks")
    raw = pdf_raw(out / "workbook.pdf")
    text = words(" ".join(raw))
    running = running_heads(chapters)
    # in the order the page draws its text: reading order joins a word hyphenated at a line's end
    # ("in-" / "place" read as "inplace"); there the running header is one line, the page number the next
    drawn = subprocess.run(["pdftotext", "-raw", str(out / "workbook.pdf"), "-"], capture_output=True, text=True)
    heads = tuple(unicodedata.normalize("NFKC", head) for head in running)
    printed = " ".join(
        line
        for line in unicodedata.normalize("NFKC", drawn.stdout).splitlines()
        if not FOOTER.match(line.strip()) and not line.strip().startswith(heads)
    )
    # what print adds to a link, "(p. 12)" or "(https://...)", is not in the notebook's text
    body = tokens(re.sub(r"\((?:p\.\s*\d+|第\s*\d+\s*页)\)|\(https?://[^)]*\)", " ", printed))
    for chapter in chapters:
        assert words(handout.plain_text(chapter.title)) in text
        for cell in workbook.prompts(chapter.notebook):  # every cell tagged predict, found in the notebook
            for piece in markdown_pieces(cell.source):
                assert contains_tokens(body, tokens(piece)), f"{chapter.path.name}: prompt {piece!r}"
        for cell in workbook.prompts(chapter.notebook, "exercise"):
            for piece in markdown_pieces(cell.source) if cell.cell_type == "markdown" else []:
                assert contains_tokens(body, tokens(piece)), f"{chapter.path.name}: task {piece!r}"


@pytest.mark.slow
@needs_print
def test_no_torch_internal_frame_is_printed(committed_handout: tuple[Path, float]) -> None:
    out, _ = committed_handout
    for name in ["workbook", "handout"]:
        text = "\n".join(pdf_raw(out / f"{name}.pdf"))
        assert not LIBRARY_FRAME.search(text), f"{name}: {LIBRARY_FRAME.search(text).group(0)!r}"
    stored = [
        entry
        for path in NOTEBOOKS
        for cell in nbformat.read(path, as_version=4).cells
        for output in cell.get("outputs", [])
        for entry in output.get("traceback", [])
    ]
    if any(LIBRARY_FRAME.search(handout_tracebacks.plain(entry)) for entry in stored):
        assert re.search(r"… \d+ library frames? omitted", "\n".join(pdf_raw(out / "handout.pdf"))), (
            "the notebooks hold library frames: the handout says how many it left out"
        )


@pytest.mark.slow
@needs_print
def test_no_line_is_split_inside_a_word(committed_handout: tuple[Path, float]) -> None:
    out, _ = committed_handout
    source = printed_source(NOTEBOOKS)
    cheatsheet = html.unescape(re.sub(r"<[^>]+>", " ", handout.CHEATSHEET.read_text(encoding="utf-8")))
    for name, text in [("handout", source), ("workbook", source), ("cheatsheet", cheatsheet)]:
        found = split_words(pdf_raw(out / f"{name}.pdf"), text)
        assert found == [], f"{name}: {found[:5]}"


@pytest.mark.slow
@needs_print
def test_html_pages_link_nothing_remote(committed_handout: tuple[Path, float]) -> None:
    out, _ = committed_handout
    index = (out / "index.html").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        page = out / f"{notebook.stem}.html"
        assert page.exists(), f"{page.name} missing"
        assert f'href="{page.name}"' in index
    for page in sorted(out.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert remote_references(text) == [], page.name
        assert WIDGET_VIEW not in text, f"{page.name} still holds a live widget view"


@pytest.mark.slow
@needs_print
def test_cheatsheet_is_one_page_with_the_key_lines(committed_handout: tuple[Path, float]) -> None:
    out, _ = committed_handout
    assert pdf_pages(out / "cheatsheet.pdf") == 1
    text = pdf_text(out / "cheatsheet.pdf")[0]
    flat = " ".join(text.split())
    for line in [
        "Trying to backward through the graph a second time",
        "went through part of this graph and freed the tensors it had saved",
        "is at version 2; expected version 1",
        "a tensor saved for backward was written in place after it was saved",
        "If loss_2 should not train n_1",
        "pred_2 = n_2(pred_1.detach())",
        "loss_2.backward(inputs=list(n_2.parameters()))",
        "If loss_2 should also train n_1",
        "(loss_1 + loss_2).backward()",
        "recompute D's forward after opt_d.step()",
        "add loss.item() to total_loss",
        "retain_graph=True for the 'modified by an inplace operation' error",
        ".detach() inside a network's forward",
        "stop learning from this loss",
        "points against g_loss's",
        "Softmax over a dimension of size 1",
        "trains:",
        "gradlab.track(",
        "gradlab.check(loss_2, names)",
        "gradlab.explain(error)",
        "gradlab.check_intent(",
        "python -m gradlab fix train.py",
        "python -m gradlab explain --codes",
    ]:
        assert line in flat, f"cheat sheet lacks {line!r}"
    for overstated in ["points the wrong way", "every layer before the detach", "Retain_graph"]:
        assert overstated not in flat, f"the cheat sheet still says {overstated!r}"


@pytest.mark.slow
@needs_print
def test_the_chinese_cheatsheet_is_chinese_and_one_page(committed_zh_handout: Path) -> None:
    from gradlab import i18n
    from gradlab.advice import pitfalls

    pdf = committed_zh_handout / "cheatsheet.pdf"
    assert pdf_pages(pdf) == 1
    # in the order the page draws its text: reading order splits a line at each change of font (CJK, Latin)
    drawn = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = "".join(unicodedata.normalize("NFKC", drawn).split())
    before = i18n.language()
    i18n.set_language("zh_CN")
    try:
        chinese = [str(p.what_it_does) for p in pitfalls()]
    finally:
        i18n.set_language(before)
    for line in [
        "两个autograd错误的解读",
        "修复方法：先决定每个损失应当训练什么",
        "gradlab自己的调用",
        "训练：",
        *chinese,
    ]:
        assert "".join(unicodedata.normalize("NFKC", line).split()) in flat, f"zh cheat sheet lacks {line!r}"
    for sentence in ["Means:", "Rule of thumb", "What it does", "gradlab's own calls", "trains:", "the errors go away"]:
        assert "".join(sentence.split()) not in flat, f"English left in the zh cheat sheet: {sentence!r}"
    assert "Trying to backward through the graph a second time" in " ".join(pdf_text(pdf)[0].split()), (
        "the error is quoted as PyTorch prints it"
    )


def test_the_cheat_sheets_claims_hold_in_torch() -> None:
    """The two rows the print review found overstated, as they now read, checked against real torch."""
    import torch

    torch.manual_seed(0)
    # .detach() inside: the layers before it stop learning from this loss only
    first, before, after = torch.nn.Linear(1, 3), torch.nn.Linear(3, 3), torch.nn.Linear(3, 1)
    x = torch.randn(8, 1)
    h = first(x)
    loss_1 = h.pow(2).mean()  # another loss reaches `first`
    loss_2 = after(before(h).detach()).pow(2).mean()
    (loss_1 + loss_2).backward()
    assert first.weight.grad is not None and first.weight.grad.abs().sum() > 0, "another loss still trains it"
    assert before.weight.grad is None, "a layer no other loss reaches gets no gradient at all"
    h_alone = first(x).detach()
    first.zero_grad()
    after(before(h_alone)).pow(2).mean().backward()
    assert first.weight.grad is None or first.weight.grad.abs().sum() == 0, "from this loss it learns nothing"

    # summed GAN losses: G also gets d_loss's gradient, against g_loss's; it shrinks, then turns as D accepts fakes
    generator, judge = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    bce = torch.nn.BCEWithLogitsLoss()
    z, real = torch.randn(64, 2), torch.randn(64, 2)

    def cosine_and_ratio(shift: float) -> tuple[float, float]:
        with torch.no_grad():
            judge.bias.fill_(shift)  # D's mean output on the fakes, through its bias
        fake = generator(z)
        out_fake = judge(fake)
        g_loss = bce(out_fake, torch.ones_like(out_fake))
        d_loss = bce(judge(real), torch.ones(64, 1)) + bce(out_fake, torch.zeros_like(out_fake))
        params = list(generator.parameters())
        intended = torch.cat([g.flatten() for g in torch.autograd.grad(g_loss, params, retain_graph=True)])
        summed = torch.cat([g.flatten() for g in torch.autograd.grad(g_loss + d_loss, params)])
        cos = torch.nn.functional.cosine_similarity(intended, summed, dim=0).item()
        return cos, (summed.norm() / intended.norm()).item()

    # per fake, d/dlogit of the sum is 2D - 1 against g_loss's D - 1: shrunk by (1 - 2D) / (1 - D), reversed past D = 1/2
    rejecting, doubting, accepting = (
        cosine_and_ratio(shift) for shift in (-3.0, -1.0, 3.0)
    )  # D about 0.05, 0.27, 0.95
    assert rejecting[0] > 0.9 and rejecting[1] < 1, f"D rejects the fakes: the same way, shrunk {rejecting}"
    assert doubting[0] > 0.9 and doubting[1] < rejecting[1], f"shrinking as D accepts more {doubting}"
    assert accepting[0] < -0.9, f"D accepts the fakes: against G's goal {accepting}"


def test_cheat_sheet_fixes_come_from_gradlab_advice() -> None:
    """One source for fix advice: the cheat sheet renders gradlab.advice, it does not keep a copy."""
    from gradlab.advice import pitfalls
    from gradlab.causes import Context, fixes_for

    template = handout.CHEATSHEET.read_text(encoding="utf-8")
    page = handout.cheatsheet_html(template)
    loop = Context(
        model="n_1",
        others=("n_2",),
        loss="loss_2",
        earlier="loss_1",
        optimizer="opt_1",
        entry="pred_1",
        entry_line="pred_2 = n_2(pred_1)",
    )
    for fix in fixes_for("optimizer_step", loop)[:3]:
        assert html.escape(str(fix.summary)) in page and html.escape(str(fix.trains)) in page
    assert "pred_2 = n_2(pred_1.detach())" in page
    for pitfall in pitfalls():
        assert html.escape(str(pitfall.what_it_does)) in page
        assert str(pitfall.what_it_does)[:40] not in template  # no second copy in the template
    body = template.split("<body>", 1)[1]
    assert "trains:" not in body and "<pre>" not in body  # no hand-written fix or code in the template
    from gradlab.codes import CODES

    for c in CODES:  # the codes of the sheet's two errors, from the one table
        shown = f"<code>{c.code}</code>&nbsp;{html.escape(c.title)}" in page
        assert shown == (c.kind in handout.CHEATSHEET_CODES), c.code
    assert "GL0001" not in body  # the list is rendered, not written in the template
    with pytest.raises(ValueError, match="marker"):
        handout.cheatsheet_html("<html></html>")
    with pytest.raises(ValueError, match="editions"):
        handout.cheatsheet_html(template, "fr")
    from gradlab import i18n

    zh = handout.cheatsheet_html(handout.cheatsheet_template("zh").read_text(encoding="utf-8"), "zh")
    assert i18n.language() == "en", "rendering the zh sheet leaves gradlab's language as it was"
    i18n.set_language("zh_CN")
    try:
        for fix in fixes_for("optimizer_step", loop)[:3]:
            assert html.escape(str(fix.summary)) in zh and html.escape(str(fix.trains)) in zh
        for pitfall in pitfalls():
            assert html.escape(str(pitfall.what_it_does)) in zh
    finally:
        i18n.set_language("en")


# ------------------------------------------------------------------ print that works on paper (issue #25)


PAGE_REFERENCE = re.compile(r"\((?:p\.\s*\d+|第\s*\d+\s*页)\)|（第\s*\d+\s*页）|\(https?://[^)]*\)")


def squeezed(text: str) -> str:
    """Only the word characters of ``text``: what survives any line breaking and spacing of pdftotext."""
    return "".join(tokens(PAGE_REFERENCE.sub(" ", text)))


def book_pages(pdf: Path, lang: str, notebooks: list[Path], *, raw: bool = False) -> list[str]:
    """Each page's body (no running header, no page number), squeezed.

    ``raw``: in the order the PDF draws its text (Chromium draws a table cell by
    cell), not in reading order (which may read the lines of two cells side by side
    as one).
    """
    labels = handout.LABELS[lang]
    chapters = handout.read_chapters(notebooks[0].parent)
    running = {words(handout.plain_text(c.title)) for c in chapters}
    running |= {labels["course"], f"{labels['workbook']} · {labels['course']}"}
    running = {unicodedata.normalize("NFKC", r) for r in running}
    if not raw:
        return [squeezed(" ".join(body_lines(page, running))) for page in pdf_raw(pdf)]
    text = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")
    pages = pages[:-1] if pages and not pages[-1].strip() else pages
    return [
        squeezed(
            " ".join(
                line for line in page.splitlines() if words(line) not in running and not FOOTER.match(line.strip())
            )
        )
        for page in pages
    ]


def table_cells(markup: str) -> list[str]:
    """The visible text of every ``<th>``/``<td>`` of some HTML."""
    return [visible(cell) for _, cell in re.findall(r"<t([hd])\b[^>]*>(.*?)</t\1\s*>", markup, flags=re.S | re.I)]


def printed_tables(notebook: nbformat.NotebookNode) -> list[str]:
    """The table cells a printed notebook shows: markdown tables and the HTML tables of its outputs."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cells += table_cells(markdown_text(cell.source))
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            cells += table_cells(output.get("data", {}).get("text/html", ""))
    return cells


def words_past_the_edge(pdf: Path, margin_mm: float = 8) -> list[str]:
    """Words whose box reaches within ``margin_mm`` of the paper's left or right edge (pdftotext -bbox)."""
    boxes = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    margin = margin_mm / 25.4 * 72
    found = []
    for number, (width, body) in enumerate(
        re.findall(r'<page width="([\d.]+)"[^>]*>(.*?)</page>', boxes, flags=re.S), start=1
    ):
        for x_min, x_max, word in re.findall(
            r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)"[^>]*>(.*?)</word>', body
        ):
            if float(x_max) > float(width) - margin or float(x_min) < margin:
                found.append(f"page {number}: {html.unescape(word)!r}")
    return found


@pytest.mark.slow
@needs_print
def test_every_table_cell_is_printed_whole_in_both_books(edition: tuple[str, list[Path], Path]) -> None:
    """P1 of the print review: a table wider than the page lost columns without a trace."""
    lang, notebooks, out = edition
    labels = handout.LABELS[lang]
    for name in ["handout", "workbook"]:
        text = "".join(book_pages(out / f"{name}.pdf", lang, notebooks, raw=True))
        checked = 0
        for path in notebooks:
            notebook = handout.print_outputs(nbformat.read(path, as_version=4), context=name == "handout")
            if name == "workbook":
                notebook = workbook.workbook_notebook(notebook, labels)
            for cell in printed_tables(notebook):
                if squeezed(cell):
                    checked += 1
                    assert squeezed(cell) in text, f"{lang} {name}, {path.name}: table cell {cell.strip()[:80]!r}"
        assert checked > 20, f"{lang} {name}: only {checked} table cells found in the notebooks"
        assert words_past_the_edge(out / f"{name}.pdf") == [], f"{lang} {name}: text runs into the paper's edge"
    if lang == "en":
        assert "Whatittrains" in "".join(book_pages(out / "workbook.pdf", lang, notebooks)), "06's decision table"


def facing(page: int) -> int:
    """The page that faces ``page`` in a book printed double-sided (the cover, 1, is a right-hand page)."""
    return page + 1 if page % 2 == 0 else page - 1


#: Shorter than this, a sentence of a reveal is too common to give an answer away by itself (word characters in
#: English, Chinese characters in Chinese, code spans left out); an output line, as before, 16 word characters.
SHORTEST = {"en": 24, "zh": 8}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def telling(where: str, text: str, lang: str) -> bool:
    """Whether an answer text (``workbook.answer_texts``) is long enough to give the answer away on its own."""
    if where == "declared":
        return bool(squeezed(text))
    if where.endswith("output"):
        return len(squeezed(text)) >= 16
    prose = re.sub(r"`[^`]*`", " ", text)
    return len(_CJK.findall(prose) if lang == "zh" else squeezed(prose)) >= SHORTEST[lang]


def prediction_problems(pdf: Path, lang: str, notebooks: list[Path]) -> tuple[list[str], int, int]:
    """Where a prompt of the workbook lacks the code it asks about, or its answer is printed on its page or the
    facing one.

    The answer is everything :func:`workbook.answer_texts` finds for the prompt: the sentences of the text that
    reveals it, its outputs, the ``success=`` sentence of its check and the phrases its metadata declares; they
    are looked for in everything printed on the spread (text, summaries, code and its comments, outputs).
    Returns the problems, how many prompts had code and how many answer texts were looked for.
    """
    pages = book_pages(pdf, lang, notebooks, raw=True)
    problems: list[str] = []
    with_code = looked_for = 0
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        printed = handout.print_outputs(notebook, context=False)
        sources = squeezed("\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code"))
        for at, cell in enumerate(notebook.cells):
            if cell not in workbook.prompts(notebook):
                continue
            pieces = markdown_pieces(cell.source) if cell.cell_type == "markdown" else [cell.source]
            key = squeezed(pieces[0])[:60]
            where = [number for number, page in enumerate(pages, start=1) if key in page]
            if not where:
                problems.append(f"{path.name} cell {at}: prompt not found")
                continue
            page = where[0]
            near = pages[page - 1] + (pages[page] if page < len(pages) else "")
            code = workbook.asked_code(notebook, at)
            asked = squeezed(notebook.cells[code].source) if code is not None else ""
            if code is not None:
                lines = [line for line in notebook.cells[code].source.splitlines() if squeezed(line)]
                with_code += 1
                if squeezed(lines[0]) not in pages[page - 1] or squeezed(lines[-1]) not in near:
                    problems.append(
                        f"{path.name} cell {at}: the code it asks about (cell {code}) is not on page {page}"
                    )
            spread = [page] + ([facing(page)] if 1 < facing(page) <= len(pages) else [])
            for origin, text in workbook.answer_texts(printed, at, lang):
                answer = squeezed(text)
                if not telling(origin, text, lang) or answer in asked:
                    continue
                if origin.endswith("output") and answer in sources:
                    continue  # the output repeats code the page prints anyway
                looked_for += 1
                for number in spread:
                    if answer in pages[number - 1]:
                        problems.append(
                            f"{path.name} cell {at}: its answer ({origin}) {text.strip()[:60]!r} on page {number}"
                        )
    return problems, with_code, looked_for


@pytest.mark.slow
@needs_print
def test_each_prediction_prints_with_its_code_and_never_with_its_answer(
    edition: tuple[str, list[Path], Path],
) -> None:
    """Every prompt of the workbook prints the code it asks about, and nothing on its page or the facing one states
    its answer (P2 and P3 of the print review, N1 of the next: a summary, a sentence, a comment, an output)."""
    lang, notebooks, out = edition
    problems, with_code, looked_for = prediction_problems(out / "workbook.pdf", lang, notebooks)
    assert problems == []
    assert with_code >= 15 and looked_for >= 100, (with_code, looked_for)


# A workbook is stapled at a corner: an office stapler takes 20 sheets, 40 pages printed
# double-sided. Past that a workshop needs a binding or two booklets, and a learner with a
# pen cannot find the page. One notebook of a workshop fits on 6 pages (3 sheets) or is too
# long to work through with a pen in the time a workshop gives it.
WORKBOOK_PAGES = 40
CHAPTER_PAGES = 6


@pytest.mark.slow
@needs_print
def test_the_workbook_fits_a_stapled_booklet(edition: tuple[str, list[Path], Path]) -> None:
    lang, notebooks, out = edition
    pdf = out / "workbook.pdf"
    count = pdf_pages(pdf)
    assert len(notebooks) + 1 <= count <= WORKBOOK_PAGES, f"{lang}: the workbook has {count} pages"
    starts = [page for depth, _, page in handout_print.outline(pdf) if depth == 0] + [count + 1]
    lengths = {path.stem: end - start for path, start, end in zip(notebooks, starts, starts[1:])}
    assert max(lengths.values()) <= CHAPTER_PAGES, f"{lang}: pages per notebook {lengths}"


# ------------------------------------------------------------------ code, pages, maths and the index (issue #31)


def word_boxes(pdf: Path) -> list[tuple[int, float, list[tuple[float, float, float, str]]]]:
    """Per page: its number, its width and its words as ``(x_min, y_middle, x_max, text)`` (pdftotext -bbox)."""
    boxes = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = []
    for number, (page_width, body) in enumerate(
        re.findall(r'<page width="([\d.]+)"[^>]*>(.*?)</page>', boxes, flags=re.S), start=1
    ):
        found = re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', body
        )  # fmt: skip
        boxes_on_page = [
            (float(a), (float(b) + float(d)) / 2, float(c), html.unescape(t)) for a, b, c, d, t in found
        ]  # fmt: skip
        pages.append((number, float(page_width), boxes_on_page))
    return pages


RIGHT_MARGIN_MM = 13  # the books' @page margin


def past_the_margin(pdf: Path) -> list[str]:
    """Words that reach into the right margin: code printed with white-space: pre runs there when too long."""
    limit = (RIGHT_MARGIN_MM - 1) / 25.4 * 72
    return [
        f"page {number}: {text!r}"
        for number, width, words in word_boxes(pdf)
        for x_min, _, x_max, text in words
        if x_max > width - limit
    ]


def text_lines(words_on_page: list[tuple[float, float, float, str]]) -> list[list[tuple[float, str]]]:
    """A page's words as lines, top to bottom, each ``(x_min, text)`` left to right: words whose middles lie within
    3 pt belong to one line (a CJK glyph's box is taller than a Latin one's, around the same middle)."""
    lines: list[tuple[float, list[tuple[float, str]]]] = []
    for x_min, middle, _, text in sorted(words_on_page, key=lambda word: word[1]):
        if lines and middle - lines[-1][0] < 3:
            lines[-1][1].append((x_min, text))
        else:
            lines.append((middle, [(x_min, text)]))
    return [sorted(line) for _, line in lines]


def continuations(pdf: Path) -> tuple[int, list[str]]:
    """How many code lines continue behind the mark ``↪``, and those that do not start deeper than the statement
    they continue (the first word of the last line above that is not a continuation)."""
    mark = handout_paper.MARK
    count, wrong = 0, []
    for number, _, words_on_page in word_boxes(pdf):
        statement: float | None = None
        for line in text_lines(words_on_page):
            if not line[0][1].startswith(mark):
                statement = line[0][0]
                continue
            count += 1
            if statement is None or line[0][0] <= statement + 1:
                wrong.append(f"page {number}: {' '.join(t for _, t in line)[:60]!r}")
    return count, wrong


@pytest.mark.slow
@needs_print
def test_code_is_wrapped_with_a_mark_and_nothing_runs_into_the_margin(edition: tuple[str, list[Path], Path]) -> None:
    """N3 of the print review: code wrapped by the browser landed at the wrong indentation with no mark."""
    lang, _, out = edition
    for name in ["handout", "workbook"]:
        pdf = out / f"{name}.pdf"
        assert past_the_margin(pdf) == [], f"{lang} {name}"
        count, wrong = continuations(pdf)
        assert wrong == [], f"{lang} {name}: a continuation that does not start deeper than its line"
        assert count >= 10, f"{lang} {name}: only {count} wrapped lines: is the wrapping still done by hand?"


@pytest.mark.slow
@needs_print
def test_no_page_is_blank_and_no_table_prints_twice(edition: tuple[str, list[Path], Path]) -> None:
    """N9 of the print review: a blank page between two notebooks; the playground table printed twice."""
    lang, notebooks, out = edition
    for name in ["handout", "workbook"]:
        pages = book_pages(out / f"{name}.pdf", lang, notebooks)
        blank = [number for number, page in enumerate(pages, start=1) if not page]
        assert blank == [], f"{lang} {name}: blank pages {blank}"
    text = "".join(book_pages(out / "handout.pdf", lang, notebooks, raw=True))
    row = squeezed(course_outcome_row(lang))
    assert text.count(row) == 1, f"{lang}: the playground's first row is printed {text.count(row)} times"


def course_outcome_row(lang: str) -> str:
    """The first row of the playground's outcome table, in the edition's language (the table 11 prints)."""
    from gradlab import i18n
    from gradlab.course import iteration

    before = i18n.language()
    i18n.set_language("zh_CN" if lang == "zh" else "en")
    try:
        preset = next(iter(iteration.PRESETS))
        return iteration.preset_title(preset) + " " + iteration.PRESETS[preset].note
    finally:
        i18n.set_language(before)


@pytest.mark.slow
@needs_print
def test_maths_is_typeset_not_printed_as_tex(edition: tuple[str, list[Path], Path]) -> None:
    """P10 of the print review: TeX such as $\\mathrm{mean}((y - 1)^2)$ printed as its source."""
    lang, notebooks, out = edition
    written = [
        m.group(1) or m.group(2)
        for path in notebooks
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown"
        for m in re.finditer(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.sub(r"`[^`]*`", "", cell.source))
    ]
    assert len(written) >= 5, "the notebooks write maths"
    for name in ["handout", "workbook"]:
        raw = "\n".join(pdf_raw(out / f"{name}.pdf"))
        assert not re.search(r"\\(?:mathrm|frac|sum|sigma|delta|cdot|mapsto)\b", raw), f"{lang} {name}: TeX printed"
        assert not re.search(r"\$[^$\s][^$\n]*\^[^$\n]*\$", raw), f"{lang} {name}: $...^...$ printed"
    text = words(" ".join(pdf_raw(out / "handout.pdf")))
    assert "σ(1 − σ)" in text.replace("\u2061", ""), "the maths of notebook 09, typeset"


@pytest.mark.slow
@needs_print
def test_the_handout_ends_with_an_index_whose_pages_hold_the_term(edition: tuple[str, list[Path], Path]) -> None:
    """P13 of the print review: no index."""
    lang, _, out = edition
    pdf = out / "handout.pdf"
    top = [(title, page) for depth, title, page in handout_print.outline(pdf) if depth == 0]
    title = handout.LABELS[lang]["index_title"]
    assert top[-1][0] == title, "the index is the book's last part, in the outline"
    assert contents(pdf, top[0][1] - 1).get(title) == top[-1][1], "and on the cover's contents, with its page"
    raw = pdf_raw(pdf)
    index = " ".join(" ".join(page.split()) for page in raw[top[-1][1] - 1 :])
    checked = 0
    for term in handout_paper.INDEX_TERMS:
        if not term.code:
            continue
        label = term.listed(lang)
        found = re.search(re.escape(label) + r"((?:\s*\d+,)*\s*\d+)", index)
        if not found:
            continue
        for number in [int(n) for n in found.group(1).split(",")]:
            page, text = squeezed(raw[number - 1]), raw[number - 1]
            pattern = term.finds(lang)  # a term may wrap: look in the text as printed, and without line breaks
            found_here = pattern.search(" ".join(text.split())) or pattern.search(re.sub(r"\s+", "", text))
            assert squeezed(label) in page or found_here, f"{lang}: index says {label!r} is on page {number}"
            checked += 1
    assert checked >= 60, f"{lang}: only {checked} index references checked"
