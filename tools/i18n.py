"""gradlab's message catalogs: extract the messages from the code, update and check each language.

The code marks every message it shows a user with ``_("...")`` (``gradlab.i18n``);
placeholders are ``{names}`` filled by ``.format()`` after translation, so a
translation may reorder them but must keep every one.

Usage::

    python tools/i18n.py update   # add new messages to each .po (empty), mark vanished ones obsolete
    python tools/i18n.py check    # exit 1 if a message is untranslated, stale, breaks a placeholder,
                                  # or (Chinese) breaks a rule of how Chinese reads (NOTE [Chinese style rules])
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
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
    #: how the code uses the message: the keywords it is passed as (``intent=``, ``trains=``; directly or
    #: through a variable of the same function or a function that returns it), ``call:FUNCTION`` for a
    #: function it is passed to,
    #: ``in:FUNCTION`` for the function it is made in; a
    #: message filled into another's field has that message's roles too (a part of a summary is a summary)
    roles: frozenset[str] = field(default=frozenset(), compare=False)
    #: its fields the code fills from a description of :class:`gradlab.context.Context` (``loss=ctx.l``)
    described: frozenset[str] = field(default=frozenset(), compare=False)


def _is_marker(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS | PLURALS


def _markers(node: ast.AST) -> list[ast.Call]:
    """The marker calls of an expression, not counting those inside another's fields."""
    if _is_marker(node):
        return [node]  # type: ignore[list-item]
    return [c for child in ast.iter_child_nodes(node) for c in _markers(child)]


def _scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a module or function, without those of the functions defined in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _is_description(value: ast.AST, words: set[str]) -> bool:
    """Whether ``value`` may give words instead of a name: ``ctx.l`` (a Context description),
    ``name or T("the running total")``, or a variable bound to one of those (``words``)."""
    if isinstance(value, ast.Attribute) and value.attr in DESCRIPTIONS and isinstance(value.value, ast.Name):
        return True
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return any(_is_marker(v) or _is_description(v, words) for v in value.values[1:])
    return isinstance(value, ast.Name) and value.id in words


def _called(node: ast.AST) -> str | None:
    """The name of the function ``node`` calls (``f(...)``; not a method: ``obj.f`` may be any f), or None."""
    if isinstance(node, ast.Call) and not _is_marker(node) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def _scopes(tree: ast.AST) -> list[ast.AST]:
    return [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]


def _bindings(nodes: list[ast.AST]) -> tuple[dict[str, list[ast.Call]], dict[str, set[str]]]:
    """A scope's variables bound to messages (``summary = T(...)``) and to calls (``trains = same(ctx)``)."""
    bound: dict[str, list[ast.Call]] = defaultdict(list)
    calls: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets if value is not None else ():
            if isinstance(target, ast.Name):
                bound[target.id] += _markers(value)  # type: ignore[arg-type]
                name = _called(value)  # type: ignore[arg-type]
                if name:
                    calls[target.id].add(name)
    return bound, calls


def _returned(trees: list[ast.AST]) -> dict[str, list[ast.Call]]:
    """``{function name: the messages it returns}``, through the functions it returns the result of."""
    direct: dict[str, list[ast.Call]] = defaultdict(list)
    forwards: dict[str, set[str]] = defaultdict(set)
    for tree in trees:
        for scope in _scopes(tree)[1:]:
            name = scope.name  # type: ignore[attr-defined]
            nodes = _scope_nodes(scope)
            bound, calls = _bindings(nodes)
            for node in nodes:
                if isinstance(node, ast.Return) and node.value is not None:
                    direct[name] += _markers(node.value)
                    for value in [node.value, *getattr(node.value, "elts", [])]:
                        if isinstance(value, ast.Name):
                            direct[name] += bound.get(value.id, [])
                            forwards[name] |= calls.get(value.id, set())
                        called = _called(value)
                        if called:
                            forwards[name].add(called)
    out = {name: list(found) for name, found in direct.items()}
    changed = True
    while changed:
        changed = False
        for name, others in forwards.items():
            for other in others:
                extra = [c for c in out.get(other, []) if all(c is not d for d in out.get(name, []))]
                if extra and other != name:
                    out.setdefault(name, []).extend(extra)
                    changed = True
    return out


