"""Run cases under ``gradlab.track()`` and dump each failure's first fix as JSON (a child of judge.py).

``python driver.py OUT.json SCRIPT...``: each script runs with
``runpy.run_path(..., run_name="__main__")`` inside ``with gradlab.track() as t:``;
the RuntimeError it raises is caught and ``t.diagnosis_for(err)``'s first fix is
written out: summary, trains, code, applicability, claims and edits.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
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
                        "summary": fix.summary,
                        "trains": fix.trains,
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


if __name__ == "__main__":
    results = {s: first_fix(s, 60.0) for s in sys.argv[2:]}
    Path(sys.argv[1]).write_text(json.dumps(results, indent=1))
