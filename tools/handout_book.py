"""The printed books: a cover with contents, then each notebook on its own pages.

Both ``handout.pdf`` and ``workbook.pdf`` are one HTML document built here from
the notebooks as nbconvert rendered them: a cover (``page: cover``, no running
header), then one ``<section>`` per notebook on a named page whose running
header is the notebook's title (CSS margin boxes, Chromium >= 131), with page
numbers ``3 / 40`` in the footer. Page numbers of the contents and of links
between notebooks are ``<span data-page-of="ID">`` placeholders; the printer
(``handout_print.py``) fills them in. Labels and fonts follow the language of
the notebooks (English, Chinese).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from handout_paper import anchor_cells, for_paper, index_html
from nbconvert.filters.markdown_mistune import markdown2html_mistune

NAVIGATION_TAG = "navigation"
COLAB_TAG = "colab"  # the generated "Open in Colab" link and install cell: for the screen, never printed

# What the builder itself prints, per language of the notebooks.
LABELS: dict[str, dict[str, str]] = {
    "en": {
        "course": "gradlab: a PyTorch autograd course",
        "subtitle": "Make autograd failures visible: saved tensors, version counters, and who modified what.",
        "course_map": "Course map and learning goals",
        "index": "Course map",
        "workbook": "Workbook",
        "workbook_note": "Before you run a cell, write down what you expect on the lines below its prompt; "
        "then run it and compare. The answers, the solutions and each notebook's summary are in the notebooks "
        "and in the full handout.",
        "name": "Name",
        "hub_user": "Your user name on the course's hub",
        "hub_address": "The hub's address",
        "contents": "Contents",
        "prediction": "Your prediction",
        "answer": "Your answer",
        "page": " (p.\u00a0{n})",  # a reference to a page; {n} is its number
        "print_versions": "Print versions",
        "all_notebooks": "all notebooks (PDF)",
        "cheatsheet": "one-page cheat sheet (PDF)",
        "workbook_pdf": "workbook (PDF)",
        "index_title": "Index",
    },
    "zh": {
        "course": "gradlab：PyTorch autograd 课程",
        "subtitle": "让 autograd 的失败看得见：保存的张量、版本计数器，以及是谁修改了什么。",
        "course_map": "课程地图与学习目标",
        "index": "课程地图",
        "workbook": "练习册",
        "workbook_note": "运行每个单元格之前，先在提示下方的横线上写下你的预期；运行之后再对照。"
        "答案、参考答案和每个笔记本的小结都在笔记本和完整讲义中。",
        "name": "姓名",
        "hub_user": "你在课程服务器（hub）上的用户名",
        "hub_address": "hub 的地址",
        "contents": "目录",
        "prediction": "你的预测",
        "answer": "你的答案",
        "page": "（第\u00a0{n}\u00a0页）",
        "print_versions": "打印版本",
        "all_notebooks": "全部笔记本（PDF）",
        "cheatsheet": "一页速查表（PDF）",
        "workbook_pdf": "练习册（PDF）",
        "index_title": "索引",
    },
}
HTML_LANG = {"en": "en", "zh": "zh-Hans"}

# DejaVu ships with Debian's fonts-dejavu-core; Chinese falls back to Noto CJK
# (fonts-noto-cjk) when installed; generic families last.
SANS = (
    '"DejaVu Sans", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", '
    '"Helvetica", "Arial", sans-serif'
)
MONO = '"DejaVu Sans Mono", "Noto Sans Mono CJK SC", "Noto Sans CJK SC", "Menlo", "Consolas", monospace'


# Both printed books: paper, running headers, page numbers, sizes that fit A4.
BOOK_CSS = f"""
@page {{
  size: A4; margin: 17mm 13mm 15mm 13mm;
  @top-left {{ font: 7.5pt {SANS}; color: #333; }}
  @top-right {{ content: var(--running, ""); font: 7.5pt {SANS}; color: #555; }}  /* Book.html sets it */
  @bottom-right {{ content: counter(page) " / " counter(pages); font: 7.5pt {SANS}; color: #333; }}
}}
@page cover {{
  @top-left {{ content: none; }} @top-right {{ content: none; }} @bottom-right {{ content: none; }}
}}
:root, body {{
  --jp-content-font-size1: 10pt; --jp-content-line-height: 1.4;
  --jp-code-font-size: 8.5pt; --jp-code-line-height: 1.3; --jp-ui-font-size1: 10pt;
  --jp-cell-prompt-width: 14mm; --jp-cell-padding: 1.2mm; --jp-code-padding: 1mm;
  --jp-content-heading-margin-top: 1.1em; --jp-content-heading-margin-bottom: 0.4em;
}}
body {{ margin: 0; padding: 0; font-family: {SANS}; }}
main {{ max-width: none; margin: 0; padding: 0; }}
.jp-Notebook {{ padding: 0; }}
.jp-Cell {{ padding: 0.6mm 0; }}
/* no In [n]: / Out[n]: on paper: the counters mean nothing there, and a cell without output
   would read as code to type in; the code's grey background tells input from output */
.jp-InputPrompt, .jp-OutputPrompt {{ display: none !important; }}
.jp-RenderedHTMLCommon h1 {{ font-size: 16pt; margin-top: 0; }}
.jp-RenderedHTMLCommon h2 {{ font-size: 12.5pt; }}
.jp-RenderedHTMLCommon h3 {{ font-size: 10.5pt; }}
.jp-RenderedHTMLCommon h1, .jp-RenderedHTMLCommon h2, .jp-RenderedHTMLCommon h3 {{ break-after: avoid; }}
.jp-RenderedHTMLCommon p, .jp-RenderedHTMLCommon li, pre {{ orphans: 2; widows: 2; }}
/* tables fit the page: full width, cells wrap (code between its parts, see table_breaks), no column
   narrower than a few characters; a wide table (5+ columns) is set a little smaller, never below 8.5 pt */
.jp-RenderedHTMLCommon table {{ font-size: 9pt; width: 100%; max-width: 100%; table-layout: auto; }}
.jp-RenderedHTMLCommon table.handout-wide {{ font-size: 8.5pt; }}
.jp-RenderedHTMLCommon tr {{ break-inside: avoid; }}
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th {{
  min-width: 4.5em; overflow-wrap: break-word; word-break: normal; padding: 0.35em 0.45em;
}}
.jp-RenderedHTMLCommon td code, .jp-RenderedHTMLCommon th code, .jp-RenderedHTMLCommon td pre {{ font-size: 1em; }}
.jp-RenderedHTMLCommon td pre {{ margin: 0; padding-left: 0 !important; text-indent: 0 !important; }}
.handout-book .jp-RenderedHTMLCommon, .handout-book .jp-OutputArea-output,
.handout-book .jp-RenderedMarkdown, .handout-book .jp-Cell-outputArea,
.handout-book .jp-OutputArea-child {{ overflow: visible; min-width: 0; }}  /* never clip: the edge test sees it */
.jp-RenderedHTMLCommon code {{ font-size: 0.92em; }}
.jp-RenderedHTMLCommon pre code {{ font-size: 1em; }}
.jp-RenderedImage img {{ max-height: 225mm; object-fit: contain; }}
.jp-RenderedImage, .jp-RenderedSVG, .jp-InputArea {{ break-inside: avoid; }}
.jp-OutputArea-output pre, .jp-RenderedText pre, pre {{
  white-space: pre-wrap; word-break: normal; overflow-wrap: break-word;
}}
/* a wrapped output line continues indented, so a reader tells it from a new line */
.handout-book pre {{ padding-left: calc(4px + 4ch) !important; text-indent: -4ch each-line !important; }}
/* code is wrapped by handout_paper, with a mark: the browser must not wrap it again */
.handout-book .highlight pre {{
  white-space: pre !important; padding-left: 4px !important; text-indent: 0 !important; overflow: visible;
}}
.handout-cont {{ color: #777; }}
math {{ font-size: 1.05em; }}
math[display="block"] {{ margin: 0.4em 0; }}
section.handout-index ul.ix {{ columns: 2; column-gap: 8mm; list-style: none; padding-left: 0; font-size: 9pt; }}
section.handout-index ul.ix li {{ break-inside: avoid; padding-left: 3mm; text-indent: -3mm; margin: 0.3mm 0; }}
section.handout-index .ix-code {{ font-family: {MONO}; }}
.jp-InputArea-editor {{ overflow: visible; }}
.handout-book a:link, .handout-book a:visited, .handout-book .jp-RenderedHTMLCommon a:link,
.handout-book .jp-RenderedHTMLCommon a:visited {{ color: inherit; text-decoration: none; }}
/* code stays on the page of its first output line */
.jp-CodeCell .jp-Cell-inputWrapper {{ break-after: avoid; }}
.handout-url {{ font-size: 0.85em; color: #444; }}
.handout-pageref {{ color: #444; }}
.celltag_{NAVIGATION_TAG}, .celltag_{COLAB_TAG}, .handout-nav {{ display: none; }}
section.handout-chapter {{ break-before: page; }}
/* the workbook flows on: a notebook starts where the last one ended (its title never last on a page) */
section.handout-chapter.handout-flow {{ break-before: auto; }}
section.handout-chapter.handout-flow:first-of-type {{ break-before: page; }}
section.handout-flow h1 {{ margin-top: 5mm; border-top: 0.8pt solid #333; padding-top: 2mm; }}
section.handout-flow:first-of-type h1 {{ margin-top: 0; border-top: none; padding-top: 0; }}
section.handout-flow h1 + * {{ break-before: avoid; }}

.handout-cover {{ page: cover; font-size: 8.2pt; line-height: 1.3; }}
.handout-cover .cover-title {{ font-size: 21pt; font-weight: bold; margin: 0 0 1mm; }}
.handout-cover .cover-edition {{ font-size: 14pt; margin: 0 0 2mm; }}
.handout-cover .subtitle {{ font-size: 10.5pt; color: #444; margin: 0 0 5mm; }}
.handout-cover .cover-heading {{ font-size: 12pt; font-weight: bold; margin: 4mm 0 1mm;
  border-bottom: 0.8pt solid #333; padding-bottom: 0.5mm; }}
ol.toc {{ list-style: none; padding-left: 0; margin: 0; }}
ol.toc > li {{ margin: 1.2mm 0; break-inside: avoid; }}
ol.toc a {{ color: inherit; text-decoration: none; display: flex; align-items: baseline; }}
ol.toc .toc-title {{ font-weight: bold; }}
ol.toc .toc-fill {{ flex: 1; border-bottom: 0.8pt dotted #555; margin: 0 1.5mm; }}
ol.toc ul {{ margin: 0.4mm 0 0; padding-left: 5mm; }}
.handout-name {{ margin: 6mm 0 4mm; font-size: 10.5pt; }}
.handout-name span {{ display: inline-block; width: 80mm; border-bottom: 0.8pt solid #333; }}
.handout-name.handout-hub {{ margin: 0 0 4mm; font-size: 9.5pt; }}
.handout-name.handout-hub span {{ width: 70mm; }}
.handout-note {{ font-size: 9pt; color: #333; border-left: 2pt solid #333; padding-left: 3mm; }}

/* workbook: prompts and tasks keep their ruled lines on the same page */
.celltag_predict, .celltag_exercise {{ break-inside: avoid; }}
.celltag_predict {{ border-left: 2.5pt solid #222; padding: 0.5mm 0 0.5mm 3mm; }}
.celltag_exercise {{ border: 1pt dashed #222; padding: 1.5mm 3mm; }}
.handout-answer {{ margin: 1.5mm 0 2mm; }}
.handout-answer-label {{ font-size: 8.5pt; font-style: italic; color: #444; }}
/* the prompt's block holds the code it asks about: keep them with the ruled lines */
.celltag_predict pre {{ break-inside: avoid; }}
.handout-rule {{ height: 7.1mm; border-bottom: 0.6pt solid #777; }}  /* college ruled */
"""


NOTEBOOK_HREF = r"(?:\./|\.\./notebooks/)?([0-9]{2}_[\w.-]+?)\.ipynb"


class ChapterLike(Protocol):
    """What a book needs of a notebook (``handout.Chapter`` is one)."""

    path: Path
    title: str  # markdown
    goals: list[str]  # markdown of each learning goal

    @property
    def anchor(self) -> str: ...


def inline_markdown(text: str) -> str:
    """Markdown of one line (a title, a goal) as inline HTML."""
    rendered = markdown2html_mistune(text).strip()
    match = re.fullmatch(r"<p>(.*)</p>", rendered, flags=re.S)
    return match.group(1) if match else rendered


def plain_text(markdown: str) -> str:
    """What a reader sees of a markdown line: no backticks, stars or tags."""
    text = re.sub(r"<[^>]+>", "", inline_markdown(markdown))
    return " ".join(html.unescape(text).split())


_ANCHOR = re.compile(r'<a\b([^>]*?)\bhref="([^"]*)"([^>]*)>(.*?)</a\s*>', re.S | re.I)


def _breakable_url(url: str) -> str:
    """An address that may wrap after ``/ . ? & = #``, never inside a word."""
    return re.sub(r"([/.?&=#])(?=[^/])", r"\1<wbr>", html.escape(url))


_TABLE = re.compile(r"<table\b([^>]*)>(.*?)</table\s*>", re.S | re.I)
_ROW = re.compile(r"<tr\b.*?(?:</tr\s*>|(?=<tr\b)|$)", re.S | re.I)
WIDE_TABLE = 5  # columns from which a table is set in smaller type


LONG_TOKEN = 18  # characters: a run of code without a space longer than this may wrap inside (in a table)


def code_breaks(code: str) -> str:
    """HTML of table cells where a long run without spaces may wrap after ``. ( [ , = / _``.

    A column holds a name as long as ``allow_mutation_on_saved_tensors`` or a call
    like ``loss_2.backward(inputs=list(n_2.parameters()))``: it breaks between the
    parts of a name, after an underscore, never inside a word; runs of at most
    :data:`LONG_TOKEN` characters (``opt_1.zero_grad()``) stay whole. Tags and
    entities are left alone.
    """

    def breaks(run: re.Match[str]) -> str:
        text = run.group(0)
        if len(html.unescape(re.sub(r"<[^>]+>", "", text))) <= LONG_TOKEN:
            return text
        parts = re.split(r"(<[^>]+>|&[#\w]+;)", text)
        return "".join(
            part
            if part.startswith(("<", "&"))
            else re.sub(r"([.(\[,=/](?=[^\s.(\[,=/)\]])|(?<=[A-Za-z0-9])_(?=[A-Za-z]{3}))", r"\1<wbr>", part)
            for part in parts
        )

    return re.sub(r"(?:<[^>]+>|[^\s<])+", breaks, code)


def table_breaks(page: str) -> str:
    """Tables as paper sets them: a long name or call in a cell may wrap between its parts; a table of
    :data:`WIDE_TABLE` or more columns gets the class ``handout-wide`` (smaller type)."""

    def table(match: re.Match[str]) -> str:
        attributes, inner = match.groups()
        columns = max((len(re.findall(r"<t[hd]\b", row, flags=re.I)) for row in _ROW.findall(inner)), default=0)
        if columns >= WIDE_TABLE:
            if re.search(r'\bclass="', attributes):
                attributes = re.sub(r'\bclass="', 'class="handout-wide ', attributes, count=1)
            else:
                attributes += ' class="handout-wide"'
        inner = code_breaks(inner)
        return f"<table{attributes}>{inner}</table>"

    return _TABLE.sub(table, page)


def page_number(anchor: str) -> str:
    """Where the page of the element ``id=anchor`` goes; the printer fills it in."""
    return f'<span data-page-of="{html.escape(anchor)}">00</span>'


def fill_page_numbers(page: str, numbers: dict[str, int]) -> str:
    """Every :func:`page_number` placeholder of ``page`` with its number (as the printer fills them in)."""
    return re.sub(
        r'(<span data-page-of="([^"]*)">)00(</span>)',
        lambda m: (
            f"{m.group(1)}{numbers[html.unescape(m.group(2))]}{m.group(3)}"
            if html.unescape(m.group(2)) in numbers
            else m.group(0)
        ),
        page,
    )


def print_links(page: str, chapters: list[ChapterLike], page_label: str) -> str:
    """Links as paper shows them.

    A link to another notebook points at its chapter and prints its page,
    `` (p. 23)`` (``page_label`` with ``{n}`` for the number); a link to the web
    prints its address after the text, unless the text already is the address.
    """
    anchors = {chapter.path.stem: chapter.anchor for chapter in chapters}

    def replace(match: re.Match[str]) -> str:
        before, href, after, text = match.groups()
        notebook = re.fullmatch(NOTEBOOK_HREF + r"(?:#.*)?", href)
        if notebook and notebook.group(1) in anchors:
            anchor = anchors[notebook.group(1)]
            return (
                f'<a{before}href="#{anchor}"{after}>{text}</a>'
                f'<span class="handout-pageref">{html.escape(page_label).replace("{n}", page_number(anchor))}</span>'
            )
        if re.match(r"https?://", href, flags=re.I):
            shown = " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())
            bare = re.sub(r"^https?://", "", href.rstrip("/"), flags=re.I)
            if shown.rstrip("/") in (href.rstrip("/"), bare):
                return match.group(0)
            return match.group(0) + f'<span class="handout-url"> ({_breakable_url(href)})</span>'
        return match.group(0)

    return _ANCHOR.sub(replace, page)


def open_details(page: str) -> str:
    """Collapsed ``<details>`` (solutions) print open in the full book."""
    return re.sub(r"<details(?![^>]*\bopen\b)", "<details open", page, flags=re.I)


def css_string(text: str) -> str:
    """``text`` as a CSS string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


@dataclass
class Book:
    """A printable document: a cover, then each chapter from a new page with its own running header.

    ``index``: end with an index of :data:`handout_paper.INDEX_TERMS`, each term with the pages of the cells
    that use it. A first print fills in one number per cell; give its numbers as ``index_pages`` and the next
    print lists each page once.
    """

    lang: str
    kind: str  # "handout" or "workbook"
    title: str  # the PDF's title
    running: str  # right of the running header
    head: str
    body_tag: str
    chapters: list[tuple[ChapterLike, str]]  # each chapter with the HTML of its cells
    cover: str
    index: bool = False
    index_pages: dict[str, int] | None = None
    flow: bool = False  # chapters follow on the same page; the running header names the book, not the chapter

    def _sections(self) -> tuple[list[str], list[str], dict[int, list[str]]]:
        """The ``@page`` rules, the chapters' sections, and the index's term -> cell ids."""
        everything = [chapter for chapter, _ in self.chapters]
        page_label = LABELS[self.lang]["page"]
        rules, sections = [], []
        found: dict[int, list[str]] = {}
        for at, (chapter, main) in enumerate(self.chapters):
            name = f"chapter{at}"
            if not self.flow:
                rules.append(f"@page {name} {{ @top-left {{ content: {css_string(plain_text(chapter.title))}; }} }}")
            body = for_paper(table_breaks(print_links(main, everything, page_label)))
            if self.index:
                body = anchor_cells(body, f"{at:02d}", self.lang, found)
            if not re.search(r"<h1\b", body, flags=re.I):  # the outline needs a title: a notebook without one
                body = f"<h1>{inline_markdown(chapter.title)}</h1>{body}"
            kind, page = (
                ("handout-chapter handout-flow", "") if self.flow else ("handout-chapter", f' style="page: {name}"')
            )
            sections.append(f'<section class="{kind}" id="{html.escape(chapter.anchor)}"{page}>{body}</section>')
        if self.index:
            title = LABELS[self.lang]["index_title"]
            rules.append(f"@page index {{ @top-left {{ content: {css_string(title)}; }} }}")
            sections.append(index_html(found, self.lang, title, page_number, self.index_pages))
        return rules, sections, found

    def html(self) -> str:
        rules, sections, _ = self._sections()
        head = re.sub(r"<title>.*?</title>", f"<title>{html.escape(self.title)}</title>", self.head, flags=re.S)
        body_tag = self.body_tag.replace('class="', f'class="handout-book handout-{self.kind} ', 1)
        style = BOOK_CSS.replace('var(--running, "")', css_string(self.running))
        return (
            f'<!DOCTYPE html>\n<html lang="{HTML_LANG[self.lang]}">\n<head>{head}'
            f'<style type="text/css">{style}\n' + "\n".join(rules) + "</style>\n</head>\n"
            f"{body_tag}\n<main>{self.cover}\n" + "\n".join(sections) + "\n</main>\n</body>\n</html>\n"
        )

    @property
    def anchors(self) -> list[str]:
        """The ids whose pages the printer fills in: each chapter's (the contents), each indexed cell's."""
        chapters = [chapter.anchor for chapter, _ in self.chapters]
        if not self.index:
            return chapters
        cells = [] if self.index_pages is not None else sorted({a for ids in self._sections()[2].values() for a in ids})
        return [*chapters, "handout-index", *cells]


def toc_html(chapters: list[ChapterLike], *, goals: bool, index: str | None = None) -> str:
    """The chapters with their page numbers (and learning goals), each a link to its chapter; ``index``: the
    title of the book's index, listed last."""
    items = []
    for chapter in chapters:
        entry = (
            f'<a href="#{html.escape(chapter.anchor)}"><span class="toc-title">{inline_markdown(chapter.title)}'
            f'</span><span class="toc-fill"></span><span class="toc-page">{page_number(chapter.anchor)}</span></a>'
        )
        listed = "".join(f"<li>{inline_markdown(goal)}</li>" for goal in chapter.goals) if goals else ""
        items.append(f"<li>{entry}" + (f"<ul>{listed}</ul>" if listed else "") + "</li>")
    if index is not None:
        items.append(
            f'<li><a href="#handout-index"><span class="toc-title">{html.escape(index)}</span>'
            f'<span class="toc-fill"></span><span class="toc-page">{page_number("handout-index")}</span></a></li>'
        )
    return '<ol class="toc">\n' + "\n".join(items) + "\n</ol>"


def handout_cover(chapters: list[ChapterLike], lang: str, *, index: bool = False) -> str:
    """The full book's cover: the course map, each notebook with its page and learning goals (and the index)."""
    words = LABELS[lang]
    return (
        '<section class="handout-cover">'
        f'<p class="cover-title">{html.escape(words["course"])}</p>'
        f'<p class="subtitle">{html.escape(words["subtitle"])}</p>'
        f'<p class="cover-heading">{html.escape(words["course_map"])}</p>'
        f"{toc_html(chapters, goals=True, index=words['index_title'] if index else None)}"
        "</section>"
    )


def workbook_cover(chapters: list[ChapterLike], lang: str) -> str:
    """The workbook's cover: lines for the reader's name and hub account, how to use it, the contents."""
    words = LABELS[lang]
    colon = "：" if lang == "zh" else ": "
    return (
        '<section class="handout-cover">'
        f'<p class="cover-title">{html.escape(words["course"])}</p>'
        f'<p class="cover-edition">{html.escape(words["workbook"])}</p>'
        f'<p class="subtitle">{html.escape(words["subtitle"])}</p>'
        f'<p class="handout-name">{html.escape(words["name"])}{colon}<span>&#160;</span></p>'
        # first-use accounts: what a learner must remember after lunch (the print review's P14)
        f'<p class="handout-name handout-hub">{html.escape(words["hub_user"])}{colon}<span>&#160;</span></p>'
        f'<p class="handout-name handout-hub">{html.escape(words["hub_address"])}{colon}<span>&#160;</span></p>'
        f'<p class="handout-note">{html.escape(words["workbook_note"])}</p>'
        f'<p class="cover-heading">{html.escape(words["contents"])}</p>'
        f"{toc_html(chapters, goals=False)}"
        "</section>"
    )
