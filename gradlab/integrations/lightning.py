"""gradlab inside PyTorch Lightning: ``L.Trainer(callbacks=[TrackCallback()])``.

Example::

    import lightning as L
    from gradlab.integrations.lightning import TrackCallback

    track = TrackCallback(steps=10)                  # the first 10 training steps (None: all)
    trainer = L.Trainer(max_epochs=1, callbacks=[track])
    trainer.fit(model, loader)                       # a failing backward carries gradlab's note
    track.reports                                    # check_intent of each loss of step 1
    track.tracker.notes                              # steps that could not train a parameter

Importing this module imports Lightning (``lightning``, else ``pytorch_lightning``); without
either, it raises an ImportError that says what to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..names import NamesLike
from ..tracker import Tracker
from ._tracking import Spec, Tracking, checked_intent, checked_steps, missing, model_names, stepped_names

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:
    try:
        from pytorch_lightning.callbacks import Callback  # type: ignore[assignment]
    except ImportError as e:
        raise ImportError(missing("lightning", "PyTorch Lightning")) from e

__all__ = ["TrackCallback"]


class TrackCallback(Callback):
    """Track the first ``steps`` training steps of a fit (``None``: all of them) with :func:`gradlab.track`.

    A step is one call of ``training_step`` (one batch). While tracking, a failing
    backward carries gradlab's note, a step that cannot train a parameter is warned
    about, and (with ``strict=``/``verify_saved=``) writes the version counter misses
    are caught, as under ``gradlab.track``. In step 1, each loss is checked with
    :func:`gradlab.check_intent` before its backward: under automatic optimization
    against the parameters of the optimizers Lightning steps; under manual
    optimization against ``intent=``, what each backward of the step should train, in
    order (e.g. ``intent=["discriminator", "generator"]``). A mismatch is warned about
    (:class:`gradlab.GradlabWarning`); every report is in :attr:`reports`.

    Models are named by ``names=``, else by the LightningModule's attributes
    (``generator``, ``discriminator``). The tracker of the latest fit is
    :attr:`tracker` (its ``notes``, ``events``, ``writes``). Under
    ``python -m gradlab run`` the callback's tracker joins the run's.
    """

    def __init__(
        self,
        steps: int | None = 1,
        *,
        intent: Sequence[Spec] | None = None,
        names: NamesLike = None,
        strict: bool = False,
        verify_saved: bool = False,
        warn: bool = True,
    ) -> None:
        super().__init__()
        self._tracking = Tracking(checked_steps(steps), strict, verify_saved, warn)
        self._intent = checked_intent(intent)
        self._names = names
        self._model_names: NamesLike = None
        self._backwards = 0

    @property
    def tracker(self) -> Tracker | None:
        """The tracker of the latest fit (closed after its steps; None before a fit)."""
        return self._tracking.tracker

    @property
    def reports(self) -> list[Any]:
        """The :class:`gradlab.IntentReport` of each loss of step 1, in the order of their backwards."""
        return self._tracking.reports

    def on_train_start(self, trainer: Any, pl_module: torch.nn.Module) -> None:
        self._model_names = model_names(pl_module, self._names)
        self._backwards = 0
        self._tracking.open(self._model_names)

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: torch.Tensor) -> None:
        if not self._tracking.active or self._tracking.done:
            return
        self._backwards += 1
        if self._intent is not None:
            if self._backwards > len(self._intent):
                return
            spec: Spec = self._intent[self._backwards - 1]
        elif pl_module.automatic_optimization:
            spec = stepped_names(self._model_names, trainer.optimizers)
        else:
            return  # manual optimization: which optimizer steps on this loss is the code's; intent= says it
        self._tracking.check(f"loss {self._backwards}", loss, spec, self._model_names)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._tracking.active:
            self._tracking.step_done()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._tracking.close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._tracking.close()
