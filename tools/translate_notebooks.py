"""The Chinese edition of the course: notebooks/zh/, built from the English notebooks and a translation source.

The English notebooks are the one source of the course. Each has a gettext
catalog in ``translations/zh_CN/notebooks/<name>.po``: one entry per markdown
cell, and one per code cell that shows the learner words (comments, printed
strings, the language passed to ``course.setup``), keyed by the cell's id
(``msgctxt``) and holding the English source (``msgid``) with its translation
(``msgstr``). Why gettext: translators know the format and its tools (Poedit,
Weblate), a changed English cell shows up as a *fuzzy* entry with its previous
text beside the new one, and the same format already holds gradlab's own words
(``gradlab/locale``).

Usage::

    python tools/translate_notebooks.py update   # sync the .po files with the English notebooks
    python tools/translate_notebooks.py check    # exit 1 on a missing, stale or untranslated entry
    python tools/translate_notebooks.py build    # write notebooks/zh/ (then: tools/execute_notebooks.py notebooks/zh/*)

A code cell's translation may change only comments and string literals: the
check compares every other token with the English cell.
"""

from __future__ import annotations

import argparse
import copy
import io
import re
import sys
import tokenize
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_notebooks import NOTEBOOKS, course_notebooks, is_generated
from i18n import _quote

ROOT = Path(__file__).resolve().parent.parent
LANG = "zh_CN"
SOURCE = ROOT / "translations" / LANG / "notebooks"
TARGET = NOTEBOOKS / "zh"
GLOSSARY = ROOT / "translations" / LANG / "GLOSSARY.md"

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def _po_entries(text: str) -> list[tuple[dict[str, str], set[str]]]:
    sys.path.insert(0, str(ROOT))
    from gradlab.i18n import _po_entries as entries

    return entries(text)


def _learner_words(source: str) -> bool:
    """Whether a code cell shows the learner words: a comment, or a string with a space or ``language=``."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return True
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            return True
        if tok.type == tokenize.STRING and re.search(r"[A-Za-z]{2,}\s+[A-Za-z{]", tok.string):
            return True
    return "language=" in source


def translatable(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cells with words to translate: every markdown cell but the generated ones (navigation, Colab), and the
    code cells with words."""
    return [
        c
        for c in nb.cells
        if not is_generated(c) and (c.cell_type == "markdown" or (c.cell_type == "code" and _learner_words(c.source)))
    ]


