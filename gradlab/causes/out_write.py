"""A write through ``out=`` into a tensor autograd saved: found from the saving statement, fixed by dropping ``out=``.

NOTE [A write through out=]
``torch.mv(w, v, out=self.u)``, ``F.normalize(x, out=self.u)``: a function given ``out=``
writes its result into that tensor, in place, and moves its version counter; gradlab's
tracker wraps the in-place methods, not every function's ``out=`` argument, so the write
has no record. A hand-written power iteration does it between forwards: the previous
forward's ``torch.dot(self.u, ...)`` saved ``self.u``, the next power step writes into
it, and the backward finds it at a later version. Found when no write was recorded and a
call of the saving statement's file passes ``out=`` one of the expressions that statement
reads (``self.u``). The fix drops ``out=`` and binds the result to that expression
(``self.u = F.normalize(x)``): the same values, in a new tensor, so what autograd saved is
left as it was. A registered buffer is rebound through the module's ``__setattr__``; a
parameter is not rebound (its optimizer holds the old tensor, and a module refuses a plain
tensor there), so an ``out=`` into what the file makes an ``nn.Parameter``, or into a
``.weight`` or ``.bias``, is left to the other fixes; so is one into a bare name (a helper's
argument: the write is how the helper updates its caller's tensor, which rebinding would
not do).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from ..context import Context
from ..edits import Edit
from ..fixes import Fix, Proposal, edit_at, keeping, source_of
from ..i18n import T, join
from ..location import Location
from ..source import parse, statement_at

if TYPE_CHECKING:
    from ..evidence import Problem

__all__ = ["out_write_context", "out_write_fixes"]


def _read(st: ast.stmt) -> set[str]:
    """The names and attribute chains ``st`` reads (``self.u``, ``v``)."""
    return {
        ast.unparse(n) for n in ast.walk(st) if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load)
    }


def out_write_context(base: Context, p: Problem) -> Context | None:
    """The calls that write through ``out=`` into what the saving statement of ``p`` reads (NOTE [A write through
    out=]), as ``file:line`` in ``extra``; None without any."""
    saved = p.saved_at
    if saved is None or p.writes:
        return None
    tree = parse(source_of(saved.filename))
    st = statement_at(tree, saved.lineno) if tree is not None else None
    if tree is None or st is None:
        return None
    parameters = {  # a parameter rebound to a new tensor would leave its optimizer: not these
        ast.unparse(t)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and ast.unparse(n.value.func).endswith("Parameter")
        for t in n.targets
    }
    read = {
        r
        for r in _read(st) - parameters
        # an attribute (self.u): a bare name may be a function's argument, an alias of the caller's tensor that the
        # write is meant to update; a module's weight or bias is a parameter, which a plain tensor cannot replace
        if "." in r and r.rsplit(".", 1)[-1] not in ("weight", "bias", "data", "grad")
    }
    found = sorted(
        {
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and n.lineno == n.end_lineno
            and any(k.arg == "out" and ast.unparse(k.value) in read for k in n.keywords)
        }
    )
    if not found:
        return None
    extra = {**base.extra, "out_writes": ",".join(f"{saved.filename}:{k}" for k in found)}
    return replace(base, extra=extra)


def _without_out(text: str, tree: ast.Module, line: int) -> str | None:
    """Line ``line`` (``text``) with ``out=`` dropped from its call and the result bound to the out expression."""
    st = statement_at(tree, line)
    if st is None or st.lineno != line or st.end_lineno != line:
        return None
    value = st.value if isinstance(st, (ast.Assign, ast.Expr)) else None
    if not isinstance(value, ast.Call):
        return None
    kw = next((k for k in value.keywords if k.arg == "out"), None)
    if kw is None or kw.end_col_offset is None:
        return None
    out = ast.unparse(kw.value)
    raw = text.encode("utf-8")
    head = raw[: kw.col_offset].rstrip()
    tail = raw[kw.end_col_offset :]
    if head.endswith(b","):
        head = head[:-1]
    elif tail.lstrip().startswith(b","):
        tail = tail.lstrip()[1:].lstrip()
    else:
        return None
    call = (head + tail)[value.col_offset :].decode("utf-8").rstrip()
    indent = text[: len(text) - len(text.lstrip())]
    targets = [ast.unparse(t) for t in st.targets] if isinstance(st, ast.Assign) else []
    if not targets or targets == [out]:
        return f"{indent}{out} = {call}"
    return f"{indent}{' = '.join(targets)} = {out} = {call}"


def out_write_fixes(ctx: Context) -> list[Proposal]:
    """Every ``out=`` write into a saved tensor dropped, the result bound to the same expression (NOTE [A write
    through out=])."""
    items = [x for x in ctx.extra.get("out_writes", "").split(",") if x]
    edits: list[Edit] = []
    for item in items:
        filename, _, line = item.rpartition(":")
        source = source_of(filename)
        tree = parse(source)
        lines = source.splitlines()
        k = int(line)
        new = _without_out(lines[k - 1], tree, k) if tree is not None and 0 < k <= len(lines) else None
        e = edit_at(ctx, Location(filename, k), new) if new is not None else None
        if e is None:
            return []
        edits.append(e)
    if not edits:
        return []
    fix = Fix(
        keeps_forward=True,
        summary=T(
            "drop out= at {where}: it writes the result into the tensor autograd saved, in place; bind the result "
            "to the same name instead, a new tensor with the same values",
            where=join([Location(e.filename, e.start).where for e in edits]),
        ),
        trains=T("the same as intended: the same values, and what autograd saved keeps the ones it saved"),
        edits=tuple(edits),
    )
    return [keeping(ctx, fix)]
