"""``make hub-load N=10``: N learners run notebook 01 on one workshop hub at the same time.

Against a :class:`~gradlab_hub.trialhub.TrialHub` on 127.0.0.1 (no network: the course
is a local git repository of this checkout, served by ``git daemon`` on 127.0.0.1), the
room's morning is replayed:

1. the setup service creates N learners through the REST API (each becomes a Unix
   account) and issues each a token;
2. all N servers are started at once (spawn time per learner);
3. each learner, concurrently, opens the nbgitpuller link made by
   ``gradlab.course.workshop`` (the hub redirects it to their server), pulls the course
   into their home, starts a kernel for notebook 01 and runs every code cell through the
   Jupyter kernel protocol; each cell's outputs are compared with the outputs stored in
   the notebook they pulled, with nbval's rules and ``tests/nbval_sanitize.cfg``;
   Each learner first signs in through the login form (workshop code and a personal
   password), as in the room; the link is followed in that browser session;
4. meanwhile a learner's JupyterLab page and hub home page are reloaded every second
   (from a second sign-in with the personal password alone): every answer must be 200
   within ``--max-latency`` seconds;
5. nothing may leak across learners: each kernel runs as its learner, cannot list or
   read another learner's home, and neither that learner's token nor the hub will let
   it into another learner's server; every listening socket is on the loopback address;
6. resident memory (RSS, and PSS, which splits shared pages fairly) of each server and
   kernel, the kernel's CPU seconds for the notebook (with the ``dot`` processes it ran),
   spawn times, and the PSS of every process of the workshop together are recorded.

Exit status 0 when every check passed; the measurements go to a JSON file
(``--output``) and a table on stdout. Everything the run started is stopped by pid and
every account, cgroup and file it created is removed, also when a check fails.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import platform
import pwd
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psutil
import requests

from gradlab.course.workshop import pull_link

from .firewall import METADATA_ADDRESS, METADATA_ADDRESS_V6, in_force
from .kernel import RemoteKernel
from .limits import detect
from .outputs import differences, read_rules
from .settings import REPO, WORKSHOP
from .trialhub import TrialHub

NOTEBOOK = "notebooks/01_the_original_loop.ipynb"
TARGET = "gradlab"
RULES = REPO / "tests" / "nbval_sanitize.cfg"
MAX_LEARNERS = 40

# Run in each learner's kernel after the notebook. Prints one JSON line.
PROBE = """
import json, os, pwd, socket, urllib.request, urllib.error
other_home, other_url, probe_v6 = {other_home!r}, {other_url!r}, {probe_v6!r}
seen = {{"uid": os.getuid(), "user": pwd.getpwuid(os.getuid()).pw_name}}
seen["list_own_home"] = "allowed" if os.listdir(os.path.expanduser("~")) else "empty"
try:
    os.listdir(other_home); seen["list_other_home"] = "allowed"
except PermissionError:
    seen["list_other_home"] = "denied"
try:
    open(os.path.join(other_home, ".bashrc")).read(); seen["read_other_file"] = "allowed"
except PermissionError:
    seen["read_other_file"] = "denied"
request = urllib.request.Request(other_url, headers={{"Authorization": "token " + os.environ.get("JUPYTERHUB_API_TOKEN", "")}})
try:
    seen["other_server"] = urllib.request.urlopen(request, timeout=30).status
except urllib.error.HTTPError as error:
    seen["other_server"] = error.code
except OSError as error:
    seen["other_server"] = str(error)
# The cloud metadata service: a TCP connection only (nothing is asked of it).
probe = socket.socket()
probe.settimeout(5)
try:
    probe.connect(({metadata!r}, 80)); seen["metadata"] = "connected"
except ConnectionRefusedError:
    seen["metadata"] = "refused"
except OSError as error:
    seen["metadata"] = type(error).__name__
finally:
    probe.close()
