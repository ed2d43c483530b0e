"""An autograd error explained: the record :func:`gradlab.explain` returns, and how it is shown.

An :class:`Explanation` holds what the message says (its kind and parts), the
likely causes and the fixes, as data; where a tracker saw the failure, also the
user's lines that located it (the cut of a graph, the views written to, the
write to a leaf). It is worded when shown (:mod:`gradlab.render`), in the
language in effect then. The messages are decoded in :mod:`gradlab.kinds`.

Example::

    >>> from gradlab import explain
    >>> e = explain("RuntimeError: one of the variables needed for gradient "
    ...             "computation has been modified by an inplace operation: "
    ...             "[torch.FloatTensor [10, 1]], which is output 0 of AsStrided, "
    ...             "is at version 2; expected version 1 instead.")
    >>> e.kind, e.shape, e.output_of, e.expected_version, e.current_version
    ('modified_in_place', (10, 1), 'AsStrided', 1, 2)
"""

from __future__ import annotations

import ast
import html
import linecache
import re
import textwrap
from dataclasses import dataclass, replace

from .activations import ACTIVATIONS, without_inplace_flags
from .codes import CODES, code_for
from .edits import Edit, check_edits
from .fixes import Fix
from .i18n import T, Words, _, _t
from .location import Location
from .render import fix_lines, header, help_lines, numbered, quote
from .rewrite import by_index, op_display, rewrite_in_place, twin_in_expression
from .source import function_of

__all__ = ["Explanation", "Span", "KINDS"]

#: Every value ``Explanation.kind`` can take: the kinds of gradlab.codes.CODES, then "not_autograd".
KINDS: tuple[str, ...] = (*(c.kind for c in CODES), "not_autograd")


@dataclass(frozen=True)
class Span:
    """A located fact of an explanation: a user's line (``at``) and what happened there (``label``).

    ``op`` is the operation on that line to mark under it (``add_``, ``.item()``), when known.
    """

    at: Location
    label: Words
    op: str | None = None


