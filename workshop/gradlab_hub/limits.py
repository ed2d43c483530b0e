"""Per-learner memory, CPU and process-count limits through Linux control groups (cgroups).

JupyterHub's local-process spawner only *announces* ``mem_limit`` and ``cpu_limit``
(as ``MEM_LIMIT`` and ``CPU_LIMIT`` in the server's environment); nothing enforces
them. Here each learner's server, and every kernel and terminal it starts, runs in a
cgroup of its own:

- cgroup v2 (most current distributions): ``{mount}/{name}/{learner}`` with
  ``memory.max``, ``cpu.max`` and, when the ``pids`` controller is offered, ``pids.max``;
- cgroup v1 (older systems, some containers): ``{memory mount}/{own path}/{name}/{learner}``
  with ``memory.limit_in_bytes``, and the same under the ``cpu`` controller with
  ``cpu.cfs_quota_us`` and, when it is mounted, the ``pids`` controller with ``pids.max``.

The pids limit counts tasks (processes and their threads): a fork bomb in a learner's
kernel stops at it ("Resource temporarily unavailable") instead of filling the
machine's process table. Without a ``pids`` controller it is not enforced, and
:func:`detect` and ``make hub-check`` say so.

A learner whose kernel exceeds the memory limit loses that kernel (the kernel's OOM
killer acts inside the cgroup), not the machine; CPU beyond the limit is throttled.
When a server stops, :meth:`CgroupLimits.remove` stops what is left in its cgroup
(process by process, by id) and removes the cgroup.

:func:`detect` says why limits cannot be enforced when they cannot (no root, no
writable cgroup hierarchy with both controllers); the hub then logs that once and
runs without them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CgroupLimits", "detect"]

_PERIOD_US = 100_000


@dataclass(frozen=True)
class CgroupLimits:
    """Where learners' cgroups live: one base directory per hierarchy (v2: one; v1: memory and cpu)."""

    version: int
    bases: tuple[Path, ...]
    # Where pids.max is written: v2, the group itself (bases[0]); v1, the pids controller's base
    # (also in ``bases``). None when the machine has no pids controller.
    pids_base: Path | None = None

    def directories(self, user: str) -> list[Path]:
        return [base / user for base in self.bases]

    def create(self, user: str, *, mem_bytes: int, cpus: float, pids: int | None = None) -> None:
        """Make ``user``'s cgroup (again) with these limits; a leftover one is emptied first."""
        self.remove(user)
        for base in self.bases:
            base.mkdir(exist_ok=True)
        if self.version == 2:
            controllers = "+memory +cpu" + (" +pids" if self.pids_base is not None else "")
            with contextlib.suppress(OSError):
                _write(self.bases[0] / "cgroup.subtree_control", controllers)
            group = self.bases[0] / user
            group.mkdir()
            _write(group / "memory.max", str(mem_bytes))
            with contextlib.suppress(OSError):
                _write(group / "memory.swap.max", "0")
            _write(group / "cpu.max", f"{int(cpus * _PERIOD_US)} {_PERIOD_US}")
            if pids is not None and self.pids_base is not None:
                _write(group / "pids.max", str(pids))
            return
        memory, cpu = self.bases[0] / user, self.bases[1] / user
        memory.mkdir()
        _write(memory / "memory.limit_in_bytes", str(mem_bytes))
        if cpu != memory:
            cpu.mkdir()
        _write(cpu / "cpu.cfs_period_us", str(_PERIOD_US))
        _write(cpu / "cpu.cfs_quota_us", str(int(cpus * _PERIOD_US)))
        if self.pids_base is not None:
            group = self.pids_base / user
            group.mkdir(exist_ok=True)
            _write(group / "pids.max", str(pids) if pids is not None else "max")

    def pids_limit(self, user: str) -> int | None:
        """The pids limit of ``user``'s cgroup, or None when there is none."""
        if self.pids_base is None:
            return None
        group = self.bases[0] / user if self.version == 2 else self.pids_base / user
        text = _read(group / "pids.max").strip()
        return int(text) if text.isdigit() else None

    def join(self, user: str) -> None:
        """Move the calling process into ``user``'s cgroup (its children follow it)."""
        pid = str(os.getpid())
        for group in self.directories(user):
            _write(group / "cgroup.procs", pid)

    def pids(self, user: str) -> set[int]:
        found: set[int] = set()
        for group in self.directories(user):
            with contextlib.suppress(FileNotFoundError):
                found |= {int(line) for line in (group / "cgroup.procs").read_text().split()}
        return found

    def memory_limit(self, user: str) -> int:
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        return int((self.directories(user)[0] / name).read_text())

    def remove(self, user: str, *, grace: float = 5.0) -> list[int]:
        """Stop every process still in ``user``'s cgroup (SIGKILL by pid), remove the cgroup; the pids stopped."""
        stopped: list[int] = []
        deadline = time.monotonic() + grace
        while pids := self.pids(user):
            for pid in pids - set(stopped):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                stopped.append(pid)
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for group in self.directories(user):
            with contextlib.suppress(FileNotFoundError):
                group.rmdir()
        return stopped

    def remove_base(self) -> None:
        """Remove the (empty) base directories, e.g. when a test hub is done."""
        for base in self.bases:
            with contextlib.suppress(FileNotFoundError, OSError):
                base.rmdir()