# IPv6 only where the ip6tables rule is in force, so no packet can leave for that address.
if probe_v6:
    probe = socket.socket(socket.AF_INET6)
    probe.settimeout(5)
    try:
        probe.connect(({metadata_v6!r}, 80)); seen["metadata_v6"] = "connected"
    except ConnectionRefusedError:
        seen["metadata_v6"] = "refused"
    except OSError as error:
        seen["metadata_v6"] = type(error).__name__
    finally:
        probe.close()
print(json.dumps(seen))
"""


def _process_of(hub: TrialHub, name: str, marker: str) -> psutil.Process | None:
    for proc in hub.user_processes(name):
        with contextlib.suppress(psutil.Error):
            if any(marker in part for part in proc.cmdline()):
                return proc
    return None


def _memory(proc: psutil.Process | None) -> dict[str, float]:
    if proc is None:
        return {}
    info = proc.memory_full_info()
    return {"rss_mb": info.rss / 2**20, "pss_mb": info.pss / 2**20, "uss_mb": info.uss / 2**20}


def _cpu(proc: psutil.Process | None) -> float:
    """CPU seconds of ``proc`` and of its children that have ended (e.g. Graphviz's ``dot``)."""
    if proc is None:
        return float("nan")
    times = proc.cpu_times()
    return float(times.user + times.system + times.children_user + times.children_system)


def _pss_total(hub: TrialHub) -> dict[str, float]:
    """Proportional set size (shared pages split between their users) summed by role, in MiB."""
    totals: dict[str, float] = {}
    for proc in hub.processes():
        with contextlib.suppress(psutil.Error):
            command = " ".join(proc.cmdline())
            role = (
                "kernels"
                if "ipykernel_launcher" in command
                else "servers"
                if "jupyterhub-singleuser" in command
                else "proxy"
                if "configurable-http-proxy" in command or proc.name() == "node"
                else "hub and services"
            )
            totals[role] = totals.get(role, 0.0) + proc.memory_full_info().pss / 2**20
    totals["all"] = sum(totals.values())
    return totals


def _server_port(hub: TrialHub, name: str) -> int | None:
    server = _process_of(hub, name, "jupyterhub-singleuser")
    if server is None:
        return None
    for conn in server.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN:
            return int(conn.laddr.port)
    return None


def sign_in(hub: TrialHub, name: str, password: str, code: str = "") -> requests.Session:
    """Sign in through the login form (with the workshop code the first time), as a browser would."""
    session = hub.login(name, password, code)
    if session is None:
        raise AssertionError(f"{name} could not sign in{' with the workshop code' if code else ''}")
    return session


def pull(hub: TrialHub, name: str, session: requests.Session, repo: str) -> dict[str, Any]:
    """Follow the learner's nbgitpuller link in their signed-in browser session; the seconds it took.

    The hub redirects ``/hub/user-redirect/git-pull`` to the learner's own server, which
    logs the browser in through the hub's OAuth and shows nbgitpuller's page; that page's
    script then streams the pull from ``git-pull/api``, which is requested here.
    """
    started = time.monotonic()
    link = pull_link(hub.url, repo, branch="main", open_path=NOTEBOOK, targetpath=TARGET)
    page = session.get(link, timeout=120)
    expected = f"/user/{name}/git-pull"
    if page.status_code != 200 or urlsplit(page.url).path != expected:
        raise AssertionError(
            f"{name}: the link ended at {urlsplit(page.url).path} ({page.status_code}), not {expected}"
        )
    query = {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}
    api = {k: query[k] for k in ("repo", "branch", "targetpath")}
    phase, last = "", {}
    with session.get(hub.url + f"user/{name}/git-pull/api", params=api, stream=True, timeout=300) as events:
        for line in events.iter_lines(decode_unicode=True):
            if line and line.startswith("data: "):
                last = json.loads(line[6:])
                phase = last.get("phase", phase)
                if phase in ("finished", "error"):
                    break
    if phase != "finished":
        raise AssertionError(f"{name}: nbgitpuller ended in phase {phase!r}: {last.get('message')}")
    opened = session.get(hub.url + f"user/{name}/{query['urlpath']}", timeout=60)
    if opened.status_code != 200:
        raise AssertionError(f"{name}: opening {query['urlpath']} after the pull gave {opened.status_code}")
    return {"pull_s": time.monotonic() - started, "urlpath": query["urlpath"]}


def run_notebook(hub: TrialHub, name: str, token: str, rules: list[tuple[str, str]]) -> dict[str, Any]:
    """Run every code cell of the learner's copy of notebook 01; compare outputs with the stored ones."""
    server_url = hub.url + f"user/{name}/"
    headers = {"Authorization": f"token {token}"}
    path = f"{TARGET}/{NOTEBOOK}"
    model = requests.get(server_url + f"api/contents/{path}", headers=headers, timeout=60)
    model.raise_for_status()
    cells = [cell for cell in model.json()["content"]["cells"] if cell["cell_type"] == "code"]
    started = time.monotonic()
    kernel = RemoteKernel(server_url, token, path)
    result: dict[str, Any] = {"kernel_start_s": time.monotonic() - started, "cells": len(cells), "problems": []}
    try:
        kernel_proc = _process_of(hub, name, "ipykernel_launcher")
        cpu_before = _cpu(kernel_proc)
        run_started = time.monotonic()
        for number, cell in enumerate(cells, 1):
            tags = set(cell.get("metadata", {}).get("tags", []))
            if "nbval-skip" in tags:
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            done = kernel.execute(source)
            should_raise = bool(tags & {"raises-exception", "nbval-raises-exception"})
            if (done.status == "error") != should_raise:
                result["problems"].append(
                    f"code cell {number}: status {done.status}, raises-exception tag: {should_raise}"
                )
            if "nbval-ignore-output" not in tags:
                for difference in differences(cell.get("outputs", []), done.outputs, rules):
                    result["problems"].append(f"code cell {number}: {difference}")
        result["notebook_s"] = time.monotonic() - run_started
        kernel_proc = kernel_proc or _process_of(hub, name, "ipykernel_launcher")
        result["kernel_cpu_s"] = _cpu(kernel_proc) - cpu_before
        result["kernel"] = _memory(kernel_proc)
        result["server"] = _memory(_process_of(hub, name, "jupyterhub-singleuser"))
        result["server_cpu_s"] = _cpu(_process_of(hub, name, "jupyterhub-singleuser"))
        result["kernel_uid_ok"] = kernel_proc is not None and kernel_proc.uids().real == pwd.getpwnam(name).pw_uid
        result["_kernel"] = kernel
    except BaseException:
        kernel.close()
        raise
    return result


def isolation(hub: TrialHub, name: str, other: str, token: str, kernel: RemoteKernel) -> list[str]:
    """What ``name`` could reach of ``other``; empty when nothing."""
    found = []
    port = _server_port(hub, other)
    other_url = f"http://127.0.0.1:{port}/user/{other}/api/contents/" if port else "http://127.0.0.1:1/"
    probe_v6 = in_force(hub.tag, v6=True)
    code = PROBE.format(
        other_home=str(hub.home(other)),
        other_url=other_url,
        metadata=METADATA_ADDRESS,
        metadata_v6=METADATA_ADDRESS_V6,
        probe_v6=probe_v6,
    )
    done = kernel.execute(code, timeout=120)
    stdout = "".join(o.get("text", "") for o in done.outputs if o.get("name") == "stdout")
    try:
        seen = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [f"{name}: the isolation probe printed {stdout!r} ({done.status})"]
    if seen["user"] != name:
        found.append(f"{name}'s kernel runs as {seen['user']}")
    if seen["list_own_home"] != "allowed":
        found.append(f"{name}'s kernel cannot list its own home, so the probe proves nothing: {seen}")
    if seen["list_other_home"] != "denied" or seen["read_other_file"] != "denied":
        found.append(f"{name} can list or read {other}'s home: {seen}")
    if seen["other_server"] not in (401, 403):
        found.append(f"{name}'s kernel reached {other}'s server directly: {seen['other_server']}")
    if in_force(hub.tag, v6=False) and seen["metadata"] != "refused":
        found.append(f"{name}'s kernel reached the metadata service {METADATA_ADDRESS}: {seen['metadata']}")
    # Refused by the rule, or no IPv6 route at all (then no packet is sent either).
    if probe_v6 and seen.get("metadata_v6") not in ("refused", "OSError"):
        found.append(f"{name}'s kernel reached the metadata service {METADATA_ADDRESS_V6}: {seen.get('metadata_v6')}")
    headers = {"Authorization": f"token {token}"}
    own = requests.get(hub.url + f"user/{name}/api/contents/", headers=headers, timeout=60, allow_redirects=False)
    if own.status_code != 200:
        found.append(f"{name}'s token does not even open {name}'s own server ({own.status_code})")
    through_proxy = requests.get(
        hub.url + f"user/{other}/api/contents/", headers=headers, timeout=60, allow_redirects=False
    )
    if through_proxy.status_code not in (401, 403, 404):
        found.append(f"{name}'s token opened {other}'s server: {through_proxy.status_code}")
    user_model = hub.api("GET", f"users/{other}", token=token)
    if user_model.status_code not in (403, 404):
        found.append(f"{name}'s token read {other}'s hub record: {user_model.status_code}")
    mode = hub.home(name).stat().st_mode & 0o777
    if mode != 0o700:
        found.append(f"{name}'s home has mode {oct(mode)}, not 0o700")
    listing = hub.api("GET", "users", token=token)
    if listing.status_code == 200 and any(user.get("name") != name for user in listing.json()):
        found.append(f"{name}'s token lists other users")
    return found


def check_limits(hub: TrialHub, names: list[str], report: dict[str, Any]) -> list[str]:
    """Each learner's server is in its own cgroup with the hub's memory limit (when cgroups are usable)."""
    layout, reason = detect(hub.tag)
    report["limits"] = reason
    report["metadata_blocked"] = in_force(hub.tag, v6=False)
    report["metadata_blocked_v6"] = in_force(hub.tag, v6=True)
    if layout is None:
        return []
    found = []
    expected = 2 * 2**30  # TrialHub's default GRADLAB_HUB_MEM_LIMIT, 2G
    for name in names:
        server = _process_of(hub, name, "jupyterhub-singleuser")
        if server is None or server.pid not in layout.pids(name):
            found.append(f"{name}'s server is not in its cgroup {layout.directories(name)}")
        elif layout.memory_limit(name) != expected:
            found.append(f"{name}'s cgroup allows {layout.memory_limit(name)} bytes, not {expected}")
    return found


class Monitor(threading.Thread):
    """Reloads a learner's JupyterLab page and hub home page every second while the run lasts."""

    def __init__(self, hub: TrialHub, name: str, session: requests.Session) -> None:
        super().__init__(daemon=True)
        self.targets = [hub.url + f"user/{name}/lab", hub.url + "hub/home"]
        self.session = session
        self.samples: list[tuple[str, int, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for url in self.targets:
                started = time.monotonic()
                try:
                    status = self.session.get(url, timeout=30).status_code
                except requests.RequestException:
                    status = 0
                self.samples.append((url.rsplit("/", 2)[-1], status, time.monotonic() - started))
            self.done.wait(1.0)


def machine() -> dict[str, Any]:
    memory = psutil.virtual_memory()
    return {
        "cpus": os.cpu_count(),
        "cpu_model": platform.processor() or _cpu_model(),
        "ram_gb": round(memory.total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def run(
    learners: int, *, max_latency: float = 10.0, deadline_s: float = 1200, keep_log: Path | None = None
) -> dict[str, Any]:
    """The whole load test; returns the report (``report["ok"]`` says whether it passed).

    ``keep_log``: where to copy the hub's log (the run directory is removed).
    """
    if not 1 <= learners <= MAX_LEARNERS:
        raise ValueError(f"--learners must be between 1 and {MAX_LEARNERS}")
    rules = read_rules(RULES)
    report: dict[str, Any] = {
        "learners": learners,
        "machine": machine(),
        "problems": [],
        "load_before": os.getloadavg(),
    }
    problems: list[str] = report["problems"]
    started = time.monotonic()
    monitor: Monitor | None = None
    with TrialHub() as hub:
        try:
            t0 = time.monotonic()
            hub.start()
            report["hub_start_s"] = time.monotonic() - t0
            repo = hub.serve_course()
            names = hub.learner_names(learners)
            t0 = time.monotonic()
            hub.create_learners(names)
            report["create_accounts_s"] = time.monotonic() - t0
            tokens = {name: hub.token_for(name) for name in names}
            with concurrent.futures.ThreadPoolExecutor(max_workers=learners) as pool:
                spawn = dict(zip(names, pool.map(hub.start_server, names)))
            per: dict[str, dict[str, Any]] = {
                name: {
                    "spawn_s": spawn[name],
                    "server_start_cpu_s": _cpu(_process_of(hub, name, "jupyterhub-singleuser")),
                }
                for name in names
            }
            problems.extend(check_limits(hub, names, report))
            code = hub.secret("workshop_code")
            passwords = {name: secrets.token_urlsafe(12) for name in names}
            with concurrent.futures.ThreadPoolExecutor(max_workers=learners) as pool:
                sessions = dict(zip(names, pool.map(lambda n: sign_in(hub, n, passwords[n], code), names)))
            # The monitor is a second browser of the first learner: the personal password alone signs it in.
            monitor = Monitor(hub, names[0], sign_in(hub, names[0], passwords[names[0]]))
            monitor.start()

            def learner(name: str) -> dict[str, Any]:
                pulled = pull(hub, name, sessions[name], repo)
                return {**pulled, **run_notebook(hub, name, tokens[name], rules)}

            with concurrent.futures.ThreadPoolExecutor(max_workers=learners) as pool:
                futures = {name: pool.submit(learner, name) for name in names}
                for name, future in futures.items():
                    try:
                        per[name].update(future.result(timeout=max(1.0, deadline_s - (time.monotonic() - started))))
                    except Exception as error:  # one learner's failure is reported, the others still count
                        problems.append(f"{name}: {type(error).__name__}: {error}")
            monitor.done.set()
            monitor.join(60)
            hub.note_processes()
            report["pss_mb"] = _pss_total(hub)
            kernels = {name: per[name].pop("_kernel", None) for name in names}
            # While every kernel still runs: which sockets listen, and where.
            listening = hub.listening()
            report["listening"] = sorted(f"{a}:{p} {c}" for a, p, _, c in listening)
            not_local = [s for s in listening if s[0] not in ("127.0.0.1", "::1")]
            if not_local:
                problems.append(f"listening beyond loopback: {not_local}")
            kernel_pids = {proc.pid for name in names if (proc := _process_of(hub, name, "ipykernel_launcher"))}
            if len({pid for _, _, pid, _ in listening} & kernel_pids) != sum(k is not None for k in kernels.values()):
                problems.append("the loopback check did not see every running kernel's sockets")
            for index, name in enumerate(names):
                kernel = kernels[name]
                problems.extend(f"{name}: {p}" for p in per[name].get("problems", []))
                if kernel is None:
                    continue
                try:
                    if per[name].get("kernel_uid_ok") is False:
                        problems.append(f"{name}'s kernel does not run as {name}")
                    if learners > 1:
                        other = names[(index + 1) % learners]
                        problems.extend(isolation(hub, name, other, tokens[name], kernel))
                finally:
                    kernel.close()
            bad = [s for s in monitor.samples if s[1] != 200 or s[2] > max_latency]
            if len(monitor.samples) < 4:
                problems.append(f"only {len(monitor.samples)} responsiveness probes were made")
            if bad:
                problems.append(f"the hub or a learner's page was slow or failing: {bad[:5]}")
            latencies = [s[2] for s in monitor.samples]
            report["probe_latency_s"] = {
                "count": len(latencies),
                "median": statistics.median(latencies) if latencies else None,
                "max": max(latencies) if latencies else None,
            }
            report["per_learner"] = per
            report["hub_cpu_s"] = _cpu(psutil.Process(hub.process.pid)) if hub.process else None
        except Exception as error:
            problems.append(f"{type(error).__name__}: {error}\n{hub.log_tail()}")
        finally:
            if monitor is not None:
                monitor.done.set()
                monitor.join(60)
            t0 = time.monotonic()
            leaks = hub.close(keep_log=keep_log)
            report["stop_s"] = time.monotonic() - t0
            problems.extend(leaks)
    report["total_s"] = time.monotonic() - started
    report["load_after"] = os.getloadavg()
    report["ok"] = not problems
    return report


def summary(report: dict[str, Any]) -> str:
    """The report as the table SIZING.md quotes."""
    per = report.get("per_learner", {})

    def values(path: tuple[str, ...]) -> list[float]:
        found = []
        for data in per.values():
            value: Any = data
            for key in path:
                value = value.get(key, {}) if isinstance(value, dict) else {}
            if isinstance(value, int | float):
                found.append(float(value))
        return found

    rows = [
        ("spawn time (s)", ("spawn_s",)),
        ("server CPU to start (s)", ("server_start_cpu_s",)),
        ("pull time (s)", ("pull_s",)),
        ("kernel start (s)", ("kernel_start_s",)),
        ("notebook 01 wall time (s)", ("notebook_s",)),
        ("kernel CPU for notebook 01 (s)", ("kernel_cpu_s",)),
        ("kernel RSS after notebook 01 (MiB)", ("kernel", "rss_mb")),
        ("kernel PSS after notebook 01 (MiB)", ("kernel", "pss_mb")),
        ("server RSS (MiB)", ("server", "rss_mb")),
        ("server PSS (MiB)", ("server", "pss_mb")),
    ]
    m = report["machine"]
    lines = [
        f"learners: {report['learners']}   machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['ram_gb']} GiB RAM",
        f"{'per learner':40} {'median':>8} {'max':>8}",
    ]
    for label, path in rows:
        found = values(path)
        if found:
            lines.append(f"{label:40} {statistics.median(found):8.1f} {max(found):8.1f}")
    if "pss_mb" in report:
        pss = report["pss_mb"]
        parts = ", ".join(f"{k} {v:.0f}" for k, v in sorted(pss.items()) if k != "all")
        lines.append(f"memory of the whole workshop after notebook 01 (PSS): {pss['all']:.0f} MiB ({parts})")
    latency = report.get("probe_latency_s") or {}
    if latency.get("count"):
        lines.append(
            f"a learner's page / the hub's home page during the run: {latency['count']} answers, "
            f"median {latency['median']:.2f} s, max {latency['max']:.2f} s"
        )
    load = (
        "/".join(f"{x:.1f}" for x in report.get("load_before", ()))
        + " -> "
        + "/".join(f"{x:.1f}" for x in report.get("load_after", ()))
    )
    lines.append(f"per-learner memory and CPU limits: {report.get('limits', 'not checked')}")
    blocked = report.get("metadata_blocked")
    lines.append(
        "cloud metadata service: "
        + ("blocked for learners, checked from every kernel" if blocked else "NOT blocked (no iptables rule)")
        + (", IPv6 too" if report.get("metadata_blocked_v6") else ", NOT over IPv6 (no ip6tables rule)")
    )
    lines.append(f"machine load average (1/5/15 min) before -> after: {load}")
    lines.append(f"whole run: {report['total_s']:.0f} s;  result: {'PASS' if report['ok'] else 'FAIL'}")
    lines.extend(f"  problem: {p}" for p in report["problems"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make hub-load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", "-n", type=int, default=10, help="how many learners (default %(default)s)")
    parser.add_argument("--max-latency", type=float, default=10.0, help="slowest allowed answer during the run (s)")
    parser.add_argument("--output", type=Path, default=None, help="JSON report (default: workshop/results/)")
    options = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("hub-load: needs root (each learner is a Unix account): sudo make hub-load", file=sys.stderr)
        return 2
    output = options.output or WORKSHOP / "results" / f"hub-load-{options.learners}.json"
    report = run(options.learners, max_latency=options.max_latency, keep_log=output.with_suffix(".log"))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    print(summary(report))
    print(f"report: {output} (the hub's log: {output.with_suffix('.log')})")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
