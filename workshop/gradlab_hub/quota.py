"""A disk quota per learner, where the filesystem of their home directories keeps user quotas.

Learners' homes are on one filesystem, and a learner's code can write until it is full
(a loop saving checkpoints, a large download), which stops every other learner's saves.
Linux user quotas cap the space each account may use: when the filesystem holding
``GRADLAB_HUB_HOME_BASE`` is mounted with user quotas on (ext4 or XFS, ``usrquota``) and
the ``quota`` tools are installed (``setquota``), each learner's server start sets their
limit (``GRADLAB_HUB_DISK_QUOTA``, default 2G; soft limit 90 % of it). A learner over the
limit gets "Disk quota exceeded" on their own writes only.

Where the host does not support them, nothing is enforced, and :func:`support` says why
(``make hub-check`` and the hub's start print it): no ``setquota``; the filesystem mounted
without ``usrquota``; quotas not switched on. Enabling them on ext4 (as root, once)::

    apt-get install quota
    # add usrquota to the options of the home filesystem in /etc/fstab, then
    mount -o remount /home && quotacheck -cum /home && quotaon -u /home

(a kernel built without ``CONFIG_QUOTA`` cannot do it at all; the test machine is one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["QuotaSupport", "mount_of", "set_quota", "support"]

_QUOTA_OPTIONS = {"usrquota", "quota", "uquota", "usrjquota"}


@dataclass(frozen=True)
class QuotaSupport:
    """Where learners' quotas are set: the mount point holding their homes."""

    mount: Path


def mount_of(path: Path, mounts: str | None = None) -> tuple[Path, str, str, set[str]]:
    """(mount point, device, filesystem type, options) of the filesystem holding ``path``.

    Example::

        >>> table = "/dev/vda / ext4 rw,relatime 0 0\\n/dev/vdb /home xfs rw,usrquota 0 0\\n"
        >>> mount_of(Path("/home/ada"), table)[0], sorted(mount_of(Path("/home/ada"), table)[3])
        (PosixPath('/home'), ['rw', 'usrquota'])
        >>> mount_of(Path("/srv/x"), table)[:3]
        (PosixPath('/'), '/dev/vda', 'ext4')
    """
    text = mounts if mounts is not None else Path("/proc/self/mounts").read_text()
    target = Path(os.path.abspath(path))
    best: tuple[Path, str, str, set[str]] | None = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        device, point, fstype, options = fields[0], Path(fields[1].replace("\\040", " ")), fields[2], fields[3]
        if (target == point or point in target.parents) and (best is None or len(point.parts) >= len(best[0].parts)):
            best = (point, device, fstype, set(options.split(",")))
    if best is None:
        raise ValueError(f"no filesystem holds {path}")
    return best


def support(home_base: Path, mounts: str | None = None) -> tuple[QuotaSupport | None, str]:
    """Whether learners' homes can get a quota here: the support, or None and why not (with what to do)."""
    try:
        point, device, fstype, options = mount_of(home_base, mounts)
    except (OSError, ValueError) as error:
        return None, f"cannot read the mounts ({error})"
    where = f"{point} ({device}, {fstype})"
    if shutil.which("setquota") is None or shutil.which("quotaon") is None:
        return None, f"the quota tools are missing (apt-get install quota); homes are on {where}"
    if not options & _QUOTA_OPTIONS:
        return None, f"{where} is mounted without usrquota (workshop/gradlab_hub/quota.py says how to enable it)"
    state = subprocess.run(["quotaon", "-pu", str(point)], capture_output=True, text=True, timeout=30)
    if "is on" not in state.stdout:
        return None, f"user quotas on {where} are off (quotaon -u {point})"
    return QuotaSupport(point), f"user quotas on {where}"


def set_quota(name: str, limit_bytes: int, where: QuotaSupport) -> None:
    """Limit ``name`` to ``limit_bytes`` on the homes' filesystem (soft limit 90 % of it), no file-count limit."""
    hard = max(1, limit_bytes // 1024)
    done = subprocess.run(
        ["setquota", "-u", name, str(hard * 9 // 10), str(hard), "0", "0", str(where.mount)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode:
        raise RuntimeError(f"setquota for {name} failed: {done.stderr.strip()}")
