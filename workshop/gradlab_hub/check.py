"""``make hub-check``: what this machine enforces for each learner, and what it does not.

One line per guard, ``ok`` or ``NOT``, with the reason and what to do when it is not:

- memory and CPU limits (cgroups, :mod:`gradlab_hub.limits`);
- the process-count (pids) limit (the cgroup ``pids`` controller);
- the disk quota (user quotas on the homes' filesystem, :mod:`gradlab_hub.quota`);
- the block of the cloud metadata service, IPv4 and IPv6 (``iptables``, ``ip6tables``);
- sign-in throttling (always on: the settings it runs with).

Nothing is changed: a probe cgroup is created and removed, no firewall rule is added.
Exit status 0 when every guard is enforced, 1 when one is not (the hub still runs, with
what the machine allows; ``make hub`` prints the same lines when it starts).
"""

from __future__ import annotations

import os
import shutil
import sys

from .firewall import METADATA_ADDRESS, METADATA_ADDRESS_V6, in_force
from .limits import detect
from .quota import support
from .settings import Settings, SettingsError

__all__ = ["guards", "main"]


def guards(settings: Settings) -> list[tuple[str, bool, str]]:
    """``(guard, enforced, what)`` for each per-learner guard on this machine."""
    found = []
    if os.geteuid() != 0:
        found.append(("memory and CPU limits", False, "run as root (sudo make hub-check) to probe the cgroups"))
        found.append(("process-count limit", False, "run as root to probe the cgroups"))
    else:
        layout, reason = detect(settings.cgroup_name)
        found.append(
            (
                "memory and CPU limits",
                layout is not None,
                f"{settings.mem_limit / 2**30:g} GiB, {settings.cpu_limit:g} CPU per learner ({reason})",
            )
        )
        pids = layout is not None and layout.pids_base is not None
        found.append(
            (
                "process-count limit",
                pids,
                f"{settings.pids_limit} tasks per learner"
                if pids
                else "no cgroup pids controller here: a fork bomb in a kernel can fill the process table",
            )
        )
    quota, why = support(settings.home_base)
    found.append(
        (
            "disk quota",
            quota is not None and settings.disk_quota > 0,
            f"{settings.disk_quota / 2**30:g} GiB per learner ({why})"
            if quota is not None
            else f"none: {why}; a learner can fill the disk of everybody's homes",
        )
    )
    for command, address, v6 in (("iptables", METADATA_ADDRESS, False), ("ip6tables", METADATA_ADDRESS_V6, True)):
        if not settings.block_metadata:
            found.append((f"metadata block {address}", False, "GRADLAB_HUB_BLOCK_METADATA=0"))
        elif shutil.which(command) is None:
            found.append((f"metadata block {address}", False, f"{command} is missing: apt-get install iptables"))
        else:
            now = "rule in force" if in_force(settings.learner_group, v6=v6) else "rule added when the hub starts"
            found.append((f"metadata block {address}", True, f"{command} ({now})"))
    found.append(
        (
            "sign-in throttling",
            True,
            f"{settings.max_failures} failures per name, {settings.max_failures_per_address} per address in "
            f"15 minutes, then {settings.lockout} s locked out (doubling); passwords of 12+ characters",
        )
    )
    return found


def main(argv: list[str] | None = None) -> int:
    try:
        settings = Settings.from_env(
            {
                "GRADLAB_HUB_WORKSHOP_CODE": "not-needed-here",
                "GRADLAB_HUB_ADMIN_PASSWORD": "x" * 32,
                **os.environ,
            }
        )
    except SettingsError as error:
        print(f"hub-check: {error}", file=sys.stderr)
        return 2
    found = guards(settings)
    width = max(len(name) for name, _, _ in found)
    for name, ok, what in found:
        print(f"{name:{width}}  {'ok ' if ok else 'NOT'}  {what}")
    missing = [name for name, ok, _ in found if not ok]
    print(f"per-learner guards not enforced on this machine: {', '.join(missing)}" if missing else "all enforced")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
