"""``make hub-session N=10``: a whole workshop session, N learners running every notebook (00 to 11) in order.

:mod:`gradlab_hub.loadtest` replays the room's worst minute (everybody starts and runs
notebook 01 at once). This replays the day, to see what memory does over it with the
culling the hub runs with (:func:`gradlab_hub.config.kernel_culling`, the idle culler):

1. N learners are created through the REST API; they arrive spread over ``--arrival``
   seconds: each one's server starts, they sign in through the login form with the
   workshop code and pull the course through the nbgitpuller link;
2. each learner opens notebooks 00 to 11 in order, as JupyterLab does (a session, a
   kernel, the websocket), runs every code cell with ``--think`` seconds between two
   cells, and moves on to the next notebook **leaving the kernel running** (a closed
   tab does not stop a kernel): only the server's kernel culling stops it once it has
   been idle ``--kernel-cull`` seconds;
3. every ``--sample`` seconds, until ``--linger`` seconds after the last learner's last
   cell: the PSS of every process of the workshop by role (hub, proxy, servers,
   kernels), the number of kernels alive, the CPU seconds all of them have used, the
   machine's used memory and load average: one CSV row each (``--csv``);
4. a cell whose status does not match its ``raises-exception`` tag is a problem; output
   differences from the stored outputs (nbval's rules) are counted, not failed
   (``make test`` checks outputs; the timing-dependent cells of 07 and 10 differ here).

Time is scaled: ``--think 2 --kernel-cull 40`` is a 1-minute-per-cell, 20-minute kernel
timeout session run 30 times faster (the scale SIZING.md states); the CPU work of the
cells is not scaled. Exit status 0 when no learner had a problem; the JSON summary
(``--output``) and the CSV of samples go to ``workshop/results/``. Everything is
removed afterwards, as by the load test.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import json
import os
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import requests
import websocket

from .kernel import RemoteKernel
from .loadtest import RULES, TARGET, _cpu, _process_of, machine, pull, sign_in
from .outputs import differences, read_rules
from .settings import REPO, WORKSHOP
from .trialhub import TrialHub

NOTEBOOKS = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MAX_LEARNERS = 40

FIELDS = [
    "t_s",
    "learners_active",
    "kernels",
    "servers",
    "pss_kernels_mb",
    "pss_servers_mb",
    "pss_hub_mb",
    "pss_all_mb",
    "cpu_s",
    "tasks",
    "tasks_learner_max",
    "machine_used_mb",
    "load1",
]


def _role(proc: psutil.Process) -> str:
    command = " ".join(proc.cmdline())
    if "ipykernel_launcher" in command:
        return "kernels"
    if "jupyterhub-singleuser" in command:
        return "servers"
    return "hub"


class Sampler(threading.Thread):
    """Samples memory (PSS by role), kernels alive and CPU seconds of the workshop's processes."""

    def __init__(self, hub: TrialHub, every: float, active: list[int], *, keep_free_mb: float = 3072) -> None:
        super().__init__(daemon=True)
        self.hub, self.every, self.active = hub, every, active
        self.rows: list[dict[str, float]] = []
        self.done = threading.Event()
        # The machine is shared: when less than this is left, the learners stop (a problem, reported).
        self.keep_free_mb = keep_free_mb
        self.low_memory = threading.Event()
        self.started = time.monotonic()
        # CPU seconds of processes that have ended (culled kernels) still count; the uid says whose.
        self.cpu: dict[tuple[int, float], float] = {}
        self.owner: dict[tuple[int, float], int] = {}
        self.learner_uids: dict[int, str] = {}

    def sample(self) -> dict[str, float]:
        pss = {"kernels": 0.0, "servers": 0.0, "hub": 0.0}
        count = {"kernels": 0, "servers": 0, "hub": 0}
        # Tasks (processes and their threads): what a per-learner pids limit counts.
        tasks: dict[int, int] = {}
        learners = set(self.hub.uids())
        for proc in self.hub.processes():
            with contextlib.suppress(psutil.Error):
                role = _role(proc)
                pss[role] += proc.memory_full_info().pss / 2**20
                count[role] += 1
                key = (proc.pid, proc.create_time())
                self.cpu[key] = _cpu(proc)
                uid = proc.uids().real
                self.owner[key] = uid
                tasks[uid] = tasks.get(uid, 0) + proc.num_threads()
        memory = psutil.virtual_memory()
        return {
            "t_s": round(time.monotonic() - self.started, 1),
            "learners_active": self.active[0],
            "kernels": count["kernels"],
            "servers": count["servers"],
            "pss_kernels_mb": round(pss["kernels"], 1),
            "pss_servers_mb": round(pss["servers"], 1),
            "pss_hub_mb": round(pss["hub"], 1),
            "pss_all_mb": round(sum(pss.values()), 1),
            "cpu_s": round(sum(self.cpu.values()), 1),
            "tasks": sum(tasks.values()),
            "tasks_learner_max": max((n for uid, n in tasks.items() if uid in learners), default=0),
            "machine_used_mb": round((memory.total - memory.available) / 2**20, 1),
            "load1": round(os.getloadavg()[0], 2),
        }

    def run(self) -> None:
        while not self.done.is_set():
            self.learner_uids.update(self.hub.uids())
            self.rows.append(self.sample())
            if psutil.virtual_memory().available / 2**20 < self.keep_free_mb:
                self.low_memory.set()
            self.done.wait(self.every)


