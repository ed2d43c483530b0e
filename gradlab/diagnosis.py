"""Predict whether ``backward()`` will succeed, say why not, and what to do about it.

:func:`check` collects the graph of an output and returns a :class:`Diagnosis`:
one :class:`Problem` per freed node or stale saved tensor, each with its
:data:`~gradlab.advice.Cause` and the fixes that fit it (:mod:`gradlab.advice`).
Inside :func:`gradlab.track` the diagnosis knows who wrote a tensor and which
backward freed a node; outside, gradlab decides from the tensors themselves.

``str(diagnosis)`` is the short form (the one shown under a failing traceback):
the kind in one line, the user's line that did it with the op marked, the
tensor, where it was saved and which backward needed it, then the one fix that
fits as a ``help:`` line. :meth:`Diagnosis.details` lists every problem and
every fix with what it trains.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import TYPE_CHECKING, Literal

import torch

from .causes import Cause, cause_sentence, decide, fixes_for
from .evidence import CallerLoop, Facts, Failure, Topology, backward_line_after, graph_kinds, leaves_of
from .explanation import Explanation
from .fixes import Fix
from .graph import Graph, collect
from .i18n import Words, _, _t, ngettext_
from .kinds import locate, no_graph
from .location import Location, _library_file, frame_names
from .loop import Site, read_site
from .names import Namer, NamesLike, ViewKind, frame_namer
from .recorder import Scope, active
from .render import header, help_lines, html_fixes, more, numbered, op_span, others_line, quote
from .saved import SavedTensor, Write
from .source import calls_method, loop_body_of, runs_backward

if TYPE_CHECKING:
    from .recorder import BackwardCall, Recorder

__all__ = [
    "Diagnosis",
    "Problem",
    "ProblemKind",
    "check",
    "check_in",
    "check_graph",
    "last_diagnosis",
    "failure_diagnosis",
]

#: The two ways a backward fails that gradlab diagnoses.
ProblemKind = Literal["graph_freed", "modified_in_place"]

_TITLES = {"graph_freed": "graph freed", "modified_in_place": "modified in place"}


@dataclass(frozen=True)
class Problem:
    """One reason a backward would fail, its cause, and the fixes that fit.

    ``kind`` is ``graph_freed`` or ``modified_in_place``; ``node`` the backward
    node that needs the tensor; ``tensor`` a readable name; ``where``/``code`` the
    user line that modified it (or, for a freed graph, the backward call that
    freed it). ``cause`` is what gradlab decided caused it, ``fixes`` the fixes
    for that cause, the likeliest first, each saying what it trains. ``given``
    and ``view`` are the tensor's name as data: the name the user gave and which
    view of it the tensor is (None without a name).
    """

    kind: ProblemKind
    node: str
    tensor: Words
    shape: tuple[int, ...] | None
    saved_version: int | None
    current_version: int | None
    modified_by: str | None = None
    where: str | None = None
    code: str | None = None
    node_id: int | None = None
    cause: Cause = "unknown"
    fixes: tuple[Fix, ...] = field(default=(), repr=False)
    saved_at: Location | None = field(default=None, repr=False)
    location: Location | None = field(default=None, repr=False)
    writes: tuple[Write, ...] = field(default=(), repr=False)
    given: str | None = field(default=None, repr=False)
    view: ViewKind = field(default=None, repr=False)

    def sentence(self) -> str:
        """The problem in one sentence."""
        shape = f" {list(self.shape)}" if self.shape is not None and "[" not in self.tensor else ""
        where = f"{self.where}: {self.code}" if self.where and self.code else (self.where or "")
        if self.kind == "graph_freed":
            if where:
                return _t(
                    "{node} needs {tensor}{shape}, but its saved tensors were freed by the backward at {where}.",
                    node=self.node,
                    tensor=self.tensor,
                    shape=shape,
                    where=where,
                )
            return _t(
                "{node} needs {tensor}{shape}, but its saved tensors were freed.",
                node=self.node,
                tensor=self.tensor,
                shape=shape,
            )
        text = _t(
            "{tensor}{shape}, saved by {node} at version {saved}, is now at version {now}",
            tensor=self.tensor,
            shape=shape,
            node=self.node,
            saved=self.saved_version,
            now=self.current_version,
        )
        if self.modified_by:
            text += _t(": modified by {writer}", writer=self.modified_by)
        if where:
            text += _t(" at {where}", where=where)
        if self.counter_missed:
            text += _(" (its version counter missed the write)")
        return _t("{sentence}.", sentence=text)

    @property
    def counter_missed(self) -> bool:
        """True for a tensor changed by a write that did not move its version counter (torch cannot see it)."""
        return (
            self.kind == "modified_in_place"
            and self.saved_version is not None
            and self.saved_version == self.current_version
        )


@dataclass(frozen=True)
class Diagnosis:
    """The answer of :func:`check`: ``ok`` is True when ``backward()`` would succeed.

    ``problems`` are the reasons it would not (the first is the one backward
    meets first); ``fixes`` the fixes of the first problem, the likeliest first;
    ``needed_by`` the backward call that failed (when a tracker saw it fail).
    ``located`` is set for the other kinds of autograd error (a backward on a
    tensor without a graph, an in-place write torch refused, an inference tensor
    saved, ...): their explanation, located at the user's lines a tracker saw
    (the line that cut the graph, the write, where the tensor was made), with
    fixes as edits of those lines; ``problems`` is then empty.
    """

    ok: bool
    problems: list[Problem]
    graph: Graph = field(repr=False)
    needed_by: Location | None = field(default=None, repr=False)
    failed: bool = False
    located: Explanation | None = field(default=None, repr=False)

    @property
    def kinds(self) -> list[str]:
        return sorted({p.kind for p in self.problems} | ({self.located.kind} if self.located is not None else set()))

    @property
    def kind(self) -> str | None:
        """The kind of the failure (``modified_in_place``, ``no_grad_fn``, ...; its code: :data:`gradlab.CODES`)."""
        if self.located is not None:
            return self.located.kind
        return self.problems[0].kind if self.problems else None

    @property
    def cause(self) -> Cause | None:
        """The cause of the first problem (None when ``ok``)."""
        return self.problems[0].cause if self.problems else None

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """The fixes of the first problem, the likeliest intent first."""
        if self.located is not None:
            return self.located.fixes
        return self.problems[0].fixes if self.problems else ()

    def __str__(self) -> str:
        if self.ok:
            return _t("ok: backward() would succeed ({summary}).", summary=self.graph.summary())
        if self.located is not None:
            return str(self.located)
        return "\n".join(_short(self))

    def details(self) -> str:
        """Every problem, its cause, and every fix with what it trains."""
        if self.ok:
            return str(self)
        if self.located is not None:
            return self.located.details()
        head = _("backward() failed ({summary}).") if self.failed else _("backward() would fail ({summary}).")
        lines = [head.format(summary=self.graph.summary())]
        for kind, title in (("modified_in_place", _("Modified in place")), ("graph_freed", _("Graph already freed"))):
            probs = [p for p in self.problems if p.kind == kind]
            if not probs:
                continue
            lines += ["", _t("{section}:", section=title)]
            lines += [f"  - {p.sentence()}" for p in probs[:8]]
            if len(probs) > 8:
                lines.append("  - " + _t("... and {n} more", n=len(probs) - 8))
        first = self.problems[0]
        lines += [
            "",
            _t("Cause: {cause}.", cause=cause_sentence(first.cause)),
            "",
            _("Fixes, by what you want to train:"),
        ]
        lines += numbered(first.fixes)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Diagnosis(ok={self.ok}, problems={len(self.problems)}, kinds={self.kinds}, cause={self.cause!r})"

    def _repr_html_(self) -> str:
        if self.ok:
            return f"<p>{html.escape(str(self))}</p>"
        short = html.escape(str(self))
        fixes = html_fixes(self.fixes)
        title = html.escape(_("All fixes, by what you want to train"))
        return f"<pre>{short}</pre><details><summary>{title}</summary><ol>{fixes}</ol></details>"


# -- the short form ---------------------------------------------------------------------------------------


def _short(d: Diagnosis) -> list[str]:
    p = d.problems[0]
    verb = "" if d.failed else _("would fail: ")
    if not d.failed and p.counter_missed:  # torch would not raise: backward would run on the new values
        verb = _("backward would use the changed values: ")
    lines: list[str] = []
    if p.kind == "modified_in_place":
        if p.modified_by:
            head = _t(
                "{verb}{tensor} was changed by {writer} after autograd saved it",
                verb=verb,
                tensor=p.tensor,
                writer=p.modified_by,
            )
        else:
            head = _t("{verb}{tensor} was changed after autograd saved it", verb=verb, tensor=p.tensor)
        lines.append(_t("{header}: {what}", header=header("modified_in_place"), what=head))
        if p.location is not None:
            label = _t(
                "{writer}: version {saved} -> {now}",
                writer=p.modified_by or _("this write"),
                saved=p.saved_version,
                now=p.current_version,
            )
            if p.counter_missed:
                label = _t(
                    "{writer} wrote it; the version counter missed the write (still {now})",
                    writer=p.modified_by or _("this write"),
                    now=p.current_version,
                )
            lines += quote(p.location, op_span(p.location.code, p.writes[0].op if p.writes else None), label)
        elif p.counter_missed:
            lines.append(
                "   = "
                + _t(
                    "its data differs from when it was saved, but its version counter did not move ({now}): "
                    "a write gradlab did not see (a custom kernel, an extension, C++ code)",
                    now=p.current_version,
                )
            )
        else:
            lines.append(
                "   = "
                + _t(
                    "version {saved} when saved, {now} now (who wrote it is unknown outside gradlab.track())",
                    saved=p.saved_version,
                    now=p.current_version,
                )
            )
    else:
        if p.code:
            head = _t(
                "{verb}{node} needs saved tensors that were already freed by {call}",
                verb=verb,
                node=p.node,
                call=p.code,
            )
        else:
            head = _t("{verb}{node} needs saved tensors that were already freed", verb=verb, node=p.node)
        lines.append(_t("{header}: {what}", header=header("graph_freed"), what=head))
        if p.location is not None:
            label = (
                _("a reentrant checkpoint's own backward, run inside this one, freed them")
                if d.cause == "reentrant_checkpoint"  # NOTE [A backward a reentrant checkpoint runs]
                else _("freed them (no retain_graph=True)")
            )
            lines += quote(p.location, op_span(p.location.code, "backward"), label)
    shape = f" {list(p.shape)}" if p.shape is not None and "[" not in p.tensor else ""
    if p.kind == "modified_in_place":
        if p.saved_at is not None:
            line = _t(
                "tensor: {tensor}{shape}, saved by {node} at version {version}, at {where}",
                tensor=p.tensor,
                shape=shape,
                node=p.node,
                version=p.saved_version,
                where=p.saved_at,
            )
        else:
            line = _t(
                "tensor: {tensor}{shape}, saved by {node} at version {version}",
                tensor=p.tensor,
                shape=shape,
                node=p.node,
                version=p.saved_version,
            )
        lines.append("   = " + line)
    if d.needed_by is not None:
        lines.append("   = " + _t("needed by: {call}", call=d.needed_by.trail()))
    extra = len(d.problems) - 1
    if extra:
        lines.append(
            "   = "
            + ngettext_(
                "and {n} more problem of this graph",
                "and {n} more problems of this graph",
                extra,
            ).format(n=extra)
        )
    lines.append("   = " + _t("cause: {cause}", cause=cause_sentence(p.cause)))
    if p.fixes:
        lines += help_lines(p.fixes[0])
        lines += others_line(p.fixes, d.needed_by)
        if len(p.fixes) == 1 and extra:
            lines.append("   = " + _t("every problem: {how}", how=more(d.needed_by)))
    return lines


def last_diagnosis(error: BaseException | None = None) -> Diagnosis:
    """The diagnosis gradlab attached to ``error``: by default the latest error shown (``sys.last_value``).

    In a notebook, after a cell fails under :func:`gradlab.track` (or ``%load_ext
    gradlab``), ``gradlab.last_diagnosis().details()`` lists every problem and
    every fix with what it trains. Raises ``ValueError`` when the error carries no
    diagnosis (it did not come from a backward gradlab watched).

    Example::

        >>> import torch, gradlab
        >>> w = torch.ones(2, requires_grad=True)
        >>> try:
        ...     with gradlab.track():
        ...         y = (w * w).sum()
        ...         y.backward()
        ...         y.backward()
        ... except RuntimeError as err:
        ...     d = gradlab.last_diagnosis(err)
        >>> d.cause
        'same_loss_twice'
    """
    if error is None:
        error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if error is None:
            raise ValueError(
                "no error has been shown yet; pass the error, e.g. gradlab.last_diagnosis(err) in an except block"
            )
    if not isinstance(error, BaseException):
        raise TypeError(f"last_diagnosis() takes an exception (or nothing), not {type(error).__name__}")
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        diag = current.__dict__.get("_gradlab_diagnosis")
        if isinstance(diag, Diagnosis):
            return diag
        current = current.__cause__ or current.__context__
    raise ValueError(
        "this error carries no gradlab diagnosis: run the failing backward inside gradlab.track() "
        "(or %load_ext gradlab in a notebook), then call last_diagnosis() again"
    )


# -- deciding the cause -----------------------------------------------------------------------------------


def _problem(s: SavedTensor) -> Problem:
    kind: ProblemKind = "graph_freed" if s.status == "freed" else "modified_in_place"
    location = s.writes[0].location if s.writes else s.freed_by
    return Problem(
        kind=kind,
        node=s.node,
        tensor=s.name,
        shape=s.shape,
        saved_version=s.saved_version,
        current_version=s.current_version,
        modified_by=s.modified_by,
        where=s.where,
        code=s.code,
        node_id=s.node_id,
        saved_at=s.saved_at,
        location=location,
        writes=s.writes,
        given=s.given,
        view=s.view,
    )


def _decide(problems: list[Problem], graph: Graph, facts: Facts) -> list[Problem]:
    """Fill in each problem's cause and fixes (:mod:`gradlab.causes`, :mod:`gradlab.advice`)."""
    if not problems:
        return problems
    topo = Topology(graph, [m for m in facts.site.modules if "." in m] if facts.site is not None else ())
    decided = []
    done: dict[tuple[object, ...], tuple[Cause, tuple[Fix, ...]]] = {}
    for p in problems:
        key = _alike(p)
        if key not in done:
            cause, ctx = decide(p, graph, topo, facts)
            done[key] = (cause, fixes_for(cause, ctx))
        cause, fixes = done[key]
        decided.append(replace(p, cause=cause, fixes=fixes))
    return decided


