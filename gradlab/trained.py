"""What trained what, measured: which loss changed which module's gradients, at each optimizer step.

``with gradlab.record_training() as record:`` watches every ``backward()`` and
every optimizer ``step()`` of the block. Before and after each backward it takes
a fingerprint of the ``.grad`` of the parameters in play (those of the optimizers
it has seen and the leaves the loss's graph reaches), so it knows which
parameters' gradient that loss changed. At each ``step()`` it knows which
backwards built the gradient the step uses (those since the parameters'
gradients were last reset: the optimizer's ``zero_grad()``), and so "loss L
trained module M at step k of optimizer O". This is the record ``gradlab fix``
compares before and after a patch.

NOTE [Measured, not inferred]
A loss "trains" a parameter when its backward changed that parameter's
``.grad``: a parameter the graph reaches with an exactly zero gradient (a bias
cancelled by ``mean(real) - mean(fake)``) is not trained by it, a parameter left
out by ``inputs=`` or ``detach()`` is not either. The fingerprint of a gradient
is its sum and its squared norm in float64: a contribution that changes neither
is taken for none. A gradient is "reset" before a backward when it is None, all
zero, or different from what the previous backward left (``zero_grad()``, a
manual ``p.grad = None``). The record never changes a gradient, keeps only weak
references to parameters and optimizers, and costs nothing outside the block.

Example::

    >>> net = torch.nn.Linear(2, 1)
    >>> opt = torch.optim.SGD(net.parameters(), lr=0.1)
    >>> with record_training() as record:
    ...     opt.zero_grad()
    ...     loss = net(torch.ones(3, 2)).sum()
    ...     loss.backward()
    ...     opt.step()
    >>> [(s.optimizer, s.count, s.trained) for s in record.steps]
    [('opt', 1, (('loss', ('net',)),))]
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from . import writes
from .i18n import _, _t
from .location import frame_names, user_frame, user_location
from .names import framework_backward, modules_in

__all__ = ["LossRecord", "StepRecord", "TrainingRecord", "record_training"]


@dataclass(frozen=True)
class LossRecord:
    """One backward: ``loss`` as written at ``where``, and the modules whose gradients it changed.

    ``value`` is the backwarded tensors' fingerprint (their sum and squared norm in float64), taken before
    the backward runs: two runs whose forwards computed the same values give equal fingerprints
    (NOTE [Oracles] in :mod:`gradlab.fix`).
    """

    index: int
    loss: str
    where: str | None
    trained: tuple[str, ...]
    value: tuple[float, float] | None = None


@dataclass(frozen=True)
class StepRecord:
    """The ``count``-th ``step()`` of ``optimizer``, and what built the gradient it used.

    ``losses`` are the losses whose backward ran since its parameters' gradients
    were last reset (what the code means to train them with); ``trained`` pairs
    each of them with the modules of this optimizer whose gradients it changed;
    ``modules`` are the modules whose parameters the optimizer holds; ``grads`` the
    fingerprint of each of its parameters' gradient (``module.name``), as the step used it.
    """

    optimizer: str
    count: int
    where: str | None
    losses: tuple[str, ...]
    trained: tuple[tuple[str, tuple[str, ...]], ...]
    modules: tuple[str, ...]
    grads: tuple[tuple[str, tuple[float, float] | None], ...] = ()  # each parameter's gradient as the step used it

    def untrained(self) -> tuple[str, ...]:
        """The optimizer's modules that no loss of this step trained."""
        reached = {m for _loss, mods in self.trained for m in mods}
        return tuple(m for m in self.modules if m not in reached)


class _StepBudget(BaseException):
    """Raised from the step hook once every optimizer has stepped the budget (not an error of the script)."""


