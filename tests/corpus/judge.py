"""The judge of gradlab's first fix: apply it as printed, run it through the oracle, compare with the intent.

For each case: the driver (``driver.py``, a subprocess) runs ``broken.py`` under
``gradlab.track()`` and dumps the failure's first fix; its edits are applied with
``gradlab.edits.apply_edits`` to a copy of ``broken.py`` in a scratch folder, and
the copy runs through the oracle like the intended variants. The fix

- **fits** when the copy's gradients at every optimizer step equal those of one
  intended variant (``oracle.compare`` is empty): the fix gives the training the
  author meant. A fix without edits does not fit: it cannot be applied as printed;
- is **trains-true** when its ``claims`` (loss -> modules) equal the copy's
  measured ``oracle.trained()`` table and the copy ran clean to the step budget.

:func:`evaluate` runs everything in four subprocesses (broken and intended
scripts, the driver, the patched copies, each batch in one process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import oracle
from .catalog import Case

DRIVER = Path(__file__).resolve().parent / "driver.py"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Verdict:
    """What the judge found for one case's first fix."""

    case: str
    fix: dict[str, Any] | None  # the driver's dump of the first fix (None: no diagnosis or no fix)
    tracked_error: str | None  # the error the script raised under track()
    patched: oracle.Record | None = None  # the copy with the fix's edits applied, run by the oracle
    differences: dict[str, list[str]] = field(default_factory=dict)  # variant -> compare() sentences
    fits: bool = False
    trains_true: bool = False
    why: str = ""  # one sentence: why it does not fit (or which variant it fits)

    def __repr__(self) -> str:
        return f"Verdict({self.case}: fits={self.fits}, trains_true={self.trains_true}, {self.why})"

    @property
    def has_edits(self) -> bool:
        return bool(self.fix and self.fix["edits"])


@dataclass
class Evaluation:
    """Every record of one corpus run: broken and intended runs, extra scripts, and the judge's verdicts."""

    records: dict[str, oracle.Record]  # "<case>/<stem>" or an extra script's path -> its record
    verdicts: dict[str, Verdict]
    seconds: dict[str, float]  # phase -> wall seconds
    extra_verdicts: list[Verdict] = field(default_factory=list)  # of evaluate()'s extra_fixes, in order

    def __repr__(self) -> str:
        return f"Evaluation({len(self.records)} records; {self.figure_line()})"

    def figures(self) -> dict[str, int]:
        v = self.verdicts.values()
        return {
            "cases": len(self.verdicts),
            "first fix has edits": sum(x.has_edits for x in v),
            "first fix has claims": sum(bool(x.fix and x.fix.get("claims")) for x in v),
            "first fix fits": sum(x.fits for x in v),
            "trains true": sum(x.trains_true for x in v),
        }

    def figure_line(self) -> str:
        f = self.figures()
        return (
            f"corpus judge: {f['cases']} cases; first fix has edits {f['first fix has edits']}, "
            f"has claims {f['first fix has claims']}, fits {f['first fix fits']}, trains true {f['trains true']}"
        )


def first_fixes(scripts: Sequence[Path], timeout: float = 60) -> dict[str, dict[str, Any]]:
    """The driver's dump for each script (key: the script's resolved path)."""
    with tempfile.TemporaryDirectory(prefix="corpus-driver-") as tmp:
        out = Path(tmp) / "fixes.json"
        paths = [str(Path(s).resolve()) for s in scripts]
        subprocess.run(
            [sys.executable, str(DRIVER), str(out), *paths],
            cwd=tmp,
            timeout=timeout * len(paths) + 60,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "LANGUAGE": ""},
            check=False,
        )
        if not out.exists():
            return {}
        data: dict[str, dict[str, Any]] = json.loads(out.read_text())
        return data


def check_agreements(scripts: Sequence[Path], timeout: float = 60) -> dict[str, dict[str, Any]]:
    """``check()`` before each script's failing backward against its note (``driver.py --check``), by resolved path."""
    with tempfile.TemporaryDirectory(prefix="corpus-driver-") as tmp:
        out = Path(tmp) / "checks.json"
        paths = [str(Path(s).resolve()) for s in scripts]
        subprocess.run(
            [sys.executable, str(DRIVER), "--check", str(out), *paths],
            cwd=tmp,
            timeout=2 * timeout * len(paths) + 60,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "LANGUAGE": ""},
            check=False,
        )
        if not out.exists():
            return {}
        data: dict[str, dict[str, Any]] = json.loads(out.read_text())
        return data


