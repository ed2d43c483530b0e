"""The workshop recipe without a running hub: link generator, settings, accounts, limits, Zero to JupyterHub config.

The hub itself, with real learners, is tested in test_workshop_hub.py.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jsonschema
import pytest
import yaml
from loading import load_module

from gradlab.course import workshop

pytest.importorskip("jupyterhub", reason="the workshop hub's modules need JupyterHub (requirements/course.lock)")
from tornado import web
from traitlets.config import Config

REPO = Path(__file__).resolve().parent.parent
WORKSHOP = REPO / "workshop"
sys.path.insert(0, str(WORKSHOP))

from gradlab_hub import accounts, config, cputorch, firewall, learner_env, limits, settings  # noqa: E402

pytestmark = [pytest.mark.course, pytest.mark.slow]

Z2JH = WORKSHOP / "z2jh"
CHART = Z2JH / "chart-4.4.0"


# -- the nbgitpuller link ------------------------------------------------------------------


def test_link_has_the_form_nbgitpullers_generator_makes() -> None:
    link = workshop.pull_link(
        "https://hub.example.org/",
        "https://github.com/gradlab/gradlab.git",
        branch="main",
        open_path="notebooks/00_start_here.ipynb",
    )
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.org", "/hub/user-redirect/git-pull")
    query = parse_qs(parts.query, strict_parsing=True)
    assert query == {
        "repo": ["https://github.com/gradlab/gradlab.git"],
        "urlpath": ["lab/tree/gradlab/notebooks/00_start_here.ipynb"],
        "branch": ["main"],
        "targetpath": ["gradlab"],
    }
    assert list(query) == ["repo", "urlpath", "branch", "targetpath"]


def test_link_keeps_a_hub_path_prefix_and_a_chosen_folder() -> None:
    link = workshop.pull_link(
        "https://example.org/jupyter", "git://127.0.0.1:9418/gradlab.git", targetpath="course", open_path="/x/y.ipynb"
    )
    parts = urlsplit(link)
    assert parts.path == "/jupyter/hub/user-redirect/git-pull"
    query = parse_qs(parts.query)
    assert query["targetpath"] == ["course"] and query["urlpath"] == ["lab/tree/course/x/y.ipynb"]


@pytest.mark.parametrize(
    ("hub", "repo", "extra", "message"),
    [
        ("hub.example.org", "https://github.com/gradlab/gradlab", {}, "not an http(s) URL"),
        ("https://hub.example.org/?x=1", "https://github.com/gradlab/gradlab", {}, "query or fragment"),
        ("https://hub.example.org", " ", {}, "--repo is empty"),
        ("https://hub.example.org", "https://github.com/gradlab/gradlab", {"branch": ""}, "--branch is empty"),
        (
            "https://hub.example.org",
            "https://github.com/gradlab/gradlab",
            {"open_path": "../etc/passwd"},
            "inside the repository",
        ),
        ("https://hub.example.org", "https://github.com/gradlab/gradlab", {"targetpath": "a/b"}, "plain folder name"),
        ("https://hub.example.org", "https://example.org/.git", {}, "--targetpath"),
    ],
)
def test_link_refuses_arguments_that_cannot_work(hub: str, repo: str, extra: dict[str, str], message: str) -> None:
    with pytest.raises(workshop.WorkshopLinkError, match=re.escape(message)):
        workshop.pull_link(hub, repo, **extra)


def test_workshop_link_command(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--hub", "http://127.0.0.1:8000", "--repo", "https://github.com/gradlab/gradlab"]
    assert workshop.main([*argv, "--open", "notebooks/01_the_original_loop.ipynb"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == workshop.pull_link(
        "http://127.0.0.1:8000", "https://github.com/gradlab/gradlab", open_path="notebooks/01_the_original_loop.ipynb"
    )
    assert workshop.main(["--hub", "ftp://x", "--repo", "https://github.com/gradlab/gradlab"]) == 2
    assert "workshop-link:" in capsys.readouterr().err


@pytest.mark.slow
def test_workshop_link_through_the_course_command() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gradlab.course",
            "workshop-link",
            "--hub",
            "https://hub.example.org",
            "--repo",
            "https://github.com/gradlab/gradlab",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == workshop.pull_link("https://hub.example.org", "https://github.com/gradlab/gradlab")


# -- settings --------------------------------------------------------------------------------

SECRETS = {"GRADLAB_HUB_WORKSHOP_CODE": "room-1234", "GRADLAB_HUB_ADMIN_PASSWORD": "a" * 40}


def test_defaults_listen_on_loopback_only(tmp_path: Path) -> None:
    chosen = settings.Settings.from_env({**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path)})
    assert chosen.ip == "127.0.0.1" and chosen.loopback and not chosen.https
    assert chosen.url == "http://127.0.0.1:8000/"
    assert chosen.mem_limit == 2 * 2**30 and chosen.cpu_limit == 1.0
    assert chosen.admin == "instructor" and chosen.learner_group == "gradlab-learners"


def test_a_public_address_needs_https_or_an_explicit_statement(tmp_path: Path) -> None:
    public = {
        **SECRETS,
        "GRADLAB_HUB_STATE_DIR": str(tmp_path),
        "GRADLAB_HUB_IP": "0.0.0.0",
        "GRADLAB_HUB_PUBLIC_URL": "https://hub.example.org",
    }
    with pytest.raises(settings.SettingsError, match="GRADLAB_HUB_SSL_CERT"):
        settings.Settings.from_env(public)
    assert settings.Settings.from_env({**public, "GRADLAB_HUB_PUBLIC_HTTP": "1"}).url == "http://0.0.0.0:8000/"
    cert, key = tmp_path / "hub.crt", tmp_path / "hub.key"
    https = settings.Settings.from_env({**public, "GRADLAB_HUB_SSL_CERT": str(cert), "GRADLAB_HUB_SSL_KEY": str(key)})
    assert https.url == "https://0.0.0.0:8000/" and https.https
    with pytest.raises(settings.SettingsError, match="both"):
        settings.Settings.from_env({**public, "GRADLAB_HUB_SSL_CERT": str(cert)})


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GRADLAB_HUB_WORKSHOP_CODE", "short", "at least 8"),
        ("GRADLAB_HUB_ADMIN_PASSWORD", "x" * 31, "at least 32"),
        ("GRADLAB_HUB_ADMIN", "Root!", "must match"),
        ("GRADLAB_HUB_PORT", "8081", "must differ"),
        ("GRADLAB_HUB_MEM_LIMIT", "lots", "not a size"),
        ("GRADLAB_HUB_CPU_LIMIT", "one", "not a number"),
        ("GRADLAB_HUB_CULL_TIMEOUT", "0", "positive"),
    ],
)
def test_settings_that_cannot_work_are_refused(tmp_path: Path, variable: str, value: str, message: str) -> None:
    with pytest.raises(settings.SettingsError, match=message):
        settings.Settings.from_env({**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path), variable: value})


def test_a_public_address_needs_the_public_url_learners_open(tmp_path: Path) -> None:
    base = {
        **SECRETS,
        "GRADLAB_HUB_STATE_DIR": str(tmp_path),
        "GRADLAB_HUB_IP": "0.0.0.0",
        "GRADLAB_HUB_PUBLIC_HTTP": "1",
    }
    with pytest.raises(settings.SettingsError, match="GRADLAB_HUB_PUBLIC_URL"):
        settings.Settings.from_env(base)
    for bad, message in (
        ("https://0.0.0.0:443/", "names no machine"),
        ("http://hub.example.org", "clear text"),
        ("hub.example.org", "not a URL"),
        ("https://hub.example.org/?x=1", "query"),
    ):
        with pytest.raises(settings.SettingsError, match=message):
            settings.Settings.from_env({**base, "GRADLAB_HUB_PUBLIC_URL": bad})
    chosen = settings.Settings.from_env({**base, "GRADLAB_HUB_PUBLIC_URL": "https://hub.example.org/jupyter"})
    assert chosen.learners_url == "https://hub.example.org/jupyter/"
    # On loopback (a reverse proxy in front, or a rehearsal) the URL is optional.
    local = settings.Settings.from_env({**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path)})
    assert local.public_url is None and local.learners_url == "http://127.0.0.1:8000/"


def test_make_hub_prints_the_link_learners_open(tmp_path: Path) -> None:
    from gradlab_hub import hub

    behind_proxy = settings.Settings.from_env(
        {**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path), "GRADLAB_HUB_PUBLIC_URL": "https://hub.example.org"}
    )
    printed = hub.announcement(behind_proxy, "metadata: blocked")
    (link,) = re.findall(r"learners' link:\s+(\S+)", printed)
    assert link == workshop.pull_link("https://hub.example.org", hub.COURSE_REPO)
    assert "127.0.0.1" not in link and "0.0.0.0" not in printed
    assert "GRADLAB_HUB_PUBLIC_URL" not in printed, "no hint when the public URL is set"
    local = settings.Settings.from_env({**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path)})
    assert "set GRADLAB_HUB_PUBLIC_URL" in hub.announcement(local, "metadata: blocked")
    # The other-notebook example names a notebook that exists.
    for path in re.findall(r"--open (\S+)", printed):
        assert (REPO / path).is_file(), path


def test_secrets_come_from_the_state_directory(tmp_path: Path) -> None:
    with pytest.raises(settings.SettingsError, match="make hub"):
        settings.Settings.from_env({"GRADLAB_HUB_STATE_DIR": str(tmp_path)})
    (tmp_path / settings.WORKSHOP_CODE_FILE).write_text("from-the-file\n")
    (tmp_path / settings.ADMIN_PASSWORD_FILE).write_text("b" * 36 + "\n")
    chosen = settings.Settings.from_env({"GRADLAB_HUB_STATE_DIR": str(tmp_path)})
    assert chosen.workshop_code == "from-the-file" and chosen.admin_password == "b" * 36


def test_hub_prepare_creates_private_state_and_secrets(tmp_path: Path) -> None:
    from gradlab_hub import hub

    state = tmp_path / "state"
    chosen = hub.prepare({"GRADLAB_HUB_STATE_DIR": str(state)})
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for name in (settings.WORKSHOP_CODE_FILE, settings.ADMIN_PASSWORD_FILE):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    assert len(chosen.workshop_code) >= 8 and len(chosen.admin_password) >= 32
    assert hub.prepare({"GRADLAB_HUB_STATE_DIR": str(state)}).workshop_code == chosen.workshop_code


# -- what JupyterHub is told ---------------------------------------------------------------------


def applied(tmp_path: Path, ld_library_path: str | None = None, **env: str) -> Config:
    chosen = settings.Settings.from_env({**SECRETS, "GRADLAB_HUB_STATE_DIR": str(tmp_path), **env})
    learner_env = settings.LearnerEnv(
        prefix=tmp_path / "prefix", python=Path("/x/python3.11"), ld_library_path=ld_library_path
    )
    c = Config()
    config.apply(c, chosen, learner_env)
    return c


def test_hub_config_binds_loopback_and_keeps_everything_in_the_state_dir(tmp_path: Path) -> None:
    c = applied(tmp_path)
    assert c.JupyterHub.bind_url == "http://127.0.0.1:8000/"
    assert c.JupyterHub.hub_bind_url == "http://127.0.0.1:8081"
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:8001"
    assert c.ConfigurableHTTPProxy.command == [str(WORKSHOP / "node_modules" / ".bin" / "configurable-http-proxy")]
    for path in (
        c.JupyterHub.db_url.removeprefix("sqlite:///"),
        c.JupyterHub.cookie_secret_file,
        c.ConfigurableHTTPProxy.pid_file,
    ):
        assert Path(path).parent == tmp_path
    assert "ssl_cert" not in c.JupyterHub
    https = applied(tmp_path, GRADLAB_HUB_SSL_CERT="/c.pem", GRADLAB_HUB_SSL_KEY="/k.pem")
    assert https.JupyterHub.ssl_cert == "/c.pem" and https.JupyterHub.bind_url.startswith("https://")


def test_hub_config_accounts_spawner_and_limits(tmp_path: Path) -> None:
    c = applied(tmp_path, GRADLAB_HUB_MEM_LIMIT="1536M", GRADLAB_HUB_CPU_LIMIT="0.5")
    assert c.JupyterHub.authenticator_class is accounts.LocalWorkshopAuthenticator
    assert c.LocalWorkshopAuthenticator.admin_users == {"instructor"}
    assert c.LocalWorkshopAuthenticator.workshop_code == "room-1234"
    assert c.WorkshopSpawner.cmd == [str(tmp_path / "prefix" / "env" / "bin" / "jupyterhub-singleuser")]
    assert c.WorkshopSpawner.mem_limit == 1536 * 2**20 and c.WorkshopSpawner.cpu_limit == 0.5
    environment = c.WorkshopSpawner.environment
    assert environment["PATH"].startswith(str(tmp_path / "prefix" / "env" / "bin") + ":")
    assert "LD_LIBRARY_PATH" not in environment
    assert c.WorkshopSpawner.env_keep == ["LANG", "LC_ALL"], "nothing of root's environment reaches learners"
    assert applied(tmp_path, "/p/lib").WorkshopSpawner.environment["LD_LIBRARY_PATH"] == "/p/lib"


def test_idle_kernels_are_culled_by_each_learners_server(tmp_path: Path) -> None:
    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager

    c = applied(tmp_path, GRADLAB_HUB_KERNEL_CULL_TIMEOUT="900", GRADLAB_HUB_KERNEL_CULL_EVERY="30")
    args = c.WorkshopSpawner.args
    assert "--MappingKernelManager.cull_idle_timeout=900" in args
    assert "--MappingKernelManager.cull_interval=30" in args
    assert "--MappingKernelManager.cull_connected=True" in args, "an open tab does not keep a kernel forever"
    # Every option is a real trait of the installed jupyter_server, with a value it accepts.
    traits = MappingKernelManager.class_traits(config=True)
    for arg in args:
        section, _, assignment = arg.removeprefix("--").partition(".")
        name, _, value = assignment.partition("=")
        assert section == "MappingKernelManager" and name in traits, arg
        configured = MappingKernelManager(**{name: traits[name].from_string(value)})
        assert str(getattr(configured, name)) == value, arg
    assert applied(tmp_path).WorkshopSpawner.args[0] == "--MappingKernelManager.cull_idle_timeout=1200"


def test_caps_on_accounts_and_running_servers_and_restarts_keep_servers(tmp_path: Path) -> None:
    from jupyterhub.app import JupyterHub

    c = applied(tmp_path, GRADLAB_HUB_MAX_ACCOUNTS="35", GRADLAB_HUB_MAX_SERVERS="32")
    assert c.JupyterHub.active_server_limit == 32 and c.LocalWorkshopAuthenticator.max_accounts == 35
    assert c.JupyterHub.cleanup_servers is False, "a hub restart must not stop learners' servers"
    for trait in ("active_server_limit", "cleanup_servers", "cleanup_proxy"):
        assert trait in JupyterHub.class_trait_names(config=True)
    with pytest.raises(settings.SettingsError, match="at least 1"):
        applied(tmp_path, GRADLAB_HUB_MAX_SERVERS="0")


def test_idle_culler_and_the_optional_setup_service(tmp_path: Path) -> None:
    c = applied(tmp_path, GRADLAB_HUB_CULL_TIMEOUT="900", GRADLAB_HUB_CULL_EVERY="60")
    (culler,) = c.JupyterHub.services
    assert culler["command"][1:] == ["-m", "jupyterhub_idle_culler", "--timeout=900", "--cull-every=60"]
    (role,) = c.JupyterHub.load_roles
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]
    assert not any(scope.startswith(("admin", "delete:users")) for scope in role["scopes"]), (
        "the culler never deletes users"
    )
    with_service = applied(tmp_path, GRADLAB_HUB_SERVICE_TOKEN="t" * 32)
    assert [s["name"] for s in with_service.JupyterHub.services] == ["idle-culler", "workshop-admin"]
    assert with_service.JupyterHub.load_roles[1]["scopes"] == config.SERVICE_SCOPES


# -- accounts ------------------------------------------------------------------------------------


def authenticator(tmp_path: Path) -> accounts.WorkshopAuthenticator:
    return accounts.WorkshopAuthenticator(
        workshop_code="room-1234",
        admin_password="A" * 40,
        admin_users={"instructor"},
        password_file=str(tmp_path / "passwords.json"),
    )


def login(auth: accounts.WorkshopAuthenticator, name: str, password: str, code: str = "") -> dict | None:  # type: ignore[type-arg]
    return asyncio.run(auth.get_authenticated_user(None, {"username": name, "password": password, "otp": code}))


def test_the_workshop_code_creates_an_account_and_only_its_password_keeps_it(tmp_path: Path) -> None:
    auth = authenticator(tmp_path)
    assert login(auth, "ada", "my own password") is None, "a new account needs the workshop code"
    assert login(auth, "ada", "my own password", "wrong-code") is None
    with pytest.raises(web.HTTPError, match="at least 12"):
        login(auth, "ada", "short pass", "room-1234")
    assert login(auth, "ada", "my own password", "room-1234") == {
        "name": "ada",
        "admin": False,
        "auth_state": None,
        "user_info": None,
    }
    assert login(auth, "ada", "my own password")["name"] == "ada"  # type: ignore[index]
    # Another person with the workshop code cannot take over ada's account.
    assert login(auth, "ada", "another password", "room-1234") is None
    assert login(auth, "ada", "room-1234", "room-1234") is None
    stored = (tmp_path / "passwords.json").read_text()
    assert "my own password" not in stored and stat.S_IMODE((tmp_path / "passwords.json").stat().st_mode) == 0o600


def test_the_workshop_code_creates_no_more_accounts_than_the_cap(tmp_path: Path) -> None:
    auth = authenticator(tmp_path)
    auth.max_accounts = 2
    assert login(auth, "ada", "a good password", "room-1234") is not None
    assert login(auth, "bob", "a good password", "room-1234") is not None
    with pytest.raises(web.HTTPError, match="full"):
        login(auth, "eve", "a good password", "room-1234")
    # Those who have an account still sign in.
    assert login(auth, "ada", "a good password") is not None


def test_the_instructor_resets_a_forgotten_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    auth = authenticator(tmp_path)
    assert login(auth, "ada", "forgotten password", "room-1234") is not None
    file = ["--password-file", str(tmp_path / "passwords.json")]
    assert accounts.main([*file, "reset", "ada"]) == 0
    (new,) = re.findall(r"new password for ada: (\S+)", capsys.readouterr().out)
    assert len(new) == 12 and not set(new) & set("0O1lI")
    assert login(auth, "ada", new) is not None, "the new password signs ada in, without the workshop code"
    assert login(auth, "ada", "forgotten password") is None
    assert accounts.main([*file, "reset", "adaa"]) == 2, "a typo creates no account"
    assert "no account 'adaa'" in capsys.readouterr().err and "adaa" not in accounts.PasswordStore(
        tmp_path / "passwords.json"
    )
    assert accounts.main([*file, "list"]) == 0 and capsys.readouterr().out.split() == ["ada"]
    assert accounts.main(["--password-file", str(tmp_path / "none.json"), "list"]) == 2


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_hub_password_runs_the_reset() -> None:
    done = subprocess.run(["make", "-n", "hub-password", "NAME=ada"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0 and "-m gradlab_hub.accounts reset ada" in done.stdout


def test_admin_names_need_the_admin_password(tmp_path: Path) -> None:
    auth = authenticator(tmp_path)
    assert login(auth, "instructor", "learner password", "room-1234") is None, "learners cannot claim the admin name"
    assert login(auth, "instructor", "A" * 39 + "B") is None
    assert login(auth, "instructor", "A" * 40)["admin"] is True  # type: ignore[index]


def test_names_that_are_not_plain_unix_names_are_refused(tmp_path: Path) -> None:
    auth = authenticator(tmp_path)
    for name in ("-rf", "a", "x" * 33, "1abc", "ab/cd", "ab cd"):
        assert login(auth, name, "a good password", "room-1234") is None, name
    # Upper case is folded, as JupyterHub normalizes names.
    assert login(auth, "Grace", "a good password", "room-1234")["name"] == "grace"  # type: ignore[index]


def test_existing_unix_accounts_cannot_be_claimed(tmp_path: Path) -> None:
    local = accounts.LocalWorkshopAuthenticator(
        workshop_code="room-1234",
        admin_password="A" * 40,
        password_file=str(tmp_path / "p.json"),
        learner_group="gradlab-test-nogroup",
    )
    assert not local.name_is_available("root")
    assert login(local, "root", "a good password", "root-1234") is None
    with pytest.raises(web.HTTPError, match="taken"):
        login(local, "root", "a good password", "room-1234")
    assert local.name_is_available("nobody-such-learner-x")


def test_accounts_module_runs_alone_as_mounted_on_zero_to_jupyterhub(monkeypatch: pytest.MonkeyPatch) -> None:
    # The chart mounts workshop/gradlab_hub/accounts.py as a single module file.
    module = load_module(WORKSHOP / "gradlab_hub" / "accounts.py", "gradlab_workshop_accounts", monkeypatch)
    assert issubclass(module.WorkshopAuthenticator, __import__("jupyterhub.auth").auth.Authenticator)


# -- limits ----------------------------------------------------------------------------------------


@pytest.fixture
def cgroup():  # type: ignore[no-untyped-def]
    layout, reason = limits.detect(f"gradlab-test-{os.getpid()}")
    if layout is None:
        pytest.skip(f"per-learner limits cannot be enforced here: {reason}")
    yield layout
    layout.remove("learner")
    layout.remove_base()


def test_memory_limit_stops_a_kernel_that_takes_too_much(cgroup: limits.CgroupLimits) -> None:
    cgroup.create("learner", mem_bytes=64 * 2**20, cpus=1.0)
    assert cgroup.memory_limit("learner") == 64 * 2**20
    hog = "b = bytearray(256 * 2**20); b[::4096] = b'x' * len(b[::4096]); print('survived')"
    done = subprocess.run(
        [sys.executable, "-c", hog], preexec_fn=lambda: cgroup.join("learner"), capture_output=True, timeout=60
    )
    assert done.returncode == -signal.SIGKILL and b"survived" not in done.stdout
    fine = subprocess.run(
        [sys.executable, "-c", "print('ok')"],
        preexec_fn=lambda: cgroup.join("learner"),
        capture_output=True,
        timeout=60,
    )
    assert fine.returncode == 0


def test_cpu_limit_throttles(cgroup: limits.CgroupLimits) -> None:
    cgroup.create("learner", mem_bytes=2**30, cpus=0.2)
    spin = "import os, time\nt = time.monotonic()\nwhile time.monotonic() - t < 2: pass\nprint(sum(os.times()[:2]))"
    done = subprocess.run(
        [sys.executable, "-c", spin],
        preexec_fn=lambda: cgroup.join("learner"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert float(done.stdout) < 1.0, f"2 s of spinning at 0.2 CPU used {done.stdout.strip()} CPU seconds"


def test_removing_a_cgroup_stops_what_is_left_in_it(cgroup: limits.CgroupLimits) -> None:
    cgroup.create("learner", mem_bytes=2**30, cpus=1.0)
    sleeper = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: cgroup.join("learner"))
    try:
        assert cgroup.pids("learner") == {sleeper.pid}
        assert cgroup.remove("learner") == [sleeper.pid]
        assert sleeper.wait(10) == -signal.SIGKILL
        assert not any(path.exists() for path in cgroup.directories("learner"))
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


# -- Zero to JupyterHub ----------------------------------------------------------------------------


def merged(base: dict, override: dict) -> dict:  # type: ignore[type-arg]
    """Helm's merge of user values over a chart's values: maps merge, null deletes, the rest replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def chart_values(with_set_file: bool = True) -> dict:  # type: ignore[type-arg]
    values = yaml.safe_load((Z2JH / "config.yaml").read_text(encoding="utf-8"))
    if with_set_file:  # what --set-file hub.extraFiles.workshop_accounts.stringData=... adds
        values = merged(
            values,
            {
                "hub": {
                    "extraFiles": {
                        "workshop_accounts": {"stringData": (WORKSHOP / "gradlab_hub" / "accounts.py").read_text()}
                    }
                }
            },
        )
    return merged(yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8")), values)


def chart_errors(values: dict) -> list[str]:  # type: ignore[type-arg]
    schema = yaml.safe_load((CHART / "values.schema.yaml").read_text(encoding="utf-8"))
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(values)
    ]


