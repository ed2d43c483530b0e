"""What to do about an autograd failure, and what each fix trains: gradlab's advice, in one place.

Every text that tells a user how to fix an autograd error is built here:
:class:`gradlab.Diagnosis`, :class:`gradlab.Explanation`, the command line, the
IPython extension, the course's notebooks, playground and cheat sheet render it.

A diagnosis first decides the :data:`Cause` of a failure from what gradlab saw
(who wrote the saved tensor, which backward freed a node, where the models sit in
the graph), then :func:`fixes_for` lists the fixes that fit that cause, the
likeliest intent first. Every :class:`Fix` says in one line what it *trains*:
which loss then sends gradient into which model. A fix that changes what trains
says so; ``retain_graph=True`` is never offered for the in-place error.

The texts speak in the user's names (``n_1``, ``opt_1``, ``loss_2``, ``pred_1``)
when gradlab knows them, from ``names=`` and from the user's own lines, and in
descriptions otherwise (``the model whose weights the step changed``).

Example::

    >>> from gradlab.advice import Context, fixes_for
    >>> fix = fixes_for("inplace_op", Context(tensor="y", op="mul_", code="y.mul_(3)"))[0]
    >>> fix.summary
    'use the out-of-place form of mul_'
    >>> fix.code is None, fix.applicability  # no file to edit: a sentence, never unchecked code
    (True, 'sentence')
"""

from __future__ import annotations

import ast
import re
import textwrap
import typing
from dataclasses import dataclass, field, replace
from typing import Literal

from .edits import Applicability, Edit, check_edits
from .i18n import _, _t
from .location import Location
from .loop import LoopIntent, Site, loop_body_of, statement_at

__all__ = [
    "Cause",
    "CAUSES",
    "Context",
    "Fix",
    "Pitfall",
    "pitfalls",
    "fixes_for",
    "rewrite_in_place",
    "detach_in",
    "cause_sentence",
]

#: Why a backward fails, as gradlab decides it from what it observed.
Cause = Literal[
    "optimizer_step",  # an optimizer step changed a saved weight between two backward calls
    "inplace_op",  # an in-place op in the forward code (recorded by autograd) changed a saved tensor
    "untracked_write",  # a write under no_grad(), through .detach() or to data changed a saved tensor
    "carried_state",  # state carried from one iteration to the next (RNN hidden state, a running total)
    "shared_graph_freed",  # a second backward through a part of the graph an earlier backward freed
    "same_loss_twice",  # the same loss backwarded twice
    "stale_forward",  # a forward computed once, before the loop, reused by every iteration
    "list_never_cleared",  # a list of graph-holding tensors appended to each iteration and never cleared
    "fast_weights_in_place",  # fast weights updated in place inside a loop over them (MAML)
    "step_before_backward",  # the step on a loss's gradient runs between its forward and its backward
    "retained_accumulation",  # a running total of losses backwarded each iteration with retain_graph=True
    "attached_output",  # a loss not meant to train a model (a penalty, D's loss) built on its undetached output
    "unknown",
]
CAUSES: tuple[Cause, ...] = typing.get_args(Cause)


def _cause_sentences() -> dict[Cause, str]:
    return {
        "optimizer_step": _("an optimizer step changed a weight the graph saved, before that graph's backward ran"),
        "inplace_op": _("an in-place operation in the forward code overwrote a tensor autograd saved"),
        "untracked_write": _(
            "a write autograd could not record (under torch.no_grad(), through .detach(), or to data) "
            "overwrote a tensor autograd saved"
        ),
        "carried_state": _("state carried from one iteration to the next keeps the previous iteration's graph"),
        "shared_graph_freed": _("a second backward went through a part of the graph an earlier backward freed"),
        "same_loss_twice": _("the same loss was backwarded twice"),
        "stale_forward": _(
            "a forward computed once, before the loop, is reused by every iteration: the first backward freed its graph"
        ),
        "list_never_cleared": _(
            "a list that each iteration appends graph-holding tensors to is never cleared: the next backward goes "
            "through the earlier iterations' freed graphs"
        ),
        "fast_weights_in_place": _(
            "fast weights are updated in place inside a loop over them: autograd saved them for the gradient that "
            "is still to be taken"
        ),
        "step_before_backward": _(
            "the optimizer step that should use this loss's gradient runs between the loss's forward and its "
            "backward: it steps on the previous iteration's gradient and changes weights this graph saved"
        ),
        "retained_accumulation": _(
            "a running total of the losses is backwarded at every iteration with retain_graph=True: each backward "
            "goes through every earlier iteration's graph again, whose weights a step has changed since"
        ),
        "attached_output": _(
            "a loss your loop does not train this model with (a gradient penalty, a discriminator's loss) is built "
            "on the model's output without .detach(): its backward went through the model's graph and freed it, "
            "and a later loss that trains the model needs that graph"
        ),
        "unknown": _("gradlab cannot tell what changed the tensor (it was not watching when it happened)"),
    }


