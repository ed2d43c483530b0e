"""The ``gradlab`` command: run a training script with autograd errors explained.

``python -m gradlab run train.py [ARGS...]`` runs ``train.py`` exactly as
``python train.py [ARGS...]`` would (same ``sys.argv``, ``__name__ ==
"__main__"``, script directory first on ``sys.path``, same exit code and
traceback), with :func:`gradlab.track.track` active. When a backward fails
with an autograd error, the traceback carries gradlab's diagnosis (which
tensor, which line modified it) and the explanation of the message follows.

``python -m gradlab explain`` reads a traceback from stdin (or ``--file``)
and explains it.

Example::

    >>> main(["run", "train.py", "--epochs", "1"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.machinery
import os
import runpy
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from .i18n import T, _t, join
from .notices import prefixed
from .ranks import distributed, named_ddp, report_rank
from .tracebacks import clean_chain

if TYPE_CHECKING:
    from .tracker import Tracker

__all__ = ["main", "run_script", "run_module", "explain_text", "fix_child", "USAGE"]

# The help, in the language of LANG (NOTE [Words as data] in gradlab.i18n: worded when printed).
_SYNOPSIS = T(
    """\
usage: python -m gradlab run [--verbose] [--explain-only] SCRIPT.py [ARGS...]
       python -m gradlab run [--verbose] [--explain-only] -m MODULE [ARGS...]
       python -m gradlab explain [--verbose] [--file TRACEBACK.txt]
       python -m gradlab explain CODE | --codes
       python -m gradlab fix [--steps K] [--timeout S] [--apply [--unsafe]] SCRIPT.py [ARGS...]
       python -m gradlab --help | --version"""
)
USAGE = join(
    [
        _SYNOPSIS,
        T(
            """\
Run a PyTorch script as `python SCRIPT.py ARGS...` would, with gradlab's
tracker watching autograd. If a backward fails because the graph was freed or
a saved tensor was modified in place, the traceback ends with gradlab's note:
the line that changed the tensor, the tensor, and the fix that fits, with what
it trains. --verbose adds every problem, every fix and the message decoded."""
        ),
        T(
            """\
commands:
  run            run a script (or -m MODULE) with tracking; exit code as python's
  explain        explain an autograd error read from stdin or --file;
                 exit 0 if it is one gradlab decodes, 1 if not;
                 explain GL0001 prints the long form of a code, --codes lists them
  fix            run a failing script, try each fix in a patched copy for K
                 optimizer steps, show each as a diff with what it trained;
                 exit 0 if one is verified (or nothing fails), 1 if none, 2 on
                 bad input
  --version      gradlab's version, and the Python and torch it runs with"""
        ),
        T(
            """\
options of fix:
  --steps K      optimizer steps each patched copy runs (default 3)
  --timeout S    seconds each run may take (default 60)
  --apply        write the best verified fix into the script (only then is
                 any file of yours written); machine-applicable fixes only
  --unsafe       with --apply, also a fix that may change what trains"""
        ),
        T(
            """\
options of run:
  --verbose      on an autograd error, also print every problem and every fix
                 (with what each trains) and what the message says
  --explain-only run without tracking (no overhead); on an autograd error
                 print the traceback and the explanation of its message
  -m MODULE      run a module as `python -m MODULE` would
"""
        ),
    ],
    "\n\n",
)


def _interpreter() -> str:
    """The interpreter name as typed, for messages like python's own."""
    orig = getattr(sys, "orig_argv", None)
    return orig[0] if orig else (sys.executable or "python")


# --------------------------------------------------------------------------
# Tracking
# --------------------------------------------------------------------------


def _modules_in(namespace: Mapping[str, object]) -> dict[str, object]:
    from .names import modules_in

    return dict(modules_in(namespace))