def run_notebook(
    hub: TrialHub, name: str, token: str, notebook: str, think: float, rules: list[tuple[str, str]]
) -> dict[str, Any]:
    """Open ``notebook`` in a new kernel, run its code cells with think time; leave the kernel running."""
    server_url = hub.url + f"user/{name}/"
    path = f"{TARGET}/{notebook}"
    model = requests.get(server_url + f"api/contents/{path}", headers={"Authorization": f"token {token}"}, timeout=60)
    model.raise_for_status()
    cells = [cell for cell in model.json()["content"]["cells"] if cell["cell_type"] == "code"]
    result: dict[str, Any] = {"cells": 0, "problems": [], "output_differences": 0}
    kernel = _start_kernel(server_url, token, path, result)
    kernel_proc = None
    started = time.monotonic()
    try:
        for number, cell in enumerate(cells, 1):
            tags = set(cell.get("metadata", {}).get("tags", []))
            if "nbval-skip" in tags:
                continue
            time.sleep(think)
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            done = kernel.execute(source, timeout=600)
            result["cells"] += 1
            kernel_proc = kernel_proc or _process_of_kernel(hub, name, kernel.kernel_id)
            should_raise = bool(tags & {"raises-exception", "nbval-raises-exception"})
            if (done.status == "error") != should_raise:
                result["problems"].append(f"{notebook} code cell {number}: status {done.status}")
            if "nbval-ignore-output" not in tags:
                result["output_differences"] += len(differences(cell.get("outputs", []), done.outputs, rules))
        result["seconds"] = time.monotonic() - started
        result["kernel_cpu_s"] = _cpu(kernel_proc)
        with contextlib.suppress(psutil.Error):
            if kernel_proc is not None:
                result["kernel_uss_mb"] = kernel_proc.memory_full_info().uss / 2**20
    finally:
        # The learner moves on: the tab may close, the kernel keeps running until it is culled.
        with contextlib.suppress(Exception):
            kernel.socket.close()
    return result


def _start_kernel(server_url: str, token: str, path: str, result: dict[str, Any]) -> RemoteKernel:
    """Open the notebook's kernel; once more if the first one was gone before it answered.

    Under time scaling, a kernel still starting on the loaded machine can outlast the scaled
    culling timeout and be culled before it answers ("Culling 'starting' kernel" in the hub's
    log), which the real 20-minute timeout never does. That kernel is started again, once, and
    counted in ``kernel_restarts`` (the report and SIZING.md show the count).
    """
    try:
        return RemoteKernel(server_url, token, path)
    except websocket.WebSocketException as error:
        result["kernel_restarts"] = result.get("kernel_restarts", 0) + 1
        result.setdefault("restarted_because", []).append(f"{type(error).__name__}: {error}")
        return RemoteKernel(server_url, token, path)