@dataclass(frozen=True)
class Explanation:
    """What an autograd error message says, why it happens, and how to fix it.

    ``kind`` is one of ``KINDS`` and ``code`` its stable code (``GL0002``; None
    for ``"not_autograd"``, whose ``closest`` names the kind whose words the
    message shares, if any). The tensor fields (``dtype`` to
    ``expected_version``) are filled for ``"modified_in_place"`` messages
    that carry them and are ``None`` otherwise; ``output_of``/``output_nr`` also
    for the messages that name a node (multi-view in place, nan in backward);
    ``parameters`` are the parameters a DDP message names, and ``why`` why DDP's
    backward did not reach them, read from the model and the step's graph
    (:func:`gradlab.ddp.explain_ddp`, under ``gradlab run``). ``spans`` are the
    user's lines a tracker located the failure at (the line that cut a graph, the
    write, where a tensor was made), each with what happened there.

    Example::

        >>> from gradlab import explain
        >>> e = explain("Trying to backward through the graph a second time")
        >>> e.kind
        'graph_freed'
        >>> print(e.details())  # doctest: +ELLIPSIS
        error[GL0001 graph freed]
        ...
    """

    kind: str
    summary: Words
    message: str | None = None
    torch_wording: Words | None = None
    dtype: str | None = None
    tensor_type: str | None = None
    device: str | None = None
    shape: tuple[int, ...] | None = None
    nested_shapes: tuple[tuple[int, ...], ...] | None = None
    output_of: str | None = None
    output_nr: int | None = None
    current_version: int | None = None
    expected_version: int | None = None
    anomaly_mode: bool | None = None
    meaning: tuple[Words, ...] = ()
    causes: tuple[Words, ...] = ()
    fixes: tuple[Fix, ...] = ()
    parameters: tuple[str, ...] = ()
    closest: str | None = None
    cut: str | None = None
    cut_at: Location | None = None
    cut_exact: bool = False
    views_op: str | None = None
    views_at: Location | None = None
    write_op: str | None = None
    write_at: Location | None = None
    why: tuple[Words, ...] = ()
    checkpointed: str | None = None
    checkpointed_at: Location | None = None
    spans: tuple[Span, ...] = ()

    def located(self, cut: str, where: Location, exact: bool) -> Explanation:
        """This explanation located at the line that cut the graph (``cut`` is ``.item()``, ``.detach()``, ...).

        ``exact`` says that the cut made the very tensor backward was called on; otherwise it
        is the last cut gradlab saw before the backward.
        """
        causes = tuple(c for c in self.causes if _cut_word(cut) in c) + tuple(
            c for c in self.causes if _cut_word(cut) not in c
        )
        return replace(self, cut=cut, cut_at=where, cut_exact=exact, causes=causes)

    def at_views(
        self,
        op: str,
        made: Location,
        output: int | None,
        write_op: str,
        write: Location | None,
        base_saved: bool = False,
    ) -> Explanation:
        """This multi-view explanation located: ``op`` (``.split()``) made the views at ``made``; ``write_op`` wrote.

        ``output`` is the index of the view written to (None when the write went to a view
        of one of them). The fixes then name the user's own lines. ``base_saved``: the op that
        made the tensor the views come from saved its own output (``exp``, ``tanh``): a write
        into its rows would change what that op's backward reads.
        """
        nr = output if output is not None else self.output_nr
        located = replace(self, views_op=op, views_at=made, write_op=write_op, write_at=write, output_nr=nr)
        return replace(located, fixes=_view_fixes(located, base_saved) or self.fixes)

    def located_spans(self) -> tuple[Span, ...]:
        """Every located fact, in the order a note shows them: the cut, the views, the checkpoint, the write, the rest."""
        found: list[Span] = []
        # a cut the source already located (a span at its line) is not said twice
        if self.cut is not None and self.cut_at is not None and not any(s.at == self.cut_at for s in self.spans):
            if self.cut_exact:
                said = T("cut: {cut} here made the tensor backward was called on, without a graph", cut=self.cut)
            else:
                said = T(
                    "cut: {cut} here is the last place gradlab saw the graph cut before this backward", cut=self.cut
                )
            found.append(Span(self.cut_at, said))
        if self.views_op is not None and self.views_at is not None:
            said = T("views: {op} here returned several views of one tensor", op=self.views_op)
            if self.output_nr is not None:
                said = said + T("; the write went to output {nr}", nr=self.output_nr)
            found.append(Span(self.views_at, said))
        if self.checkpointed is not None and self.checkpointed_at is not None:
            found.append(
                Span(
                    self.checkpointed_at,
                    T("checkpointed: {function}, run again during backward", function=self.checkpointed),
                )
            )
        if self.write_op is not None and self.write_at is not None:
            found.append(
                Span(self.write_at, T("write: {op} here wrote in place to that view", op=op_display(self.write_op)))
            )
        return (*found, *self.spans)

    def _located_lines(self) -> list[str]:
        lines: list[str] = []
        for span in self.located_spans():
            lines += quote(span.at, None, span.label, mark=False)
            if span.at is self.checkpointed_at:
                lines.append(
                    "   = "
                    + _(
                        "which op saved it: torch prints every op of both runs with its line inside"
                        " `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):`"
                    )
                )
        return lines

    @property
    def code(self) -> str | None:
        """The kind's stable code (``GL0001`` ...; ``python -m gradlab explain CODE``), None if not decoded."""
        entry = code_for(self.kind)
        return entry.code if entry is not None else None

    @property
    def writes_since_saved(self) -> int | None:
        """How many in-place writes happened between save and backward."""
        if self.current_version is None or self.expected_version is None:
            return None
        return self.current_version - self.expected_version

    def __str__(self) -> str:
        lines = [_t("{header}: {what}", header=header(self.kind), what=self.summary), *self._located_lines()]
        lines += ["   = " + _t("why: {reason}", reason=reason) for reason in self.why]
        if self.closest is not None:
            lines.append("   = " + _t("closest known kind: {title}", title=_closest_title(self.closest)))
        if self.causes:
            lines.append("   = " + _t("likely cause: {cause}", cause=self.causes[0]))
        if self.fixes:
            lines += help_lines(self.fixes[0])
        if len(self.fixes) > 1 or self.meaning:
            lines.append("   = " + _("more: what each part of the message means, other causes and fixes: .details()"))
        return "\n".join(lines)

    def details(self) -> str:
        """Everything: what each part of the message means, the causes, every fix with what it trains."""
        lines = [header(self.kind), str(self.summary), *self._located_lines()]
        lines += [_t("why: {reason}", reason=reason) for reason in self.why]
        if self.closest is not None:
            lines.append(_t("closest known kind: {title}", title=_closest_title(self.closest)))
        if self.torch_wording:
            lines.append(_t("Wording: {wording}", wording=self.torch_wording))
        if self.meaning:
            lines.append(_("What the message says:"))
            lines += [f"  - {s}" for s in self.meaning]
        if self.causes:
            lines.append(_("Likely causes (most likely first):"))
            lines += [f"  {i}. {s}" for i, s in enumerate(self.causes, 1)]
        if self.fixes:
            lines.append(_("Fixes, by what you want to train:"))
            lines += numbered(self.fixes)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = [
            '<div class="gradlab-explanation">',
            f"<p><b>{esc(header(self.kind))}</b>: {esc(str(self.summary))}</p>",
        ]
        if self.torch_wording:
            parts.append(f"<p><i>{esc(_t('Wording: {wording}', wording=self.torch_wording))}</i></p>")
        for title, items, tag in (
            (_("What the message says:"), tuple(str(m) for m in self.meaning), "ul"),
            (_("Likely causes (most likely first):"), tuple(str(c) for c in self.causes), "ol"),
            (_("Fixes, by what you want to train:"), tuple(" ".join(fix_lines(f)) for f in self.fixes), "ol"),
        ):
            if items:
                rows = "".join(f"<li>{esc(s)}</li>" for s in items)
                parts.append(f"<p>{esc(title)}</p><{tag}>{rows}</{tag}>")
        parts.append("</div>")
        return "".join(parts)


