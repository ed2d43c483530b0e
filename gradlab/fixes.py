"""A fix as data, and placing it in the user's file: the edits, their check, what the fix claims it trains."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Collection
from dataclasses import dataclass, replace

from .context import Context
from .edits import Applicability, Edit, check_edits
from .i18n import Words, _t
from .location import Location
from .loop import Site
from .rewrite import with_keyword
from .source import parse, statement_at

__all__ = ["Fix", "checked"]


@dataclass(frozen=True)
class Fix:
    """One way to make the failing backward run, and what it trains.

    ``summary`` says what to do; ``trains`` which loss then sends gradient into
    which model (and whether that differs from what the failing code did);
    ``code`` is the code to write, in the user's names when gradlab knows them;
    ``intent`` the question that picks this fix (``if loss_2 should not train n_1``).

    As data for tools (``gradlab fix``): ``edits`` are the checked edits of the
    user's file that ``code`` prints (:mod:`gradlab.edits`; empty when the fix is
    a sentence), ``applicability`` how sure the fix is (NOTE [Applicability] in
    :mod:`gradlab.edits`), and ``claims`` what ``trains`` says as pairs
    ``(loss, modules)``: after the fix, ``loss``'s gradient reaches exactly those
    modules' parameters (in the user's names; empty when gradlab cannot name them).
    ``alternative`` marks a fix worded as another way to the one before it: shown
    after another fix, its summary begins with "or". ``keeps_forward`` says whether
    the fixed code computes the values the failing code computed up to its failure
    (True: an exact rewrite, a detach, ``inputs=``; False: a recompute after a step,
    the mean of a non-scalar loss; None: not known): ``gradlab fix`` checks it
    (NOTE [Oracles] in :mod:`gradlab.fix`).
    """

    summary: Words
    trains: Words
    code: str | None = None
    intent: Words | None = None
    cost: Words | None = None
    edits: tuple[Edit, ...] = ()
    applicability: Applicability = "sentence"
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()
    alternative: bool = False
    keeps_forward: bool | None = None

    def lines(self, first: bool = True) -> list[str]:
        """The fix as text lines, in the language in effect: the summary (with its intent), the code, what it trains.

        ``first`` is False for a fix listed after another one (an alternative then begins with "or").
        """
        summary = str(self.summary)
        if self.alternative and not first:
            summary = _t("or {summary}", summary=summary)
        if self.intent:
            intent = str(self.intent)
            summary = _t("{intent}: {summary}", intent=intent[:1].upper() + intent[1:], summary=summary)
        out = [summary]
        if self.code:
            out += [f"    {line}" for line in self.code.splitlines()]
        out.append("  " + _t("trains: {what}", what=self.trains))
        if self.cost:
            out.append("  " + _t("cost: {what}", what=self.cost))
        return out


def claim(
    ctx: Context, modules: set[str] | tuple[str, ...], terms: bool = True
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What ``ctx.loss`` trains, ``modules``; with ``terms`` (a fix that keeps what each term reaches), each named
    term of a summed loss with what it reaches of them (NOTE [A loss written as a sum of named losses])."""
    if not ctx.loss or not ctx.reach:
        return ()
    if terms and ctx.terms:  # each named term of the sum, with what it reaches of ``modules``
        per_term = tuple((name, tuple(sorted(m for m in reach if m in modules))) for name, reach in ctx.terms)
        if {m for _name, reach in per_term for m in reach} == set(modules):
            return per_term
    return ((ctx.loss, tuple(sorted(modules))),)


