"""``python -m gradlab run`` on a fused-optimizer loop: it runs as under python, and warns on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "scripts" / "fused_gan.py"


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONSTARTUP", None)
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_fused_loop_runs_as_under_python_and_warns_on_stderr() -> None:
    plain = _python(str(SCRIPT))
    tracked = _python("-m", "gradlab", "run", str(SCRIPT))
    assert plain.returncode == 0 and plain.stderr == ""  # plain torch: silence
    assert tracked.returncode == 0
    assert tracked.stdout == plain.stdout  # the same numbers: gradlab only observes
    assert tracked.stdout.count("step ") == 3
    err = tracked.stderr
    assert "SilentWriteWarning" in err
    assert "discriminator.2.weight" in err  # named after the script's own module
    assert "Adam.step()" in err and "opt_d.step()" in err
    assert "g_loss.backward()" in err
    assert "Traceback" not in err
