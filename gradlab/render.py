"""Diagnoses and explanations as text: the one renderer of gradlab's notes.

A :class:`gradlab.Diagnosis` and an :class:`gradlab.Explanation` are records
(names, lines, kinds, fixes with their edits and claims); this module words them,
in the language in effect when they are shown, for every place gradlab speaks:
the note under a traceback (:func:`note`), ``.details()`` (:func:`details`), the
notebook's HTML, the command line, ``gradlab fix``'s report. The ``gradlab: ``
that marks gradlab's words in a stream of other text is added in one place,
:func:`prefixed`.

The short form reads like a compiler's (rustc's diagnostics): a header with the
kind's code, the user's line quoted with the operation marked, ``=`` lines for
the facts, then ``help:`` with the one fix that fits and what it trains.

Example::

    >>> from gradlab.location import Location
    >>> print("\\n".join(quote(Location("train.py", 7), None, "here")))  # doctest: +SKIP
     --> train.py:7
      |
    7 |     opt.step()
      |     ^^^^^^^^^^ here
"""

from __future__ import annotations

import html
import os
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Protocol

from .codes import code_for
from .fixes import Fix
from .i18n import Words, _, _t, ngettext_
from .location import Location
from .rewrite import AUGMENTED

__all__ = ["quote", "fix_lines", "help_lines", "numbered", "more", "header"]


def header(kind: str) -> str:
    """``error[GL0002 modified in place]``: the head of a note, with the kind's stable code."""
    entry = code_for(kind)
    return entry.header() if entry is not None else _("not decoded")


# -- quoting the user's code ---------------------------------------------------------------------------------


def quote(loc: Location, span: tuple[int, int] | None, label: Words, *, mark: bool = True) -> list[str]:
    """A user's line as a compiler quotes it: ``--> file:line``, the line, and ``label`` under the marked span.

    With ``mark`` False the label follows as an ``=`` line instead of under a ``^^^`` marker.
    """
    code = loc.code.strip()
    number = str(loc.lineno)
    pad = " " * len(number)
    out = [f"{pad}--> {loc.where}", f"{pad} |", f"{number} |     {code}"]
    if mark:
        start, end = span if span is not None else (0, len(code))
        out.append(f"{pad} |     {' ' * start}{'^' * max(1, end - start)} {label}")
    else:
        out.append(f"   = {label}")
    for caller in loc.callers:
        out.append(f"{pad} = " + _t("called from {caller}", caller=caller))
    return out


def op_span(code: str, op: str | None) -> tuple[int, int] | None:
    """Where in ``code`` (a stripped line) the operation ``op`` is, for the ``^^^`` marker, or None."""
    if not code:
        return None
    patterns = []
    if op and op.endswith(".step()"):
        patterns.append(r"[\w.\[\]]+\.step\(\s*\)")
    elif op == "backward":
        patterns += [r"[\w.\[\]()+ ]*?\.backward\([^()]*(?:\([^()]*\)[^()]*)*\)", r"torch\.autograd\.\w+\(.*\)"]
    elif op in AUGMENTED:
        patterns.append(re.escape(AUGMENTED[op]) + "=")
    elif op == "__setitem__":
        patterns.append(r"[\w.]+\[.*?\]\s*=")
    elif op:
        patterns += [r"[\w.\[\]]*\." + re.escape(op) + r"\([^)]*\)", r"inplace\s*=\s*True"]
    for pattern in patterns:
        m = re.search(pattern, code)
        if m:
            return m.start(), m.end()
    return None


# -- fixes -------------------------------------------------------------------------------------------------


def fix_lines(fix: Fix, first: bool = True) -> list[str]:
    """A fix as lines: its summary (with the intent it assumes), its code, what it trains, what it costs.

    ``first`` is False for a fix listed after another: an alternative then begins with "or".
    """
    summary = str(fix.summary)
    if fix.alternative and not first:
        summary = _t("or {summary}", summary=summary)
    if fix.intent:
        intent = str(fix.intent)
        summary = _t("{intent}: {summary}", intent=intent[:1].upper() + intent[1:], summary=summary)
    out = [summary]
    if fix.code:
        out += [f"    {line}" for line in fix.code.splitlines()]
    out.append("  " + _t("trains: {what}", what=fix.trains))
    if fix.cost:
        out.append("  " + _t("cost: {what}", what=fix.cost))
    return out


