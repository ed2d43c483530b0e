"""Run a script as ``python -m gradlab run`` does and write what gradlab saw as JSON (for tests/test_frameworks.py).

Usage: ``python tests/framework_probe.py OUT.json SCRIPT [ARGS...]``. The script runs through
:func:`gradlab.cli.run_script` (the very code of ``gradlab run``) inside
:func:`gradlab.record_training`, so the JSON holds both what gradlab said (the diagnosis of the
failing backward: its fixes, their edits and claims; gradlab's warnings) and what trained, measured
(which loss changed which module's gradients at each optimizer step).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import gradlab
from gradlab.cli import run_script


def _location(loc: Any) -> list[Any] | None:
    return None if loc is None else [loc.filename, loc.lineno, loc.code]


def main(out: str, script: str, *args: str) -> None:
    raised: list[BaseException] = []
    shown = sys.excepthook

    def excepthook(kind: type[BaseException], error: BaseException, tb: Any) -> None:
        raised.append(error)  # run_script reports the script's error through sys.excepthook, as python does
        shown(kind, error, tb)

    sys.excepthook = excepthook
    with warnings.catch_warnings(record=True) as seen, gradlab.record_training() as record:
        warnings.simplefilter("always", gradlab.GradlabWarning)
        code = run_script(script, list(args), stderr=sys.stderr)
    sys.excepthook = shown
    data: dict[str, Any] = {"exit": code, "record": record.as_dict()}
    data["warnings"] = [
        [w.category.__name__, str(w.message), w.filename, w.lineno]
        for w in seen
        if issubclass(w.category, gradlab.GradlabWarning)
    ]
    data["diagnosis"] = None
    if raised:
        data["error"] = f"{type(raised[0]).__name__}: {raised[0]}"
        try:
            diagnosis = gradlab.last_diagnosis(raised[0])
        except ValueError:
            diagnosis = None
        if diagnosis is not None:
            problem = diagnosis.problems[0] if diagnosis.problems else None
            data["diagnosis"] = {
                "note": str(diagnosis),
                "cause": diagnosis.cause,
                "kind": diagnosis.kind,
                "tensor": str(problem.tensor) if problem is not None else None,
                "writes": [[w.op, *(_location(w.location) or [None, None, None])] for w in problem.writes]
                if problem is not None
                else [],
                "saved_at": _location(problem.saved_at) if problem is not None else None,
                "needed_by": _location(diagnosis.needed_by),
                "fixes": [
                    {
                        "summary": str(fix.summary),
                        "applicability": fix.applicability,
                        "claims": [[loss, list(modules)] for loss, modules in fix.claims],
                        "edits": [[e.filename, e.start, e.end, e.text] for e in fix.edits],
                    }
                    for fix in diagnosis.fixes
                ],
            }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(data, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
