"""``gradlab fix script.py [ARGS...]``: try each fix of a failing backward, and keep one only if it ran.

The script first runs as ``gradlab run`` would run it (same ``sys.argv``, working
directory and stdin), under :func:`gradlab.track` and
:func:`gradlab.record_training`, to its autograd error. Then for each of the
diagnosis's fixes that comes as edits of the user's files (best first), the
edits are applied to a copy, and the copy runs in a scratch directory, in a
subprocess, until every optimizer has stepped ``steps`` times (the step hook
stops it) or ``timeout`` seconds pass. Each candidate is reported as a unified
diff and a table: did it run clean, which loss trained which module at each
step, and does that match what the code means (NOTE [What "verified" means]).
The user's files are written only by :meth:`FixReport.apply`.

NOTE [What "verified" means]
A candidate is *verified* when its run reached the step budget (or the script's
own end, after at least one step) without an error, and its measured training
(:mod:`gradlab.trained`) matches the code's intent:

* at every step, each loss whose backward built the gradient the step uses
  (those since the optimizer's ``zero_grad()``) trained at least one of the
  optimizer's modules, and every module the optimizer holds was trained by one
  of them (unless the unpatched run left that module untrained at that step too);
* every (loss, module) pair that the unpatched run trained at a step it reached
  is trained at that step of the patched run too;
* each of the fix's ``claims`` ``(loss, modules)`` is what the loss measurably
  trained: the modules whose gradient it changed, at the steps of the optimizers
  that step on it.

NOTE [Oracles]
Beside the training each candidate measures, three checks need no intent, each
cheap and each able to fail a fix that runs clean:

* **forward preserved**: a fix that says it keeps the forward (``Fix.keeps_forward``:
  an exact rewrite, a detach, ``inputs=``) must compute what the failing code
  computed before it failed: each loss the unpatched run backwarded has, the first
  time the candidate backwards it (by the same name), the same value (a fingerprint
  of the backwarded tensors, :class:`gradlab.LossRecord`). A rewrite that lost
  parentheses (``x /= a + b`` as ``x = x / a + b``) or moved a write that the forward
  reads fails here;
* **the gradient of the code as written**: for a write to a tensor that is no
  parameter (an in-place op of the forward, a buffer), the script runs once more
  under ``torch.autograd.graph.allow_mutation_on_saved_tensors()``, which keeps a
  copy of each saved tensor a write would change: every optimizer step of a
  candidate must use the gradients of that run;
* **what trains what, per parameter**: at each step the unpatched run completed,
  the candidate gives a gradient to the same parameters.

A candidate that fails one is not verified (and so never applied). Every run of one
``gradlab fix`` starts from the same random state (torch, random and numpy seeded at
0 before the script runs), so the runs of a script that does not seed itself draw the
same numbers and compare too.

Example::

    >>> report = fix_script("train.py", steps=3)  # doctest: +SKIP
    >>> print(report.render())  # doctest: +SKIP
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .edits import Edit, apply_edits, unified_diff
from .i18n import _, _t
from .scratch import RunResult, mirror, run_child

if TYPE_CHECKING:
    from .fixes import Fix
    from .trained import TrainingRecord

__all__ = ["FixTrial", "FixReport", "RunResult", "fix_script"]


@dataclass(frozen=True)
class FixTrial:
    """One candidate fix: its edits as a diff, how its run went, and why it is or is not verified."""

    number: int
    summary: str
    trains: str
    applicability: str
    claims: tuple[tuple[str, tuple[str, ...]], ...]
    edits: tuple[Edit, ...]
    diff: str
    patched: dict[str, str] = field(repr=False)
    run: RunResult | None = None
    problem: str | None = None  # why it was not run (no edits, cannot be applied)
    mismatches: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        """It ran clean and its training matched the code's intent (NOTE [What "verified" means])."""
        return self.run is not None and self.run.clean and not self.mismatches