def _code_tokens(source: str) -> list[str]:
    """The tokens of ``source`` that a translation must keep: all but comments and strings."""
    keep = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (
            tokenize.COMMENT,
            tokenize.STRING,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            continue
        if sys.version_info >= (3, 12) and tok.type in (
            tokenize.FSTRING_START,
            tokenize.FSTRING_MIDDLE,  # type: ignore[attr-defined]
            tokenize.FSTRING_END,
        ):  # type: ignore[attr-defined]
            continue
        keep.append(tok.string)
    return keep


def read_catalog(path: Path) -> dict[str, tuple[str, str, set[str], str | None]]:
    """``{cell id: (english, translation, flags, previous english)}`` of one notebook's catalog."""
    if not path.exists():
        return {}
    out = {}
    text = path.read_text(encoding="utf-8")
    previous: dict[str, str] = {}
    for block in text.split("\n\n"):
        ctx = re.search(r'^msgctxt "(.*)"$', block, re.M)
        prev = re.findall(r'^#\| msgid (".*")$|^#\| (".*")$', block, re.M)
        if ctx and prev:
            import ast

            previous[ctx.group(1)] = "".join(ast.literal_eval(a or b) for a, b in prev)
    for fields, flags in _po_entries(text):
        key = fields.get("msgctxt")
        if key:
            out[key] = (fields.get("msgid", ""), fields.get("msgstr", ""), flags, previous.get(key))
    return out


def write_catalog(path: Path, notebook: Path, entries: list[tuple[str, str, str, bool, str | None]]) -> None:
    """Write ``(id, english, translation, fuzzy, previous english)`` entries as a .po file."""
    blocks = [
        f"# The course in Simplified Chinese: {notebook.name}. One entry per cell (msgctxt = the cell's id).\n"
        "# Terms: translations/zh_CN/GLOSSARY.md. Update with: python tools/translate_notebooks.py update\n"
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: zh_CN\\n"'
    ]
    for cell_id, english, translation, fuzzy, previous in entries:
        lines = []
        if fuzzy:
            lines.append("#, fuzzy")
        if previous is not None and fuzzy:
            lines += [f"#| {line}" for line in ("msgid " + _quote(previous)).splitlines()]
        lines += [f"msgctxt {_quote(cell_id)}", "msgid " + _quote(english), "msgstr " + _quote(translation)]
        blocks.append("\n".join(lines))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def catalog_path(notebook: Path) -> Path:
    return SOURCE / f"{notebook.stem}.po"


def update(notebooks: list[Path]) -> None:
    """Sync each notebook's catalog: new cells added empty, changed cells marked fuzzy, vanished ones dropped."""
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        old = read_catalog(catalog_path(path))
        entries = []
        for cell in translatable(nb):
            english = cell.source
            if cell.id in old:
                was, translation, flags, previous = old[cell.id]
                changed = was != english
                fuzzy = changed or "fuzzy" in flags
                entries.append(
                    (cell.id, english, translation, fuzzy and bool(translation), was if changed else previous)
                )
            else:
                entries.append((cell.id, english, "", False, None))
        write_catalog(catalog_path(path), path, entries)


def english_prose(text: str) -> list[str]:
    """English words left in a translated markdown cell (outside code, links' targets, math and HTML tags)."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\$[^$]*\$", " ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"https?://\S+", " ", text)
    return _WORD.findall(text)


def check(notebooks: list[Path]) -> list[str]:
    """Every problem of the translation source: missing, untranslated, stale, code changed, English prose left."""
    found = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        catalog = read_catalog(catalog_path(path))
        ids = set()
        for cell in translatable(nb):
            ids.add(cell.id)
            where = f"{path.name} cell {cell.id}"
            if cell.id not in catalog:
                found.append(f"{where}: no entry (run: python tools/translate_notebooks.py update)")
                continue
            english, translation, flags, _ = catalog[cell.id]
            if english != cell.source or "fuzzy" in flags:
                found.append(f"{where}: stale: the English cell changed since it was translated")
            elif not translation:
                found.append(f"{where}: untranslated")
            elif cell.cell_type == "code":
                try:
                    if _code_tokens(translation) != _code_tokens(english):
                        found.append(f"{where}: the translation changes code, not only comments and strings")
                except (tokenize.TokenError, IndentationError, SyntaxError) as e:
                    found.append(f"{where}: the translation is not valid Python ({e})")
            else:
                words = english_prose(translation)
                cjk = len(_CJK.findall(translation))
                if len(words) > 12 and cjk < 2 * len(words):
                    found.append(f"{where}: still English prose ({' '.join(words[:8])} ...)")
        found += [f"{path.name}: entry for a cell that no longer exists: {key}" for key in catalog if key not in ids]
    return found


def build(notebooks: list[Path], target: Path = TARGET) -> list[Path]:
    """Write the Chinese notebooks (outputs cleared; run tools/execute_notebooks.py on them next)."""
    problems = check(notebooks)
    if problems:
        raise SystemExit("translation source not ready:\n  " + "\n  ".join(problems[:20]))
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        catalog = read_catalog(catalog_path(path))
        out = copy.deepcopy(nb)
        out.cells = [c for c in out.cells if not is_generated(c)]  # execute_notebooks writes them per edition
        for cell in out.cells:
            if cell.id in catalog:
                cell.source = catalog[cell.id][1]
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        out.metadata["language"] = LANG
        dest = target / path.name
        nbformat.write(out, dest)
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "check", "build"])
    args = parser.parse_args(argv)
    notebooks = course_notebooks()
    if args.command == "update":
        update(notebooks)
        print(f"updated {len(notebooks)} catalogs in {SOURCE.relative_to(ROOT)}")
        return 0
    if args.command == "check":
        problems = check(notebooks)
        for line in problems:
            print(line)
        print(f"{len(problems)} problem(s) in {len(notebooks)} notebooks")
        return 1 if problems else 0
    for path in build(notebooks):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
