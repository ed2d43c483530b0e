"""DDP under torchrun: each rank tracks itself; one note for identical notes, with the ranks (slow: starts torchrun)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed

from gradlab import cli

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch built without distributed")
def test_torchrun_two_ranks_unused_parameters_named_once(tmp_path: Path) -> None:
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    assert torchrun is not None
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), OMP_NUM_THREADS="1")
    r = subprocess.run(
        [
            torchrun,
            "--nproc_per_node=2",
            f"--master_port={port}",
            "-m",
            "gradlab",
            "run",
            str(SCRIPTS / "ddp_unused.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    err = r.stderr
    assert r.returncode != 0
    assert "Expected to have finished reduction" in err  # DDP's own error, from each rank
    assert err.count("error[GL0014 DDP parameters unused]") == 1, err[-3000:]
    assert "gradlab [ranks 0, 1]: error[GL0014 DDP parameters unused]" in err
    assert "did not reach aux_head.weight, aux_head.bias" in err  # named, though DDP gave indices


def test_a_rank_prints_its_note_only_if_it_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "NOTE_WAIT", 0.2)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "t")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cli._share_note("same", 1, 2) == [1]  # rank 0 wrote nothing (yet): rank 1 prints its own
    assert cli._share_note("same", 0, 2) == [0, 1]  # rank 0 prints for both
    assert cli._share_note("same", 1, 2) == []  # identical to rank 0's: printed once, by rank 0
    assert cli._share_note("other", 1, 2) == [1]  # differs: rank 1 prints its own
    assert cli._share_note("same", 0, 2) == [0]  # rank 1's note now differs
