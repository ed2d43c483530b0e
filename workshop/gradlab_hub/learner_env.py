"""The Python environment learners' servers and kernels run in (``make hub-deps``).

Learners' servers run as their own Unix accounts, so everything they execute must be
readable by every account: the interpreter, the packages of ``requirements/course.lock``
and gradlab itself. The course's ``.venv`` often is not (its interpreter may live in
root's home, e.g. under pyenv, and the checkout may sit in a private directory), so the
hub gets its own environment under a prefix (default ``/opt/gradlab-workshop``):

- ``python/``: only when the course interpreter cannot be run by other accounts, a copy
  of that interpreter's installation (without its site-packages); a copy of a
  shared-library build finds its libpython through ``LD_LIBRARY_PATH``, which the
  hub passes to learners' servers;
- ``env/``: a virtual environment with the exact pins of the course lock, plus gradlab
  installed from this checkout (not editable, so the checkout may stay private).
  torch is PyPI's CUDA build on Linux (several GB, useless without a GPU), so its CPU
  build is installed first, at the lock's version: from a wheel pip already has at
  hand (``PIP_FIND_LINKS``, no network), else from PyTorch's CPU index
  (``GRADLAB_HUB_TORCH_INDEX``); the lock's ``torch==X`` is then already satisfied.
  ``GRADLAB_HUB_TORCH=pypi`` asks for PyPI's build instead (a GPU machine);
- ``learner-env.json``: what was built from what. Nothing is rebuilt while the lock is
  unchanged; a change to gradlab's sources reinstalls gradlab only.

Every step is checked by running the environment as the unprivileged account
``nobody``: it must import gradlab, torch, jupyterhub and nbgitpuller.

Usage::

    python -m gradlab_hub.learner_env [--prefix DIR] [--python PYTHON] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from .cputorch import check_cpu_torch, install_cpu_torch, torch_build
from .settings import DEFAULT_PREFIX, LEARNER_ENV_STAMP, REPO

LOCK = REPO / "requirements" / "course.lock"
# What the build of gradlab reads besides gradlab/ (tests/test_workshop.py checks it against pyproject.toml).
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")
PROBE = (
    "import gradlab, gradlab.course, torch, jupyterhub, nbgitpuller, ipykernel; "
    "print(gradlab.__version__, torch.version.cuda)"
)


def _digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def lock_hash() -> str:
    """Hash of what the packages come from: the course lock."""
    return _digest([LOCK])


def gradlab_hash() -> str:
    """Hash of gradlab's sources and pyproject.toml (a change reinstalls gradlab only)."""
    return _digest([REPO / "pyproject.toml", *sorted((REPO / "gradlab").rglob("*.py"))])


