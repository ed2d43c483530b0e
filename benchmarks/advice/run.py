#!/usr/bin/env python
"""The bug-injection benchmark of gradlab's advice (``make bench-advice``).

Correct training scripts (``scripts/``, one per family) are broken by mutation
operators (``mutations.py``); a mutant counts when it fails with an autograd
error (the corpus oracle's ``ERROR_KINDS``), and the unmutated script is the
training its author meant. For each mutant:

(a) **diagnosed**: under ``gradlab.track()`` the failure gets a Diagnosis with at
    least one fix (``tests/corpus/driver.py``);
(b) **first fix fits**: the first fix's edits, applied exactly as given
    (``gradlab.edits.apply_edits``), make a script whose gradients at every
    optimizer step, over the whole run, equal the original's
    (``tests/corpus/oracle.py``: ``run_many`` and ``compare``);
(c) **fix verified** and **verified fix fits**: ``python -m gradlab fix --apply
    --unsafe`` on a copy of the mutant (the CLI has no JSON output: its
    ``Verified: fix N of M.`` and ``Applied fix N`` lines are read, and the copy
    it wrote is the verified fix applied), judged like (b).

Every script seeds torch at its first line and draws its data itself, and every
oracle run starts the script from its first line in a fresh namespace, so the
original, a mutant and a patched mutant draw the same random numbers up to
where their code differs. Runs are batched: the oracle and the driver each run
many scripts in one process; ``gradlab fix`` is one process per mutant (plus
its own children).

Usage::

    python benchmarks/advice/run.py              # everything; writes results/<date>.json and the README's table
    python benchmarks/advice/run.py --quick      # a deterministic subset (4 families, gradlab fix on one mutant per operator)
    python benchmarks/advice/run.py --fix diagnosed         # (c) only where (a) found a fix (and one check per operator)
    python benchmarks/advice/run.py --fix-per-operator 3    # (c) on at most 3 mutants per operator
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPTS = HERE / "scripts"
RESULTS = HERE / "results"
README = HERE / "README.md"
for _p in (str(REPO), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import mutations  # noqa: E402

from tests.corpus import oracle  # noqa: E402
from tests.corpus.judge import first_fixes  # noqa: E402

#: Oracle step budget: larger than any script's number of steps, so every run goes to the script's end.
STEPS = 10_000
#: Seconds one script may run under the oracle or the driver.
TIMEOUT = 30.0
#: Seconds each run ``gradlab fix`` starts may take (``--timeout``; its default, 60, is too short on a loaded machine).
FIX_RUN_TIMEOUT = 300
#: Seconds one ``gradlab fix`` of a mutant may take in all.
FIX_TIMEOUT = 1800.0
#: At most this many failing mutants per (family, operator), the first in source order.
CAP = 3
#: Scripts per oracle or driver process.
BATCH = 60
QUICK_FAMILIES = ("actor_critic", "dcgan", "image_cnn", "tbptt_forecaster")
FIX_SCOPES = {
    "all": "",
    "diagnosed": "those diagnosed in (a) and the first undiagnosed mutant of each operator",
    "none": "none",
}
MARK_START, MARK_END = "<!-- results:start -->", "<!-- results:end -->"


@dataclass
class Outcome:
    """What the benchmark found for one mutant (failing or discarded)."""

    mutant: mutations.Mutant
    path: Path
    status: str = ""  # "failing", "clean", "other-error", "over-cap"
    error_kind: str | None = None
    error: str | None = None
    error_line: str | None = None
    has_diagnosis: bool = False  # gradlab's tracker gave the failure a Diagnosis (with or without fixes)
    tracked_error: str | None = None  # the error's first line under gradlab.track()
    diagnosed: bool = False  # a Diagnosis with at least one fix
    fixes: int = 0
    first_fix: dict[str, Any] | None = None
    first_fix_fits: bool = False
    first_fix_why: str = ""
    fix_run: bool = False
    fix: dict[str, Any] = field(default_factory=dict)
    verified: bool = False
    verified_fits: bool = False
    verified_why: str = ""

    def to_json(self) -> dict[str, Any]:
        m = self.mutant
        out: dict[str, Any] = {
            "name": m.name,
            "family": m.family,
            "operator": m.operator,
            "site": m.index,
            "lines": list(m.lines),
            "description": m.description,
            "status": self.status,
            "error_kind": self.error_kind,
            "error": self.error,
            "error_line": self.error_line,
        }
        if self.status == "failing":
            out |= {
                "has_diagnosis": self.has_diagnosis,
                "tracked_error": self.tracked_error,
                "diagnosed": self.diagnosed,
                "fixes": self.fixes,
                "first_fix": portable(self.first_fix),
                "first_fix_fits": self.first_fix_fits,
                "first_fix_why": self.first_fix_why,
                "gradlab_fix_run": self.fix_run,
            }
            if self.fix_run:
                out |= {
                    "gradlab_fix": self.fix,
                    "verified": self.verified,
                    "verified_fits": self.verified_fits,
                    "verified_why": self.verified_why,
                }
        return out


def portable(fix: dict[str, Any] | None) -> dict[str, Any] | None:
    """A driver dump of a fix with each edit's file named by its name alone (the scratch folder is this machine's)."""
    if fix is None:
        return None
    edits = [{**e, "filename": Path(e["filename"]).name} for e in fix.get("edits", [])]
    return {**fix, "edits": edits}


# ---------------------------------------------------------------------------------------------- steps


def scripts(families: Sequence[str] | None = None) -> dict[str, Path]:
    """The benchmark's correct scripts by family (a family's name is its file's stem)."""
    found = {p.stem: p for p in sorted(SCRIPTS.glob("*.py"))}
    if families:
        unknown = sorted(set(families) - set(found))
        if unknown:
            raise ValueError(f"no script for {', '.join(unknown)}: pick from {', '.join(found)}")
        found = {k: v for k, v in found.items() if k in families}
    return found


