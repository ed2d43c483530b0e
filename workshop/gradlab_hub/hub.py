"""``make hub``: start the workshop hub on this machine.

Checks what the hub needs (root, the proxy, the learner environment), creates the
state directory (mode 0700) with a workshop code and an admin password on first start,
blocks learners from the cloud metadata service (:mod:`gradlab_hub.firewall`), prints
where the hub listens, the workshop code and the learners' link (made from
``GRADLAB_HUB_PUBLIC_URL``), then replaces itself with JupyterHub. Ctrl-C stops the
hub and the proxy; learners' servers keep running and the hub reconnects to them when
it starts again.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

from gradlab.course.workshop import pull_link

from .check import guards
from .code import workshop_code
from .firewall import block
from .pin import drift, links, load_pin
from .settings import (
    ADMIN_PASSWORD_FILE,
    PROXY_COMMAND,
    WORKSHOP,
    WORKSHOP_CODE_FILE,
    LearnerEnv,
    Settings,
    SettingsError,
)

COURSE_REPO = "https://github.com/gradlab/gradlab"


def ensure_secret(path: Path, make: str) -> None:
    """Write ``make`` to ``path`` (mode 0600) unless the file exists."""
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(make + "\n")


def prepare(environ: dict[str, str]) -> Settings:
    """Create the state directory and missing secrets; return the checked settings."""
    state = Path(environ.get("GRADLAB_HUB_STATE_DIR") or WORKSHOP / "state").resolve()
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    if not environ.get("GRADLAB_HUB_WORKSHOP_CODE"):
        ensure_secret(state / WORKSHOP_CODE_FILE, workshop_code())
    if not environ.get("GRADLAB_HUB_ADMIN_PASSWORD"):
        ensure_secret(state / ADMIN_PASSWORD_FILE, secrets.token_urlsafe(36))
    return Settings.from_env({**environ, "GRADLAB_HUB_STATE_DIR": str(state)})


def problems(settings: Settings) -> list[str]:
    """What stops the hub from starting, each with the command that fixes it."""
    found = []
    if os.geteuid() != 0:
        found.append("the hub must run as root: each learner gets a Unix account (sudo make hub)")
    if not os.access(PROXY_COMMAND, os.X_OK):
        found.append("configurable-http-proxy is not installed: make hub-deps (needs node and npm)")
    if LearnerEnv.load(settings.prefix) is None:
        found.append(f"no learner environment in {settings.prefix}: make hub-deps")
    if shutil.which("git") is None:
        found.append("git is missing (nbgitpuller clones the course with it): apt-get install git")
    return found


def announcement(settings: Settings, metadata: str) -> str:
    """What ``make hub`` prints before JupyterHub starts: where, the code, the admin, the learners' links.

    The links are those of the material ``make hub-pin`` pinned (both editions); without a
    pin, the course's upstream ``main``, with a warning: it may not match this hub's gradlab.
    """
    pinned = load_pin(settings.state_dir)
    lines = [
        f"gradlab workshop hub listening on {settings.url} (Ctrl-C stops the hub; learners' servers keep running)",
        f"  workshop code for the room:  {settings.workshop_code}",
        f"  admin: {settings.admin}, password in {settings.state_dir / ADMIN_PASSWORD_FILE}",
        f"  at most {settings.max_accounts} accounts, {settings.max_servers} servers running at once; "
        f"idle kernels stop after {settings.kernel_cull_timeout} s, idle servers after {settings.cull_timeout} s",
        f"  {metadata}",
    ]
    if pinned is None:
        lines.append(f"  learners' link:  {pull_link(settings.learners_url, COURSE_REPO)}")
        lines.append(
            "  (NOT pinned: upstream main, which may not match this hub's gradlab; "
            "make hub-pin REPO=https://github.com/YOU/gradlab REF=BRANCH pins your branch, RUNSHEET.md)"
        )
    else:
        lines.append(f"  material: {pinned.repo} branch {pinned.ref} (pinned at {pinned.commit[:10]})")
        lines.extend(
            f"  learners' link ({start}):  {link}" for start, link in links(settings.learners_url, pinned).items()
        )
        problem = drift(pinned)
        if problem:
            lines.append(f"  warning: {problem}")
    if settings.public_url is None:
        lines.append(
            "  (this link works on this machine only: set GRADLAB_HUB_PUBLIC_URL=https://your.hub.name "
            "to the address learners open)"
        )
    lines.append(
        f"  another start notebook:  python -m gradlab.course workshop-link --hub {settings.learners_url} "
        f"--repo {pinned.repo if pinned else COURSE_REPO} --branch {pinned.ref if pinned else 'main'} "
        "--open notebooks/04_version_counters.ipynb"
    )
    if shutil.which("dot") is None:
        lines.append("  note: Graphviz is missing, so notebooks draw graphs as text: apt-get install graphviz")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    environ = dict(os.environ)
    try:
        settings = prepare(environ)
    except SettingsError as error:
        print(f"make hub: {error}", file=sys.stderr)
        return 2
    found = problems(settings)
    if found:
        print("make hub: cannot start yet:\n  - " + "\n  - ".join(found), file=sys.stderr)
        return 2
    if settings.block_metadata:
        _, metadata = block(settings.learner_group)
    else:
        metadata = "learners CAN reach the cloud metadata service (GRADLAB_HUB_BLOCK_METADATA=0)"
    print(announcement(settings, metadata), end="")
    for name, ok, what in guards(settings):
        print(f"  {name}: {'enforced' if ok else 'NOT enforced'}, {what}")
    print(flush=True)
    config = WORKSHOP / "jupyterhub_config.py"
    command = [sys.executable, "-m", "jupyterhub", "-f", str(config), *(argv if argv is not None else sys.argv[1:])]
    os.chdir(settings.state_dir)
    environ["GRADLAB_HUB_STATE_DIR"] = str(settings.state_dir)
    os.execve(sys.executable, command, environ)
    return 1  # pragma: no cover - execve does not return


if __name__ == "__main__":
    sys.exit(main())
