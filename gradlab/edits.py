"""A fix as an edit of the user's file: which lines it replaces, with what, and whether it was checked.

A :class:`gradlab.Fix` that carries code carries it as :class:`Edit` records: a
range of lines of one real file and the text that replaces them (or is inserted
before them). The code a note prints is the text of its edits, so what the user
reads is what ``gradlab fix`` applies. Before a fix is printed as code,
:func:`check_edits` makes sure that the patched file parses and that every name
the new text reads exists at that line (in the frame that ran it, in builtins, or
bound by the edit itself); a fix that fails is printed as a sentence.

NOTE [Applicability]
As rustc's suggestions do, every fix says how sure it is
(:data:`Applicability`): ``machine-applicable`` (checked, keeps the training
the code's own optimizers ask for: a tool may apply it), ``maybe-incorrect``
(checked code, but it changes what trains or assumes one reading of the code:
shown, applied only on the user's word), ``sentence`` (no checked code: printed
as words only). Code with a placeholder is never printed as code.

Example::

    >>> e = Edit("train.py", 2, 2, "    y = y.mul(3)")
    >>> apply_edits("x = 1\\n    y.mul_(3)\\nz = 2\\n", [e])
    'x = 1\\n    y = y.mul(3)\\nz = 2\\n'
"""

from __future__ import annotations

import ast
import builtins
import difflib
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Applicability", "Edit", "apply_edits", "check_edits", "unified_diff"]

#: How sure a fix is (NOTE [Applicability]).
Applicability = Literal["machine-applicable", "maybe-incorrect", "sentence"]


@dataclass(frozen=True)
class Edit:
    """Replace lines ``start`` to ``end`` (1-based, inclusive) of ``filename`` with ``text``.

    ``end == start - 1`` inserts ``text`` before line ``start`` and replaces
    nothing. ``text`` holds whole lines with their indentation, joined by
    ``"\\n"`` (no trailing newline); an empty ``text`` deletes the lines.
    """

    filename: str
    start: int
    end: int
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.filename, str) or not self.filename:
            raise TypeError("Edit.filename must be the path of the file to edit, as a non-empty str")
        if not isinstance(self.start, int) or not isinstance(self.end, int) or self.start < 1:
            raise ValueError("Edit.start and Edit.end must be line numbers: start >= 1, end >= start - 1")
        if self.end < self.start - 1:
            raise ValueError("Edit.end must be >= start - 1 (start - 1 inserts before line start)")
        if not isinstance(self.text, str):
            raise TypeError("Edit.text must be the new lines as a str")

    @property
    def inserts(self) -> bool:
        """True when the edit only inserts lines (it replaces none)."""
        return self.end == self.start - 1


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with ``edits`` applied (their line numbers refer to ``source``; they must not overlap).

    Raises ``ValueError`` when an edit reaches past the end of ``source`` or two edits overlap.
    """
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in zip(ordered, ordered[1:]):
        if after.start <= before.end:
            raise ValueError(f"edits overlap: lines {before.start}-{before.end} and {after.start}-{after.end}")
    for e in reversed(ordered):
        if e.end > len(lines) or e.start > len(lines) + 1:
            raise ValueError(f"edit of lines {e.start}-{e.end} reaches past the end of the file ({len(lines)} lines)")
        new = [line + "\n" for line in e.text.split("\n")] if e.text else []
        lines[e.start - 1 : e.end] = new
    return "".join(lines)


def unified_diff(source: str, patched: str, filename: str) -> str:
    """The change from ``source`` to ``patched`` as a unified diff of ``filename`` (``a/``, ``b/``)."""
    return "".join(
        difflib.unified_diff(
            source.splitlines(keepends=True),
            patched.splitlines(keepends=True),
            fromfile=f"a/{filename}",
            tofile=f"b/{filename}",
        )
    )


def _bound_by(tree: ast.AST) -> set[str]:
    """Names the code binds (assignment targets, loop variables, imports, defs)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound


def _args(node: ast.AST) -> list[ast.arg]:
    return [a for a in ast.walk(node.args) if isinstance(a, ast.arg)] if isinstance(node, ast.Lambda) else []


def _comprehension_targets(tree: ast.AST) -> set[str]:
    return {
        n.id
        for c in ast.walk(tree)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }


def _read_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def check_edits(
    source: str,
    edits: Sequence[Edit],
    names: Mapping[str, object] | Iterable[str] = (),
) -> str | None:
    """Why ``edits`` cannot be printed as code for ``source``, or None when they pass.

    Checks that the patched source parses, and that every name the new text
    reads is bound: by ``names`` (the frame's locals and globals at the failing
    line), by builtins, by the edit's own text, or elsewhere in the patched file
    (an assignment or import of the module). Returns one sentence when a check fails.
    """
    if not edits:
        return "the fix has no edit"
    try:
        patched = apply_edits(source, edits)
    except ValueError as err:
        return str(err)
    try:
        tree = ast.parse(patched)
        compile(tree, "<patched>", "exec")  # the compiler's checks too: 'return' outside a function, ...
    except SyntaxError as err:
        return f"the patched file does not parse: {err.msg} (line {err.lineno})"
    try:
        original = _bound_by(ast.parse(source))
    except SyntaxError:
        original = set()
    known = set(names) | set(dir(builtins)) | original
    # a name an edit binds may be read by a later edit of the same file (a copy made before a loop, read inside it)
    for edit in sorted(edits, key=lambda e: (e.filename, e.start)):
        if not edit.text.strip():
            continue
        block = _dedent_block(edit.text)
        if block.lstrip().startswith("@") and not block.rstrip().endswith(":"):
            block += "\ndef _decorated(): pass"  # a decorator line parses only above a definition
        elif block.rstrip().endswith(":"):
            block += "\n    pass"  # a block's header alone (with torch.no_grad():): its body is the file's
        try:
            piece = ast.parse(block)
        except SyntaxError as err:
            return f"the new lines do not parse on their own: {err.msg}"
        # A name the edit binds may be read only by its later statements: `x = x.detach()` needs an x.
        bound_here: set[str] = set()
        for statement in piece.body:
            inner = {
                a.arg for n in ast.walk(statement) if isinstance(n, (ast.Lambda, ast.comprehension)) for a in _args(n)
            }
            # a loop's or a with's target is bound before the body that reads it runs
            targets = {
                t.id
                for n in ast.walk(statement)
                for target in (
                    [n.target]
                    if isinstance(n, (ast.For, ast.AsyncFor))
                    else [i.optional_vars for i in n.items if i.optional_vars is not None]
                    if isinstance(n, (ast.With, ast.AsyncWith))
                    else []
                )
                for t in ast.walk(target)
                if isinstance(t, ast.Name)
            }
            missing = sorted(
                _read_names(statement) - known - bound_here - inner - targets - _comprehension_targets(statement)
            )
            if missing:
                return f"the new lines use names the script does not have there: {', '.join(missing)}"
            bound_here |= _bound_by(statement)
        known |= bound_here
    return None


def _dedent_block(text: str) -> str:
    """``text`` without the indentation its lines share, so a block from inside a loop parses alone."""
    return textwrap.dedent(text)