def _roles(trees: list[ast.AST]) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """``{id(marker call): roles}`` and ``{id(marker call): described fields}`` of the package's messages
    (:attr:`Message.roles`, :attr:`Message.described`)."""
    roles: dict[int, set[str]] = defaultdict(set)
    described: dict[int, set[str]] = defaultdict(set)
    parts: list[tuple[ast.Call, list[ast.Call]]] = []  # (a message, the messages filled into its fields)
    returned = _returned(trees)

    def flow(value: ast.AST, bound: dict[str, list[ast.Call]], calls: dict[str, set[str]]) -> list[ast.Call]:
        """The messages an argument may carry: its own, a variable's, what the function it calls returns."""
        found = _markers(value)
        names = {_called(value)} - {None}
        if isinstance(value, ast.Name):
            found += bound.get(value.id, [])
            names |= calls.get(value.id, set())
        for name in names:
            found += returned.get(name, [])  # type: ignore[arg-type]
        return found

    for tree in trees:
        for scope in _scopes(tree):
            nodes = _scope_nodes(scope)
            bound, calls = _bindings(nodes)
            words: set[str] = set()  # variables that may hold a description
            for node in sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
                if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_marker(node):
                    roles[id(node)].add(f"in:{scope.name}")
                if isinstance(node, ast.Assign) and _is_description(node.value, words):
                    words |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                if isinstance(node.func, ast.Name) and not _is_marker(node):
                    for arg in node.args:
                        for call in flow(arg, bound, calls):
                            roles[id(call)].add(f"call:{node.func.id}")
                for keyword in node.keywords:
                    if keyword.arg is None:
                        continue
                    pieces = flow(keyword.value, bound, calls)
                    for call in pieces:
                        roles[id(call)].add(keyword.arg)
                    if _is_marker(node):
                        parts.append((node, pieces))
                        if _is_description(keyword.value, words):
                            described[id(node)].add(keyword.arg)
    changed = True
    while changed:  # a message filled into another's field is a part of it
        changed = False
        for whole, pieces in parts:
            for piece in pieces:
                if not roles[id(whole)] <= roles[id(piece)]:
                    roles[id(piece)] |= roles[id(whole)]
                    changed = True
    return roles, described


def extract(package: Path = PACKAGE) -> dict[str, Message]:
    """Every marked message of the package: ``{msgid: Message}``, in file order."""
    found: dict[str, Message] = {}
    files = [p for p in sorted(package.rglob("*.py")) if p.name != "i18n.py"]  # i18n.py: the functions themselves
    trees: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8")) for path in files]
    roles, described = _roles(trees)
    for path, tree in zip(files, trees):
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
            found[msgid] = Message(
                msgid,
                plural,
                where,
                (old.roles if old else frozenset()) | roles.get(id(node), set()),
                (old.described if old else frozenset()) | described.get(id(node), set()),
            )
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


# -- how Chinese reads ------------------------------------------------------------------------------------
#
# NOTE [Chinese style rules]
# `check` reads every Chinese translation for what a native reader stumbles on in gradlab's output.
# The rules look at a message, its translation and how the code uses it (``Message.roles``,
# ``Message.described``: read from the code by :func:`extract`). Each rule returns what is wrong
# with one entry, so a test can feed it a bad entry and a good one.

#: A Chinese character, and Chinese (full-width) punctuation.
HAN = "\u3400-\u4dbf\u4e00-\u9fff"
PUNCT = "\u3000-\u303f\uff00-\uffef"
#: A ``{field}`` of a message (``{{`` is a brace).
FIELD = r"(?<!\{)\{\w+(?:[:!][^{}]*)?\}"