def write_mutants(originals: dict[str, Path], work: Path, operators: Sequence[str] | None = None) -> list[Outcome]:
    """Every mutant of every script, each in a folder of its own as ``<work>/mutants/<name>/<family>.py``."""
    out = []
    for family, path in originals.items():
        for m in mutations.mutants_of(family, path.read_text(), list(operators) if operators else None):
            target = work / "mutants" / m.name / f"{family}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(m.source)
            out.append(Outcome(m, target))
    return out


def run_oracle(paths: Sequence[Path], label: str) -> list[oracle.Record]:
    """``oracle.run_many`` in batches of ``BATCH`` scripts per process, each run to the script's end."""
    records: list[oracle.Record] = []
    for i in range(0, len(paths), BATCH):
        chunk = paths[i : i + BATCH]
        _say(f"  oracle, {label}: {i + len(chunk)}/{len(paths)}")
        records += oracle.run_many(chunk, steps=STEPS, timeout=TIMEOUT)
    return records


def classify(outcomes: list[Outcome], records: list[oracle.Record]) -> None:
    """Keep the mutants that fail with an autograd error, at most ``CAP`` per (family, operator)."""
    kept: Counter[tuple[str, str]] = Counter()
    for o, rec in zip(outcomes, records):
        o.error_kind = rec.error_kind()
        o.error = (rec.error_message or "").partition("\n")[0][:300] or None
        o.error_line = rec.error_line
        if rec.status in ("finished", "budget"):
            o.status = "clean"
        elif rec.status == "error" and o.error_kind is not None:
            key = (o.mutant.family, o.mutant.operator)
            o.status = "failing" if kept[key] < CAP else "over-cap"
            kept[key] += 1
        else:
            o.status = "other-error" if rec.status == "error" else rec.status


def diagnose(failing: list[Outcome]) -> None:
    """(a): each failing mutant under ``gradlab.track()``; its first fix (the driver's dump)."""
    dumps: dict[str, dict[str, Any]] = {}
    for i in range(0, len(failing), BATCH):
        chunk = failing[i : i + BATCH]
        _say(f"  driver under gradlab.track(): {i + len(chunk)}/{len(failing)}")
        dumps |= first_fixes([o.path for o in chunk], timeout=TIMEOUT)
    for o in failing:
        dump = dumps.get(str(o.path.resolve()), {})
        o.fixes = int(dump.get("fixes", 0))
        o.has_diagnosis = bool(dump.get("diagnosis"))
        o.tracked_error = dump.get("error")
        o.diagnosed = o.has_diagnosis and o.fixes > 0
        o.first_fix = dump.get("fix")