@dataclass
class FixReport:
    """What ``gradlab fix`` found: the unpatched run, and each candidate's trial."""

    script: str
    original: RunResult
    trials: list[FixTrial]
    steps: int
    sources: dict[str, str] = field(repr=False, default_factory=dict)

    @property
    def failed(self) -> bool:
        """The unpatched script failed with an autograd error gradlab diagnoses."""
        return self.original.outcome == "autograd"

    @property
    def verified(self) -> list[FixTrial]:
        """The verified candidates, best first."""
        return [t for t in self.trials if t.verified]

    def best(self, unsafe: bool = False) -> FixTrial | None:
        """The first verified candidate that may be applied (machine-applicable, or any with ``unsafe``)."""
        for t in self.verified:
            if unsafe or t.applicability == "machine-applicable":
                return t
        return None

    def apply(self, unsafe: bool = False) -> FixTrial:
        """Write the best verified candidate into the user's files; return it.

        Raises ``ValueError`` when there is none that may be applied, or when a
        file changed since the run.
        """
        trial = self.best(unsafe)
        if trial is None:
            if self.verified:
                raise ValueError(
                    _t(
                        "the verified fix {n} may change what trains ({applicability}); "
                        "pass --unsafe (unsafe=True) to apply it",
                        n=self.verified[0].number,
                        applicability=self.verified[0].applicability,
                    )
                )
            raise ValueError(_("no fix was verified, so none is applied"))
        for path, before in self.sources.items():
            if path in trial.patched and _read(path) != before:
                raise ValueError(
                    _t("{file} changed since gradlab fix read it; run gradlab fix again", file=_display(path))
                )
        for path, text in trial.patched.items():
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        return trial

    def render(self) -> str:
        """The report as text: the failure, then each candidate's diff and table, then the verdict."""
        o = self.original
        name = _display(self.script)
        if o.outcome != "autograd":
            return _outcome_sentence(name, o)
        lines = [_t("gradlab fix: {script} fails at {where}: {message}", script=name, where=o.where, message=o.message)]
        if o.headline:
            lines.append("  " + _t("gradlab's diagnosis: {headline}", headline=o.headline))
        if o.record.steps:
            lines += [_t("Before the failure ({seconds:.1f} s):", seconds=o.seconds), _indent(o.record.table())]
        if not self.trials:
            lines.append(_("gradlab has no fix for this failure."))
        for t in self.trials:
            lines += ["", _trial_head(t, len(self.trials))]
            lines.append("  " + _t("trains: {what}", what=t.trains))
            if t.problem is not None:
                lines.append("  " + t.problem)
                continue
            lines.append(t.diff.rstrip("\n"))
            run = t.run
            assert run is not None  # a trial with edits that applied was run
            lines.append("  " + _ran_sentence(run, self.steps))
            if run.record.steps:
                lines.append(_indent(run.record.table(), 4))
            if run.clean:
                if t.mismatches:
                    lines.append("  " + _("does not match the code's intent:"))
                    lines += [f"    - {m}" for m in t.mismatches]
                else:
                    lines.append(
                        "  "
                        + _("matches the code's intent: each loss trained the modules whose optimizer steps on it.")
                    )
            lines.append("  " + (_("=> verified") if t.verified else _("=> not verified")))
        lines.append("")
        best = self.verified
        if best:
            lines.append(_t("Verified: fix {n} of {total}.", n=best[0].number, total=len(self.trials)))
        else:
            lines.append(_t("No fix verified ({total} tried).", total=len(self.trials)))
        return "\n".join(lines)


def _trial_head(t: FixTrial, total: int) -> str:
    return _t(
        "fix {n} of {total} ({applicability}): {summary}",
        n=t.number,
        total=total,
        applicability=t.applicability,
        summary=t.summary,
    )