#: How the code passes a message that is printed after a label with its own colon: a fix's
#: intent, summary, trains and cost (after "help:", "trains:", "cost:"), an explanation's summary
#: (after "error[GL0001 ...]:"), a cause (after "cause:"), a reason (after "why:"); and the functions
#: whose sentences are. Such a message has no colon of its own in Chinese.
LABELLED = frozenset(
    {
        *("intent", "summary", "trains", "cost", "cause", "why", "reason", "what"),
        "in:_cause_sentences",  # causes/__init__.py: the cause line's sentences
        "in:_module_reason",  # ddp.py: why DDP's backward missed a parameter (after "why: {parameters}")
        "in:why_unreached",
        "call:_usage_error",  # cli.py: a usage error (after "error:")
    }
)

#: The fields of :class:`gradlab.context.Context` that give a description when the name is
#: unknown ("the failing loss", "the upstream model", "the optimizer step", "output of Sigmoid [5, 4]").
DESCRIPTIONS = frozenset({"m", "o", "l", "e", "step", "zero", "tensor"})

_BRACKETS = {"（": "）", "(": ")", "[": "]", "【": "】", "<": ">"}


def _condition_end(text: str, start: int) -> int:
    """Where the condition that starts at ``start`` ends: the first ，：；。 outside brackets (or the end).

    A line break is no end: help texts wrap their sentences."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "（(":
            depth += 1
        elif ch in "）)":
            depth = max(0, depth - 1)
        elif depth == 0 and ch in "，：；。":
            return i
    return len(text)


def rule_if_then(msgid: str, msgstr: str, message: Message | None = None) -> list[str]:
    """An "if ..." condition a clause follows ends in "，就".

    A fix's intent ("if loss_2 should not train n_1") is printed before the fix
    (``{intent}: {summary}``), so its translation ends in "，就"; inside a sentence,
    "如果 X" is followed by "，" and a clause with 就 ("如果 X，就 Y" / "如果 X，它就 Y"),
    not by a colon.
    """
    intent = (message is not None and "intent" in message.roles) or (
        re.match(r"if\b", msgid) is not None and not re.search(r"[,:;] ", msgid)
    )
    if intent:
        return [] if msgstr.endswith("，就") else ["a condition a fix follows ends in '，就'"]
    found = []
    for m in re.finditer("如果", msgstr):
        end = _condition_end(msgstr, m.end())
        if end == len(msgstr) or msgstr[end] != "，":
            found.append(f"'如果…' ends in {msgstr[end : end + 1] or 'nothing'!r}, not '，就' and its clause")
            continue
        clause = msgstr[end + 1 : _condition_end(msgstr, end + 1)]
        if "就" not in clause:
            found.append(f"'如果…，{clause[:6]}' has no 就 (如果 X，就 Y)")
    return found


def rule_note_word(msgid: str, msgstr: str, message: Message | None = None) -> list[str]:
    """提示 is PyTorch's *Hint*; gradlab's note is 诊断 (the glossary: one word must not name both)."""
    hint = re.search(r"\bhint", msgid, re.IGNORECASE)
    if ("提示" in msgstr and not hint) or re.search(r"gradlab ?的提示", msgstr):
        return ["提示 is PyTorch's Hint; gradlab's note is 诊断"]
    return []


def _wholly_bracketed(text: str) -> bool:
    text = text.strip()
    return len(text) > 1 and _BRACKETS.get(text[0]) == text[-1] and not re.search(r"[）)\]】>].*[（(\[【<]", text[1:-1])


def rule_placeholder_words(msgid: str, msgstr: str, message: Message | None = None) -> list[str]:
    """A description filled into a sentence reads as words: not bracketed, and not glued to code.

    "the failing loss" is filled in where a name is unknown: "（出错的损失）" reads as an aside
    ("n_1 只从（先前的损失）学习"), and a field that may hold such words must not be written as code
    ("{loss}.backward()" gives "出错的损失.backward()", which looks runnable).
    """
    found = []
    if not placeholders(msgstr) and _wholly_bracketed(msgstr) and not _wholly_bracketed(msgid):
        found.append(f"bracketed words {msgstr!r} (a description is filled into sentences: plain words)")
    for name in sorted(message.described if message is not None else ()):
        field = re.escape("{" + name + "}")
        if re.search(rf"{field}[.(\[]|\(\s*{field}|{field}\s*[-+*/]|[-+*/]\s*{field}", msgstr):
            found.append(f"{{{name}}} may be words ('the failing loss'), but is written as code ({{{name}}}.…)")
    return found


def rule_spacing(msgid: str, msgstr: str, message: Message | None = None) -> list[str]:
    """A name or code inside Chinese text has a space on each side; Chinese has none inside.

    ``{fields}`` and ASCII words take a space next to a Chinese character ("没有到达 aux_head.weight");
    a space between two Chinese characters is dropped when fields are filled in (``i18n._CJK_GAP``:
    a field filled with Chinese words loses its spaces), but not in a message without fields.
    Two fields the English keeps apart are not glued together in Chinese. A field the English glues
    to a word brings its own separator (``"the name{where}"``, where is " (at x.py:3)" or nothing).
    """
    found = []
    for m in re.finditer(rf"[{HAN}](?={FIELD})|{FIELD}(?=[{HAN}])", msgstr):
        field = m.group() if m.group().startswith("{") else re.match(FIELD, msgstr[m.end() :]).group()  # type: ignore[union-attr]
        left = not m.group().startswith("{")  # Chinese on the field's left
        glued = rf"[\w)}}]{re.escape(field)}" if left else rf"{re.escape(field)}[\w(]"
        if re.search(glued, msgid):
            continue  # the English glues it to a word too: it brings its own separator (" (at x.py:3)")
        found.append(f"no space between a field and Chinese at {msgstr[max(0, m.start() - 4) : m.end() + 4]!r}")
    bare = re.sub(FIELD, " ", msgstr)
    for m in re.finditer(rf"[{HAN}][A-Za-z0-9_`]|[A-Za-z0-9_`)\]][{HAN}]", bare):
        found.append(f"no space between code and Chinese at {bare[max(0, m.start() - 4) : m.end() + 4]!r}")
    if not placeholders(msgstr):
        for m in re.finditer(rf"[{HAN}{PUNCT}] +[{HAN}{PUNCT}]", msgstr):
            found.append(f"a space inside Chinese text at {m.group()!r}")
    for m in re.finditer(rf"{FIELD}{FIELD}", msgstr):
        if m.group() not in msgid:
            found.append(f"two fields glued together: {m.group()!r} (the English keeps them apart)")
    return found


def rule_punctuation(msgid: str, msgstr: str, message: Message | None = None) -> list[str]:
    """Chinese text takes full-width punctuation: no half-width : , ; ( after a Chinese character."""
    found = []
    for m in re.finditer(rf"[{HAN}{PUNCT}] ?[:,;]|[{HAN}]\(|[:,;] ?[{HAN}]|\( ?[{HAN}]", msgstr):
        found.append(f"half-width punctuation in Chinese text at {m.group()!r} (：，；（)")
    return found


def rule_colons(msgid: str, msgstr: str, message: Message | None = None) -> list[str]:
    """At most one colon per line: "X：Y：Z" chains become "X：Y，Z" / "X：Y（Z）".

    A message printed after a label ("建议：", "训练：", "原因：", "为什么：") has no colon of its own.
    """
    labelled = message is not None and bool(message.roles & LABELLED)
    most = 0 if labelled else 1
    found = []
    for line in msgstr.splitlines():
        n = line.count("：")
        if n > most:
            where = " (it follows a label: '建议：', '训练：', …)" if labelled else ""
            found.append(f"{n} colons in one line{where}: {line[:40]!r}")
    return found


#: name -> rule; each gives what is wrong with one Chinese entry (NOTE [Chinese style rules]).
RULES: dict[str, Callable[[str, str, Message | None], list[str]]] = {
    "if-then": rule_if_then,
    "note-word": rule_note_word,
    "placeholder-words": rule_placeholder_words,
    "spacing": rule_spacing,
    "punctuation": rule_punctuation,
    "colons": rule_colons,
}


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
        elif lang_dir.name.startswith("zh"):
            for name, rule in RULES.items():
                found += [
                    f"{path.name}: {name}: {msgid[:60]!r}: {why}" for why in rule(msgid, translated, messages[msgid])
                ]
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
