#!/usr/bin/env python
"""gradlab's benchmarks (`make bench`): ratios measured in one run, never absolute times.

0. What ``make bench`` runs (``cost.py``): the cost table of ``track()``, one row
   per training loop, guarded against ``baseline.json``; ``gradlab run`` against
   ``python`` on a correct script (wall time); peak memory of a training process.
   The parts below run with ``--only`` or ``--all``.
1. ``track()`` overhead on the course's corrected loop (the tiny loop: forward
   both, zero both, ``(loss_1 + loss_2).backward()``, step both;
   ``make_pair(softmax=False)``): ratio to the plain loop, with and without
   ``names=``, with ``verify_saved=True`` (a fingerprint of each saved tensor at
   save and at use; opt-in, no target), and ``torch.autograd.detect_anomaly()``
   for comparison.
   Targets: ``track()`` <= 1.25x plain; ``names=`` no dearer than without.
2. ``track()`` on realistic CPU training steps (``workloads.py``): a small CNN,
   a transformer encoder, an LSTM with truncated BPTT, each with SGD and Adam.
   Target: <= 1.05x plain.
3. Design: what a ``TorchFunctionMode`` (the previous design: it sees every
   torch call) costs by itself, against the in-place wrappers of today's design.
4. Memory: resident memory over 1,000 tracked steps of the tiny loop, and RSS
   against ``gradlab.measure_memory``'s exact saved bytes when losses are kept
   with ``retain_graph=True`` (the leak notebook 02 teaches) and when not.
5. Start-up: ``python -m gradlab run script.py`` against ``python -c "import torch"``
   (target: at most 0.3 s more).
6. Drawing: building ``gradlab.draw(...).source`` against ``torchviz.make_dot(...).source``
   on the same ~900-node graph (target: gradlab at most as slow), and gradlab
   alone on a 20,000-node chain (target: < 5 s).
7. The notebook suite: every ``notebooks/NN_*.ipynb`` in a fresh kernel (nbclient)
   against the floor of starting a kernel and importing torch, matplotlib and
   gradlab once per notebook (target: <= 1.3x the floor). Also reported: a second
   floor that adds the first optimizer (torch imports ``torch._dynamo`` when the
   first optimizer is built, about 1.4 s that every course notebook pays).

Method: the variants of one benchmark run interleaved (plain, tracked, anomaly,
plain, tracked, ...), so a slow phase of a noisy machine hits all of them; each
repetition gives one ratio against the plain run of the same round, and the
table shows the median ratio. Every timed run starts from fresh, seeded models
and after ``gc.collect()`` (so that a garbage collection owed by an earlier run,
or by installing the wrappers, does not land in another variant's time). The
loops run on one torch thread and are timed in CPU time of that thread
(``time.thread_time``), which other processes on the machine disturb far less
than wall time; wall-time ratios are in the JSON.

Usage::

    python benchmarks/run.py                 # everything, full repetitions
    python benchmarks/run.py --quick         # fewer repetitions
    python benchmarks/run.py --only track --only models --out bench.json
    python benchmarks/run.py --profile       # where track() spends its time (cProfile)
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NOTEBOOKS = REPO / "notebooks"
sys.path.insert(0, str(HERE))

import cost  # noqa: E402
from measure import (  # noqa: E402
    TRACK_VARIANTS,
    WARMUP_STEPS,
    anomaly,
    corrected_loop,
    interleaved,
    median,
    ratio_rows,
)

import gradlab  # noqa: E402
from gradlab import course  # noqa: E402

TARGETS = {
    "track_vs_plain": 1.25,
    "names_vs_track": 1.0,
    "models_vs_plain": 1.05,
    "startup_extra_seconds": 0.3,
    "draw_vs_torchviz": 1.0,
    "chain_seconds": 5.0,
    "notebooks_vs_floor": 1.3,
}
# A median ratio of two variants that do the same work still scatters by about
# this much on a shared machine; "no dearer" is judged within it.
SAME_COST_TOLERANCE = 0.03


# ----------------------------------------------------------------------------- 1. track()


def bench_track(reps: int, steps: int) -> dict:
    data = course.batches(steps, seed=0)

    def variant(make: Callable[[course.Pair], contextlib.AbstractContextManager]) -> Callable[[], tuple]:
        def fresh() -> tuple[Callable[[], object], contextlib.AbstractContextManager]:
            pair = course.make_pair(0, softmax=False)
            return (lambda: corrected_loop(pair, data)), make(pair)

        return fresh

    cpu, wall = interleaved({name: variant(make) for name, make in TRACK_VARIANTS.items()}, reps)
    return {"steps": steps, "repetitions": reps, "rows": ratio_rows(cpu, wall, steps)}


# ----------------------------------------------------------------------------- 2. realistic models


def bench_models(reps: int, steps: int) -> dict:
    """track(), track(names=) and anomaly mode on the workloads of ``workloads.py``."""
    import workloads

    results = []
    for name in workloads.WORKLOADS:
        for optimizer in workloads.OPTIMIZERS:

            def variant(kind: str, name: str = name, optimizer: str = optimizer) -> Callable[[], tuple]:
                def fresh() -> tuple[Callable[[], object], contextlib.AbstractContextManager, Callable[[], object]]:
                    w = workloads.build(name, optimizer, steps + WARMUP_STEPS)

                    def warmup() -> None:
                        for _ in range(WARMUP_STEPS):
                            w.step()

                    def run() -> None:
                        for _ in range(steps):
                            w.step()

                    context: contextlib.AbstractContextManager = {
                        "plain": contextlib.nullcontext,
                        "track()": gradlab.track,
                        "track(names=)": lambda: gradlab.track(names=w.names),
                        "track(verify_saved=True)": lambda: gradlab.track(verify_saved=True),
                        "detect_anomaly()": anomaly,
                    }[kind]()
                    return run, context, warmup

                return fresh

            cpu, wall = interleaved({k: variant(k) for k in TRACK_VARIANTS}, reps)
            results.append(
                {"workload": name, "optimizer": optimizer, "rows": ratio_rows(cpu, wall, steps), "steps": steps}
            )
    return {"repetitions": reps, "steps": steps, "results": results}


# ----------------------------------------------------------------------------- 3. design


class _EmptyMode(torch.overrides.TorchFunctionMode):
    """The previous design's spy with nothing in it: sees every torch call, records nothing."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


