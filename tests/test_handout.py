"""The workshop handout (tools/handout.py): HTML pages, course map, handout.pdf, cheatsheet.pdf.

The PDF tests print with headless Chromium and read the PDFs with poppler; they
skip with the apt line to run when those are missing.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
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


def load_handout():
    spec = importlib.util.spec_from_file_location("handout", HANDOUT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["handout"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


handout = load_handout()


def words(text: str) -> str:
    """Text as pdftotext and a reader see it: ligatures split, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def build(notebooks: Path, out: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(HANDOUT), "--notebooks", str(notebooks), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    return result, time.monotonic() - started


def pdf_pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, flags=re.M).group(1))


def pdf_text(pdf: Path) -> list[str]:
    """The text of each page."""
    # reading order (no -layout): table cells stay whole instead of interleaving
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True)
    return [words(page) for page in text.stdout.split("\f")]


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


def write_sample_notebooks(folder: Path) -> list[str]:
    """Two throwaway notebooks with every kind of output the handout must handle; their titles."""
    folder.mkdir(parents=True, exist_ok=True)
    first = nbformat.v4.new_notebook()
    first.cells = [
        nbformat.v4.new_markdown_cell(
            "# Sample one: `backward()` twice\n\n**Learning goals**\n\n"
            "- read the *first* error\n- find the freed buffer\n\nSee [PyTorch](https://pytorch.org) "
            "and $y = x^2$.\n\n<script src=\"https://cdn.example.org/evil.js\"></script>\n\n"
            "![remote](https://example.org/cat.png)\n\nNext: [sample two](01_sample_two.ipynb)"
        ),
        nbformat.v4.new_code_cell("show_graph()", outputs=[
            nbformat.v4.new_output("display_data", data={"image/svg+xml": SVG, "text/plain": "<graph>"}),
            nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
        ]),
        nbformat.v4.new_code_cell("slider", outputs=[
            nbformat.v4.new_output("display_data", data={
                WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "abc"},
                "text/html": "<b>static fallback of the slider</b>",
                "text/plain": "IntSlider(value=3)",
            }),
            nbformat.v4.new_output("display_data", data={
                WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "def"},
                "text/plain": "VBox(children=(Plain fallback,))",
            }),
        ]),
    ]
    first.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    second = nbformat.v4.new_notebook()
    second.cells = [
        nbformat.v4.new_markdown_cell("# Sample two: version counters\n\n## Learning goals\n\n1. name the in-place op"),
        nbformat.v4.new_code_cell("1/0", outputs=[nbformat.v4.new_output(
            "error", ename="ZeroDivisionError", evalue="division by zero", traceback=["ZeroDivisionError"]
        )]),
        nbformat.v4.new_markdown_cell("## Learning goals elsewhere\n\n- ignored, the first list wins"),
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


def test_widget_outputs_become_their_static_fallback(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    notebook = nbformat.read(tmp_path / "00_sample_one.ipynb", as_version=4)
    static = handout.static_outputs(notebook)
    outputs = static.cells[2].outputs
    assert [sorted(o.data) for o in outputs] == [["text/html", "text/plain"], ["text/plain"]]
    assert "widgets" not in static.metadata
    assert WIDGET_VIEW in notebook.cells[2].outputs[0].data, "the input notebook is left as it was"


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


def test_missing_chromium_names_the_apt_line(tmp_path: Path) -> None:
    write_sample_notebooks(tmp_path)
    result = subprocess.run(
        [sys.executable, str(HANDOUT), "--notebooks", str(tmp_path), "--out", str(tmp_path / "out"),
         "--chromium", "no-such-chromium"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    assert "apt-get install chromium" in result.stderr


# ------------------------------------------------------------------ slow: print the PDFs


@pytest.fixture(scope="module")
def sample_handout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("sample_notebooks")
    titles = write_sample_notebooks(folder)
    out = tmp_path_factory.mktemp("sample_handout")
    result, _ = build(folder, out)
    assert result.returncode == 0, result.stderr
    return out, titles


@pytest.fixture(scope="module")
def committed_handout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    if not NOTEBOOKS:
        pytest.skip("no committed notebooks/NN_*.ipynb yet")
    out = tmp_path_factory.mktemp("handout")
    result, seconds = build(ROOT / "notebooks", out)
    assert result.returncode == 0, result.stderr
    return out, seconds


@pytest.mark.slow
@needs_print
def test_sample_pages_are_static_and_offline(sample_handout: tuple[Path, list[str]]) -> None:
    out, titles = sample_handout
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
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "find the freed buffer" in index and "name the in-place op" in index
    assert "ignored, the first list wins" not in index
    assert not (out / "notes.html").exists()
    assert pdf_pages(out / "cheatsheet.pdf") == 1
    text = " ".join(pdf_text(out / "handout.pdf"))
    for title in titles:
        assert title in text


@pytest.mark.slow
@needs_print
def test_handout_pdf_has_every_notebook(committed_handout: tuple[Path, float]) -> None:
    out, seconds = committed_handout
    pages = pdf_text(out / "handout.pdf")
    count = pdf_pages(out / "handout.pdf")
    assert len(NOTEBOOKS) + 1 <= count <= 1 + 40 * len(NOTEBOOKS), f"{count} pages"
    for chapter in handout.read_chapters(ROOT / "notebooks"):
        title = words(handout.plain_text(chapter.title))
        assert title in pages[0], f"cover lists {title!r}"
        starts = [page for page in pages[1:] if title in page[: 300 + len(title)]]
        assert starts, f"no page starts with the notebook {title!r}"
    assert seconds < 120, f"the handout took {seconds:.0f} s to build"


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
    for line in [
        "Trying to backward through the graph a second time",
        "a backward freed buffers another backward needs",
        "is at version 2; expected version 1",
        "a tensor saved for backward was changed in place after it was saved",
        "optimizer.step()",
        "forward both, zero both, backward both",
        "step both",
        "n_2(pred_1.detach())",
        "Recompute after step",
        "retain_graph=True is not a fix for the second error",
        "Avoid the detach-inside-network fix",
        "Softmax over a size-1 dim gives constant 1.0 outputs",
    ]:
        assert line in text, f"cheat sheet lacks {line!r}"
