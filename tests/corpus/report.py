"""Print the table of every case of the corpus: the broken run, the intended runs, and the judge of gradlab's first fix.

``python -m tests.corpus.report`` or ``python tests/corpus/report.py`` (from the repository's root);
``python tests/corpus/report.py FOLDER`` judges the cases of another folder (a blind batch).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "corpus"

from . import oracle
from .catalog import all_cases
from .judge import evaluate


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    cases = all_cases(Path(args[0]).resolve()) if args else all_cases()
    ev = evaluate(cases)
    rows = [("case", "error", "broken", "intended", "oracle s", "first fix", "edits", "claims", "fits", "trains true")]
    for case in cases:
        broken = ev.records[f"{case.name}/broken"]
        ok_broken = broken.status == "error" and broken.error_kind() == case.error
        ok_int = all(
            (r := ev.records[f"{case.name}/{v}"]).status == "budget" and oracle.trained(r) == case.expected_trained()
            for v in case.variants
        )
        secs = broken.seconds + sum(ev.records[f"{case.name}/{v}"].seconds for v in case.variants)
        v = ev.verdicts[case.name]
        summary = (v.fix or {}).get("summary") or "-"
        rows.append(
            (
                case.name,
                case.error,
                "fails as said" if ok_broken else f"WRONG: {broken.summary()}",
                f"{len(case.variants)} ok" if ok_int else "WRONG",
                f"{secs:.2f}",
                summary[:60],
                str(len((v.fix or {}).get("edits", []))),
                str(len((v.fix or {}).get("claims", []))),
                "yes" if v.fits else "no",
                "yes" if v.trains_true else "no",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print()
    for case in cases:
        v = ev.verdicts[case.name]
        print(f"{case.name}: {v.why}")
    print()
    for phase, s in ev.seconds.items():
        print(f"{phase}: {s:.1f} s")
    print(ev.figure_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
