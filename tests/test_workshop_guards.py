"""The workshop hub's guards, without a running hub: sign-in throttling, the pids limit, the disk quota,
the metadata block (IPv4 and IPv6, in a network namespace of its own), make hub-check, the port-80
redirect, the Caddyfile, the workshop code."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

pytest.importorskip("jupyterhub", reason="the workshop hub's modules need JupyterHub (requirements/course.lock)")
from tornado import web

REPO = Path(__file__).resolve().parent.parent
WORKSHOP = REPO / "workshop"
sys.path.insert(0, str(WORKSHOP))

from gradlab_hub import accounts, code, config, firewall, learner_env, limits, quota, redirect, settings  # noqa: E402

pytestmark = [pytest.mark.course, pytest.mark.slow]

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SECRETS = {"GRADLAB_HUB_WORKSHOP_CODE": "amber-otter-42", "GRADLAB_HUB_ADMIN_PASSWORD": "a" * 40}


# -- sign-in throttling ------------------------------------------------------------------------------


class Scrypts:
    """Counts the scrypt runs of the password store (each costs 16 MiB and tens of milliseconds)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = hashlib.scrypt

        def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(accounts.hashlib, "scrypt", counted)


def browser(address: str, forwarded: str | None = None) -> SimpleNamespace:
    """What the authenticator sees of a sign-in from ``address`` through the hub's own proxy."""
    chain = f"{forwarded}, {address}" if forwarded else address
    return SimpleNamespace(request=SimpleNamespace(headers={"X-Forwarded-For": chain}, remote_ip="127.0.0.1"))


def sign_in(auth: accounts.WorkshopAuthenticator, name: str, password: str, code: str = "", handler=None):  # type: ignore[no-untyped-def]
    data = {"username": name, "password": password, "otp": code}
    return asyncio.run(auth.get_authenticated_user(handler, data))


@pytest.fixture
def auth(tmp_path: Path) -> accounts.WorkshopAuthenticator:
    made = accounts.WorkshopAuthenticator(
        workshop_code="amber-otter-42",
        admin_password="A" * 40,
        admin_users={"instructor"},
        password_file=str(tmp_path / "passwords.json"),
        max_failures_per_address=8,
    )
    now = [1000.0]
    made.throttle.clock = lambda: now[0]
    made.now = now  # type: ignore[attr-defined]
    return made