class _MainNamespace:
    """A zero-argument callable for ``track(names=...)``: the script's modules.

    NOTE [script namespace after the error]
    The tracker may ask for names while the backward fails (inside the script)
    or later, in its ``__exit__``. For a script run by ``run_script`` the
    namespace is the module we made, so it is always at hand. ``runpy``
    (used for ``-m``) drops its temporary ``__main__`` before ``__exit__``
    runs, so the namespace is remembered whenever it is seen, and recovered
    from the traceback of the exception being handled as a last resort.
    """

    def __init__(self, namespace: dict[str, object] | None = None) -> None:
        self.namespace = namespace

    def __call__(self) -> dict[str, object]:
        if self.namespace is None:
            main = sys.modules.get("__main__")
            spec = getattr(main, "__spec__", None)
            if main is not None and spec is not None and spec.name not in ("gradlab.__main__", "gradlab"):
                self.namespace = vars(main)
        if self.namespace is None:
            self.namespace = _namespace_in_traceback(sys.exc_info()[1])
        return _modules_in(self.namespace or {})


def _namespace_in_traceback(exc: BaseException | None) -> dict[str, object] | None:
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            return frame.f_globals
        tb = tb.tb_next
    return None


# --------------------------------------------------------------------------
# Running code as python would
# --------------------------------------------------------------------------


@contextlib.contextmanager
def _as_main(argv: list[str], path0: str | None, module: types.ModuleType | None) -> Iterator[None]:
    """Set ``sys.argv``, ``sys.path[0]`` and ``sys.modules['__main__']``; restore them after."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    saved_main = sys.modules.get("__main__")
    sys.argv[:] = argv
    if path0 is not None:
        if sys.path:
            sys.path[0] = path0
        else:
            sys.path.insert(0, path0)
    if module is not None:
        sys.modules["__main__"] = module
    try:
        yield
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def _exit_code(exc: SystemExit, stderr: TextIO) -> int:
    """The exit status python gives for ``raise SystemExit(code)``."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


def _report(exc: BaseException, stderr: TextIO, verbose: bool, tracker: Tracker | None) -> int:
    """Print ``exc`` as python would; for an autograd error, gradlab's note is part of it.

    Without a note (``--explain-only``, or a failure the tracker did not see) the
    explanation of the message follows, in short; ``verbose`` prints everything.
    """
    clean_chain(exc)
    if distributed() is not None:
        notes = getattr(exc, "__notes__", None)
        ours = [n for n in notes or () if n.startswith("\ngradlab: ")]
        if notes is not None and ours:  # printed once for all ranks, below (NOTE [One note for all ranks])
            exc.__notes__ = [n for n in notes if n not in ours]
            exc.__gradlab_notes__ = ours  # type: ignore[attr-defined]
    tb = exc.__traceback__
    stderr.flush()
    sys.stdout.flush()
    if stderr is sys.stderr:
        sys.excepthook(type(exc), exc, tb)
    else:  # a caller-supplied stream (tests): same text via the traceback module
        import traceback

        traceback.print_exception(type(exc), exc, tb, file=stderr)
    from .kinds import explain  # NOTE [Lazy imports] in tracker.py: only on a failure

    explanation = named_ddp(exc, explain(exc), tracker)
    if distributed() is not None:
        return report_rank(exc, explanation, stderr, verbose, tracker)
    if explanation.kind != "not_autograd":
        diagnosis = tracker.diagnosis_for(exc) if tracker is not None else None
        located = tracker.explanation_for(exc) if tracker is not None else None
        if located is not None:
            explanation = located  # the note printed it in short, located at the cut
        if verbose:
            if diagnosis is not None:
                print("\n" + prefixed(diagnosis.details()), file=stderr)
            if diagnosis is None or diagnosis.located is None:
                # of the message's explanation, what it says (the diagnosis has its own causes and fixes)
                import dataclasses

                said = explanation if diagnosis is None else dataclasses.replace(explanation, causes=(), fixes=())
                print("\n" + prefixed(said.details()), file=stderr)
        elif diagnosis is None and located is None:
            print("\n" + prefixed(str(explanation)), file=stderr)
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def _run(
    body: Callable[[], None], names: _MainNamespace, explain_only: bool, stderr: TextIO, verbose: bool = False
) -> int:
    tracker = None if explain_only else _start_tracking(names, stderr)
    try:
        body()
    except BaseException as e:
        if tracker is not None:  # the tracker sees the error leave: its note, for any autograd error
            _stop_tracking(tracker, stderr, e)
        if isinstance(e, SystemExit):
            return _exit_code(e, stderr)
        return _report(e, stderr, verbose, tracker)
    if tracker is not None:
        _stop_tracking(tracker, stderr)
    return 0


