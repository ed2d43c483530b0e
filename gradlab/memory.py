"""Does a training loop pile up autograd graphs? Measure it, step by step.

``measure_memory()`` records, after every training step, how many steps'
graphs still hold saved tensors, how many bytes those saved tensors keep
alive, and the process's resident memory (RSS). ``plot_memory`` draws the
records; it never measures.

Example::

    >>> import torch
    >>> w = torch.ones(3, requires_grad=True)
    >>> with measure_memory("retain_graph=True, nothing kept") as trace:
    ...     for _ in range(3):
    ...         loss = (w * w).sum()
    ...         loss.backward(retain_graph=True)
    ...         trace.record()
    >>> trace.graphs
    [1, 1, 1]
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from .i18n import _, _t
from .names import storage_key
from .saved import Packed, unpack_hook

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MemoryTrace", "measure_memory", "plot_memory", "rss_bytes"]

MB = 1e6


def rss_bytes() -> int | None:
    """The resident memory of this process in bytes (psutil, else ``/proc``), or None if unknown."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.Process().memory_info().rss)
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class MemoryTrace:
    """One sample per :meth:`record` call: what the autograd graphs still hold after that step.

    ``graphs[i]`` is how many steps (up to and including step ``i``) still have
    saved tensors alive; ``saved_tensors[i]`` and ``saved_bytes[i]`` count those
    tensors and the distinct storage bytes they keep alive (parameters saved by
    the graph count once); ``rss[i]`` is the process's resident memory in bytes
    (``None`` where it cannot be read). The first three are deterministic for a
    seeded loop; RSS varies from run to run.
    """

    label: str
    graphs: list[int] = field(default_factory=list)
    saved_tensors: list[int] = field(default_factory=list)
    saved_bytes: list[int] = field(default_factory=list)
    rss: list[int | None] = field(default_factory=list)
    _step: int = field(default=0, init=False, repr=False)
    _per_step: dict[int, int] = field(default_factory=dict, init=False, repr=False)  # step -> live saved tensors
    _storages: dict[int, list[int]] = field(default_factory=dict, init=False, repr=False)  # key -> [count, nbytes]
    _live: int = field(default=0, init=False, repr=False)

    # -- measuring -------------------------------------------------------------
    def _pack(self, t: torch.Tensor) -> Packed:
        p = Packed(t)
        step, key = self._step, storage_key(t)
        nbytes = t.untyped_storage().nbytes() if key is not None else 0
        self._per_step[step] = self._per_step.get(step, 0) + 1
        self._live += 1
        if key is not None:
            entry = self._storages.setdefault(key, [0, nbytes])
            entry[0] += 1
        weakref.finalize(p, self._release, step, key).atexit = False
        return p

    def _release(self, step: int, key: int | None) -> None:
        self._live -= 1
        left = self._per_step[step] - 1
        if left:
            self._per_step[step] = left
        else:
            del self._per_step[step]
        if key is not None:
            entry = self._storages[key]
            entry[0] -= 1
            if not entry[0]:
                del self._storages[key]

    def record(self) -> None:
        """Take one sample; call it once at the end of every training step."""
        self.graphs.append(len(self._per_step))
        self.saved_tensors.append(self._live)
        self.saved_bytes.append(sum(nbytes for _, nbytes in self._storages.values()))
        self.rss.append(rss_bytes())
        self._step += 1

    # -- reading ---------------------------------------------------------------
    @property
    def steps(self) -> int:
        return len(self.graphs)

    @property
    def saved_growth(self) -> int:
        """Saved-tensor bytes after the last step minus after the first."""
        return self.saved_bytes[-1] - self.saved_bytes[0] if self.saved_bytes else 0

    @property
    def rss_growth(self) -> int | None:
        """RSS after the last step minus after the first (varies from run to run)."""
        if not self.rss or self.rss[0] is None or self.rss[-1] is None:
            return None
        return self.rss[-1] - self.rss[0]

    @property
    def graphs_per_step(self) -> float:
        """How many graphs pile up per step, on average (0 when nothing piles up)."""
        if self.steps < 2:
            return 0.0
        return (self.graphs[-1] - self.graphs[0]) / (self.steps - 1)

    def __str__(self) -> str:
        if not self.steps:
            return _t("{label}: no steps recorded", label=self.label)
        first, last = 0, self.steps - 1
        rate = self.graphs_per_step
        trend = _("flat") if rate <= 0 else _t("+{rate} graph per step", rate=f"{rate:.3g}")
        return _t(
            "{label}: graphs holding saved tensors {first} -> {last} ({trend}); "
            "saved tensors {first_mb} MB -> {last_mb} MB after {steps} steps",
            label=self.label,
            first=self.graphs[first],
            last=self.graphs[last],
            trend=trend,
            first_mb=f"{self.saved_bytes[first] / MB:.1f}",
            last_mb=f"{self.saved_bytes[last] / MB:.1f}",
            steps=self.steps,
        )

    def __repr__(self) -> str:
        return f"MemoryTrace({self.label!r}, steps={self.steps}, graphs={self.graphs[-1] if self.steps else 0})"


