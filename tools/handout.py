"""Build the workshop handout from the committed notebooks (``make handout``).

Writes ``build/handout/``:

* ``NN_name.html``   one page per notebook, from its stored outputs (nothing is
  re-executed); images embedded, graphs as the stored PNG/SVG, widgets as their
  static fallback (``text/html`` or ``text/plain``);
* ``index.html``     the course map: each notebook's title and learning goals;
* ``handout.pdf``    a cover page (course title, learning goals), then every
  notebook, each starting on a new page;
* ``cheatsheet.pdf`` one page: the two autograd errors decoded and their fixes
  (from ``tools/handout_cheatsheet.html``).

PDFs are printed by headless Chromium (Debian: ``apt-get install chromium``)
with its network cut off; no page references a remote script, stylesheet or
image (no CDN MathJax or require.js: math shows as its TeX source).

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

import jinja2
import nbformat
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_notebooks import title  # noqa: E402  (one definition of a notebook's title)

ROOT = Path(__file__).resolve().parent.parent
COURSE_TITLE = "gradlab: a PyTorch autograd course"
COURSE_SUBTITLE = "Make autograd failures visible: saved tensors, version counters, and who modified what."
CHEATSHEET = Path(__file__).resolve().parent / "handout_cheatsheet.html"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CHAPTER_START_TAG = "handout-chapter-start"
APT_LINE = "apt-get install chromium poppler-utils fonts-dejavu-core"

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # needed as root (CI containers); we only print our own local files
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-domain-reliability",
    "--metrics-recording-only",
    "--mute-audio",
    # No network: every host name fails to resolve and there is no route out.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--no-pdf-header-footer",
    "--print-to-pdf-no-header",
]

# Print and font settings shared by the notebook pages and the combined PDF.
# DejaVu ships with Debian's fonts-dejavu-core; generic families are the fallback.
HANDOUT_CSS = f"""
:root, body {{
  --jp-content-font-family: "DejaVu Sans", "Helvetica", "Arial", sans-serif;
  --jp-ui-font-family: "DejaVu Sans", "Helvetica", "Arial", sans-serif;
  --jp-code-font-family: "DejaVu Sans Mono", "Menlo", "Consolas", monospace;
}}
main {{ max-width: 60rem; margin: 0 auto; }}
nav.handout-nav {{ font-family: "DejaVu Sans", sans-serif; margin: 1rem auto; max-width: 60rem; }}
.jp-RenderedImage img, .jp-RenderedSVG svg {{ max-width: 100%; height: auto; }}
.handout-cover h1 {{ font-size: 2.2em; margin-top: 30%; }}
.handout-cover .subtitle {{ font-size: 1.2em; color: #555; }}
ol.course-map {{ list-style: none; padding-left: 0; }}
ol.course-map > li {{ margin: 0.7em 0; }}
@page {{ size: A4; margin: 14mm 12mm; }}
@media print {{
  nav.handout-nav {{ display: none; }}
  main {{ max-width: none; }}
  .celltag_{CHAPTER_START_TAG} {{ page-break-before: always; break-before: page; }}
  .jp-OutputArea-output, .jp-RenderedImage, .jp-RenderedSVG {{ break-inside: avoid; }}
  pre {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
  /* the cover (course map with every notebook's goals) fits one page */
  .handout-cover {{ font-size: 0.78em; line-height: 1.3; }}
  .handout-cover h1 {{ margin-top: 0; }}
  .handout-cover ol.course-map > li {{ margin: 0.35em 0; }}
  .handout-cover ul {{ margin: 0.1em 0; }}
}}
"""

# lab/index.html.j2 minus every script it would load from a CDN
# (require.js, widget manager, MathJax, mermaid).
PAGE_TEMPLATE = """
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style type="text/css">{{ resources.handout_css }}</style>{%- endblock extra_css -%}
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


_GOALS_START = re.compile(r"^\s*(\*\*|__)Learning goals\b.*$|^\s*#{1,6}\s*Learning goals\b.*$", re.I)
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
            for line in lines[start + 1:]:
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


# ---------------------------------------------------------------- render


def inline_markdown(text: str) -> str:
    """Markdown of one line (a title, a goal) as inline HTML."""
    rendered = markdown2html_mistune(text).strip()
    match = re.fullmatch(r"<p>(.*)</p>", rendered, flags=re.S)
    return match.group(1) if match else rendered


def plain_text(markdown: str) -> str:
    """What a reader sees of a markdown line: no backticks, stars or tags."""
    text = re.sub(r"<[^>]+>", "", inline_markdown(markdown))
    return " ".join(html.unescape(text).split())


def course_map_html(chapters: list[Chapter], *, links: bool) -> str:
    """An ordered list of the chapters with their learning goals."""
    items = []
    for chapter in chapters:
        title = inline_markdown(chapter.title)
        if links:
            title = f'<a href="{html.escape(chapter.page)}">{title}</a>'
        goals = "".join(f"<li>{inline_markdown(goal)}</li>" for goal in chapter.goals)
        items.append(f"<li><strong>{title}</strong>" + (f"<ul>{goals}</ul>" if goals else "") + "</li>")
    return "<ol class=\"course-map\">\n" + "\n".join(items) + "\n</ol>"


def cover_html(chapters: list[Chapter]) -> str:
    return (
        '<section class="handout-cover">'
        f"<h1>{html.escape(COURSE_TITLE)}</h1>"
        f'<p class="subtitle">{html.escape(COURSE_SUBTITLE)}</p>'
        "<h2>Course map and learning goals</h2>"
        f"{course_map_html(chapters, links=False)}"
        "</section>"
    )


def index_html(chapters: list[Chapter]) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{html.escape(COURSE_TITLE)}</title>
<style>
body {{ font-family: "DejaVu Sans", "Helvetica", "Arial", sans-serif; max-width: 50rem;
       margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #222; }}
code {{ font-family: "DejaVu Sans Mono", monospace; background: #f3f3f3; padding: 0 .2em; }}
ol.course-map {{ list-style: none; padding-left: 0; }}
ol.course-map > li {{ margin: 1em 0; }}
</style>
</head>
<body>
<h1>{html.escape(COURSE_TITLE)}</h1>
<p>{html.escape(COURSE_SUBTITLE)}</p>
<p>Print versions: <a href="handout.pdf">all notebooks (PDF)</a> ·
<a href="cheatsheet.pdf">one-page cheat sheet (PDF)</a></p>
<h2>Course map</h2>
{course_map_html(chapters, links=True)}
</body>
</html>
"""


def make_exporter() -> HTMLExporter:
    loader = jinja2.DictLoader({"handout.html.j2": PAGE_TEMPLATE})
    exporter = HTMLExporter(
        template_name="lab", template_file="handout.html.j2", extra_loaders=[loader]
    )
    exporter.embed_images = True
    exporter.exclude_anchor_links = True
    return exporter


def notebook_html(
    exporter: HTMLExporter, notebook: nbformat.NotebookNode, title: str, prelude: str = ""
) -> str:
    """The page of one notebook; ``prelude`` (HTML) comes before the first cell."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata["title"] = title
    body, _ = exporter.from_notebook_node(
        notebook, resources={"handout_css": HANDOUT_CSS, "handout_prelude": prelude}
    )
    return body


def nav_html(chapters: list[Chapter], at: int) -> str:
    parts = ['<a href="index.html">Course map</a>']
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
        return f'{match.group(1)}{stem}.html' if stem in stems else match.group(0)

    return re.sub(r'(href=")(?:\./|\.\./notebooks/)?([0-9]{2}_[\w.-]+?)\.ipynb', replace, page)


def combined_notebook(chapters: list[Chapter]) -> nbformat.NotebookNode:
    """Every chapter as one notebook; each chapter's first cell starts a new page."""
    combined = nbformat.v4.new_notebook()
    combined.metadata = copy.deepcopy(chapters[0].notebook.metadata)
    combined.metadata.pop("widgets", None)
    for chapter in chapters:
        cells = copy.deepcopy(static_outputs(chapter.notebook).cells)
        if not cells:
            cells = [nbformat.v4.new_markdown_cell(f"# {chapter.title}")]
        tags = cells[0].metadata.setdefault("tags", [])
        tags.append(CHAPTER_START_TAG)
        combined.cells.extend(cells)
    for number, cell in enumerate(combined.cells):
        cell["id"] = f"handout-{number}"  # chapters reuse ids; keep them unique
    return combined


# ---------------------------------------------------------------- offline check


class _RemoteRefs(HTMLParser):
    """Collects ``src``/``href`` values that would make a browser fetch from the network."""

    FETCHING = {"src", "href", "srcset", "data", "poster", "xlink:href", "background"}

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

    return re.sub(
        r"""<img\b[^>]*\bsrc\s*=\s*(['"])\s*(?:https?:)?//[^>]*>""", image_to_link, page, flags=re.I
    )


def offline_page(page: str, name: str) -> str:
    page = strip_remote(page)
    remote = remote_references(page)
    if remote:
        listed = "\n  ".join(remote[:10])
        raise HandoutError(f"{name} would load from the network:\n  {listed}")
    return page


# ---------------------------------------------------------------- print


def find_chromium(explicit: str | None = None) -> str:
    for candidate in ([explicit] if explicit else ["chromium", "chromium-browser"]):
        found = shutil.which(candidate) if candidate else None
        if found:
            return found
    raise HandoutError(
        "Chromium is needed to print the PDFs and was not found.\n"
        f"  Debian/Ubuntu: sudo {APT_LINE}\n"
        "  (make handout runs tools/system-deps.sh, which installs it when run as root),\n"
        "  or pass --chromium /path/to/chromium."
    )


def print_pdf(chromium: str, page: Path, pdf: Path, timeout: float = 120) -> None:
    """Print a local HTML file to PDF with headless Chromium, network cut off."""
    pdf.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="handout-chromium-") as profile:
        command = [
            chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
            f"--print-to-pdf={pdf}", page.resolve().as_uri(),
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HandoutError(f"Chromium did not print {page.name} within {timeout:.0f} s") from None
    if result.returncode != 0 or not pdf.exists() or pdf.stat().st_size == 0:
        raise HandoutError(
            f"Chromium could not print {page.name} (exit {result.returncode}):\n{result.stderr[-2000:]}"
        )


# ---------------------------------------------------------------- main


def build(notebooks_dir: Path, out: Path, chromium: str) -> list[Path]:
    """Write the handout into ``out``; return the files written."""
    chapters = read_chapters(notebooks_dir)
    out.mkdir(parents=True, exist_ok=True)
    exporter = make_exporter()
    written = []

    for at, chapter in enumerate(chapters):
        page = notebook_html(
            exporter, static_outputs(chapter.notebook), plain_text(chapter.title), nav_html(chapters, at)
        )
        target = out / chapter.page
        target.write_text(offline_page(link_pages(page, chapters), chapter.page), encoding="utf-8")
        written.append(target)

    index = out / "index.html"
    index.write_text(offline_page(index_html(chapters), index.name), encoding="utf-8")
    written.append(index)

    with tempfile.TemporaryDirectory(prefix="handout-print-") as scratch:
        combined = Path(scratch) / "handout.html"
        page = notebook_html(exporter, combined_notebook(chapters), COURSE_TITLE, cover_html(chapters))
        combined.write_text(offline_page(page, "the combined handout"), encoding="utf-8")
        print_pdf(chromium, combined, out / "handout.pdf")
        written.append(out / "handout.pdf")

        cheatsheet = Path(scratch) / "cheatsheet.html"
        cheatsheet.write_text(
            offline_page(CHEATSHEET.read_text(encoding="utf-8"), CHEATSHEET.name), encoding="utf-8"
        )
        print_pdf(chromium, cheatsheet, out / "cheatsheet.pdf")
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
    except HandoutError as error:
        print(f"handout: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    print(f"handout built in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
