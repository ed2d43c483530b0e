"""Golden text: the note gradlab adds under each failure pattern's traceback, word for word.

Each script in tests/scripts/ fails the way a real training script does. The
note (the short, compiler-style diagnosis) is compared with
tests/snapshots/notes/<script>.txt. After an intended change of wording, run
``GRADLAB_UPDATE_SNAPSHOTS=1 make test-fast`` and review the diff.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from gradlab.cli import run_script

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).parent / "scripts"
SNAPSHOTS = Path(__file__).parent / "snapshots" / "notes"
FAILING = ["chained_inplace", "chained_freed", "gan", "actor_critic", "rnn_hidden", "relu_inplace"]


def _note(script: str) -> str:
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)  # locations are printed relative to the working directory
    try:
        assert run_script(str(SCRIPTS / f"{script}.py"), stderr=err) == 1
    finally:
        os.chdir(cwd)
    text = err.getvalue()
    start = text.index("gradlab: error[")
    return text[start:].rstrip() + "\n"


@pytest.mark.parametrize("script", FAILING)
def test_note_matches_the_snapshot(script: str) -> None:
    note = _note(script)
    path = SNAPSHOTS / f"{script}.txt"
    if os.environ.get("GRADLAB_UPDATE_SNAPSHOTS"):
        path.write_text(note, encoding="utf-8")
    assert note == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("script", FAILING)
def test_note_is_short_and_has_one_help_line(script: str) -> None:
    note = _note(script).splitlines()
    assert len(note) <= 20, "\n".join(note)
    assert sum(line.startswith("help: ") for line in note) == 1
    assert note[0].startswith("gradlab: error[")
    assert any(line.startswith("   = trains: ") for line in note)