def test_the_nth_wrong_password_is_refused_without_running_scrypt(
    auth: accounts.WorkshopAuthenticator, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = browser("203.0.113.7")
    assert sign_in(auth, "ada", "ada's long password", "amber-otter-42", laptop) is not None
    scrypts = Scrypts(monkeypatch)
    for attempt in range(1, 6):
        assert sign_in(auth, "ada", f"guess number {attempt}", handler=browser(f"198.51.100.{attempt}")) is None
        assert scrypts.count == attempt, "each of the first 5 guesses is checked"
    # The 6th attempt, from yet another address and even with the right password: refused, no scrypt.
    with pytest.raises(web.HTTPError) as refused:
        sign_in(auth, "ada", "ada's long password", handler=browser("192.0.2.99"))
    assert refused.value.status_code == 429 and "try again in 5 minute" in refused.value.log_message
    assert scrypts.count == 5
    # Others are not affected.
    assert sign_in(auth, "bob", "bob's long password", "amber-otter-42", laptop) is not None
    # After the lockout the guesser gets 5 more tries, then a lockout twice as long.
    auth.now[0] += 301  # type: ignore[attr-defined]
    for attempt in range(5):
        assert sign_in(auth, "ada", f"guess {attempt}", handler=laptop) is None
    auth.now[0] += 301  # type: ignore[attr-defined]
    with pytest.raises(web.HTTPError, match="5 minute"):
        sign_in(auth, "ada", "ada's long password", handler=laptop)
    # Once it is over, ada signs in, and that clears her record.
    auth.now[0] += 300  # type: ignore[attr-defined]
    assert sign_in(auth, "ada", "ada's long password", handler=laptop) is not None
    assert ("user", "ada") not in auth.throttle.records


def test_one_address_is_locked_out_after_its_failures_whatever_the_names(
    auth: accounts.WorkshopAuthenticator, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ada", "bob"):
        assert sign_in(auth, name, f"{name}'s long password", "amber-otter-42", browser("203.0.113.7")) is not None
    scrypts = Scrypts(monkeypatch)
    attacker = browser("198.51.100.66", forwarded="10.9.8.7")  # a forged X-Forwarded-For entry changes nothing
    for number in range(8):  # max_failures_per_address=8 here (60 by default)
        assert sign_in(auth, ("ada", "bob")[number % 2], f"guess {number}", handler=attacker) is None
    assert scrypts.count == 8
    with pytest.raises(web.HTTPError, match="Too many failed sign-ins"):
        sign_in(auth, "carol", "a new long password", "amber-otter-42", attacker)
    with pytest.raises(web.HTTPError, match="Too many failed sign-ins"):
        sign_in(auth, "ada", "ada's long password", handler=browser("198.51.100.66", forwarded="10.0.0.1"))
    assert scrypts.count == 8, "no scrypt ran for a locked-out address"
    # Wrong workshop codes count too (they need no scrypt, but guessing the code is throttled).
    for number in range(8):
        assert sign_in(auth, f"new{number}", "a new long password", f"code-{number}", browser("192.0.2.5")) is None
    with pytest.raises(web.HTTPError, match="Too many"):
        sign_in(auth, "newest", "a new long password", "amber-otter-42", browser("192.0.2.5"))
    # ada and bob, from their own address, still sign in.
    assert sign_in(auth, "ada", "ada's long password", handler=browser("203.0.113.7")) is not None


def test_a_password_reset_lifts_the_lockout_and_the_admin_cannot_be_locked_out(
    auth: accounts.WorkshopAuthenticator,
) -> None:
    assert sign_in(auth, "ada", "ada's long password", "amber-otter-42") is not None
    for attempt in range(5):
        sign_in(auth, "ada", f"forgotten {attempt}")
    with pytest.raises(web.HTTPError, match="429|Too many"):
        sign_in(auth, "ada", "ada's long password")
    new = auth.store.reset("ada")  # make hub-password NAME=ada
    assert sign_in(auth, "ada", new) == {"name": "ada", "admin": False, "auth_state": None, "user_info": None}
    # Anyone may type the instructor's name: 5 wrong admin passwords do not lock the instructor out.
    for attempt in range(6):
        assert sign_in(auth, "instructor", f"guess {attempt}", handler=browser(f"198.51.100.{attempt}")) is None
    assert sign_in(auth, "instructor", "A" * 40, handler=browser("203.0.113.7"))["admin"] is True  # type: ignore[index]


def test_the_client_address_is_read_from_the_right_end_of_x_forwarded_for() -> None:
    def seen(chain: str | None, trusted: tuple[str, ...] = (), real_ip: str | None = None) -> str | None:
        headers = {"X-Forwarded-For": chain} if chain is not None else {}
        if real_ip:
            headers["X-Real-Ip"] = real_ip
        handler = SimpleNamespace(request=SimpleNamespace(headers=headers, remote_ip="127.0.0.1"))
        return accounts.client_address(handler, trusted)

    assert seen("203.0.113.7") == "203.0.113.7"  # the hub serves HTTPS itself: its proxy saw the browser
    assert seen("1.2.3.4, 203.0.113.7") == "203.0.113.7"  # the browser's own header is not believed
    assert seen("203.0.113.7, 127.0.0.1") == "203.0.113.7"  # Caddy on this machine set the first entry
    assert seen("203.0.113.7, 10.0.0.2", trusted=("10.0.0.2",)) == "203.0.113.7"  # a TLS proxy elsewhere
    assert seen("127.0.0.1") == "127.0.0.1"  # a process on this machine
    # A proxy listening on a dual-stack socket writes IPv4 addresses in their IPv6 form.
    assert seen("::ffff:203.0.113.7, ::ffff:127.0.0.1") == "203.0.113.7"
    assert seen("2001:db8::7, ::1") == "2001:db8::7"
    assert seen("203.0.113.7", real_ip="9.9.9.9") == "203.0.113.7"
    assert seen(None) == "127.0.0.1"
    assert accounts.client_address(None) is None


def test_learners_choose_passwords_of_at_least_12_characters(auth: accounts.WorkshopAuthenticator) -> None:
    with pytest.raises(web.HTTPError, match="at least 12 characters"):
        sign_in(auth, "ada", "elevenchars", "amber-otter-42")
    assert sign_in(auth, "ada", "twelve chars", "amber-otter-42") is not None
    c = config_for(Path(auth.password_file).parent)
    assert c.LocalWorkshopAuthenticator.max_failures_per_user == 5
    assert c.LocalWorkshopAuthenticator.max_failures_per_address == 60
    assert accounts.LocalWorkshopAuthenticator().min_password_length == 12


def config_for(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    from traitlets.config import Config

    chosen = settings.Settings.from_env({**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path / "state"), **env})
    c = Config()
    config.apply(c, chosen, settings.LearnerEnv(prefix=tmp_path / "prefix", python=Path("/x/python3.11")))
    return c


# -- the pids limit and the disk quota ------------------------------------------------------------------


@pytest.fixture
def cgroup():  # type: ignore[no-untyped-def]
    layout, reason = limits.detect(f"gradlab-test-{os.getpid()}")
    if layout is None:
        pytest.skip(f"per-learner limits cannot be enforced here: {reason}")
    yield layout
    layout.remove("learner")
    layout.remove_base()


def test_the_pids_limit_stops_a_fork_bomb_in_a_learners_cgroup(cgroup: limits.CgroupLimits) -> None:
    if cgroup.pids_base is None:
        pytest.skip("this machine has no cgroup pids controller (make hub-check says so)")
    cgroup.create("learner", mem_bytes=2**30, cpus=1.0, pids=40)
    assert cgroup.pids_limit("learner") == 40
    bomb = (
        "import threading, time\nstarted = 0\n"
        "try:\n    for _ in range(200):\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); started += 1\n"
        "except RuntimeError as error:\n    print(started, error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", bomb],
        preexec_fn=lambda: cgroup.join("learner"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    started, _, error = done.stdout.partition(" ")
    assert int(started) < 40 and "can't start new thread" in error, done.stdout + done.stderr
    unlimited = subprocess.run([sys.executable, "-c", bomb], capture_output=True, text=True, timeout=60)
    assert unlimited.stdout == "", "outside the cgroup the same 200 threads start"


def test_the_spawner_gives_each_learner_the_pids_limit_and_the_disk_quota(tmp_path: Path) -> None:
    c = config_for(tmp_path, GRADLAB_HUB_PIDS_LIMIT="600", GRADLAB_HUB_DISK_QUOTA="3G")
    assert c.WorkshopSpawner.pids_limit == 600 and c.WorkshopSpawner.disk_quota == 3 * 2**30
    assert c.WorkshopSpawner.home_base == "/home"
    with pytest.raises(settings.SettingsError, match="at least 64"):
        config_for(tmp_path, GRADLAB_HUB_PIDS_LIMIT="10")


def test_quota_support_says_why_not_and_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    table = "/dev/vda / ext4 rw,relatime 0 0\n/dev/vdb /srv/homes ext4 rw,usrquota 0 0\n"
    point, device, fstype, _ = quota.mount_of(Path("/srv/homes/ada"), table)
    assert (point, device, fstype) == (Path("/srv/homes"), "/dev/vdb", "ext4")
    monkeypatch.setattr(quota.shutil, "which", lambda name: None)
    assert "apt-get install quota" in quota.support(Path("/home"), table)[1]
    monkeypatch.setattr(quota.shutil, "which", lambda name: f"/usr/sbin/{name}")
    found, why = quota.support(Path("/home"), table)
    assert found is None and "/ (/dev/vda, ext4) is mounted without usrquota" in why

    def quotaon(state: str):  # type: ignore[no-untyped-def]
        return lambda *a, **k: subprocess.CompletedProcess(a[0], 0, f"user quota on /srv/homes (/dev/vdb) is {state}\n")

    monkeypatch.setattr(quota.subprocess, "run", quotaon("off"))
    assert "are off (quotaon -u /srv/homes)" in quota.support(Path("/srv/homes"), table)[1]
    monkeypatch.setattr(quota.subprocess, "run", quotaon("on"))
    assert quota.support(Path("/srv/homes"), table)[0] == quota.QuotaSupport(Path("/srv/homes"))


def test_set_quota_asks_setquota_for_the_learners_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(
        quota.subprocess, "run", lambda command, **kw: ran.append(command) or subprocess.CompletedProcess(command, 0)
    )
    quota.set_quota("ada", 2 * 2**30, quota.QuotaSupport(Path("/home")))
    assert ran == [["setquota", "-u", "ada", str(2**21 * 9 // 10), str(2**21), "0", "0", "/home"]]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_hub_check_says_what_this_machine_enforces() -> None:
    done = subprocess.run(["make", "--no-print-directory", "hub-check"], cwd=REPO, capture_output=True, text=True)
    lines = dict(re.findall(r"^(memory and CPU limits|process-count limit|disk quota|metadata block \S+|sign-in throttling)"
                            r"\s+(ok |NOT)", done.stdout, re.M))  # fmt: skip
    assert set(lines) == {
        "memory and CPU limits",
        "process-count limit",
        "disk quota",
        "metadata block 169.254.169.254",
        "metadata block fd00:ec2::254",
        "sign-in throttling",
    }, done.stdout + done.stderr
    assert (done.returncode != 0) == ("NOT" in lines.values()), done.stdout
    quota_here, _ = quota.support(Path("/home"))
    assert (lines["disk quota"] == "ok ") == (quota_here is not None)


# -- the metadata service, IPv4 and IPv6 ------------------------------------------------------------------

NETNS_PROBE = r"""
import json, os, socket, subprocess, sys
sys.path.insert(0, sys.argv[1])
from gradlab_hub import firewall
group = sys.argv[2]
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["ip", "addr", "add", "169.254.169.254/32", "dev", "lo"], check=True)
subprocess.run(["ip", "-6", "addr", "add", "fd00:ec2::254/128", "dev", "lo", "nodad"], check=True)
servers = []
for family, address in ((socket.AF_INET, "169.254.169.254"), (socket.AF_INET6, "fd00:ec2::254")):
    server = socket.socket(family); server.bind((address, 80)); server.listen(16); servers.append(server)

def probe(as_learner):
    code = ("import socket, json\nseen = {}\n"
            "for family, address in ((socket.AF_INET, '169.254.169.254'), (socket.AF_INET6, 'fd00:ec2::254')):\n"
            "    s = socket.socket(family); s.settimeout(3)\n"
            "    try:\n        s.connect((address, 80)); seen[address] = 'connected'\n"
            "    except ConnectionRefusedError:\n        seen[address] = 'refused'\n"
            "    except OSError as e:\n        seen[address] = type(e).__name__\n"
            "print(json.dumps(seen))\n")
    gid = __import__("grp").getgrnam(group).gr_gid
    def learner():
        os.setgroups([gid]); os.setgid(65534); os.setuid(65534)
    done = subprocess.run([sys.argv[3], "-c", code], preexec_fn=learner if as_learner else None,
                          capture_output=True, text=True, timeout=30)
    return json.loads(done.stdout)

report = {"before": probe(True)}
report["block"] = firewall.block(group)
report["learner"] = probe(True)
report["root"] = probe(False)
report["again"] = firewall.block(group)[1]
report["removed"] = firewall.unblock(group)
report["after"] = probe(True)
print(json.dumps(report))
"""


# The probe runs as nobody, who may not be able to run this environment's interpreter (pyenv under /root).
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(
    not ROOT
    or not all(shutil.which(c) for c in ("unshare", "ip", "iptables", "ip6tables"))
    or not os.access(SYSTEM_PYTHON, os.X_OK),
    reason="needs root, unshare, ip, iptables, ip6tables and /usr/bin/python3",
)
def test_a_learner_cannot_reach_the_metadata_service_over_ipv4_or_ipv6(tmp_path: Path) -> None:
    # In a network namespace of its own: the metadata addresses are on its loopback, served by a
    # listener, so "connected" shows a probe gets through and "refused" that the rule stopped it;
    # nothing leaves the machine and the host's own firewall is untouched.
    group = f"glfw{os.getpid()}"
    subprocess.run(["groupadd", group], check=True)
    script = tmp_path / "probe.py"
    script.write_text(NETNS_PROBE)
    try:
        done = subprocess.run(
            ["unshare", "--net", sys.executable, str(script), str(WORKSHOP), group, SYSTEM_PYTHON],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(["groupdel", group], capture_output=True)
    if done.returncode and "unshare failed" in done.stderr:
        pytest.skip(f"no network namespaces here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    both = ("169.254.169.254", "fd00:ec2::254")
    assert report["before"] == dict.fromkeys(both, "connected"), "without the rules the probe gets through"
    in_force, said = report["block"]
    assert in_force, said
    assert (
        "169.254.169.254 blocked (iptables rule added)" in said
        and "fd00:ec2::254 blocked (ip6tables rule added)" in said
    )
    assert report["learner"] == dict.fromkeys(both, "refused")
    assert report["root"] == dict.fromkeys(both, "connected"), "root and other accounts are unaffected"
    assert "rule in force" in report["again"] and "added" not in report["again"], "each rule is added once"
    assert report["removed"] and report["after"] == dict.fromkeys(both, "connected")


# -- HTTPS: the port-80 redirect, and Caddy ------------------------------------------------------------------


def test_port_80_redirects_to_the_hubs_https_address() -> None:
    server = redirect.serve(0, "https://hub.example.org/", host="127.0.0.1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        for path in ("/hub/login?next=%2Fhub%2Fhome", "/", "//evil.example/x"):
            answer = requests.get(f"http://127.0.0.1:{port}{path}", allow_redirects=False, timeout=10)
            assert answer.status_code == 301
            assert answer.headers["Location"] == "https://hub.example.org/" + path.lstrip("/")
        posted = requests.post(f"http://127.0.0.1:{port}/hub/login", data={"password": "x"}, allow_redirects=False)
        assert posted.status_code == 301 and posted.text == ""
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ValueError, match="https://"):
        redirect.serve(0, "http://hub.example.org")


def test_the_hub_runs_the_redirect_only_when_it_serves_https_itself(tmp_path: Path) -> None:
    public = {
        "GRADLAB_HUB_IP": "0.0.0.0",
        "GRADLAB_HUB_PORT": "443",
        "GRADLAB_HUB_PUBLIC_URL": "https://hub.example.org",
        "GRADLAB_HUB_SSL_CERT": "/c.pem",
        "GRADLAB_HUB_SSL_KEY": "/k.pem",
    }
    services = {s["name"]: s for s in config_for(tmp_path, **public).JupyterHub.services}
    command = services["http-redirect"]["command"]
    assert command[1:] == [
        "-m",
        "gradlab_hub.redirect",
        "--port",
        "80",
        "--host",
        "",
        "--to",
        "https://hub.example.org",
    ]
    assert services["http-redirect"]["environment"] == {"PYTHONPATH": str(WORKSHOP)}
    assert "http-redirect" not in {
        s["name"] for s in config_for(tmp_path, **public, GRADLAB_HUB_HTTP_REDIRECT_PORT="0").JupyterHub.services
    }
    behind_caddy = config_for(tmp_path, GRADLAB_HUB_PUBLIC_URL="https://hub.example.org").JupyterHub.services
    assert [s["name"] for s in behind_caddy] == ["idle-culler"], "Caddy redirects port 80 itself"


CADDYFILE = WORKSHOP / "Caddyfile"


def test_the_caddyfile_is_the_documented_three_line_form() -> None:
    text = CADDYFILE.read_text(encoding="utf-8")
    assert text.splitlines() == ["hub.example.org {", "\treverse_proxy 127.0.0.1:8000", "}"]
    readme = (WORKSHOP / "README.md").read_text(encoding="utf-8")
    assert "```caddyfile\n" + text + "```" in readme, "the README shows workshop/Caddyfile as it is"
    assert re.search(r"refuses the one-line form `hub.example.org \{ reverse_proxy", readme)


@pytest.mark.skipif(shutil.which("caddy") is None, reason="caddy is not installed (Debian 12: apt-get install caddy)")
def test_caddys_own_adapter_accepts_the_caddyfile_and_refuses_the_one_line_form(tmp_path: Path) -> None:
    caddy = str(shutil.which("caddy"))
    adapted = subprocess.run(
        [caddy, "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert adapted.returncode == 0, adapted.stderr
    server = json.loads(adapted.stdout)["apps"]["http"]["servers"]["srv0"]
    assert server["listen"] == [":443"]
    (route,) = server["routes"]
    assert route["match"] == [{"host": ["hub.example.org"]}]
    (proxy,) = route["handle"][0]["routes"][0]["handle"]
    assert proxy["handler"] == "reverse_proxy" and proxy["upstreams"] == [{"dial": "127.0.0.1:8000"}]
    # The one-line form the README used to give is what Caddy's parser refuses.
    one_line = tmp_path / "Caddyfile"
    one_line.write_text("hub.example.org { reverse_proxy 127.0.0.1:8000 }\n")
    refused = subprocess.run(
        [caddy, "adapt", "--config", str(one_line), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "Unexpected '}'" in refused.stderr


# -- the workshop code ---------------------------------------------------------------------------------------


def test_the_workshop_code_is_two_words_and_two_digits_from_committed_lists(tmp_path: Path) -> None:
    assert len(code.ADJECTIVES) == len(code.ANIMALS) == 256
    for words in (code.ADJECTIVES, code.ANIMALS):
        assert len(set(words)) == len(words) and all(re.fullmatch(r"[a-z]{2,11}", w) for w in words)
    assert not set(code.ADJECTIVES) & set(code.ANIMALS)
    assert code.bits() == 22.0
    made = {code.workshop_code() for _ in range(200)}
    assert len(made) > 190, "codes are drawn at random"
    for one in made:
        adjective, animal, number = one.split("-")
        assert adjective in code.ADJECTIVES and animal in code.ANIMALS and re.fullmatch("[2-9]{2}", number)
        assert len(one) >= settings.MIN_CODE_LENGTH
    from gradlab_hub import hub

    first = hub.prepare({"GRADLAB_HUB_STATE_DIR": str(tmp_path / "state")}).workshop_code
    assert re.fullmatch(r"[a-z]+-[a-z]+-[2-9]{2}", first)


def test_the_learners_gradlab_is_built_from_every_file_pyproject_names() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    named = {"pyproject.toml", project["readme"], *project["license-files"]}
    assert named <= set(learner_env.SOURCE_FILES), "a file missing from the copy makes setuptools warn at each build"


def test_the_metadata_rules_match_the_learners_group_in_both_families() -> None:
    for v6, address in ((False, "169.254.169.254/32"), (True, "fd00:ec2::254/128")):
        rule = firewall.rule("gradlab-learners", v6=v6)
        assert rule[:2] == ["-d", address] and rule[-2:] == ["-j", "REJECT"] and "--suppl-groups" in rule
