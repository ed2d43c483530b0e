"""The local-process spawner, with each learner's server in a cgroup of its own.

:class:`WorkshopSpawner` is JupyterHub's ``LocalProcessSpawner`` (the server runs as
the learner's Unix account, started in their home directory) plus
:mod:`gradlab_hub.limits`: before the server process drops root, it joins the
learner's cgroup, so the server and every kernel it starts share the learner's
``mem_limit``, ``cpu_limit`` and ``pids_limit``; and :mod:`gradlab_hub.quota`: where
the homes' filesystem keeps user quotas, the learner's ``disk_quota`` is set. When the server stops, whatever it left behind in
the cgroup is stopped by pid and the cgroup removed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Integer, Unicode

from .limits import CgroupLimits, detect
from .quota import QuotaSupport, set_quota, support

__all__ = ["WorkshopSpawner"]

_LAYOUTS: dict[str, tuple[CgroupLimits | None, str]] = {}
_QUOTAS: dict[str, tuple[QuotaSupport | None, str]] = {}


class WorkshopSpawner(LocalProcessSpawner):  # type: ignore[misc]
    """``LocalProcessSpawner`` whose ``mem_limit`` and ``cpu_limit`` are enforced with cgroups."""

    cgroup_name = Unicode(
        "gradlab-workshop", config=True, help="Directory, in each cgroup hierarchy, holding one cgroup per learner."
    )
    pids_limit = Integer(
        1024, config=True, help="Most tasks (processes and threads) of one learner's server and kernels together."
    )
    disk_quota = Integer(
        2 * 2**30,
        config=True,
        help="Bytes a learner may use on the homes' filesystem (where it keeps quotas); 0: none.",
    )
    home_base = Unicode("/home", config=True, help="Directory that holds the learners' home directories.")

    @property
    def quota(self) -> QuotaSupport | None:
        if self.home_base not in _QUOTAS:
            found, reason = support(Path(self.home_base))
            _QUOTAS[self.home_base] = (found, reason)
            if found is None:
                self.log.warning("Disk quotas are NOT enforced per learner: %s", reason)
            else:
                self.log.info("Disk quota per learner enforced with %s", reason)
        return _QUOTAS[self.home_base][0]

    @property
    def limits(self) -> CgroupLimits | None:
        if self.cgroup_name not in _LAYOUTS:
            layout, reason = detect(self.cgroup_name)
            _LAYOUTS[self.cgroup_name] = (layout, reason)
            if layout is None:
                self.log.warning("Memory, CPU and pids limits are NOT enforced: %s", reason)
            else:
                self.log.info("Per-learner limits enforced with %s", reason)
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
            limits.create(
                self.user.name,
                mem_bytes=int(self.mem_limit or 1 << 50),
                cpus=float(self.cpu_limit or 1024),
                pids=self.pids_limit or None,
            )
        if self.disk_quota and self.quota is not None:
            set_quota(self.user.name, self.disk_quota, self.quota)
        return await super().start()

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        limits = self.limits
        if limits is not None:
            left = limits.remove(self.user.name)
            if left:
                self.log.info("Stopped %d leftover process(es) of %s: %s", len(left), self.user.name, sorted(left))
