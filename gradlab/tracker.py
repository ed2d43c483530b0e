"""Record who modifies saved tensors: ``with gradlab.track() as tracker: ...``.

The ``with`` entry: :class:`Tracker` opens and closes the recording (nesting,
the saved-tensor hooks, :mod:`gradlab.writes`' wrappers) and, when a backward
fails under it, attaches gradlab's diagnosis to the error as a note. What is
recorded lives in :mod:`gradlab.recorder`, below the graph walk.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Sequence
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

import torch

from . import internals, messages, session, writes
from .cuts import Views
from .events import Event, EventKind
from .i18n import _, _t
from .location import Location, frame_names, user_frame
from .names import NamesLike, frame_namer, modules_in
from .notices import diagnosis_failed, prefixed, warn_once
from .recorder import BackwardCall, Recorder, Scope

if TYPE_CHECKING:
    from .diagnosis import Diagnosis
    from .explanation import Explanation

# NOTE [Lazy imports]: diagnosing and graph walking (diagnosis, graph, advice) are
# imported when a failure or a check needs them, not when a tracker starts, so
# `python -m gradlab run` starts about as fast as `import torch`.

__all__ = ["Event", "EventKind", "BackwardCall", "Tracker", "track"]


class Tracker(Scope):
    """Records save-time versions, in-place writes and backward calls; a context manager.

    Use it through :func:`track`. While active, a backward that raises either
    autograd error is re-raised unchanged, with gradlab's diagnosis as a note;
    :meth:`diagnosis_for` returns that diagnosis. :meth:`check` diagnoses any
    output; :attr:`events` (a bounded log) feeds :func:`gradlab.timeline`. Holds
    no tensor, graph or module alive after the block.

    NOTE [Nested trackers]
    Only the outermost tracker of a thread installs hooks and records. A tracker
    opened inside another (``%load_ext gradlab`` and a cell's own ``with
    gradlab.track(names=...)``) joins it: it receives the events logged while it
    is open, its names take precedence inside its block, and a failing backward
    gets exactly one note.
    """

    def __init__(
        self, names: NamesLike = None, *, warn: bool = True, strict: bool = False, verify_saved: bool = False
    ) -> None:
        super().__init__(names, warn=warn, strict=strict, verify_saved=verify_saved)
        self.active = False
        self._hooks: Any = None
        self._installed = False  # whether this tracker's writes.install() succeeded

    # -- what was recorded -------------------------------------------------------------------------
    @property
    def events(self) -> deque[Event]:
        """The log, oldest first: at most ``MAX_EVENTS`` of the latest events (each built once, when first read)."""
        return self._log.events()

    @property
    def writes(self) -> list[Event]:
        """The in-place writes to saved tensors seen so far."""
        return [e for e in self._log.events() if e.kind == "write"]

    @property
    def history(self) -> list[BackwardCall]:
        """The latest backward calls (at most ``Backwards.HISTORY``), oldest first."""
        recorder = self._recorder()
        return list(recorder.history) if recorder is not None else []

    @property
    def steps(self) -> list[tuple[int, Location | None, str]]:
        """The latest optimizer steps: (event index at the step's end, the user's line, the optimizer's class)."""
        recorder = self._recorder()
        return recorder.steps if recorder is not None else []

    @property
    def calls(self) -> list[BackwardCall]:
        """The latest backward calls that freed a graph (at most ``Backwards.RECENT_CALLS``), oldest first."""
        recorder = self._recorder()
        return recorder.backwards.calls() if recorder is not None else []

    def stats(self) -> dict[str, int]:
        """How much the recording holds now: for tests, benchmarks and the curious.

        ``events`` (logged so far), ``saved`` (tensors autograd saved under the
        tracker), ``registry_storages``/``registry_records`` (saved records indexed
        by storage), ``pending`` (saved records not indexed yet), ``open_steps``
        (optimizer steps begun and not finished), ``freed`` (nodes whose freeing
        backward is remembered), ``backward_calls``, and ``names_pending`` (this
        tracker's log entries whose tensor name is still to be worked out, NOTE
        [Lazy names] in :mod:`gradlab.recorder`). After the outermost tracker
        exits, the tables are empty and every name is worked out.

        Example::

            >>> x = torch.ones(3, requires_grad=True)
            >>> with track() as tracker:
            ...     x.exp().sum().backward()
            ...     inside = tracker.stats()
            >>> inside["saved"], inside["backward_calls"], tracker.stats()["registry_records"]
            (1, 1, 0)
        """
        recorder = self._recorder()
        stats = recorder.stats() if recorder is not None else Recorder(self).stats()
        stats["names_pending"] = self._log.pending_names()
        return stats

    def check(
        self, output: torch.Tensor | Sequence[torch.Tensor], names: NamesLike = None, *, frame: FrameType | None = None
    ) -> Diagnosis:
        """Like :func:`gradlab.check`, with who modified each tensor, and where, filled in.

        A convenience for ``gradlab.check(output)`` inside the block; after the
        block it still uses what this tracker recorded.
        """
        from .diagnosis import check_in

        return check_in(output, names, frame if frame is not None else sys._getframe(1), self)

    def diagnosis_for(self, error: BaseException) -> Diagnosis | None:
        """The diagnosis of ``error``, an autograd error raised under this tracker (None for any other error).

        Every kind of autograd error has one (NOTE [Every kind diagnosed] in :mod:`gradlab.kinds`):
        made when torch raised it where gradlab's hooks saw it (a backward, an in-place write),
        otherwise now, from the error's traceback and what the tracker recorded.
        """
        recorder = self._recorder()
        found = _attached(error, recorder)
        if found is not None or recorder is None or not messages.is_decoded(error):
            return found
        try:
            made = self._located(recorder, error)
        except Exception as err:  # never replace the user's error with ours
            diagnosis_failed(err)
            return None
        _attach(error, recorder, made)
        return made

    def explanation_for(self, error: BaseException) -> Explanation | None:
        """The located explanation of ``error``'s diagnosis (a kind other than a graph's freed or modified tensor)."""
        diag = self.diagnosis_for(error)
        return diag.located if diag is not None else None

    def __repr__(self) -> str:
        state = "active" if self.active else "closed"
        return f"<gradlab tracker, {state}, {len(self._log)} events>"

    # -- a failing backward ------------------------------------------------------------------------
    def _on_failure(
        self, e: RuntimeError, found: messages.Message, roots: list[Any], call: BackwardCall, frame: FrameType | None
    ) -> None:
        """Attach the diagnosis to ``e`` as a note (once) and take gradlab's hook frames out of its traceback."""
        recorder = self._joined
        try:
            if recorder is None or _attached(e, recorder) is not None:
                return  # a nested backward already annotated this exception
            try:
                if found is not None and found.kind in ("graph_freed", "modified_in_place"):
                    diag = self._failure_diagnosis(recorder, roots, call, frame, raised=found.kind)
                else:  # every other kind a backward raises (NOTE [Every kind diagnosed] in gradlab.kinds)
                    diag = self._located(recorder, e, frame=frame, tensors=tuple(roots))
            except Exception as err:  # never replace the user's error with ours, but say once why no note
                diagnosis_failed(err)
                return
            _attach(e, recorder, diag)
        finally:
            del frame
            e.with_traceback(_without_hook_frames(e.__traceback__))

    def _located(
        self,
        recorder: Recorder | None,
        e: BaseException,
        *,
        frame: FrameType | None = None,
        tensors: tuple[Any, ...] = (),
        op: str | None = None,
    ) -> Diagnosis:
        """The diagnosis of an autograd error other than a graph's freed or modified tensor (or one the hooks missed)."""
        from .diagnosis import failure_diagnosis  # NOTE [Lazy imports]: only on a failure
        from .evidence import failure_of

        modules = (
            {
                name.split(".", 1)[0]: frozenset(id(p) for p in m.parameters())
                for name, m in modules_in(frame_names(frame)).items()
            }
            if frame is not None
            else None
        )
        failure = failure_of(e, recorder, frame=frame, tensors=tensors, op=op, modules=modules)
        if failure is None:
            raise ValueError("not an autograd error gradlab decodes")
        return failure_diagnosis(failure)

    def _note_views(self, e: RuntimeError, views: Views, output: int | None, op: str, write: Location | None) -> None:
        """The note of a write torch refused on one of several views: the op and line that made them, the write's."""
        from .diagnosis import Diagnosis  # NOTE [Lazy imports]: only on a failure
        from .evidence import failure_of
        from .kinds import explain, views_of_leaf

        recorder = self._joined
        if recorder is None or _attached(e, recorder) is not None:
            return
        try:
            base = views.base() if views.base is not None else None
            node = base.grad_fn if isinstance(base, torch.Tensor) else None
            saved = node is not None and "_saved_result" in internals.saved_attributes(node)  # exp, tanh: its output
            explanation = explain(e).at_views(views.label, views.location, output, op, write, saved)
            failure = failure_of(e, recorder, frame=user_frame())
            if failure is not None:  # the views of a parameter: the write is an update (an init): no_grad
                split = next((b for r in views.outputs if (t := r()) is not None and (b := t._base) is not None), None)
                explanation = views_of_leaf(failure, explanation, split)
            diag = Diagnosis(
                ok=False, problems=[], graph=_EMPTY_GRAPH(), needed_by=write, failed=True, located=explanation
            )
        except Exception as err:  # never replace the user's error with ours, but say once why no note
            diagnosis_failed(err)
            return
        _attach(e, recorder, diag)
        e.with_traceback(_without_hook_frames(e.__traceback__))  # it ends at the user's write, as without gradlab

    def _note_refused(self, e: RuntimeError, op: str, target: Any, frame: FrameType | None) -> None:
        """The note of another in-place write torch refused (to a leaf that requires grad, ``detach_`` of a view)."""
        recorder = self._joined
        try:
            if recorder is None or _attached(e, recorder) is not None:
                return
            try:
                diag = self._located(recorder, e, frame=frame, tensors=(target,), op=op)
            except Exception as err:  # never replace the user's error with ours, but say once why no note
                diagnosis_failed(err)
                return
            _attach(e, recorder, diag)
        finally:
            del frame
            e.with_traceback(_without_hook_frames(e.__traceback__))  # it ends at the user's write, as without gradlab

    def _silent_note(self, roots: list[Any], call: BackwardCall, frame: FrameType | None) -> str | None:
        """The note of a backward that used saved tensors changed behind their counter (NOTE [Silent writes])."""
        recorder = self._joined
        try:
            if recorder is None:
                return None
            diag = self._failure_diagnosis(recorder, roots, call, frame)
            return None if diag.ok else str(diag)
        finally:
            del frame

    def _failure_diagnosis(
        self,
        recorder: Recorder,
        roots: list[Any],
        call: BackwardCall,
        frame: FrameType | None,
        raised: str | None = None,
    ) -> Diagnosis:
        """The diagnosis of a failed backward call: only the problems that made it fail (``raised``: the kind of
        torch's error, ``graph_freed`` or ``modified_in_place``)."""
        from .diagnosis import check_graph
        from .graph import collect_nodes

        namer = self.namer()
        if frame is not None:  # NOTE [The frame's models name what nothing else does] in gradlab.names
            namer = frame_namer(namer, frame_names(frame)) or namer
        graph = collect_nodes(roots, namer, tracker=self)
        return check_graph(graph, failing=call, tracker=recorder, frame=frame, raised=raised)

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> Tracker:
        if self.active:
            raise RuntimeError("this tracker is already active; open a new `with gradlab.track():` block")
        outer = session.recorder()
        if isinstance(outer, Recorder):
            recorder = outer
            session.push(self)
        else:
            messages.wording(torch.is_anomaly_enabled())  # read torch's wording before our hooks exist
            recorder = Recorder(self, self._on_failure, self._silent_note, self._note_views, self._note_refused)
            self._start(recorder)
            session.push(self, recorder)
        self._joined = self._last = recorder
        self.active = True
        recorder.refresh_names()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        recorder = self._joined
        if exc is not None and recorder is not None:
            self.diagnosis_for(exc)  # an autograd error no hook saw raised (NOTE [Every kind diagnosed])
        try:
            session.pop(self)
        finally:
            self.active = False
            self._joined = None
            self._log.name_all()  # while the named tensors are surely alive
            if recorder is not None and recorder.owner is self:
                self._stop(recorder)
            elif recorder is not None:
                recorder.refresh_names()

    # NOTE [Fail open] (in messages.py): gradlab never stops the user's code from
    # running. If the hooks or the wrappers cannot be installed on this torch, the
    # block runs without them (what gradlab cannot see, it says once, as a warning).
    def _start(self, recorder: Recorder) -> None:
        try:
            hooks = torch.autograd.graph.saved_tensors_hooks(recorder.pack, recorder.unpack)
            hooks.__enter__()
        except Exception as e:
            _cannot(_("gradlab cannot watch saved tensors on this torch"), e)
            return
        self._hooks = hooks
        try:
            writes.install()
        except Exception as e:
            _cannot(_("gradlab cannot watch in-place writes and backward calls on this torch"), e)
            return
        self._installed = True

    def _stop(self, recorder: Recorder) -> None:
        try:
            if self._installed:
                self._installed = False
                writes.uninstall()
        finally:
            try:
                if self._hooks is not None:
                    self._hooks.__exit__(None, None, None)
            finally:
                self._hooks = None
                recorder.clear()


# NOTE [Notes on the error]: the diagnosis of an autograd error is kept on the
# exception itself, with the serial number of the recorder that saw it: one home,
# read by Tracker.diagnosis_for (and explanation_for, its located explanation) and
# by gradlab.last_diagnosis() after the tracker has closed; the tracker keeps no
# table of errors (an exception object may be reused with another message).
_DIAGNOSIS = "_gradlab_diagnosis"


def _attach(error: BaseException, recorder: Recorder, diag: Diagnosis) -> None:
    """Keep ``diag`` on ``error`` (NOTE [Notes on the error]) and add it as a note."""
    error.__dict__[_DIAGNOSIS] = diag
    error.__dict__[_DIAGNOSIS + "_recorder"] = (recorder.serial, str(error))
    error.add_note("\n" + prefixed(str(diag)))


def _attached(error: BaseException, recorder: Recorder | None) -> Diagnosis | None:
    """The diagnosis attached to ``error`` under ``recorder`` (and while the error says the same), or None."""
    seen = error.__dict__.get(_DIAGNOSIS + "_recorder") if isinstance(getattr(error, "__dict__", None), dict) else None
    if recorder is None or seen != (recorder.serial, str(error)):
        return None
    found: Diagnosis | None = error.__dict__.get(_DIAGNOSIS)
    return found


def _EMPTY_GRAPH() -> Any:
    from .graph import Graph

    return Graph(nodes=(), saved=(), outputs=())


def _cannot(what: str, error: BaseException) -> None:
    """Warn once what gradlab cannot do here; the user's code runs on without it."""
    warn_once(
        what,
        _t(
            "{what} ({error}); your code runs as usual, and gradlab's notes may be missing.",
            what=what,
            error=f"{type(error).__name__}: {error}",
        ),
        stacklevel=4,
    )


_HOOK_FILES = frozenset(
    os.path.realpath(os.path.join(os.path.dirname(__file__), name))
    for name in ("tracker.py", "recorder.py", "backwards.py", "saved.py", "writes.py", "location.py")
)


def _without_hook_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without gradlab's hook frames below the backward call (the unpack hook that raised).

    IPython hides frames marked ``__tracebackhide__`` except the last one, which it
    always shows; so the unpack hook's frame, where the in-place error is raised, is
    taken out here, and the traceback ends in torch's backward engine as without gradlab.
    """
    kept: list[TracebackType] = []
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) not in _HOOK_FILES:
            kept.append(tb)
        tb = tb.tb_next
    out: TracebackType | None = None
    for entry in reversed(kept):
        out = TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def track(names: NamesLike = None, *, warn: bool = True, strict: bool = False, verify_saved: bool = False) -> Tracker:
    """Record save-time versions, every in-place write to a saved tensor, and every backward call.

    Use it as ``with gradlab.track(names={"n_1": n_1}) as tracker:``. While
    active, a backward that raises either autograd error is re-raised as the
    same exception with gradlab's diagnosis attached as a note; an optimizer step
    that cannot train some parameters (no gradient, or all zero) is noted once
    per parameter in ``tracker.notes`` and warned about
    (:class:`gradlab.UnusedStepWarning`; ``warn=False`` keeps only the notes).
    Everything is undone on exit. Inside another tracker, it joins that one
    (NOTE [Nested trackers] in :class:`Tracker`).

    An optimizer step is recorded as a write to each saved parameter it changed,
    even when its version counter did not move (fused optimizers such as
    ``Adam(fused=True)``); so is a write through ``.data``. A backward that then
    uses such a tensor runs as in PyTorch (it computes with the new values) and
    gradlab warns (:class:`gradlab.SilentWriteWarning`, with the note); with
    ``strict=True`` it raises PyTorch's in-place error instead, as PyTorch does
    when the counter counts the write. ``verify_saved=True`` also fingerprints
    every saved tensor when it is saved and checks it when backward uses it, so a
    change by anyone is caught (a custom kernel, an extension); it costs one
    reduction per saved tensor at save and at use (``benchmarks/``). Either mode
    holds while any tracker that asks for it is open.

    Example::

        >>> lin = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        >>> x = torch.ones(4, 2, requires_grad=True)  # so addmm saves the weight
        >>> with track(names={"lin": lin}) as tracker:
        ...     loss = lin(x).sum()
        ...     loss.backward(retain_graph=True)
        ...     opt.step()
        ...     problem = tracker.check(loss).problems[0]
        >>> problem.tensor, problem.modified_by
        ('lin.weight (transposed view)', 'SGD.step()')
    """
    return Tracker(names, warn=warn, strict=strict, verify_saved=verify_saved)