class TrainingRecord:
    """The backwards and optimizer steps seen in a :func:`record_training` block, as plain records.

    ``aliases`` maps every variable name a module was seen under to the one name the records use;
    ``unnamed`` holds the labels of parameters no named module holds (``parameters of opt``).
    """

    def __init__(self, names: Mapping[str, object] | Callable[[], Mapping[str, object]] | None, steps: int | None):
        self.backwards: list[LossRecord] = []
        self.steps: list[StepRecord] = []
        self.budget = steps
        self.stopped = False  # the budget stopped the block
        self.aliases: dict[str, str] = {}  # every name a module was seen under -> the name the records use
        self.unnamed: set[str] = set()  # labels of parameters no named module holds
        self._names = names
        self._params: dict[int, tuple[weakref.ref[torch.Tensor], tuple[float, float] | None, int]] = {}
        self._changed: list[set[int]] = []  # per backward: ids of the parameters whose gradient it changed
        self._inputs: list[set[int] | None] = []  # per backward: ids of its inputs= (None: every leaf)
        self._optimizers: dict[int, tuple[weakref.ref[torch.optim.Optimizer], str]] = {}
        self._counts: dict[int, int] = {}
        self._labels: set[str] = set()  # every optimizer's label so far: one label, one optimizer
        self._module_of: dict[int, str] = {}
        self._param_of: dict[int, str] = {}
        self._depth = 0
        self._seen_step = False

    # -- what the script calls things -----------------------------------------------------------
    def _learn_names(self, frame: FrameType | None) -> None:
        """Modules and optimizers bound to names in the user's frame (and ``names=``)."""
        found: dict[str, object] = {}
        given = self._names() if callable(self._names) else self._names
        if given:
            found.update(given)
        if frame is not None:
            visible = frame_names(frame)
            me = visible.get("self")
            if me is not None and hasattr(me, "__dict__"):
                for key, value in list(vars(me).items()):
                    if isinstance(value, (nn.Module, torch.optim.Optimizer)):
                        visible[f"self.{key}"] = value
            found.update(visible)
        modules = list(modules_in(found).items())  # a LightningModule: the models it holds (names.held_models)
        # The smallest module that holds a parameter names it: `encoder` before `model`.
        modules.sort(key=lambda kv: -sum(1 for _p in kv[1].parameters()))
        same: dict[int, list[str]] = {}  # one module under several names (`net`, and `model` in a function)
        for name, module in modules:
            same.setdefault(id(module), []).append(name)
            for pname, p in module.named_parameters():
                self._module_of[id(p)] = name
                self._param_of[id(p)] = f"{name}.{pname}"
        for names in same.values():
            for alias in names:
                self.aliases[alias] = names[-1]
        for name, value in found.items():
            if isinstance(value, torch.optim.Optimizer) and isinstance(name, str) and not name.startswith("_"):
                label = self._optimizer_name(value, name)
                inner = getattr(
                    value, "optimizer", None
                )  # Lightning's and Accelerate's wrappers step the one they hold, under the wrapper's name
                if isinstance(inner, torch.optim.Optimizer) and inner is not value:
                    self._optimizer_name(inner, label, held_by=value)
        del found, modules

    def _optimizer_name(
        self, optimizer: torch.optim.Optimizer, name: str | None = None, *, held_by: torch.optim.Optimizer | None = None
    ) -> str:
        """``optimizer``'s label: ``name`` (numbered when another optimizer has it), else ``<SGD 1>``.

        ``held_by``: the wrapper that holds ``optimizer`` (Lightning's, Accelerate's); its label is not
        another optimizer's, so ``optimizer`` may share it.
        """
        known = self._optimizers.get(id(optimizer))
        if known is not None and known[0]() is optimizer and (name is None or not known[1].startswith("<")):
            return known[1]
        if known is not None and known[0]() is not optimizer:  # a new optimizer where a gone one lived
            self._counts.pop(id(optimizer), None)
        label = name or f"<{type(optimizer).__name__} {len(self._optimizers) + 1}>"
        taken = self._labels - {known[1]} if known is not None and known[0]() is optimizer else self._labels
        wrapper = self._optimizers.get(id(held_by)) if held_by is not None else None
        if wrapper is not None and wrapper[0]() is held_by:
            taken = taken - {wrapper[1]}
        if label in taken:  # two optimizers by one name (a local `opt` in two functions, gone or not): number them
            label = next(f"{name} #{k}" for k in range(2, len(taken) + 3) if f"{name} #{k}" not in taken)
        self._labels.add(label)
        self._optimizers[id(optimizer)] = (weakref.ref(optimizer), label)
        for p in _params_of(optimizer):
            self._track(p)
        return label

    def _parameter(self, p: torch.Tensor, optimizer: str, index: int) -> str:
        """A parameter's name: ``module.name`` (``net.0.weight``), else its place in the optimizer."""
        name = self._param_of.get(id(p))
        return name if name is not None else f"{optimizer}[{index}]"

    def _module(self, p: torch.Tensor, optimizer: str | None = None) -> str:
        name = self._module_of.get(id(p))
        if name is not None:
            return name
        label = (
            _t("parameters of {optimizer}", optimizer=optimizer) if optimizer is not None else _("unnamed parameters")
        )
        self.unnamed.add(label)
        return label

    # -- fingerprints ----------------------------------------------------------------------------
    def _track(self, p: torch.Tensor) -> None:
        if id(p) not in self._params or self._params[id(p)][0]() is not p:
            self._params[id(p)] = (weakref.ref(p), _fingerprint(p), -1)

    def _live(self) -> Iterator[tuple[int, torch.Tensor]]:
        for key, (ref, _fp, _reset) in list(self._params.items()):
            p = ref()
            if p is None:
                del self._params[key]
            else:
                yield key, p

    # -- hooks -----------------------------------------------------------------------------------
    def _backward(self, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if self._depth:
            return original(*args, **kwargs)
        frame = user_frame()
        loc = user_location(frame) if frame is not None else None
        self._learn_names(frame)
        del frame
        outputs = args[0] if args else kwargs.get("tensors")
        tensors = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs or ())
        given = kwargs.get("inputs", args[5] if len(args) > 5 else None)
        if given is not None:  # backward(inputs=...): the code says which leaves this loss is meant for
            given = [given] if isinstance(given, torch.Tensor) else list(given)
            inputs: set[int] | None = {id(t) for t in given if isinstance(t, torch.Tensor)}
        else:
            inputs = None
        del given
        for leaf in _leaves([t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]):
            self._track(leaf)
        del tensors, outputs
        index = len(self.backwards)
        value = _value_of(args[0] if args else kwargs.get("tensors"))
        before: dict[int, tuple[float, float] | None] = {}
        for key, p in self._live():
            fp = _fingerprint(p)
            before[key] = fp
            ref, last, reset = self._params[key]
            if fp is None or fp == (0.0, 0.0) or fp != last:
                reset = index  # nothing of an earlier backward is left in this gradient
            self._params[key] = (ref, last, reset)
        self._depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            self._depth -= 1
            changed: set[int] = set()
            for key, p in self._live():
                fp = _fingerprint(p)
                ref, _last, reset = self._params[key]
                if key in before and fp != before[key]:
                    changed.add(key)
                self._params[key] = (ref, fp, reset)
            self._changed.append(changed)
            self._inputs.append(inputs)
            modules = sorted({self._module(p) for key, p in self._live() if key in changed})
            self.backwards.append(
                LossRecord(
                    index, _loss_name(loc.code if loc else ""), loc.where if loc else None, tuple(modules), value
                )
            )

    def _step(self, optimizer: torch.optim.Optimizer) -> None:
        frame = user_frame()
        self._learn_names(frame)
        loc = user_location(frame) if frame is not None else None
        del frame
        name = self._optimizer_name(optimizer)
        count = self._counts.get(id(optimizer), 0) + 1
        self._counts[id(optimizer)] = count
        mine = [p for p in _params_of(optimizer) if p.requires_grad]
        resets = [self._params[id(p)][2] for p in mine if id(p) in self._params and self._params[id(p)][2] >= 0]
        start = min(resets) if resets else len(self.backwards)
        losses: list[str] = []
        trained: list[tuple[str, tuple[str, ...]]] = []
        ids = {id(p) for p in mine}
        for record, changed, inputs in zip(self.backwards[start:], self._changed[start:], self._inputs[start:]):
            if inputs is not None and not inputs & ids:
                continue  # inputs= leaves this optimizer's parameters out: not meant to train them
            mods = sorted({self._module(p, name) for p in mine if id(p) in changed})
            losses.append(record.loss)
            trained.append((record.loss, tuple(mods)))
        modules = tuple(sorted({self._module(p, name) for p in mine}))
        grads = tuple((self._parameter(p, name, i), _fingerprint(p)) for i, p in enumerate(mine))
        self.steps.append(
            StepRecord(name, count, loc.where if loc else None, tuple(losses), tuple(trained), modules, grads)
        )

    def _after_closure(self, optimizer: torch.optim.Optimizer, closure: Callable[..., Any]) -> Callable[..., Any]:
        """``closure`` noting the step once it has returned: the backward it runs builds the step's gradient
        (NOTE [Closure steps] in :mod:`gradlab.steps`; a closure that raises leaves no step: none ran)."""
        noted = False

        def user_closure(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            nonlocal noted
            result = closure(*args, **kwargs)
            if not noted:
                noted = True
                self._step(optimizer)
            return result

        return user_closure

    def _after_step(self, optimizer: torch.optim.Optimizer) -> None:
        budget = self.budget
        if budget is None:
            return
        counts = [self._counts.get(key, 0) for key, (ref, _n) in self._optimizers.items() if ref() is not None]
        if counts and (min(counts) >= budget or max(counts) >= 4 * budget):
            self.stopped = True
            raise _StepBudget(f"each optimizer has stepped {budget} times")

    # -- rendering -------------------------------------------------------------------------------
    def table(self) -> str:
        """One line per (step, loss): which loss trained which modules at each optimizer step."""
        from .i18n import ljust, width

        rows = [(_("step"), _("optimizer"), _("loss"), _("trained"))]
        for s in self.steps:
            if not s.trained:
                rows.append((str(s.count), s.optimizer, "-", _("nothing (no backward since zero_grad)")))
            for loss, mods in s.trained:
                rows.append((str(s.count), s.optimizer, loss, ", ".join(mods) if mods else _("nothing")))
        cols = [max(width(r[i]) for r in rows) for i in range(3)]
        return "\n".join(
            "  ".join(ljust(cell, cols[i]) if i < 3 else cell for i, cell in enumerate(r)).rstrip() for r in rows
        )

    def as_dict(self) -> dict[str, Any]:
        """The record as plain data (JSON-ready)."""
        return {
            "backwards": [[b.index, b.loss, b.where, list(b.trained), b.value] for b in self.backwards],
            "steps": [
                [
                    s.optimizer,
                    s.count,
                    s.where,
                    list(s.losses),
                    [[loss, list(m)] for loss, m in s.trained],
                    list(s.modules),
                    [[n, g] for n, g in s.grads],
                ]
                for s in self.steps
            ],
            "stopped": self.stopped,
            "aliases": dict(self.aliases),
            "unnamed": sorted(self.unnamed),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingRecord:
        """The record :meth:`as_dict` wrote."""
        record = cls(None, None)
        record.backwards = [
            LossRecord(b[0], b[1], b[2], tuple(b[3]), tuple(b[4]) if len(b) > 4 and b[4] is not None else None)
            for b in data.get("backwards", [])
        ]
        record.steps = [
            StepRecord(
                st[0],
                st[1],
                st[2],
                tuple(st[3]),
                tuple((loss, tuple(m)) for loss, m in st[4]),
                tuple(st[5]),
                tuple((n, tuple(g) if g is not None else None) for n, g in (st[6] if len(st) > 6 else [])),
            )
            for st in data.get("steps", [])
        ]
        record.stopped = bool(data.get("stopped", False))
        record.aliases = dict(data.get("aliases", {}))
        record.unnamed = set(data.get("unnamed", []))
        return record

    def __repr__(self) -> str:
        return f"<gradlab training record: {len(self.backwards)} backwards, {len(self.steps)} steps>"


def _params_of(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"] if isinstance(p, torch.Tensor)]


def _fingerprint(p: torch.Tensor) -> tuple[float, float] | None:
    g = p.grad
    if g is None:
        return None
    with torch.no_grad():
        d = g.detach()
        if d.is_sparse:
            d = d.coalesce().values()
        d = d.to(torch.float64)
        return float(d.sum()), float(d.pow(2).sum())


def _value_of(outputs: object) -> tuple[float, float] | None:
    """The fingerprint of what a backward is called on (its tensors' values, in float64), or None."""
    tensors = (
        [outputs]
        if isinstance(outputs, torch.Tensor)
        else list(outputs or ())
        if isinstance(outputs, (list, tuple))
        else []
    )
    found = [t for t in tensors if isinstance(t, torch.Tensor)]
    if not found:
        return None
    with torch.no_grad():
        d = [t.detach().to(torch.float64).reshape(-1) for t in found if not t.is_sparse]
        if not d:
            return None
        flat = torch.cat(d)
        return float(flat.sum()), float(flat.pow(2).sum())


def _leaves(roots: list[Any]) -> list[torch.Tensor]:
    """The tensors whose ``.grad`` a backward from ``roots`` accumulates into (AccumulateGrad nodes)."""
    from .graph import walk

    out = []
    for node in walk(roots):
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            out.append(variable)
    return out


def _loss_name(code: str) -> str:
    """The loss a backward line backwards: ``loss_d`` in ``loss_d.backward()``, the first argument of
    ``torch.autograd.backward(...)``; the line itself when it is not one statement."""
    text = code.strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text or "?"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and node.args and framework_backward(func):
                return ast.unparse(node.args[0])  # self.manual_backward(loss), accelerator.backward(loss)
            if isinstance(func, ast.Attribute) and func.attr == "backward":
                if isinstance(func.value, ast.Attribute) and func.value.attr == "autograd" and node.args:
                    return ast.unparse(node.args[0])
                if not (isinstance(func.value, ast.Name) and func.value.id == "autograd"):
                    return ast.unparse(func.value)
                if node.args:
                    return ast.unparse(node.args[0])
            if isinstance(func, ast.Name) and func.id == "backward" and node.args:
                return ast.unparse(node.args[0])
    return text or "?"


class _Recording:
    """The context manager :func:`record_training` returns."""

    def __init__(self, record: TrainingRecord) -> None:
        self.record = record
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> TrainingRecord:
        if self._undo:
            raise RuntimeError("this record_training() block is already active; open a new one")
        record = self.record
        # one patcher: writes.py wraps torch.autograd.backward for trackers and records alike
        self._undo.append(writes.observe_backward(record._backward))

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
            closure = writes.step_closure(args, kwargs)
            if closure is None:
                record._step(optimizer)
                return None
            return writes.with_closure(args, kwargs, record._after_closure(optimizer, closure))

        pre = register_optimizer_step_pre_hook(before_step)
        self._undo.append(pre.remove)
        post = register_optimizer_step_post_hook(lambda opt, args, kwargs: record._after_step(opt))
        self._undo.append(post.remove)
        return record

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()
        self.record._module_of.clear()


def record_training(
    names: Mapping[str, object] | Callable[[], Mapping[str, object]] | None = None, *, steps: int | None = None
) -> _Recording:
    """Record which loss trained which module at each optimizer step (NOTE [Measured, not inferred]).

    Use it as ``with gradlab.record_training() as record:``; ``record.steps``
    lists a :class:`StepRecord` per ``optimizer.step()``, ``record.table()`` the
    same as text. Modules and optimizers are named by the variables that hold
    them where ``backward()`` and ``step()`` are called (or by ``names=``, a
    mapping or a zero-argument callable returning one). With ``steps=K`` the
    block stops (quietly, at the ``step()`` call) once every optimizer it has
    seen has stepped K times: ``record.stopped`` is then True.

    Example::

        >>> net = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(net.parameters(), lr=0.1)
        >>> with record_training(steps=2) as record:
        ...     while True:  # stopped by the budget
        ...         opt.zero_grad()
        ...         net(torch.ones(3, 2)).sum().backward()
        ...         opt.step()
        >>> record.stopped, len(record.steps)
        (True, 2)
    """
    if names is not None and not (isinstance(names, Mapping) or callable(names)):
        raise TypeError(
            f"names= must be a mapping of name to module (e.g. {{'net': net}}) or a callable returning one, "
            f"not {type(names).__name__}"
        )
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps= must be a whole number of optimizer steps, at least 1 (e.g. steps=3), not {steps!r}")
    return _StoppingRecording(TrainingRecord(names, steps))


class _StoppingRecording(_Recording):
    """Swallows the budget's stop at the end of the block: the block ends where the budget was reached."""

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:  # type: ignore[override]
        super().__exit__(exc_type, exc, tb)
        return isinstance(exc, _StepBudget)