def patched_copy(mutant: Path, fix: dict[str, Any], folder: Path) -> tuple[Path | None, str]:
    """A copy of ``mutant`` with the fix's edits applied exactly as given (driver dump fields); or None and why."""
    from gradlab.edits import Edit, apply_edits

    if not fix.get("edits"):
        return None, "the first fix has no edits (it cannot be applied as given)"
    edits = [Edit(e["filename"], e["start"], e["end"], e["text"]) for e in fix["edits"]]
    others = sorted({e.filename for e in edits if Path(e.filename).resolve() != mutant.resolve()})
    if others:
        return None, f"the fix edits another file than the script: {', '.join(others)}"
    try:
        text = apply_edits(mutant.read_text(), edits)
    except ValueError as err:
        return None, f"the fix's edits do not apply: {err}"
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / mutant.name
    copy.write_text(text)
    return copy, ""


def judge(original: oracle.Record, patched: oracle.Record) -> tuple[bool, str]:
    """Does the patched run fit the original (every optimizer step's gradients equal)? With the first difference."""
    differences = oracle.compare(original, patched)
    return (not differences, differences[0] if differences else "")


def judge_first_fixes(failing: list[Outcome], originals: dict[str, oracle.Record], work: Path) -> None:
    """(b): apply each first fix, run the copies through the oracle, compare with the unmutated original."""
    to_run: list[tuple[Outcome, Path]] = []
    for o in failing:
        if o.first_fix is None:
            o.first_fix_why = "gradlab gave no fix" if o.has_diagnosis else "gradlab gave no diagnosis"
            continue
        copy, why = patched_copy(o.path, o.first_fix, work / "first" / o.mutant.name)
        if copy is None:
            o.first_fix_why = why
        else:
            to_run.append((o, copy))
    records = run_oracle([p for _, p in to_run], "first fixes applied")
    for (o, _), rec in zip(to_run, records):
        o.first_fix_fits, o.first_fix_why = judge(originals[o.mutant.family], rec)


_VERIFIED = re.compile(r"^Verified: fix (\d+) of (\d+)\.$", re.M)
_NONE_VERIFIED = re.compile(r"^No fix verified \((\d+) tried\)\.$", re.M)
_APPLIED = re.compile(r"^Applied fix (\d+) to ", re.M)
_HEAD = re.compile(r"^fix (\d+) of (\d+) \(([^)]*)\): (.*)$", re.M)


def read_fix_output(stdout: str) -> dict[str, Any]:
    """The few facts read from ``gradlab fix``'s text (it has no JSON output): verified number, tried, applied, heads."""
    verified, none, applied = _VERIFIED.search(stdout), _NONE_VERIFIED.search(stdout), _APPLIED.search(stdout)
    heads = {int(m[1]): {"applicability": m[3], "summary": m[4]} for m in _HEAD.finditer(stdout)}
    number = int(verified[1]) if verified else None
    return {
        "verified_number": number,
        "tried": int(verified[2]) if verified else int(none[1]) if none else len(heads),
        "applied_number": int(applied[1]) if applied else None,
        "verified_fix": heads.get(number) if number is not None else None,
    }


