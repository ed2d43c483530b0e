"""The workshop hub with real learners: the load test (N = 3), restarts, the idle culler, sign-in.

Each test starts a throwaway hub on 127.0.0.1 (workshop/gradlab_hub/trialhub.py) with
Unix accounts named ``glhub<hex>-...``; everything it started is stopped by pid and every
account, cgroup and file it created is removed, and a test fails if anything outlived the
hub. Select them with ``pytest -m hub``; ``make hub-load N=10`` runs the load test at
another size.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
import requests
import websocket

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "workshop"))
pytest.importorskip(
    "jupyterhub",
    reason="the workshop is a JupyterHub: without jupyterhub (requirements/course.lock has it) there is nothing to test",
)

from gradlab_hub import learner_env, loadtest, settings  # noqa: E402
from gradlab_hub.kernel import RemoteKernel  # noqa: E402
from gradlab_hub.trialhub import TrialHub  # noqa: E402

pytestmark = [pytest.mark.hub, pytest.mark.slow]


def _missing() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root: the hub gives each learner a Unix account (CI runs make test as root)"
    if shutil.which("node") is None or not os.access(settings.PROXY_COMMAND, os.X_OK):
        return "configurable-http-proxy is not installed: needs Node.js and npm, then make hub-deps"
    if shutil.which("git") is None:
        return "git is not installed (nbgitpuller clones the course with it)"
    prefix = Path(os.environ.get("GRADLAB_HUB_PREFIX") or settings.DEFAULT_PREFIX)
    problem = learner_env.check(prefix, current_gradlab=False)
    if problem:
        return f"the learners' Python environment is not ready ({problem}): run make hub-deps"
    return None


@pytest.fixture(scope="module")
def ready() -> None:
    reason = _missing()
    if reason:
        pytest.skip(reason)


@pytest.mark.timeout(600)
def test_three_learners_run_notebook_01_at_once(ready: None) -> None:
    report = loadtest.run(3)
    print(loadtest.summary(report))
    assert report["problems"] == [], "\n".join(report["problems"])
    assert report["ok"]
    assert report["limits"], "the load test says whether per-learner limits are enforced, and how"
    per = report["per_learner"]
    assert len(per) == 3
    for name, learner in per.items():
        assert learner["urlpath"] == "lab/tree/gradlab/notebooks/01_the_original_loop.ipynb", name
        assert learner["cells"] > 10 and learner["notebook_s"] > 0, name
        # torch and the course were imported in the learner's own kernel
        assert learner["kernel"]["rss_mb"] > 150, name
        assert learner["kernel_uid_ok"], name
    # During the run, a learner's page and the hub were asked about once a second, all answered.
    assert report["probe_latency_s"]["count"] >= 6
    assert all(entry.split(":")[0] in ("127.0.0.1", "::1") for entry in report["listening"])
    assert any("jupyterhub-sing" in entry for entry in report["listening"]), "the learners' servers were seen"
    # Where the machine has iptables, every learner's kernel was refused the cloud metadata service.
    assert report["metadata_blocked"] or shutil.which("iptables") is None


@pytest.mark.timeout(600)
def test_a_hub_restart_keeps_servers_and_kernels_and_idle_kernels_are_culled(ready: None) -> None:
    with TrialHub(kernel_cull_timeout=60, kernel_cull_every=2) as hub:
        hub.start()
        (ada,) = hub.learner_names(1)
        hub.create_learners([ada])
        hub.start_server(ada)
        token = hub.token_for(ada)
        headers = {"Authorization": f"token {token}"}
        server = hub.url + f"user/{ada}/"
        requests.put(server + "api/contents/n.ipynb", headers=headers, json={"type": "notebook"}, timeout=60)
        kernel = RemoteKernel(server, token, "n.ipynb")
        assert kernel.execute("answer = 41 + 1").status == "ok"
        kernel.socket.close()
        pids = {proc.pid for proc in hub.user_processes(ada)}

        # The hub restarts (a new workshop code, a crash): ada's server and kernel go on.
        hub.stop(keep_servers=True)
        assert hub.leaks == []
        assert {proc.pid for proc in hub.user_processes(ada)} == pids, "the restart stopped ada's processes"
        hub.start()
        assert hub.server_running(ada)
        kernels = requests.get(server + "api/kernels", headers=headers, timeout=60).json()
        assert [k["id"] for k in kernels] == [kernel.kernel_id]
        again = RemoteKernel.__new__(RemoteKernel)  # the same kernel, a new websocket (a reloaded tab)
        again.server_url, again.headers, again.kernel_id = server, headers, kernel.kernel_id
        again.client_session = "after-restart"
        again.socket = websocket.create_connection(
            server.replace("http", "ws", 1) + f"api/kernels/{kernel.kernel_id}/channels?session_id=after-restart",
            header=[f"Authorization: token {token}"],
            timeout=60,
        )
        again.wait_ready(60)
        shown = again.execute("print(answer)")
        assert "".join(o.get("text", "") for o in shown.outputs).strip() == "42", shown.outputs
        again.socket.close()

        # Idle for 60 s, the kernel is culled (also with its tab reconnected); the server stays.
        deadline = time.monotonic() + 180
        while requests.get(server + "api/kernels", headers=headers, timeout=60).json() and time.monotonic() < deadline:
            time.sleep(2)
        assert requests.get(server + "api/kernels", headers=headers, timeout=60).json() == []
        assert hub.server_running(ada)
    assert hub.leaks == [], hub.leaks
    assert hub.accounts() == []


@pytest.mark.timeout(600)
def test_sign_in_restart_and_idle_culling(ready: None) -> None:
    with TrialHub(cull_timeout=20, cull_every=5) as hub:
        hub.start()
        code, admin_password = hub.secret("workshop_code"), hub.secret("admin_password")
        ada, eve = hub.learner_names(2)

        # The hub's own token checks are on: no anonymous access to the API or to a server.
        assert requests.get(hub.url + "hub/api/users", timeout=30).status_code == 403
        assert hub.api("GET", "users", token="not-a-token").status_code == 403

        # First sign-in needs the workshop code; afterwards the personal password alone.
        assert hub.login(ada, "ada's password") is None
        assert hub.login(ada, "ada's password", "wrong code") is None
        assert hub.login(ada, "ada's password", code) is not None
        assert hub.login(ada, "ada's password") is not None
        # Someone else with the workshop code cannot get into ada's account.
        assert hub.login(ada, "eve's password", code) is None
        # Learners cannot take the admin name; the admin password can.
        assert hub.login(hub.admin, "eve's password", code) is None
        admin = hub.login(hub.admin, admin_password)
        assert admin is not None
        assert admin.get(hub.url + "hub/api/users", timeout=30).status_code == 200
        assert hub.login(eve, "eve's password", code) is not None
        # Five wrong passwords for eve, through the real form and proxy: the sixth sign-in is refused,
        # even with her own password, before any scrypt runs; ada is not affected.
        for attempt in range(5):
            assert hub.login(eve, f"wrong guess {attempt}") is None
        assert hub.login(eve, "eve's password") is None
        assert re.search(r"Sign-in as '\S+-2' from 127\.0\.0\.1 refused: locked out", hub.log_tail(400))
        assert hub.login(ada, "ada's password") is not None

        home = hub.home(ada)
        assert home.owner() == ada and (home.stat().st_mode & 0o777) == 0o700

        # ada works: a file in her home, written through her server.
        hub.start_server(ada)
        token = hub.token_for(ada)
        headers = {"Authorization": f"token {token}"}
        folder = requests.put(
            hub.url + f"user/{ada}/api/contents/work", headers=headers, json={"type": "directory"}, timeout=60
        )
        assert folder.status_code in (200, 201), folder.text
        saved = requests.put(
            hub.url + f"user/{ada}/api/contents/work/notes.txt",
            headers=headers,
            json={"type": "file", "format": "text", "content": "my answers\n"},
            timeout=60,
        )
        assert saved.status_code in (200, 201), saved.text
        assert (home / "work" / "notes.txt").read_text() == "my answers\n"
        assert (home / "work" / "notes.txt").owner() == ada
        # Without a token, her server does not answer with her files.
        anonymous = requests.get(hub.url + f"user/{ada}/api/contents/work", timeout=30, allow_redirects=False)
        assert anonymous.status_code in (302, 403)

        # The idle culler stops her idle server (20 s idle, checked every 5 s); her processes end.
        deadline = time.monotonic() + 120
        while hub.server_running(ada) and time.monotonic() < deadline:
            time.sleep(2)
        assert not hub.server_running(ada), "the idle culler did not stop an idle server within 120 s"
        deadline = time.monotonic() + 30
        while list(hub.user_processes(ada)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not list(hub.user_processes(ada)), "ada's processes outlived her culled server"

        # The hub restarts (its process, as after a reboot): accounts, passwords, tokens and work remain.
        hub.stop()
        assert hub.leaks == []
        hub.start()
        assert hub.login(ada, "ada's password") is not None
        assert hub.login(ada, "eve's password", code) is None
        hub.start_server(ada)
        back = requests.get(hub.url + f"user/{ada}/api/contents/work/notes.txt", headers=headers, timeout=60)
        assert back.status_code == 200 and back.json()["content"] == "my answers\n"
        assert all(address in ("127.0.0.1", "::1") for address, *_ in hub.listening())
    assert hub.leaks == [], hub.leaks
    assert not hub.root.exists()
    assert hub.accounts() == []
