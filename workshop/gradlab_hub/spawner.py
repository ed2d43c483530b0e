"""The local-process spawner, with each learner's server in a cgroup of its own.

:class:`WorkshopSpawner` is JupyterHub's ``LocalProcessSpawner`` (the server runs as
the learner's Unix account, started in their home directory) plus
:mod:`gradlab_hub.limits`: before the server process drops root, it joins the
learner's cgroup, so the server and every kernel it starts share the learner's
``mem_limit`` and ``cpu_limit``. When the server stops, whatever it left behind in
the cgroup is stopped by pid and the cgroup removed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

from .limits import CgroupLimits, detect

__all__ = ["WorkshopSpawner"]

_LAYOUTS: dict[str, tuple[CgroupLimits | None, str]] = {}


class WorkshopSpawner(LocalProcessSpawner):  # type: ignore[misc]
    """``LocalProcessSpawner`` whose ``mem_limit`` and ``cpu_limit`` are enforced with cgroups."""

    cgroup_name = Unicode(
        "gradlab-workshop", config=True, help="Directory, in each cgroup hierarchy, holding one cgroup per learner."
    )

    @property
    def limits(self) -> CgroupLimits | None:
        if self.cgroup_name not in _LAYOUTS:
            layout, reason = detect(self.cgroup_name)
            _LAYOUTS[self.cgroup_name] = (layout, reason)
            if layout is None:
                self.log.warning("Memory and CPU limits are NOT enforced: %s", reason)
            else:
                self.log.info("Memory and CPU limits enforced per learner with %s", reason)
        return _LAYOUTS[self.cgroup_name][0]

    def make_preexec_fn(self, name: str) -> Callable[[], None]:
        become_user = super().make_preexec_fn(name)
        limits = self.limits if (self.mem_limit or self.cpu_limit) else None

        def preexec() -> None:
            if limits is not None:
                limits.join(name)  # as root, before the process becomes the learner
            become_user()

        return preexec

    async def start(self) -> Any:
        limits = self.limits
        if limits is not None and (self.mem_limit or self.cpu_limit):
            limits.create(self.user.name, mem_bytes=int(self.mem_limit or 1 << 50), cpus=float(self.cpu_limit or 1024))
        return await super().start()

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        limits = self.limits
        if limits is not None:
            left = limits.remove(self.user.name)
            if left:
                self.log.info("Stopped %d leftover process(es) of %s: %s", len(left), self.user.name, sorted(left))