def _ran_sentence(run: RunResult, steps: int) -> str:
    s = run.seconds
    if run.outcome == "budget":
        return _t("ran clean: {steps} steps of each optimizer, no error ({seconds:.1f} s)", steps=steps, seconds=s)
    if run.outcome == "finished":
        if run.record.steps:
            return _t(
                "ran clean: the script ended after {n} steps, no error ({seconds:.1f} s)",
                n=len(run.record.steps),
                seconds=s,
            )
        return _t("ran to its end without an optimizer step: nothing trained ({seconds:.1f} s)", seconds=s)
    if run.outcome == "timeout":
        return _t(
            "did not run clean: no {steps} steps of each optimizer in {seconds:.0f} s (timed out)",
            steps=steps,
            seconds=s,
        )
    if run.outcome == "autograd":
        return _t("did not run clean: {message} at {where}", message=run.message, where=run.where)
    return _t("did not run clean: {message} at {where}", message=run.message or run.outcome, where=run.where or "?")


def _outcome_sentence(name: str, o: RunResult) -> str:
    if o.outcome in ("finished", "budget"):
        return _t("Nothing to fix: {script} ran to its end without an autograd error.", script=name)
    if o.outcome == "exit":
        return _t(
            "Nothing to fix: {script} exited ({message}) without an autograd error.", script=name, message=o.message
        )
    if o.outcome == "timeout":
        return _t(
            "Nothing to fix so far: {script} ran {seconds:.0f} s without an autograd error (--timeout to wait longer).",
            script=name,
            seconds=o.seconds,
        )
    return _t(
        "{script} fails with {message} at {where}: not an autograd error gradlab fixes; "
        "python -m gradlab run {script} shows the traceback.",
        script=name,
        message=o.message,
        where=o.where or "?",
    )


def _indent(text: str, n: int = 2) -> str:
    return "\n".join(" " * n + line if line else line for line in text.splitlines())


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


# --------------------------------------------------------------------------
# Judging a run against the code's intent
# --------------------------------------------------------------------------


def _close(a: tuple[float, float] | None, b: tuple[float, float] | None, rtol: float = 1e-5) -> bool:
    if a is None or b is None:
        return a is b
    return all(abs(x - y) <= rtol * max(abs(x), abs(y), 1e-12) + 1e-12 for x, y in zip(a, b))


def oracles(
    run: TrainingRecord,
    original: TrainingRecord,
    keeps_forward: bool | None,
    reference: TrainingRecord | None = None,
) -> list[str]:
    """Why ``run`` fails a check that needs no intent (NOTE [Oracles]), one sentence each."""
    out: list[str] = []
    if keeps_forward:
        first: dict[str, tuple[float, float] | None] = {}
        for b in original.backwards:
            first.setdefault(b.loss, b.value)
        seen: set[str] = set()
        for b in run.backwards:
            if b.loss in first and b.loss not in seen:
                seen.add(b.loss)
                if first[b.loss] is not None and b.value is not None and not _close(b.value, first[b.loss], 1e-6):
                    out.append(
                        _t(
                            "the fix says it keeps the forward, but {loss} has another value than in the code as "
                            "it ran (the first time it is backwarded)",
                            loss=b.loss,
                        )
                    )
    if reference is not None:
        want = {(s.optimizer, s.count): s for s in reference.steps}
        for s in run.steps:
            r = want.get((s.optimizer, s.count))
            if r is None or len(r.grads) != len(s.grads):
                continue
            differ = [name for (name, g), (_n, rg) in zip(s.grads, r.grads) if not _close(g, rg)]
            if differ:
                out.append(
                    _t(
                        "{optimizer}, step {k}: the gradient of {params} differs from the code as written "
                        "(run under allow_mutation_on_saved_tensors())",
                        optimizer=s.optimizer,
                        k=s.count,
                        params=", ".join(differ[:3]) + (" ..." if len(differ) > 3 else ""),
                    )
                )
    done = {(s.optimizer, s.count): s for s in original.steps}
    for s in run.steps:
        o = done.get((s.optimizer, s.count))
        if o is None or len(o.grads) != len(s.grads):
            continue
        had = {n for n, g in o.grads if g is not None and g != (0.0, 0.0)}
        has = {n for n, g in s.grads if g is not None and g != (0.0, 0.0)}
        if had and had != has:  # a step on no gradient at all says nothing of what is meant to train
            changed = sorted(had ^ has)
            out.append(
                _t(
                    "{optimizer}, step {k}: the code as it ran gave a gradient to other parameters ({params})",
                    optimizer=s.optimizer,
                    k=s.count,
                    params=", ".join(changed[:3]) + (" ..." if len(changed) > 3 else ""),
                )
            )
    return out


