#!/usr/bin/env python
"""What gradlab's Lightning callback costs (`make bench`, `make bench-frameworks`): ratios in one interleaved run.

A tiny LightningModule (``Linear(32, 64)``, ``Tanh``, ``Linear(64, 1)``, SGD with momentum, batches of 16)
is fitted for ``STEPS`` training steps in three variants:

* ``plain``: no gradlab;
* ``all steps``: ``TrackCallback(steps=None)``, every step under ``gradlab.track()``;
* ``first step``: ``TrackCallback(steps=1)`` (the default), step 1 tracked and checked with
  ``check_intent``, the rest untracked.

Only the steady state is timed: a timing callback (the same in every variant) reads
``time.thread_time()`` at the start of step ``WARMUP + 1`` and at the end of the last step, so
Lightning's own set-up and the first steps (the callback's tracker, its intent check) are not in
the ratio. One round fits every variant once, the order rotating between rounds; each round gives
the ratio of a variant to the plain fit of the same round, and the table shows the median (and the
range) over the rounds. Round 0 is a warm-up and is discarded. One torch thread; the CPU time of
that thread, which other processes on a shared machine disturb less than wall time.

Usage::

    python benchmarks/frameworks.py            # 9 rounds
    python benchmarks/frameworks.py --quick    # 4 rounds
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import warnings
from typing import Any

import torch
from torch import nn

STEPS = 60
WARMUP = 10


def _lightning() -> Any:
    try:
        import lightning as L
    except ImportError:
        print('benchmarks/frameworks.py needs Lightning: pip install "torch-gradlab[frameworks]"')
        sys.exit(0)
    return L


def _module(L: Any) -> Any:
    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)

    return Tiny


def _timer(L: Any) -> Any:
    class Timer(L.Callback):
        """CPU time of this thread from the start of step WARMUP + 1 to the end of the last step."""

        def __init__(self) -> None:
            self.start = self.end = 0.0

        def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
            if batch_idx == WARMUP:
                gc.collect()
                self.start = time.thread_time()

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            if batch_idx == STEPS - 1:
                self.end = time.thread_time()

    return Timer


def fit(L: Any, variant: str) -> float:
    """Seconds of CPU time for the timed steps of one fit."""
    from gradlab.integrations.lightning import TrackCallback

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(STEPS * 16, 32), torch.randn(STEPS * 16, 1))
    timer = _timer(L)()
    callbacks = [timer]
    if variant == "all steps":
        callbacks.insert(0, TrackCallback(steps=None))
    elif variant == "first step":
        callbacks.insert(0, TrackCallback(steps=1))
    trainer = L.Trainer(
        max_steps=STEPS,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
    )
    trainer.fit(_module(L)(), torch.utils.data.DataLoader(data, batch_size=16))
    return timer.end - timer.start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 rounds instead of 9")
    args = parser.parse_args(argv)
    L = _lightning()
    import logging

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    variants = ["plain", "all steps", "first step"]
    rounds = 4 if args.quick else 9
    load = os.getloadavg()[0]
    ratios: dict[str, list[float]] = {v: [] for v in variants[1:]}
    plain_times: list[float] = []
    for r in range(rounds + 1):
        order = variants[r % 3 :] + variants[: r % 3]
        times = {v: fit(L, v) for v in order}
        if r == 0:
            continue  # warm-up
        plain_times.append(times["plain"])
        for v in variants[1:]:
            ratios[v].append(times[v] / times["plain"])
    step_ms = statistics.median(plain_times) / (STEPS - WARMUP) * 1000
    print(f"# gradlab's Lightning callback: {STEPS - WARMUP} steady steps of a tiny model, {rounds} rounds")
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}; plain step {step_ms:.2f} ms (CPU, one thread)\n")
    print("| variant | median ratio to plain | range |")
    print("|---|---:|---|")
    for v in variants[1:]:
        xs = ratios[v]
        print(
            f"| `TrackCallback(steps={'None' if v == 'all steps' else '1'})`: {v} | "
            f"{statistics.median(xs):.2f}x | {min(xs):.2f} to {max(xs):.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