def _view_fixes(e: Explanation, base_saved: bool = False) -> tuple[Fix, ...]:
    """The fixes of a located multi-view write, in the user's lines: the out-of-place write, or clone the views."""
    write, made = e.write_at, e.views_at
    if write is None or e.write_op is None or made is None:
        return ()
    trains = T(
        "the same gradients for every use of the views: they flow through the new tensor into the one that was"
        " split; the split tensor itself keeps its old values (the refused write would have changed them too)"
    )
    fixes: list[Fix] = []
    original = linecache.getline(write.filename, write.lineno).rstrip("\n")
    new = rewrite_in_place(original, e.write_op) if original.strip() else None
    if new is None and original.strip():  # used as a value (f(x, v.clamp_(-20, 2))): its twin, in place of it
        new = twin_in_expression(original, e.write_op)
    edit = None
    if new is not None:
        indent = original[: len(original) - len(original.lstrip())]
        text = "\n".join(indent + line.strip() for line in new.splitlines())
        edit = Edit(write.filename, write.lineno, write.lineno, text)
        source = "".join(linecache.getlines(write.filename))
        names = set(re.findall(r"[A-Za-z_]\w*", original))  # the write ran: every name it reads exists there
        if not source or check_edits(source, [edit], names) is not None:
            edit = None
    where = T(" at {where}", where=write.where)
    flags: tuple[Edit, ...] = ()
    if edit is None and e.write_op in ACTIVATIONS:  # nn.ReLU(inplace=True) called on the view: the flag, removed
        source = "".join(linecache.getlines(write.filename))
        flags = tuple(Edit(write.filename, a, b, t) for a, b, t in without_inplace_flags(source, e.write_op))
    if flags:
        fixes.append(
            Fix(
                summary=T("use the activation without inplace=True (nn.ReLU() rather than nn.ReLU(inplace=True))"),
                trains=trains,
                code="\n".join(line.strip() for f in flags for line in f.text.splitlines()),
                edits=flags,
                applicability="maybe-incorrect",
            )
        )
    elif edit is not None:
        siblings = _sibling_writes(write, e.write_op)
        edits = (edit, *siblings)
        if len(siblings) == 1:
            where = T(
                " at {where}, and of the later write to the other view in the function (line {line})",
                where=write.where,
                line=siblings[0].start,
            )
        elif siblings:
            where = T(
                " at {where}, and of each later write to the views in the function (lines {lines})",
                where=write.where,
                lines=", ".join(str(x.start) for x in siblings),
            )
        fixes.append(
            Fix(
                summary=T("use the out-of-place form of {op}{where}", op=op_display(e.write_op), where=where),
                trains=trains,
                code="\n".join(line.strip() for e in edits for line in e.text.splitlines()),
                edits=edits,
                applicability="maybe-incorrect",
            )
        )
    else:
        fixes.append(
            Fix(
                summary=T("use the out-of-place form of {op}{where}", op=op_display(e.write_op), where=where),
                trains=trains,
            )
        )
    indexed = _write_by_index(e, original) if not base_saved else None
    if indexed is not None:
        fix, first = indexed
        fixes.insert(0 if first else len(fixes), fix)
    fixes.append(
        Fix(
            alternative=True,
            summary=T(
                "clone the views where {op} makes them ({where}: [t.clone() for t in ...]), so that each write goes"
                " to a tensor of its own",
                op=e.views_op,
                where=made.where,
            ),
            trains=trains,
        )
    )
    return tuple(fixes)


