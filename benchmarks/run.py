#!/usr/bin/env python
"""gradlab's benchmarks (`make bench`): ratios measured in one run, never absolute times.

1. ``track()`` overhead on the course's corrected loop (forward both, zero both,
   ``(loss_1 + loss_2).backward()``, step both; ``make_pair(softmax=False)``):
   ratio to the plain loop and to ``torch.autograd.detect_anomaly()``, with and
   without ``names=``.
   Targets: <= 1.5x plain, below anomaly mode.
2. Drawing: building ``gradlab.draw(...).source`` against ``torchviz.make_dot(...).source``
   on the same ~900-node graph (target: gradlab at most as slow), and gradlab
   alone on a 20,000-node chain (target: < 5 s).
3. The notebook suite: every ``notebooks/NN_*.ipynb`` in a fresh kernel (nbclient)
   against the floor of starting a kernel and importing torch, matplotlib and
   gradlab once per notebook (target: <= 1.3x the floor). Also reported: a second
   floor that adds the first optimizer (torch imports ``torch._dynamo`` when the
   first optimizer is built, about 1.4 s that every course notebook pays).

Method: the variants of one benchmark run interleaved (plain, tracked, anomaly,
plain, tracked, ...), so a slow phase of a noisy machine hits all of them; each
repetition gives one ratio against the plain run of the same round, and the
table shows the median ratio. The loop runs on one torch thread and is timed in
CPU time of that thread (``time.thread_time``), which other processes on the
machine disturb far less than wall time; wall-time ratios are in the JSON.

Usage::

    python benchmarks/run.py                 # everything, full repetitions
    python benchmarks/run.py --quick         # fewer repetitions (about a minute)
    python benchmarks/run.py --only track --out bench.json
    python benchmarks/run.py --profile       # where track() spends its time (cProfile)
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NOTEBOOKS = REPO / "notebooks"
sys.path.insert(0, str(HERE))

import gradlab  # noqa: E402
from gradlab import course  # noqa: E402

TARGETS = {"track_vs_plain": 1.5, "draw_vs_torchviz": 1.0, "chain_seconds": 5.0, "notebooks_vs_floor": 1.3}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# ----------------------------------------------------------------------------- 1. track()


def corrected_loop(pair: course.Pair, data: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    for x, y in data:
        course.joint_step(pair, x, y)


def _anomaly() -> contextlib.AbstractContextManager:
    return torch.autograd.detect_anomaly(check_nan=False)


TRACK_VARIANTS: dict[str, Callable[[course.Pair], contextlib.AbstractContextManager]] = {
    "plain": lambda pair: contextlib.nullcontext(),
    "track()": lambda pair: gradlab.track(),
    "track(names=)": lambda pair: gradlab.track(names=pair.names),
    "detect_anomaly()": lambda pair: _anomaly(),
}


def bench_track(reps: int, steps: int) -> dict:
    data = course.batches(steps, seed=0)
    cpu: dict[str, list[float]] = {k: [] for k in TRACK_VARIANTS}
    wall: dict[str, list[float]] = {k: [] for k in TRACK_VARIANTS}
    for rep in range(reps + 1):  # round 0 warms up every code path and is discarded
        order = list(TRACK_VARIANTS)
        order = order[rep % len(order) :] + order[: rep % len(order)]  # rotate: no variant always first
        for name in order:
            pair = course.make_pair(0, softmax=False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # detect_anomaly's "enabled" warning
                with TRACK_VARIANTS[name](pair):
                    t_wall, t_cpu = time.perf_counter(), time.thread_time()
                    corrected_loop(pair, data)
                    t_cpu, t_wall = time.thread_time() - t_cpu, time.perf_counter() - t_wall
            if rep:
                cpu[name].append(t_cpu)
                wall[name].append(t_wall)
    rows = []
    for name in TRACK_VARIANTS:
        ratios = [c / p for c, p in zip(cpu[name], cpu["plain"])]
        anomaly = [c / a for c, a in zip(cpu[name], cpu["detect_anomaly()"])]
        wall_ratios = [c / p for c, p in zip(wall[name], wall["plain"])]
        rows.append(
            {
                "variant": name,
                "ms_per_step": 1e3 * _median(cpu[name]) / steps,
                "vs_plain": _median(ratios),
                "vs_anomaly": _median(anomaly),
                "vs_plain_wall": _median(wall_ratios),
                "vs_plain_min": min(ratios),
                "vs_plain_max": max(ratios),
            }
        )
    return {"steps": steps, "repetitions": reps, "rows": rows}


def profile_track(steps: int) -> str:
    """cProfile of the tracked loop: gradlab's own functions, by internal time."""
    data = course.batches(steps, seed=0)
    pair = course.make_pair(0, softmax=False)
    prof = cProfile.Profile()
    with gradlab.track():
        prof.enable()
        corrected_loop(pair, data)
        prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(r"gradlab|overrides|TorchFunctionMode", 25)
    return out.getvalue()