# NOTE [Fail open] (in messages.py), for `gradlab run`: the user's script always
# runs. If gradlab cannot start or stop its tracker, it says so in one line and
# the script runs (or goes on) as under plain python; gradlab's own error is
# never printed as if it were the script's.
def _start_tracking(names: _MainNamespace, stderr: TextIO) -> Tracker | None:
    from .tracker import track

    tracker = track(names=names, warn=True)
    try:
        tracker.__enter__()
    except Exception as e:
        print(_gradlab_failed("start", e), file=stderr)
        return None
    return tracker


def _stop_tracking(tracker: Tracker, stderr: TextIO, error: BaseException | None = None) -> None:
    try:
        tracker.__exit__(type(error) if error is not None else None, error, error.__traceback__ if error else None)
    except Exception as e:
        print(_gradlab_failed("stop", e), file=stderr)


def _gradlab_failed(when: str, error: BaseException) -> str:
    from .i18n import _, _t

    what = _("gradlab could not start its tracker") if when == "start" else _("gradlab could not stop its tracker")
    return prefixed(
        _t(
            "{what} ({error}); the script runs as under python, without gradlab's notes.",
            what=what,
            error=f"{type(error).__name__}: {error}",
        )
    )


def run_script(
    path: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    explain_only: bool = False,
    stderr: TextIO | None = None,
    verbose: bool = False,
) -> int:
    """Run the file ``path`` as ``python path args...`` would; return the exit code.

    The script runs as ``__main__`` with ``sys.argv == [path, *args]`` and its
    directory first on ``sys.path``. With ``explain_only=False`` it runs inside
    ``track()`` so autograd errors carry gradlab's diagnosis. A missing file
    gives python's message and exit code 2.

    Example::

        >>> run_script("train.py", ["--epochs", "1"])  # doctest: +SKIP
        0
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"run_script() needs the path of a script as a str, not {type(path).__name__}")
    err = stderr if stderr is not None else sys.stderr
    path = os.fspath(path)
    abspath = os.path.abspath(path)
    if os.path.isdir(abspath) or (
        os.path.isfile(abspath) and not abspath.endswith((".py", ".pyw")) and _is_zip(abspath)
    ):
        return _run_path_with_runpy(path, list(args), explain_only, err, verbose)
    try:
        with open(abspath, "rb") as f:
            source = f.read()
    except OSError as e:
        print(f"{_interpreter()}: can't open file {abspath!r}: [Errno {e.errno}] {e.strerror}", file=err)
        return 2

    module = types.ModuleType("__main__")
    module.__file__ = abspath
    module.__cached__ = None  # type: ignore[attr-defined]
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", abspath)
    namespace = vars(module)

    def body() -> None:
        code = compile(source, abspath, "exec", dont_inherit=True)
        exec(code, namespace)

    with _as_main([path, *args], os.path.dirname(abspath), module):
        return _run(body, _MainNamespace(namespace), explain_only, err, verbose)


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)


def _run_path_with_runpy(path: str, args: list[str], explain_only: bool, stderr: TextIO, verbose: bool) -> int:
    """Directories and zip files with a ``__main__.py``: as ``python DIR`` does."""

    def body() -> None:
        runpy.run_path(path, run_name="__main__")

    with _as_main([path, *args], None, None):
        return _run(body, _MainNamespace(), explain_only, stderr, verbose)


def run_module(
    name: str,
    args: Sequence[str] = (),
    *,
    explain_only: bool = False,
    stderr: TextIO | None = None,
    verbose: bool = False,
) -> int:
    """Run module ``name`` as ``python -m name args...`` would; return the exit code.

    Example::

        >>> run_module("mypackage.train", ["--epochs", "1"])  # doctest: +SKIP
        0
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"run_module() needs a module name such as 'train', not {name!r}")
    err = stderr if stderr is not None else sys.stderr
    names = _MainNamespace()

    def body() -> None:
        runpy.run_module(name, run_name="__main__", alter_sys=True)

    with _as_main(["-m", *args], os.getcwd(), None):
        try:
            from importlib.util import find_spec

            found = find_spec(name) is not None
        except (ImportError, ValueError) as e:
            print(
                f"{_interpreter()}: Error while finding module specification for {name!r} ({type(e).__name__}: {e})",
                file=err,
            )
            return 1
        if not found:
            print(f"{_interpreter()}: No module named {name}", file=err)
            return 1
        return _run(body, names, explain_only, err, verbose)