def test_z2jh_config_uses_only_keys_the_chart_documents() -> None:
    assert chart_errors(chart_values()) == []
    # The check bites: a misspelt key, a wrong type, and the missing --set-file are all caught.
    assert any(
        "memmory" in e for e in chart_errors(merged(chart_values(), {"singleuser": {"memmory": {"limit": "1G"}}}))
    )
    assert chart_errors(merged(chart_values(), {"cull": {"timeout": "an hour"}}))
    assert any("extraFiles" in e for e in chart_errors(chart_values(with_set_file=False)))


def test_z2jh_hub_config_names_real_traits() -> None:
    from jupyterhub.app import JupyterHub

    hub_config = yaml.safe_load((Z2JH / "config.yaml").read_text(encoding="utf-8"))["hub"]["config"]
    known = {"JupyterHub": JupyterHub, "WorkshopAuthenticator": accounts.WorkshopAuthenticator}
    for section, traits in hub_config.items():
        configurable = set(known[section].class_trait_names(config=True))
        assert set(traits) <= configurable, f"{section}: {set(traits) - configurable}"
    assert hub_config["JupyterHub"]["authenticator_class"] == "gradlab_workshop_accounts.WorkshopAuthenticator"
    mount = yaml.safe_load((Z2JH / "config.yaml").read_text())["hub"]["extraFiles"]["workshop_accounts"]["mountPath"]
    assert mount == "/usr/local/etc/jupyterhub/gradlab_workshop_accounts.py"


