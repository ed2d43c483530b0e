"""``make hub``: start the workshop hub on this machine.

Checks what the hub needs (root, the proxy, the learner environment), creates the
state directory (mode 0700) with a workshop code and an admin password on first start,
prints where the hub listens, the workshop code and the command for the learners'
link, then replaces itself with JupyterHub (Ctrl-C stops the hub, the proxy and every
learner's server; learners' files stay in their home directories).
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

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
        ensure_secret(state / WORKSHOP_CODE_FILE, secrets.token_urlsafe(9))
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
    print(
        f"gradlab workshop hub on {settings.url} (Ctrl-C stops it and every learner's server)\n"
        f"  workshop code for the room:  {settings.workshop_code}\n"
        f"  admin: {settings.admin}, password in {settings.state_dir / ADMIN_PASSWORD_FILE}\n"
        f"  learners' link:  python -m gradlab.course workshop-link --hub {settings.url} --repo {COURSE_REPO}\n",
        flush=True,
    )
    config = WORKSHOP / "jupyterhub_config.py"
    command = [sys.executable, "-m", "jupyterhub", "-f", str(config), *(argv if argv is not None else sys.argv[1:])]
    os.chdir(settings.state_dir)
    environ["GRADLAB_HUB_STATE_DIR"] = str(settings.state_dir)
    os.execve(sys.executable, command, environ)
    return 1  # pragma: no cover - execve does not return


if __name__ == "__main__":
    sys.exit(main())
