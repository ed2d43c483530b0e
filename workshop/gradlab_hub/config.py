"""The settings applied to JupyterHub's configuration object (``c`` in ``jupyterhub_config.py``).

Kept apart from ``jupyterhub_config.py`` so that tests can apply it to a plain
``traitlets.config.Config`` and read back what the hub would run with.
"""

from __future__ import annotations

import sys
from typing import Any

from .accounts import LocalWorkshopAuthenticator
from .settings import PROXY_COMMAND, WORKSHOP, LearnerEnv, Settings
from .spawner import WorkshopSpawner

__all__ = ["CULLER_SCOPES", "SERVICE_SCOPES", "apply", "kernel_culling"]

# What the idle culler may do: see who is idle, stop their servers. Never delete users.
CULLER_SCOPES = ["list:users", "read:users:activity", "read:servers", "delete:servers"]
# The optional scripted-setup service (GRADLAB_HUB_SERVICE_TOKEN): create learners,
# start and stop their servers, issue their tokens. make hub-load uses it.
SERVICE_SCOPES = ["admin:users", "admin:servers", "tokens", "list:services", "read:services"]

LOGIN_NOTE = (
    "First time here? Choose a user name (lower case letters and digits) and a password of 12 characters or more, "
    "and type the workshop code your instructor gives you. Afterwards, your password alone signs you in."
)


def kernel_culling(settings: Settings) -> list[str]:
    """The learner server's own culling of idle kernels (``jupyter_server``'s ``MappingKernelManager``).

    JupyterLab keeps a notebook's kernel alive after its tab closes, and a torch kernel
    holds about 0.3 GiB of its own: over notebooks 00 to 11 a learner would reach the
    memory limit. A kernel that has run nothing for ``kernel_cull_timeout`` seconds is
    shut down, also when its tab is still open (``cull_connected``); a busy kernel never
    is. The notebook's file stays; the learner restarts the kernel to go on.
    """
    return [
        f"--MappingKernelManager.cull_idle_timeout={settings.kernel_cull_timeout}",
        f"--MappingKernelManager.cull_interval={settings.kernel_cull_every}",
        "--MappingKernelManager.cull_connected=True",
        "--MappingKernelManager.cull_busy=False",
    ]


def apply(c: Any, settings: Settings, env: LearnerEnv) -> None:
    """Configure JupyterHub for one machine: proxy, accounts, spawner, limits, idle culler."""
    state = settings.state_dir
    hub = c.JupyterHub
    hub.bind_url = settings.url
    hub.hub_bind_url = f"http://127.0.0.1:{settings.hub_port}"
    if settings.https:
        hub.ssl_cert = str(settings.ssl_cert)
        hub.ssl_key = str(settings.ssl_key)
    hub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
    hub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
    hub.template_vars = {"announcement_login": LOGIN_NOTE}
    # A hub restart (a new workshop code, a crash, systemd) leaves learners' servers
    # running, each in a session of its own: the restarted hub finds them in its
    # database and reconnects, so nobody loses a kernel. The proxy restarts with the
    # hub (JupyterHub replaces a leftover proxy anyway) and gets every route back.
    # To stop every server, after the day: /hub/admin, "Stop All" (RUNSHEET.md).
    hub.cleanup_servers = False
    hub.cleanup_proxy = True
    # A room, not the internet: at most this many servers run at once (the machine is
    # sized for them, SIZING.md); the learner beyond sees "try again later".
    hub.active_server_limit = settings.max_servers

    proxy = c.ConfigurableHTTPProxy
    proxy.command = [str(PROXY_COMMAND)]
    proxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
    proxy.pid_file = str(state / "jupyterhub-proxy.pid")

    hub.authenticator_class = LocalWorkshopAuthenticator
    auth = c.LocalWorkshopAuthenticator
    auth.workshop_code = settings.workshop_code
    auth.admin_password = settings.admin_password
    auth.admin_users = {settings.admin}
    auth.password_file = str(state / "workshop-passwords.json")
    auth.learner_group = settings.learner_group
    auth.home_base = str(settings.home_base)
    auth.max_accounts = settings.max_accounts
    auth.max_failures_per_user = settings.max_failures
    auth.max_failures_per_address = settings.max_failures_per_address
    auth.lockout_seconds = settings.lockout
    auth.trusted_proxies = list(settings.trusted_proxies)

    hub.spawner_class = WorkshopSpawner
    spawner = c.WorkshopSpawner
    spawner.cmd = [str(env.bin / "jupyterhub-singleuser")]
    spawner.default_url = "/lab"
    spawner.args = kernel_culling(settings)
    spawner.notebook_dir = "~"
    spawner.mem_limit = settings.mem_limit
    spawner.cpu_limit = settings.cpu_limit
    spawner.cgroup_name = settings.cgroup_name
    spawner.pids_limit = settings.pids_limit
    spawner.disk_quota = settings.disk_quota
    spawner.home_base = str(settings.home_base)
    # Nothing of the hub's own environment (root's PATH, virtual environment) reaches learners.
    spawner.env_keep = ["LANG", "LC_ALL"]
    environment = {
        "PATH": f"{env.bin}:/usr/local/bin:/usr/bin:/bin",
        "VIRTUAL_ENV": str(env.bin.parent),
    }
    if env.ld_library_path:
        environment["LD_LIBRARY_PATH"] = env.ld_library_path
    spawner.environment = environment
    # A room starts at once: each server needs several CPU seconds to start (SIZING.md),
    # so on a small machine the last of many waits minutes. Give each server time.
    spawner.start_timeout = 600
    spawner.http_timeout = 600

    hub.services = [
        {
            "name": "idle-culler",
            "command": [
                sys.executable,
                "-m",
                "jupyterhub_idle_culler",
                f"--timeout={settings.cull_timeout}",
                f"--cull-every={settings.cull_every}",
            ],
        }
    ]
    if settings.redirect_port:
        # Port 80 answers with a redirect to the HTTPS address (gradlab_hub.redirect); it starts
        # and stops with the hub and needs no access to the hub's API.
        hub.services.append(
            {
                "name": "http-redirect",
                "command": [
                    sys.executable,
                    "-m",
                    "gradlab_hub.redirect",
                    "--port",
                    str(settings.redirect_port),
                    "--host",
                    "" if settings.ip == "0.0.0.0" else settings.ip,
                    "--to",
                    str(settings.public_url),
                ],
                "environment": {"PYTHONPATH": str(WORKSHOP)},
            }
        )
    roles = [{"name": "idle-culler", "scopes": CULLER_SCOPES, "services": ["idle-culler"]}]
    if settings.service_token:
        hub.services.append({"name": "workshop-admin", "api_token": settings.service_token})
        roles.append({"name": "workshop-admin", "scopes": SERVICE_SCOPES, "services": ["workshop-admin"]})
    hub.load_roles = roles
