"""Print local HTML pages to PDF with Chromium, offline, and read back what was printed.

Chromium is driven through Playwright (``page.pdf``): the page's own ``@page``
rules set the paper, margins, running headers and page numbers (CSS margin
boxes), ``outline=True`` turns the headings into PDF bookmarks and
``tagged=True`` writes a tagged (accessible) PDF. Every request that is not a
``file:`` or ``data:`` URL is refused, and the browser cannot resolve host names.

A table of contents with page numbers needs two prints of one loaded page:
:meth:`Printer.pdf_numbered` prints, reads on which page each anchor landed
(Chromium stores every link target as a named destination), writes those
numbers into the page, prints again and checks that they did not move.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from pypdf import PdfReader

APT_LINE = "apt-get install chromium poppler-utils fonts-dejavu-core"

# Flags on top of Playwright's own headless set.
CHROMIUM_ARGS = [
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
]


class PrintError(RuntimeError):
    """Chromium is missing or could not print; the message says what to install or fix."""


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium executable: ``explicit`` (a name on PATH or a path), else chromium on PATH."""
    for candidate in [explicit] if explicit else ["chromium", "chromium-browser"]:
        found = shutil.which(candidate) if candidate else None
        if found:
            return found
    raise PrintError(
        "Chromium is needed to print the PDFs and was not found.\n"
        f"  Debian/Ubuntu: sudo {APT_LINE}\n"
        "  (make handout runs tools/system-deps.sh, which installs it when run as root),\n"
        "  or pass --chromium /path/to/chromium."
    )


class Printer:
    """One headless Chromium for several prints; a context manager.

    Example::

        with Printer(find_chromium()) as printer:
            printer.pdf(Path("page.html"), Path("page.pdf"))
    """

    def __init__(self, chromium: str, timeout: float = 120) -> None:
        self.chromium = chromium
        self.timeout_ms = timeout * 1000
        self._playwright: Any = None
        self._browser: Any = None

    def __enter__(self) -> Printer:
        try:
            from playwright.sync_api import Error, sync_playwright
        except ImportError:
            raise PrintError("the Python package playwright is missing: make setup installs it") from None
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=self.chromium, args=CHROMIUM_ARGS, timeout=self.timeout_ms
            )
        except Error as error:
            self._playwright.stop()
            raise PrintError(f"Chromium ({self.chromium}) did not start:\n{str(error)[-2000:]}") from None
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self._browser is not None:
                self._browser.close()
        finally:
            self._playwright.stop()
            self._browser = self._playwright = None

    def pdf(self, page: Path, pdf: Path) -> None:
        """Print the local HTML file ``page`` to ``pdf`` as its ``@page`` rules say."""
        with self._tab(page) as tab:
            self._print(tab, page, pdf, final=True)

    def pdf_numbered(self, page: Path, pdf: Path, anchors: Iterable[str], passes: int = 3) -> dict[str, int]:
        """Print ``page`` with the page number of each anchor filled in; return those numbers.

        Every element ``<span data-page-of="ID">00</span>`` shows the page on
        which the element ``id="ID"`` starts; each ``ID`` must be the target of
        a link (Chromium stores link targets as named destinations, which is
        how the pages are read back). The first print finds the pages; the
        next one prints them, and is checked to have kept them.
        """
        wanted = list(anchors)
        numbers: dict[str, int] = {}
        with self._tab(page) as tab:
            self._print(tab, page, pdf, final=not wanted)
            if not wanted:
                return numbers
            for _ in range(passes):
                found = destinations(pdf)
                missing = [anchor for anchor in wanted if anchor not in found]
                if missing:
                    raise PrintError(f"{pdf.name}: no link target {missing[:3]} in the printed PDF")
                found = {anchor: found[anchor] for anchor in wanted}
                if found == numbers:
                    return numbers
                numbers = found
                tab.evaluate(_FILL_PAGE_NUMBERS, numbers)
                self._print(tab, page, pdf, final=True)
        raise PrintError(f"{pdf.name}: the page numbers did not settle after {passes} prints")

    @contextmanager
    def _tab(self, page: Path) -> Iterator[Any]:
        """A tab showing the local file ``page``; scripts off, nothing but local files loads."""
        from playwright.sync_api import Error

        context = self._browser.new_context(offline=True, java_script_enabled=False)
        try:
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(("file:", "data:"))
                    else route.abort("internetdisconnected")
                ),
            )
            tab = context.new_page()
            try:
                tab.goto(page.resolve().as_uri(), wait_until="load", timeout=self.timeout_ms)
            except Error as error:
                raise PrintError(f"Chromium could not open {page.name}:\n{str(error)[-2000:]}") from None
            yield tab
        finally:
            context.close()

    def _print(self, tab: Any, page: Path, pdf: Path, *, final: bool) -> None:
        """``final``: with the outline and tags; a draft only to read page numbers from is faster."""
        from playwright.sync_api import Error

        pdf.unlink(missing_ok=True)
        try:
            tab.pdf(path=str(pdf), prefer_css_page_size=True, print_background=True, outline=final, tagged=final)
        except Error as error:
            raise PrintError(f"Chromium could not print {page.name}:\n{str(error)[-2000:]}") from None
        if not pdf.exists() or pdf.stat().st_size == 0:
            raise PrintError(f"Chromium printed nothing for {page.name}")


# Runs in the page (scripts of the page itself stay off).
_FILL_PAGE_NUMBERS = """numbers => {
  for (const element of document.querySelectorAll('[data-page-of]')) {
    const number = numbers[element.dataset.pageOf];
    if (number !== undefined) element.textContent = String(number);
  }
}"""


# ---------------------------------------------------------------- reading a printed PDF


def destinations(pdf: Path) -> dict[str, int]:
    """Page number (1-based) of every named destination, i.e. of every element id a link points at."""
    reader = PdfReader(pdf)
    return {
        name.lstrip("/"): reader.get_destination_page_number(dest) + 1
        for name, dest in reader.named_destinations.items()
    }


def outline(pdf: Path) -> list[tuple[int, str, int]]:
    """The PDF's bookmarks as ``(depth, title, page)``, depth 0 at the top, pages 1-based."""
    reader = PdfReader(pdf)
    entries: list[tuple[int, str, int]] = []

    def walk(items: Iterable[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                entries.append((depth, str(item.title), reader.get_destination_page_number(item) + 1))

    walk(reader.outline, 0)
    return entries


def page_count(pdf: Path) -> int:
    return len(PdfReader(pdf).pages)
