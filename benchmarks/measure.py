"""How the benchmarks measure: interleaved rounds, CPU time of one thread, ratios to plain, medians.

Shared by ``run.py`` (every benchmark) and ``cost.py`` (the cost table and its guard).
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
import warnings
from collections.abc import Callable

import torch

import gradlab
from gradlab import course

__all__ = ["TRACK_VARIANTS", "WARMUP_STEPS", "anomaly", "corrected_loop", "interleaved", "median", "ratio_rows"]

# Steps run inside the context before the clock starts: the optimizer's state
# exists, and a fresh tracker has done its all-zero-gradient checks of steps 1, 2
# and 4 (Steps.unused in gradlab/steps.py: one reduction per parameter at steps
# 1, 2, 4, 8, ...), so the figure is the steady state of a long run.
WARMUP_STEPS = 4


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def corrected_loop(pair: course.Pair, data: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    for x, y in data:
        course.joint_step(pair, x, y)


def anomaly() -> contextlib.AbstractContextManager:
    return torch.autograd.detect_anomaly(check_nan=False)


TRACK_VARIANTS: dict[str, Callable[[course.Pair], contextlib.AbstractContextManager]] = {
    "plain": lambda pair: contextlib.nullcontext(),
    "track()": lambda pair: gradlab.track(),
    "track(names=)": lambda pair: gradlab.track(names=pair.names),
    "track(verify_saved=True)": lambda pair: gradlab.track(verify_saved=True),
    "detect_anomaly()": lambda pair: anomaly(),
}


def interleaved(
    variants: dict[str, Callable[[], tuple[Callable[[], object], contextlib.AbstractContextManager]]],
    reps: int,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """CPU and wall seconds of each variant, over ``reps`` interleaved rounds (round 0 discarded).

    A variant is a zero-argument factory returning ``(run, context)`` or
    ``(run, context, warmup)``: fresh state for one timed run, so every run starts
    from the same parameters; ``warmup`` runs inside the context, off the clock.
    """
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    wall: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for rep in range(reps + 1):  # round 0 warms up every code path and is discarded
        order = names[rep % len(names) :] + names[: rep % len(names)]  # rotate: no variant always first
        for name in order:
            run, context, *warmup = variants[name]()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # detect_anomaly's "enabled" warning, UnusedStepWarning
                with context:
                    for warm in warmup:
                        warm()
                    gc.collect()
                    t_wall, t_cpu = time.perf_counter(), time.thread_time()
                    run()
                    t_cpu, t_wall = time.thread_time() - t_cpu, time.perf_counter() - t_wall
            if rep:
                cpu[name].append(t_cpu)
                wall[name].append(t_wall)
    return cpu, wall


def ratio_rows(cpu: dict[str, list[float]], wall: dict[str, list[float]], steps: int) -> list[dict]:
    rows = []
    for name in cpu:
        ratios = [c / p for c, p in zip(cpu[name], cpu["plain"])]
        row = {
            "variant": name,
            "ms_per_step": 1e3 * median(cpu[name]) / steps,
            "vs_plain": median(ratios),
            "vs_plain_wall": median([c / p for c, p in zip(wall[name], wall["plain"])]),
            "vs_plain_min": min(ratios),
            "vs_plain_max": max(ratios),
        }
        if "detect_anomaly()" in cpu:
            row["vs_anomaly"] = median([c / a for c, a in zip(cpu[name], cpu["detect_anomaly()"])])
        if "track()" in cpu:
            row["vs_track"] = median([c / t for c, t in zip(cpu[name], cpu["track()"])])
        rows.append(row)
    return rows