def _write(path: Path, text: str) -> None:
    with open(path, "w") as out:
        out.write(text)


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, options) of every cgroup mount."""
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            _, point, fstype, options, *_ = line.split()
            if fstype in ("cgroup", "cgroup2"):
                found.append((point.replace("\\040", " "), fstype, set(options.split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller ('' for v2), from /proc/self/cgroup."""
    paths = {}
    with open("/proc/self/cgroup") as groups:
        for line in groups:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def detect(name: str) -> tuple[CgroupLimits | None, str]:
    """The cgroup layout this machine allows, or None and the reason limits cannot be enforced.

    Prefers the v1 memory and cpu controllers when they are mounted (then they cannot
    be used through v2), else a v2 hierarchy whose root offers both controllers.
    """
    if os.geteuid() != 0:
        return None, "the hub does not run as root"
    try:
        mounts = _mounts()
        own = _own_paths()
    except OSError as error:
        return None, f"cannot read the cgroup mounts ({error})"
    v1: dict[str, str] = {
        c: point
        for point, fstype, options in mounts
        if fstype == "cgroup"
        for c in ("memory", "cpu", "pids")
        if c in options
    }
    if "memory" in v1 and "cpu" in v1:
        controllers = ("memory", "cpu", "pids") if "pids" in v1 else ("memory", "cpu")
        bases = tuple(Path(v1[c]) / own.get(c, "/").lstrip("/") / name for c in controllers)
        layout = CgroupLimits(1, bases, bases[2] if "pids" in v1 else None)
    else:
        roots = [point for point, fstype, _ in mounts if fstype == "cgroup2"]
        usable = [r for r in roots if {"memory", "cpu"} <= set(_read(Path(r) / "cgroup.controllers").split())]
        if not usable:
            return None, "no cgroup hierarchy offers both the memory and the cpu controller"
        root = Path(usable[0])
        wanted = {"memory", "cpu"} | ({"pids"} & set(_read(root / "cgroup.controllers").split()))
        if not wanted <= set(_read(root / "cgroup.subtree_control").split()):
            try:
                _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(wanted)))
            except OSError as error:
                return None, f"cannot enable the memory and cpu controllers in {root} ({error})"
        layout = CgroupLimits(2, (root / name,), root / name if "pids" in wanted else None)
    probe = f"probe-{os.getpid()}"
    try:
        layout.create(probe, mem_bytes=1 << 30, cpus=1.0, pids=4096)
    except OSError as error:
        if layout.pids_base is None:
            return None, f"cannot create a cgroup under {layout.bases[0].parent} ({error})"
        layout.remove(probe)
        layout = CgroupLimits(layout.version, layout.bases[:2] if layout.version == 1 else layout.bases)
        try:
            layout.create(probe, mem_bytes=1 << 30, cpus=1.0)
        except OSError as again:
            return None, f"cannot create a cgroup under {layout.bases[0].parent} ({again})"
    finally:
        layout.remove(probe)
    pids = "pids limit" if layout.pids_base is not None else "NO pids limit (no pids controller)"
    return layout, f"cgroup v{layout.version} (memory, CPU, {pids})"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
