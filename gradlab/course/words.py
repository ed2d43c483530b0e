"""The course's own words in other languages, in a catalog of the course's, apart from the library's.

gradlab's catalog (``gradlab/locale``) holds what the library says to anyone; the
course's checks and widgets speak only to its learners, so their words belong to
the course. This module reads ``gradlab/course/locale/<language>/LC_MESSAGES/course.po``
(the same gettext text format, the same ``read_po``) and follows the language the
library is set to (:func:`gradlab.i18n.language`, chosen by ``course.setup(language=...)``).

NOTE [Two catalogs while the course moves out]
The course's older messages are still marked ``_``/``_t`` and live in gradlab's
catalog; a message moves here when its function is rewritten. Messages here are
marked :func:`say` and :func:`say_t`, names that ``tools/i18n.py`` does not
extract, so the library's catalog stays the library's. ``tests/test_course_words.py``
checks this catalog as ``tools/i18n.py check`` checks the library's: every marked
message translated, no stale entry, every placeholder kept.

Example::

    >>> from gradlab.i18n import set_language
    >>> set_language("zh_CN") and say("bitwise equal")
    '逐位相等'
    >>> set_language("en") and say("bitwise equal")
    'bitwise equal'
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from gradlab.i18n import language, read_po

__all__ = ["say", "say_t", "CATALOGS"]

#: Where the course's catalogs are: ``CATALOGS / <language> / "LC_MESSAGES" / "course.po"``.
CATALOGS = Path(__file__).resolve().parent / "locale"

# As gradlab.i18n._t does: a space left between two Chinese characters where a field was filled in is dropped.
_CJK_GAP = re.compile(r"(?<=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]) (?=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef])")


@cache
def _catalog(lang: str) -> dict[str, str]:
    path = CATALOGS / lang / "LC_MESSAGES" / "course.po"
    return read_po(path.read_text(encoding="utf-8")) if path.is_file() else {}


def say(message: str, /) -> str:
    """``message`` in the language in effect (English when the course has no translation of it)."""
    lang = language()
    if lang == "en":
        return message
    return _catalog(lang).get(message) or message


def say_t(message: str, /, **fields: object) -> str:
    """``message`` translated, then its ``{fields}`` filled in (a translation may reorder them)."""
    text = say(message).format(**fields)
    return _CJK_GAP.sub("", text) if language().startswith("zh") else text