# ----------------------------------------------------------------------------- 2. drawing


def _mlp_loss(layers: int) -> tuple[torch.Tensor, torch.nn.Module]:
    torch.manual_seed(0)
    blocks: list[torch.nn.Module] = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(8, 8), torch.nn.Tanh()]
    model = torch.nn.Sequential(*blocks)
    loss = model(torch.randn(4, 8)).pow(2).sum()
    return loss, model


def _chain(n: int) -> torch.Tensor:
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(n):
        y = y.sigmoid()
    return y.sum()


def _time(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_draw(reps: int) -> dict:
    if not hasattr(gradlab, "draw"):
        return {"skipped": "gradlab.draw does not exist yet"}
    try:
        import torchviz
    except ImportError:
        torchviz = None
    loss, model = _mlp_loss(180)
    nodes = len(gradlab.collect(loss).nodes)
    names = {"model": model}
    params = dict(model.named_parameters())
    variants: dict[str, Callable[[], object]] = {
        "gradlab.draw(loss, names).source": lambda: gradlab.draw(loss, names).source,
    }
    if torchviz is not None:
        variants["torchviz.make_dot(loss, params).source"] = lambda: torchviz.make_dot(loss, params).source
        variants["torchviz.make_dot(..., show_saved=True).source"] = lambda: (
            torchviz.make_dot(loss, params, show_attrs=True, show_saved=True).source
        )
    times: dict[str, list[float]] = {k: [] for k in variants}
    for rep in range(reps + 1):
        for name, fn in variants.items():
            t = _time(fn)
            if rep:
                times[name].append(t)
    base = "torchviz.make_dot(loss, params).source"
    rows = []
    for name in variants:
        ratio = _median([a / b for a, b in zip(times[name], times[base])]) if base in times else None
        rows.append({"variant": name, "seconds": _median(times[name]), "vs_torchviz": ratio})
    chain = _chain(20_000)
    chain_nodes = len(gradlab.collect(chain).nodes)
    chain_times = [_time(lambda: gradlab.draw(chain).source) for _ in range(max(1, reps // 2))]
    return {
        "nodes": nodes,
        "rows": rows,
        "chain_nodes": chain_nodes,
        "chain_seconds": _median(chain_times),
        "repetitions": reps,
    }


# ----------------------------------------------------------------------------- 3. notebooks

KERNEL_ENV = {
    "PYTHONHASHSEED": "0",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    "JUPYTER_PLATFORM_DIRS": "1",
    "SOURCE_DATE_EPOCH": "0",
    "TZ": "UTC",
}
FLOOR_SOURCE = "import torch\nimport matplotlib\nimport matplotlib.pyplot\nimport gradlab"
# torch builds its first optimizer through torch._disable_dynamo, which imports torch._dynamo.
FLOOR_OPT_SOURCE = FLOOR_SOURCE + "\ntorch.optim.SGD([torch.zeros(1, requires_grad=True)])"


def _slowest_cell(nb: object) -> tuple[int, float, str] | None:
    """(index, seconds, first line) of the slowest code cell, from nbclient's timing metadata."""
    from datetime import datetime

    best = None
    for i, cell in enumerate(nb.cells):
        ex = cell.get("metadata", {}).get("execution", {})
        start, end = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
        if cell.cell_type != "code" or not start or not end:
            continue
        seconds = (
            datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
        ).total_seconds()
        if best is None or seconds > best[1]:
            best = (i, seconds, cell.source.strip().splitlines()[0][:60] if cell.source.strip() else "")
    return best


def _execute(nb: object) -> float:
    from nbclient import NotebookClient

    env = {**os.environ, **KERNEL_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    client = NotebookClient(
        nb, kernel_name="python3", timeout=600, allow_errors=False, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    t = time.perf_counter()
    client.execute(env=env, cwd=str(NOTEBOOKS), stderr=subprocess.DEVNULL)  # kernel log lines are noise here
    return time.perf_counter() - t


def bench_notebooks(reps: int) -> dict:
    try:
        import nbformat
    except ImportError:
        return {"skipped": "nbformat/nbclient are not installed"}
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        return {"skipped": "no notebooks/NN_*.ipynb yet"}
    floor_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_SOURCE)])
    floor_opt_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_OPT_SOURCE)])
    floor: list[float] = []
    floor_opt: list[float] = []
    times: dict[str, list[float]] = {p.name: [] for p in paths}
    slowest: dict[str, tuple[int, float, str] | None] = {}
    failed: dict[str, str] = {}
    for _ in range(reps):
        for i, p in enumerate(paths):  # interleaved: floor, notebook, floor + optimizer, notebook, ...
            if i % 2 == 0:
                floor.append(_execute(nbformat.from_dict(json.loads(json.dumps(floor_nb)))))
            else:
                floor_opt.append(_execute(nbformat.from_dict(json.loads(json.dumps(floor_opt_nb)))))
            if p.name in failed:
                continue
            try:
                nb = nbformat.read(p, as_version=4)
                times[p.name].append(_execute(nb))
                slowest[p.name] = _slowest_cell(nb)
            except Exception as e:
                failed[p.name] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"
    floor_s = _median(floor)
    rows = [
        {"notebook": name, "seconds": _median(t), "vs_floor": _median(t) / floor_s, "slowest_cell": slowest.get(name)}
        for name, t in times.items()
        if t
    ]
    total = sum(r["seconds"] for r in rows)
    floor_opt_s = _median(floor_opt) if floor_opt else None
    return {
        "floor_seconds": floor_s,
        "floor_optimizer_seconds": floor_opt_s,
        "rows": rows,
        "total_seconds": total,
        "suite_vs_floor": total / (floor_s * len(rows)) if rows else None,
        "suite_vs_floor_optimizer": total / (floor_opt_s * len(rows)) if rows and floor_opt_s else None,
        "failed": failed,
        "repetitions": reps,
    }