def run_gradlab_fix(o: Outcome, work: Path) -> Path | None:
    """(c): ``python -m gradlab fix --apply --unsafe`` on a copy of the mutant; the copy if a verified fix was written."""
    folder = work / "fix" / o.mutant.name
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / o.path.name
    shutil.copyfile(o.path, copy)
    start = time.perf_counter()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "LANGUAGE": "", "PYTHONPATH": str(REPO)}
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "gradlab",
                "fix",
                "--timeout",
                str(FIX_RUN_TIMEOUT),
                "--apply",
                "--unsafe",
                copy.name,
            ],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=FIX_TIMEOUT,
            check=False,
        )
        stdout, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired:
        stdout, rc = "", None
    o.fix_run = True
    o.fix = {"exit_code": rc, "seconds": round(time.perf_counter() - start, 1), **read_fix_output(stdout)}
    o.verified = o.fix["verified_number"] is not None
    if rc is None:
        o.verified_why = f"gradlab fix did not end within {FIX_TIMEOUT:.0f} s"
        return None
    if not o.verified:
        o.verified_why = "no fix verified"
        return None
    if o.fix["applied_number"] != o.fix["verified_number"] or copy.read_text() == o.path.read_text():
        o.verified_why = "gradlab fix did not write the fix it verified"
        return None
    return copy


def judge_gradlab_fix(chosen: list[Outcome], originals: dict[str, oracle.Record], work: Path) -> None:
    """(c) for ``chosen``: one ``gradlab fix`` process per mutant, then the written copies in batched oracle runs."""
    to_run: list[tuple[Outcome, Path]] = []
    for i, o in enumerate(chosen):
        copy = run_gradlab_fix(o, work)
        _say(
            f"  gradlab fix {i + 1}/{len(chosen)} {o.mutant.name}: "
            + (f"fix {o.fix['verified_number']} verified" if o.verified else o.verified_why)
            + f" ({o.fix['seconds']} s)"
        )
        if copy is not None:
            to_run.append((o, copy))
    records = run_oracle([p for _, p in to_run], "verified fixes applied")
    for (o, _), rec in zip(to_run, records):
        o.verified_fits, o.verified_why = judge(originals[o.mutant.family], rec)


def choose_for_fix(failing: list[Outcome], scope: str = "all", per_operator: int | None = None) -> list[Outcome]:
    """The mutants ``gradlab fix`` runs on.

    ``scope`` "all": every failing mutant; "diagnosed": those with a fix in (a) (``gradlab fix``
    tries the fixes of the diagnosis, so only these can get a verified fix), plus the first
    undiagnosed mutant of each operator as a check that ``gradlab fix`` has none either.
    ``per_operator``: at most this many of each operator, spread over the families in turn.
    """
    if scope not in ("all", "diagnosed"):
        raise ValueError(f"scope must be 'all' or 'diagnosed', not {scope!r}")
    pool = list(failing)
    if scope == "diagnosed":
        checks: dict[str, Outcome] = {}
        for o in failing:
            if not o.diagnosed:
                checks.setdefault(o.mutant.operator, o)
        pool = [o for o in failing if o.diagnosed or checks.get(o.mutant.operator) is o]
    if per_operator is None:
        return pool
    by_op: dict[str, dict[str, list[Outcome]]] = {}
    for o in pool:
        by_op.setdefault(o.mutant.operator, {}).setdefault(o.mutant.family, []).append(o)
    chosen = []
    for k, families in enumerate(by_op.values()):
        # round-robin over the families, each operator starting at another, so that a subset is spread over the scripts
        names = sorted(families)
        names = names[k % len(names) :] + names[: k % len(names)]
        order: list[Outcome] = []
        while any(families.values()):
            for fam in names:
                if families[fam]:
                    order.append(families[fam].pop(0))
        chosen += order[:per_operator]
    return chosen


# ---------------------------------------------------------------------------------------------- tables


COLUMNS = (
    "mutants",
    "diagnosed",
    "first fix has edits",
    "first fix fits",
    "gradlab fix run",
    "verified",
    "verified fits",
)


def row(items: list[Outcome]) -> dict[str, int]:
    failing = [o for o in items if o.status == "failing"]
    return {
        "mutants": len(failing),
        "diagnosed": sum(o.diagnosed for o in failing),
        "first fix has edits": sum(bool(o.first_fix and o.first_fix.get("edits")) for o in failing),
        "first fix fits": sum(o.first_fix_fits for o in failing),
        "gradlab fix run": sum(o.fix_run for o in failing),
        "verified": sum(o.verified for o in failing),
        "verified fits": sum(o.verified_fits for o in failing),
    }


