"""What both callbacks do: a tracker over the first steps of a run, and check_intent at step 1 (private)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from ..i18n import _t
from ..intent import IntentReport, check_intent
from ..location import user_location
from ..names import Namer, NamesLike, held_models
from ..notices import GradlabWarning
from ..tracker import Tracker, track

Spec = str | Sequence[str]


def missing(module: str, framework: str) -> str:
    """The sentence of the ImportError raised when ``framework`` is not installed."""
    return _t(
        'gradlab.integrations.{module} needs {framework}: install it with pip install "torch-gradlab[frameworks]"',
        module=module,
        framework=framework,
    )


def checked_steps(steps: int | None) -> int | None:
    """``steps=`` as given, or the error that says what to pass."""
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)):
        raise TypeError(f"steps= must be a whole number of steps (e.g. steps=10) or None for all, not {steps!r}")
    if steps is not None and steps < 1:
        raise ValueError(f"steps= must be at least 1 (or None to track every step), not {steps}")
    return steps


def checked_intent(intent: Sequence[Spec] | None) -> tuple[Spec, ...] | None:
    """``intent=`` as given: what each backward of step 1 should train, in order (or None)."""
    if intent is None:
        return None
    if isinstance(intent, (str, Mapping)) or not isinstance(intent, Sequence):
        raise TypeError(
            "intent= takes what each backward of the first step should train, in order, e.g. "
            f"intent=['discriminator', 'generator'], not {type(intent).__name__}"
        )
    return tuple(intent)


def model_names(model: nn.Module, names: NamesLike) -> NamesLike:
    """The names the callback's tracker and check_intent use: ``names=``, the models a LightningModule holds,
    or the model itself as ``model``."""
    if names is not None:
        return names
    return held_models(model) or {"model": model}


def stepped_names(names: NamesLike, optimizers: Iterable[torch.optim.Optimizer]) -> list[str]:
    """The names of the parameters the optimizers hold (what a loss of a one-optimizer loop should train)."""
    held = {id(p) for opt in optimizers for group in opt.param_groups for p in group["params"]}
    return [name for name, t in Namer(names).named() if id(t) in held]


class Tracking:
    """A tracker opened for the first ``steps`` steps of a run (None: all), and the intent reports of step 1."""

    def __init__(self, steps: int | None, strict: bool, verify_saved: bool, warn: bool) -> None:
        self.steps = steps
        self.strict, self.verify_saved, self.warn = strict, verify_saved, warn
        self.tracker: Tracker | None = None
        self.reports: list[IntentReport] = []
        self.done = 0  # steps finished while tracking

    @property
    def active(self) -> bool:
        return self.tracker is not None and self.tracker.active

    def open(self, names: NamesLike) -> None:
        self.close()
        self.done = 0
        self.reports = []
        self.tracker = track(names, warn=self.warn, strict=self.strict, verify_saved=self.verify_saved)
        self.tracker.__enter__()

    def step_done(self) -> None:
        self.done += 1
        if self.steps is not None and self.done >= self.steps:
            self.close()

    def close(self) -> None:
        tracker = self.tracker
        if tracker is not None and tracker.active:
            tracker.__exit__(None, None, None)

    def check(self, label: str, loss: torch.Tensor, spec: Spec, names: NamesLike) -> IntentReport | None:
        """check_intent of one loss of step 1; a GradlabWarning when it does not train what it should."""
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not spec:
            return None
        report = check_intent({label: (loss, spec if isinstance(spec, str) else list(spec))}, names=names)
        self.reports.append(report)
        if not report.ok:
            text = _t("gradlab, step 1: {report}", report=str(report))
            where = user_location()  # the user's line that runs the framework (trainer.fit(...)), not ours
            if where is None:
                warnings.warn(text, GradlabWarning, stacklevel=2)
            else:
                warnings.warn_explicit(text, GradlabWarning, where.filename, where.lineno)
        return report


def loss_of(output: Any) -> torch.Tensor | None:
    """The loss a model's forward returned: ``output.loss`` (a ModelOutput), ``output["loss"]``, or None."""
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, Mapping):
        loss = output.get("loss")
    return loss if isinstance(loss, torch.Tensor) and loss.grad_fn is not None else None