def _alike(p: Problem) -> tuple[object, ...]:
    """What decides a problem's cause and fixes: its kind, the tensor and the line that saved it, and who freed or
    wrote it. Problems alike in these are decided once (NOTE [Problems decided once])."""
    where = (p.location.filename, p.location.lineno) if p.location is not None else None
    saved = (p.saved_at.filename, p.saved_at.lineno) if p.saved_at is not None else None
    writes = tuple((w.op, w.location.filename, w.location.lineno) if w.location else (w.op,) for w in p.writes)
    return (p.kind, str(p.tensor), saved, where, writes, p.given, p.view)


# NOTE [Problems decided once]
# A graph unrolled over many steps (an ODE solver's sixty RK4 steps, one graph a
# constant keeps from before the loop) has thousands of freed nodes, one problem
# each, and each decision walks the graph: 1,824 decisions took minutes. The
# note's cause and fixes are the first problem's; the others, saved by the same
# line under the same name and freed or written by the same call, get the same
# decision, made once.


def _facts(tracker: Recorder | None, failing: BackwardCall | None, frame: FrameType | None) -> Facts:
    """What the failing frame shows: its names, its code (:class:`gradlab.loop.Site`), the backward's line."""
    namespace = frame_names(frame)
    modules: dict[str, set[int]] = {}
    if tracker is not None:
        for name, t in tracker.owner.namer().named():
            if "." in name:
                modules.setdefault(name.split(".", 1)[0], set()).add(id(t))
    site = read_site(frame, {k: frozenset(v) for k, v in modules.items()})
    line: int | None = None
    if site is not None:
        if failing is not None and failing.location is not None:
            line = failing.location.lineno if failing.location.filename == site.filename else None
        else:
            line = backward_line_after(site, site.lineno)
    up = frame.f_back if frame is not None else None
    caller = (
        (up.f_code.co_filename, up.f_lineno) if up is not None and not _library_file(up.f_code.co_filename) else None
    )
    caller_site = read_site(up) if caller is not None else None
    return Facts(tracker, failing, namespace, site, line, caller, _caller_loop(frame, site, line), caller_site)


