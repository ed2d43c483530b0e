"""What every cause of a failed backward shares: the names of the causes, and the context fixes are written from."""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, field
from typing import Literal

from .i18n import T, Words, join
from .location import Location
from .loop import LoopIntent, Site

__all__ = ["Cause", "CAUSES", "Context", "as_receiver"]


#: Why a backward fails, as gradlab decides it from what it observed.
Cause = Literal[
    "optimizer_step",  # an optimizer step changed a saved weight between two backward calls
    "inplace_op",  # an in-place op in the forward code (recorded by autograd) changed a saved tensor
    "untracked_write",  # a write under no_grad(), through .detach() or to data changed a saved tensor
    "carried_state",  # state carried from one iteration to the next (RNN hidden state, a running total)
    "shared_graph_freed",  # a second backward through a part of the graph an earlier backward freed
    "same_loss_twice",  # the same loss backwarded twice
    "stale_forward",  # a forward computed once, before the loop, reused by every iteration
    "list_never_cleared",  # a list of graph-holding tensors appended to each iteration and never cleared
    "fast_weights_in_place",  # fast weights updated in place inside a loop over them (MAML)
    "step_before_backward",  # the step on a loss's gradient runs between its forward and its backward
    "retained_accumulation",  # a running total of losses backwarded each iteration with retain_graph=True
    "attached_output",  # a loss not meant to train a model (a penalty, D's loss) built on its undetached output
    "closure_step",  # a closure an optimizer's step calls several times backwards a forward computed outside it
    "reentrant_checkpoint",  # a reentrant checkpoint's own backward freed a part of the graph a later one needs
    "handed_gradient",  # a gradient handed back by hand across a handover that was never cut (split learning)
    "stale_read",  # the loss reads an earlier forward's tensor (its graph freed) where a fresh one was computed
    "unknown",
]

CAUSES: tuple[Cause, ...] = typing.get_args(Cause)


def as_receiver(expr: str) -> str:
    """A loss as the text names it, written as the receiver of a method call: a name as it is, an expression in
    parentheses (``(w * loss).backward()``)."""
    return expr if re.fullmatch(r"[\w.\[\]]+", expr) else f"({expr})"