def help_lines(fix: Fix) -> list[str]:
    """The note's ``help:`` for the first fix: the fix, its code as the edit writes it, what it trains."""
    lines = [_t("help: {fix}", fix=fix_lines(fix)[0])]
    if fix.code:
        lines += [f"   |     {line}" for line in fix.code.splitlines()]
    lines.append("   = " + _t("trains: {what}", what=fix.trains))
    return lines


def numbered(fixes: Sequence[Fix]) -> list[str]:
    """Every fix, numbered, with its code and what it trains (``.details()``)."""
    lines: list[str] = []
    for i, fix in enumerate(fixes, 1):
        body = fix_lines(fix, first=i == 1)
        lines.append(f"  {i}. {body[0]}")
        lines += [f"     {line}" for line in body[1:]]
    return lines


def html_fixes(fixes: Sequence[Fix]) -> str:
    """The fixes as an HTML list (a notebook's folded "all fixes")."""
    return "".join(
        f"<li>{html.escape(fix_lines(fix, first=i == 0)[0])}"
        + (f"<pre>{html.escape(fix.code)}</pre>" if fix.code else "")
        + f"<br>{html.escape(_t('trains: {what}', what=fix.trains))}</li>"
        for i, fix in enumerate(fixes)
    )


# NOTE [Where notes are read]: in IPython/Jupyter the note shows under a cell's traceback, so the line is a
# call for the next cell; elsewhere it is the command that reruns the script with every fix printed. A
# shell merely started in the process (a test, an embedding app) does not make the failure of the script
# that is running as __main__ (python -m gradlab run, in the same process) a cell's.
def _in_ipython() -> bool:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return bool(get is not None and get() is not None)


def _in_main_script(where: Location | None) -> bool:
    """True when ``where`` is a line of the script running as ``__main__`` (``sys.argv[0]``)."""
    script = sys.argv[0] if sys.argv else ""
    if where is None or where.in_cell or not script.endswith((".py", ".pyw")):
        return False
    try:
        return os.path.samefile(script, where.filename)
    except OSError:
        return False


def more(where: Location | None = None) -> str:
    """Where the rest of a note is: something that runs where the note is read (NOTE [Where notes are read])."""
    if _in_ipython() and not _in_main_script(where):
        return "import gradlab; print(gradlab.last_diagnosis().details())"
    script = sys.argv[0] if sys.argv and sys.argv[0].endswith((".py", ".pyw")) else None
    if script is None:
        return _("python -m gradlab run --verbose, on your script")
    try:
        shown = os.path.relpath(script)
    except ValueError:  # another drive (Windows)
        shown = script
    if shown.startswith(".."):
        shown = script
    return shlex.join(["python", "-m", "gradlab", "run", "--verbose", shown, *sys.argv[1:]])


def others_line(fixes: Sequence[Fix], where: Location | None) -> list[str]:
    """``= 2 other fixes, for other intents: <where to read them>`` when there are more fixes than the first."""
    if len(fixes) <= 1:
        return []
    n = len(fixes) - 1
    return [
        "   = "
        + ngettext_("{n} other fix, for other intents: {how}", "{n} other fixes, for other intents: {how}", n).format(
            n=n, how=more(where)
        )
    ]


class Spanned(Protocol):
    """A located fact of a note: a user's line and what happened there."""

    @property
    def at(self) -> Location: ...
    @property
    def label(self) -> Words: ...


def spans_lines(spans: Sequence[Spanned]) -> list[str]:
    """Each located fact quoted, its label as an ``=`` line."""
    lines: list[str] = []
    for s in spans:
        lines += quote(s.at, None, s.label, mark=False)
    return lines
