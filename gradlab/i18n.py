"""gradlab's own words in other languages: ``gradlab.set_language("zh_CN")``.

Diagnoses, fix advice, ``explain()`` texts, picture labels and the course's
widgets are written in English and translated through gettext (the standard
library's :mod:`gettext`). PyTorch's own error text is never translated: it stays
as PyTorch prints it, and gradlab explains it in the chosen language.

NOTE [Catalogs]
A language's catalog is the gettext text file
``gradlab/locale/<language>/LC_MESSAGES/gradlab.po``, kept in the package. It is
compiled into gettext's binary form in memory the first time the language is
chosen (:func:`_compile`, the standard ``msgfmt`` format), so the repository holds
no compiled binaries and nothing is written at install time. ``tools/i18n.py``
extracts the messages from the code and checks that every one is translated.

Nothing happens on import: the language is English until :func:`set_language`
is called (the command line calls it with the locale of ``LANG``).
"""

from __future__ import annotations

import ast
import gettext
import io
import os
import re
import struct
import threading
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TypeAlias

__all__ = [
    "Words",
    "set_language",
    "language",
    "languages",
    "gettext_",
    "_",
    "_t",
    "ngettext_",
    "Text",
    "T",
    "N",
    "join",
    "width",
    "ljust",
]

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "gradlab"

_lock = threading.Lock()
_current = "en"
_translation: gettext.NullTranslations = gettext.NullTranslations()


def languages() -> tuple[str, ...]:
    """The languages gradlab speaks: ``en`` and every catalog in the package (``zh_CN``)."""
    found = sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
    return ("en", *found)


def _normalise(lang: str) -> str | None:
    """``zh_CN.UTF-8``, ``zh-cn``, ``zh`` -> ``zh_CN``; ``C``/``POSIX``/``en_US`` -> ``en``; else None."""
    code = lang.split(".", 1)[0].split("@", 1)[0].replace("-", "_")
    if not code or code in ("C", "POSIX") or code.lower().startswith("en"):
        return "en"
    available = languages()
    for candidate in available:
        if candidate.lower() == code.lower():
            return candidate
    base = code.split("_", 1)[0].lower()
    same = [c for c in available if c.split("_", 1)[0].lower() == base]
    return same[0] if same else None


