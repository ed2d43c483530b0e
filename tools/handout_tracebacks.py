"""Tracebacks for print: the reader's frames and the error, library frames counted.

A stored error output (``output_type == "error"``) holds IPython's traceback as a
list of entries in ANSI colour: a rule, the ``Traceback (most recent call last)``
header, one entry per frame, the ``RuntimeError: ...`` line, then any notes
attached to the exception (gradlab's diagnosis). On screen every frame is one
scroll away; on paper the frames inside torch fill a page. :func:`cut_traceback`
keeps the cell frames and every non-frame entry, and puts one line
``… 4 library frames omitted (torch, gradlab)`` where library frames were.
IPython's ``[... skipping hidden 2 frame]`` lines (frames a library hid with
``__tracebackhide__``) count into that line too.

A frame is a library frame when its file lies in ``site-packages`` or
``dist-packages`` (or the ``<site-packages>`` placeholder of the sanitized
notebooks), in a ``torch/`` or ``gradlab/`` package folder, or in Python's own
``lib/python3.X/``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# "Cell In[7], line 14" (IPython >= 8), "Input In [7], in <cell line: 3>()" (IPython 8.0-8.4),
# "<ipython-input-7-...> in <module>" (IPython 7).
_CELL_FRAME = re.compile(r"^(?:Cell In\s*\[|Input In\s*\[|<ipython-input-)")
# IPython: "File <site-packages>/torch/_tensor.py:623, in Tensor.backward(...)";
# plain Python: 'File "/usr/lib/python3.11/contextlib.py", line 144, in __exit__'.
_FILE_FRAME = re.compile(r'^File\s+(?:"(?P<quoted>[^"]+)"|(?P<bare>.+?)(?::\d+)?(?:,\s*in\b|$))')

_SITE = re.compile(r"(?:^|[/\\])(?:site-packages|dist-packages)(?:[/\\]|>|$)|<site-packages>")
# A folder named torch or gradlab holding modules; not a project folder that happens to
# carry the name and holds notebooks, tests or scripts of its own.
_PACKAGE = re.compile(
    r"(?:^|[/\\])(?P<package>torch|gradlab)[/\\]"
    r"(?!(?:notebooks|tests|scripts|examples|tools|docs|benchmarks)[/\\])"
)
_HIDDEN = re.compile(r"^\s*\[\.\.\. skipping hidden (\d+) frames?\]\s*$")
_STDLIB = re.compile(r"(?:^|[/\\])lib[/\\]python3(?:\.\d+)?[/\\]")


def plain(entry: str) -> str:
    """An entry without its ANSI colour codes."""
    return ANSI.sub("", entry)


def frame_file(entry: str) -> str | None:
    """The file of a frame entry (``"<cell>"`` for a notebook cell), ``None`` if not a frame."""
    text = plain(entry).strip("\n")
    first = text.splitlines()[0].strip() if text else ""
    if _CELL_FRAME.match(first):
        return "<cell>"
    match = _FILE_FRAME.match(first)
    if match:
        return (match.group("quoted") or match.group("bare") or "").strip()
    return None


def library_of(path: str) -> str | None:
    """Which library a frame's file belongs to (``torch``, ``gradlab``, ...), ``None`` for the reader's code."""
    if path == "<cell>":
        return None
    package = _PACKAGE.search(path)
    if package:
        return package.group("package")
    if _SITE.search(path):
        after = re.split(r"site-packages>?[/\\]?|dist-packages[/\\]?", path)[-1]
        top = re.split(r"[/\\]", after.lstrip("/\\"))[0]
        return top.removesuffix(".py") or "site-packages"
    if _STDLIB.search(path):
        return "Python"
    return None


def omitted_line(count: int, libraries: Sequence[str]) -> str:
    """``… 4 library frames omitted (torch, gradlab)``."""
    noun = "frame" if count == 1 else "frames"
    names = f" ({', '.join(libraries)})" if libraries else ""
    return f"… {count} library {noun} omitted{names}\n"


def failing_line_only(entry: str) -> str:
    """A cell frame without its context lines: the ``Cell In[7], line 14`` line and the ``---->`` line."""
    lines = entry.split("\n")
    kept = [lines[0]] + [line for line in lines[1:] if plain(line).lstrip().startswith("-")]
    return "\n".join(kept) + "\n"


def cut_traceback(traceback: Sequence[str], *, context: bool = True) -> list[str]:
    """The entries of ``traceback`` without library frames; each run of them becomes one line.

    ``context=False`` also drops the lines around the failing line of each cell
    frame (the workbook prints the cell's code right above its error).

    Example::

        >>> cut_traceback(["Cell In[3], line 2\\n----> 2 loss.backward()\\n",
        ...                "File <site-packages>/torch/_tensor.py:623, in Tensor.backward()\\n",
        ...                "RuntimeError: boom"])
        ['Cell In[3], line 2\\n----> 2 loss.backward()\\n', '… 1 library frame omitted (torch)\\n', 'RuntimeError: boom']
    """
    kept: list[str] = []
    run: list[str | None] = []  # the library of each omitted frame; None: hidden, whose is unknown

    def flush() -> None:
        if run:
            kept.append(omitted_line(len(run), [name for name in dict.fromkeys(run) if name]))
            run.clear()

    for entry in traceback:
        hidden = _HIDDEN.match(plain(entry))
        if hidden:
            run.extend([None] * int(hidden.group(1)))
            continue
        path = frame_file(entry)
        library = library_of(path) if path is not None else None
        if library is not None:
            run.append(library)
            continue
        flush()
        kept.append(entry if context or path != "<cell>" else failing_line_only(entry))
    flush()
    return kept


_PRINTED_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<path>[^"]+)", line \d+, in \S+\s*$')


def cut_printed_frames(text: str) -> str:
    """Printed text (a warning, a traceback a cell prints) with each run of library frames as one line.

    A printed frame is Python's two lines, ``File "...", line N, in f`` and its indented code.

    Example::

        >>> print(cut_printed_frames(
        ...     'Error in AddmmBackward0\\n  File "<cell>", line 3, in <module>\\n    pred = net(x)\\n'
        ...     '  File "<site-packages>/torch/nn/modules/module.py", line 1778, in _call\\n    return f()\\n'
        ...     '  File "<site-packages>/torch/nn/modules/linear.py", line 134, in forward\\n    return F.linear(x)\\n'
        ... ), end="")
        Error in AddmmBackward0
          File "<cell>", line 3, in <module>
            pred = net(x)
          … 2 library frames omitted (torch)
    """
    lines = text.split("\n")
    kept: list[str] = []
    run: list[str] = []
    indent = ""

    def flush() -> None:
        if run:
            kept.append(indent + omitted_line(len(run), list(dict.fromkeys(run))).rstrip("\n"))
            run.clear()

    i = 0
    while i < len(lines):
        frame = _PRINTED_FRAME.match(lines[i])
        library = library_of(frame.group("path")) if frame else None
        if frame and library is not None:
            indent = frame.group("indent")
            run.append(library)
            code = (
                i + 1 < len(lines) and not _PRINTED_FRAME.match(lines[i + 1]) and lines[i + 1].startswith(indent + " ")
            )
            i += 2 if code else 1
            continue
        flush()
        kept.append(lines[i])
        i += 1
    flush()
    return "\n".join(kept)
