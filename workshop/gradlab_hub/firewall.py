"""Learners cannot reach the cloud VM's metadata service (its credentials).

On a cloud VM, ``http://169.254.169.254/`` answers every process on the machine with
the instance's metadata and, when the VM has a role or service account attached,
with that role's credentials. Learners run arbitrary code, so the hub refuses them
that address: one ``iptables`` rule in the ``OUTPUT`` chain rejects every packet to
it from a process whose groups include the learners' group (``-m owner --gid-owner
GROUP --suppl-groups``; learners' primary group is their own). Root, the hub and
other accounts are unaffected. Zero to JupyterHub does the same for its pods
(``singleuser.cloudMetadata.blockWithIptables``, on by default).

The rule carries the comment ``gradlab-hub GROUP`` so it is added once and can be
removed (:func:`unblock`); it stays in force while the hub is stopped, since learners'
servers may keep running. Rules do not survive a reboot; ``make hub`` adds it again.
"""

from __future__ import annotations

import grp
import shutil
import subprocess

__all__ = ["METADATA_ADDRESS", "block", "in_force", "rule", "unblock"]

METADATA_ADDRESS = "169.254.169.254"


def rule(group: str) -> list[str]:
    """The ``iptables`` rule (without the command, ``-A``/``-C``/``-D`` and chain) for ``group``.

    Example::

        >>> " ".join(rule("gradlab-learners"))
        '-d 169.254.169.254/32 -m owner --gid-owner gradlab-learners --suppl-groups -m comment --comment gradlab-hub gradlab-learners -j REJECT'
    """
    return [
        "-d",
        f"{METADATA_ADDRESS}/32",
        "-m",
        "owner",
        "--gid-owner",
        group,
        "--suppl-groups",
        "-m",
        "comment",
        "--comment",
        f"gradlab-hub {group}",
        "-j",
        "REJECT",
    ]


def _iptables(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", "10", *arguments], capture_output=True, text=True, timeout=60)


def block(group: str) -> tuple[bool, str]:
    """Reject learners' packets to the metadata service: (in force, what the hub logs).

    Creates ``group`` when it does not exist yet (``iptables`` resolves the name once).
    """
    if shutil.which("iptables") is None:
        return False, (
            f"learners CAN reach the cloud metadata service {METADATA_ADDRESS}: iptables is missing "
            "(apt-get install iptables, then start the hub again)"
        )
    try:
        grp.getgrnam(group)
    except KeyError:
        done = subprocess.run(["groupadd", group], capture_output=True, text=True)
        if done.returncode:
            return False, f"cannot create the group {group} for the metadata block: {done.stderr.strip()}"
    if _iptables("-C", "OUTPUT", *rule(group)).returncode == 0:
        return True, f"learners ({group}) cannot reach {METADATA_ADDRESS} (iptables rule in force)"
    done = _iptables("-I", "OUTPUT", "1", *rule(group))
    if done.returncode:
        return False, (
            f"learners CAN reach the cloud metadata service {METADATA_ADDRESS}: iptables refused the rule "
            f"({done.stderr.strip()}); attach no role or service account to this VM"
        )
    return True, f"learners ({group}) cannot reach {METADATA_ADDRESS} (iptables rule added)"


def in_force(group: str) -> bool:
    """Whether the rule for ``group`` is in the ``OUTPUT`` chain now."""
    return shutil.which("iptables") is not None and _iptables("-C", "OUTPUT", *rule(group)).returncode == 0


def unblock(group: str) -> bool:
    """Remove the rule :func:`block` added for ``group``; whether there was one."""
    if shutil.which("iptables") is None:
        return False
    removed = False
    while _iptables("-D", "OUTPUT", *rule(group)).returncode == 0:
        removed = True
    return removed