def test_z2jh_resources_and_image() -> None:
    singleuser = yaml.safe_load((Z2JH / "config.yaml").read_text(encoding="utf-8"))["singleuser"]
    guarantee, limit = (settings.parse_size(singleuser["memory"][k]) for k in ("guarantee", "limit"))
    assert guarantee <= limit == settings.Settings.__dataclass_fields__["mem_limit"].default, (
        "same limit as on one machine"
    )
    assert 0 < singleuser["cpu"]["guarantee"] <= singleuser["cpu"]["limit"]
    assert singleuser["cmd"][0] == "jupyterhub-singleuser" and singleuser["defaultUrl"] == "/lab"
    # The same kernel culling as on one machine.
    one_machine = config.kernel_culling(
        settings.Settings(state_dir=Path("/s"), workshop_code="c" * 8, admin_password="p" * 32)
    )
    assert singleuser["cmd"][1:] == one_machine
    assert singleuser["cloudMetadata"]["blockWithIptables"] is True
    binder = (REPO / "binder" / "requirements.txt").read_text()
    for needed in ("jupyterhub==", "nbgitpuller=="):
        assert needed in binder, f"the image built from binder/ needs {needed.rstrip('=')}"


def chart_jupyterhub() -> str:
    return str(yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))["appVersion"])