#: Tensor methods that return several views of their input (a write into one of them is refused).
_MULTI_VIEWS = frozenset(
    {"unbind", "chunk", "split", "tensor_split", "split_with_sizes", "unsafe_chunk", "unsafe_split"}
)


#: The in-place method an augmented assignment calls, by its operator.
_DUNDERS = {
    getattr(ast, n): f"__i{d}__" for n, d in (("Add", "add"), ("Sub", "sub"), ("Mult", "mul"), ("Div", "truediv"))
}


def _own_write(st: ast.stmt, split: set[str]) -> str | None:
    """The in-place op of ``st`` when it is an augmented assignment to a name of ``split`` (``ys -= hip_y``) or an
    in-place method called on one, alone on its line (``brake.clamp_(min=0.0)``); None otherwise."""
    if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id in split:
        return _DUNDERS.get(type(st.op))
    call = st.value if isinstance(st, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in split
        and call.func.attr.endswith("_")
        and not call.func.attr.endswith("__")
    ):
        return call.func.attr
    return None


# NOTE [Every write to the split's views]
# A function splits a tensor (xs, ys = keypoints.unbind(-1)) and writes to each part by an augmented assignment
# (xs -= hip_x; ys -= hip_y; xs /= torso; ys /= torso), or calls an in-place method on each (throttle.sigmoid_();
# brake.clamp_(min=0.0)). torch refuses the first; with that one line rewritten out of place the next write to the
# other view is refused in turn. Every later such write in the function to a name the split bound is made out of
# place too, each with its own op: each computes the same values into a tensor of its own, which the names then
# hold, so the function returns what the refused code meant.
def _sibling_writes(write: Location, op: str) -> tuple[Edit, ...]:
    """The same refused write later in the function (``hx = [h.squeeze_(0) for h in ...unbind(0)]``, then the same for
    ``cx``): each made out of place too, or the patched run stops at the next one."""
    source = "".join(linecache.getlines(write.filename))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    fn = function_of(tree, write.lineno)
    if fn is None:
        return ()
    split = {  # names the function binds to several views of a tensor (hx = ....unbind(0); a, b = ....split(1))
        name.id
        for st in ast.walk(fn)
        if isinstance(st, ast.Assign)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and st.value.func.attr in _MULTI_VIEWS
        for target in st.targets
        for name in ast.walk(target)
        if isinstance(name, ast.Name)
    }
    edits: list[Edit] = []
    for st in [s for s in ast.walk(fn) if isinstance(s, ast.stmt)]:
        if st.lineno <= write.lineno or st.end_lineno != st.lineno or isinstance(st, (ast.For, ast.While, ast.If)):
            continue
        other = _own_write(st, split)
        if other is not None:
            # xs -= hip_x, then ys -= hip_y; throttle.sigmoid_(), then brake.clamp_(min=0.0): every write to a view
            # the split made, each with its own op (NOTE [Every write to the split's views])
            line = linecache.getline(write.filename, st.lineno).rstrip("\n")
            new = rewrite_in_place(line, other)
            if new is not None and "\n" not in new.strip():
                indent = line[: len(line) - len(line.lstrip())]
                edits.append(Edit(write.filename, st.lineno, st.lineno, indent + new.strip()))
            continue
        writes = [
            n.func
            for n in ast.walk(st)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == op
        ]
        if not writes or not all({x.id for x in ast.walk(a.value) if isinstance(x, ast.Name)} & split for a in writes):
            continue
        line = linecache.getline(write.filename, st.lineno).rstrip("\n")
        new = rewrite_in_place(line, op) or twin_in_expression(line, op)
        if new is None or "\n" in new.strip():
            continue
        indent = line[: len(line) - len(line.lstrip())]
        edits.append(Edit(write.filename, st.lineno, st.lineno, indent + new.strip()))
    return tuple(edits)