def _caller_loop(frame: FrameType | None, site: Site | None, line: int | None) -> CallerLoop | None:
    """The loop of the nearest user frame above ``frame`` that calls in from a loop's body, when no loop of
    ``frame``'s function holds its backward (``line``): a trainer's method called once per iteration."""
    tree = site.tree() if site is not None else None
    if frame is None or tree is None or line is None:
        return None
    body = loop_body_of(tree, line)
    # a loop of products (torch.autograd.grad, no backward, no step: an implicit solve) is no training loop
    if body is not None and any(runs_backward(st, grad=False) or calls_method(st, ("step",)) for st in body):
        return None
    up, seen = frame.f_back, 0
    while up is not None and seen < 8:
        if not _library_file(up.f_code.co_filename):
            seen += 1
            outer = read_site(up)
            outer_tree = outer.tree() if outer is not None else None
            if outer is not None and outer_tree is not None and loop_body_of(outer_tree, up.f_lineno) is not None:
                names = frame_names(up)
                graphs = graph_kinds(names)
                leaves = {k: frozenset(leaves_of(t)) for k in graphs if isinstance(t := names[k], torch.Tensor)}
                names.clear()
                return CallerLoop(outer, up.f_lineno, graphs, leaves)
        up = up.f_back
    return None


def check_graph(
    graph: Graph,
    failing: BackwardCall | None = None,
    *,
    tracker: Recorder | None = None,
    frame: FrameType | None = None,
    raised: str | None = None,
) -> Diagnosis:
    """Turn a collected graph into a Diagnosis (one Problem per freed node or stale tensor).

    With ``failing`` (the backward call that just raised), only the problems that
    made it fail are kept: a node that call freed itself, before it reached the
    real problem, is not a cause. ``raised`` is the kind of the error torch raised
    (``graph_freed``, ``modified_in_place``): NOTE [Which problem raised].
    ``frame`` is the user's frame, where gradlab looks up the names of tensors it
    mentions.
    """
    stale: list[SavedTensor] = []
    freed: list[tuple[SavedTensor, bool]] = []  # (record, freeing call known)
    seen: set[int] = set()
    for s in graph.saved:
        if s.status == "modified_in_place":
            stale.append(s)
        elif s.status == "freed" and s.node_id not in seen:
            seen.add(s.node_id)
            if failing is not None and s.freed_by is not None and s.freed_by is failing.location:
                continue  # freed by the failing call itself
            freed.append((s, s.freed_by is not None))
    if failing is not None and any(known for _, known in freed):
        # Nodes whose freeing call is unknown were run by the failing call itself
        # (their saved values bypass the hooks, e.g. a Python scalar in x * 2.0).
        freed = [(s, known) for s, known in freed if known]
    if raised is None and failing is None and freed and stale:  # check() before the backward: which torch meets first
        seqs = {n.id: n.seq if n.seq is not None else -1 for n in graph.nodes}
        newest_freed = max(seqs.get(s.node_id, -1) for s, _ in freed)
        raised = "graph_freed" if newest_freed > max(seqs.get(s.node_id, -1) for s in stale) else None
    if raised == "graph_freed" and freed:
        records = [s for s, _ in freed] + stale  # NOTE [Which problem raised]
    else:
        records = stale if (failing is not None and stale) else stale + [s for s, _ in freed]
    problems = _decide([_problem(s) for s in records], graph, _facts(tracker, failing, frame))
    needed_by = failing.location if failing is not None else None
    return Diagnosis(ok=not problems, problems=problems, graph=graph, needed_by=needed_by, failed=failing is not None)