# ----------------------------------------------------------------------------- report


def _machine() -> dict:
    try:
        import psutil

        cpus = psutil.cpu_count(logical=True)
    except ImportError:
        cpus = os.cpu_count()
    return {
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gradlab": gradlab.__version__,
        "machine": platform.machine(),
        "cpus": cpus,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def _mark(value: float | None, target: float, below: bool = True) -> str:
    if value is None or value != value:
        return ""
    return "met" if (value <= target if below else value >= target) else "MISSED"


def markdown(results: dict) -> str:
    m = results["machine"]
    lines = [
        f"gradlab benchmarks, {m['date']}: Python {m['python']}, torch {m['torch']}, {m['cpus']} CPUs "
        f"({m['machine']}), load average {m['load_average']}",
        "",
    ]
    tr = results.get("track")
    if tr:
        lines += [
            f"### track() overhead ({tr['steps']} steps of the corrected loop, median of {tr['repetitions']} "
            "interleaved repetitions, CPU time of one torch thread)",
            "",
            "| variant | ms/step | vs plain | vs detect_anomaly | vs plain (wall) | target |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for r in tr["rows"]:
            target = ""
            if r["variant"].startswith("track"):
                ok = r["vs_plain"] <= TARGETS["track_vs_plain"] and r["vs_anomaly"] < 1
                target = "met" if ok else "MISSED"
            lines.append(
                f"| {r['variant']} | {r['ms_per_step']:.3f} | {r['vs_plain']:.2f}x | {r['vs_anomaly']:.2f}x "
                f"| {r['vs_plain_wall']:.2f}x | {target} |"
            )
        lines.append("")
    dr = results.get("draw")
    if dr:
        if "skipped" in dr:
            lines += ["### Drawing", "", f"skipped: {dr['skipped']}", ""]
        else:
            lines += [
                f"### Drawing (DOT source of a {dr['nodes']}-node graph, median of {dr['repetitions']})",
                "",
                "| variant | seconds | vs torchviz |",
                "|---|---:|---:|",
            ]
            for r in dr["rows"]:
                ratio = "" if r["vs_torchviz"] is None else f"{r['vs_torchviz']:.2f}x"
                lines.append(f"| {r['variant']} | {r['seconds']:.3f} | {ratio} |")
            lines += [
                "",
                f"gradlab.draw(chain).source on a {dr['chain_nodes']}-node chain: "
                f"{dr['chain_seconds']:.2f} s (target < {TARGETS['chain_seconds']:.0f} s: "
                f"{_mark(dr['chain_seconds'], TARGETS['chain_seconds'])})",
                "",
            ]
    nb = results.get("notebooks")
    if nb:
        if "skipped" in nb:
            lines += ["### Notebooks", "", f"skipped: {nb['skipped']}", ""]
        else:
            lines += [
                f"### Notebooks (fresh kernel each, median of {nb['repetitions']}; floor = start a kernel and "
                f"import torch, matplotlib, gradlab: {nb['floor_seconds']:.2f} s)",
                "",
                "| notebook | seconds | vs floor | slowest cell (last run) |",
                "|---|---:|---:|---|",
            ]
            for r in nb["rows"]:
                cell = r["slowest_cell"]
                where = f"cell {cell[0]}, {cell[1]:.2f} s: `{cell[2]}`" if cell else ""
                lines.append(f"| {r['notebook']} | {r['seconds']:.2f} | {r['vs_floor']:.2f}x | {where} |")
            if nb["suite_vs_floor"] is not None:
                lines.append(
                    f"| **suite** | {nb['total_seconds']:.2f} | **{nb['suite_vs_floor']:.2f}x** | "
                    f"target <= {TARGETS['notebooks_vs_floor']}x: "
                    f"{_mark(nb['suite_vs_floor'], TARGETS['notebooks_vs_floor'])} |"
                )
            if nb.get("suite_vs_floor_optimizer") is not None:
                floor = nb["floor_optimizer_seconds"]
                lines.append(
                    f"| suite vs floor + first optimizer ({floor:.2f} s: torch imports "
                    f"torch._dynamo there) | | {nb['suite_vs_floor_optimizer']:.2f}x | |"
                )
            for name, err in sorted(nb["failed"].items()):
                lines.append(f"\nnot timed, {name} failed: {err}")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    parser.add_argument(
        "--only", choices=["track", "draw", "notebooks"], action="append", help="run only this benchmark (repeatable)"
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the tracked loop and exit")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.profile:
        print(profile_track(500))
        return 0
    only = set(args.only or ["track", "draw", "notebooks"])
    results: dict = {"machine": _machine(), "quick": args.quick, "targets": TARGETS}
    if "track" in only:
        results["track"] = bench_track(reps=5 if args.quick else 21, steps=100 if args.quick else 200)
    if "draw" in only:
        results["draw"] = bench_draw(reps=3 if args.quick else 9)
    if "notebooks" in only:
        results["notebooks"] = bench_notebooks(reps=1 if args.quick else 3)
    print(markdown(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