def cause_sentence(cause: Cause) -> str:
    """One sentence saying what the cause means (in the language of :func:`gradlab.set_language`)."""
    return _cause_sentences()[cause]


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
    """

    summary: str
    trains: str
    code: str | None = None
    intent: str | None = None
    cost: str | None = None
    edits: tuple[Edit, ...] = ()
    applicability: Applicability = "sentence"
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def lines(self) -> list[str]:
        """The fix as text lines: the summary (with its intent), the code, what it trains."""
        head = (
            _t("{intent}: {summary}", intent=self.intent[0].upper() + self.intent[1:], summary=self.summary)
            if self.intent
            else self.summary
        )
        out = [head]
        if self.code:
            out += [f"    {line}" for line in self.code.splitlines()]
        out.append("  " + _t("trains: {what}", what=self.trains))
        if self.cost:
            out.append("  " + _t("cost: {what}", what=self.cost))
        return out


@dataclass(frozen=True)
class Context:
    """What gradlab knows about a failure, in the user's words (each field may be unknown).

    ``tensor``: the saved tensor's name or description. ``model``: the model that
    owns it (``n_1``). ``others``: the other models the failing loss reaches
    (``("n_2",)``). ``loss``: the failing backward's loss (``loss_2``); ``earlier``:
    the loss of the earlier backward (``loss_1``). ``optimizer``: the stepping
    optimizer's variable (``opt_1``) and ``optimizer_class`` its class. ``entry``:
    the variable holding ``model``'s output where it enters the other models
    (``pred_1``), ``entry_line``/``entry_where``: the line that feeds it in.
    ``op``/``code``/``where``: the in-place op and the user's line that ran it.
    ``judge``: True when the stepped model sits between the failing loss and the
    other models (a GAN's discriminator, a critic the actor trains through).
    ``recompute``: the lines that build the failing loss from ``model``'s forward.
    ``carried``: the variable carried across iterations; ``total``: True when it
    is a running total of losses. ``writes_per_step``: versions one step adds.

    The rest place the fixes in the user's file: ``site`` (the code that ran the
    failing line, :class:`gradlab.loop.Site`), ``intent`` (what the code's own
    optimizers do with the failing loss's gradient), ``reach`` (the models the
    failing loss reaches), and the line numbers of the failing backward, the
    earlier backward, the step, the entry, the statements to recompute, the
    carried state, the list never cleared, the stale forward and the fast weights.
    """

    tensor: str | None = None
    model: str | None = None
    others: tuple[str, ...] = ()
    loss: str | None = None
    earlier: str | None = None
    optimizer: str | None = None
    optimizer_class: str | None = None
    entry: str | None = None
    entry_line: str | None = None
    entry_where: str | None = None
    op: str | None = None
    code: str | None = None
    where: str | None = None
    judge: bool = False
    recompute: tuple[str, ...] = ()
    carried: str | None = None
    total: bool = False
    step_between: bool | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # -- where in the user's code (line numbers of ``site``), for fixes as checked edits -------------------
    site: Site | None = None
    intent: LoopIntent | None = None
    reach: tuple[str, ...] = ()
    backward_line: int | None = None
    earlier_line: int | None = None
    step_line: int | None = None
    entry_lineno: int | None = None
    write_at: Location | None = None
    recompute_lines: tuple[int, ...] = ()
    carried_all: tuple[str, ...] = ()
    carried_kind: str | None = None
    carried_none: bool = False
    recurrent: bool = False  # the carried state goes back into the module call that returns it (an RNN's h)
    kept_at: Location | None = None  # the statement that stores the carried state for the next iteration
    target: str | None = None  # a model no optimizer holds, whose output the loss uses as a target
    target_line: int | None = None  # the statement that runs that model's forward
    grad_off: str | None = None  # the frame's name for torch.no_grad (``torch.no_grad``)
    copy_at: Location | None = None  # the line that saved the written tensor, reading it by ``copy_of``
    copy_of: str | None = None  # the expression the write writes through (``self.running_std``)
    snapshot: str | None = None  # a tensor bound before the loop whose graph the loop reuses
    snapshot_line: int | None = None  # the loop statement before which it is detached
    intent_note: str | None = None  # the record and the source disagree on the intent (the fixes follow the record)
    buffer: str | None = None
    buffers: tuple[str, ...] = ()
    stale_line: int | None = None
    stale_end: int | None = None
    stale_before: int | None = None
    fast: str | None = None
    fast_lines: tuple[int, int] | None = None
    fast_text: str | None = None
    other_claims: tuple[tuple[str, tuple[str, ...]], ...] = ()  # what the loop's other losses train, unchanged
    detach_lines: tuple[int, ...] = ()  # the statements building ``earlier`` that read ``entry`` undetached

    # -- the user's names, or descriptions ----------------------------------------------------------
    @property
    def m(self) -> str:
        return self.model or _("the upstream model")

    @property
    def o(self) -> str:
        return _(" and ").join(self.others) if self.others else _("the downstream model")

    @property
    def l(self) -> str:  # noqa: E743 - the failing loss
        return self.loss or _("the failing loss")

    @property
    def e(self) -> str:
        return self.earlier or _("the earlier loss")

    @property
    def opt(self) -> str:
        return self.optimizer or "optimizer"

    @property
    def step(self) -> str:
        return f"{self.optimizer}.step()" if self.optimizer else _("the optimizer step")

    @property
    def zero(self) -> str:
        return f"{self.optimizer}.zero_grad()" if self.optimizer else _("the optimizer's zero_grad()")


# -- code rewriting ------------------------------------------------------------------------------------

_AUGMENTED = {
    "__iadd__": "+",
    "__isub__": "-",
    "__imul__": "*",
    "__itruediv__": "/",
    "__ifloordiv__": "//",
    "__imod__": "%",
    "__ipow__": "**",
    "__imatmul__": "@",
    "__iand__": "&",
    "__ior__": "|",
    "__ixor__": "^",
}
_ACTIVATIONS = {
    "relu_",
    "leaky_relu_",
    "elu_",
    "hardtanh_",
    "relu6_",
    "silu_",
    "hardsigmoid_",
    "hardswish_",
    "mish_",
    "gelu_",
    "threshold_",
    "dropout_",
    "selu_",
    "celu_",
    "rrelu_with_noise_",
}


def rewrite_in_place(code: str, op: str) -> str | None:
    """The out-of-place form of one line that ran the in-place ``op``, or None if gradlab cannot write it.

    Example::

        >>> rewrite_in_place("y.mul_(3)", "mul_")
        'y = y.mul(3)'
        >>> rewrite_in_place("h += x  # step", "__iadd__")
        'h = h + x  # step'
        >>> rewrite_in_place("act = nn.ReLU(inplace=True)", "relu_")
        'act = nn.ReLU()'
    """
    body, comment = _split_comment(code)
    if op in _AUGMENTED:
        m = re.fullmatch(r"(\s*)([\w.\[\]]+)\s*" + re.escape(_AUGMENTED[op]) + r"=\s*(.+?)\s*", body)
        if m:
            return f"{m[1]}{m[2]} = {m[2]} {_AUGMENTED[op]} {m[3]}{comment}"
        return None
    if op == "__setitem__":
        # into a copy, the index and the value read from the original (which keeps what autograd saved), then
        # rebound: the same values and gradients, also when the value reads the tensor (z[:, h:] = z[:, h:] * s)
        m = re.fullmatch(r"(\s*)([A-Za-z_]\w*)\[(.+)\]\s*=\s*(.+?)\s*", body)
        if m:
            copy = f"{m[2]}_copy"
            return f"{m[1]}{copy} = {m[2]}.clone()\n{m[1]}{copy}[{m[3]}] = {m[4]}{comment}\n{m[1]}{m[2]} = {copy}"
        return None
    if "inplace=True" in body:
        return re.sub(r",?\s*inplace=True", "", body).replace("(, ", "(") + comment
    if op in _ACTIVATIONS:
        return None
    m = re.fullmatch(r"(\s*)(?:([\w.]+)\s*=\s*)?([\w.\[\]]+)\." + re.escape(op) + r"\((.*)\)\s*", body)
    if m:
        target = m[2] or m[3]
        return f"{m[1]}{target} = {m[3]}.{op[:-1]}({m[4]}){comment}"
    return None


def detach_in(line: str, name: str, into: tuple[str, ...] = ()) -> str | None:
    """``line`` with a use of ``name`` on its right-hand side detached, or None.

    With ``into`` (the models ``name`` must be cut off from) and a call of one of
    them on the line, the use detached is the first one inside such a call
    (``n_2(pred_1)``), and None when there is none: detaching another use (the
    upstream model's own loss, ``criterion(y, pred_1)``) would stop the wrong
    gradient. Otherwise, the first use.

    Example::

        >>> detach_in("pred_2 = n_2(pred_1)", "pred_1")
        'pred_2 = n_2(pred_1.detach())'
        >>> detach_in("out, hidden = rnn(x, hidden)", "hidden")
        'out, hidden = rnn(x, hidden.detach())'
        >>> detach_in("l_1, l_2 = crit(y, pred_1), crit(y, n_2(pred_1))", "pred_1", into=("n_2",))
        'l_1, l_2 = crit(y, pred_1), crit(y, n_2(pred_1.detach()))'
        >>> detach_in("l = crit(y, pred_1) + n_2(x).sum()", "pred_1", into=("n_2",)) is None
        True
    """
    body, comment = _split_comment(line)
    eq = _assignment(body)
    start = eq + 1 if eq is not None else 0
    uses = list(re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w(])").finditer(body, start))
    spans = _call_spans(body, into) if into else []
    if spans:  # the line calls a model it must be cut off from: detach the use that goes in there
        uses = [m for m in uses if any(a <= m.start() < b for a, b in spans)]
    if not uses:
        return None
    m = uses[0]
    return body[: m.end()] + ".detach()" + body[m.end() :] + comment


def _call_spans(body: str, callees: tuple[str, ...]) -> list[tuple[int, int]]:
    """The argument spans ``(start, end)`` of every call of one of ``callees`` in ``body`` (``n_2(...)``)."""
    spans: list[tuple[int, int]] = []
    # self.head(...) and model.head(...) call the model named head too.
    pattern = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?:" + "|".join(re.escape(c) for c in callees) + r")\s*\(")
    for m in pattern.finditer(body):
        depth, i = 1, m.end()
        while i < len(body) and depth:
            depth += {"(": 1, ")": -1}.get(body[i], 0)
            i += 1
        spans.append((m.end(), i))
    return spans


def _assignment(body: str) -> int | None:
    """The index of the ``=`` of a plain assignment in ``body``, if it is one."""
    depth = 0
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "=" and depth == 0:
            before, after = body[i - 1 : i], body[i + 1 : i + 2]
            if before not in "=!<>+-*/%&|^@" and after != "=":
                return i
    return None


def _split_comment(code: str) -> tuple[str, str]:
    m = re.search(r"\s+#.*$", code)
    return (code[: m.start()], code[m.start() :]) if m else (code.rstrip(), "")


# -- fixes as edits of the user's file ----------------------------------------------------------------------


def _indent_of(site: Site, line: int) -> str:
    text = site.text(line)
    return text[: len(text) - len(text.lstrip())]


def _statement_span(site: Site, line: int) -> tuple[int, int] | None:
    """The first and last line of the statement at ``line`` (None when the file does not parse)."""
    tree = site.tree()
    st = statement_at(tree, line) if tree is not None else None
    return (st.lineno, st.end_lineno or st.lineno) if st is not None else None


def _replace(ctx: Context, line: int | None, new: str | None) -> Edit | None:
    """Replace the one-line statement at ``line`` of the failing function with ``new`` (its indentation kept)."""
    site = ctx.site
    if site is None or line is None or new is None or not site.holds(line):
        return None
    if _statement_span(site, line) != (line, line):
        return None
    return Edit(site.filename, line, line, _indent_of(site, line) + new.strip())


def _insert(ctx: Context, line: int | None, text: str | None, after: bool = False) -> Edit | None:
    """Insert ``text`` before (or after) the statement at ``line`` of the failing function, at its indentation."""
    site = ctx.site
    if site is None or line is None or text is None or not site.holds(line):
        return None
    span = _statement_span(site, line)
    if span is None:
        return None
    indent = _indent_of(site, span[0])
    body = "\n".join(indent + t for t in textwrap.dedent(text).splitlines())
    at = span[1] + 1 if after else span[0]
    return Edit(site.filename, at, at - 1, body)


def _statements(ctx: Context, lines: tuple[int, ...]) -> str | None:
    """The source of the statements starting at ``lines``, dedented, joined."""
    site = ctx.site
    if site is None:
        return None
    out = []
    for line in lines:
        span = _statement_span(site, line)
        if span is None:
            return None
        out.append(textwrap.dedent("\n".join(site.text(i) for i in range(span[0], span[1] + 1))))
    return "\n".join(out)


def _with_keyword(code: str, method: str, keyword: str) -> str | None:
    """``code`` with ``keyword`` added to its ``X.method(...)`` call: ``loss.backward()`` -> ``loss.backward(k=v)``."""
    body = code.strip()
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
    ]
    call = calls[0] if len(calls) == 1 else None
    if call is None or call.end_lineno != 1 or call.end_col_offset is None:
        return None
    name = keyword.split("=", 1)[0]
    if any(k.arg == name for k in call.keywords):
        return None
    end = call.end_col_offset - 1  # the closing parenthesis
    sep = ", " if call.args or call.keywords else ""
    return body[:end] + sep + keyword + body[end:]


def _inputs(models: tuple[str, ...]) -> str | None:
    if not models:
        return None
    if len(models) == 1:
        return f"inputs=list({models[0]}.parameters())"
    return f"inputs=[p for m in ({', '.join(models)},) for p in m.parameters()]"


def _source_of(filename: str) -> str:
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
    elif all(not e.inserts and e.start == e.end for e in fix.edits):
        # one-line rewrites elsewhere (an in-place op in a model's code): only the names those lines read
        source = site.source if site is not None and filename == site.filename else _source_of(filename)
        names = set().union(*(_read_on(source, e.start) for e in fix.edits))
    elif all(not e.inserts for e in fix.edits):
        # whole statements rewritten elsewhere (a helper's loop over fast weights): only the names they use
        source = site.source if site is not None and filename == site.filename else _source_of(filename)
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


def _claim(ctx: Context, modules: set[str] | tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not ctx.loss or not ctx.reach:
        return ()
    return ((ctx.loss, tuple(sorted(modules))),)


@dataclass(frozen=True)
class _Proposal:
    """A fix before it is judged: the models its loss reaches after it (``reach``), its own claim otherwise."""

    fix: Fix
    reach: tuple[str, ...] | None  # None: the fix changes the loop's order, so its own claim stands
    keeps: bool  # True: it keeps what the failing code trains (an exact rewrite)
    describe: bool = False  # True: its trains text is written from the loop's intent once it is judged


def _keeping(ctx: Context, fix: Fix) -> _Proposal:
    """A fix that keeps what the failing code trains: its loss reaches what it reached (its claim says so)."""
    return _Proposal(replace(fix, claims=_claim(ctx, ctx.reach)), ctx.reach, True)


def _judged(proposals: list[_Proposal], ctx: Context) -> tuple[Fix, ...]:
    """Each fix checked, its claims and applicability set against the code's intent; fitting fixes first.

    With the loop's intent known (:mod:`gradlab.loop`), a fix's claim is the models its loss reaches after
    it whose optimizer steps on that loss; a fix that stops the loss from training such a model says so and
    is never first.
    """
    intent = ctx.intent
    intended = set(intent.trained) & set(ctx.reach) if intent is not None and intent.known else None
    fitting: list[Fix] = []
    rest: list[Fix] = []
    for prop in proposals:
        fix = checked(prop.fix, ctx)
        if intent is None or intended is None or not ctx.loss or not ctx.reach:
            sure: Applicability = "machine-applicable" if prop.keeps else "maybe-incorrect"
            fitting.append(replace(fix, applicability=sure if fix.code else "sentence"))
            continue
        claimed = (
            set(prop.reach) & set(intent.trained) if prop.reach is not None else set(dict(fix.claims).get(ctx.loss, ()))
        )
        given_up = sorted(intended - claimed)
        extra = sorted(claimed - intended)
        fix = replace(fix, claims=(*_claim(ctx, claimed), *ctx.other_claims))
        if given_up:
            fix = replace(
                fix,
                trains=_gives_up(ctx, claimed, given_up),
                applicability="maybe-incorrect" if fix.code else "sentence",
            )
            rest.append(fix)
        elif extra:
            rest.append(replace(fix, applicability="maybe-incorrect" if fix.code else "sentence"))
        else:
            story_zeroes = (
                ctx.model is not None
                and "zero_grad()" in fix.trains
                and (intent.zeroer(ctx.model) is None or intent.zeroed_by_module(ctx.model))
            )
            if prop.describe or (prop.reach is not None and story_zeroes):
                # the loop's own words, where the story's (a zero_grad() the code does not have) would be false
                fix = replace(fix, trains=_trains_text(ctx, claimed))
            fitting.append(replace(fix, applicability="machine-applicable" if fix.code else "sentence"))
    ordered = _standing_first((*fitting, *rest))
    if ctx.intent_note:  # which reading each fix assumes: what ran, not what the source reads
        return tuple(replace(f, trains=f"{f.trains} ({ctx.intent_note})") for f in ordered)
    return ordered


def _standing_first(fixes: tuple[Fix, ...]) -> tuple[Fix, ...]:
    """The first fix worded on its own: an alternative ("or keep two backward calls ...") judged first loses its "or"."""
    marker = _("or ")
    if fixes and fixes[0].summary.startswith(marker):
        return (replace(fixes[0], summary=fixes[0].summary[len(marker) :]), *fixes[1:])
    return fixes


def _trains_text(ctx: Context, claimed: set[str]) -> str:
    intent = ctx.intent
    trained = _(" and ").join(sorted(claimed))
    dropped = [m for m in ctx.reach if m not in claimed]
    if intent is not None and dropped:
        cleared = []
        for m in dropped:
            zero = intent.zeroer(m)
            if zero and intent.zeroed_by_module(m):
                cleared.append(_t("{module}.zero_grad() clears it before it is stepped", module=zero))
            elif zero:
                cleared.append(_t("{optimizer}.zero_grad() clears it before {optimizer}.step()", optimizer=zero))
            else:
                cleared.append(_t("no optimizer steps {model} on it", model=m))
        return _t(
            "{loss} trains {models}, as your loop's optimizers ask; its gradient for {others} is not used ({why})",
            loss=ctx.l,
            models=trained,
            others=_(" and ").join(dropped),
            why=", ".join(cleared),
        )
    return _t("{loss} trains {models}, as your loop's optimizers ask", loss=ctx.l, models=trained)


def _gives_up(ctx: Context, claimed: set[str], given_up: list[str]) -> str:
    intent = ctx.intent
    stepping = {intent.stepper(m) or "" for m in given_up} - {""} if intent is not None else set()
    steps = ", ".join(f"{opt}.step()" for opt in sorted(stepping))
    lost = _(" and ").join(given_up)
    if claimed:
        head = _t("{loss} trains {models} only.", loss=ctx.l, models=_(" and ").join(sorted(claimed)))
    else:
        head = _t("{loss} trains nothing.", loss=ctx.l)
    return (
        head
        + " "
        + _t(
            "It gives up what your loop asks for: {steps} follows {loss}.backward(), so your loop means {lost} to "
            "learn from {loss}; with this fix {loss} no longer trains {lost}",
            loss=ctx.l,
            steps=steps or _("an optimizer step"),
            lost=lost,
        )
    )


# -- fixes per cause -------------------------------------------------------------------------------------


def _hatch(ctx: Context) -> _Proposal:
    return _Proposal(
        Fix(
            summary=_(
                "Or run the loop as written inside a `with torch.autograd.graph.allow_mutation_on_saved_tensors():` "
                "block: autograd keeps a copy of each saved tensor before it is modified in place"
            ),
            trains=_t(
                "what the code says: {loss} sends gradient into {model}, computed with {model}'s weights from "
                "before {step}; in a loop whose {zero} runs before the next step, that gradient is never used (the "
                "same training as detaching)",
                loss=ctx.l,
                model=ctx.m,
                step=ctx.step,
                zero=ctx.zero,
            ),
            cost=_("a copy of every saved tensor that is modified in place (memory and time)"),
            claims=_claim(ctx, tuple(ctx.others)),
        ),
        ctx.reach,
        False,
    )


def _same_as_failing(ctx: Context) -> str:
    return _t(
        "{loss} trains {others} only; {model} learns from {earlier} only: the training your loop would do if it "
        "ran, since {loss}'s gradient for {model} would arrive after {step}, too late for that step (and "
        "{zero} before the next step discards it)",
        loss=ctx.l,
        others=ctx.o,
        model=ctx.m,
        earlier=ctx.e,
        step=ctx.step,
        zero=ctx.zero,
    )


def _edits(*edits: Edit | None) -> tuple[Edit, ...]:
    return () if any(e is None for e in edits) else tuple(e for e in edits if e is not None)


def _recompute(ctx: Context) -> _Proposal | None:
    """Run the stale forward statements again right after the step, so the loss is built from the new weights."""
    if not ctx.recompute_lines or ctx.step_line is None:
        return None
    text = _statements(ctx, ctx.recompute_lines)
    edit = _insert(ctx, ctx.step_line, text, after=True) if text else None
    if edit is None:
        return None
    keep = _retain_for(ctx, text) if text else None
    what = (
        ", ".join(ctx.site.text(line).strip().split("=")[0].strip() for line in ctx.recompute_lines) if ctx.site else ""
    )
    return _Proposal(
        Fix(
            summary=_t(
                "recompute {what} after {step}, so that {loss} is built from the stepped weights",
                what=what,
                step=ctx.step,
                loss=ctx.l,
            )
            if keep is None
            else _t(
                "recompute {what} after {step}, so that {loss} is built from the stepped weights, and keep the graph "
                "of {earlier}.backward() (retain_graph=True): {loss} still goes through the part of it no step changed",
                what=what,
                step=ctx.step,
                loss=ctx.l,
                earlier=ctx.e,
            ),
            trains=_t("{loss} trains what it reaches, through the updated weights", loss=ctx.l),
            edits=(edit,) if keep is None else tuple(sorted((edit, keep), key=lambda e: e.start)),
            claims=_claim(ctx, ctx.reach),
        ),
        ctx.reach,
        False,
        describe=True,
    )


def _retain_for(ctx: Context, text: str) -> Edit | None:
    """``retain_graph=True`` on the earlier backward when the recomputed ``text`` reads a tensor of the frame
    that still has a graph (``z`` from the encoder): the earlier backward freed that part, the failing loss
    goes through it again. None when nothing needs keeping (or the earlier backward keeps its graph already)."""
    site = ctx.site
    if site is None or ctx.earlier_line is None:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
    if not read & set(ctx.extra.get("graph_names", "").split()):
        return None
    return _replace(ctx, ctx.earlier_line, _with_keyword(site.text(ctx.earlier_line), "backward", "retain_graph=True"))


def _sum(ctx: Context, others: tuple[str, ...]) -> _Proposal:
    """One backward of the sum, then every step: the other intent, where the loss also trains the model."""
    return _Proposal(
        Fix(
            intent=_t("if {loss} should also train {model}", loss=ctx.l, model=ctx.m),
            summary=_t(
                "one backward of the sum, then the steps: zero every optimizer, backward ({earlier} + {loss}) "
                "once, then step every optimizer",
                earlier=ctx.e,
                loss=ctx.l,
            ),
            trains=_t(
                "{earlier} and {loss} both train {model}, and {loss} trains {others}: a different training from "
                "the failing code's, where {model} followed {earlier} only",
                earlier=ctx.e,
                loss=ctx.l,
                model=ctx.m,
                others=ctx.o,
            ),
            claims=_claim(ctx, (*others, *([ctx.model] if ctx.model else []))),
        ),
        None,
        False,
    )


def _chained(ctx: Context, freed: bool) -> list[_Proposal]:
    """An upstream model's output feeds the failing loss's models (two chained networks, actor-critic)."""
    detach_edit = None
    if ctx.entry and ctx.entry_lineno is not None and ctx.site is not None:
        line = ctx.site.text(ctx.entry_lineno).strip()
        detach_edit = _replace(ctx, ctx.entry_lineno, detach_in(line, ctx.entry, into=ctx.others))
    where = _t(" (at {where})", where=ctx.entry_where) if ctx.entry_where and detach_edit else ""
    entry = _t(": feed in {entry}.detach(){where}", entry=ctx.entry, where=where) if ctx.entry else ""
    if ctx.optimizer or not freed:
        trains_same = _same_as_failing(ctx)
    else:
        trains_same = _t(
            "{loss} trains {others} only; {model} learns from {earlier} only",
            loss=ctx.l,
            others=ctx.o,
            model=ctx.m,
            earlier=ctx.e,
        )
    inputs = _inputs(ctx.others)
    inputs_edit = None
    if inputs and ctx.site is not None and ctx.backward_line is not None:
        inputs_edit = _replace(
            ctx, ctx.backward_line, _with_keyword(ctx.site.text(ctx.backward_line), "backward", inputs)
        )
    others = tuple(ctx.others)
    proposals = [
        _Proposal(
            Fix(
                intent=_t("if {loss} should not train {model}", loss=ctx.l, model=ctx.m),
                summary=_t(
                    "detach {model}'s output where it enters {others}{entry}", model=ctx.m, others=ctx.o, entry=entry
                ),
                trains=trains_same,
                edits=_edits(detach_edit),
                claims=_claim(ctx, others),
            ),
            others,
            False,
        ),
        _Proposal(
            Fix(
                intent=_("the same, keeping the order and the graph"),
                summary=_t("backward {loss} into {others}'s parameters only", loss=ctx.l, others=ctx.o),
                trains=_t("the same as detaching: {loss} trains {others} only", loss=ctx.l, others=ctx.o),
                edits=_edits(inputs_edit),
                claims=_claim(ctx, others),
            ),
            others,
            False,
        ),
    ]
    if not others and ctx.model is not None:
        # a known model and no downstream one (one model, two losses on its outputs): "detach where it enters" has nothing to
        # enter, and detaching one of several outputs the loss reads would not stop it training the model
        proposals = []
    again = _recompute(ctx)
    if again is not None:
        proposals.append(again)
    if ctx.intent is None or ctx.model not in ctx.intent.trained:  # its premise: the loop does not train it
        proposals.append(_sum(ctx, others))
    if freed and ctx.step_between is False:
        retain_edit = None
        if ctx.site is not None and ctx.earlier_line is not None:
            retain_edit = _replace(
                ctx, ctx.earlier_line, _with_keyword(ctx.site.text(ctx.earlier_line), "backward", "retain_graph=True")
            )
        proposals.append(
            _Proposal(
                Fix(
                    summary=_t(
                        "or keep two backward calls: {earlier}.backward(retain_graph=True), then {loss}.backward(), "
                        "and only then any optimizer step",
                        earlier=ctx.e,
                        loss=ctx.l,
                    ),
                    trains=_t(
                        "like the sum: {earlier} and {loss} both train {model}", earlier=ctx.e, loss=ctx.l, model=ctx.m
                    ),
                    edits=_edits(retain_edit),
                    claims=_claim(ctx, ctx.reach),
                ),
                ctx.reach,
                False,
            )
        )
    elif not freed:
        proposals.append(_hatch(ctx))
    return proposals


def _step_moved_after(ctx: Context, keyword: str) -> tuple[Edit | None, Edit | None]:
    """Delete the step's line and put it right after the failing backward, given ``keyword`` (``inputs=...``)."""
    site, step, back = ctx.site, ctx.step_line, ctx.backward_line
    if site is None or step is None or back is None or not (step < back and site.holds(step)):
        return None, None
    if _statement_span(site, step) != (step, step):
        return None, None
    call = _with_keyword(site.text(back), "backward", keyword)
    moved = _replace(ctx, back, call)
    if moved is None:
        return None, None
    indent = _indent_of(site, back)
    both = Edit(moved.filename, back, back, f"{moved.text}\n{indent}{site.text(step).strip()}")
    return Edit(site.filename, step, step, ""), both


def _judge(ctx: Context, freed: bool) -> list[_Proposal]:
    """The stepped model sits between the failing loss and the models it trains (GAN discriminator)."""
    edit = None
    if ctx.recompute_lines and ctx.step_line is not None:
        text = _statements(ctx, ctx.recompute_lines)
        edit = _insert(ctx, ctx.step_line, text, after=True) if text else None
    others = tuple(ctx.others)
    inputs = _inputs(ctx.others) if len(ctx.others) == 1 else None
    # the two readings of the user's loop (G against D after its step, or before it): each fix says which
    two = bool(ctx.site is not None and ctx.loss and ctx.model and ctx.others)
    proposals = [
        _Proposal(
            Fix(
                intent=_t(
                    "if {loss} should train {others} against {model} as {step} left it",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    step=ctx.step,
                )
                if two
                else None,
                summary=_t(
                    "recompute {model}'s forward after {step}, and {loss} from it",
                    model=ctx.m,
                    step=ctx.step,
                    loss=ctx.l,
                ),
                trains=_t(
                    "{loss} trains {others} through the updated {model} (the usual GAN order); {model} learns from "
                    "{earlier} only, since {zero} clears what {loss} leaves in {model}'s .grad",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    earlier=ctx.e,
                    zero=ctx.zero,
                ),
                edits=_edits(edit),
                claims=_claim(ctx, others),
            ),
            ctx.reach,
            False,
            describe=True,  # with the loop's intent known, its trains line is read from the loop, not the GAN story
        ),
        _Proposal(
            Fix(
                intent=_t(
                    "if {loss} should train {others} against {model} as it was before {step}",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                    step=ctx.step,
                )
                if two
                else None,
                edits=_edits(*_step_moved_after(ctx, inputs)) if inputs else (),
                summary=_t(
                    "move {step} after {loss}.backward(), and backward {loss} into {others}'s parameters only "
                    "({inputs})",
                    loss=ctx.l,
                    step=ctx.step,
                    others=ctx.o,
                    inputs=inputs or "",
                )
                if inputs and two
                else _t(
                    "or move {loss}.backward({inputs}) before {step}",
                    loss=ctx.l,
                    step=ctx.step,
                    inputs=inputs or "",
                )
                if inputs
                else _t(
                    "or backward {loss} before {step}, into {others}'s parameters only",
                    loss=ctx.l,
                    step=ctx.step,
                    others=ctx.o,
                ),
                trains=_t(
                    "{loss} trains {others} through {model} as it was before its step; {model}'s gradient is untouched",
                    loss=ctx.l,
                    others=ctx.o,
                    model=ctx.m,
                ),
                claims=_claim(ctx, others),
            ),
            others,
            False,
        ),
    ]
    if not freed:
        proposals.append(_hatch(ctx))
    return proposals


_OP_NAMES = {k: f"{v}=" for k, v in _AUGMENTED.items()}


def _write_edit(ctx: Context, new: str | None) -> Edit | None:
    loc = ctx.write_at
    if loc is None or new is None:
        return None
    if "\n" in new:  # a rewrite of one line into several (an indexed assignment into a copy)
        text = _statement_line(ctx, loc)
        if text is None:
            return None
        indent = text[: len(text) - len(text.lstrip())]
        return Edit(loc.filename, loc.lineno, loc.lineno, "\n".join(indent + part.strip() for part in new.split("\n")))
    site = ctx.site
    if site is not None and loc.filename == site.filename:
        return _replace(ctx, loc.lineno, new) if site.holds(loc.lineno) else _replace_other(site, loc, new)
    return _replace_other(None, loc, new)


def _replace_other(site: Site | None, loc: Location, new: str) -> Edit | None:
    source = site.source if site is not None else _source_of(loc.filename)
    lines = source.splitlines()
    if not 0 < loc.lineno <= len(lines):
        return None
    text = lines[loc.lineno - 1]
    return Edit(loc.filename, loc.lineno, loc.lineno, text[: len(text) - len(text.lstrip())] + new.strip())


_ACTIVATION_NAMES = {
    "relu_": ("ReLU", "relu"),
    "leaky_relu_": ("LeakyReLU", "leaky_relu"),
    "elu_": ("ELU", "elu"),
    "hardtanh_": ("Hardtanh", "hardtanh", "ReLU6", "relu6"),
    "silu_": ("SiLU", "silu"),
    "hardsigmoid_": ("Hardsigmoid", "hardsigmoid"),
    "hardswish_": ("Hardswish", "hardswish"),
    "mish_": ("Mish", "mish"),
    "threshold_": ("Threshold", "threshold"),
    "dropout_": ("Dropout", "dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "alpha_dropout"),
    "selu_": ("SELU", "selu"),
    "celu_": ("CELU", "celu"),
    "rrelu_with_noise_": ("RReLU", "rrelu"),
}


def _inplace_flags(ctx: Context) -> tuple[Edit, ...]:
    """Every ``inplace=True`` of the activation ``ctx.op`` in the file that ran it, removed (an exact rewrite:
    the out-of-place activation computes the same values and gradients)."""
    names = _ACTIVATION_NAMES.get(ctx.op or "")
    loc = ctx.write_at
    site = ctx.site
    if names is None or loc is None:
        return ()
    filename = site.filename if site is not None else loc.filename
    source = site.source if site is not None else _source_of(filename)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    lines = source.splitlines()
    found = sorted(
        {
            k.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) in names
            for k in n.keywords
            if k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
        }
    )
    edits = []
    for i in found:
        new = re.sub(r",?\s*inplace\s*=\s*True", "", lines[i - 1], count=1).replace("(, ", "(")
        edits.append(Edit(filename, i, i, new))
    return tuple(edits)


def _in_place(ctx: Context) -> list[_Proposal]:
    rewritten = rewrite_in_place(ctx.code, ctx.op) if ctx.code and ctx.op else None
    flags = _inplace_flags(ctx) if ctx.op in _ACTIVATIONS and not (rewritten and "inplace" in (ctx.code or "")) else ()
    where = _t(" at {where}", where=ctx.where) if ctx.where else ""
    op = _OP_NAMES.get(ctx.op, ctx.op) if ctx.op else _("the in-place op")
    if ctx.op in _ACTIVATIONS:
        summary = _("use the activation without inplace=True (nn.ReLU() rather than nn.ReLU(inplace=True))")
    elif ctx.op == "__setitem__":
        summary = _t("write the indexed assignment into a copy and rebind the name{where}", where=where)
    else:
        summary = _t("use the out-of-place form of {op}{where}", op=op, where=where)
    tensor = ctx.tensor or _("the tensor")
    proposals = [
        _keeping(
            ctx,
            Fix(
                summary=summary,
                trains=_t(
                    "the same as intended: nothing changes in which loss trains which parameters; {tensor} keeps the "
                    "value autograd saved",
                    tensor=tensor,
                ),
                edits=flags or _edits(_write_edit(ctx, rewritten)),
            ),
        ),
        _keeping(
            ctx,
            Fix(
                summary=_t("or write to a copy: clone {name} before the in-place write", name=tensor),
                trains=_("the same as intended (the copy costs one tensor's memory)"),
            ),
        ),
    ]
    # an indexed assignment's first fix already writes into a copy; "clone the saved tensor" would name the
    # wrong one (the saved slice is not what the assignment writes)
    return proposals[:1] if ctx.op == "__setitem__" and proposals[0].fix.edits else proposals


def _edit_at(ctx: Context, loc: Location, new: str | None) -> Edit | None:
    """Replace the one line at ``loc`` (of the failing function, or of another function of the user's code)."""
    if new is None or "\n" in new:
        return None
    site = ctx.site
    if site is not None and loc.filename == site.filename:
        return _replace(ctx, loc.lineno, new) if site.holds(loc.lineno) else _replace_other(site, loc, new)
    return _replace_other(None, loc, new)


def _as_target(ctx: Context) -> list[_Proposal]:
    """Run the forward of a model no optimizer trains under no_grad (``causes._target_context`` reads the pattern)."""
    site, line = ctx.site, ctx.target_line
    if site is None or line is None or ctx.target is None or ctx.grad_off is None:
        return []
    span = _statement_span(site, line)
    if span is None:
        return []
    indent = _indent_of(site, span[0])
    block = [f"{indent}with {ctx.grad_off}():", *("    " + site.text(i) for i in range(span[0], span[1] + 1))]
    reach = tuple(m for m in ctx.reach if m != ctx.target)
    fix = Fix(
        summary=_t(
            "run {model}'s forward under torch.no_grad(): no optimizer holds {model}'s parameters, so its output is a "
            "target, and its in-place update then overwrites nothing autograd saved",
            model=ctx.target,
        ),
        trains=_t(
            "the same as intended: {loss} trains the parameters its optimizers step, as before; {model} gets no "
            "gradient (no optimizer used it)",
            loss=ctx.l,
            model=ctx.target,
        ),
        edits=(Edit(site.filename, span[0], span[1], "\n".join(block)),),
        claims=_claim(ctx, reach),
    )
    return [_Proposal(fix, reach, True)]


def _read_copy(ctx: Context) -> list[_Proposal]:
    """Read a copy where the forward saved the written tensor (``causes._copy_context`` reads the pattern)."""
    loc, expr = ctx.copy_at, ctx.copy_of
    if loc is None or expr is None:
        return []
    line = loc.code.strip()
    new = _rhs_sub(line, expr, f"{expr}.clone()")
    if new is None and line.startswith("return "):
        new = re.sub(rf"(?<![\w.]){re.escape(expr)}(?![\w(])", f"{expr}.clone()", line, count=1)
    fix = Fix(
        summary=_t(
            "read a copy of {expr} where the forward uses it (at {where}): the in-place update then changes {expr}, "
            "not the value autograd saved",
            expr=expr,
            where=loc.where,
        ),
        trains=_t(
            "the same as intended: the gradient of the forward as it ran; {expr} is still updated in place", expr=expr
        ),
        edits=_edits(_edit_at(ctx, loc, new)),
    )
    return [_keeping(ctx, fix)]


def _untracked(ctx: Context) -> list[_Proposal]:
    return [*_as_target(ctx), *_read_copy(ctx), *_untracked_general(ctx)]


def _untracked_general(ctx: Context) -> list[_Proposal]:
    where = _t(" at {where}", where=ctx.where) if ctx.where else ""
    tensor = ctx.tensor or _("the tensor")
    return [
        _keeping(
            ctx,
            Fix(
                summary=_t(
                    "do not write to {tensor} while a graph that saved it still needs it: move the write{where} after "
                    "{loss}.backward(), or write to a copy ({tensor}.clone())",
                    tensor=tensor,
                    where=where,
                    loss=ctx.l,
                ),
                trains=_("the same as intended: the write changed values, not which loss trains which parameters"),
            ),
        ),
        _Proposal(
            Fix(
                summary=_(
                    "if the write is meant to be part of the model, make it an out-of-place op with grad enabled"
                ),
                trains=_("the write's result then takes part in backward, so the gradient also flows through it"),
                claims=_claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]


def _rhs_sub(line: str, name: str, new: str) -> str | None:
    """``line`` with each read of ``name`` right of its ``=`` replaced by ``new`` (None if there is none)."""
    body, comment = _split_comment(line)
    eq = _assignment(body)
    if eq is None:
        m = re.search(r"[-+*/]=", body)
        eq = m.end() - 1 if m else None
    if eq is None:
        return None
    rhs, count = re.subn(rf"(?<![\w.]){re.escape(name)}(?![\w(])", new, body[eq + 1 :])
    return body[: eq + 1] + rhs + comment if count else None


def _detach_state(ctx: Context) -> str | None:
    """The statement that detaches the carried state: element-wise for a tuple, ``None`` left as it is."""
    names = ctx.carried_all or ((ctx.carried,) if ctx.carried else ())
    if not names:
        return None
    if len(names) > 1:
        return f"{', '.join(names)} = {', '.join(f'{n}.detach()' for n in names)}"
    name = names[0]
    value = f"tuple(s.detach() for s in {name})" if ctx.carried_kind == "tuple" else f"{name}.detach()"
    if ctx.carried_none:
        value = f"None if {name} is None else {value}"
    return f"{name} = {value}"


def _carried(ctx: Context) -> list[_Proposal]:
    if ctx.total:
        name = ctx.carried or _("the running total")
        loss = ctx.loss or _("the iteration's loss")
        number = backward = None
        site = ctx.site
        if site is not None and ctx.carried and ctx.loss and ctx.entry_lineno and ctx.backward_line:
            line = site.text(ctx.entry_lineno).strip()
            number = _replace(ctx, ctx.entry_lineno, _rhs_sub(line, ctx.loss, f"{ctx.loss}.item()"))
            call = site.text(ctx.backward_line).strip()
            backward = _replace(
                ctx,
                ctx.backward_line,
                re.sub(rf"(?<![\w.]){re.escape(ctx.carried)}\.backward\(", f"{ctx.loss}.backward(", call),
            )
            if backward is not None and backward.text.strip() == call:
                backward = None
        return [
            _Proposal(
                Fix(
                    edits=_edits(number, backward),
                    summary=_t(
                        "keep the running total as a number: add {loss}.item() to {name}, and call backward on each "
                        "iteration's loss",
                        name=name,
                        loss=loss,
                    ),
                    trains=_t(
                        "each iteration's loss trains the model, as intended; {name} is only for logging", name=name
                    ),
                    claims=_claim(ctx, ctx.reach),
                ),
                ctx.reach,
                False,
            ),
            _Proposal(
                Fix(
                    summary=_t(
                        "if {name} should train the model, call {name}.backward() once, after the loop", name=name
                    ),
                    trains=_(
                        "every iteration's loss trains the model through one backward (memory grows with the loop)"
                    ),
                    claims=_claim(ctx, ctx.reach),
                ),
                ctx.reach,
                False,
            ),
        ]
    edit = None
    if ctx.kept_at is not None and ctx.carried:
        value = _detached_value(ctx.kept_at.code.strip())
        edit = _edit_at(ctx, ctx.kept_at, value) if value else _detached_after(ctx, ctx.kept_at, ctx.carried)
    elif ctx.entry_lineno is not None and ctx.site is not None and ctx.carried:
        simple = ctx.carried_kind in (None, "tensor") and not ctx.carried_none and len(ctx.carried_all) <= 1
        line = ctx.site.text(ctx.entry_lineno).strip()
        if simple and _read_before_stored(ctx):
            # the next iteration reads the state before this line runs again (a memory bank read by the loss):
            # the value stored must hold no graph, whatever fresh tensors it was built from
            value = _detached_value(line)
            edit = _replace(ctx, ctx.entry_lineno, value) if value else None
        else:
            inline = detach_in(line, ctx.carried) if simple else None
            edit = (
                _replace(ctx, ctx.entry_lineno, inline)
                if inline
                else _insert(ctx, ctx.entry_lineno, _detach_state(ctx))
            )
    proposals = [
        _keeping(
            ctx,
            Fix(
                summary=_t(
                    "detach the carried state at the iteration boundary: {name}.detach() where it enters the next "
                    "iteration (truncated backpropagation through time)",
                    name=ctx.carried,
                )
                if ctx.carried and ctx.recurrent
                else _t(
                    "detach the carried state at the iteration boundary: {name}.detach() where it is kept for the "
                    "next iteration",
                    name=ctx.carried,
                )
                if ctx.carried
                else _(  # no name to put before .detach(): words only, nothing that looks like code
                    "detach the state carried from one iteration to the next, where it enters the next iteration"
                ),
                trains=_t(
                    "each iteration's {loss} trains through the current iteration only; the previous iteration's "
                    "graph is released",
                    loss=ctx.l,
                ),
                edits=_edits(edit),
            ),
        ),
        _Proposal(
            Fix(
                summary=_(
                    "or backpropagate through the whole sequence: accumulate the losses and call backward once at the "
                    "end"
                ),
                trains=_(
                    "full backpropagation through time: each loss trains through every earlier step (memory grows "
                    "with the sequence)"
                ),
                claims=_claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]
    # a state kept on an object (a queue), or any state no recurrent call passes on, is not a sequence to
    # backpropagate through
    return proposals[:1] if ctx.kept_at is not None or not ctx.recurrent else proposals


def _read_before_stored(ctx: Context) -> bool:
    """The carried state is read in the loop body above the statement that stores it (``neg = q @ bank.t()``
    before ``bank = torch.cat([bank, k])``): the next iteration reads what was stored, not a detached read."""
    site, name, line = ctx.site, ctx.carried, ctx.entry_lineno
    tree = site.tree() if site is not None else None
    if tree is None or name is None or line is None:
        return False
    body = loop_body_of(tree, line)
    for st in body or []:
        if st.lineno >= line:
            break
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(st)):
            return True
    return False


def _detached_after(ctx: Context, loc: Location, name: str) -> Edit | None:
    """``name = name.detach()`` on a line of its own after the statement at ``loc`` that stores ``name``.

    For a state stored as one element of a tuple target (``out, self.h = self.rnn(x, self.h)``), whose value
    cannot be detached in place; after that statement ``name`` holds a tensor (never the first pass's None).
    """
    text = _statement_line(ctx, loc, ast.Assign)
    if text is None:
        return None
    indent = text[: len(text) - len(text.lstrip())]
    return Edit(loc.filename, loc.lineno, loc.lineno, f"{text}\n{indent}{name} = {name}.detach()")


def _statement_line(ctx: Context, loc: Location, kind: type[ast.stmt] = ast.stmt) -> str | None:
    """The text of line ``loc`` (the failing function's source, or the file's), if it holds one whole statement
    of ``kind``: the line a multi-line edit replaces."""
    site = ctx.site
    source = site.source if site is not None and loc.filename == site.filename else _source_of(loc.filename)
    lines = source.splitlines()
    if not 0 < loc.lineno <= len(lines):
        return None
    text = lines[loc.lineno - 1]
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return None
    return text if len(tree.body) == 1 and isinstance(tree.body[0], kind) else None


def _detached_value(line: str) -> str | None:
    """``x.attr = expr`` as ``x.attr = expr.detach()`` (``(expr).detach()`` when ``expr`` is not a primary)."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    st = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or isinstance(st.targets[0], (ast.Tuple, ast.List)):
        return None  # a tuple target: its value is the tuple, not the state (_detached_after)
    value = ast.get_source_segment(line, st.value) or ast.unparse(st.value)
    target = ast.get_source_segment(line, st.targets[0]) or ast.unparse(st.targets[0])
    primary = isinstance(st.value, (ast.Call, ast.Subscript, ast.Attribute, ast.Name))
    return f"{target} = {value if primary else f'({value})'}.detach()"


def _twice(ctx: Context) -> list[_Proposal]:
    edit = None
    if ctx.site is not None and ctx.earlier_line is not None and ctx.earlier_line != ctx.backward_line:
        edit = _replace(
            ctx, ctx.earlier_line, _with_keyword(ctx.site.text(ctx.earlier_line), "backward", "retain_graph=True")
        )
    return [
        _keeping(
            ctx,
            Fix(
                summary=_t(
                    "call {loss}.backward() once; if you need two backward calls through it, pass retain_graph=True "
                    "to the first",
                    loss=ctx.l,
                ),
                trains=_("unchanged; note that two backward calls add their gradients into .grad"),
                edits=_edits(edit),
            ),
        ),
        _keeping(
            ctx,
            Fix(
                summary=_("or recompute the forward before the second backward"),
                trains=_("unchanged, with a fresh graph"),
            ),
        ),
    ]


def _constant(ctx: Context) -> list[_Proposal]:
    """Detach, before the loop, a tensor the loop reuses next to its own forward (``causes._snapshot_context``)."""
    name = ctx.snapshot
    if name is None or ctx.snapshot_line is None:
        return []
    fix = Fix(
        summary=_t(
            "{name} is a constant of the loop (computed once, before it, from weights the loop's own forward also "
            "uses): detach it before the loop",
            name=name,
        ),
        trains=_t(
            "{loss} trains what it reaches through each iteration's own forward; {name} takes no part in backward",
            loss=ctx.l,
            name=name,
        ),
        edits=_edits(_insert(ctx, ctx.snapshot_line, f"{name} = {name}.detach()")),
    )
    return [_keeping(ctx, fix)]


def _stale(ctx: Context) -> list[_Proposal]:
    if ctx.snapshot is not None:
        return _constant(ctx)
    text = _statements(ctx, (ctx.stale_line,)) if ctx.stale_line is not None else None
    edit = _insert(ctx, ctx.stale_before, text) if text and ctx.stale_before is not None else None
    what = text.split("=")[0].strip() if text else _("the forward")
    return [
        _keeping(
            ctx,
            Fix(
                summary=_t(
                    "recompute {what} inside the loop, where it is used: each iteration then builds its own graph",
                    what=what,
                ),
                trains=_t("{loss} trains what it reaches, from a fresh forward at every iteration", loss=ctx.l),
                edits=_edits(edit),
            ),
        ),
    ]


def _buffered(ctx: Context) -> list[_Proposal]:
    names = ctx.buffers or ((ctx.buffer,) if ctx.buffer else ())
    text = "\n".join(f"{n}.clear()" for n in names) if names else None
    edit = _insert(ctx, ctx.backward_line, text, after=True) if text else None
    return [
        _keeping(
            ctx,
            Fix(
                summary=_t(
                    "clear {names} after each backward, so that the next one goes through the new iteration's graph "
                    "only",
                    names=_(" and ").join(names) if names else _("the list"),
                ),
                trains=_t("{loss} trains what it reaches, from this iteration's tensors only", loss=ctx.l),
                edits=_edits(edit),
            ),
        ),
        _keeping(
            ctx,
            Fix(
                summary=_("or keep only numbers in lists kept for logging: append .item() of each tensor"),
                trains=_("unchanged: the logged values take no part in backward"),
            ),
        ),
    ]


def _fast_weights(ctx: Context) -> list[_Proposal]:
    edit = None
    site = ctx.site
    if site is not None and ctx.fast_lines is not None and ctx.fast_text is not None:
        start, end = ctx.fast_lines
        # the loop may sit in a helper of the same file (a MAML class's adapt()): checked on the names it uses
        text = site.text(start)
        edit = Edit(site.filename, start, end, text[: len(text) - len(text.lstrip())] + ctx.fast_text)
    return [
        _keeping(
            ctx,
            Fix(
                summary=_t(
                    "build the adapted weights as a new list instead of updating {name} in place (rebinding the loop "
                    "variable would adapt nothing)",
                    name=ctx.fast or ctx.tensor or _("the weights"),
                ),
                trains=_(
                    "the same as intended: the outer loss trains through the adaptation step, and the inner step "
                    "really changes the weights it uses"
                ),
                edits=_edits(edit),
            ),
        ),
    ]


def _detach_reads(line: str, name: str) -> str | None:
    """``line`` with every read of ``name`` that is not already ``name.detach()`` detached (None if none).

    Example::

        >>> _detach_reads("gp = penalty(critic, real, fake) + fake.detach().sum()", "fake")
        'gp = penalty(critic, real, fake.detach()) + fake.detach().sum()'
    """
    body, comment = _split_comment(line)
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    detached = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr == "detach" and isinstance(n.value, ast.Name)
    }
    ends = sorted(
        n.end_col_offset
        for n in ast.walk(tree)
        if isinstance(n, ast.Name)
        and n.id == name
        and isinstance(n.ctx, ast.Load)
        and id(n) not in detached
        and n.end_col_offset is not None
    )
    if not ends:
        return None
    for end in reversed(ends):
        body = body[:end] + ".detach()" + body[end:]
    return body + comment


def _attached(ctx: Context) -> list[_Proposal]:
    """Detach the model's output where the loss that does not train it uses it; the freeing fixes after."""
    site = ctx.site
    edits: tuple[Edit, ...] = ()
    if site is not None and ctx.entry and ctx.detach_lines:
        edits = _edits(*(_replace(ctx, n, _detach_reads(site.text(n).strip(), ctx.entry)) for n in ctx.detach_lines))
    where = ", ".join(f"{Location(site.filename, n).where}" for n in ctx.detach_lines) if site is not None else ""
    first = _Proposal(
        Fix(
            summary=_t(
                "detach {entry} where {earlier} is computed from it (at {where}): your loop does not train {model} "
                "with {earlier}, and its backward through {model} freed the graph {loss} needs",
                entry=ctx.entry or _("the model's output"),
                earlier=ctx.e,
                where=where,
                model=ctx.m,
                loss=ctx.l,
            ),
            trains=_t(
                "{loss} trains {model}, as your loop's optimizers ask; {earlier} no longer sends gradient into "
                "{model}, which your loop cleared before stepping {model} anyway",
                loss=ctx.l,
                model=ctx.m,
                earlier=ctx.e,
            ),
            edits=edits,
            claims=_claim(ctx, ctx.reach),
        ),
        ctx.reach,
        False,
    )
    return [first, *(_judge(ctx, True) if ctx.judge else _chained(ctx, True))]


def _retained(ctx: Context) -> list[_Proposal]:
    """Backward each iteration's term once (no retain_graph), and keep the running total detached, for the log."""
    total, term, site = ctx.carried, ctx.extra.get("term"), ctx.site
    edits: tuple[Edit, ...] = ()
    if site is not None and total and term and ctx.entry_lineno is not None and ctx.backward_line is not None:
        parsed: ast.expr | None
        call: ast.expr | None
        try:
            parsed = ast.parse(term, mode="eval").body
            call = ast.parse(site.text(ctx.backward_line).strip(), mode="eval").body
        except SyntaxError:
            parsed = call = None
        # the term is evaluated once more for its backward: only names and arithmetic, never a call (a forward)
        if (
            parsed is not None
            and isinstance(call, ast.Call)
            and not any(isinstance(n, ast.Call) for n in ast.walk(parsed))
        ):
            alone = term if isinstance(parsed, (ast.Name, ast.Attribute)) else f"({term})"
            body, comment = _split_comment(site.text(ctx.entry_lineno).strip())
            if body.startswith(f"{total} +="):
                added = f"{total} += {alone}.detach()"
            elif ctx.extra.get("side") == "right":
                added = f"{total} = {total} + {alone}.detach()"
            else:
                added = f"{alone}.detach() + {total}"
                added = f"{total} = {added}"
            keywords = ", ".join(ast.unparse(k) for k in call.keywords if k.arg != "retain_graph")
            arguments = ", ".join([*(ast.unparse(a) for a in call.args), *([keywords] if keywords else [])])
            edits = _edits(
                _replace(ctx, ctx.entry_lineno, added + comment),
                _replace(ctx, ctx.backward_line, f"{alone}.backward({arguments})"),
            )
    name = total or _("the running total")
    part = term or _("each iteration's loss")
    return [
        _Proposal(
            Fix(
                summary=_t(
                    "backward each iteration's {part} once, without retain_graph, and keep {name} detached, for the "
                    "log: .grad adds the iterations' gradients up until the step",
                    part=part,
                    name=name,
                ),
                trains=_t(
                    "{loss} trains what it reaches, once per iteration, accumulated in .grad until the step; {name} "
                    "takes no part in backward",
                    loss=ctx.l,
                    name=name,
                ),
                edits=edits,
                claims=_claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
            describe=True,
        ),
        _Proposal(
            Fix(
                summary=_t(
                    "or call {name}.backward() once, when the accumulation ends (right before the step), without "
                    "retain_graph, and start {name} again after the step",
                    name=name,
                ),
                trains=_(
                    "every iteration's loss trains what it reaches through one backward (memory grows with the "
                    "accumulation)"
                ),
                claims=_claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
        ),
    ]


def _step_after(ctx: Context) -> list[_Proposal]:
    """Move the step that ran between the loss's forward and its backward to right after that backward."""
    site, step, back = ctx.site, ctx.step_line, ctx.backward_line
    edits: tuple[Edit, ...] = ()
    if site is not None and step is not None and back is not None and site.holds(step):
        insert = _insert(ctx, back, site.text(step).strip(), after=True)
        edits = _edits(Edit(site.filename, step, step, ""), insert)
    proposals = [
        _Proposal(
            Fix(
                summary=_t(
                    "move {step} after {loss}.backward(): as written it runs before the backward and steps on the "
                    "previous iteration's gradient",
                    step=ctx.step,
                    loss=ctx.l,
                ),
                trains=_t("{loss} trains what it reaches, each step on its own iteration's gradient", loss=ctx.l),
                edits=edits,
                claims=_claim(ctx, ctx.reach),
            ),
            ctx.reach,
            False,
            describe=True,
        )
    ]
    again = _recompute(ctx)
    if again is not None:  # the other reading: the step is meant to use the previous iteration's gradient
        proposals.append(
            replace(
                again,
                fix=replace(again.fix, intent=_("if each step is meant to use the previous iteration's gradient")),
                describe=False,
            )
        )
    return proposals


def fixes_for(cause: Cause, ctx: Context | None = None) -> tuple[Fix, ...]:
    """The fixes that fit ``cause``, the likeliest intent first, in the words of ``ctx``.

    Each fix's code is the text of its edits of the user's file (``ctx.site``), set
    only when :func:`gradlab.edits.check_edits` passes; each fix is judged against
    the code's intent (``ctx.intent``): a fix that stops the loss from training
    models the code's optimizers step on it is never first, and says so.
    """
    ctx = ctx or Context()
    proposals: list[_Proposal]
    if cause == "optimizer_step":
        proposals = _judge(ctx, False) if ctx.judge else _chained(ctx, False)
    elif cause == "shared_graph_freed":
        proposals = _judge(ctx, True) if ctx.judge else _chained(ctx, True)
    elif cause == "inplace_op":
        proposals = _in_place(ctx)
    elif cause == "untracked_write":
        proposals = _untracked(ctx)
    elif cause == "carried_state":
        proposals = _carried(ctx)
    elif cause == "same_loss_twice":
        proposals = _twice(ctx)
    elif cause == "stale_forward":
        proposals = _stale(ctx)
    elif cause == "list_never_cleared":
        proposals = _buffered(ctx)
    elif cause == "fast_weights_in_place":
        proposals = _fast_weights(ctx)
    elif cause == "step_before_backward":
        proposals = _step_after(ctx)
    elif cause == "retained_accumulation":
        proposals = _retained(ctx)
    elif cause == "attached_output":
        proposals = _attached(ctx)
    else:  # unknown: the two likeliest families, each with what it trains
        proposals = [*_in_place(ctx)[:1], *_chained(ctx, False)[:1], *_carried(ctx)[:1]]
    return _judged(proposals, ctx)


@dataclass(frozen=True)
class Pitfall:
    """A "fix" that circulates and should not be applied: what people try, and what it really does."""

    attempt: str
    what_it_does: str


def pitfalls() -> tuple[Pitfall, ...]:
    """What gradlab never recommends, and why (the cheat sheet and the course print these)."""
    return (
        Pitfall(
            attempt=_("retain_graph=True for the 'modified by an inplace operation' error"),
            what_it_does=_(
                "keeps the graph, but the saved tensor is still at the wrong version: the error stays. "
                "It only helps the 'backward through the graph a second time' error, when nothing is stepped in "
                "between."
            ),
        ),
        Pitfall(
            attempt=_(".detach() inside a network's forward"),
            what_it_does=_(
                "the errors go away because the gradient is cut there: the layers before the detach silently "
                "stop learning from this loss, and a layer no other loss reaches stops learning at all "
                "(gradlab.check_intent reports it as unreachable)."
            ),
        ),
        Pitfall(
            attempt=_("adding the losses of two models with opposite goals (a GAN's) and stepping both"),
            what_it_does=_(
                "it runs and check() says ok, but G also gets d_loss's gradient, which points against g_loss's: "
                "G's gradient shrinks, and turns against G's goal as D comes to accept the fakes "
                "(gradlab.check_intent reports it)."
            ),
        ),
        Pitfall(
            attempt=_("softmax over a dimension of size 1 (one output per row)"),
            what_it_does=_(
                "every output is exactly 1.0 and every gradient exactly zero: nothing learns, and nothing "
                "raises an error (gradlab.check_intent reports zero gradients)."
            ),
        ),
    )


# NOTE [the family's fixes]
# The fixes for the autograd messages that need no recorded context (explain() prints
# them for a message alone): each says what it trains, like every fix above.
def locating_fix(kind: str) -> Fix:
    """The first fix when only the message is known (``gradlab.explain`` on a text): find who wrote or freed it.

    A message names neither the models nor the loop, so no fix that assumes a story
    (two chained networks, a carried RNN state) can be known to fit; running the
    failing code under the tracker names the line and the fix that fits it.

    Example::

        >>> "gradlab.track()" in locating_fix("modified_in_place").summary
        True
    """
    if kind == "modified_in_place":
        summary = _(
            "find the write first: run the failing code under gradlab.track() (a script: python -m gradlab run "
            "script.py); it names the line that wrote the saved tensor (an optimizer step, +=, an in-place op) "
            "and the fix that fits your loop"
        )
    else:
        summary = _(
            "find the earlier backward first: run the failing code under gradlab.track() (a script: python -m "
            "gradlab run script.py); it names the backward that freed the graph and tells a loss backwarded twice, "
            "a state carried across iterations and two models apart"
        )
    return Fix(summary=summary, trains=_("nothing changes: the tracker only watches your code run"))


def message_fixes(kind: str, parameters: tuple[str, ...] = ()) -> tuple[Fix, ...]:
    """The fixes for one of the family's message kinds (``gradlab.explanation.KINDS``), each with what it trains.

    ``parameters`` names the parameters the message is about (DDP's unused ones), when known.

    Example::

        >>> message_fixes("non_scalar_output")[0].code
        'loss = out.mean()\\nloss.backward()'
    """
    unused = ", ".join(parameters) if parameters else _("the parameters DDP names")
    table: dict[str, tuple[Fix, ...]] = {
        "no_grad_fn": (
            Fix(
                summary=_("compute the loss outside no_grad(), from the model's output, without .item() or .detach()"),
                trains=_("the loss then trains every parameter it reaches"),
            ),
            Fix(
                summary=_("check that at least one parameter on the path has requires_grad=True"),
                trains=_("frozen parameters (requires_grad=False) never train"),
            ),
        ),
        "leaf_in_place": (
            Fix(
                summary=_("wrap manual updates in torch.no_grad()"),
                trains=_("the update is not part of the graph: the parameter still trains from its loss"),
                code="with torch.no_grad():\n    w -= lr * w.grad",
            ),
            Fix(
                summary=_("use the nn.init functions, or an out-of-place op on a non-leaf copy"),
                trains=_("unchanged"),
            ),
        ),
        "non_scalar_output": (
            Fix(
                summary=_("reduce the output to one number before backward (mean or sum over the batch)"),
                trains=_(
                    "every parameter the output reaches, by the gradient of that number: mean keeps the step size "
                    "independent of the batch size, sum scales it with the batch"
                ),
                code="loss = out.mean()\nloss.backward()",
            ),
            Fix(
                summary=_("if you want a vector-Jacobian product, pass the weights of each output as gradient="),
                trains=_("the same as backward of (out * weights).sum(): each output element weighted as you say"),
                code="out.backward(gradient=torch.ones_like(out))",
            ),
        ),
        "unused_input": (
            Fix(
                summary=_("check that each tensor you differentiate by is used in the loss (not a copy, not detached)"),
                trains=_("the same loss; every input you listed then gets its gradient"),
            ),
            Fix(
                summary=_("if some inputs really are unused, pass allow_unused=True (their gradient is None)"),
                trains=_("nothing changes for the used inputs; the unused ones get None, not zero"),
                code="torch.autograd.grad(loss, inputs, allow_unused=True)",
            ),
        ),
        "numpy_requires_grad": (
            Fix(
                summary=_("convert a detached copy for printing, plotting or metrics"),
                trains=_("unchanged: the numbers leave the graph, the loss still trains what it reached"),
                code="y.detach().cpu().numpy()",
            ),
            Fix(
                summary=_("if the numpy values feed the loss, compute them with torch ops instead"),
                trains=_("gradient then flows through that computation; through numpy it cannot"),
            ),
        ),
        "multi_view_in_place": (
            Fix(
                summary=_("replace the in-place op on the view by its out-of-place form"),
                trains=_("the same as intended: the views keep their values and gradients flow through each"),
                code="a = a * 2  # not a.mul_(2)",
            ),
            Fix(
                summary=_("or clone the view before writing to it"),
                trains=_("the same as intended; the clone costs one copy of that view"),
                code="a = a.clone()\na.mul_(2)",
            ),
        ),
        "detach_view_in_place": (
            Fix(
                summary=_("use the out-of-place x.detach() and keep the result"),
                trains=_("unchanged: the detached tensor leaves the graph, the view itself stays in it"),
                code="x = x.detach()",
            ),
            Fix(
                summary=_(
                    "for DDP with gradient_as_bucket_view=True, clear gradients with optimizer.zero_grad() "
                    "(set_to_none) instead of grad.detach_()"
                ),
                trains=_("unchanged"),
            ),
        ),
        "inference_saved": (
            Fix(
                summary=_("create the tensor outside torch.inference_mode(), or use torch.no_grad() there"),
                trains=_("unchanged: no_grad tensors can be saved by a later graph; they are still constants in it"),
            ),
            Fix(
                summary=_("clone the inference tensor before using it in a graph"),
                trains=_("unchanged: the clone is a normal tensor (a constant); it costs one copy"),
                code="x = x.clone()",
            ),
        ),
        "hook_no_grad": (
            Fix(
                summary=_(
                    "register the hook on a tensor that requires grad (a parameter, or a result computed from one)"
                ),
                trains=_("unchanged: a hook only reads or rewrites gradients that flow"),
            ),
            Fix(
                summary=_("if the tensor should train, set requires_grad_() on it before the forward"),
                trains=_("that tensor then trains: its gradient is computed and the hook sees it"),
                code="x.requires_grad_()",
            ),
        ),
        "anomaly_nan": (
            Fix(
                summary=_(
                    "guard the forward op whose backward produced nan (sqrt or log of 0, division by 0, "
                    "acos of 1): add an epsilon or clamp its input"
                ),
                trains=_("the same parameters; the gradient at the guarded points becomes finite"),
                code="torch.sqrt(x.clamp_min(1e-12))",
            ),
            Fix(
                summary=_("check the inputs and the learning rate if the values were already huge"),
                trains=_("unchanged"),
            ),
        ),
        "checkpoint_metadata": (
            Fix(
                summary=_(
                    "make the checkpointed function deterministic in shape: no state that changes between the "
                    "forward and its recomputation (counters, random sizes, a mode flag)"
                ),
                trains=_("unchanged: the recomputation then matches the forward"),
            ),
            Fix(
                summary=_("if it cannot be, leave that part out of checkpoint() (it keeps its activations)"),
                trains=_("unchanged; costs the memory checkpointing saved"),
            ),
        ),
        "ddp_unfinished_reduction": (
            Fix(
                summary=_t(
                    "if {params} should not train: remove them from the model, or freeze them "
                    "(requires_grad_(False)) before wrapping it in DDP",
                    params=unused,
                ),
                trains=_("the same as on one process: those parameters never trained; the others train as before"),
            ),
            Fix(
                summary=_t(
                    "if {params} should train: use them in forward so that the loss reaches them", params=unused
                ),
                trains=_("those parameters then train from the loss, which they did not before"),
            ),
            Fix(
                summary=_(
                    "if parameters are unused only in some iterations (a branch), pass find_unused_parameters=True"
                ),
                trains=_(
                    "unchanged: each iteration trains what its forward used; DDP walks the graph to find the rest"
                ),
                code="model = DistributedDataParallel(model, find_unused_parameters=True)",
            ),
        ),
        "ddp_ready_twice": (
            Fix(
                summary=_("use the parameters only inside the DDP model's forward (not model.module.x outside it)"),
                trains=_("unchanged: the gradient of that use then goes through DDP's all-reduce"),
            ),
            Fix(
                summary=_(
                    "for checkpointing or several forwards per backward, use checkpoint(..., use_reentrant=False) "
                    "or model._set_static_graph()"
                ),
                trains=_("unchanged"),
            ),
        ),
    }
    if kind not in table:
        raise ValueError(
            f"message_fixes() got kind={kind!r}; pass one of the family's kinds: {', '.join(sorted(table))}."
        )
    return table[kind]
