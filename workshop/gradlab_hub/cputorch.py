"""The lock's torch as its CPU build, so ``make hub-deps`` never downloads PyPI's CUDA torch.

On Linux, ``pip install torch==X`` from PyPI gives the CUDA build: several GB of
``nvidia-*`` packages, useless on a workshop VM without a GPU (SIZING.md was measured
with the CPU build). :func:`install_cpu_torch` installs the lock's version as the CPU
build *before* the lock, whose ``torch==X`` it then satisfies (``X+cpu`` is ``X``):

1. from a wheel pip has at hand without a network (``--no-index``, e.g. ``PIP_FIND_LINKS``);
2. else from PyTorch's CPU index, or ``GRADLAB_HUB_TORCH_INDEX``.

``GRADLAB_HUB_TORCH=pypi`` asks for PyPI's build instead (a machine with a GPU). Only
the standard library is used: ``make hub-deps`` runs this for the hub's own ``.venv``
before anything else is installed there::

    python -m gradlab_hub.cputorch PYTHON      # the environment of the interpreter PYTHON
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["CPU_INDEX", "check_cpu_torch", "cuda_of", "install_cpu_torch", "torch_build", "torch_pin"]

LOCK = Path(__file__).resolve().parent.parent.parent / "requirements" / "course.lock"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def torch_pin(lock: Path = LOCK) -> str:
    """The lock's torch requirement, e.g. ``torch==2.13.0``."""
    for line in lock.read_text(encoding="utf-8").splitlines():
        if line.split("==")[0].strip().lower() == "torch":
            return line.split("#")[0].split(";")[0].strip()
    raise SystemExit(f"cputorch: {lock} pins no torch")


def torch_build(environ: dict[str, str] | None = None) -> str:
    """``cpu`` (default) or ``pypi``, from ``GRADLAB_HUB_TORCH``."""
    value = (environ if environ is not None else os.environ).get("GRADLAB_HUB_TORCH") or "cpu"
    if value not in ("cpu", "pypi"):
        raise SystemExit(f"cputorch: GRADLAB_HUB_TORCH={value!r}: write cpu (the default) or pypi (CUDA on Linux)")
    return value


def cuda_of(python: str, library: str | None = None) -> str | None:
    """``torch.version.cuda`` in ``python``'s environment: None for a CPU build, "absent" without torch."""
    env = {**os.environ, **({"LD_LIBRARY_PATH": library} if library else {})}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [python, "-c", "import torch; print(torch.version.cuda)"], env=env, capture_output=True, text=True
    )
    if done.returncode:
        return "absent"
    printed = done.stdout.strip()
    return None if printed == "None" else printed


def install_cpu_torch(
    python: str, step: Callable[..., None], environ: dict[str, str] | None = None, library: str | None = None
) -> bool:
    """Put the lock's torch, CPU build, into ``python``'s environment; whether it was installed now.

    Nothing is done when a torch is there already (a CUDA one is kept, and said so) or
    ``GRADLAB_HUB_TORCH=pypi``. The wheel comes first from what pip has at hand without
    a network (``--no-index``: ``PIP_FIND_LINKS``), else from ``GRADLAB_HUB_TORCH_INDEX``
    (PyTorch's CPU index). Only torch itself (``--no-deps``): the lock, installed next,
    brings its dependencies at their pinned versions; :func:`check_cpu_torch` then checks.
    """
    env = environ if environ is not None else os.environ
    if torch_build(dict(env)) == "pypi":
        return False
    found = cuda_of(python, library)
    if found is None:
        return False
    if found != "absent":
        print(f"cputorch: {python} already has torch for CUDA {found}; keeping it (remove it for the CPU build)")
        return False
    pin = torch_pin()
    try:
        step(python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", pin)
    except subprocess.CalledProcessError:
        index = env.get("GRADLAB_HUB_TORCH_INDEX") or CPU_INDEX
        step(python, "-m", "pip", "install", "--quiet", "--no-deps", "--index-url", index, pin)
    return True


def check_cpu_torch(python: str, library: str | None = None, environ: dict[str, str] | None = None) -> None:
    """Stop with what to set when ``python``'s torch is not the CPU build that was asked for."""
    if torch_build(dict(environ if environ is not None else os.environ)) == "pypi":
        return
    found = cuda_of(python, library)
    if found == "absent":
        raise SystemExit(f"cputorch: {python} cannot import torch after the install")
    if found is not None:
        raise SystemExit(
            f"cputorch: the torch in {python} is a CUDA {found} build, not the CPU one; set GRADLAB_HUB_TORCH_INDEX "
            "to a CPU index, or GRADLAB_HUB_TORCH=pypi to keep PyPI's build"
        )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m gradlab_hub.cputorch PYTHON", file=sys.stderr)
        return 2

    def step(*command: str) -> None:
        print("cputorch:", " ".join(command), flush=True)
        subprocess.run(command, check=True)

    install_cpu_torch(args[0], step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