def judge(run: TrainingRecord, original: TrainingRecord, claims: Sequence[tuple[str, Sequence[str]]] = ()) -> list[str]:
    """Why ``run`` does not match the code's intent, one sentence each (NOTE [What "verified" means]).

    ``original`` is the unpatched run's record (as far as it got); ``claims`` the
    fix's. A sentence that holds at several steps of one optimizer is said once,
    with the steps.
    """
    found: dict[tuple[str, str], list[int]] = {}  # (optimizer, sentence) -> steps

    def note(optimizer: str, count: int, sentence: str) -> None:
        counts = found.setdefault((optimizer, sentence), [])
        if count not in counts:
            counts.append(count)

    before = {(s.optimizer, s.count): s for s in original.steps}
    # the losses that trained some module of an optimizer at its k-th step: one window shared by several
    # optimizers (all zeroed, every loss backwarded, all stepped) has losses meant for the others' modules
    elsewhere = {(s.optimizer, s.count, loss) for s in run.steps for loss, mods in s.trained if mods}
    for s in run.steps:
        old = before.get((s.optimizer, s.count))
        if not s.trained:
            note(
                s.optimizer,
                s.count,
                _t("no backward since {optimizer}.zero_grad(): the step trains nothing", optimizer=s.optimizer),
            )
        idle = [loss for loss, mods in s.trained if not mods]
        for loss in idle:
            if any(o != s.optimizer and k == s.count and name == loss for o, k, name in elsewhere):
                continue  # it trained another optimizer's modules, stepped alongside at the same count
            note(
                s.optimizer,
                s.count,
                _t(
                    "{loss} ran backward since {optimizer}.zero_grad() but trained none of its modules ({modules})",
                    loss=loss,
                    optimizer=s.optimizer,
                    modules=", ".join(s.modules),
                ),
            )
        left = [m for m in s.untrained() if old is None or m not in old.untrained()]
        if s.trained and left and len(idle) < len(s.trained):
            note(
                s.optimizer,
                s.count,
                _t(
                    "no loss trained {modules}, though {optimizer} holds its parameters",
                    modules=", ".join(left),
                    optimizer=s.optimizer,
                ),
            )
        if old is not None:
            # A loss the fix kept must train what it trained; one it rewrote (another
            # expression) leaves its modules to be trained by some loss of the step.
            now = {(loss, m) for loss, mods in s.trained for m in mods}
            names = {loss for loss, _mods in s.trained}
            trained_now = {m for _loss, m in now}
            for loss, mods in old.trained:
                for m in mods:
                    if loss in names and (loss, m) not in now:
                        note(
                            s.optimizer,
                            s.count,
                            _t("before the fix {loss} trained {module}; after it, it does not", loss=loss, module=m),
                        )
                    elif loss not in names and m not in trained_now:
                        note(
                            s.optimizer,
                            s.count,
                            _t("before the fix {loss} trained {module}; after it, no loss does", loss=loss, module=m),
                        )
    out = [
        _t("{optimizer}, {steps}: {sentence}", optimizer=optimizer, steps=_steps_words(counts), sentence=sentence)
        for (optimizer, sentence), counts in found.items()
    ]
    if not run.steps:
        out.append(_("no optimizer step ran, so nothing was trained"))
    for loss, modules in claims:
        # What a loss trains: the modules it changed the gradient of, at the steps that use it.
        reached: set[str] = set()
        seen = any(b.loss == loss for b in run.backwards)
        for s in run.steps:
            for name, mods in s.trained:
                if name == loss:
                    reached.update(mods)
        same = run.aliases  # a claim may name a module by another of its variables
        # claims name modules: parameters no named module holds ("parameters of opt") cannot be claimed
        named = {same.get(m, m) for m in reached if m not in run.unnamed}
        if not seen:
            out.append(_t("the fix says what {loss} trains, but no backward of {loss} ran", loss=loss))
        elif named != {same.get(m, m) for m in modules}:
            out.append(
                _t(
                    "the fix says {loss} trains {claimed}; it trained {measured}",
                    loss=loss,
                    claimed=", ".join(sorted(modules)) or _("nothing"),
                    measured=", ".join(sorted(named)) or _("nothing"),
                )
            )
    return out