# NOTE [One loss backwarded on two lines]
# A loss may be backwarded twice in one iteration, each time for another optimizer
# (``loss.backward(retain_graph=True); opt_encoder.step()``, then ``loss.backward()``;
# ``opt_head.step()``). What the loss trains is what every one of its backward calls
# trains: the fix's claim for it (the failing call's) and the other line's claim are
# one claim, their union (:func:`merged`).
def merged(claims: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``claims`` with the entries of one loss made one, the union of their models, in the order of first
    appearance (NOTE [One loss backwarded on two lines])."""
    out: dict[str, set[str]] = {}
    for loss, models in claims:
        out.setdefault(loss, set()).update(models)
    return tuple((loss, tuple(sorted(models))) for loss, models in out.items())


@dataclass(frozen=True)
class Proposal:
    """A fix before it is judged: the models its loss reaches after it (``reach``), its own claim otherwise."""

    fix: Fix
    reach: tuple[str, ...] | None  # None: the fix changes the loop's order, so its own claim stands
    keeps: bool  # True: it keeps what the failing code trains (an exact rewrite)
    describe: bool = False  # True: its trains text is written from the loop's intent once it is judged


def tensor_names(ctx: Context, names: tuple[str, ...]) -> frozenset[str]:
    """The names of ``names`` that hold a tensor in the failing frame (optimized themselves, not a module's)."""
    kinds = ctx.site.kinds if ctx.site is not None else {}
    return frozenset(n for n in names if kinds.get(n) == "tensor")


def keeping(ctx: Context, fix: Fix) -> Proposal:
    """A fix that keeps what the failing code trains: its loss reaches what it reached (its claim says so), and
    the forward computes what it computed."""
    forward = True if fix.keeps_forward is None else fix.keeps_forward
    return Proposal(replace(fix, claims=claim(ctx, ctx.reach), keeps_forward=forward), ctx.reach, True)


def all_edits(*edits: Edit | None) -> tuple[Edit, ...]:
    return () if any(e is None for e in edits) else tuple(e for e in edits if e is not None)


def indent_of(site: Site, line: int) -> str:
    text = site.text(line)
    return text[: len(text) - len(text.lstrip())]


def span_of(site: Site, line: int) -> tuple[int, int] | None:
    """The first and last line of the statement at ``line`` (None when the file does not parse)."""
    tree = site.tree()
    st = statement_at(tree, line) if tree is not None else None
    return (st.lineno, st.end_lineno or st.lineno) if st is not None else None


def replace_line(ctx: Context, line: int | None, new: str | None) -> Edit | None:
    """Replace the one-line statement at ``line`` of the failing function with ``new`` (its indentation kept)."""
    site = ctx.site
    if site is None or line is None or new is None or not site.holds(line):
        return None
    if span_of(site, line) != (line, line):
        return None
    return Edit(site.filename, line, line, indent_of(site, line) + new.strip())


def outer_models(models: Collection[str]) -> tuple[str, ...]:
    """``models`` without those another of them holds by name (``self.net`` when ``self`` is there)."""
    return tuple(sorted(m for m in models if not any(m.startswith(o + ".") for o in models if o != m)))


def backward_with(ctx: Context, line: int | None, keyword: str) -> Edit | None:
    """The backward call on ``line`` of the failing function with ``keyword`` added (``retain_graph=True``,
    ``inputs=[...]``); None when the line holds no backward call or already passes it."""
    site = ctx.site
    text = site.text(line) if site is not None and line is not None else None
    new = with_keyword(text, "backward", keyword) if text and ".backward(" in text else None
    return replace_line(ctx, line, new) if new and new != text else None


def insert_lines(ctx: Context, line: int | None, text: str | None, after: bool = False) -> Edit | None:
    """Insert ``text`` before (or after) the statement at ``line`` of the failing function, at its indentation."""
    site = ctx.site
    if site is None or line is None or text is None or not site.holds(line):
        return None
    span = span_of(site, line)
    if span is None:
        return None
    indent = indent_of(site, span[0])
    body = "\n".join(indent + t for t in textwrap.dedent(text).splitlines())
    at = span[1] + 1 if after else span[0]
    return Edit(site.filename, at, at - 1, body)


def statements_text(ctx: Context, lines: tuple[int, ...]) -> str | None:
    """The source of the statements starting at ``lines``, dedented, joined."""
    site = ctx.site
    if site is None:
        return None
    out = []
    for line in lines:
        span = span_of(site, line)
        if span is None:
            return None
        out.append(textwrap.dedent("\n".join(site.text(i) for i in range(span[0], span[1] + 1))))
    return "\n".join(out)


def source_of(filename: str) -> str:
    import linecache

    return "".join(linecache.getlines(filename))


def _read_on(source: str, line: int) -> set[str]:
    """The names the statement at ``line`` of ``source`` reads (they exist there when it runs)."""
    lines = source.splitlines()
    if not 0 < line <= len(lines):
        return set()
    try:
        tree = ast.parse(textwrap.dedent(lines[line - 1]))
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _used_in(source: str, start: int, end: int) -> set[str] | None:
    """The names lines ``start`` to ``end`` of ``source`` read or bind, when they are whole statements
    (they exist there when those lines run); None when the lines do not parse on their own."""
    lines = source.splitlines()
    if not 0 < start <= end <= len(lines):
        return None
    try:
        tree = ast.parse(textwrap.dedent("\n".join(lines[start - 1 : end])))
    except SyntaxError:
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def checked(fix: Fix, ctx: Context) -> Fix:
    """``fix`` with its code set from its edits when :func:`gradlab.edits.check_edits` passes; else a sentence.

    An edit in the failing function is checked against that frame's names; an
    edit elsewhere (an in-place op in a model's ``forward``) may only replace one
    line, using the names that line already reads.
    """
    if not fix.edits:
        return replace(fix, code=None, applicability="sentence")
    site = ctx.site
    files = {e.filename for e in fix.edits}
    if len(files) != 1:
        return replace(fix, code=None, edits=(), applicability="sentence")
    filename = next(iter(files))
    if (
        site is not None
        and filename == site.filename
        and all(site.holds(e.start if not e.inserts else e.start - 1) or site.holds(e.start) for e in fix.edits)
    ):
        source, names = site.source, set(site.names)
    elif (
        site is not None
        and filename == site.filename
        and all(not e.text or site.holds(e.start if not e.inserts else e.start - 1) for e in fix.edits)
    ):
        # a statement taken out of another function of the file (a forward's own write, moved into the loop): what
        # the failing function gets reads its names, a deletion reads none
        source, names = site.source, set(site.names)
    elif (
        site is not None
        and filename == site.filename
        and all(e.inserts and e.text.lstrip().startswith("@") for e in fix.edits)
    ):
        # a decorator put on the failing function (@torch.no_grad()): it reads the function's globals
        source, names = site.source, set(site.names)
    elif all(e.inserts or e.start == e.end for e in fix.edits):
        # one-line rewrites elsewhere (an in-place op in a model's code), and lines put before a statement there (a
        # copy made before a loop): only the names the lines at those places read
        source = site.source if site is not None and filename == site.filename else source_of(filename)
        names = set().union(*(_read_on(source, e.start) for e in fix.edits))
    elif all(not e.inserts for e in fix.edits):
        # whole statements rewritten elsewhere (a helper's loop over fast weights): only the names they use
        source = site.source if site is not None and filename == site.filename else source_of(filename)
        used = [_used_in(source, e.start, e.end) for e in fix.edits]
        if any(u is None for u in used):
            return replace(fix, code=None, edits=(), applicability="sentence")
        names = set().union(*(u for u in used if u is not None))
    else:
        return replace(fix, code=None, edits=(), applicability="sentence")
    if not source or check_edits(source, fix.edits, names) is not None:
        return replace(fix, code=None, edits=(), applicability="sentence")
    code = "\n".join(textwrap.dedent(e.text) for e in fix.edits if e.text)  # a deletion prints nothing
    return replace(fix, code=code)


def _replace_other(site: Site | None, loc: Location, new: str) -> Edit | None:
    source = site.source if site is not None else source_of(loc.filename)
    lines = source.splitlines()
    if not 0 < loc.lineno <= len(lines):
        return None
    text = lines[loc.lineno - 1]
    return Edit(loc.filename, loc.lineno, loc.lineno, text[: len(text) - len(text.lstrip())] + new.strip())


def edit_at(ctx: Context, loc: Location, new: str | None) -> Edit | None:
    """Replace the one line at ``loc`` (of the failing function, or of another function of the user's code)."""
    if new is None or "\n" in new:
        return None
    site = ctx.site
    if site is not None and loc.filename == site.filename:
        return replace_line(ctx, loc.lineno, new) if site.holds(loc.lineno) else _replace_other(site, loc, new)
    return _replace_other(None, loc, new)


def _source_at(ctx: Context, loc: Location) -> str:
    """The source of ``loc``'s file: the failing function's site when it is that file, else the file's lines."""
    site = ctx.site
    return site.source if site is not None and loc.filename == site.filename else source_of(loc.filename)


def whole_statement(ctx: Context, loc: Location) -> tuple[int, int, str] | None:
    """The statement that starts on line ``loc`` and spans several lines (``x /= torch.norm(\n    x, dim=-1)``): its
    first and last line and its text, dedented; None for a statement on one line."""
    source = _source_at(ctx, loc)
    tree = parse(source)
    st = statement_at(tree, loc.lineno) if tree is not None else None
    if st is None or st.lineno != loc.lineno or (st.end_lineno or st.lineno) == st.lineno:
        return None
    end = st.end_lineno or st.lineno
    lines = source.splitlines()[st.lineno - 1 : end]
    return st.lineno, end, textwrap.dedent("\n".join(lines))


def write_edit(ctx: Context, new: str | None) -> Edit | None:
    loc = ctx.write_at
    if loc is None or new is None:
        return None
    whole = whole_statement(ctx, loc)
    if whole is not None:  # the write spans several lines: the rewrite replaces all of them
        text = statement_text_line(ctx, loc)
        indent = text[: len(text) - len(text.lstrip())] if text is not None else ""
        return Edit(loc.filename, whole[0], whole[1], "\n".join(indent + part.strip() for part in new.split("\n")))
    if "\n" in new:  # a rewrite of one line into several (an indexed assignment into a copy)
        text = statement_line(ctx, loc)
        if text is None:
            return None
        indent = text[: len(text) - len(text.lstrip())]
        return Edit(loc.filename, loc.lineno, loc.lineno, "\n".join(indent + part.strip() for part in new.split("\n")))
    site = ctx.site
    if site is not None and loc.filename == site.filename:
        return replace_line(ctx, loc.lineno, new) if site.holds(loc.lineno) else _replace_other(site, loc, new)
    return _replace_other(None, loc, new)


def statement_text_line(ctx: Context, loc: Location) -> str | None:
    """The text of line ``loc`` as it stands (its indentation), from the failing function's source or the file's."""
    lines = _source_at(ctx, loc).splitlines()
    return lines[loc.lineno - 1] if 0 < loc.lineno <= len(lines) else None


def statement_line(ctx: Context, loc: Location, kind: type[ast.stmt] = ast.stmt) -> str | None:
    """The text of line ``loc`` (the failing function's source, or the file's), if it holds one whole statement
    of ``kind``: the line a multi-line edit replaces."""
    text = statement_text_line(ctx, loc)
    if text is None:
        return None
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return None
    return text if len(tree.body) == 1 and isinstance(tree.body[0], kind) else None


def detached_after(ctx: Context, loc: Location, name: str) -> Edit | None:
    """``name = name.detach()`` on a line of its own after the statement at ``loc`` that stores ``name``.

    For a state stored as one element of a tuple target (``out, self.h = self.rnn(x, self.h)``), whose value
    cannot be detached in place; after that statement ``name`` holds a tensor (never the first pass's None).
    """
    return stored_after(ctx, loc, f"{name} = {name}.detach()")


def stored_after(ctx: Context, loc: Location, statement: str) -> Edit | None:
    """``statement`` on a line of its own after the one-line assignment at ``loc`` (of any function of the user's
    code), at its indentation."""
    text = statement_line(ctx, loc, ast.Assign)
    if text is None:
        return None
    indent = text[: len(text) - len(text.lstrip())]
    return Edit(loc.filename, loc.lineno, loc.lineno, f"{text}\n{indent}{statement}")


def unwrapped(site: Site, block: ast.With) -> Edit | None:
    """The ``with`` block's statements in place of the block (one level less indented)."""
    first, last = block.body[0].lineno, block.body[-1].end_lineno or block.body[-1].lineno
    if len(block.items) != 1 or block.end_lineno != last:
        return None
    body = "\n".join(site.text(i) for i in range(first, last + 1))
    indent = indent_of(site, block.lineno)
    text = textwrap.indent(textwrap.dedent(body), indent)
    return Edit(site.filename, block.lineno, last, text)