def _write_by_index(e: Explanation, written: str) -> tuple[Fix, bool] | None:
    """A loop over a tensor that writes into each item (NOTE [A loop that writes into the rows it iterates]): the
    loop rewritten to index the tensor, so that each write reaches it; first when the function reads the tensor
    after the loop (it returns it, or uses it), as the refused write meant."""
    write, made = e.write_at, e.views_at
    if write is None or made is None or made.filename != write.filename:
        return None
    source = "".join(linecache.getlines(made.filename))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    loop = next((n for n in ast.walk(tree) if isinstance(n, ast.For) and n.lineno == made.lineno), None)
    if loop is None or (loop.iter.end_lineno or loop.lineno) != loop.lineno or not loop.body:
        return None
    if not loop.body[0].lineno <= write.lineno <= (loop.end_lineno or loop.lineno):
        return None
    try:
        statement = ast.parse(written.strip()).body
    except SyntaxError:
        return None
    roots = {n.id for st in statement for n in ast.walk(st) if isinstance(n, ast.Name)}
    read = {n.id for st in statement for n in ast.walk(_value_of(st)) if isinstance(n, ast.Name)}
    fn = next(
        (
            f
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.lineno <= loop.lineno <= (f.end_lineno or 0)
        ),
        tree,
    )
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)
    }
    names = [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
    # the loop's name the statement writes into (row of ``for k, row in enumerate(X): row[k:] = 0``)
    base = _written_root(statement[0]) if len(statement) == 1 else None
    name = base if base in names else names[0] if names else None
    # a write whose value reads the row (r /= r.norm()) overwrites what that read saved: indexing would fail again
    found = by_index(loop, name, used) if name is not None and name in roots and name not in read else None
    if found is None:
        return None
    header, binding, tensor = found
    lines = source.splitlines()
    head, body = lines[loop.lineno - 1], lines[loop.body[0].lineno - 1]
    indent = head[: len(head) - len(head.lstrip())]
    # the tensor iterated is itself a row of an enclosing loop over a tensor (for image in batch: for channel in
    # image): that loop indexes its tensor too, or the inner write reaches a view that cannot be written either
    outer = next(
        (
            f
            for f in ast.walk(fn)
            if isinstance(f, ast.For)
            and f is not loop
            and f.lineno < loop.lineno <= (f.end_lineno or 0)
            and isinstance(f.target, ast.Name)
            and f.target.id == tensor
            and (f.iter.end_lineno or f.lineno) == f.lineno
            and f.body
        ),
        None,
    )
    extra: list[Edit] = []
    if outer is not None:
        taken = used | {n.id for n in ast.walk(ast.parse(header + "\n    pass")) if isinstance(n, ast.Name)}
        again = by_index(outer, tensor, taken)
        if again is not None:
            o_head, o_body = lines[outer.lineno - 1], lines[outer.body[0].lineno - 1]
            o_indent = o_head[: len(o_head) - len(o_head.lstrip())]
            b_indent = o_body[: len(o_body) - len(o_body.lstrip())]
            extra.append(Edit(made.filename, outer.lineno, outer.lineno, f"{o_indent}{again[0]}\n{b_indent}{again[1]}"))
            tensor = again[2]
    # an argument the function returns may itself be one of several views (a clip of a batch iterated by the
    # caller): the writes go into a copy of it, which the function returns (NOTE [A loop that writes into the rows
    # it iterates])
    copied = (
        isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        and tensor in {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        and any(
            isinstance(r, ast.Return) and isinstance(r.value, ast.Name) and r.value.id == tensor for r in ast.walk(fn)
        )
    )
    first = f"{indent}{tensor} = {tensor}.clone()\n" if copied else ""
    if copied and extra:  # the copy goes before the outer loop
        o_head = lines[extra[0].start - 1]
        o_indent = o_head[: len(o_head) - len(o_head.lstrip())]
        extra[0] = replace(extra[0], text=f"{o_indent}{tensor} = {tensor}.clone()\n{extra[0].text}")
        first = ""
    edit = Edit(
        made.filename,
        loop.lineno,
        loop.lineno,
        f"{first}{indent}{header}\n{body[: len(body) - len(body.lstrip())]}{binding}",
    )
    if check_edits(source, [*extra, edit], used) is not None:
        return None
    after = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Name)
        and n.id == tensor
        and isinstance(n.ctx, ast.Load)
        and n.lineno > (loop.end_lineno or 0)
    ]
    fix = Fix(
        summary=T(
            "index {tensor} in the loop at {where} instead of iterating over it: each write then goes into {tensor}, "
            "as the loop means",
            tensor=tensor,
            where=made.where,
        ),
        trains=T(
            "the same as intended: a copy of {tensor} gets the written values and is returned, and gradients flow "
            "through the writes into the tensor passed in, which keeps its values",
            tensor=tensor,
        )
        if copied
        else T(
            "the same as intended: {tensor} gets the written values, and gradients flow through the writes",
            tensor=tensor,
        ),
        code="\n".join(textwrap.dedent(x.text) for x in (*extra, edit)),
        edits=(*extra, edit),
        applicability="machine-applicable" if after else "maybe-incorrect",
    )
    return fix, bool(after)