# NOTE [Counting saved tensors with pack hooks]
# A graph's memory is what its nodes saved for backward. measure_memory() packs
# every saved tensor into gradlab's Packed record (a detached alias that keeps
# the version check, see NOTE [Saved-tensor hooks and the version check]) and
# watches it with weakref.finalize: the record dies exactly when autograd
# releases the saved tensor, either because backward() ran without
# retain_graph, or because the last reference to the graph (a loss, an output,
# a running total) went away. Nothing is sampled by walking the heap, so the
# counts are exact and the same on every run.
@contextmanager
def measure_memory(label: str = "") -> Iterator[MemoryTrace]:
    """Count, after each step, the graphs and saved-tensor bytes that are still alive.

    Call ``trace.record()`` at the end of every iteration. Tensors saved inside
    the block are tracked until autograd frees them, even after the block ends.
    Inside :func:`gradlab.track` this block's hooks take over saved tensors, so
    track's reports see no saves made here.

    Example::

        >>> lin = torch.nn.Linear(2, 1)
        >>> history = []
        >>> with measure_memory("losses kept, retain_graph=True") as trace:
        ...     for _ in range(3):
        ...         loss = lin(torch.ones(4, 2)).sum()
        ...         loss.backward(retain_graph=True)
        ...         history.append(loss)
        ...         trace.record()
        >>> trace.graphs
        [1, 2, 3]
    """
    trace = MemoryTrace(label)
    with torch.autograd.graph.saved_tensors_hooks(trace._pack, unpack_hook):
        yield trace


def plot_memory(traces: Sequence[MemoryTrace] | dict[str, MemoryTrace]) -> Figure:
    """Saved-tensor megabytes and RSS growth per step, one line per trace; returns the Figure.

    Draws only what the traces recorded. The figure is closed in pyplot's registry
    before it is returned, so a notebook shows it once, as the cell's value.

    Example::

        >>> with measure_memory("nothing kept") as trace:
        ...     trace.record()
        >>> len(plot_memory([trace]).axes)
        2
    """
    from .plots import line_style, needs_matplotlib, picture_fonts

    items = list(traces.values()) if isinstance(traces, dict) else list(traces)
    if not items or not all(isinstance(t, MemoryTrace) for t in items):
        raise TypeError("plot_memory() needs MemoryTrace objects from gradlab.measure_memory()")
    needs_matplotlib("plot_memory()")
    import matplotlib.pyplot as plt

    with picture_fonts():
        fig, (ax_saved, ax_rss) = plt.subplots(1, 2, figsize=(10, 3.6))
        for t in items:
            steps = range(1, t.steps + 1)
            style = line_style(items.index(t), t.steps)
            ax_saved.plot(steps, [b / MB for b in t.saved_bytes], label=t.label, **style)
            if t.rss and t.rss[0] is not None:
                rss = [(r - t.rss[0]) / MB if r is not None else float("nan") for r in t.rss]
                ax_rss.plot(steps, rss, label=t.label, **style)
        ax_saved.set(title=_("bytes still saved by autograd graphs"), xlabel=_("training step"), ylabel="MB")
        ax_rss.set(title=_("process memory (RSS) since step 1"), xlabel=_("training step"), ylabel="MB")
        ax_saved.legend(fontsize="small")
        fig.tight_layout()
    plt.close(fig)
    return fig
