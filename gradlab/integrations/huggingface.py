"""gradlab inside the Hugging Face Trainer: ``Trainer(..., callbacks=[TrackCallback()])``.

Example::

    from transformers import Trainer
    from gradlab.integrations.huggingface import TrackCallback

    track = TrackCallback(steps=10)                  # the first 10 optimizer steps (None: all)
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[track])
    trainer.train()                                  # a failing backward carries gradlab's note
    track.reports                                    # check_intent of the model's loss at step 1
    track.tracker.notes                              # steps that could not train a parameter

Importing this module imports ``transformers``; without it, it raises an ImportError that
says what to install.
"""

from __future__ import annotations

from typing import Any

import torch

from ..names import NamesLike
from ..tracker import Tracker
from ._tracking import Spec, Tracking, checked_steps, loss_of, missing, model_names, stepped_names

try:
    from transformers import TrainerCallback
except ImportError as e:
    raise ImportError(missing("huggingface", "Hugging Face Transformers")) from e

__all__ = ["TrackCallback"]


class TrackCallback(TrainerCallback):
    """Track the first ``steps`` optimizer steps of ``trainer.train()`` (``None``: all of them).

    A step is the Trainer's (``state.global_step``: with gradient accumulation, several
    batches). While tracking, a failing backward carries gradlab's note, a step that
    cannot train a parameter is warned about, and (with ``strict=``/``verify_saved=``)
    writes the version counter misses are caught: the Trainer's default optimizer from
    torch 2.8 on is the fused AdamW, whose step moves no version counter. In step 1,
    the loss the model's forward returns (``outputs.loss``) is checked with
    :func:`gradlab.check_intent` before its backward: it should train ``intent=`` (a
    name or a list of names of ``names=``), by default every parameter the optimizer
    holds. A mismatch is warned about (:class:`gradlab.GradlabWarning`); the report is in
    :attr:`reports`. A ``compute_loss`` of your own that builds another loss is not
    what is checked.

    The model is named ``model`` (``model.bert.encoder...``) unless ``names=`` says
    otherwise. An error raised out of ``trainer.train()`` skips the Trainer's
    ``on_train_end``: the tracker then stays open until :meth:`close` or the next
    ``train()``. Under ``python -m gradlab run`` the callback's tracker joins the run's.
    """

    def __init__(
        self,
        steps: int | None = 1,
        *,
        intent: Spec | None = None,
        names: NamesLike = None,
        strict: bool = False,
        verify_saved: bool = False,
        warn: bool = True,
    ) -> None:
        if intent is not None and not isinstance(intent, (str, list, tuple)):
            raise TypeError(f"intent= takes a name or a list of names, e.g. intent='model', not {intent!r}")
        self._tracking = Tracking(checked_steps(steps), strict, verify_saved, warn)
        self._intent = intent
        self._names = names
        self._hook: Any = None

    @property
    def tracker(self) -> Tracker | None:
        """The tracker of the latest ``train()`` (closed after its steps; None before one)."""
        return self._tracking.tracker

    @property
    def reports(self) -> list[Any]:
        """The :class:`gradlab.IntentReport` of step 1 (empty when the model's forward returned no loss)."""
        return self._tracking.reports

    def close(self) -> None:
        """Stop tracking now (after an error raised out of ``train()``)."""
        self._unhook()
        self._tracking.close()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        model, optimizer = kwargs.get("model"), kwargs.get("optimizer")
        if not isinstance(model, torch.nn.Module):
            return
        names = model_names(model, self._names)
        self._tracking.open(names)
        spec: Spec | None = self._intent
        if spec is None and optimizer is not None:
            spec = stepped_names(names, [optimizer])
        self._unhook()
        if spec:
            self._hook = model.register_forward_hook(self._first_loss(spec, names))

    def _first_loss(self, spec: Spec, names: NamesLike) -> Any:
        def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
            if not (module.training and torch.is_grad_enabled()):
                return
            loss = loss_of(output)
            if loss is not None:
                self._unhook()
                self._tracking.check("loss", loss, spec, names)

        return hook

    def _unhook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._unhook()  # step 1 is over
        if self._tracking.active:
            self._tracking.step_done()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.close()
