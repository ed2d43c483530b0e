"""gradlab's message catalogs: extract the messages from the code, update and check each language.

The code marks every message it shows a user with ``_("...")`` (``gradlab.i18n``);
placeholders are ``{names}`` filled by ``.format()`` after translation, so a
translation may reorder them but must keep every one.

Usage::

    python tools/i18n.py update   # add new messages to each .po (empty), mark vanished ones obsolete
    python tools/i18n.py check    # exit 1 if a message is untranslated, stale, or breaks a placeholder
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gradlab"
LOCALE = PACKAGE / "locale"
MARKERS = {"_", "_t", "gettext_", "T"}
PLURALS = {"ngettext_", "N"}


@dataclass(frozen=True)
class Message:
    """One message the code shows a user, and where it is."""

    msgid: str
    plural: str | None
    where: tuple[str, ...]


def extract(package: Path = PACKAGE) -> dict[str, Message]:
    """Every marked message of the package: ``{msgid: Message}``, in file order."""
    found: dict[str, Message] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name == "i18n.py":  # the functions themselves
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(package.parent).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            name = node.func.id
            if name in MARKERS and node.args:
                args = node.args[:1]
            elif name in PLURALS and len(node.args) >= 2:
                args = node.args[:2]
            else:
                continue
            if not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
                raise SystemExit(f"{rel}:{node.lineno}: {name}() needs literal strings (format after translating)")
            msgid = args[0].value  # type: ignore[attr-defined]
            plural = args[1].value if len(args) > 1 else None  # type: ignore[attr-defined]
            old = found.get(msgid)
            where = (*(old.where if old else ()), f"{rel}:{node.lineno}")
            found[msgid] = Message(msgid, plural, where)
    return found


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    lines = escaped.split("\n")
    if len(lines) == 1:
        return f'"{lines[0]}"'
    parts = [f"{line}\\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    return '""\n' + "\n".join(f'"{p}"' for p in parts)


def _entries(path: Path) -> list[tuple[dict[str, str], set[str], list[str]]]:
    """The entries of a .po file with their flags and comment lines."""
    sys.path.insert(0, str(ROOT))
    from gradlab.i18n import _po_entries

    out = []
    comments: list[str] = []
    text = path.read_text(encoding="utf-8")
    blocks = text.split("\n\n")
    for block in blocks:
        comments = [line for line in block.splitlines() if line.startswith("#") and not line.startswith("#,")]
        parsed = _po_entries(block + "\n")
        if parsed:
            fields, flags = parsed[0]
            out.append((fields, flags, comments))
    return out


def placeholders(text: str) -> set[str]:
    """The ``{name}`` fields of a message (``{{`` is not one)."""
    return set(re.findall(r"(?<!\{)\{(\w+)(?:[:!][^}]*)?\}", text))


def update(lang_dir: Path, messages: dict[str, Message], translations: dict[str, str] | None = None) -> Path:
    """Write ``lang_dir``'s gradlab.po: existing translations kept, new messages added empty.

    ``translations`` (msgid -> translation, e.g. from a translator's file) fill or replace entries.
    """
    translations = translations or {}
    path = lang_dir / "LC_MESSAGES" / "gradlab.po"
    entries = _entries(path)
    header = next((e for e in entries if e[0].get("msgid") == ""), None)
    known = {e[0]["msgid"]: e for e in entries if e[0].get("msgid")}
    blocks = []
    head_comments = header[2] if header else ["# gradlab's own words."]
    blocks.append("\n".join([*head_comments, 'msgid ""', "msgstr " + _quote(header[0]["msgstr"] if header else "")]))
    for msgid, message in messages.items():
        old = known.get(msgid)
        lines = [f"#: {' '.join(message.where)}"]
        if old and "fuzzy" in old[1]:
            lines.append("#, fuzzy")
        lines.append("msgid " + _quote(msgid))
        if message.plural is not None:
            lines.append("msgid_plural " + _quote(message.plural))
            given = translations.get(msgid, old[0].get("msgstr[0]", "") if old else "")
            lines.append("msgstr[0] " + _quote(given))
        else:
            lines.append("msgstr " + _quote(translations.get(msgid, old[0].get("msgstr", "") if old else "")))
        blocks.append("\n".join(lines))
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def problems(lang_dir: Path, messages: dict[str, Message]) -> list[str]:
    """What is wrong with one language's catalog: untranslated, fuzzy, stale, or a placeholder lost."""
    path = lang_dir / "LC_MESSAGES" / "gradlab.po"
    found = []
    seen = set()
    for fields, flags, _ in _entries(path):
        msgid = fields.get("msgid")
        if not msgid:
            continue
        seen.add(msgid)
        if msgid not in messages:
            found.append(f"{path.name}: stale entry (no longer in the code): {msgid[:60]!r}")
            continue
        translated = fields.get("msgstr", fields.get("msgstr[0]", ""))
        if not translated:
            found.append(f"{path.name}: untranslated: {msgid[:60]!r}")
        elif "fuzzy" in flags:
            found.append(f"{path.name}: fuzzy (review it): {msgid[:60]!r}")
        elif placeholders(translated) != placeholders(msgid):
            found.append(
                f"{path.name}: placeholders differ in {msgid[:60]!r}: "
                f"{sorted(placeholders(msgid))} vs {sorted(placeholders(translated))}"
            )
    found += [f"{path.name}: missing entry: {m[:60]!r}" for m in messages if m not in seen]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "check"])
    args = parser.parse_args(argv)
    messages = extract()
    langs = sorted(p for p in LOCALE.iterdir() if (p / "LC_MESSAGES" / "gradlab.po").exists())
    if args.command == "update":
        for lang in langs:
            print(f"updated {update(lang, messages).relative_to(ROOT)} ({len(messages)} messages)")
        return 0
    failed = 0
    for lang in langs:
        for line in problems(lang, messages):
            print(f"{lang.name}: {line}")
            failed += 1
    print(f"{len(messages)} messages; {failed} problem(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