def site_row(items: list[Outcome]) -> dict[str, int]:
    c = Counter(o.status for o in items)
    return {
        "sites": len(items),
        "failing": c["failing"] + c["over-cap"],
        "kept": c["failing"],
        "ran clean": c["clean"],
        "other error": c["other-error"] + c["timeout"],
    }


def tables(outcomes: list[Outcome]) -> dict[str, Any]:
    by_op: dict[str, list[Outcome]] = {}
    by_family: dict[str, list[Outcome]] = {}
    by_kind: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_op.setdefault(o.mutant.operator, []).append(o)
        by_family.setdefault(o.mutant.family, []).append(o)
        if o.status == "failing" and o.error_kind:
            by_kind.setdefault(o.error_kind, []).append(o)
    kinds: dict[str, dict[str, int]] = {}
    for op, items in by_op.items():
        kinds[op] = dict(Counter(o.error_kind for o in items if o.status == "failing" and o.error_kind).most_common())
    return {
        "sites": {op: site_row(items) for op, items in by_op.items()},
        "error_kinds": kinds,
        "by_operator": {op: row(items) for op, items in by_op.items()},
        "by_family": {fam: row(items) for fam, items in sorted(by_family.items())},
        "by_error_kind": {kind: row(items) for kind, items in sorted(by_kind.items(), key=lambda kv: -len(kv[1]))},
        "total": row(outcomes),
        "sites_total": site_row(outcomes),
    }


def _md_table(title: str, rows: dict[str, dict[str, int]], total: dict[str, int] | None, columns: Sequence[str]) -> str:
    head = f"| {title} | " + " | ".join(columns) + " |"
    sep = "|---|" + "---:|" * len(columns)
    lines = [head, sep]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(str(r[c]) for c in columns) + " |")
    if total is not None:
        lines.append("| **total** | " + " | ".join(f"**{total[c]}**" for c in columns) + " |")
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    t = result["tables"]
    sites = _md_table(
        "operator", t["sites"], t["sites_total"], ("sites", "failing", "kept", "ran clean", "other error")
    )
    ops = _md_table("operator", t["by_operator"], t["total"], COLUMNS)
    fams = _md_table("family", t["by_family"], t["total"], COLUMNS)
    by_kind = _md_table("error kind", t["by_error_kind"], t["total"], COLUMNS)
    kinds = "\n".join(
        f"- `{op}`: " + ", ".join(f"{k} {n}" for k, n in counts.items())
        for op, counts in t["error_kinds"].items()
        if counts
    )
    m = result["meta"]
    return "\n\n".join(
        [
            f"Measured {m['date']} at `{m['commit'][:12]}` (gradlab/ as of `{m['gradlab_commit'][:12]}`"
            f"{', with uncommitted changes' if m['dirty'] else ''}), "
            f"torch {m['torch']}, Python {m['python']}, {m['cpus']} shared CPUs; wall time {m['wall_minutes']} min "
            f"({'quick subset' if m['quick'] else 'all families'}; `gradlab fix` run on {t['total']['gradlab fix run']} "
            f"of {t['total']['mutants']} mutants{', ' + m['fix_subset'] if m['fix_subset'] else ''}).",
            "Sites per operator (a site's mutant is kept when it fails with an autograd error; at most "
            f"{m['cap']} per script and operator, the first in source order):\n\n" + sites,
            "Error kinds of the kept mutants:\n\n" + kinds,
            "Per operator:\n\n" + ops,
            "Per family:\n\n" + fams,
            "Per error kind (the oracle's `ERROR_KINDS`):\n\n" + by_kind,
        ]
    )