def _steps_words(counts: list[int]) -> str:
    if len(counts) == 1:
        return _t("step {k}", k=counts[0])
    if counts == list(range(counts[0], counts[-1] + 1)):
        return _t("steps {first}-{last}", first=counts[0], last=counts[-1])
    return _t("steps {list}", list=", ".join(map(str, counts)))


def _first_sentence(message: str) -> str:
    """The error's first sentence (torch's messages go on with advice gradlab replaces)."""
    for stop in (" (", ". "):
        head, sep, _rest = message.partition(stop)
        if sep and len(head) > 20:
            message = head
    return message


def _user_line(e: BaseException, script: str) -> str | None:
    """``file:line`` of the last frame of the script (or its directory) in ``e``'s traceback."""
    from .location import Location

    top = os.path.dirname(os.path.abspath(script)) + os.sep
    tb = e.__traceback__
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if os.path.abspath(name).startswith(top):
            found = Location(name, tb.tb_lineno).where
        tb = tb.tb_next
    return found


def _fix_data(fx: Any) -> dict[str, Any]:
    return {
        "summary": str(fx.summary),
        "trains": str(fx.trains),
        "applicability": fx.applicability,
        "edits": [[e.filename, e.start, e.end, e.text] for e in fx.edits],
        "claims": [[loss, list(mods)] for loss, mods in fx.claims],
        "keeps_forward": fx.keeps_forward,
    }


# --------------------------------------------------------------------------
# Candidates
# --------------------------------------------------------------------------


