"""Learners cannot reach the cloud VM's metadata service (its credentials), over IPv4 or IPv6.

On a cloud VM, ``http://169.254.169.254/`` answers every process on the machine with
the instance's metadata and, when the VM has a role or service account attached,
with that role's credentials; on AWS the same service also answers on IPv6, at
``[fd00:ec2::254]``. Learners run arbitrary code, so the hub refuses them both
addresses: one rule in the ``OUTPUT`` chain of ``iptables`` and one of ``ip6tables``
reject every packet to them from a process whose groups include the learners' group
(``-m owner --gid-owner GROUP --suppl-groups``; learners' primary group is their own).
Root, the hub and other accounts are unaffected. Zero to JupyterHub does the same for
its pods (``singleuser.cloudMetadata.blockWithIptables``, on by default).

The rules carry the comment ``gradlab-hub GROUP`` so they are added once and can be
removed (:func:`unblock`); they stay in force while the hub is stopped, since learners'
servers may keep running. Rules do not survive a reboot; ``make hub`` adds them again.
"""

from __future__ import annotations

import grp
import shutil
import subprocess

__all__ = ["METADATA_ADDRESS", "METADATA_ADDRESS_V6", "block", "in_force", "rule", "unblock"]

METADATA_ADDRESS = "169.254.169.254"
METADATA_ADDRESS_V6 = "fd00:ec2::254"
# (command, address/prefix) per address family.
_FAMILIES = (("iptables", f"{METADATA_ADDRESS}/32"), ("ip6tables", f"{METADATA_ADDRESS_V6}/128"))


def rule(group: str, *, v6: bool = False) -> list[str]:
    """The ``iptables`` (``ip6tables`` with ``v6``) rule, without command, ``-A``/``-C``/``-D`` and chain.

    Example::

        >>> " ".join(rule("gradlab-learners"))
        '-d 169.254.169.254/32 -m owner --gid-owner gradlab-learners --suppl-groups -m comment --comment gradlab-hub gradlab-learners -j REJECT'
        >>> rule("gradlab-learners", v6=True)[:2]
        ['-d', 'fd00:ec2::254/128']
    """
    return [
        "-d",
        _FAMILIES[v6][1],
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


def _run(command: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([command, "-w", "10", *arguments], capture_output=True, text=True, timeout=60)


def _block_one(group: str, v6: bool) -> tuple[bool, str]:
    command, address = _FAMILIES[v6]
    shown = address.split("/")[0]
    if shutil.which(command) is None:
        return False, f"{shown} NOT blocked: {command} is missing (apt-get install iptables, then start the hub again)"
    if _run(command, "-C", "OUTPUT", *rule(group, v6=v6)).returncode == 0:
        return True, f"{shown} blocked ({command} rule in force)"
    done = _run(command, "-I", "OUTPUT", "1", *rule(group, v6=v6))
    if done.returncode:
        return False, f"{shown} NOT blocked: {command} refused the rule ({done.stderr.strip()})"
    return True, f"{shown} blocked ({command} rule added)"


def block(group: str) -> tuple[bool, str]:
    """Reject learners' packets to the metadata service, IPv4 and IPv6: (both in force, what the hub logs).

    Creates ``group`` when it does not exist yet (``iptables`` resolves the name once).
    """
    try:
        grp.getgrnam(group)
    except KeyError:
        done = subprocess.run(["groupadd", group], capture_output=True, text=True)
        if done.returncode:
            return (
                False,
                f"learners CAN reach the cloud metadata service: cannot create the group {group} ({done.stderr.strip()})",
            )
    results = [_block_one(group, v6) for v6 in (False, True)]
    said = "; ".join(text for _, text in results)
    if all(ok for ok, _ in results):
        return True, f"learners ({group}) cannot reach the cloud metadata service: {said}"
    return False, (
        f"learners CAN reach the cloud metadata service: {said}; attach no role or service account to this VM"
    )


def in_force(group: str, *, v6: bool | None = None) -> bool:
    """Whether the rules for ``group`` are in the ``OUTPUT`` chains now (both, or the one family asked for)."""
    families = (False, True) if v6 is None else (v6,)
    return all(
        shutil.which(_FAMILIES[f][0]) is not None
        and _run(_FAMILIES[f][0], "-C", "OUTPUT", *rule(group, v6=f)).returncode == 0
        for f in families
    )


def unblock(group: str) -> bool:
    """Remove the rules :func:`block` added for ``group``; whether there was one."""
    removed = False
    for v6 in (False, True):
        command = _FAMILIES[v6][0]
        if shutil.which(command) is None:
            continue
        while _run(command, "-D", "OUTPUT", *rule(group, v6=v6)).returncode == 0:
            removed = True
    return removed