# --------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------


def explain_text(text: str, stdout: TextIO | None = None, verbose: bool = False) -> int:
    """Print the explanation of the error in ``text`` (all of it with ``verbose``); 0 if recognised, else 1.

    Example::

        >>> explain_text("element 0 of tensors does not require grad and does not have a grad_fn")
        ... # doctest: +ELLIPSIS
        gradlab: error[GL0003 no grad_fn]: Element 0 of the tensors you called backward on has no graph: ...
        0
    """
    out = stdout if stdout is not None else sys.stdout
    from .kinds import explain

    explanation = explain(text)
    print(prefixed(explanation.details() if verbose else str(explanation)), file=out)
    return 0 if explanation.kind != "not_autograd" else 1


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _usage_error(message: object) -> int:
    print(_SYNOPSIS, file=sys.stderr)
    print(prefixed(_t("error: {message}", message=message)), file=sys.stderr)
    return 2


def _main_run(argv: list[str]) -> int:
    explain_only = verbose = False
    while argv and argv[0].startswith("-"):
        opt = argv.pop(0)
        if opt == "--explain-only":
            explain_only = True
        elif opt in ("-v", "--verbose"):
            verbose = True
        elif opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        elif opt == "-m":
            if not argv:
                return _usage_error(T("-m needs a module name"))
            module = argv.pop(0)
            return run_module(module, argv, explain_only=explain_only, verbose=verbose)
        elif opt.startswith("-m") and len(opt) > 2:  # -mtrain, like python
            return run_module(opt[2:], argv, explain_only=explain_only, verbose=verbose)
        elif opt == "--":
            break
        else:
            return _usage_error(T("unknown option {option} for run", option=repr(opt)))
    if not argv:
        return _usage_error(T("run needs a script (SCRIPT.py) or -m MODULE"))
    script = argv.pop(0)
    return run_script(script, argv, explain_only=explain_only, verbose=verbose)