def as_nobody(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as the account ``nobody`` (no groups), from ``/``."""
    try:
        entry = pwd.getpwnam("nobody")
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:
        uid = gid = 65534

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    clean = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **(env or {})}
    return subprocess.run(command, env=clean, cwd="/", preexec_fn=drop, capture_output=True, text=True, timeout=300)


def _version_of(python: str, env: dict[str, str] | None = None, *, nobody: bool = False) -> str | None:
    command = [python, "-c", "import sys; print(sys.version)"]
    try:
        done = as_nobody(command, env) if nobody else subprocess.run(command, env=env, capture_output=True, text=True)
    except OSError:  # e.g. PermissionError: the account cannot reach the interpreter at all
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def shared_interpreter(prefix: Path, python: str) -> tuple[str, str | None]:
    """An interpreter every account can run, as ``python`` is: (path, LD_LIBRARY_PATH or None).

    ``python`` itself when ``nobody`` runs it and sees the same build; otherwise a copy
    of its installation in ``prefix/python``.
    """
    wanted = _version_of(python)
    if wanted is None:
        raise SystemExit(f"learner_env: {python} does not run")
    if _version_of(python, nobody=True) == wanted:
        return python, None
    info = json.loads(
        subprocess.run(
            [
                python,
                "-c",
                "import json, sys, sysconfig; print(json.dumps({'base': sys.base_prefix, 'exe': sys._base_executable,"
                " 'shared': bool(sysconfig.get_config_var('Py_ENABLE_SHARED')), 'ver': sysconfig.get_python_version()}))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    base, target = Path(info["base"]), prefix / "python"
    print(f"learner_env: other accounts cannot run {python}; copying its installation to {target}")
    stdlib = f"lib/python{info['ver']}"

    def skip(folder: str, names: list[str]) -> list[str]:
        relative = Path(folder).relative_to(base).as_posix()
        if relative == f"{stdlib}/site-packages":
            return names  # the base's own packages: the virtual environment does not see them
        return ["test"] if relative == stdlib else []

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(base, target, symlinks=True, ignore=skip)
    copied = str(target / Path(info["exe"]).relative_to(base))
    library = str(target / "lib") if info["shared"] else None
    env = {"LD_LIBRARY_PATH": library} if library else None
    if _version_of(copied, env, nobody=True) != wanted:
        raise SystemExit(f"learner_env: the copy {copied} does not run as {wanted!r} for other accounts")
    return copied, library


def _runner(library: str | None) -> Callable[..., None]:
    run_env = {**os.environ, **({"LD_LIBRARY_PATH": library} if library else {})}
    run_env.pop("PYTHONPATH", None)

    def step(*command: str) -> None:
        print("learner_env:", " ".join(command), flush=True)
        subprocess.run(command, env=run_env, check=True)

    return step


def build(prefix: Path, python: str, step: Callable[..., None] | None = None) -> dict[str, str | None]:
    """Build the environment in ``prefix`` from scratch; returns what the stamp records.

    An environment already there is removed first (a changed lock must not leave old
    packages behind); torch's CPU build goes in before the lock (:mod:`gradlab_hub.cputorch`).
    ``step`` runs each command (default: :func:`subprocess.run`, checked).
    """
    os.umask(0o022)
    prefix.mkdir(parents=True, exist_ok=True)
    prefix.chmod(0o755)
    interpreter, library = shared_interpreter(prefix, python)
    env_dir = prefix / "env"
    step = step or _runner(library)
    env_python = str(env_dir / "bin" / "python")
    if env_dir.exists():
        shutil.rmtree(env_dir)
    step(interpreter, "-m", "venv", str(env_dir))
    step(env_python, "-m", "pip", "install", "--quiet", "--upgrade", "pip>=24")
    install_cpu_torch(env_python, step, library=library)
    step(env_python, "-m", "pip", "install", "--quiet", "-r", str(LOCK))
    check_cpu_torch(env_python, library)
    return {"python": interpreter, "ld_library_path": library, "lock": lock_hash(), "torch": torch_build()}


def install_gradlab(prefix: Path, library: str | None) -> None:
    """Install gradlab from this checkout into the environment (not editable)."""
    os.umask(0o022)
    with tempfile.TemporaryDirectory() as source:
        # Build from a copy, so nothing is written into the checkout. The copy holds every file
        # pyproject.toml names (the readme, the license-files): a missing one makes setuptools
        # warn, three times, at each build.
        for name in SOURCE_FILES:
            shutil.copy2(REPO / name, Path(source) / name)
        shutil.copytree(REPO / "gradlab", Path(source) / "gradlab", ignore=shutil.ignore_patterns("__pycache__"))
        step = _runner(library)
        step(
            str(prefix / "env" / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--force-reinstall",
            source,
        )


def read_stamp(prefix: Path) -> dict[str, str | None]:
    try:
        stamp = json.loads((prefix / LEARNER_ENV_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def check(prefix: Path, *, current_gradlab: bool = True) -> str | None:
    """Why the environment in ``prefix`` is not usable by learners, or None when it is.

    With ``current_gradlab=False`` an installed gradlab older than the checkout's sources
    is accepted (the tests accept it: ``make test`` runs ``make hub-deps`` just before).
    """
    stamp = read_stamp(prefix)
    if not stamp:
        return f"no learner environment in {prefix}"
    if stamp.get("lock") != lock_hash():
        return "the course lock changed since it was built"
    if current_gradlab and stamp.get("gradlab") != gradlab_hash():
        return "gradlab's sources changed since it was installed"
    library = stamp.get("ld_library_path")
    try:
        done = as_nobody(
            [str(prefix / "env" / "bin" / "python"), "-c", PROBE], {"LD_LIBRARY_PATH": library} if library else None
        )
    except OSError as error:
        return f"other accounts cannot run its Python ({error})"
    if done.returncode != 0:
        return f"other accounts cannot import the course: {done.stderr.strip().splitlines()[-1:]}"
    cuda = done.stdout.split()[-1] if done.stdout.split() else "None"
    if stamp.get("torch", "cpu") == "cpu" and cuda != "None":
        return f"its torch is a CUDA {cuda} build, not the CPU one (GRADLAB_HUB_TORCH=pypi keeps it)"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradlab_hub.learner_env", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=Path(os.environ.get("GRADLAB_HUB_PREFIX") or DEFAULT_PREFIX))
    parser.add_argument("--python", default=sys.executable, help="interpreter to build from (default: this one)")
    parser.add_argument("--check", action="store_true", help="only say whether the environment is usable")
    options = parser.parse_args(argv)
    prefix = options.prefix.resolve()
    if os.geteuid() != 0:
        print(
            "learner_env: not root, so no learner environment (the workshop hub runs as root: "
            "each learner gets a Unix account). make hub-load and its test need root."
        )
        return 0 if not options.check else 1
    problem = check(prefix)
    if options.check or problem is None:
        print(f"learner_env: {problem or 'ready in ' + str(prefix)}")
        return 0 if problem is None else 1
    print(f"learner_env: updating {prefix} ({problem})", flush=True)
    stamp = read_stamp(prefix)
    if stamp.get("lock") != lock_hash() or not (prefix / "env" / "bin" / "python").exists():
        stamp = {**build(prefix, options.python), "python_version": sysconfig.get_python_version()}
    install_gradlab(prefix, stamp.get("ld_library_path"))
    stamp["gradlab"] = gradlab_hash()
    (prefix / LEARNER_ENV_STAMP).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    problem = check(prefix)
    if problem:
        print(f"learner_env: built, but {problem}", file=sys.stderr)
        return 1
    print(f"learner_env: ready in {prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
