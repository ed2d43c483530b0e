"""The gradlab course: the two chained networks, their training orders, and the course's tools.

Everything a notebook of the course uses beyond the :mod:`gradlab` library lives
here: the networks and data (:class:`Net`, :func:`make_pair`, :func:`batches`),
the training orders (:data:`ORDERS`, :func:`train`), the playground and quiz
widgets, exercise checks (:func:`verify`), the environment check and
:func:`setup`, and the course's plots. It uses the library like any client does;
the library never imports it. ``pip install gradlab[course]`` adds what it needs
(matplotlib, ipywidgets, JupyterLab).

Example::

    >>> from gradlab import course
    >>> course.train("original", steps=1).error.startswith("Trying to backward")
    True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Net": "networks",
    "Pair": "networks",
    "make_pair": "networks",
    "batches": "networks",
    "TARGETS": "networks",
    "ORDERS": "training",
    "TrainResult": "training",
    "joint_step": "training",
    "train": "training",
    "run_iterations": "training",
    "compare_parameters": "training",
    "STEPS": "iteration",
    "PRESETS": "iteration",
    "Preset": "iteration",
    "Outcome": "iteration",
    "run_order": "iteration",
    "outcome_table": "iteration",
    "Playground": "widgets",
    "playground": "widgets",
    "QuizWidget": "widgets",
    "quiz": "widgets",
    "QUESTIONS": "questions",
    "Quiz": "questions",
    "Verdict": "exercise",
    "verify": "exercise",
    "check_running_total": "exercise",
    "check_one_batch": "exercise",
    "check_guess": "exercise",
    "check_repaired_iteration": "repair",
    "check_writes_counter": "versions",
    "check_saved_hooks": "versions",
    "check_error_kind": "exercise",
    "check_in_place_rewrite": "exercise",
    "check_repaired_loop": "repair",
    "check_guided_loop": "repair",
    "check_masked_tanh": "exercise",
    "check_residual_detach": "exercise",
    "check_engine": "engine",
    "check_sigmoid_function": "engine",
    "check_inplace_function": "engine",
    "check_visible_write": "engine",
    "check_tanh_function": "engine",
    "check_second_derivative": "engine",
    "check_actor_critic": "repairs",
    "check_carried_state": "repairs",
    "check_softmax_loop": "repairs",
    "softmax_loop_data": "repairs",
    "EnvironmentReport": "readiness",
    "environment": "readiness",
    "setup": "readiness",
    "plot_losses": "plots",
    "plot_predictions": "plots",
}

__all__ = [
    "Net",
    "Pair",
    "make_pair",
    "batches",
    "TARGETS",
    "ORDERS",
    "TrainResult",
    "joint_step",
    "train",
    "run_iterations",
    "compare_parameters",
    "STEPS",
    "PRESETS",
    "Preset",
    "Outcome",
    "run_order",
    "outcome_table",
    "Playground",
    "playground",
    "QuizWidget",
    "quiz",
    "QUESTIONS",
    "Quiz",
    "Verdict",
    "verify",
    "check_running_total",
    "check_one_batch",
    "check_guess",
    "check_repaired_iteration",
    "check_writes_counter",
    "check_saved_hooks",
    "check_error_kind",
    "check_in_place_rewrite",
    "check_repaired_loop",
    "check_guided_loop",
    "check_masked_tanh",
    "check_residual_detach",
    "check_engine",
    "check_sigmoid_function",
    "check_inplace_function",
    "check_visible_write",
    "check_tanh_function",
    "check_second_derivative",
    "check_actor_critic",
    "check_carried_state",
    "check_softmax_loop",
    "softmax_loop_data",
    "EnvironmentReport",
    "environment",
    "setup",
    "plot_losses",
    "plot_predictions",
]

if TYPE_CHECKING:
    from .engine import (
        check_engine,
        check_inplace_function,
        check_second_derivative,
        check_sigmoid_function,
        check_tanh_function,
        check_visible_write,
    )
    from .exercise import (
        Verdict,
        check_error_kind,
        check_guess,
        check_in_place_rewrite,
        check_masked_tanh,
        check_one_batch,
        check_residual_detach,
        check_running_total,
        verify,
    )
    from .iteration import PRESETS, STEPS, Outcome, Preset, outcome_table, run_order
    from .networks import TARGETS, Net, Pair, batches, make_pair
    from .plots import plot_losses, plot_predictions
    from .questions import QUESTIONS, Quiz
    from .readiness import EnvironmentReport, environment, setup
    from .repair import check_guided_loop, check_repaired_iteration, check_repaired_loop
    from .repairs import check_actor_critic, check_carried_state, check_softmax_loop, softmax_loop_data
    from .training import ORDERS, TrainResult, compare_parameters, joint_step, run_iterations, train
    from .versions import check_saved_hooks, check_writes_counter
    from .widgets import Playground, QuizWidget, playground, quiz


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gradlab.course' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