def _main_explain(argv: list[str]) -> int:
    path = None
    verbose = False
    while argv:
        opt = argv.pop(0)
        if opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if opt in ("-v", "--verbose"):
            verbose = True
        elif opt == "--codes":
            return _print_codes()
        elif _is_code(opt):
            return _print_long_form(opt)
        elif opt == "--file" and argv:
            path = argv.pop(0)
        elif opt.startswith("--file="):
            path = opt.split("=", 1)[1]
        else:
            return _usage_error(
                T("unknown argument {argument} for explain (use --file F or stdin)", argument=repr(opt))
            )
    if path is None or path == "-":
        read = _read_stdin()
        if read is None:
            return 2
        text = read
    else:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(
                prefixed(
                    _t(
                        "can't open file {path}: [Errno {errno}] {reason}",
                        path=repr(path),
                        errno=e.errno,
                        reason=e.strerror,
                    )
                ),
                file=sys.stderr,
            )
            return 2
    try:
        code = explain_text(text, verbose=verbose)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head -1` stopped reading: stop quietly, as `cat` does
        _silence_stdout()
        return 1
    return code


def _read_stdin() -> str | None:
    """The text on stdin, after a prompt on a terminal; None (with a note on stderr) when stdin is closed."""
    from .i18n import _

    stdin = sys.stdin
    if stdin is None or stdin.closed:
        print(
            prefixed(
                _(
                    "error: stdin is closed; pass the traceback with --file TRACEBACK.txt, "
                    "or pipe it in: python -m gradlab explain < error.txt"
                )
            ),
            file=sys.stderr,
        )
        return None
    if stdin.isatty():
        print(
            _(
                "Paste the traceback (or only its last line, the error message), then press Enter and "
                "Ctrl-D to end it (Ctrl-Z and Enter on Windows):"
            ),
            file=sys.stderr,
            flush=True,
        )
    return stdin.read()


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush finds no broken pipe."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no real file descriptor behind stdout
        pass


def _version() -> str:
    """``gradlab 0.2.0 (torch-gradlab; Python 3.11.7, torch 2.13.0)``: torch's version read without importing it."""
    import platform
    from importlib import metadata

    from . import _DISTRIBUTION, __version__
    from .i18n import _

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = _("not installed")
    return f"gradlab {__version__} ({_DISTRIBUTION}; Python {platform.python_version()}, torch {torch_version})"


def _is_code(arg: str) -> bool:
    from .codes import is_code

    return is_code(arg)


def _print_codes() -> int:
    from .codes import CODES

    for c in CODES:
        print(f"{c.code}  {c.title}", file=sys.stdout)
    return 0


def _print_long_form(code: str) -> int:
    from .kinds import explain_code

    try:
        text = explain_code(code)
    except ValueError as e:
        print(prefixed(_t("error: {message}", message=e)), file=sys.stderr)
        return 2
    print(prefixed(text), file=sys.stdout)
    return 0


def fix_child(spec_path: str) -> None:
    """One run of ``gradlab fix`` (in its own process): run a script as ``run_script`` does, under
    :func:`gradlab.track` and :func:`gradlab.record_training`, and write what happened as JSON.

    ``spec_path`` names a JSON file written by :mod:`gradlab.fix`: the script, its argv, the step budget
    and where to write the result.
    """
    import json
    import traceback

    from . import messages
    from .fix import _first_sentence, _fix_data, _user_line
    from .i18n import _t, set_language
    from .tracker import track
    from .trained import record_training

    set_language(os.environ.get("GRADLAB_FIX_LANGUAGE") or None)
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    script = spec["script"]
    out: dict[str, object] = {"outcome": "finished", "record": {}}
    module = types.ModuleType("__main__")
    module.__file__ = script
    module.__cached__ = None  # type: ignore[attr-defined]
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    namespace = vars(module)
    with open(script, "rb") as f:
        source = f.read()
    record = None
    tracker = None
    _same_random_state()  # every run of gradlab fix starts alike (NOTE [Oracles]): a script need not seed itself
    try:
        if spec.get("reference"):  # the code as written: saved tensors kept from the writes (NOTE [Oracles])
            import torch

            with (
                _as_main([spec["argv0"], *spec["args"]], os.path.dirname(script), module),
                torch.autograd.graph.allow_mutation_on_saved_tensors(),
                record_training(steps=spec["steps"]) as record,
            ):
                exec(compile(source, script, "exec", dont_inherit=True), namespace)
        else:
            with (
                _as_main([spec["argv0"], *spec["args"]], os.path.dirname(script), module),
                track(names=_MainNamespace(namespace), warn=False) as tracker,
                record_training(steps=spec["steps"]) as record,
            ):
                exec(compile(source, script, "exec", dont_inherit=True), namespace)
        if record is not None and record.stopped:
            out["outcome"] = "budget"
    except SystemExit as e:
        if e.code not in (None, 0):
            out["outcome"] = "exit"
            out["message"] = _t("exit code {code}", code=e.code)
    except BaseException as e:  # the script's own error: reported, not raised
        where = _user_line(e, script)
        out["where"] = where
        out["message"] = _first_sentence("".join(traceback.format_exception_only(type(e), e)).strip().splitlines()[0])
        if isinstance(e, EOFError) and not spec["stdin"]:
            out["outcome"] = "needs-input"
        elif messages.find(e) is not None:
            out["outcome"] = "autograd"
            diagnosis = tracker.diagnosis_for(e) if tracker is not None else None
            if diagnosis is not None:
                out["headline"] = str(diagnosis).splitlines()[0]
                out["fixes"] = [_fix_data(fx) for fx in diagnosis.fixes]
                # a write to a tensor that is no parameter: the gradient of the code as written is its oracle
                out["reference"] = diagnosis.cause in ("inplace_op", "fast_weights_in_place")
        else:
            out["outcome"] = "error"
    out["record"] = record.as_dict() if record is not None else {}
    with open(spec["result"], "w", encoding="utf-8") as f:
        json.dump(out, f)
    sys.stdout.flush()
    sys.stderr.flush()


def _same_random_state() -> None:
    """Seed torch, random and numpy (when installed) at 0: the runs of one ``gradlab fix`` draw the same numbers."""
    import random

    import torch

    random.seed(0)
    torch.manual_seed(0)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(0)


def _main_fix(argv: list[str]) -> int:
    from .i18n import _, _t

    steps, timeout, apply, unsafe = 3, 60.0, False, False
    while argv and argv[0].startswith("-"):
        opt = argv.pop(0)
        if opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if opt == "--":
            break
        if opt == "-m" or (opt.startswith("-m") and not opt.startswith("--")):
            return _usage_error(_("fix runs a script file (SCRIPT.py), not -m MODULE"))
        if opt in ("--apply", "--unsafe"):
            apply, unsafe = apply or opt == "--apply", unsafe or opt == "--unsafe"
            continue
        name, _sep, value = opt.partition("=")
        if name not in ("--steps", "--timeout"):
            return _usage_error(_t("unknown option {option} for fix", option=repr(opt)))
        if not _sep:
            if not argv:
                return _usage_error(_t("{option} needs a value, e.g. {option} 3", option=name))
            value = argv.pop(0)
        try:
            if name == "--steps":
                steps = int(value)
                if steps < 1:
                    raise ValueError(value)
            else:
                timeout = float(value)
                if not timeout > 0:
                    raise ValueError(value)
        except ValueError:
            return _usage_error(
                _t("{option} needs a number above 0 (e.g. {option} 3), not {value}", option=name, value=repr(value))
            )
    if unsafe and not apply:
        return _usage_error(_("--unsafe only goes with --apply"))
    if not argv:
        return _usage_error(_("fix needs a script: python -m gradlab fix SCRIPT.py [ARGS...]"))
    script = argv.pop(0)
    stdin = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    from .fix import fix_script

    try:
        report = fix_script(script, argv, steps=steps, timeout=timeout, stdin=stdin)
    except ValueError as e:
        print(_t("gradlab fix: {error}", error=e), file=sys.stderr)
        return 2
    print(report.render())
    edited = [t for t in report.trials if t.edits]
    if edited and all(t.run is None for t in edited):
        print(_("gradlab fix: none of the fixes' edits could be applied to the script (see above)"), file=sys.stderr)
        return 2
    if report.original.outcome != "autograd":
        return 0 if report.original.outcome in ("finished", "budget", "exit", "timeout") else 1
    if apply:
        try:
            trial = report.apply(unsafe=unsafe)
        except ValueError as e:
            print(_t("gradlab fix: nothing applied: {error}", error=e), file=sys.stderr)
            return 1 if not report.verified else 2
        from .fix import _display

        print(_t("Applied fix {n} to {files}.", n=trial.number, files=", ".join(sorted(map(_display, trial.patched)))))
    return 0 if report.verified else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m gradlab`` and the ``gradlab`` command.

    ``argv`` defaults to ``sys.argv[1:]``; the return value is the exit code.

    Example::

        >>> main(["--help"])  # doctest: +ELLIPSIS
        usage: python -m gradlab run ...
        0
    """
    args = list(sys.argv[1:] if argv is None else argv)
    from .i18n import set_language

    set_language(None)  # gradlab's own words in the language of LANG, when it has a catalog for it
    if any(not isinstance(a, str) for a in args):
        raise TypeError("main() takes a list of str arguments, like sys.argv[1:]")
    if not args:
        print(USAGE, end="", file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    if args[0] in ("-V", "--version"):
        print(_version())
        return 0
    command, rest = args[0], args[1:]
    if command == "run":
        return _main_run(rest)
    if command == "explain":
        return _main_explain(rest)
    if command == "fix":
        return _main_fix(rest)
    if command.endswith(".py"):
        return _usage_error(T("did you mean: python -m gradlab run {script}", script=command))
    return _usage_error(T("unknown command {command}", command=repr(command)))