@dataclass(frozen=True)
class Context:
    """What gradlab knows about a failure, in the user's words (each field may be unknown).

    ``tensor``: the saved tensor's name or description. ``model``: the model that
    owns it (``n_1``). ``others``: the other models the failing loss reaches
    (``("n_2",)``). ``loss``: the failing backward's loss (``loss_2``); ``earlier``:
    the loss of the earlier backward (``loss_1``). ``optimizer``: the stepping
    optimizer's variable (``opt_1``) and ``optimizer_class`` its class. ``entry``:
    the variable holding ``model``'s output where it enters the other models
    (``pred_1``), ``entry_line``/``entry_where``: the line that feeds it in.
    ``op``/``code``/``where``: the in-place op and the user's line that ran it.
    ``judge``: True when the stepped model sits between the failing loss and the
    other models (a GAN's discriminator, a critic the actor trains through).
    ``recompute``: the lines that build the failing loss from ``model``'s forward.
    ``carried``: the variable carried across iterations; ``total``: True when it
    is a running total of losses. ``writes_per_step``: versions one step adds.

    The rest place the fixes in the user's file: ``site`` (the code that ran the
    failing line, :class:`gradlab.loop.Site`), ``intent`` (what the code's own
    optimizers do with the failing loss's gradient), ``reach`` (the models the
    failing loss reaches), and the line numbers of the failing backward, the
    earlier backward, the step, the entry, the statements to recompute, the
    carried state, the list never cleared, the stale forward and the fast weights.
    """

    tensor: Words | None = None
    model: str | None = None
    others: tuple[str, ...] = ()
    loss: str | None = None
    earlier: str | None = None
    optimizer: str | None = None
    optimizer_class: str | None = None
    entry: str | None = None
    entry_line: str | None = None
    entry_where: str | None = None
    op: str | None = None
    code: str | None = None
    where: str | None = None
    judge: bool = False
    recompute: tuple[str, ...] = ()
    carried: str | None = None
    total: bool = False
    step_between: bool | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # NOTE [A tensor built once in a constructor]: the attribute, its store and its property (causes.built_once)
    built_once: object | None = None
    # -- where in the user's code (line numbers of ``site``), for fixes as checked edits -------------------
    site: Site | None = None
    intent: LoopIntent | None = None
    reach: tuple[str, ...] = ()
    backward_line: int | None = None
    earlier_line: int | None = None
    step_line: int | None = None
    entry_lineno: int | None = None
    write_at: Location | None = None
    write_into_view: bool | None = None  # the write's tensor was a view of another (Write.into_view)
    # the writes on other lines that made a saved tensor of the graph stale: (line or None, op, recorded by autograd)
    other_writes: tuple[tuple[Location | None, str, bool], ...] = ()
    recompute_lines: tuple[int, ...] = ()
    carried_all: tuple[str, ...] = ()
    carried_kind: str | None = None
    carried_none: bool = False
    recurrent: bool = False  # the carried state goes back into the module call that returns it (an RNN's h)
    kept_at: Location | None = None  # the statement that stores the carried state for the next iteration
    # the caller's loop passes the state on (the backward in a method it calls): after each statement, what detaches
    # one carried name (NOTE [State carried by the caller's loop] in gradlab.causes.carried_state)
    boundary: tuple[tuple[Location, str], ...] = ()
    # state kept on modules' attributes across forwards (NOTE [State kept on modules] in causes.module_state):
    kept_attrs: tuple[str, ...] = ()  # the attributes, as the class reads them (``self.v``)
    resets: tuple[tuple[str, str], ...] = ()  # (class, its method that sets them back without reading them)
    reset_root: str | None = None  # the frame's model whose modules are reset
    detach_at: tuple[tuple[Location, str], ...] = ()  # the statement of the forward that first reads each one
    stored_at: tuple[tuple[Location, str], ...] = ()  # every one-line statement that stores one of them
    stepwise: bool = False  # one of them is stored inside a loop of its method (a state over one input's steps)
    cached_result: bool = False  # each kept tensor is a result reused, computed from weights an optimizer steps
    kept_paths: tuple[str, ...] = ()  # each kept attribute as the loop reaches it (``model.recurrent.weight``)
    extra_reset: bool = False  # the kept state starts as None and is made afresh on None: a reset sets it back
    saved_at: Location | None = None  # where the forward saved the tensor the failure names (an in-place write)
    caches: tuple[str, ...] = ()  # dicts on modules memoising results with a graph (``model.text_encoder.cache``)
    target: str | None = None  # a model no optimizer holds, whose output the loss uses as a target
    target_line: int | None = None  # the statement that runs that model's forward
    grad_off: str | None = None  # the frame's name for torch.no_grad (``torch.no_grad``)
    copy_at: Location | None = None  # the line that saved the written tensor, reading it by ``copy_of``
    copy_of: str | None = None  # the expression the write writes through (``self.running_std``)
    snapshot: str | None = None  # a tensor bound before the loop whose graph the loop reuses
    snapshot_line: int | None = None  # the loop statement before which it is detached
    intent_note: Words | None = None  # the record and the source disagree on the intent (the fixes follow the record)
    buffer: str | None = None
    buffers: tuple[str, ...] = ()
    stale_line: int | None = None
    stale_end: int | None = None
    stale_before: int | None = None
    fast: str | None = None
    fast_lines: tuple[int, int] | None = None
    fast_text: str | None = None
    other_claims: tuple[tuple[str, tuple[str, ...]], ...] = ()  # what the loop's other losses train, unchanged
    # a loss written as a sum of named losses: what each term reaches (NOTE [A loss written as a sum of named losses])
    terms: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the models other losses train through the very steps that use the failing loss's gradient (one summed step)
    shared: tuple[str, ...] = ()
    detach_lines: tuple[int, ...] = ()  # the statements building ``earlier`` that read ``entry`` undetached
    # the tensors written after they were saved: (the line that saved each, the expression it reads it by)
    stale: tuple[tuple[Location, str], ...] = ()
    stale_lines: tuple[int, ...] = ()  # the statements of the file that assign a constant kept on an object
    after_write: tuple[int, ...] = ()  # the statements to run again after a write (not a step) to read its values
    # a freed graph (NOTE [Candidates for a freed graph] in gradlab.candidates): the backward that freed it, the
    # models below the freed node, the models an optimizer stepped between the two backwards, and the models
    # the failing loss reaches only through a node that reads a stepped model's weights
    freeing_at: Location | None = None
    freed_reach: tuple[str, ...] = ()
    stepped_between: tuple[str, ...] = ()
    behind_stepped: tuple[str, ...] = ()
    # the optimizers stepping on the failing loss, when a backward into what they hold alone avoids every freed and
    # rewritten tensor (NOTE [A backward routed into what its optimizers hold] in gradlab.evidence)
    routed: tuple[str, ...] = ()
    # the forward line that made the freed part when it reaches only parameters no optimizer holds
    # (NOTE [A part no optimizer steps] in gradlab.evidence)
    made_at: Location | None = None
    made_unstepped: bool = False  # some of those parameters are held by optimizers that do not step on the loss
    made_also: tuple[Location, ...] = ()  # other lines that made freed parts of the same kind (a cache of two)

    # -- the user's names, or descriptions ----------------------------------------------------------
    @property
    def m(self) -> Words:
        return self.model or T("the upstream model")

    @property
    def o(self) -> Words:
        return join(self.others, T(" and ")) if self.others else T("the downstream model")

    @property
    def l(self) -> Words:  # noqa: E743 - the failing loss
        return self.loss or T("the failing loss")

    @property
    def e(self) -> Words:
        return self.earlier or T("the earlier loss")

    @property
    def opt(self) -> str:
        return self.optimizer or "optimizer"

    @property
    def step(self) -> Words:
        if not self.optimizer:
            # a function of the file that writes a model's weights (ascend(model, rho)): the call as written
            line = self.site.text(self.step_line).strip() if self.site is not None and self.step_line else ""
            call = re.fullmatch(r"(?:[\w, ]+=\s*)?([A-Za-z_]\w*\([^()]*\))", line)
            return call[1] if call else T("the optimizer step")
        # the update as the code calls it: opt.step(), or SAM's opt.first_step() (NOTE [Updates that are not steps])
        line = self.site.text(self.step_line) if self.site is not None and self.step_line is not None else ""
        m = re.search(re.escape(self.optimizer) + r"\.(\w+)\(", line)
        return f"{self.optimizer}.{m[1] if m else 'step'}()"

    @property
    def zero(self) -> Words:
        return f"{self.optimizer}.zero_grad()" if self.optimizer else T("the optimizer's zero_grad()")
