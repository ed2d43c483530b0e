"""Write binder/requirements.txt from requirements/course.lock.

Binder (repo2docker) installs the course from ``binder/requirements.txt``.
That file is derived from the course lock, never edited by hand:

* every package keeps the lock's exact version;
* torch is the CPU-only wheel, ``torch==X.Y.Z+cpu`` from PyTorch's CPU index
  (PyPI's Linux torch pulls gigabytes of CUDA libraries Binder cannot use);
* packages only the tests need are left out: the roots in ``TEST_ONLY`` and
  every locked package that nothing else the course needs depends on. What
  stays is the dependency closure of the other roots of
  ``requirements/course.in``, read from the installed package metadata (the
  environment ``make setup`` builds from the same lock; a version mismatch is
  an error, so the closure always describes the lock).

Usage::

    python tools/binder_requirements.py          # rewrite binder/requirements.txt
    python tools/binder_requirements.py --check  # exit 1 if it drifted from the lock
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "course.lock"
COURSE_IN = ROOT / "requirements" / "course.in"
OUTPUT = ROOT / "binder" / "requirements.txt"

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# Roots of requirements/course.in that only the test suite uses. Learners on
# Binder run notebooks, not pytest. nbval is a pytest plugin, so it goes too.
TEST_ONLY = {
    "pytest": "test runner",
    "pytest-xdist": "parallel test runs",
    "pytest-timeout": "test timeouts",
    "hypothesis": "property-based tests",
    "nbval": "notebook regression tests (a pytest plugin)",
    "playwright": "real-browser test",
    "jupyter-repo2docker": "the Binder build test itself",
    "psutil": "memory checks in tests (kept if a kept package needs it)",
    "ruff": "lint and format check",
    "mypy": "type check",
    "pypdf": "PDF outline checks of the handout",
    "build": "make dist (the sdist and the wheel)",
    "twine": "make dist (the metadata check)",
    "lightning": "tests inside the training frameworks (tests/test_frameworks.py)",
    "transformers": "tests inside the training frameworks (tests/test_frameworks.py)",
    "accelerate": "tests inside the training frameworks (tests/test_frameworks.py)",
}

# The Binder image provides these; never pinned there (the lock pins setuptools for make dist).
INSTALLER_TOOLS = {"pip", "setuptools", "wheel", "distribute"}

# Binder builds a Linux x86_64 image with the Python of binder/runtime.txt.
TARGET_MARKERS = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


class LockMismatch(RuntimeError):
    """The installed environment does not match requirements/course.lock."""


def normalize(name: str) -> str:
    """PEP 503 name: ``Jinja2`` and ``jinja2``, ``typing_extensions`` and ``typing-extensions`` agree."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, tuple[str, str]]:
    """``{normalized name: (name as written, version)}`` for every ``name==version`` line."""
    pins: dict[str, tuple[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ValueError(f"{path.name}: expected 'name==version', got {line!r}")
        pins[normalize(name.strip())] = (name.strip(), version.strip())
    return pins


def _wanted(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**TARGET_MARKERS, "extra": extra}) for extra in (extras or {""}))


def closure(roots: list[str], lock: dict[str, tuple[str, str]]) -> set[str]:
    """Normalized names of ``roots`` and everything they need on Binder.

    Reads ``Requires-Dist`` of the installed distributions; each one's version
    must equal the lock's, otherwise the closure would describe another set.
    """
    seen: set[tuple[str, frozenset[str]]] = set()
    keep: set[str] = set()
    todo = [(normalize(r), frozenset()) for r in roots]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen or name in INSTALLER_TOOLS:
            continue
        seen.add((name, extras))
        if name not in lock:
            raise LockMismatch(f"{name} is needed but missing from requirements/course.lock")
        keep.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise LockMismatch(f"{name} is not installed; run 'make setup' first") from None
        installed = dist.version.split("+", 1)[0]
        if installed != lock[name][1]:
            raise LockMismatch(
                f"{name} {dist.version} is installed but the lock says {lock[name][1]}; run 'make setup'"
            )
        for spec in dist.requires or []:
            requirement = Requirement(spec)
            if _wanted(requirement, set(extras)):
                todo.append((normalize(requirement.name), frozenset(requirement.extras)))
    return keep


def render(lock_path: Path = LOCK, course_in: Path = COURSE_IN) -> str:
    """The text binder/requirements.txt should have."""
    lock = read_pins(lock_path)
    test_only = {normalize(n) for n in TEST_ONLY}
    roots = [n for n in read_pins(course_in) if n not in test_only]
    keep = closure(roots, lock)
    dropped = sorted(lock[n][0] for n in lock if n not in keep and n not in INSTALLER_TOOLS)
    lines = [
        "# binder/requirements.txt: generated, do not edit.",
        "# Made by tools/binder_requirements.py from requirements/course.lock (same versions);",
        "# regenerate with: python tools/binder_requirements.py",
        "# torch is the CPU-only wheel from PyTorch's index. Left out (tests only):",
        *(f"#   {line}" for line in _wrap(", ".join(dropped))),
        f"--extra-index-url {TORCH_CPU_INDEX}",
    ]
    for name in sorted(keep, key=lambda n: lock[n][0].lower()):
        written, version = lock[name]
        if name == "torch":
            version = f"{version}+cpu"
        lines.append(f"{written}=={version}")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 84) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file drifted from the lock")
    parser.add_argument("--lock", type=Path, default=LOCK, help="the course lock (default: %(default)s)")
    parser.add_argument("--course-in", type=Path, default=COURSE_IN, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, default=OUTPUT, help="file to write or check")
    args = parser.parse_args(argv)
    try:
        expected = render(args.lock, args.course_in)
    except LockMismatch as error:
        print(f"binder_requirements: {error}", file=sys.stderr)
        return 2
    if args.check:
        actual = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if actual == expected:
            return 0
        diff = difflib.unified_diff(
            actual.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            fromfile=f"{args.output.name} (as is)",
            tofile=f"{args.output.name} (from the lock)",
        )
        sys.stderr.write("".join(diff))
        print(
            f"{args.output} drifted from {args.lock.name}; run: python tools/binder_requirements.py",
            file=sys.stderr,
        )
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(expected, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