def _patch(edits: Sequence[Edit], script: str, sources: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """The patched text of each file the edits touch (absolute paths), or why they cannot be applied."""
    top = os.path.dirname(script)
    by_file: dict[str, list[Edit]] = {}
    for e in edits:
        path = os.path.abspath(e.filename)
        if not os.path.isfile(path) and os.path.basename(e.filename) == os.path.basename(script):
            path = script
        if os.path.dirname(path) != top:
            return {}, _t(
                "it edits {file}, outside the script's folder, which gradlab fix does not copy", file=e.filename
            )
        by_file.setdefault(path, []).append(e)
    patched: dict[str, str] = {}
    for path, file_edits in by_file.items():
        if path not in sources:
            try:
                sources[path] = _read(path)
            except OSError as err:
                return {}, _t("it edits {file}, which cannot be read ({error})", file=e.filename, error=err.strerror)
        try:
            patched[path] = apply_edits(sources[path], file_edits)
        except ValueError as err:
            return {}, _t("its edits cannot be applied to {file}: {reason}", file=_display(path), reason=str(err))
    return patched, None


def fix_script(
    path: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    steps: int = 3,
    timeout: float = 60.0,
    stdin: bytes = b"",
    fixes: Sequence[Fix] | None = None,
) -> FixReport:
    """Run ``path`` to its autograd error, then try each fix gradlab suggests in a patched copy.

    Returns a :class:`FixReport`; nothing is written to the user's files (see
    :meth:`FixReport.apply`). ``steps`` is the budget of optimizer steps each
    candidate runs for, ``timeout`` the seconds each run may take, ``stdin``
    what the script reads on its standard input (the same for every run).
    ``fixes`` are the candidates to try instead of those of gradlab's diagnosis
    (your own :class:`gradlab.Fix` objects with edits, best first).

    Raises ``ValueError`` for a path that is not a readable Python script and for
    a script that reads stdin when none is given.

    Example::

        >>> report = fix_script("train.py", ["--epochs", "1"], steps=3)  # doctest: +SKIP
        >>> [t.number for t in report.verified]  # doctest: +SKIP
        [1]
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"fix_script() needs the path of a script as a str, not {type(path).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(
            _t("steps must be a whole number of optimizer steps, at least 1 (e.g. 3), not {value}", value=repr(steps))
        )
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(_t("timeout must be a number of seconds above 0 (e.g. 60), not {value}", value=repr(timeout)))
    argv0 = os.fspath(path)
    script = os.path.abspath(argv0)
    if not os.path.exists(script):
        raise ValueError(_t("can't open file {file}: no such file; pass the path of a Python script", file=repr(argv0)))
    if not os.path.isfile(script) or not script.endswith((".py", ".pyw")):
        raise ValueError(_t("{file} is not a Python script; gradlab fix needs a .py file", file=repr(argv0)))
    try:
        sources = {script: _read(script)}
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(_t("can't read {file}: {error}", file=repr(argv0), error=err)) from err
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="gradlab-fix-") as scratch:
        work = os.path.join(scratch, "original")
        os.mkdir(work)
        original = run_child(script, argv0, args, cwd, None, timeout, stdin, work)
        if original.outcome == "needs-input":
            raise ValueError(
                _t(
                    "{file} reads its standard input and none was given; pass it as with python: "
                    "gradlab fix {file} < input.txt",
                    file=argv0,
                )
            )
        report = FixReport(script, original, [], steps, sources)
        if original.outcome != "autograd":
            return report
        candidates = original.fixes if fixes is None else tuple(_fix_data(fx) for fx in fixes)
        reference = None
        if original.reference and candidates:  # the gradient of the code as written (NOTE [Oracles])
            work = os.path.join(scratch, "reference")
            os.mkdir(work)
            ref = run_child(script, argv0, args, cwd, steps, timeout, stdin, work, reference=True)
            reference = ref.record if ref.clean else None
        for number, data in enumerate(candidates, 1):
            report.trials.append(
                _try(
                    number, data, script, argv0, args, cwd, steps, timeout, stdin, sources, original, scratch, reference
                )
            )
    return report


def _try(
    number: int,
    data: dict[str, Any],
    script: str,
    argv0: str,
    args: Sequence[str],
    cwd: str,
    steps: int,
    timeout: float,
    stdin: bytes,
    sources: dict[str, str],
    original: RunResult,
    scratch: str,
    reference: TrainingRecord | None = None,
) -> FixTrial:
    edits = tuple(Edit(f, s, e, t) for f, s, e, t in data.get("edits", ()))
    claims = tuple((loss, tuple(mods)) for loss, mods in data.get("claims", ()))
    base = dict(
        number=number,
        summary=data.get("summary", ""),
        trains=data.get("trains", ""),
        applicability=data.get("applicability", "sentence"),
        claims=claims,
        edits=edits,
    )
    if not edits:
        return FixTrial(**base, diff="", patched={}, problem=_("a sentence, not an edit: not run"))
    patched, problem = _patch(edits, script, sources)
    if problem is not None:
        return FixTrial(**base, diff="", patched={}, problem=_t("cannot be applied: {why}", why=problem))
    diff = "".join(unified_diff(sources[p], text, _display(p)) for p, text in sorted(patched.items()))
    top = os.path.dirname(script)
    folder = os.path.join(scratch, f"fix{number}")
    os.mkdir(folder)
    mirror(top, folder, {os.path.basename(p): text for p, text in patched.items()})
    copy = os.path.join(folder, os.path.basename(script))
    rel = os.path.relpath(cwd, top)
    run_cwd = (
        os.path.join(folder, rel) if not rel.startswith("..") and os.path.isdir(os.path.join(folder, rel)) else cwd
    )
    work = os.path.join(scratch, f"run{number}")
    os.mkdir(work)
    run = run_child(copy, argv0, args, run_cwd, steps, timeout, stdin, work)
    mismatches = (
        tuple(judge(run.record, original.record, claims))
        + tuple(oracles(run.record, original.record, data.get("keeps_forward"), reference))
        if run.clean
        else ()
    )
    return FixTrial(**base, diff=diff, patched=patched, run=run, mismatches=mismatches)