def patch(case: Case, fix: dict[str, Any], folder: Path) -> tuple[Path | None, str]:
    """A copy of ``case.broken`` with ``fix``'s edits applied, in ``folder``; or None and the reason."""
    from gradlab.edits import Edit, apply_edits

    if not fix["edits"]:
        return None, "the first fix has no edits (it cannot be applied as printed)"
    here = case.broken.resolve()
    edits = [Edit(e["filename"], e["start"], e["end"], e["text"]) for e in fix["edits"]]
    others = sorted({e.filename for e in edits if Path(e.filename).resolve() != here})
    if others:
        return None, f"the first fix edits another file than the script: {', '.join(others)}"
    try:
        text = apply_edits(case.broken.read_text(), edits)
    except ValueError as err:
        return None, f"the first fix's edits do not apply: {err}"
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "broken.py"
    copy.write_text(text)
    return copy, ""


def judge_fixes(
    pairs: Sequence[tuple[Case, dict[str, Any]]], records: dict[str, oracle.Record], steps: int = 3
) -> list[Verdict]:
    """A verdict for each (case, fix): the fix's edits applied to a copy of broken.py, run, compared.

    ``fix`` is a driver dump (``edits`` as Edit fields, ``claims`` as [loss, [modules]]);
    ``records`` must hold each case's intended variants (keys ``"<case>/<variant>"``).
    The copies run in one oracle process.
    """
    verdicts = [Verdict(case.name, fix, None) for case, fix in pairs]
    to_run: list[tuple[int, Path]] = []
    with tempfile.TemporaryDirectory(prefix="corpus-judge-") as scratch:
        for i, (case, fix) in enumerate(pairs):
            copy, why = patch(case, fix, Path(scratch) / f"{i:03d}-{case.name}")
            if copy is None:
                verdicts[i].why = why
            else:
                to_run.append((i, copy))
        patched = oracle.run_many([p for _, p in to_run], steps=steps) if to_run else []
    for (i, _), rec in zip(to_run, patched):
        case, fix = pairs[i]
        v = verdicts[i]
        v.patched = rec
        for variant in case.variants:
            v.differences[variant] = oracle.compare(records[f"{case.name}/{variant}"], rec)
        fitting = [k for k, d in v.differences.items() if not d]
        v.fits = bool(fitting)
        # a claim may call a module by another of its names (``model`` in the training function)
        claims = {
            loss: {oracle.canonical(rec, m) for m in modules} for loss, modules in fix.get("claims", []) if modules
        }
        v.trains_true = bool(claims) and rec.status in ("budget", "finished") and claims == oracle.trained(rec)
        if fitting:
            v.why = f"fits {fitting[0]}.py"
        else:
            v.why = "; ".join(f"{k}.py: {d[0]}" for k, d in v.differences.items())
    return verdicts


def evaluate(
    cases: Sequence[Case],
    steps: int = 3,
    extra: Sequence[Path] = (),
    extra_fixes: Sequence[tuple[Case, dict[str, Any]]] = (),
) -> Evaluation:
    """Run every case's scripts (and ``extra`` scripts) through the oracle and judge gradlab's first fix.

    ``extra_fixes`` are judged too, in the same oracle process as gradlab's fixes
    (hand-made fixes that test the judge); their verdicts are ``Evaluation.extra_verdicts``.
    """
    seconds: dict[str, float] = {}
    keys, scripts = [], []
    for case in cases:
        for stem in ["broken", *case.variants]:
            keys.append(f"{case.name}/{stem}")
            scripts.append(case.folder / f"{stem}.py")
    keys += [str(p) for p in extra]
    scripts += list(extra)
    start = time.perf_counter()
    records = dict(zip(keys, oracle.run_many(scripts, steps=steps)))
    seconds["oracle: broken, intended and extra scripts"] = time.perf_counter() - start

    start = time.perf_counter()
    dumps = first_fixes([c.broken for c in cases])
    seconds["driver: first fixes under gradlab.track()"] = time.perf_counter() - start

    verdicts: dict[str, Verdict] = {}
    judged: list[tuple[Case, dict[str, Any]]] = []
    for case in cases:
        dump = dumps.get(str(case.broken.resolve()), {})
        verdicts[case.name] = Verdict(case.name, dump.get("fix"), dump.get("error"))
        if dump.get("fix") is None:
            verdicts[case.name].why = "gradlab gave no fix" if dump else "the driver did not report this case"
        else:
            judged.append((case, dump["fix"]))
    start = time.perf_counter()
    results = judge_fixes([*judged, *extra_fixes], records, steps=steps)
    for (case, _), v in zip(judged, results):
        v.tracked_error = verdicts[case.name].tracked_error
        verdicts[case.name] = v
    seconds["oracle: patched copies"] = time.perf_counter() - start
    return Evaluation(records, verdicts, seconds, results[len(judged) :])