def set_language(lang: str | None = None) -> str:
    """Choose the language of gradlab's own words; return the one now in effect.

    ``lang`` is a language code (``"zh_CN"``, ``"zh"``, ``"en"``) or None for the
    environment's (``LC_ALL``, ``LC_MESSAGES``, ``LANG``, as gettext reads them).
    A language gradlab has no catalog for falls back to English, so does None
    when the environment names none.

    Example::

        >>> set_language("zh_CN")
        'zh_CN'
        >>> set_language("en")
        'en'
    """
    global _current, _translation
    if lang is not None and not isinstance(lang, str):
        raise TypeError(f"set_language() takes a language code such as 'zh_CN' or 'en', not {type(lang).__name__}")
    if lang is None:
        env = next((os.environ[k] for k in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG") if os.environ.get(k)), "en")
        chosen = _normalise(env.split(":", 1)[0]) or "en"
    else:
        found = _normalise(lang)
        if found is None:
            raise ValueError(f"gradlab has no {lang!r} catalog; choose one of {list(languages())}")
        chosen = found
    with _lock:
        _translation = gettext.NullTranslations() if chosen == "en" else _catalog(chosen)
        _current = chosen
    return chosen


def language() -> str:
    """The language in effect (``en`` until :func:`set_language` is called)."""
    return _current


def gettext_(message: str) -> str:
    """``message`` in the language in effect (English when it has no translation)."""
    return _translation.gettext(message)


_ = gettext_


# A space between two Chinese characters (or Chinese punctuation): English templates put
# spaces around the names they fill in, which Chinese text does not have ("如果 出错的损失 不应训练").
_CJK_GAP = re.compile(r"(?<=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]) (?=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef])")


def _t(message: str, /, **fields: object) -> str:
    """``message`` translated, then its ``{fields}`` filled in (a translation may reorder them).

    In Chinese, a single space left between two Chinese characters where a field was filled
    in is dropped; spaces next to code (``loss_2``, ``n_1``) stay.

    Example::

        >>> set_language("zh_CN") and _t("if {loss} should not train {model}", loss="loss_2", model="n_1")
        '如果 loss_2 不该训练 n_1，就'
        >>> _t("if {loss} should not train {model}", loss=_("the failing loss"), model=_("the upstream model"))
        '如果出错的损失不该训练上游模型，就'
        >>> set_language("en")
        'en'
    """
    return str(Text(message, fields))


def ngettext_(singular: str, plural: str, n: int) -> str:
    """The singular or plural form of a message for ``n``, in the language in effect."""
    return _translation.ngettext(singular, plural, n)


# NOTE [Words as data]
# A diagnosis is often made in one language and shown in another (a note built under
# a tracker, printed after set_language(); a record kept and rendered later). So the
# records keep gradlab's words as Text: the message and its fields, not the sentence.
# A Text is worded each time it is shown, in the language in effect then, like
# Django's gettext_lazy; its fields may be Texts themselves (a fix's "trains" line
# names the models and says "the upstream model" when it knows no name). For reading
# code it behaves as the str it shows (==, in, startswith, len, + and format).
class Text:
    """Words of gradlab's kept as data (NOTE [Words as data]): ``str(text)`` words them in the language in effect.

    Make one with :func:`T` (a message and its fields), :func:`N` (a message with a
    plural form) or :func:`join`.

    Example::

        >>> t = T("{name} (view)", name="w")
        >>> str(t), t == "w (view)", "view" in t
        ('w (view)', True, True)
        >>> set_language("zh_CN") and str(t)
        'w（视图）'
        >>> set_language("en")
        'en'
    """

    __slots__ = ("_message", "_plural", "_n", "_fields", "_parts")

    def __init__(
        self,
        message: str,
        fields: dict[str, object] | None = None,
        *,
        plural: str | None = None,
        n: int = 1,
        parts: tuple[object, ...] | None = None,
    ) -> None:
        self._message = message
        self._plural = plural
        self._n = n
        self._fields = dict(fields or {})
        self._parts = parts  # a join or a concatenation: the message is the separator

    @property
    def message(self) -> str:
        """The English message (the gettext ``msgid``), with its ``{fields}`` unfilled."""
        return self._message

    @property
    def fields(self) -> dict[str, object]:
        """The values of the message's fields (each may be a :class:`Text`)."""
        return dict(self._fields)

    def __str__(self) -> str:
        if self._parts is not None:
            return _worded(self._message).join(str(p) for p in self._parts)
        template = (
            ngettext_(self._message, self._plural, self._n) if self._plural is not None else gettext_(self._message)
        )
        if not self._fields:
            return template
        text = template.format(**{k: str(v) if isinstance(v, Text) else v for k, v in self._fields.items()})
        return _CJK_GAP.sub("", text) if _current.startswith("zh") else text

    def __repr__(self) -> str:
        return repr(str(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, Text)):
            return str(self) == str(other)
        return NotImplemented

    def __hash__(
        self,
    ) -> int:  # equal to its str's, as == is (so it is found in a set of str, and a str in a set of it)
        return hash(str(self))

    def __bool__(self) -> bool:
        return bool(self._message) or bool(self._parts)

    def __len__(self) -> int:
        return len(str(self))

    def __contains__(self, part: object) -> bool:
        return str(part) in str(self)

    def __add__(self, other: object) -> Text:
        return Text("", parts=(self, other))

    def __radd__(self, other: object) -> Text:
        return Text("", parts=(other, self))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def startswith(self, prefix: str | tuple[str, ...]) -> bool:
        return str(self).startswith(prefix)

    def endswith(self, suffix: str | tuple[str, ...]) -> bool:
        return str(self).endswith(suffix)

    def splitlines(self) -> list[str]:
        return str(self).splitlines()

    def split(self, sep: str | None = None, maxsplit: int = -1) -> list[str]:
        return str(self).split(sep, maxsplit)

    def strip(self, chars: str | None = None) -> str:
        return str(self).strip(chars)

    def lower(self) -> str:
        return str(self).lower()


#: gradlab's words as a record keeps them: a plain str, or a :class:`Text` worded when shown.
Words: TypeAlias = str | Text


def _worded(message: str) -> str:
    return gettext_(message) if message.strip() else message  # a blank separator is not a message


def T(message: str, /, **fields: object) -> Text:
    """``message`` with its ``fields``, kept as data and worded when shown (NOTE [Words as data]).

    Example::

        >>> str(T("if {loss} should not train {model}", loss="loss_2", model=T("the upstream model")))
        'if loss_2 should not train the upstream model'
    """
    return Text(message, fields)


def N(singular: str, plural: str, n: int, /, **fields: object) -> Text:
    """The singular or plural form of a message for ``n``, kept as data (``{n}`` is filled in too)."""
    return Text(singular, {"n": n, **fields}, plural=plural, n=n)


def join(parts: Sequence[object], separator: str | Text = ", ") -> Text:
    """``parts`` joined by ``separator`` (a message of its own: ``T(" and ")``), worded when shown.

    Example::

        >>> str(join(["n_1", "n_2"], T(" and ")))
        'n_1 and n_2'
    """
    return Text(separator.message if isinstance(separator, Text) else separator, parts=tuple(parts))


def width(text: str) -> int:
    """Columns ``text`` takes in a terminal or a monospace font: a Chinese character takes two.

    Example::

        >>> width("grad"), width("梯度"), ljust("梯度", 6) + "|"
        (4, 4, '梯度  |')
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def ljust(text: str, columns: int) -> str:
    """``text`` padded with spaces to ``columns`` display columns (``str.ljust`` counts a Chinese character as one)."""
    return text + " " * max(0, columns - width(text))


@cache
def _catalog(lang: str) -> gettext.GNUTranslations:
    path = LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"
    return gettext.GNUTranslations(io.BytesIO(_compile(read_po(path.read_text(encoding="utf-8")))))


def read_po(text: str) -> dict[str, str]:
    """The translated entries of a gettext ``.po`` text: ``{msgid: msgstr}`` (plurals as ``msgid\\0plural``).

    Entries with an empty ``msgstr`` and entries marked ``fuzzy`` are left out, as
    ``msgfmt`` does. ``msgctxt`` is joined to the ``msgid`` with ``\\x04``.

    Example::

        >>> read_po('msgid "ok"\\nmsgstr "好"\\n')
        {'ok': '好'}
    """
    entries: dict[str, str] = {}
    for fields, flags in _po_entries(text):
        if "fuzzy" in flags or "msgid" not in fields:
            continue
        msgid = fields["msgid"]
        if "msgctxt" in fields:
            msgid = fields["msgctxt"] + "\x04" + msgid
        if "msgid_plural" in fields:
            forms = [fields[k] for k in sorted(fields) if k.startswith("msgstr[")]
            if forms and all(forms):
                entries[msgid + "\x00" + fields["msgid_plural"]] = "\x00".join(forms)
        elif fields.get("msgstr") or msgid == "":
            entries[msgid] = fields.get("msgstr", "")
    return entries


def _po_entries(text: str) -> list[tuple[dict[str, str], set[str]]]:
    """Each entry of a ``.po`` text as ``({keyword: string}, {flags})``; entries are separated by blank lines."""
    out: list[tuple[dict[str, str], set[str]]] = []
    fields: dict[str, str] = {}
    flags: set[str] = set()
    current: str | None = None
    for raw in [*text.splitlines(), ""]:
        line = raw.strip()
        if not line:
            if fields:
                out.append((fields, flags))
            fields, flags, current = {}, set(), None
        elif line.startswith("#,"):
            flags |= {f.strip() for f in line[2:].split(",")}
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            if current is None:
                raise ValueError(f"a continued string with no keyword before it: {raw!r}")
            fields[current] += ast.literal_eval(line)
        else:
            keyword, _, rest = line.partition(" ")
            fields[keyword] = ast.literal_eval(rest.strip())
            current = keyword
    return out


def _compile(entries: dict[str, str]) -> bytes:
    """The gettext binary catalog (``.mo``) of ``entries``, as the standard ``msgfmt`` writes it."""
    if "" not in entries:
        entries = {"": "Content-Type: text/plain; charset=UTF-8\n", **entries}
    keys = sorted(entries)
    ids = b""
    strs = b""
    offsets = []
    for key in keys:
        k, v = key.encode("utf-8"), entries[key].encode("utf-8")
        offsets.append((len(ids), len(k), len(strs), len(v)))
        ids += k + b"\0"
        strs += v + b"\0"
    start = 7 * 4
    key_table = start
    value_table = key_table + len(keys) * 8
    ids_start = value_table + len(keys) * 8
    strs_start = ids_start + len(ids)
    header = struct.pack("Iiiiiii", 0x950412DE, 0, len(keys), key_table, value_table, 0, 0)
    key_index = b"".join(struct.pack("ii", length, ids_start + offset) for offset, length, _, _ in offsets)
    value_index = b"".join(struct.pack("ii", length, strs_start + offset) for _, _, offset, length in offsets)
    return header + key_index + value_index + ids + strs
