"""A throwaway workshop hub on loopback, for the load test and the hub tests.

:class:`TrialHub` starts the hub exactly as ``make hub`` does (``python -m
gradlab_hub.hub``), but everything it touches is its own and is removed by
:meth:`TrialHub.close`:

- a run directory in the temporary directory (mode 0711) holding the hub's state,
  the learners' home directories and a local copy of the course repository;
- Unix accounts named ``{tag}-...`` in the group ``{tag}`` (``tag`` is ``glhub`` plus
  random hex), so they can never be confused with real accounts;
- the learners' cgroups (``{tag}`` in each hierarchy);
- every process: the hub, and through it the proxy, the idle culler, the learners'
  servers and kernels. The hub is stopped by its pid (SIGTERM: it stops what it
  started); afterwards every process that was seen as the hub's descendant, or that
  runs as one of the trial accounts, and is still alive is killed by its pid and
  reported as a leak.

Nothing listens beyond 127.0.0.1: the hub, the proxy's API and every learner's server
bind to the loopback address, and :meth:`TrialHub.listening` lets a test check that.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import requests

from .firewall import unblock
from .limits import detect
from .settings import ADMIN_PASSWORD_FILE, REPO, WORKSHOP, WORKSHOP_CODE_FILE

__all__ = ["TrialHub", "free_port", "make_course_repo"]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def make_course_repo(destination: Path, branch: str = "main") -> Path:
    """A bare git repository at ``destination`` holding this checkout's files as one commit on ``branch``.

    The files are the checkout's tracked files as they are now (uncommitted edits
    included), so the notebooks learners pull match the gradlab installed for them.
    Nothing in the checkout changes: a private index file is used.
    """
    subprocess.run(["git", "init", "--quiet", "--bare", str(destination)], check=True)
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    paths = [p for p in listed.decode().split("\0") if p and (REPO / p).is_file()]
    with tempfile.TemporaryDirectory() as scratch:
        git = {
            **os.environ,
            "GIT_DIR": str(destination),
            "GIT_WORK_TREE": str(REPO),
            "GIT_INDEX_FILE": str(Path(scratch) / "index"),
            "GIT_AUTHOR_NAME": "gradlab trial",
            "GIT_AUTHOR_EMAIL": "trial@localhost",
            "GIT_COMMITTER_NAME": "gradlab trial",
            "GIT_COMMITTER_EMAIL": "trial@localhost",
        }
        subprocess.run(
            ["git", "add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"],
            input="\0".join(paths).encode(),
            env=git,
            check=True,
        )
        tree = subprocess.run(["git", "write-tree"], env=git, capture_output=True, text=True, check=True).stdout.strip()
        commit = subprocess.run(
            ["git", "commit-tree", tree, "-m", "course snapshot"], env=git, capture_output=True, text=True, check=True
        ).stdout.strip()
        subprocess.run(["git", "update-ref", f"refs/heads/{branch}", commit], env=git, check=True)
        subprocess.run(["git", "symbolic-ref", "HEAD", f"refs/heads/{branch}"], env=git, check=True)
    return destination


class TrialHub:
    """A workshop hub with throwaway accounts; use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        *,
        cull_timeout: int = 3600,
        cull_every: int = 300,
        kernel_cull_timeout: int = 1200,
        kernel_cull_every: int = 60,
        mem_limit: str = "2G",
        cpu_limit: float = 1.0,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        if os.geteuid() != 0:
            raise PermissionError("a trial hub creates Unix accounts, so it needs root")
        self.tag = "glhub" + secrets.token_hex(3)
        self.root = Path(tempfile.mkdtemp(prefix=f"gradlab-{self.tag}-"))
        self.root.chmod(0o711)  # learners pass through to their homes and the course copy
        self.state = self.root / "state"
        self.homes = self.root / "homes"
        self.homes.mkdir(mode=0o711)
        self.homes.chmod(0o711)
        self.port, self.hub_port, self.proxy_api_port = free_port(), free_port(), free_port()
        self.url = f"http://{LOOPBACK}:{self.port}/"
        self.admin = f"{self.tag}-admin"
        self.service_token = secrets.token_hex(32)
        inherited = {
            k: v for k, v in os.environ.items() if not k.startswith("GRADLAB_HUB_") or k == "GRADLAB_HUB_PREFIX"
        }
        self.env = {
            **inherited,
            "PYTHONPATH": str(WORKSHOP),
            "GRADLAB_HUB_STATE_DIR": str(self.state),
            "GRADLAB_HUB_IP": LOOPBACK,
            "GRADLAB_HUB_PORT": str(self.port),
            "GRADLAB_HUB_INTERNAL_PORT": str(self.hub_port),
            "GRADLAB_HUB_PROXY_API_PORT": str(self.proxy_api_port),
            "GRADLAB_HUB_HOME_BASE": str(self.homes),
            "GRADLAB_HUB_GROUP": self.tag,
            "GRADLAB_HUB_ADMIN": self.admin,
            "GRADLAB_HUB_CGROUP": self.tag,
            "GRADLAB_HUB_SERVICE_TOKEN": self.service_token,
            "GRADLAB_HUB_CULL_TIMEOUT": str(cull_timeout),
            "GRADLAB_HUB_CULL_EVERY": str(cull_every),
            "GRADLAB_HUB_KERNEL_CULL_TIMEOUT": str(kernel_cull_timeout),
            "GRADLAB_HUB_KERNEL_CULL_EVERY": str(kernel_cull_every),
            "GRADLAB_HUB_MEM_LIMIT": mem_limit,
            "GRADLAB_HUB_CPU_LIMIT": str(cpu_limit),
            **(extra_env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.git_daemon: subprocess.Popen[bytes] | None = None
        self.log_path = self.root / "hub.log"
        self.seen: dict[int, float] = {}  # pid -> create time, of every process seen under the hub
        self.leaks: list[str] = []

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> TrialHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout: float = 90) -> None:
        """Start the hub (``python -m gradlab_hub.hub``) and wait until its API answers."""
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gradlab_hub.hub"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the hub exited with {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.url + "hub/api/", timeout=5).status_code == 200:
                    self.note_processes()
                    return
            time.sleep(0.3)
        raise TimeoutError(f"the hub did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def stop_servers(self, timeout: float = 120) -> None:
        """Stop every learner's server through the REST API (the hub's SIGTERM leaves them running)."""
        with contextlib.suppress(requests.RequestException, ValueError):
            running = [u["name"] for u in self.api("GET", "users").json() if u.get("servers") or u.get("pending")]
            for name in running:
                self.api("DELETE", f"users/{name}/server")
            deadline = time.monotonic() + timeout
            while running and time.monotonic() < deadline:
                running = [name for name in running if self.server_running(name)]
                time.sleep(0.5)
            if running:
                self.leaks.append(f"servers still running {timeout:.0f} s after they were stopped: {running}")

    def stop(self, timeout: float = 90, *, keep_servers: bool = False) -> None:
        """Stop the hub by its pid (SIGTERM: it stops the proxy and its services).

        Learners' servers survive a hub restart, as on the day; unless ``keep_servers``,
        they are stopped first, and anything left is killed and reported as a leak.
        """
        if self.process is None:
            return
        self.note_processes()
        if not keep_servers and self.process.poll() is None:
            self.stop_servers()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.leaks.append(f"hub {self.process.pid} ignored SIGTERM for {timeout:.0f} s")
                self.process.kill()
                self.process.wait(30)
        self.process = None
        if keep_servers:
            return
        if self.git_daemon is not None:
            self.git_daemon.terminate()
            try:
                self.git_daemon.wait(30)
            except subprocess.TimeoutExpired:
                self.git_daemon.kill()
                self.git_daemon.wait(30)
            self.git_daemon = None
        self._kill_leftovers()

    def serve_course(self, timeout: float = 30) -> str:
        """A copy of the course (:func:`make_course_repo`), served by ``git daemon`` on 127.0.0.1; its URL.

        Learners clone it as git does any remote. (Cloning a local path owned by another
        account is refused by git's ``safe.directory`` check, so the copy is not handed
        to learners as a path.)
        """
        served = self.root / "git"
        served.mkdir(mode=0o755)
        make_course_repo(served / "gradlab.git")
        port = free_port()
        self.git_daemon = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                f"--listen={LOOPBACK}",
                f"--port={port}",
                f"--base-path={served}",
                "--export-all",
                str(served),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1):
                self.note_processes()
                return f"git://{LOOPBACK}:{port}/gradlab.git"
            if self.git_daemon.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"git daemon did not listen on {LOOPBACK}:{port}")

    def close(self, keep_log: Path | None = None) -> list[str]:
        """Stop everything, remove the accounts, cgroups and run directory; returns the leaks found.

        ``keep_log``: where to copy the hub's log before the run directory goes.
        """
        try:
            self.stop()
        finally:
            if keep_log is not None:
                with contextlib.suppress(OSError):
                    keep_log.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(self.log_path, keep_log)
            self._kill_leftovers()
            unblock(self.tag)
            self._remove_accounts()
            layout, _ = detect(self.tag)
            if layout is not None:
                for name in self.accounts():
                    layout.remove(name)
                layout.remove_base()
            shutil.rmtree(self.root, ignore_errors=True)
        return self.leaks

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- processes -----------------------------------------------------------------------

    def uids(self) -> dict[int, str]:
        found = {}
        for name in self.accounts():
            with contextlib.suppress(KeyError):
                found[pwd.getpwnam(name).pw_uid] = name
        return found

    def processes(self) -> list[psutil.Process]:
        """The hub, the git daemon, their descendants and every process of a trial account, alive now."""
        found: dict[int, psutil.Process] = {}
        for started in (self.process, self.git_daemon):
            if started is not None and started.poll() is None:
                with contextlib.suppress(psutil.Error):
                    parent = psutil.Process(started.pid)
                    found[parent.pid] = parent
                    for child in parent.children(recursive=True):
                        found[child.pid] = child
        uids = self.uids()
        for proc in psutil.process_iter(["uids"]):
            with contextlib.suppress(psutil.Error):
                if proc.info["uids"] and proc.info["uids"].real in uids:
                    found[proc.pid] = proc
        return list(found.values())

    def note_processes(self) -> None:
        for proc in self.processes():
            with contextlib.suppress(psutil.Error):
                self.seen[proc.pid] = proc.create_time()

    def _kill_leftovers(self) -> None:
        uids = self.uids()
        survivors: dict[int, str] = {}
        for pid, created in self.seen.items():
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if proc.create_time() == created:
                    survivors[pid] = " ".join(proc.cmdline()[:3])
        for proc in psutil.process_iter(["uids", "cmdline"]):
            with contextlib.suppress(psutil.Error):
                if proc.info["uids"] and proc.info["uids"].real in uids:
                    survivors[proc.pid] = " ".join((proc.info["cmdline"] or [])[:3])
        for pid, command in survivors.items():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                self.leaks.append(f"process {pid} ({command}) outlived the hub")

    def listening(self) -> list[tuple[str, int, int, str]]:
        """(address, port, pid, process name) of every listening TCP socket of the hub's processes."""
        pids = {proc.pid: proc for proc in self.processes()}
        found = []
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.pid in pids:
                with contextlib.suppress(psutil.Error):
                    found.append((conn.laddr.ip, conn.laddr.port, conn.pid, pids[conn.pid].name()))
        return found

    # -- accounts --------------------------------------------------------------------------

    def accounts(self) -> list[str]:
        """Unix accounts of this trial: members of its group whose names carry its tag."""
        try:
            gid = grp.getgrnam(self.tag).gr_gid
        except KeyError:
            return []
        members = set(grp.getgrgid(gid).gr_mem)
        members |= {entry.pw_name for entry in pwd.getpwall() if entry.pw_gid == gid}
        return sorted(name for name in members if name.startswith(self.tag + "-"))

    def _remove_accounts(self) -> None:
        names = self.accounts()
        uids = set(self.uids())
        for name in names:
            done = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
            if done.returncode not in (0, 12):  # 12: home could not be removed (it is under the run dir)
                self.leaks.append(f"userdel {name}: {done.stderr.strip()}")
        with contextlib.suppress(KeyError):
            grp.getgrnam(self.tag)
            subprocess.run(["groupdel", self.tag], capture_output=True, check=False)
        for shared in (Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm")):
            with contextlib.suppress(OSError):
                for entry in shared.iterdir():
                    with contextlib.suppress(OSError):
                        if entry.lstat().st_uid in uids:
                            if entry.is_dir() and not entry.is_symlink():
                                shutil.rmtree(entry, ignore_errors=True)
                            else:
                                entry.unlink()

    # -- the hub's API -------------------------------------------------------------------------

    def secret(self, which: str) -> str:
        name = {"workshop_code": WORKSHOP_CODE_FILE, "admin_password": ADMIN_PASSWORD_FILE}[which]
        return (self.state / name).read_text().strip()

    def api(self, method: str, path: str, *, token: str | None = None, **kwargs: Any) -> requests.Response:
        """A request to the hub's REST API (``/hub/api/{path}``), as the setup service by default."""
        headers = {"Authorization": f"token {token or self.service_token}"}
        return requests.request(method, self.url + "hub/api/" + path, headers=headers, timeout=60, **kwargs)

    def learner_names(self, count: int) -> list[str]:
        return [f"{self.tag}-{i}" for i in range(1, count + 1)]

    def create_learners(self, names: list[str]) -> None:
        response = self.api("POST", "users", json={"usernames": names})
        if response.status_code != 201:
            raise RuntimeError(f"creating learners gave {response.status_code}: {response.text[:300]}")

    def token_for(self, name: str) -> str:
        response = self.api("POST", f"users/{name}/tokens", json={"note": "trial", "expires_in": 7200})
        response.raise_for_status()
        token: str = response.json()["token"]
        return token

    def start_server(self, name: str, timeout: float = 600) -> float:
        """Start ``name``'s server and wait until the hub reports it ready; the seconds it took."""
        started = time.monotonic()
        response = self.api("POST", f"users/{name}/server")
        if response.status_code not in (201, 202):
            raise RuntimeError(f"starting {name}'s server gave {response.status_code}: {response.text[:300]}")
        while time.monotonic() - started < timeout:
            model = self.api("GET", f"users/{name}").json()
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                self.note_processes()
                return time.monotonic() - started
            if not server and not model.get("pending"):
                raise RuntimeError(f"{name}'s server stopped while starting:\n{self.log_tail()}")
            time.sleep(1.0)
        raise TimeoutError(f"{name}'s server was not ready within {timeout:.0f} s")

    def server_running(self, name: str) -> bool:
        model = self.api("GET", f"users/{name}").json()
        return bool((model.get("servers") or {}).get(""))

    def login(self, name: str, password: str, code: str = "") -> requests.Session | None:
        """Sign in through the login form; the signed-in session, or None when the hub refused."""
        session = requests.Session()
        page = session.get(self.url + "hub/login", timeout=30)
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
        form = {"username": name, "password": password, "otp": code, "_xsrf": xsrf.group(1) if xsrf else ""}
        response = session.post(self.url + "hub/login", data=form, allow_redirects=False, timeout=60)
        if response.status_code == 302 and "jupyterhub-hub-login" in session.cookies.get_dict():
            return session
        return None

    def home(self, name: str) -> Path:
        return Path(pwd.getpwnam(name).pw_dir)

    def user_processes(self, name: str) -> Iterator[psutil.Process]:
        uid = pwd.getpwnam(name).pw_uid
        for proc in psutil.process_iter(["uids"]):
            if proc.info["uids"] and proc.info["uids"].real == uid:
                yield proc
