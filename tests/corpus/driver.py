"""Run cases under ``gradlab.track()`` and dump each failure's first fix as JSON (a child of judge.py).

``python driver.py --check OUT.json SCRIPT...`` instead compares ``gradlab.check()``
right before each failing backward with the note (:func:`check_agreement`).

``python driver.py OUT.json SCRIPT...``: each script runs with
``runpy.run_path(..., run_name="__main__")`` inside ``with gradlab.track() as t:``;
the RuntimeError it raises is caught and ``t.diagnosis_for(err)``'s first fix is
written out: summary, trains, code, applicability, claims and edits.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the gradlab of this checkout, not an installed one

import gradlab  # noqa: E402


class _Timeout(BaseException):
    pass


def first_fix(script: str, timeout: float) -> dict[str, Any]:
    out: dict[str, Any] = {"gradlab": gradlab.__file__, "error": None, "fix": None, "fixes": 0}

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Timeout

    signal.signal(signal.SIGALRM, on_alarm)
    argv, path0, cwd = sys.argv, sys.path[0], os.getcwd()
    sys.argv, sys.path[0] = [script], str(Path(script).parent)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with gradlab.track() as t:
            try:
                runpy.run_path(script, run_name="__main__")
            except RuntimeError as err:
                out["error"] = str(err).partition("\n")[0]
                diagnosis = t.diagnosis_for(err)
                fixes = list(diagnosis.fixes) if diagnosis is not None else []
                out["diagnosis"] = diagnosis is not None
                out["fixes"] = len(fixes)
                if fixes:
                    fix = fixes[0]
                    out["fix"] = {
                        "summary": str(fix.summary),
                        "trains": str(fix.trains),
                        "code": fix.code,
                        "applicability": fix.applicability,
                        "claims": [[loss, list(modules)] for loss, modules in fix.claims],
                        "edits": [
                            {"filename": e.filename, "start": e.start, "end": e.end, "text": e.text} for e in fix.edits
                        ],
                    }
    except _Timeout:
        out["error"] = "timed out"
    except BaseException as err:  # the script's own failure, not the autograd error
        out["error"] = f"{type(err).__name__}: {err}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.argv, sys.path[0] = argv, path0
        os.chdir(cwd)
    return out


def _run_tracked(script: str, timeout: float, checked: list[Any] | None = None) -> Any:
    """Run ``script`` under ``gradlab.track()`` to its autograd error; that error's diagnosis (None if none).

    ``checked``: the list the probe line of a copy appends its ``gradlab.check()`` results to.
    """

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Timeout

    signal.signal(signal.SIGALRM, on_alarm)
    argv, path0, cwd = sys.argv, sys.path[0], os.getcwd()
    sys.argv, sys.path[0] = [script], str(Path(script).parent)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    extra = {"_CHECKED": checked, "gradlab": gradlab} if checked is not None else None
    try:
        with gradlab.track() as t:
            try:
                runpy.run_path(script, init_globals=extra, run_name="__main__")
            except RuntimeError as err:
                return t.diagnosis_for(err)
    except BaseException:  # a timeout or the script's own failure: no diagnosis to compare
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.argv, sys.path[0] = argv, path0
        os.chdir(cwd)
    return None


def _said(diagnosis: Any) -> dict[str, Any]:
    fix = diagnosis.fixes[0] if diagnosis.fixes else None
    return {"cause": diagnosis.cause, "summary": str(fix.summary) if fix else None, "code": fix.code if fix else None}


def check_agreement(script: str, timeout: float, scratch: Path) -> dict[str, Any]:
    """``gradlab.check(loss)`` right before the failing backward, against the note on the error it raises.

    The note of ``script`` names the failing backward's line; a copy gets
    ``_CHECKED.append(gradlab.check(LOSS))`` inserted before that line (LOSS the
    name the line backwards) and runs; the last check before the failure and the
    copy's note are compared: cause, first fix's summary and code. ``possible`` is
    False, with ``why``, where no check can be inserted.
    """
    note = _run_tracked(script, timeout)
    if note is None or note.needed_by is None:
        return {"possible": False, "why": "gradlab gave no note on the failure"}
    needed = note.needed_by
    if Path(needed.filename).resolve() != Path(script).resolve():
        return {"possible": False, "why": "the failing backward runs in another file"}
    lines = Path(script).read_text().splitlines()
    line = lines[needed.lineno - 1]
    m = re.match(r"(\s*)([A-Za-z_][\w.]*)\.backward\(", line)
    if m is None:
        return {"possible": False, "why": f"the failing line backwards no named loss: {line.strip()}"}
    lines.insert(needed.lineno - 1, f"{m[1]}_CHECKED.append(gradlab.check({m[2]}))")
    copy = scratch / Path(script).parent.name / Path(script).name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("\n".join(lines) + "\n")
    checked: list[Any] = []
    again = _run_tracked(str(copy), timeout, checked)
    if again is None or not checked:
        return {"possible": False, "why": "the probed copy did not fail as the script does"}
    return {"possible": True, "check": _said(checked[-1]), "note": _said(again)}


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        with tempfile.TemporaryDirectory(prefix="corpus-check-") as tmp:
            agreements = {s: check_agreement(s, 60.0, Path(tmp)) for s in sys.argv[3:]}
        Path(sys.argv[2]).write_text(json.dumps(agreements, indent=1))
    else:
        results = {s: first_fix(s, 60.0) for s in sys.argv[2:]}
        Path(sys.argv[1]).write_text(json.dumps(results, indent=1))
