"""Where and how ``gradlab fix`` runs a script: a scratch directory that mirrors the script's folder, and a
subprocess that runs the script (or a patched copy) under the tracker and the training record.

NOTE [The scratch directory]
The copy runs in a fresh directory that mirrors the script's directory: small
files are copied, large files are linked (data sets are read, not copied),
folders are mirrored the same way (up to 2,000 entries in all; a larger folder
is linked whole), ``__pycache__`` is left out and no bytecode is written, so
sibling modules import and relative data paths open as before. When the working
directory is the script's directory (or inside it), the copy runs in the
mirror, so files the script writes (checkpoints, logs) land there, not among
the user's files. A large file the script overwrites, or a file it writes into
a folder linked whole, still reaches the user's copy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .i18n import _t

if TYPE_CHECKING:
    from .trained import TrainingRecord

__all__ = ["RunResult", "mirror", "run_child"]

_COPY_LIMIT = 1 << 20  # files larger than this are linked into the scratch directory, not copied
_MIRROR_ENTRIES = 2000  # a script's folder mirrored entry by entry up to this many; linked whole beyond


@dataclass(frozen=True)
class RunResult:
    """One run of the script (the unpatched one or a candidate's copy) in a subprocess.

    ``outcome`` is ``budget`` (stopped after the step budget), ``finished`` (the
    script ended, exit code 0), ``exit`` (it ended with another exit code),
    ``autograd`` (a backward raised an autograd error), ``error`` (another
    exception), ``needs-input`` (it read stdin and none was given) or
    ``timeout``. ``message`` is the error's last line, ``where`` the user's line.
    """

    outcome: str
    seconds: float
    record: TrainingRecord
    message: str | None = None
    where: str | None = None
    headline: str | None = None
    fixes: tuple[dict[str, Any], ...] = ()
    output: str = ""
    reference: bool = False  # the failure is a write to a tensor that is no parameter (NOTE [Oracles])

    @property
    def clean(self) -> bool:
        """Ran to the budget (or to its own end after at least one step) without an error."""
        return self.outcome == "budget" or (self.outcome == "finished" and bool(self.record.steps))


def _gradlab_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(
    script: str,
    argv0: str,
    args: Sequence[str],
    cwd: str,
    steps: int | None,
    timeout: float,
    stdin: bytes,
    workdir: str,
    reference: bool = False,
) -> RunResult:
    """Run ``script`` under the tracker and the training record in a subprocess; read back its result.

    The subprocess runs :func:`gradlab.cli.fix_child`, which runs the script as ``gradlab run`` does.
    """
    spec = os.path.join(workdir, "spec.json")
    result = os.path.join(workdir, "result.json")
    with open(spec, "w", encoding="utf-8") as f:
        json.dump(
            {
                "script": script,
                "argv0": argv0,
                "args": list(args),
                "steps": steps,
                "result": result,
                "stdin": bool(stdin),
                "reference": reference,
            },
            f,
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([_gradlab_root(), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    from .i18n import language

    env["GRADLAB_FIX_LANGUAGE"] = language()
    code = "import sys; from gradlab.cli import fix_child; fix_child(sys.argv[1])"  # the CLI runs scripts
    from .trained import TrainingRecord

    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, spec],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _unused = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        output, _unused = proc.communicate()
        return RunResult(
            "timeout",
            time.monotonic() - start,
            TrainingRecord(None, None),
            output=output.decode("utf-8", "replace"),
        )
    seconds = time.monotonic() - start
    data = _load(result)
    text = output.decode("utf-8", "replace")
    if data is None:
        last = text.strip().splitlines()[-1] if text.strip() else _t("exit code {code}", code=proc.returncode)
        return RunResult("error", seconds, TrainingRecord(None, None), message=last, output=text)
    return RunResult(
        data["outcome"],
        seconds,
        TrainingRecord.from_dict(data["record"]),
        message=data.get("message"),
        where=data.get("where"),
        headline=data.get("headline"),
        fixes=tuple(data.get("fixes", ())),
        output=text,
        reference=bool(data.get("reference")),
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.kill()


def _load(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return None


def mirror(directory: str, into: str, patched: dict[str, str], budget: list[int] | None = None) -> None:
    """Fill ``into`` with ``directory``'s entries (NOTE [The scratch directory]); ``patched`` maps names to text.

    Folders are mirrored the same way (so a file the script writes into one lands in
    the mirror), as long as the mirror stays under ``_MIRROR_ENTRIES`` entries;
    past that, a folder is linked whole.
    """
    budget = budget if budget is not None else [_MIRROR_ENTRIES]
    for entry in sorted(os.listdir(directory)):
        if entry == "__pycache__":
            continue
        src, dst = os.path.join(directory, entry), os.path.join(into, entry)
        budget[0] -= 1
        if entry in patched:
            with open(dst, "w", encoding="utf-8", newline="") as f:
                f.write(patched[entry])
        elif os.path.islink(src):
            os.symlink(os.path.realpath(src), dst)
        elif os.path.isfile(src) and os.path.getsize(src) <= _COPY_LIMIT and budget[0] > 0:
            shutil.copy2(src, dst)
        elif os.path.isdir(src) and budget[0] > 0 and _entries_within(src, budget[0]):
            os.mkdir(dst)
            mirror(src, dst, {}, budget)
        else:
            os.symlink(src, dst)


def _entries_within(directory: str, limit: int) -> bool:
    """Whether ``directory`` holds at most ``limit`` entries, all levels counted (stops counting past it)."""
    count = 0
    for _root, dirs, files in os.walk(directory):
        count += len(dirs) + len(files)
        if count > limit:
            return False
    return True