# ---------------------------------------------------------------------------------------------- main


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def measure(
    families: Sequence[str] | None = None,
    operators: Sequence[str] | None = None,
    fix_scope: str = "all",
    fix_per_operator: int | None = None,
    work: Path | None = None,
) -> tuple[list[Outcome], dict[str, oracle.Record]]:
    """Build, validate and judge the mutants; returns every outcome and the originals' records."""
    work = work or Path(tempfile.mkdtemp(prefix="bench-advice-"))
    originals = scripts(families)
    outcomes = write_mutants(originals, work, operators)
    _say(f"{len(outcomes)} mutation sites in {len(originals)} scripts")
    records = run_oracle([*originals.values(), *(o.path for o in outcomes)], "originals and mutants")
    base = dict(zip(originals, records[: len(originals)]))
    for family, rec in base.items():
        if rec.status != "finished":
            raise RuntimeError(f"the original script {family}.py does not run clean: {rec.summary()}")
    classify(outcomes, records[len(originals) :])
    failing = [o for o in outcomes if o.status == "failing"]
    _say(f"{len(failing)} failing mutants kept")
    diagnose(failing)
    judge_first_fixes(failing, base, work)
    if fix_scope != "none":
        judge_gradlab_fix(choose_for_fix(failing, fix_scope, fix_per_operator), base, work)
    return outcomes, base


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"families {', '.join(QUICK_FAMILIES)} only; --fix diagnosed --fix-per-operator 1",
    )
    parser.add_argument("--families", nargs="+", help="only these scripts (stems of scripts/*.py)")
    parser.add_argument("--operators", nargs="+", choices=list(mutations.OPERATORS), help="only these operators")
    parser.add_argument(
        "--fix-per-operator", type=int, help="run gradlab fix on at most this many mutants per operator"
    )
    parser.add_argument(
        "--fix",
        choices=("all", "diagnosed", "none"),
        default="all",
        help="the mutants gradlab fix runs on: all; those diagnosed in (a), plus one undiagnosed per operator; none",
    )
    parser.add_argument(
        "--keep", type=Path, help="write the mutants and patched copies here (default: a temporary folder)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only: no results/*.json, no README table")
    parser.add_argument("--render", type=Path, help="only rewrite the README's table from this results JSON")
    args = parser.parse_args(argv)
    if args.render is not None:
        write_readme(render(json.loads(args.render.read_text())))
        return 0
    families = list(QUICK_FAMILIES) if args.quick else args.families
    per_op = 1 if args.quick and args.fix_per_operator is None else args.fix_per_operator
    scope = "diagnosed" if args.quick else args.fix
    start = time.perf_counter()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-advice-"))
    try:
        outcomes, _ = measure(families, args.operators, scope, per_op, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    import torch

    result: dict[str, Any] = {
        "meta": {
            "date": dt.date.today().isoformat(),
            "commit": _git("rev-parse", "HEAD"),
            "gradlab_commit": _git(
                "log", "-1", "--format=%H", "--", "gradlab"
            ),  # the last commit that changed gradlab/
            "dirty": bool(_git("status", "--porcelain", "--", "gradlab")),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "wall_minutes": round((time.perf_counter() - start) / 60, 1),
            "quick": args.quick,
            "families": sorted({o.mutant.family for o in outcomes}),
            "operators": {name: op.doc for name, op in mutations.OPERATORS.items()},
            "cap": CAP,
            "fix_subset": ", ".join(
                part
                for part in (
                    FIX_SCOPES[scope],
                    f"at most {per_op} per operator" if per_op is not None else "",
                )
                if part
            ),
        },
    }
    result["tables"] = tables(outcomes)
    result["mutants"] = [o.to_json() for o in outcomes]
    text = render(result)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        suffix = "-quick" if args.quick else ""
        out = RESULTS / f"{result['meta']['date']}{suffix}.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
        _say(f"results written to {out.relative_to(REPO)}")
        if not args.quick and not args.families and not args.operators:
            write_readme(text)
    return 0


def write_readme(text: str) -> None:
    """Put ``text`` between the README's result markers."""
    readme = README.read_text()
    if MARK_START not in readme or MARK_END not in readme:
        raise ValueError(f"{README.name} has no {MARK_START} ... {MARK_END} section to write the table into")
    head, _, rest = readme.partition(MARK_START)
    _, _, tail = rest.partition(MARK_END)
    README.write_text(f"{head}{MARK_START}\n{text}\n{MARK_END}{tail}")
    _say(f"table written to {README.relative_to(REPO)}")


if __name__ == "__main__":
    sys.exit(main())
