"""One note for all ranks: ``gradlab run`` under ``torchrun``, each rank's note printed once for the ranks that share it.

One job: under ``torchrun --nproc_per_node=N -m gradlab run`` every rank tracks itself; this
module decides which rank prints which note (NOTE [One note for all ranks]) and names DDP's
parameters in it (:func:`gradlab.ddp.explain_ddp`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from .notices import prefixed

if TYPE_CHECKING:
    from .explanation import Explanation
    from .tracker import Tracker

__all__ = ["NOTE_WAIT", "distributed", "named_ddp", "report_rank", "share_note"]


# NOTE [One note for all ranks]
# Under torchrun every rank runs gradlab run and tracks itself. Each prefixes its note with
# its rank. Identical notes are printed once, by rank 0, with the ranks that had them:
# without any collective call (the ranks may be broken, and DDP's own error may have left
# the process group unusable), through files in a directory of this run
# (TORCHELASTIC_RUN_ID) in the temporary directory of the node. Each rank writes its note
# there; rank 0 waits up to NOTE_WAIT seconds for the others' and prints its own with the
# ranks whose note is the same; another rank waits for rank 0's note and prints its own
# only if it differs (or if rank 0 wrote none). On several nodes (WORLD_SIZE larger than
# LOCAL_WORLD_SIZE) the files are not shared: every rank prints its note, prefixed.
NOTE_WAIT = 3.0


def distributed() -> tuple[int, int, int] | None:
    """(rank, world size, local world size) under torchrun with more than one process, else None."""
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    except (KeyError, ValueError):
        return None
    return (rank, world, local) if world > 1 else None


def named_ddp(exc: BaseException, explanation: Explanation, tracker: Tracker | None = None) -> Explanation:
    """DDP's parameters by name (DDP gives indices; its module is in the traceback), and why (NOTE [DDP's why])."""
    if explanation.kind not in ("ddp_unfinished_reduction", "ddp_ready_twice"):
        return explanation
    from .ddp import explain_ddp

    recorder = tracker._recorder() if tracker is not None else None
    return explain_ddp(exc, explanation, tuple(recorder.cuts.cuts) if recorder is not None else ())


def report_rank(
    exc: BaseException, explanation: Explanation, stderr: TextIO, verbose: bool, tracker: Tracker | None
) -> int:
    """The note of one rank (NOTE [One note for all ranks])."""
    place = distributed()
    assert place is not None
    rank, world, local = place
    notes: list[str] = [n.strip("\n") for n in getattr(exc, "__gradlab_notes__", ())]
    if explanation.kind != "not_autograd" and not notes:
        notes.append(prefixed(explanation.details() if verbose else str(explanation)))
    elif verbose and explanation.kind != "not_autograd":
        notes.append(prefixed(explanation.details()))
    if not notes:
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    text = "\n\n".join(notes)
    ranks = [rank]
    if world == local:
        ranks = share_note(text, rank, world)
    if ranks:
        label = ", ".join(str(r) for r in ranks)
        head = f"gradlab [rank {label}]: " if len(ranks) == 1 else f"gradlab [ranks {label}]: "
        print("\n" + text.replace("gradlab: ", head), file=stderr)
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def share_note(text: str, rank: int, world: int) -> list[int]:
    """The ranks this rank prints its note for (empty: rank 0 prints it), by files of this run."""
    import tempfile
    import time
    from pathlib import Path

    # the run, and the elastic agent that started this node's ranks (their common parent): no stale notes
    run = f"{os.environ.get('TORCHELASTIC_RUN_ID', 'none')}-{os.environ.get('MASTER_PORT', '')}-{os.getppid()}"
    folder = Path(tempfile.gettempdir()) / f"gradlab-notes-{os.getuid() if hasattr(os, 'getuid') else 0}-{run}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        mine = folder / f"rank-{rank}.txt"
        partial = folder / f".rank-{rank}.tmp"
        partial.write_text(text, encoding="utf-8")
        partial.replace(mine)  # atomic: a reader sees the whole note or none
    except OSError:
        return [rank]
    deadline = time.monotonic() + NOTE_WAIT
    if rank != 0:
        first = folder / "rank-0.txt"
        while not first.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            same = first.read_text(encoding="utf-8") == text
        except OSError:
            same = False
        return [] if same else [rank]
    others = {r: folder / f"rank-{r}.txt" for r in range(1, world)}
    seen: dict[int, str] = {}
    while len(seen) < len(others) and time.monotonic() < deadline:
        for r, path in others.items():
            if r not in seen and path.exists():
                try:
                    seen[r] = path.read_text(encoding="utf-8")
                except OSError:
                    pass
        time.sleep(0.05)
    return [0, *sorted(r for r, note in seen.items() if note == text)]