def image_command() -> str:
    readme = (WORKSHOP / "README.md").read_text(encoding="utf-8")
    (command,) = re.findall(r"^(\.venv/bin/jupyter-repo2docker .*)$", readme, flags=re.MULTILINE)
    return command


def test_the_learners_image_has_the_charts_jupyterhub() -> None:
    # JupyterHub warns that a different major version between hub and server "could cause
    # failure to authenticate": the image must carry the chart's JupyterHub, not the lock's.
    hub_version = chart_jupyterhub()
    assert hub_version == "5.5.0", "chart 4.4.0 runs JupyterHub 5.5.0; update README and config.yaml together"
    command = image_command()
    assert f'--appendix "RUN python -m pip install --no-cache-dir jupyterhub=={hub_version}"' in command
    lock_pin = next(
        line
        for line in (REPO / "binder" / "requirements.txt").read_text().splitlines()
        if line.startswith("jupyterhub==")
    )
    assert lock_pin.split("==")[1].split(".")[0] != hub_version.split(".")[0], (
        "when the lock's JupyterHub matches the chart's major version, drop the --appendix"
    )
    assert "--version 4.4.0" in (WORKSHOP / "README.md").read_text() and "4.4.0" in CHART.name


@pytest.mark.slow
def test_image_build_command_is_accepted_by_repo2docker() -> None:
    command = image_command()
    flags = ["--user-id", "1000", "--user-name", "jovyan", "--target-repo-dir", "/srv/gradlab"]
    assert " ".join(flags) in command, "the image keeps the course outside the learner's home volume"
    (appendix,) = re.findall(r'--appendix "([^"]+)"', command)
    # Offline, the same flags with --no-build: repo2docker writes the Dockerfile instead of building.
    repo2docker = Path(sys.executable).parent / "jupyter-repo2docker"
    done = subprocess.run(
        [str(repo2docker), "--no-build", "--debug", *flags, "--appendix", appendix, "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "binder/requirements.txt" in done.stdout and "./binder/postBuild" in done.stdout
    # The appendix comes after the course is installed, so its JupyterHub is the one the image keeps.
    assert done.stdout.index(appendix) > done.stdout.index("./binder/postBuild")


# -- make targets ------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_targets_exist() -> None:
    done = subprocess.run(
        ["make", "-n", "hub-load", "N=2", "HUB_PREFIX=/opt/x"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "GRADLAB_HUB_PREFIX=/opt/x" in done.stdout and "-m gradlab_hub.loadtest --learners 2" in done.stdout
    assert "-m gradlab_hub.learner_env" in done.stdout
    hub = subprocess.run(["make", "-n", "hub"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert hub.returncode == 0 and "-m gradlab_hub.hub" in hub.stdout
    session = subprocess.run(
        ["make", "-n", "hub-session", "N=4", "SESSION_ARGS=--think 60"], cwd=REPO, capture_output=True, text=True
    )
    assert session.returncode == 0 and "-m gradlab_hub.session --learners 4 --think 60" in session.stdout


def test_the_hub_modules_examples_run() -> None:
    import doctest

    from gradlab_hub import outputs

    for module in (settings, accounts, outputs):
        failed, attempted = doctest.testmod(module, verbose=False)
        assert attempted > 0 and failed == 0, module.__name__


# -- the one-machine install ---------------------------------------------------------------------

# Debian 12's nodejs package (apt-cache policy nodejs: 18.20.4+dfsg-1~deb12u3, security updates
# keep the upstream version). The proxy and everything it needs must run on it.
DEBIAN_12_NODE = (18, 20, 4)


def _satisfies(version: tuple[int, ...], engines: str) -> bool:
    """npm's engines range for the forms package-lock.json holds: *, >=X, ^X, and alternatives with ||."""
    for alternative in engines.split("||"):
        ok = True
        for part in re.findall(r"(>=|\^|\*|)\s*(\d+(?:\.\d+)*)?", alternative.strip()):
            operator, number = part
            if not number:
                continue
            wanted = tuple(int(x) for x in number.split("."))
            if operator == "^":
                ok &= version[0] == wanted[0] and version >= wanted
            else:
                ok &= version >= wanted
        if ok:
            return True
    return False


def test_the_pinned_proxy_runs_on_debian_12s_nodejs() -> None:
    assert _satisfies((18, 20, 4), ">= 18") and not _satisfies((18, 20, 4), ">= 20")
    assert _satisfies((18, 20, 4), "^16 || ^18 || >=20") and not _satisfies((17, 0, 0), "^16 || ^18 || >=20")
    lock = json.loads((WORKSHOP / "package-lock.json").read_text(encoding="utf-8"))
    packages = {path: entry for path, entry in lock["packages"].items() if path}
    assert "node_modules/configurable-http-proxy" in packages
    refusing = {
        path: entry["engines"]["node"]
        for path, entry in packages.items()
        if "node" in entry.get("engines", {}) and not _satisfies(DEBIAN_12_NODE, entry["engines"]["node"])
    }
    assert refusing == {}, f"apt-get install nodejs on Debian 12 gives 18.20.4, which these refuse: {refusing}"


def test_the_lock_pins_torch_and_hub_deps_installs_its_cpu_build_first() -> None:
    assert cputorch.torch_pin() == next(
        line for line in (REPO / "requirements" / "course.lock").read_text().splitlines() if line.startswith("torch==")
    )
    assert cputorch.torch_build({}) == "cpu"
    with pytest.raises(SystemExit, match="cpu .*or pypi"):
        cputorch.torch_build({"GRADLAB_HUB_TORCH": "cuda"})


def _recorder(fail_no_index: bool = False):  # type: ignore[no-untyped-def]
    commands: list[list[str]] = []

    def step(*command: str) -> None:
        commands.append(list(command))
        if fail_no_index and "--no-index" in command:
            raise subprocess.CalledProcessError(1, command)

    return commands, step


def test_cpu_torch_comes_from_the_wheel_at_hand_else_from_the_cpu_index(monkeypatch: pytest.MonkeyPatch) -> None:
    pin = cputorch.torch_pin()
    monkeypatch.setattr(cputorch, "cuda_of", lambda python, library=None: "absent")
    commands, step = _recorder()
    assert cputorch.install_cpu_torch("/env/python", step, {})
    assert commands == [["/env/python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", pin]]
    commands, step = _recorder(fail_no_index=True)
    assert cputorch.install_cpu_torch("/env/python", step, {"GRADLAB_HUB_TORCH_INDEX": "https://mirror/cpu"})
    assert commands[-1] == [
        "/env/python", "-m", "pip", "install", "--quiet", "--no-deps", "--index-url", "https://mirror/cpu", pin
    ]  # fmt: skip
    commands, step = _recorder(fail_no_index=True)
    cputorch.install_cpu_torch("/env/python", step, {})
    assert cputorch.CPU_INDEX in commands[-1]
    # Asked for PyPI's build, or a torch is there already (CPU or CUDA): nothing is installed.
    commands, step = _recorder()
    assert not cputorch.install_cpu_torch("/env/python", step, {"GRADLAB_HUB_TORCH": "pypi"})
    for present in (None, "12.8"):
        monkeypatch.setattr(cputorch, "cuda_of", lambda python, library=None, present=present: present)
        assert not cputorch.install_cpu_torch("/env/python", step, {})
    assert commands == []
    # A CUDA torch where the CPU build was asked for stops the build, with what to set.
    with pytest.raises(SystemExit, match="GRADLAB_HUB_TORCH_INDEX"):
        cputorch.check_cpu_torch("/env/python", environ={})


def test_the_learners_environment_gets_cpu_torch_before_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scratch run the review made: a rebuilt environment must not end with PyPI's torch.
    monkeypatch.setattr(learner_env, "shared_interpreter", lambda prefix, python: ("/usr/bin/python3.11", None))
    monkeypatch.setattr(cputorch, "cuda_of", lambda python, library=None: "absent")
    checked: list[str] = []
    monkeypatch.setattr(learner_env, "check_cpu_torch", lambda python, library=None: checked.append(python))
    monkeypatch.delenv("GRADLAB_HUB_TORCH", raising=False)
    commands, step = _recorder()
    stamp = learner_env.build(tmp_path, "/usr/bin/python3.11", step)
    env_python = str(tmp_path / "env" / "bin" / "python")
    torch_at = next(i for i, c in enumerate(commands) if cputorch.torch_pin() in c)
    lock_at = next(i for i, c in enumerate(commands) if str(learner_env.LOCK) in c)
    assert commands[0][:3] == ["/usr/bin/python3.11", "-m", "venv"]
    assert torch_at < lock_at and "--no-deps" in commands[torch_at]
    assert checked == [env_python] and stamp["torch"] == "cpu"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_hub_deps_puts_cpu_torch_into_the_hubs_venv_before_setup() -> None:
    done = subprocess.run(
        ["make", "-n", "hub-deps", "VENV=/nonexistent-venv"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    torch_at = next(i for i, line in enumerate(lines) if "-m gradlab_hub.cputorch" in line)
    lock_at = next(i for i, line in enumerate(lines) if "-r requirements/course.lock" in line)
    assert torch_at < lock_at, "the lock would install PyPI's (CUDA) torch first"
    pypi = subprocess.run(
        ["make", "-n", "hub-deps", "VENV=/nonexistent-venv", "HUB_TORCH=pypi"], cwd=REPO, capture_output=True, text=True
    )
    assert "GRADLAB_HUB_TORCH=pypi" in pypi.stdout


NOTEBOOK_PATH = re.compile(r"notebooks/(?:zh/)?[0-9A-Za-z_.-]+\.ipynb")


def test_every_notebook_named_in_the_workshop_docs_exists() -> None:
    docs = [REPO / "README.md", *sorted(WORKSHOP.glob("*.md")), WORKSHOP / "z2jh" / "config.yaml"]
    sources = [WORKSHOP / "gradlab_hub" / "hub.py", REPO / "gradlab" / "course" / "workshop.py"]
    named = {
        (path.relative_to(REPO).as_posix(), found)
        for path in docs + sources
        for found in NOTEBOOK_PATH.findall(path.read_text(encoding="utf-8"))
    }
    assert len({found for _, found in named}) >= 5, "the check reads the docs' notebook paths"
    assert ("workshop/RUNSHEET.md", "notebooks/11_playground.ipynb") in named
    missing = sorted((where, found) for where, found in named if not (REPO / found).is_file())
    assert missing == [], f"notebooks named in the docs that do not exist: {missing}"


# -- the cloud metadata service ----------------------------------------------------------------------


def test_the_metadata_rule_matches_the_learners_group() -> None:
    rule = firewall.rule("gradlab-learners")
    assert rule[:2] == ["-d", "169.254.169.254/32"] and rule[-2:] == ["-j", "REJECT"]
    assert "--suppl-groups" in rule, "learners' primary group is their own; the learners' group is supplementary"


# The block itself, IPv4 and IPv6, is tested in a network namespace of its own: tests/test_workshop_guards.py.


# -- resetting one notebook ----------------------------------------------------------------------------


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_reset_gives_back_the_courses_notebook_where_git_checkout_gives_the_learners(tmp_path: Path) -> None:
    from gradlab_hub import reset

    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    (course / "notebooks" / "05.ipynb").write_text("original\n")
    _git("init", "-q", "-b", "main", cwd=course)
    _git("add", ".", cwd=course)
    _git("commit", "-q", "-m", "course", cwd=course)
    home = tmp_path / "home"
    home.mkdir()
    _git("clone", "-q", "--branch", "main", str(course), "gradlab", cwd=home)
    copy = home / "gradlab"
    # The learner edits; the next click on the link makes nbgitpuller commit the edit.
    (copy / "notebooks" / "05.ipynb").write_text("my broken attempt\n")
    _git("commit", "-q", "-am", "Automatic commit by nbgitpuller", cwd=copy)
    # git checkout (what 00 says for one's own clone) restores the learner's version here, not the course's:
    _git("checkout", "--", "notebooks/05.ipynb", cwd=copy)
    assert (copy / "notebooks" / "05.ipynb").read_text() == "my broken attempt\n"
    me = __import__("pwd").getpwuid(os.geteuid()).pw_name
    kept = reset.reset_notebook(me, "notebooks/05.ipynb", home=home)
    assert (copy / "notebooks" / "05.ipynb").read_text() == "original\n"
    assert kept is not None and kept.read_text() == "my broken attempt\n" and kept.parent == copy / "notebooks"
    with pytest.raises(ValueError, match="has no"):
        reset.reset_notebook(me, "notebooks/99.ipynb", home=home)
    with pytest.raises(ValueError, match="inside the course"):
        reset.reset_notebook(me, "../x.ipynb", home=home)
    runsheet = (WORKSHOP / "RUNSHEET.md").read_text(encoding="utf-8")
    assert "delete the notebook in the file browser (right-click → Delete), open the workshop" in runsheet
    assert "make hub-reset NAME=ada NOTEBOOK=notebooks/05_the_detach_fix.ipynb" in runsheet
    assert "@{upstream}" not in runsheet, "learners are given no git command on the hub"


def test_the_session_replay_runs_every_notebook_in_order() -> None:
    from gradlab_hub import session

    assert [Path(path).name[:2] for path in session.NOTEBOOKS] == [f"{i:02d}" for i in range(12)]
    assert all((REPO / path).is_file() for path in session.NOTEBOOKS)
    with pytest.raises(ValueError, match="between 1 and"):
        session.run(0)
    with pytest.raises(ValueError, match="--think"):
        session.run(1, think=-1)
    with pytest.raises(ValueError, match="--split"):
        session.run(1, split=13)
    thirds = session.split_course(session.NOTEBOOKS, 3)
    assert [len(part) for part in thirds] == [4, 4, 4]
    assert [notebook for part in thirds for notebook in part] == session.NOTEBOOKS
    # The committed measurements SIZING.md quotes: every sample has every field.
    for table in sorted((WORKSHOP / "results").glob("session-*.csv")):
        rows = list(__import__("csv").DictReader(table.open(encoding="utf-8")))
        assert rows and set(rows[0]) == set(session.FIELDS), table.name
