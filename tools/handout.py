"""Build the workshop handout from the committed notebooks (``make handout``).

Writes ``build/handout/``:

* ``NN_name.html``   one page per notebook, from its stored outputs (nothing is
  re-executed); images embedded, graphs as the stored PNG/SVG, widgets as their
  static fallback (``text/html`` or ``text/plain``);
* ``index.html``     the course map: each notebook's title and learning goals;
* ``handout.pdf``    the full book, for reference: a cover with the course map,
  each notebook's learning goals and first page, then every notebook;
* ``workbook.pdf``   the edition a workshop hands out: per notebook its goals,
  the key code and pictures, each prediction prompt and exercise with ruled
  lines to write on, the summary (the cell tags choose: see ``workbook.py``);
* ``cheatsheet.pdf`` one page: the two autograd errors decoded, their fixes and
  gradlab's own calls (from ``tools/handout_cheatsheet.html``; the Chinese edition
  from ``tools/handout_cheatsheet.zh.html``, with gradlab's words in Chinese).

Made for paper: tracebacks are cut to the reader's frames and the error
(``handout_tracebacks.py``), output lines wrap between words, both books carry
running headers with the notebook's title, page numbers, a table of contents
with page numbers and a PDF outline (one bookmark per notebook); links to
another notebook print its page, links to the web print their address
(``handout_book.py``).

PDFs are printed by headless Chromium (Debian: ``apt-get install chromium``),
driven by Playwright with the network cut off (``handout_print.py``); no page
references a remote script, stylesheet or image (no CDN MathJax or require.js:
math shows as its TeX source). The notebooks folder may hold another language
edition (e.g. ``notebooks/zh``): its labels and fonts follow the language of the
notebook titles; Chinese needs a CJK font (Debian: ``fonts-noto-cjk``).

Usage::

    python tools/handout.py [--notebooks notebooks] [--out build/handout] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import copy
import html
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import jinja2
import nbformat
from nbconvert import HTMLExporter

from gradlab import i18n
from gradlab.advice import pitfalls
from gradlab.causes import Context, fixes_for
from gradlab.codes import CODES
from gradlab.fixes import Fix
from gradlab.rewrite import detach_in

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_notebooks import title
from handout_book import (  # noqa: F401  (tests reach these through this module)
    HTML_LANG,
    LABELS,
    MONO,
    NOTEBOOK_HREF,
    SANS,
    Book,
    fill_page_numbers,
    handout_cover,
    inline_markdown,
    markdown2html_mistune,
    open_details,
    plain_text,
    print_links,
    workbook_cover,
)
from handout_print import APT_LINE, Printer, PrintError, destinations, find_chromium  # noqa: F401
from handout_tracebacks import cut_printed_frames, cut_traceback
from workbook import workbook_notebook

ROOT = Path(__file__).resolve().parent.parent
CHEATSHEET = Path(__file__).resolve().parent / "handout_cheatsheet.html"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

# Screen and print settings of the notebook pages (and the base of both books).
HANDOUT_CSS = f"""
:root, body {{
  --jp-content-font-family: {SANS};
  --jp-ui-font-family: {SANS};
  --jp-code-font-family: {MONO};
}}
main {{ max-width: 60rem; margin: 0 auto; }}
nav.handout-nav {{ font-family: {SANS}; margin: 1rem auto; max-width: 60rem; }}
.jp-RenderedImage img, .jp-RenderedSVG svg {{ max-width: 100%; height: auto; }}
/* wrap long output lines between words, never inside one (JupyterLab breaks anywhere) */
.jp-OutputArea-output pre, .jp-RenderedText pre, pre {{
  white-space: pre-wrap; word-break: normal; overflow-wrap: break-word;
}}
.handout-omitted {{ color: #555; font-style: italic; }}
@page {{ size: A4; margin: 14mm 12mm; }}
@media print {{
  nav.handout-nav {{ display: none; }}
  main {{ max-width: none; }}
  .jp-RenderedImage, .jp-RenderedSVG {{ break-inside: avoid; }}
}}
"""

# lab/index.html.j2 minus every script it would load from a CDN (require.js,
# widget manager, MathJax, mermaid); our CSS comes after JupyterLab's.
PAGE_TEMPLATE = """
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}<style type="text/css">{{ resources.handout_css }}</style>{%- endblock html_head_css -%}
{%- block body_header -%}
{{ super() }}
{{ resources.handout_prelude }}
{%- endblock body_header -%}
"""


class HandoutError(RuntimeError):
    """The handout cannot be built; the message says what to install or fix."""


# ---------------------------------------------------------------- collect


@dataclass
class Chapter:
    """One notebook as the handout sees it."""

    path: Path
    title: str  # markdown of the first "# " heading
    goals: list[str] = field(default_factory=list)  # markdown of each learning goal
    notebook: nbformat.NotebookNode | None = None

    @property
    def page(self) -> str:
        return self.path.stem + ".html"

    @property
    def anchor(self) -> str:
        """The id of the chapter's first element in a printed book."""
        return "chapter-" + self.path.stem


_GOALS_START = re.compile(
    r"^\s*(\*\*|__)(Learning goals|学习目标)\b.*$|^\s*#{1,6}\s*(Learning goals|学习目标)\b.*$", re.I
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING = re.compile(r"^\s*#{1,6}\s")


def goals_of(notebook: nbformat.NotebookNode) -> list[str]:
    """The list items after a ``**Learning goals**`` line or a ``## Learning goals`` heading."""
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        for start, line in enumerate(lines):
            if not _GOALS_START.match(line):
                continue
            goals: list[str] = []
            for line in lines[start + 1 :]:
                item = _LIST_ITEM.match(line)
                if item:
                    goals.append(item.group(1).strip())
                elif goals and line.startswith(("  ", "\t")) and line.strip():
                    goals[-1] += " " + line.strip()  # continuation of a wrapped item
                elif _HEADING.match(line) or (goals and line.strip()):
                    break
            if goals:
                return goals
    return []


def read_chapters(notebooks_dir: Path) -> list[Chapter]:
    """Every ``NN_*.ipynb`` of ``notebooks_dir``, in course order."""
    paths = sorted(p for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb") if p.is_file())
    if not paths:
        raise HandoutError(f"no notebooks named NN_*.ipynb in {notebooks_dir}")
    chapters = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        chapters.append(Chapter(path, title(notebook, path.stem), goals_of(notebook), notebook))
    return chapters


def language_of(chapters: list[Chapter]) -> str:
    """``"zh"`` when the notebook titles are written in Chinese, else ``"en"``."""
    text = "".join(chapter.title for chapter in chapters)
    return "zh" if _CJK.search(text) else "en"


def static_outputs(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy where every widget output is replaced by its static fallback.

    A widget needs a live kernel; the handout shows what the output stored next
    to the widget view: ``text/html`` if present, else ``text/plain``.
    """
    notebook = copy.deepcopy(notebook)
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                fallback = {k: data[k] for k in ("text/html", "text/plain") if k in data}
                if not fallback:
                    continue
                # text/html wins over text/plain in nbconvert's display order
                output["data"] = nbformat.from_dict(fallback)
            kept.append(output)
        cell["outputs"] = kept
    return notebook


def for_books(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy for the printed books: no generated cell (navigation, Colab), and a widget whose static view
    folds what another output of the notebook prints in full (the playground's table) as its plain text."""
    from execute_notebooks import is_generated

    notebook = copy.deepcopy(notebook)
    notebook.cells = [cell for cell in notebook.cells if not is_generated(cell)]
    shown = [
        output.get("data", {}).get("text/html", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if WIDGET_VIEW not in output.get("data", {})
    ]
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            if WIDGET_VIEW not in data or "text/plain" not in data:
                continue
            folded = re.findall(r"<details>.*?</summary>(.*?)</details>", data.get("text/html", ""), flags=re.S)
            if any(part.strip() and any(part.strip() in other for other in shown) for part in folded):
                output["data"] = nbformat.from_dict({"text/plain": data["text/plain"]})
    return notebook


def print_outputs(notebook: nbformat.NotebookNode, *, context: bool = True) -> nbformat.NotebookNode:
    """:func:`static_outputs`, and every error's traceback (and frames a cell prints) cut to the reader's frames.

    ``context=False``: a cell frame keeps only its failing line (see :func:`cut_traceback`).
    """
    notebook = static_outputs(notebook)
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") == "error":
                output["traceback"] = cut_traceback(output.get("traceback", []), context=context)
            elif output.get("output_type") == "stream":
                output["text"] = cut_printed_frames(output.get("text", ""))
    return notebook


# ---------------------------------------------------------------- render


def course_map_html(chapters: list[Chapter], *, links: bool) -> str:
    """An ordered list of the chapters with their learning goals."""
    items = []
    for chapter in chapters:
        title = inline_markdown(chapter.title)
        if links:
            title = f'<a href="{html.escape(chapter.page)}">{title}</a>'
        goals = "".join(f"<li>{inline_markdown(goal)}</li>" for goal in chapter.goals)
        items.append(f"<li><strong>{title}</strong>" + (f"<ul>{goals}</ul>" if goals else "") + "</li>")
    return '<ol class="course-map">\n' + "\n".join(items) + "\n</ol>"


def index_html(chapters: list[Chapter], lang: str = "en") -> str:
    words = LABELS[lang]
    return f"""<!DOCTYPE html>
<html lang="{HTML_LANG[lang]}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{html.escape(words["course"])}</title>
<style>
body {{ font-family: {SANS}; max-width: 50rem;
       margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #222; }}
code {{ font-family: {MONO}; background: #f3f3f3; padding: 0 .2em; }}
ol.course-map {{ list-style: none; padding-left: 0; }}
ol.course-map > li {{ margin: 1em 0; }}
</style>
</head>
<body>
<h1>{html.escape(words["course"])}</h1>
<p>{html.escape(words["subtitle"])}</p>
<p>{html.escape(words["print_versions"])}: <a href="workbook.pdf">{html.escape(words["workbook_pdf"])}</a> ·
<a href="handout.pdf">{html.escape(words["all_notebooks"])}</a> ·
<a href="cheatsheet.pdf">{html.escape(words["cheatsheet"])}</a></p>
<h2>{html.escape(words["course_map"])}</h2>
{course_map_html(chapters, links=True)}
</body>
</html>
"""


def make_exporter() -> HTMLExporter:
    loader = jinja2.DictLoader({"handout.html.j2": PAGE_TEMPLATE})
    exporter = HTMLExporter(template_name="lab", template_file="handout.html.j2", extra_loaders=[loader])
    exporter.embed_images = True
    exporter.exclude_anchor_links = True
    return exporter


def notebook_html(exporter: HTMLExporter, notebook: nbformat.NotebookNode, title: str, prelude: str = "") -> str:
    """The page of one notebook; ``prelude`` (HTML) comes before the first cell."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata["title"] = title
    body, _ = exporter.from_notebook_node(notebook, resources={"handout_css": HANDOUT_CSS, "handout_prelude": prelude})
    return body


def nav_html(chapters: list[Chapter], at: int, lang: str = "en") -> str:
    parts = [f'<a href="index.html">{html.escape(LABELS[lang]["index"])}</a>']
    if at > 0:
        parts.append(f'<a href="{chapters[at - 1].page}">&larr; {plain_text(chapters[at - 1].title)}</a>')
    if at + 1 < len(chapters):
        parts.append(f'<a href="{chapters[at + 1].page}">{plain_text(chapters[at + 1].title)} &rarr;</a>')
    return '<nav class="handout-nav">' + " · ".join(parts) + "</nav>"


def link_pages(page: str, chapters: list[Chapter]) -> str:
    """Links between notebooks (``02_x.ipynb``) point at their handout pages (``02_x.html``)."""
    stems = {chapter.path.stem for chapter in chapters}

    def replace(match: re.Match[str]) -> str:
        stem = match.group(2)
        return f"{match.group(1)}{stem}.html" if stem in stems else match.group(0)

    return re.sub(r'(href=")' + NOTEBOOK_HREF, replace, page)


def omitted_frames_styled(page: str) -> str:
    """The ``… N library frames omitted`` lines of cut tracebacks, set apart in grey italics."""
    return re.sub(r"(?m)^(… \d+ library frames? omitted[^\n<]*)", r'<span class="handout-omitted">\1</span>', page)


@dataclass
class Rendered:
    """A notebook as nbconvert rendered it, in parts a book can reuse."""

    head: str  # inside <head>: JupyterLab's CSS and ours
    body_tag: str  # <body class="jp-Notebook" ...>
    main: str  # inside <main>: the cells


def split_page(page: str) -> Rendered:
    head = re.search(r"<head\b[^>]*>(.*?)</head\s*>", page, flags=re.S | re.I)
    body = re.search(r"<body\b[^>]*>", page, flags=re.I)
    main = re.search(r"<main\b[^>]*>(.*)</main\s*>", page, flags=re.S | re.I)
    if not (head and body and main):
        raise HandoutError("nbconvert's lab template changed: no <head>, <body> or <main> in a page")
    return Rendered(head.group(1), body.group(0), main.group(1))


# ---------------------------------------------------------------- offline check


class _RemoteRefs(HTMLParser):
    """Collects ``src``/``href`` values that would make a browser fetch from the network."""

    FETCHING: ClassVar[set[str]] = {"src", "href", "srcset", "data", "poster", "xlink:href", "background"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            return  # a plain link is only followed when clicked
        for name, value in attrs:
            if name in self.FETCHING and value and _is_remote(value):
                self.found.append(f"<{tag} {name}={value!r}>")

    handle_startendtag = handle_starttag


def _is_remote(url: str) -> bool:
    return bool(re.match(r"\s*(https?:)?//", url, flags=re.I))


def remote_references(page: str) -> list[str]:
    """Every tag (except ``<a>``) or stylesheet ``url()``/``@import`` that points at the network."""
    parser = _RemoteRefs()
    parser.feed(page)
    styles = "\n".join(re.findall(r"<style\b[^>]*>(.*?)</style\s*>", page, flags=re.I | re.S))
    css = re.findall(r"""(?:url\(\s*['"]?|@import\s+['"])((?:https?:)?//[^'")\s]+)""", styles, flags=re.I)
    return parser.found + [f"css {url}" for url in css]


def strip_remote(page: str) -> str:
    """Drop CDN scripts and stylesheets; turn a remote image into a link to it."""
    page = re.sub(
        r"<script\b[^>]*\bsrc\s*=\s*['\"]?\s*(?:https?:)?//[^>]*>.*?</script\s*>", "", page, flags=re.I | re.S
    )
    page = re.sub(r"<link\b[^>]*\bhref\s*=\s*['\"]?\s*(?:https?:)?//[^>]*>", "", page, flags=re.I)

    def image_to_link(match: re.Match[str]) -> str:
        tag = match.group(0)
        src = re.search(r"""\bsrc\s*=\s*(['"])(.*?)\1""", tag, flags=re.I | re.S)
        alt = re.search(r"""\balt\s*=\s*(['"])(.*?)\1""", tag, flags=re.I | re.S)
        url = src.group(2) if src else ""
        return f'<a href="{url}">[image: {alt.group(2) if alt and alt.group(2) else url}]</a>'

    return re.sub(r"""<img\b[^>]*\bsrc\s*=\s*(['"])\s*(?:https?:)?//[^>]*>""", image_to_link, page, flags=re.I)


def offline_page(page: str, name: str) -> str:
    page = strip_remote(page)
    remote = remote_references(page)
    if remote:
        listed = "\n  ".join(remote[:10])
        raise HandoutError(f"{name} would load from the network:\n  {listed}")
    return page


# ---------------------------------------------------------------- main


def cjk_font_missing(lang: str) -> bool:
    """True when the notebooks are Chinese and fontconfig knows no font for it."""
    if lang != "zh" or not shutil.which("fc-list"):
        return False
    found = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=60)
    return not found.stdout.strip()


def _fix_cell(fix: Fix, example: str | None = None, lang: str = "en") -> str:
    """A fix as the cheat sheet shows it; ``example`` is the fix written out in the course's loop.

    gradlab prints code only as a checked edit of a real file (``Fix.code``); the cheat sheet
    has no file, so the two-network loop's rows show its line rewritten (one page holds no more).
    """
    colon, stop = ("：", "。") if lang == "zh" else (":", ".")
    intent = f"<strong>{html.escape(_sentence(str(fix.intent)))}{colon}</strong> " if fix.intent else ""
    shown = fix.code or example
    code = f' <code class="example">{html.escape(shown)}</code>' if shown else ""
    return f'{intent}{html.escape(str(fix.summary))}{stop}{code}<div class="trains">{html.escape(str(fix.trains))}{stop}</div>'


def _sentence(text: str) -> str:
    """``text`` with a capital first letter, unless it opens with code (``retain_graph=True ...``)."""
    first = text.split(" ", 1)[0]
    if not first[:1].isalpha() or re.search(r"[_.=()\[\]]", first):
        return text
    return text[0].upper() + text[1:]


# The "When" column of the cheat sheet's fixes, per language of the edition (the fixes
# themselves are gradlab.advice's, in gradlab's language for that edition).
CHEATSHEET_WHEN: dict[str, tuple[str, ...]] = {
    "en": (
        "Either error in the two-network loop: <code>opt_1.step()</code> (or <code>loss_1.backward()</code>) "
        "before <code>loss_2.backward()</code>",
        "A GAN: <code>opt_d.step()</code> before <code>g_loss.backward()</code>, which trains G through D",
        "An in-place op on a tensor autograd saved: <code>x += y</code> (and likewise <code>relu_</code>, "
        "<code>mul_</code>, <code>t[i] = ...</code>)",
        "State carried from one iteration to the next (an RNN's hidden state)",
        "A running total of losses, <code>total_loss += loss</code>: memory grows, or the next backward fails",
    ),
    "zh": (
        "两个网络的循环里出现任一错误：<code>opt_1.step()</code>（或 <code>loss_1.backward()</code>）"
        "在 <code>loss_2.backward()</code> 之前",
        "GAN：<code>opt_d.step()</code> 在 <code>g_loss.backward()</code> 之前，而 g_loss 要经过 D 训练 G",
        "对 autograd 保存的张量做原地操作：<code>x += y</code>（<code>relu_</code>、<code>mul_</code>、"
        "<code>t[i] = ...</code> 同理）",
        "从一次迭代带到下一次迭代的状态（RNN 的隐藏状态）",
        "把损失累加成总数 <code>total_loss += loss</code>：内存不断增长，或下一次反向传播失败",
    ),
}
CHEATSHEET_LANGUAGE = {"en": "en", "zh": "zh_CN"}
CHEATSHEET_CODES = (
    "graph_freed",
    "modified_in_place",
)  # the kinds of the sheet's two errors  # the edition's language -> gradlab.set_language's


def cheatsheet_template(lang: str) -> Path:
    """The cheat sheet's page for an edition: ``handout_cheatsheet.html``, or ``handout_cheatsheet.<lang>.html``."""
    return CHEATSHEET if lang == "en" else CHEATSHEET.with_suffix(f".{lang}.html")


def cheatsheet_html(template: str, lang: str = "en") -> str:
    """The cheat sheet with its fixes, pitfalls and codes rendered from gradlab, in the course's names.

    The course passes its own names (n_1, loss_2, opt_1, ...) as the context, as a
    notebook's tracker would find them; the texts themselves come from the library,
    in the edition's language (``lang``: ``"en"`` or ``"zh"``).
    """
    if lang not in CHEATSHEET_WHEN:
        raise ValueError(f"the cheat sheet has the editions {sorted(CHEATSHEET_WHEN)}, not {lang!r}")
    markers = ("<!-- gradlab:fixes -->", "<!-- gradlab:pitfalls -->", "<!-- gradlab:codes -->")
    if any(marker not in template for marker in markers):
        raise ValueError(f"the cheat sheet template lost one of its markers {', '.join(markers)}")
    before = i18n.language()
    i18n.set_language(CHEATSHEET_LANGUAGE[lang])
    try:
        fixes, donts, codes = _cheatsheet_parts(CHEATSHEET_WHEN[lang], lang)
    finally:
        i18n.set_language(before)
    return (
        template.replace("<!-- gradlab:fixes -->", fixes)
        .replace("<!-- gradlab:pitfalls -->", donts)
        .replace("<!-- gradlab:codes -->", codes)
    )


def _cheatsheet_parts(when: tuple[str, ...], lang: str) -> tuple[str, str, str]:
    loop = Context(
        model="n_1",
        others=("n_2",),
        loss="loss_2",
        earlier="loss_1",
        optimizer="opt_1",
        entry="pred_1",
        entry_line="pred_2 = n_2(pred_1)",
    )
    gan = Context(
        model="D",
        others=("G",),
        loss="g_loss",
        earlier="d_loss",
        optimizer="opt_d",
        judge=True,
        recompute=("out_fake = D(fake)", "g_loss = bce(out_fake, ones)"),
    )
    steps = fixes_for("optimizer_step", loop)
    rows = [
        (when[0], steps[0], detach_in(loop.entry_line or "", "pred_1", into=loop.others)),
        ("", steps[1], "loss_2.backward(inputs=list(n_2.parameters()))"),
        ("", steps[2], "(loss_1 + loss_2).backward()"),
        (when[1], fixes_for("optimizer_step", gan)[0], None),
        (when[2], fixes_for("inplace_op", Context(tensor="x", op="__iadd__", code="x += y"))[0], "x = x + y"),
        (
            when[3],
            fixes_for("carried_state", Context(carried="h", loss="loss", entry_line="out, h = rnn(x, h)"))[0],
            None,
        ),
        (when[4], fixes_for("carried_state", Context(total=True, carried="total_loss", loss="loss"))[0], None),
    ]
    # each case a full-width row of its own, its fixes full width below it: the fix text gets the page's width
    fixes = "".join(
        (f'<tr><td colspan="2" class="when">{w}</td></tr>' if w else "")
        + f'<tr><td colspan="2" class="fix">{_fix_cell(fix, example, lang)}</td></tr>'
        for w, fix, example in rows
    )
    donts = "".join(
        f'<tr><td>{html.escape(_sentence(str(p.attempt)))}</td><td class="bad">{html.escape(str(p.what_it_does))}</td></tr>'
        for p in pitfalls()
    )
    # the two errors of the sheet; `python -m gradlab explain --codes` lists the whole family
    codes = " &middot; ".join(
        f"<code>{c.code}</code>&nbsp;{html.escape(c.title)}" for c in CODES if c.kind in CHEATSHEET_CODES
    )
    return fixes, donts, codes


def build(notebooks_dir: Path, out: Path, chromium: str) -> list[Path]:
    """Write the handout into ``out``; return the files written."""
    chapters = read_chapters(notebooks_dir)
    lang = language_of(chapters)
    words = LABELS[lang]
    if cjk_font_missing(lang):
        print(
            "handout: the notebooks are in Chinese but no CJK font is installed; "
            "Debian: apt-get install fonts-noto-cjk",
            file=sys.stderr,
        )
    out.mkdir(parents=True, exist_ok=True)
    exporter = make_exporter()
    written = []

    full: list[tuple[Chapter, str]] = []
    short: list[tuple[Chapter, str]] = []
    rendered = None
    for at, chapter in enumerate(chapters):
        page = notebook_html(
            exporter, print_outputs(chapter.notebook), plain_text(chapter.title), nav_html(chapters, at, lang)
        )
        page = omitted_frames_styled(page)
        target = out / chapter.page
        target.write_text(offline_page(link_pages(page, chapters), chapter.page), encoding="utf-8")
        written.append(target)
        rendered = split_page(page)
        book_page = notebook_html(exporter, print_outputs(for_books(chapter.notebook)), plain_text(chapter.title))
        full.append((chapter, open_details(split_page(omitted_frames_styled(book_page)).main)))
        workbook = workbook_notebook(print_outputs(for_books(chapter.notebook), context=False), words)
        short.append(
            (
                chapter,
                omitted_frames_styled(split_page(notebook_html(exporter, workbook, plain_text(chapter.title))).main),
            )
        )
    assert rendered is not None  # read_chapters never returns an empty list

    index = out / "index.html"
    index.write_text(offline_page(index_html(chapters, lang), index.name), encoding="utf-8")
    written.append(index)

    books = [
        Book(
            lang,
            "handout",
            words["course"],
            words["course"],
            rendered.head,
            rendered.body_tag,
            full,
            handout_cover(chapters, lang, index=True),
            index=True,
        ),
        Book(
            lang,
            "workbook",
            f"{words['course']} · {words['workbook']}",
            f"{words['workbook']} · {words['course']}",
            rendered.head,
            rendered.body_tag,
            short,
            workbook_cover(chapters, lang),
            flow=True,
        ),
    ]
    with tempfile.TemporaryDirectory(prefix="handout-print-") as scratch, Printer(chromium) as printer:
        for book in books:
            html_file = Path(scratch) / f"{book.kind}.html"
            html_file.write_text(offline_page(book.html(), f"the {book.kind}"), encoding="utf-8")
            pdf = out / f"{book.kind}.pdf"
            numbers = printer.pdf_numbered(html_file, pdf, book.anchors)
            if book.index:  # once more, every page known: each page listed once per index term
                book.index_pages = numbers
                page = fill_page_numbers(book.html(), numbers)
                html_file.write_text(offline_page(page, f"the {book.kind}"), encoding="utf-8")
                printer.pdf(html_file, pdf)
                found = destinations(pdf)
                if any(found.get(anchor) != numbers[anchor] for anchor in book.anchors):
                    raise HandoutError(f"{pdf.name}: the chapters moved when the index was written in")
            written.append(pdf)

        cheatsheet = Path(scratch) / "cheatsheet.html"
        template = cheatsheet_template(lang)
        page = cheatsheet_html(template.read_text(encoding="utf-8"), lang)
        cheatsheet.write_text(offline_page(page, template.name), encoding="utf-8")
        printer.pdf(cheatsheet, out / "cheatsheet.pdf")
        written.append(out / "cheatsheet.pdf")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the workshop handout (HTML pages and PDFs).")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="folder of NN_*.ipynb")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "handout", help="output folder")
    parser.add_argument("--chromium", help="Chromium executable (default: chromium on PATH)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        chromium = find_chromium(args.chromium)
        written = build(args.notebooks, args.out, chromium)
    except (HandoutError, PrintError) as error:
        print(f"handout: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    print(f"handout built in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