def _written_root(st: ast.stmt) -> str | None:
    """The name a write statement writes into: ``x`` of ``x[i] = v``, ``x /= v`` or ``x[i:].clamp_(a, b)``."""
    node: ast.AST | None = None
    if isinstance(st, ast.Assign) and len(st.targets) == 1:
        node = st.targets[0]
    elif isinstance(st, ast.AugAssign):
        node = st.target
    elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute):
        node = st.value.func.value
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _value_of(st: ast.stmt) -> ast.AST:
    """What a write statement computes from: the value of ``x /= v``, the arguments of ``x.clamp_(a, b)``."""
    if isinstance(st, (ast.AugAssign, ast.Assign)):
        return st.value
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        return ast.Tuple([*st.value.args, *(k.value for k in st.value.keywords)], ast.Load())
    return st


# NOTE [A loop that writes into the rows it iterates]
# Iterating over a tensor (for b in boxes, zip(boxes, sizes)) unbinds it into views, and
# torch refuses an in-place write to any of them (GL0008). When the loop writes into each
# item, the code means the write to reach the tensor: a clip of each image's boxes, then
# the boxes returned. Indexing the tensor (b = boxes[i]) gives a view of one row that may
# be written in place, and the write reaches it; the out-of-place form would leave the
# tensor unwritten. So that rewrite comes first when the function reads the tensor after
# the loop, and after the out-of-place form otherwise. It is not offered when the write
# reads the row it writes (r /= r.norm(): the norm saved the row), nor when the op that
# made the tensor saved its own output (exp, tanh: the tracker reads it from the tensor's
# node): the backward would then find a saved tensor overwritten (GL0002). When the tensor
# is an argument the function returns (a transform's __call__(clip) over a clip the caller
# got by iterating a batch), it may itself be one of several views: the rewrite first
# copies it (clip = clip.clone()), the writes go into the copy, the function returns it, and
# the gradient flows through the writes into the tensor passed in.


def _cut_word(cut: str) -> str:
    """The word of a cause sentence that names ``cut`` (``.item()`` -> ``item()``)."""
    return {"torch.no_grad()": "no_grad()", "torch.inference_mode()": "inference_mode()"}.get(cut, cut.strip(".")[:8])


def _closest_title(kind: str) -> str:
    entry = code_for(kind)
    return f"{entry.code} {entry.title}" if entry is not None else kind
