"""Notebook 10's DDP section, run for real: its script under torchrun (gloo, 2 CPU processes), its note, its fix.

The notebook cannot start two processes in its kernel, so each edition shows the script, the command and
gradlab's note as text (the zh edition gradlab's Chinese note); this test runs exactly that script and checks that the note
the notebook prints is what gradlab prints, and that the fix it shows trains ``body`` as one process without DDP
would (slow: starts torchrun three times: each edition's failing run, and the fix).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch
import torch.distributed
from conftest import gloo_retried
from torch import nn

pytestmark = [pytest.mark.course, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
NAME = "10_field_guide.ipynb"
#: Each edition's notebook, and the language gradlab speaks in it (the zh edition runs with LANG=zh_CN.UTF-8).
EDITIONS = {"en": (ROOT / "notebooks" / NAME, "C.UTF-8"), "zh": (ROOT / "notebooks" / "zh" / NAME, "zh_CN.UTF-8")}


#: What gloo prints when its teardown aborts a process that had finished the script.


def _cell(cell_id: str, edition: str = "en") -> str:
    nb = nbformat.read(EDITIONS[edition][0], as_version=4)
    return next(cell.source for cell in nb.cells if cell.get("id") == cell_id)


def _blocks(source: str, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in a markdown cell, in order."""
    return re.findall(rf"```{language}\n(.*?)```", source, flags=re.S)


def _torchrun(script: str, folder: Path, lang: str = "C.UTF-8") -> subprocess.CompletedProcess[str]:
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    assert torchrun is not None, "torchrun comes with torch"
    (folder / "ddp_train.py").write_text(script, encoding="utf-8")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(folder), OMP_NUM_THREADS="1", LANG=lang)
    env.pop("LANGUAGE", None)
    return subprocess.run(
        [torchrun, "--nproc_per_node=2", f"--master_port={port}", "-m", "gradlab", "run", "ddp_train.py"],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=300,
    )


def _script(edition: str = "en") -> str:
    (script,) = _blocks(_cell("10-ddp-script", edition), "python")
    return script


def _fixed(script: str, edition: str = "en") -> str:
    """The script with the notebook's fix: its block replaces the lines from its first to its last line."""
    fix = _blocks(_cell("10-ddp-run", edition), "python")[0]
    first, last = fix.splitlines()[0], fix.splitlines()[-1]
    start, end = script.index(first + "\n"), script.index(last + "\n") + len(last) + 1
    assert start < end, "the fix's first and last lines are lines of the script, in order"
    return script[:start] + fix + script[end:]


def _one_process_body_sum() -> float:
    """The script's loop on one process, without DDP (the same model, seed, batches and optimizer)."""
    torch.manual_seed(0)
    body, aux_head = nn.Linear(4, 4), nn.Linear(4, 2)  # created in the script's order: the same initial weights
    aux_head.requires_grad_(False)
    opt = torch.optim.SGD([*body.parameters(), *aux_head.parameters()], lr=0.1)
    for _ in range(3):
        loss = body(torch.randn(3, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(body.weight.detach().sum())


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_fix_block_is_a_change_of_the_script(edition: str) -> None:
    script = _script(edition)
    fixed = _fixed(script, edition)
    assert fixed != script and "requires_grad_(False)" in fixed and fixed.count("DistributedDataParallel(net)") == 1
    compile(fixed, "ddp_train.py", "exec")


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch built without distributed")
@pytest.mark.parametrize("edition", EDITIONS)
def test_the_notebooks_ddp_script_fails_with_the_note_it_shows(edition: str, tmp_path: Path) -> None:
    run = _torchrun(_script(edition), tmp_path, EDITIONS[edition][1])
    assert run.returncode != 0
    assert "Expected to have finished reduction in the prior iteration" in run.stderr
    assert "Parameter indices which did not receive grad for rank 0: 2 3" in run.stderr
    (note,) = _blocks(_cell("10-ddp-run", edition), "text")
    shown = [line.rstrip() for line in note.strip("\n").splitlines()]
    printed = [line.rstrip() for line in run.stderr.splitlines()]
    at = printed.index(shown[0])  # the note the notebook shows, printed once, by rank 0, for both ranks
    assert printed[at : at + len(shown)] == shown, "\n".join(printed[at : at + len(shown)])
    assert run.stderr.count("[GL0014 ") == 1


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch built without distributed")
def test_the_notebooks_ddp_fix_trains_body_as_one_process_without_ddp(tmp_path: Path) -> None:
    run = gloo_retried(lambda: _torchrun(_fixed(_script()), tmp_path))  # with or without a barrier before teardown
    assert run.returncode == 0, run.stderr[-3000:]
    # not anchored to lines: two ranks print to torchrun's one stdout, and their lines can run together
    sums = dict(re.findall(r"rank (\d): body\.weight sums to (-?\d+\.\d{6})", run.stdout))
    assert sorted(sums) == ["0", "1"], run.stdout
    expected = _one_process_body_sum()
    for rank, value in sums.items():
        assert float(value) == pytest.approx(expected, abs=2e-6), f"rank {rank}: {value} vs {expected:.6f}"
    assert "error[GL" not in run.stderr, "no note for a run that trains what it should"
