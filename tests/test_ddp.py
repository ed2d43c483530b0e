"""DDP under torchrun: each rank tracks itself; one note for identical notes, with the ranks (slow: starts torchrun)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed
from conftest import gloo_retried

from gradlab import ranks

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"


needs_distributed = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch built without distributed")


def _torchrun(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """``torchrun --nproc_per_node=2 COMMAND`` (gloo, CPU) with this checkout's gradlab, in ``tmp_path``."""
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    assert torchrun is not None
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), OMP_NUM_THREADS="1")
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)  # DDP's own names only where torch prints them by default
    return subprocess.run(
        [torchrun, "--nproc_per_node=2", f"--master_port={port}", *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


@needs_distributed
def test_torchrun_two_ranks_unused_parameters_named_once(tmp_path: Path) -> None:
    r = _torchrun(tmp_path, "-m", "gradlab", "run", str(SCRIPTS / "ddp_unused.py"))
    err = r.stderr
    assert r.returncode != 0
    assert "Expected to have finished reduction" in err  # DDP's own error, from each rank
    assert err.count("error[GL0014 DDP parameters unused]") == 1, err[-3000:]
    assert "gradlab [ranks 0, 1]: error[GL0014 DDP parameters unused]" in err
    assert "did not reach aux_head.weight, aux_head.bias" in err  # named, though DDP gave indices
    assert "why: aux_head.weight, aux_head.bias: not used in the forward: Net.forward never uses self.aux_head" in err


@needs_distributed
def test_torchrun_says_why_each_parameter_was_not_reached(tmp_path: Path) -> None:
    """A detach, a branch not taken, a layer the forward never uses: one DDP error, three reasons."""
    r = _torchrun(tmp_path, "-m", "gradlab", "run", str(SCRIPTS / "ddp_why.py"))
    err = r.stderr
    assert r.returncode != 0 and err.count("error[GL0014 DDP parameters unused]") == 1, err[-3000:]
    assert "Parameter indices which did not receive grad for rank" in err  # torch gave indices only
    assert (
        "why: enc.weight, enc.bias: a .detach() cut them off from the loss (ddp_why.py:20: "
        "feat = self.enc(x).detach()  # the encoder is cut off from the loss)"
    ) in err
    assert (
        "why: extra.weight, extra.bias: a branch not taken in that step: Net.forward uses self.extra only under "
        "`if self.use_extra` (ddp_why.py:22)"
    ) in err
    assert "why: aux_head.weight, aux_head.bias: not used in the forward: Net.forward never uses self.aux_head" in err


@needs_distributed
def test_torchrun_a_parameter_used_outside_forward(tmp_path: Path) -> None:
    """torch 2.13 raises 'ready twice' for it only with find_unused_parameters=True (measured: without, it trains)."""
    r = _torchrun(tmp_path, "-m", "gradlab", "run", str(SCRIPTS / "ddp_outside.py"))
    err = r.stderr
    assert r.returncode != 0 and "Expected to mark a variable ready only once" in err
    assert "Parameter at index 0 with name .scale has been marked as ready twice" in err  # torch's own words
    assert err.count("error[GL0015 DDP parameter ready twice]") == 1, err[-3000:]
    assert "DDP saw the gradient of scale arrive twice" in err
    assert "why: scale is used outside the forward (the forward never uses it); with find_unused_parameters=True" in err


@needs_distributed
def test_torchrun_two_forwards_through_buffers_the_broadcast_is_invisible(tmp_path: Path) -> None:
    """torch 2.13: DDP broadcasts rank 0's buffers before each forward under _unsafe_preserve_version_counter.

    Measured: no error; forward 1's graph saved the buffer the broadcast of forward 2 overwrote (rank 1 gets rank
    0's values), its version counter does not move, and the gradient is what it is without the broadcast
    (train-mode BatchNorm's backward does not read its running statistics). gradlab run changes none of it.
    """
    for command in ([str(SCRIPTS / "ddp_buffers.py")], ["-m", "gradlab", "run", str(SCRIPTS / "ddp_buffers.py")]):
        r = gloo_retried(lambda command=command: _torchrun(tmp_path, *command))
        assert r.returncode == 0, r.stderr[-3000:]
        found = sorted(tmp_path.glob("facts-*.json"))
        facts = {f["rank"]: f for f in (json.loads(path.read_text()) for path in found)}
        for path in found:  # the next command writes its own
            path.unlink()
        assert sorted(facts) == [0, 1]
        for rank, f in facts.items():
            assert f["error"] is None and f["saved_is_the_buffer"] and f["grad_as_without_broadcast"]
            assert len(set(f["versions"])) == 1 and f["version_after"] == f["versions"][0]  # the counter never moved
            assert f["broadcast_gave_rank_0s"]
            assert f["broadcast_changed_values"] == (rank == 1)  # rank 0 is the source
        assert "error[GL" not in r.stderr and "SilentWriteWarning" not in r.stderr  # nothing raised, nothing noted


def test_a_rank_prints_its_note_only_if_it_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranks, "NOTE_WAIT", 0.2)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "t")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert ranks.share_note("same", 1, 2) == [1]  # rank 0 wrote nothing (yet): rank 1 prints its own
    assert ranks.share_note("same", 0, 2) == [0, 1]  # rank 0 prints for both
    assert ranks.share_note("same", 1, 2) == []  # identical to rank 0's: printed once, by rank 0
    assert ranks.share_note("other", 1, 2) == [1]  # differs: rank 1 prints its own
    assert ranks.share_note("same", 0, 2) == [0]  # rank 1's note now differs
