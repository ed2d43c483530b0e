"""gradlab: make PyTorch autograd failures visible.

Inspect the tensors autograd saved for backward and their version counters,
predict whether a backward will succeed (:func:`check`), name the line that
modified a saved tensor in place (:func:`track`), and see which parameters a
loss reaches and which gradients are zero (:func:`grad_report`).

Nothing happens on import: no seeding, no display settings, no hooks.
"""

__version__ = "0.1.0"

from .check import Diagnosis, Problem, check
from .draw import GraphView, draw
from .environment import EnvironmentReport, environment, setup
from .explain import Explanation, explain
from .examples import ORDERS, Net, Pair, TrainResult, batches, joint_step, make_pair, train
from .exercise import Verdict, saved_table, verify
from .grads import GradReport, GradRow, grad_report
from .memory import MemoryTrace, measure_memory, plot_memory
from .graph import Graph, GraphNode, collect
from .names import modules_in
from .plots import plot_grads, plot_losses, plot_predictions, timeline
from .playground import PRESETS, STEPS, Outcome, Playground, Preset, outcome_table, playground, run_order
from .quiz import QUESTIONS, Quiz, QuizWidget, quiz
from .saved import SavedTensor, Write
from .track import Event, Tracker, track


__all__ = [
    "__version__",
    "ORDERS",
    "Diagnosis",
    "EnvironmentReport",
    "Explanation",
    "Net",
    "Pair",
    "TrainResult",
    "Verdict",
    "saved_table",
    "verify",
    "batches",
    "joint_step",
    "make_pair",
    "train",
    "Event",
    "GradReport",
    "GradRow",
    "Graph",
    "GraphView",
    "draw",
    "plot_grads",
    "plot_losses",
    "plot_predictions",
    "timeline",
    "GraphNode",
    "Problem",
    "SavedTensor",
    "Tracker",
    "Write",
    "check",
    "collect",
    "environment",
    "explain",
    "grad_report",
    "load_ipython_extension",
    "modules_in",
    "saved_tensors",
    "setup",
    "track",
    "unload_ipython_extension",
    "PRESETS",
    "STEPS",
    "Outcome",
    "Playground",
    "Preset",
    "outcome_table",
    "playground",
    "run_order",
    "QUESTIONS",
    "Quiz",
    "QuizWidget",
    "quiz",
    "MemoryTrace",
    "measure_memory",
    "plot_memory",
]


def saved_tensors(output: object, names: object = None) -> list[SavedTensor]:
    """Every tensor the graph of ``output`` saved for backward, with versions and status.

    Example::

        >>> import torch
        >>> x = torch.ones(3, requires_grad=True)
        >>> [(s.node, s.attribute, s.status) for s in saved_tensors(x.sigmoid().sum())]
        [('SigmoidBackward0', 'result', 'ok')]
    """
    from .track import active_tracker

    tracker = active_tracker()
    namer = tracker.namer(names) if tracker is not None else names
    return list(collect(output, namer, tracker=tracker).saved)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext gradlab``: track every cell and explain autograd errors under their traceback."""
    from .ipython import load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext gradlab``: stop tracking and restore IPython's error display."""
    from .ipython import unload

    unload(ipython)
