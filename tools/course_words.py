"""The course's message catalog (gradlab/course/locale): extract ``say``/``say_t`` messages, update and check it.

The course marks its own words with ``say("...")`` and ``say_t("...", **fields)``
(``gradlab/course/words.py``), apart from the library's ``_``/``_t``, so that they live
in the course's catalog, ``gradlab/course/locale/<language>/LC_MESSAGES/course.po``,
not in gradlab's. The format and the rules are ``tools/i18n.py``'s.

Usage::

    python tools/course_words.py update   # add new messages (empty), drop vanished ones, keep translations
    python tools/course_words.py check    # exit 1 if a message is untranslated, stale, or loses a placeholder
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from i18n import _quote, placeholders

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "gradlab" / "course"
CATALOGS = COURSE / "locale"
MARKERS = {"say", "say_t"}
HEADER = (
    "# The gradlab course's own words (gradlab/course/words.py). Update with: python tools/course_words.py update\n"
    'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: {lang}\\n"'
)


def extract(package: Path = COURSE) -> dict[str, list[str]]:
    """Every ``say``/``say_t`` message of the course: ``{msgid: [where, ...]}``, in file order."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name == "words.py":
            continue
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS:
                first = node.args[0] if node.args else None
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    raise SystemExit(f"{rel}:{node.lineno}: {node.func.id}() needs a literal string")
                found.setdefault(first.value, []).append(f"{rel}:{node.lineno}")
    return found


def read(path: Path) -> dict[str, str]:
    """``{msgid: msgstr}`` of a catalog (fuzzy entries kept, with their text)."""
    sys.path.insert(0, str(ROOT))
    from gradlab.i18n import _po_entries

    if not path.is_file():
        return {}
    return {
        f["msgid"]: f.get("msgstr", "") for f, _flags in _po_entries(path.read_text(encoding="utf-8")) if f["msgid"]
    }


def update(lang: str, messages: dict[str, list[str]]) -> Path:
    path = CATALOGS / lang / "LC_MESSAGES" / "course.po"
    known = read(path)
    blocks = [HEADER.format(lang=lang)]
    for msgid, where in messages.items():
        blocks.append(f"#: {' '.join(where)}\nmsgid {_quote(msgid)}\nmsgstr {_quote(known.get(msgid, ''))}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def problems(lang: str, messages: dict[str, list[str]]) -> list[str]:
    path = CATALOGS / lang / "LC_MESSAGES" / "course.po"
    known = read(path)
    found = [f"{lang}: stale entry: {m[:60]!r}" for m in known if m not in messages]
    for msgid in messages:
        if msgid not in known:
            found.append(f"{lang}: missing entry: {msgid[:60]!r}")
        elif not known[msgid]:
            found.append(f"{lang}: untranslated: {msgid[:60]!r}")
        elif placeholders(known[msgid]) != placeholders(msgid):
            found.append(f"{lang}: placeholders differ in {msgid[:60]!r}")
    return found


def languages() -> list[str]:
    return sorted(p.name for p in CATALOGS.iterdir() if (p / "LC_MESSAGES" / "course.po").is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "check"])
    args = parser.parse_args(argv)
    messages = extract()
    if args.command == "update":
        for lang in languages() or ["zh_CN"]:
            print(f"updated {update(lang, messages).relative_to(ROOT)} ({len(messages)} messages)")
        return 0
    found = [line for lang in languages() for line in problems(lang, messages)]
    for line in found:
        print(line)
    print(f"{len(messages)} messages; {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
