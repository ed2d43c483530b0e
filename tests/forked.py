"""Run many scripts as ``python SCRIPT`` or ``python -m gradlab run SCRIPT`` would, in forked children of one process.

Starting Python, importing torch and taking a first optimizer step (which
imports ``torch._dynamo``) costs about two seconds of CPU per process. This
process pays it once, then forks one child per script: each script still runs
in a process of its own (its own ``__main__``, warnings registry, torch global
state and exit status), without paying the start again. On 2 shared cores that
is the difference between a few seconds and a few minutes for the compatibility
corpus (``tests/test_compat.py``).

A child in ``python`` mode runs the file as the interpreter runs a script: as
``__main__`` with ``sys.argv == [SCRIPT]`` and the script's folder first on
``sys.path``; an exception that escapes is printed by ``sys.excepthook`` from
the script's first frame, with exit status 1, as Python does. A child in
``gradlab`` mode calls ``gradlab.cli.main(["run", SCRIPT])``, which is what
``python -m gradlab run SCRIPT`` calls. ``tests/test_compat.py`` checks both
against real interpreters on a few scripts.

Usage: ``python tests/forked.py python|gradlab SCRIPT...``. Prints one JSON
object per line: ``{"script", "code", "stdout", "stderr", "seconds", "cpu_seconds"}``.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import json
import os
import sys
import tempfile
import time
import types

import torch

import gradlab.cli


def _warm_up() -> None:
    """Import what every training script imports on its first optimizer step (torch._dynamo: a second of CPU)."""
    net = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net(torch.ones(1, 2)).sum().backward()
    opt.step()


def _as_python(path: str) -> int:
    """Run ``path`` as ``python path`` does; return the exit status."""
    with open(path, "rb") as f:
        source = f.read()
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__cached__ = None  # type: ignore[attr-defined]
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    sys.modules["__main__"] = module
    sys.argv[:] = [path]
    sys.path[0] = os.path.dirname(path)
    try:
        exec(compile(source, path, "exec", dont_inherit=True), vars(module))
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next  # Python's traceback starts at the script's first frame
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    return 0


def _as_gradlab(path: str) -> int:
    sys.argv[:] = [os.path.join(os.path.dirname(gradlab.cli.__file__), "__main__.py"), "run", path]
    return gradlab.cli.main(["run", path])


def run(mode: str, path: str) -> dict[str, object]:
    """Fork, run ``path`` in the child, and return what it printed and its exit status."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                code = _as_python(path) if mode == "python" else _as_gradlab(path)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "script": path,
            "code": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
            "seconds": round(time.perf_counter() - start, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        }


def main(argv: list[str]) -> int:
    mode, *scripts = argv
    if mode not in ("python", "gradlab") or not scripts:
        print("usage: python tests/forked.py python|gradlab SCRIPT...", file=sys.stderr)
        return 2
    _warm_up()
    for path in scripts:
        print(json.dumps(run(mode, os.path.abspath(path))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