def split_course(notebooks: list[str], parts: int) -> list[list[str]]:
    """The course cut into ``parts`` consecutive stretches (learner ``i`` runs stretch ``i % parts``).

    Example::

        >>> [len(p) for p in split_course([f"{i:02d}" for i in range(12)], 3)]
        [4, 4, 4]
        >>> split_course(["00", "01", "02"], 2)
        [['00'], ['01', '02']]
    """
    n = len(notebooks)
    return [notebooks[i * n // parts : (i + 1) * n // parts] for i in range(parts)]


def _process_of_kernel(hub: TrialHub, name: str, kernel_id: str) -> psutil.Process | None:
    for proc in hub.user_processes(name):
        with contextlib.suppress(psutil.Error):
            if any(kernel_id in part for part in proc.cmdline()):
                return proc
    return _process_of(hub, name, "ipykernel_launcher")


def run(
    learners: int,
    *,
    think: float = 2.0,
    kernel_cull: int = 40,
    cull: int = 600,
    arrival: float = 60.0,
    sample: float = 5.0,
    linger: float | None = None,
    notebooks: list[str] | None = None,
    split: int = 1,
    csv_path: Path | None = None,
    keep_log: Path | None = None,
) -> dict[str, Any]:
    """The whole session; returns the report (``report["ok"]``), and writes the samples to ``csv_path``."""
    if not 1 <= learners <= MAX_LEARNERS:
        raise ValueError(f"--learners must be between 1 and {MAX_LEARNERS}")
    if think < 0 or kernel_cull < 1 or arrival < 0 or sample <= 0:
        raise ValueError("--think and --arrival must be >= 0, --kernel-cull >= 1 s, --sample > 0")
    chosen = notebooks or NOTEBOOKS
    if not 1 <= split <= len(chosen):
        raise ValueError(f"--split must be between 1 and the number of notebooks ({len(chosen)})")
    parts = split_course(chosen, split)
    rules = read_rules(RULES)
    linger = kernel_cull + 3 * max(1.0, kernel_cull / 20) + 2 * sample if linger is None else linger
    report: dict[str, Any] = {
        "learners": learners,
        "notebooks": chosen,
        "split": split,
        "scale": {"think_s": think, "kernel_cull_s": kernel_cull, "server_cull_s": cull, "arrival_s": arrival},
        "machine": machine(),
        "problems": [],
        "load_before": os.getloadavg(),
    }
    problems: list[str] = report["problems"]
    active = [0]
    sampler: Sampler | None = None
    started = time.monotonic()
    with TrialHub(
        cull_timeout=cull,
        cull_every=max(5, cull // 10),
        kernel_cull_timeout=kernel_cull,
        kernel_cull_every=max(1, kernel_cull // 20),
    ) as hub:
        try:
            hub.start()
            repo = hub.serve_course()
            names = hub.learner_names(learners)
            hub.create_learners(names)
            code = hub.secret("workshop_code")
            sampler = Sampler(hub, sample, active)
            sampler.start()
            lock = threading.Lock()

            def learner(index: int, name: str) -> dict[str, Any]:
                time.sleep(arrival * index / max(1, learners - 1) if learners > 1 else 0.0)
                with lock:
                    active[0] += 1
                try:
                    per: dict[str, Any] = {"spawn_s": hub.start_server(name)}
                    token = hub.token_for(name)
                    session = sign_in(hub, name, secrets.token_urlsafe(12), code)
                    per.update(pull(hub, name, session, repo))
                    per["notebooks"] = {}
                    for notebook in parts[index % split]:
                        if sampler is not None and sampler.low_memory.is_set():
                            raise MemoryError(f"stopped before {notebook}: the machine has under 3 GiB left")
                        per["notebooks"][notebook] = run_notebook(hub, name, token, notebook, think, rules)
                    return per
                finally:
                    with lock:
                        active[0] -= 1

            per_learner: dict[str, dict[str, Any]] = {}
            with concurrent.futures.ThreadPoolExecutor(max_workers=learners) as pool:
                futures = {name: pool.submit(learner, i, name) for i, name in enumerate(names)}
                for name, future in futures.items():
                    try:
                        per_learner[name] = future.result()
                    except Exception as error:  # one learner's failure is reported, the others still count
                        problems.append(f"{name}: {type(error).__name__}: {error}")
            report["session_s"] = time.monotonic() - started
            for name, per in per_learner.items():
                for done in per.get("notebooks", {}).values():
                    problems.extend(f"{name}: {p}" for p in done["problems"])
            # Everybody has left: the idle kernels must now be culled.
            deadline = time.monotonic() + linger
            while time.monotonic() < deadline:
                time.sleep(sample)
                if sampler.rows and sampler.rows[-1]["kernels"] == 0:
                    break
            if not sampler.rows or sampler.rows[-1]["kernels"] != 0:
                problems.append(f"kernels still running {linger:.0f} s after the learners left: culling did not act")
            report["per_learner"] = per_learner
        except Exception as error:
            problems.append(f"{type(error).__name__}: {error}\n{hub.log_tail()}")
        finally:
            if sampler is not None:
                sampler.done.set()
                sampler.join(60)
            problems.extend(hub.close(keep_log=keep_log))
    rows = sampler.rows if sampler is not None else []
    if csv_path is not None:
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        with open(csv_path, "w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    report["peak"] = {key: max((row[key] for row in rows), default=0.0) for key in FIELDS if key != "t_s"}
    report["kernel_restarts"] = sum(
        done.get("kernel_restarts", 0)
        for data in report.get("per_learner", {}).values()
        for done in data.get("notebooks", {}).values()
    )
    report["cpu_s"] = rows[-1]["cpu_s"] if rows else None
    if sampler is not None:
        # CPU seconds of each learner's own processes (server, kernels, what they ran), by account.
        accounts = dict(sampler.learner_uids)
        per_cpu: dict[str, float] = {}
        for key, seconds in sampler.cpu.items():
            whose = accounts.get(sampler.owner.get(key, -1))
            if whose is not None:
                per_cpu[whose] = per_cpu.get(whose, 0.0) + seconds
        report["learner_cpu_s"] = {name: round(value, 1) for name, value in sorted(per_cpu.items())}
    report["total_s"] = time.monotonic() - started
    report["load_after"] = os.getloadavg()
    report["ok"] = not problems
    return report


def summary(report: dict[str, Any]) -> str:
    """The figures SIZING.md quotes from one session."""
    peak = report.get("peak", {})
    per = report.get("per_learner", {})
    uss = [
        done["kernel_uss_mb"]
        for data in per.values()
        for done in data.get("notebooks", {}).values()
        if "kernel_uss_mb" in done
    ]
    cpu_per_notebook: dict[str, list[float]] = {}
    for data in per.values():
        for notebook, done in data.get("notebooks", {}).items():
            if isinstance(done.get("kernel_cpu_s"), float):
                cpu_per_notebook.setdefault(notebook, []).append(done["kernel_cpu_s"])
    m = report["machine"]
    lines = [
        f"session: {report['learners']} learners, notebooks {len(report['notebooks'])}, scale {report['scale']}",
        f"machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['ram_gb']} GiB RAM",
        f"peak: {peak.get('kernels', 0):.0f} kernels alive, PSS of the workshop {peak.get('pss_all_mb', 0):.0f} MiB "
        f"(kernels {peak.get('pss_kernels_mb', 0):.0f}, servers {peak.get('pss_servers_mb', 0):.0f}), "
        f"machine used {peak.get('machine_used_mb', 0):.0f} MiB",
        f"CPU seconds of the whole session: {report.get('cpu_s')}",
    ]
    if uss:
        lines.append(f"a kernel's own memory (USS) after its notebook: median {statistics.median(uss):.0f} MiB")
    for notebook, values in sorted(cpu_per_notebook.items()):
        lines.append(f"  {notebook}: kernel CPU median {statistics.median(values):.1f} s")
    lines.append(f"whole run: {report['total_s']:.0f} s;  result: {'PASS' if report['ok'] else 'FAIL'}")
    lines.extend(f"  problem: {p}" for p in report["problems"][:20])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make hub-session", description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", "-n", type=int, default=10, help="how many learners (default %(default)s)")
    parser.add_argument("--think", type=float, default=2.0, help="seconds between two cells (default %(default)s)")
    parser.add_argument("--kernel-cull", type=int, default=40, help="idle seconds before a kernel is culled")
    parser.add_argument("--cull", type=int, default=600, help="idle seconds before a server is culled")
    parser.add_argument("--arrival", type=float, default=60.0, help="learners arrive over this many seconds")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between two samples")
    parser.add_argument(
        "--linger", type=float, default=None, help="seconds to watch the culling after the last cell (default: enough)"
    )
    parser.add_argument("--notebooks", nargs="*", default=None, help="notebook paths (default: every one, 00 to 11)")
    parser.add_argument(
        "--split",
        type=int,
        default=1,
        help="cut the course into this many stretches; learner i runs stretch i mod SPLIT (default: all of it)",
    )
    parser.add_argument("--output", type=Path, default=None, help="JSON report (default: workshop/results/)")
    options = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("hub-session: needs root (each learner is a Unix account): sudo make hub-session", file=sys.stderr)
        return 2
    output = options.output or WORKSHOP / "results" / f"session-{options.learners}.json"
    report = run(
        options.learners,
        think=options.think,
        kernel_cull=options.kernel_cull,
        cull=options.cull,
        arrival=options.arrival,
        sample=options.sample,
        linger=options.linger,
        notebooks=options.notebooks,
        split=options.split,
        csv_path=output.with_suffix(".csv"),
        keep_log=output.with_suffix(".log"),
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    print(summary(report))
    print(f"report: {output}, samples: {output.with_suffix('.csv')}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
