"""gradlab: make PyTorch autograd failures visible.

Inspect the tensors autograd saved for backward and their version counters,
predict whether a backward will succeed (:func:`check`), name the line that
modified a saved tensor in place (:func:`track`), see which parameters a loss
reaches and which gradients are zero (:func:`grad_report`), and check that each
loss trains what you meant it to (:func:`check_intent`).

This package is the library; the course built on it lives in :mod:`gradlab.course`
(the library never imports it). Nothing happens on import: no seeding, no display
settings, no hooks. Names are loaded on first use, so ``import gradlab`` is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"
# The name to pip install (`gradlab` on PyPI is another project); the import name stays gradlab.
_DISTRIBUTION = "torch-gradlab"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "check": "diagnosis",
    "last_diagnosis": "diagnosis",
    "Diagnosis": "diagnosis",
    "Problem": "diagnosis",
    "track": "tracker",
    "Tracker": "tracker",
    "Event": "tracker",
    "saved_tensors": "graph",
    "saved_table": "graph",
    "SavedTensor": "saved",
    "Write": "saved",
    "collect": "graph",
    "Graph": "graph",
    "GraphNode": "graph",
    "grad_report": "grads",
    "GradReport": "grads",
    "GradRow": "grads",
    "draw": "drawing",
    "GraphView": "drawing",
    "explain": "kinds",
    "Explanation": "explanation",
    "Code": "codes",
    "CODES": "codes",
    "timeline": "plots",
    "plot_grads": "plots",
    "measure_memory": "memory",
    "MemoryTrace": "memory",
    "plot_memory": "memory",
    "modules_in": "names",
    "check_intent": "intent",
    "IntentReport": "intent",
    "Mismatch": "intent",
    "Fix": "fixes",
    "Edit": "edits",
    "record_training": "trained",
    "TrainingRecord": "trained",
    "StepRecord": "trained",
    "LossRecord": "trained",
    "fix_script": "fix",
    "FixReport": "fix",
    "FixTrial": "fix",
    "set_language": "i18n",
    "language": "i18n",
    "languages": "i18n",
    "GradlabWarning": "notices",
    "SilentWriteWarning": "notices",
    "GradlabError": "notices",
    "UnusedStepWarning": "notices",
    "Writer": "writers",
    "WRITERS": "writers",
    "load_ipython_extension": "ipython",
    "unload_ipython_extension": "ipython",
}

__all__ = [
    "__version__",
    "check",
    "last_diagnosis",
    "Diagnosis",
    "Problem",
    "track",
    "Tracker",
    "Event",
    "saved_tensors",
    "saved_table",
    "SavedTensor",
    "Write",
    "collect",
    "Graph",
    "GraphNode",
    "grad_report",
    "GradReport",
    "GradRow",
    "draw",
    "GraphView",
    "explain",
    "Explanation",
    "Code",
    "CODES",
    "timeline",
    "plot_grads",
    "measure_memory",
    "MemoryTrace",
    "plot_memory",
    "modules_in",
    "check_intent",
    "IntentReport",
    "Mismatch",
    "Fix",
    "Edit",
    "record_training",
    "TrainingRecord",
    "StepRecord",
    "LossRecord",
    "fix_script",
    "FixReport",
    "FixTrial",
    "set_language",
    "language",
    "languages",
    "GradlabWarning",
    "SilentWriteWarning",
    "GradlabError",
    "UnusedStepWarning",
    "Writer",
    "WRITERS",
    "load_ipython_extension",
    "unload_ipython_extension",
]

if TYPE_CHECKING:
    from .codes import CODES, Code
    from .diagnosis import Diagnosis, Problem, check, last_diagnosis
    from .drawing import GraphView, draw
    from .edits import Edit
    from .explanation import Explanation
    from .fix import FixReport, FixTrial, fix_script
    from .fixes import Fix
    from .grads import GradReport, GradRow, grad_report
    from .graph import Graph, GraphNode, collect, saved_table, saved_tensors
    from .i18n import language, languages, set_language
    from .intent import IntentReport, Mismatch, check_intent
    from .ipython import load_ipython_extension, unload_ipython_extension
    from .kinds import explain
    from .memory import MemoryTrace, measure_memory, plot_memory
    from .names import modules_in
    from .notices import GradlabError, GradlabWarning, SilentWriteWarning, UnusedStepWarning
    from .plots import plot_grads, timeline
    from .saved import SavedTensor, Write
    from .tracker import Event, Tracker, track
    from .trained import LossRecord, StepRecord, TrainingRecord, record_training
    from .writers import WRITERS, Writer


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gradlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