# NOTE [Which problem raised]
# A failed backward can find both kinds in its graph: tensors written in place since they
# were saved, and nodes an earlier backward freed. Which one torch met first decides its
# error, and the note speaks of that one: a stale tensor alone is the cause when torch said
# "modified by an inplace operation" (a freed node there is usually one the failing call
# freed itself on its way); when torch said "backward through the graph a second time",
# the freed nodes come first and the stale tensors after them (a fix that only clones the
# stale tensors would fail again on the freed part). The same loop with the two backward
# calls in another order raises the other error. check() before the backward cannot read
# torch's error: it reads which torch meets first from the nodes' sequence numbers (the
# engine runs the newest ready node first; a node is newer than every node it reads), so
# that check() names the cause the note after the backward names.


def no_graph_diagnosis(output: object, recording: Recorder | None, frame: FrameType | None = None) -> Diagnosis | None:
    """The diagnosis of a backward that would fail because an output has no graph (GL0003), or None.

    The explanation names the line that cut the graph when ``recording`` saw it
    (:func:`gradlab.explanation.no_graph`): :func:`check` before the backward says
    what the note after it says.
    """
    if isinstance(output, torch.Tensor):
        items: list[object] = [output]
    elif isinstance(output, Sequence) and not isinstance(output, (str, bytes)):
        items = list(output)
    else:
        return None
    if not items or not all(isinstance(t, torch.Tensor) for t in items):
        return None  # collect() says what to pass
    explanation = no_graph(items, recording, frame)
    if explanation is None:
        return None
    with_graph = [t for t in items if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    graph = collect(with_graph) if with_graph else Graph(nodes=(), saved=(), outputs=())
    return Diagnosis(ok=False, problems=[], graph=graph, located=explanation)


_EMPTY = Graph(nodes=(), saved=(), outputs=())


def failure_diagnosis(failure: Failure) -> Diagnosis:
    """The diagnosis of any autograd error, located where a tracker saw it (NOTE [Every kind diagnosed]).

    For a backward that failed on a freed or modified saved tensor, the tracker
    diagnoses from the graph (:func:`check_graph`); every other kind, and those two
    when the tracker did not see the backward, are located here by their kind
    (:func:`gradlab.kinds.locate`): the user's lines, and fixes as edits of them.
    """
    located = locate(failure)
    if failure.error is not None and located.kind in ("ddp_unfinished_reduction", "ddp_ready_twice"):
        from .ddp import explain_ddp  # NOTE [Lazy imports]: only on a DDP failure

        cuts = tuple(failure.recorder.cuts.cuts) if failure.recorder is not None else ()
        located = explain_ddp(failure.error, located, cuts, failure.namespace)  # indices named, and why missed
    return Diagnosis(ok=False, problems=[], graph=_EMPTY, needed_by=failure.location, failed=True, located=located)


def check(output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None) -> Diagnosis:
    """Predict whether ``output.backward()`` would succeed, without running it.

    Nothing changes: no ``.grad``, parameter, optimizer state or buffer. Inside
    :func:`gradlab.track` the problems also say who modified each tensor. Each
    problem says its cause and the fixes that fit (``diagnosis.fixes``).

    Example::

        >>> import torch
        >>> w = torch.ones(3, requires_grad=True)
        >>> y = (w * w).sum()
        >>> with torch.no_grad():
        ...     _ = w.add_(1)
        >>> d = check(y, names={"w": w})
        >>> d.ok, d.problems[0].kind, d.problems[0].tensor
        (False, 'modified_in_place', 'w')
    """
    return check_in(output, names, sys._getframe(1), active())


def check_in(
    output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike, frame: FrameType | None, scope: Scope | None
) -> Diagnosis:
    """:func:`check` from ``frame``, with the names and record of the tracker ``scope`` (None: none).

    The one way ``gradlab.check`` and ``Tracker.check`` find names and collect, so they
    name a tensor alike: ``names``, else the tracker's, else the frame's models, as the
    note after a failure does.
    """
    recorder = scope._recorder() if scope is not None else None
    cut = no_graph_diagnosis(output, recorder, frame)
    if cut is not None:
        return cut
    given = scope.namer(names) if scope is not None else Namer(names) if names is not None else None
    # no names anywhere: the caller's models; and the modules its plain objects hold (NOTE [The frame's models
    # name what nothing else does] in gradlab.names)
    namer = frame_namer(given, frame_names(frame))
    graph = collect(output, namer, tracker=scope)
    return check_graph(graph, tracker=recorder, frame=frame)