def _per_call_ns(stmt: Callable[[], object], context: Callable[[], contextlib.AbstractContextManager]) -> float:
    import timeit

    with context():
        return min(timeit.repeat(stmt, number=2_000, repeat=7)) / 2_000 * 1e9


def bench_design(reps: int, steps: int) -> dict:
    """A TorchFunctionMode (per thread, sees every call) against the in-place wrappers (process-wide)."""
    import workloads

    from gradlab import writes

    @contextlib.contextmanager
    def wrappers_idle() -> Iterator[None]:  # installed, as while another thread tracks; this thread has none
        writes.install()
        try:
            yield
        finally:
            writes.uninstall()

    from gradlab import saved

    def hooks(pack: Callable[[torch.Tensor], object], unpack: Callable[[object], object]) -> Callable[[], object]:
        return lambda: torch.autograd.graph.saved_tensors_hooks(pack, unpack)  # type: ignore[arg-type]

    from gradlab import internals, location

    detach, version = torch.Tensor.detach, internals.version

    def pack_ids(t: torch.Tensor) -> tuple:  # the least a re-check needs: the tensor (no cycle) and its version
        return (t if t.grad_fn is None else detach(t), version(t))

    def pack_line(t: torch.Tensor) -> tuple:
        return (t if t.grad_fn is None else detach(t), version(t), location.user_location())

    def unpack_ids(p: tuple) -> torch.Tensor:
        if version(p[0]) != p[1]:
            raise RuntimeError("stale")
        return p[0]  # type: ignore[no-any-return]

    contexts: dict[str, Callable[[], contextlib.AbstractContextManager]] = {
        "plain": contextlib.nullcontext,
        "empty TorchFunctionMode": _EmptyMode,
        "saved-tensor hooks that do nothing": hooks(lambda t: t, lambda t: t),  # type: ignore[dict-item]
        "hooks keeping (tensor, version) only": hooks(pack_ids, unpack_ids),  # type: ignore[dict-item]
        "... and the save's line (a tuple)": hooks(pack_line, unpack_ids),  # type: ignore[dict-item]
        "hooks packing gradlab's record (version, alias)": hooks(saved.pack_hook, saved.unpack_hook),  # type: ignore[dict-item]
        "... and the save's source line": hooks(saved.packed_with_location, saved.unpack_hook),  # type: ignore[dict-item]
        "wrappers installed, thread untracked": wrappers_idle,
        "track()": gradlab.track,
    }
    data = course.batches(steps, seed=0)

    def tiny(kind: str) -> Callable[[], tuple]:
        def fresh() -> tuple[Callable[[], object], contextlib.AbstractContextManager]:
            pair = course.make_pair(0, softmax=False)
            return (lambda: corrected_loop(pair, data)), contexts[kind]()

        return fresh

    def transformer(kind: str) -> Callable[[], tuple]:
        def fresh() -> tuple[Callable[[], object], contextlib.AbstractContextManager]:
            w = workloads.build("transformer", "Adam", 4)
            w.step()

            def run() -> None:
                for _ in range(3):
                    w.step()

            return run, contexts[kind]()

        return fresh

    cpu, wall = interleaved({k: tiny(k) for k in contexts}, reps)
    tiny_rows = ratio_rows(cpu, wall, steps)
    cpu, wall = interleaved({k: transformer(k) for k in contexts}, max(3, reps // 3))
    tf_rows = ratio_rows(cpu, wall, 3)
    x = torch.zeros(10)
    per_call = {
        "x.mul(2), plain": _per_call_ns(lambda: x.mul(2), contextlib.nullcontext),
        "x.mul(2), empty TorchFunctionMode": _per_call_ns(lambda: x.mul(2), _EmptyMode),
        "x.mul(2), under track()": _per_call_ns(lambda: x.mul(2), gradlab.track),
        "x.mul_(1), plain": _per_call_ns(lambda: x.mul_(1), contextlib.nullcontext),
        "x.mul_(1), wrappers installed, thread untracked": _per_call_ns(lambda: x.mul_(1), wrappers_idle),
        "x.mul_(1), under track()": _per_call_ns(lambda: x.mul_(1), gradlab.track),
    }
    return {"repetitions": reps, "tiny": tiny_rows, "transformer": tf_rows, "per_call_ns": per_call}


# ----------------------------------------------------------------------------- 4. memory


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bench_memory(steps: int, leak_steps: int) -> dict:
    """RSS over a long tracked run; RSS and exact saved bytes with and without kept graphs."""
    if not Path("/proc/self/statm").exists():
        return {"skipped": "no /proc/self/statm on this system"}
    data = course.batches(50, seed=1)
    pair = course.make_pair(0, softmax=False)
    samples: list[tuple[int, int]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gradlab.track(names=pair.names):
            for i in range(steps):
                x, y = data[i % len(data)]
                course.joint_step(pair, x, y)
                if i % 100 == 99:
                    gc.collect()
                    samples.append((i + 1, _rss()))
    long_run = {
        "steps": steps,
        "rss_mb": [(i, r / 2**20) for i, r in samples],
        "growth_mb": (samples[-1][1] - samples[0][1]) / 2**20,
        "growth_from": samples[0][0],
    }

    def leak(keep: bool) -> dict:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.Tanh(), torch.nn.Linear(512, 1))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(0)
        history: list[object] = []
        gc.collect()
        with gradlab.measure_memory("kept" if keep else "not kept") as trace:
            start = _rss()
            for _ in range(leak_steps):
                x = torch.randn(256, 64, generator=g)
                loss = model(x).pow(2).mean()
                opt.zero_grad()
                loss.backward(retain_graph=keep)
                opt.step()
                history.append(loss if keep else loss.item())  # kept: every graph stays alive
                trace.record()
            gc.collect()
            end = _rss()
        out = {
            "steps": leak_steps,
            "saved_mb": trace.saved_bytes[-1] / 2**20,
            "saved_growth_mb": trace.saved_growth / 2**20,
            "rss_growth_mb": (end - start) / 2**20,
            "graphs": trace.graphs[-1],
        }
        del history
        gc.collect()
        return out

    not_kept = leak(False)  # first: RSS freed by the kept run would look like negative growth here
    return {"long_run": long_run, "kept": leak(True), "not_kept": not_kept}


# ----------------------------------------------------------------------------- 5. start-up


def bench_startup(reps: int) -> dict:
    """Wall time of ``python -m gradlab run script.py`` (a script that imports torch) vs ``import torch``."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.py"
        script.write_text("import torch\n", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        commands = {
            "python -c 'import torch'": [sys.executable, "-c", "import torch"],
            "python -m gradlab run script.py": [sys.executable, "-m", "gradlab", "run", str(script)],
            "python -m gradlab run --explain-only script.py": [
                sys.executable,
                "-m",
                "gradlab",
                "run",
                "--explain-only",
                str(script),
            ],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for rep in range(reps + 1):
            for name, cmd in commands.items():
                t = time.perf_counter()
                subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
                if rep:
                    times[name].append(time.perf_counter() - t)
    base = "python -c 'import torch'"
    rows = []
    for name, t in times.items():
        extra = [a - b for a, b in zip(t, times[base])]
        rows.append({"command": name, "seconds": median(t), "extra_seconds": median(extra)})
    return {"repetitions": reps, "rows": rows}


def profile_track(steps: int) -> str:
    """Where ``track()`` spends its time on the tiny loop: a breakdown, then a cProfile."""
    data = course.batches(steps, seed=0)
    out = io.StringIO()
    out.write(cost.breakdown_table(cost.breakdown_row("tiny", "Adam")) + "\n\n")
    pair = course.make_pair(0, softmax=False)
    prof = cProfile.Profile()
    with gradlab.track():
        prof.enable()
        corrected_loop(pair, data)
        prof.disable()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(r"gradlab|overrides|TorchFunctionMode", 25)
    return out.getvalue()


# ----------------------------------------------------------------------------- 6. drawing


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
        ratio = median([a / b for a, b in zip(times[name], times[base])]) if base in times else None
        rows.append({"variant": name, "seconds": median(times[name]), "vs_torchviz": ratio})
    chain = _chain(20_000)
    chain_nodes = len(gradlab.collect(chain).nodes)
    chain_times = [_time(lambda: gradlab.draw(chain).source) for _ in range(max(1, reps // 2))]
    return {
        "nodes": nodes,
        "rows": rows,
        "chain_nodes": chain_nodes,
        "chain_seconds": median(chain_times),
        "repetitions": reps,
    }


# ----------------------------------------------------------------------------- 7. notebooks

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
    floor_s = median(floor)
    rows = [
        {"notebook": name, "seconds": median(t), "vs_floor": median(t) / floor_s, "slowest_cell": slowest.get(name)}
        for name, t in times.items()
        if t
    ]
    total = sum(r["seconds"] for r in rows)
    floor_opt_s = median(floor_opt) if floor_opt else None
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


def _track_target(row: dict, target: float) -> str:
    """``met``/``MISSED`` for a tracked row: under ``target`` x plain; names= no dearer than track()."""
    if not row["variant"].startswith("track") or "verify_saved" in row["variant"]:
        return ""  # verify_saved=True is opt-in: measured, no target
    ok = row["vs_plain"] <= target
    if row["variant"] == "track(names=)":
        ok = ok and row.get("vs_track", 1.0) <= TARGETS["names_vs_track"] + SAME_COST_TOLERANCE
    return "met" if ok else "MISSED"


def markdown(results: dict) -> str:
    m = results["machine"]
    lines = [
        f"gradlab benchmarks, {m['date']}: Python {m['python']}, torch {m['torch']}, {m['cpus']} CPUs "
        f"({m['machine']}), load average {m['load_average']} before, {m.get('load_average_after')} after",
        "",
    ]
    co = results.get("cost")
    if co:
        title = "### The cost table (`benchmarks/cost.py`)"
        if co.get("slowdown_us"):
            title += f", every save slowed by {co['slowdown_us']} us (a check of the guard)"
        lines += [title, "", cost.cost_table(co["rows"], co.get("verdicts")), ""]
        for v in co.get("verdicts", []):
            if "vs_baseline_code" in v:
                lines.append(
                    f"- {v['row']}: {v['ratio']:.3f}x over its line {v['line']:.3f}x (baseline {v['baseline']:.3f}x); "
                    f"measured again beside the baseline commit's gradlab ({co['baseline_commit'][:10]}): "
                    f"{v['again']:.3f}x plain, {v['vs_baseline_code']:.3f}x the baseline's track(): {v['status']}"
                )
            elif "again" in v:
                lines.append(
                    f"- {v['row']}: {v['ratio']:.3f}x over its line {v['line']:.3f}x (baseline {v['baseline']:.3f}x); "
                    f"measured again {v['again']:.3f}x, both runs' rounds {v['pooled']:.3f}x: {v['status']}"
                )
        for name, found in co.get("breakdowns", {}).items():
            lines += ["", cost.breakdown_table(found, name)]
        lines.append("")
    ru = results.get("run")
    if ru:
        lines += [
            f"### `gradlab run` on a correct script (wall time, median of {ru['repetitions']} interleaved runs, "
            f"{ru['steps']} CNN steps)",
            "",
            "| command | seconds |",
            "|---|---:|",
        ]
        lines += [f"| `{k}` | {v:.2f} |" for k, v in ru["seconds"].items()]
        lines += [
            "",
            f"ratio {ru['ratio']:.3f}x (rounds {ru['ratio_min']:.3f} to {ru['ratio_max']:.3f}), target <= "
            f"{cost.TARGETS['run_wall']}x: {_mark(ru['ratio'], cost.TARGETS['run_wall'])}; same output: {ru['same_output']}",
            "",
        ]
    pk = results.get("peak")
    if pk and "rows" in pk:
        lines += [
            f"### Peak memory (a fresh process, {pk['steps']} steps, median of {pk['repetitions']})",
            "",
            "| workload | plain peak RSS | `track()` | `detect_anomaly()` | growth plain | growth `track()` | target |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in pk["rows"]:
            lines.append(
                f"| {r['workload']} {r['optimizer']} | {r['peak_mb']['plain']:.0f} MB | {r['peak_vs_plain']['track()']:.3f}x "
                f"| {r['peak_vs_plain']['detect_anomaly()']:.3f}x | {r['growth_mb']['plain']:.0f} MB "
                f"| {r['growth_mb']['track()']:.0f} MB | {_mark(r['peak_vs_plain']['track()'], cost.TARGETS['peak_memory'])} |"
            )
        lines.append("")
    tr = results.get("track")
    if tr:
        lines += [
            f"### track() on the tiny loop ({tr['steps']} steps of the corrected loop, median of {tr['repetitions']} "
            "interleaved repetitions, CPU time of one torch thread)",
            "",
            "| variant | ms/step | vs plain | vs track() | vs detect_anomaly | vs plain (wall) | target |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in tr["rows"]:
            lines.append(
                f"| {r['variant']} | {r['ms_per_step']:.3f} | {r['vs_plain']:.2f}x | {r['vs_track']:.2f}x "
                f"| {r['vs_anomaly']:.2f}x | {r['vs_plain_wall']:.2f}x | {_track_target(r, TARGETS['track_vs_plain'])} |"
            )
        lines.append("")
    mo = results.get("models")
    if mo:
        lines += [
            f"### track() on realistic CPU training steps ({mo['steps']} steps per run, median of "
            f"{mo['repetitions']} interleaved repetitions, CPU time of one torch thread)",
            "",
            "| workload | optimizer | ms/step plain | track() | track(names=) | verify_saved=True | detect_anomaly() "
            "| target |",
            "|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for res in mo["results"]:
            rows = {r["variant"]: r for r in res["rows"]}
            marks = [_track_target(rows[v], TARGETS["models_vs_plain"]) for v in ("track()", "track(names=)")]
            lines.append(
                f"| {res['workload']} | {res['optimizer']} | {rows['plain']['ms_per_step']:.1f} "
                f"| {rows['track()']['vs_plain']:.3f}x | {rows['track(names=)']['vs_plain']:.3f}x "
                f"| {rows['track(verify_saved=True)']['vs_plain']:.3f}x "
                f"| {rows['detect_anomaly()']['vs_plain']:.2f}x | "
                + ("met" if all(m == "met" for m in marks) else "MISSED")
                + " |"
            )
        lines.append("")
    de = results.get("design")
    if de:
        lines += [
            f"### Design: a TorchFunctionMode against the in-place wrappers (median of {de['repetitions']} rounds)",
            "",
            "| variant | tiny loop vs plain | transformer (Adam) vs plain |",
            "|---|---:|---:|",
        ]
        tf = {r["variant"]: r for r in de["transformer"]}
        for r in de["tiny"]:
            lines.append(f"| {r['variant']} | {r['vs_plain']:.2f}x | {tf[r['variant']]['vs_plain']:.3f}x |")
        lines += ["", "| one torch call | ns |", "|---|---:|"]
        lines += [f"| {k} | {v:,.0f} |" for k, v in de["per_call_ns"].items()]
        lines.append("")
    me = results.get("memory")
    if me:
        if "skipped" in me:
            lines += ["### Memory", "", f"skipped: {me['skipped']}", ""]
        else:
            lr = me["long_run"]
            lines += [
                "### Memory",
                "",
                f"- {lr['steps']} steps of the tiny loop under `track(names=)`: resident memory "
                f"{lr['rss_mb'][0][1]:.1f} MB after step {lr['growth_from']}, {lr['rss_mb'][-1][1]:.1f} MB after step "
                f"{lr['steps']}: growth {lr['growth_mb']:+.2f} MB.",
            ]
            for key, label in (("kept", "losses kept, `retain_graph=True`"), ("not_kept", "`loss.item()` kept")):
                m = me[key]
                lines.append(
                    f"- {m['steps']} steps, {label}: `measure_memory` {m['graphs']} graph(s) alive holding "
                    f"{m['saved_mb']:.1f} MB of saved tensors (growth {m['saved_growth_mb']:+.1f} MB); "
                    f"RSS growth {m['rss_growth_mb']:+.1f} MB."
                )
            lines.append("")
    su = results.get("startup")
    if su:
        lines += [
            f"### Start-up (wall time, median of {su['repetitions']} interleaved runs)",
            "",
            "| command | seconds | more than `import torch` | target |",
            "|---|---:|---:|---|",
        ]
        for r in su["rows"]:
            target = (
                _mark(r["extra_seconds"], TARGETS["startup_extra_seconds"])
                if "gradlab run script" in r["command"]
                else ""
            )
            lines.append(f"| `{r['command']}` | {r['seconds']:.2f} | {r['extra_seconds']:+.2f} s | {target} |")
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


PARTS = ["cost", "run", "peak", "track", "models", "design", "memory", "startup", "draw", "notebooks"]
GUARDED = ["cost", "run", "peak"]  # what `make bench` runs: the cost table and its guard


def bench_cost(reps: int, rows: tuple[tuple[str, str], ...], slowdown_us: float, guard: bool, breakdowns: bool) -> dict:
    """The cost table: each row interleaved; the guard against ``baseline.json``; each row's breakdown."""
    results = []
    for workload, optimizer in rows:
        row_reps = reps if workload in ("tiny", "cnn", "lstm", "transformer") else max(5, (2 * reps) // 3)
        results.append(cost.measure_row(workload, optimizer, row_reps, slowdown_us))
        r = cost._track(results[-1])
        print(f"  {cost.key(workload, optimizer)}: track() {r['vs_plain']:.3f}x", file=sys.stderr, flush=True)
    out: dict = {"rows": results, "slowdown_us": slowdown_us}
    if guard:
        import tempfile

        baseline = cost.load_baseline()
        commit = cost.baseline_commit()
        with tempfile.TemporaryDirectory() as tmp:
            package = cost.baseline_gradlab(commit, Path(tmp)) if commit else None
            if commit and package is None:
                print(
                    f"  the baseline commit {commit[:10]} is not in this clone: re-measuring instead", file=sys.stderr
                )
            out["baseline_commit"] = commit if package is not None else None
            out["verdicts"] = cost.guard(
                results,
                baseline,
                lambda r: cost.measure_row(r["workload"], r["optimizer"], r["repetitions"], slowdown_us),
                (
                    (lambda r: cost.measure_row(r["workload"], r["optimizer"], r["repetitions"], slowdown_us, package))
                    if package is not None
                    else None
                ),
            )
    if breakdowns:
        out["breakdowns"] = {cost.key(w, o): cost.breakdown_row(w, o, rounds=3 if w != "tiny" else 5) for w, o in rows}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    parser.add_argument(
        "--only",
        choices=PARTS,
        action="append",
        help="run only this benchmark (repeatable); default: " + ", ".join(GUARDED),
    )
    parser.add_argument("--all", action="store_true", help="run every benchmark")
    parser.add_argument("--rows", help="only these rows of the cost table, e.g. 'tiny Adam,cnn SGD'")
    parser.add_argument("--guard", action="store_true", help="fail when a row of the cost table got >5%% worse")
    parser.add_argument("--update-baseline", action="store_true", help="accept this run's ratios as the baseline")
    parser.add_argument("--readme", type=Path, help="write the cost table into this README (between its markers)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the per-step breakdown of each row")
    parser.add_argument("--slowdown", type=float, default=0.0, help="add US microseconds to every save (a check)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the tracked loop and exit")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.profile:
        print(profile_track(500))
        return 0
    only = set(PARTS if args.all else (args.only or GUARDED))
    results: dict = {"machine": _machine(), "quick": args.quick, "targets": TARGETS}
    q = args.quick
    rows = cost.ROWS
    if args.rows:
        wanted = {r.strip() for r in args.rows.split(",")}
        rows = tuple(r for r in cost.ROWS if cost.key(*r) in wanted)
    if "cost" in only:
        results["cost"] = bench_cost(
            reps=5 if q else 15,
            rows=rows,
            slowdown_us=args.slowdown,
            guard=args.guard,
            breakdowns=not args.no_breakdown,
        )
    if "run" in only:
        results["run"] = cost.bench_run_wall(reps=2 if q else 5)
    if "peak" in only:
        results["peak"] = cost.bench_peak_memory(
            reps=1 if q else 3, rows=(("cnn", "Adam"), ("resnet18", "SGD"), ("lm6", "Adam"))
        )
    if "track" in only:
        results["track"] = bench_track(reps=7 if q else 21, steps=100 if q else 200)
    if "models" in only:
        results["models"] = bench_models(reps=3 if q else 15, steps=3)
    if "design" in only:
        results["design"] = bench_design(reps=5 if q else 15, steps=100)
    if "memory" in only:
        results["memory"] = bench_memory(steps=1_000, leak_steps=50 if q else 200)
    if "startup" in only:
        results["startup"] = bench_startup(reps=3 if q else 9)
    if "draw" in only:
        results["draw"] = bench_draw(reps=3 if q else 9)
    if "notebooks" in only:
        results["notebooks"] = bench_notebooks(reps=1 if q else 3)
    results["machine"]["load_average_after"] = (
        [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    )
    print(markdown(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    co = results.get("cost")
    if co and args.update_baseline:
        cost.save_baseline(co["rows"], machine=results["machine"])
        print(f"baseline written: {cost.BASELINE.relative_to(REPO)}")
    if co and args.readme and not args.rows and not args.slowdown:
        m = results["machine"]
        note = (
            f"Measured {m['date']} by `make bench` (Python {m['python']}, torch {m['torch']}, {m['cpus']} CPUs, "
            f"load average {m['load_average'][0]} before, {m['load_average_after'][0]} after); one torch thread, "
            f"CPU time, median of interleaved rounds; spread = the middle half of the rounds' ratios."
        )
        if not cost.write_readme(args.readme, cost.cost_table(co["rows"], co.get("verdicts")), note):
            print(f"{args.readme}: no cost-table markers, not written", file=sys.stderr)
    worse = [v for v in (co or {}).get("verdicts", []) if v["status"].startswith("WORSE")]
    if worse:
        print("bench guard: " + ", ".join(f"{v['row']}: {v['status']}" for v in worse))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
