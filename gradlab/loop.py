"""What the user's loop means to train, read from its own code: which optimizer steps on which loss.

A training loop says what each loss is for by the optimizers it calls: the losses
whose backward runs between an optimizer's ``zero_grad()`` and its ``step()`` are
meant to train that optimizer's parameters. :func:`read_site` reads the code
around a failing line (the ``ast`` of the file, the function or script body that
ran it, the frame's names and objects) into a :class:`Site`, and
:func:`intent_after` reads, from the statements that follow a backward in the
order they run (the rest of the loop body, then the next iteration up to that
backward), which optimizers step on its gradient and which zero it first. The
optimizers are resolved in the frame to their objects, and their parameters to
the user's modules.

NOTE [Reading the loop]
Only the source is read, never run: a statement's ``X.step()`` counts when ``X``
names an optimizer in the frame. Branches (``if step % k == 0: opt.step()``)
count as if taken. A loop that calls a helper which steps is not followed into
the helper: then the intent is unknown (empty), and the advice falls back to
what the graph shows.

Example::

    >>> import torch
    >>> src = "for x in data:\\n    opt.zero_grad()\\n    loss.backward()\\n    opt.step()\\n"
    >>> net = torch.nn.Linear(1, 1)
    >>> ns = {"net": net, "opt": torch.optim.SGD(net.parameters(), lr=0.1)}
    >>> intent_after(src, 3, ns).trained
    ('net',)
"""

from __future__ import annotations

import ast
import linecache
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import CodeType, FrameType
from typing import Any

import torch
from torch import nn

from .location import frame_names
from .names import attributes_of, modules_in, modules_on_objects
from .source import after, function_of, leaving, own_statements, parse

__all__ = [
    "Site",
    "LoopIntent",
    "Plan",
    "read_site",
    "intent_after",
    "site_intent",
    "recorded_intent",
    "modules_of",
    "may_update",
]


@dataclass(frozen=True)
class Plan:
    """One optimizer the code calls after a backward: its variable, the user's modules it holds, its line."""

    optimizer: str
    modules: tuple[str, ...]
    lineno: int
    steps: bool  # True: step() comes first (it uses the loss's gradient); False: zero_grad() comes first
    module: bool = False  # True: ``optimizer`` is a module whose own ``zero_grad()`` clears its parameters' grads


@dataclass(frozen=True)
class LoopIntent:
    """What the code's optimizers do with one backward's gradient (empty when unknown).

    ``plans`` are the optimizers called after the backward, in the order they run;
    ``trained`` the modules of those whose ``step()`` comes before their
    ``zero_grad()``: the modules the loss is meant to train.
    """

    plans: tuple[Plan, ...] = ()

    @property
    def known(self) -> bool:
        return bool(self.plans)

    @property
    def trained(self) -> tuple[str, ...]:
        return tuple(sorted({m for p in self.plans if p.steps for m in p.modules}))

    @property
    def discarded(self) -> tuple[str, ...]:
        """Modules whose optimizer zeroes the gradient before stepping (the loss is not meant for them)."""
        trained = set(self.trained)
        return tuple(sorted({m for p in self.plans if not p.steps for m in p.modules} - trained))

    def stepper(self, module: str) -> str | None:
        """The optimizer variable that steps ``module`` on this loss's gradient, if one does."""
        return next((p.optimizer for p in self.plans if p.steps and module in p.modules), None)

    def zeroer(self, module: str) -> str | None:
        """The optimizer variable that zeroes ``module``'s gradient before its next step, if one does
        (or the module itself, when its own ``zero_grad()`` does: see :meth:`zeroed_by_module`)."""
        return next((p.optimizer for p in self.plans if not p.steps and module in p.modules), None)

    def zeroed_by_module(self, module: str) -> bool:
        """True when the first ``zero_grad()`` that clears ``module``'s gradient is a module's own."""
        return next((p.module for p in self.plans if not p.steps and module in p.modules), False)


@dataclass(frozen=True)
class Site:
    """The code that ran a failing line: its file, the lines of that function (or script body), its names.

    ``lines`` are the line numbers the function's own code executes (a nested
    ``def``'s body, such as a model's ``forward`` in the same file, is not among
    them): an edit may land only there. ``names`` are the names visible in the
    frame; ``modules`` the user's ``nn.Module`` objects by name (ids of their
    parameters), ``optimizers`` the optimizers by variable (ids of their parameters).
    """

    filename: str
    source: str
    lineno: int
    lines: frozenset[int]
    names: frozenset[str]
    modules: Mapping[str, frozenset[int]] = field(default_factory=dict)
    optimizers: Mapping[str, frozenset[int]] = field(default_factory=dict)
    kinds: Mapping[str, str] = field(default_factory=dict)  # name -> "tuple", "list", "none", "tensor"
    # the frame's modules none of whose parameters requires grad (``requires_grad_(False)``): no gradient reaches them
    frozen: frozenset[str] = frozenset()

    def holds(self, line: int) -> bool:
        return line in self.lines

    def text(self, line: int) -> str:
        """Line ``line`` of the file as written (with its indentation, no newline)."""
        lines = self.source.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def tree(self) -> ast.Module | None:
        """The file's tree, parsed once (:func:`gradlab.source.parse`)."""
        return parse(self.source)


def _code_lines(code: CodeType) -> frozenset[int]:
    return frozenset(line for _, _, line in code.co_lines() if line is not None)


def _kind(value: object) -> str | None:
    if value is None:
        return "none"
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (tuple, list)):
        outer = "tuple" if isinstance(value, tuple) else "list"
        # a state per layer, each a tuple of tensors (a stack of LSTM or spiking cells: [(h, c), ...])
        if value and all(isinstance(x, tuple) and x and all(isinstance(t, torch.Tensor) for t in x) for x in value):
            return f"{outer}:tuple"
        return outer
    return None


def read_site(frame: FrameType | None, modules: Mapping[str, frozenset[int]] | None = None) -> Site | None:
    """The :class:`Site` of ``frame`` (None when its source cannot be read). Keeps no reference to the frame.

    ``modules`` maps the user's module names to the ids of their parameters (from
    ``names=``); the frame's own ``nn.Module`` variables are added to it.
    """
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    source = "".join(linecache.getlines(filename, frame.f_globals))
    if not source or parse(source) is None:
        return None
    namespace = frame_names(frame)
    module_ids = dict(modules or {})
    frozen: set[str] = set()
    for key, value in modules_in(namespace).items():  # a LightningModule: the models it holds, by attribute
        params = list(value.parameters())
        module_ids.setdefault(key, frozenset(id(p) for p in params))
        if params and not any(p.requires_grad for p in params):
            frozen.add(key)
    optimizers = {
        key: frozenset(id(p) for g in value.param_groups for p in g["params"])
        for key, value in namespace.items()
        if isinstance(key, str) and isinstance(value, torch.optim.Optimizer)
    }
    _held_by_objects(namespace, module_ids, optimizers)
    _containers(namespace, optimizers)
    _bare_parameters(namespace, module_ids, optimizers)
    kinds = {k: kd for k, v in namespace.items() if isinstance(k, str) and (kd := _kind(v)) is not None}
    site = Site(
        filename=filename,
        source=source,
        lineno=frame.f_lineno,
        lines=_code_lines(frame.f_code),
        names=frozenset(k for k in namespace if isinstance(k, str)),
        modules={k: v for k, v in module_ids.items() if v},
        optimizers=optimizers,
        kinds=kinds,
        frozen=frozenset(frozen),
    )
    namespace.clear()
    return site


def _bare_parameters(
    namespace: Mapping[str, object], modules: dict[str, frozenset[int]], optimizers: Mapping[str, frozenset[int]]
) -> None:
    """Add the parameters that no module holds and an optimizer does, each under its own name, as a model of
    its own (``mean = torch.zeros(3, requires_grad=True)`` given to ``Adam([mean, log_std])``): what a loss
    trains is then said of them as of modules."""
    held = frozenset().union(*modules.values()) if modules else frozenset()
    stepped = frozenset().union(*optimizers.values()) if optimizers else frozenset()
    for key, value in namespace.items():
        if (
            isinstance(key, str)
            and not key.startswith("_")
            and key not in modules
            and isinstance(value, torch.Tensor)
            and value.is_leaf
            and value.requires_grad
            and id(value) in stepped
            and id(value) not in held
        ):
            modules[key] = frozenset((id(value),))


def _held_by_objects(
    namespace: Mapping[str, object], modules: dict[str, frozenset[int]], optimizers: dict[str, frozenset[int]]
) -> None:
    """Add the modules and optimizers one level into the frame's plain objects (``self.teacher``,
    ``trainer.t_opt``), locals first; a module already known under another name is not added again."""
    for name, module in modules_on_objects(namespace, modules.values()).items():
        modules[name] = frozenset(id(p) for p in module.parameters())
    # a model that keeps its own optimizer (``self.optimizer = Adam(self.parameters())``, stepped as
    # ``model.optimizer.step()``), and a trainer that holds one
    for name, inner in attributes_of(namespace, torch.optim.Optimizer):
        optimizers.setdefault(name, frozenset(id(p) for g in inner.param_groups for p in g["params"]))


# -- statements in the order they run -----------------------------------------------------------------


# NOTE [Updates that use the gradient]
# An optimizer may use a backward's gradient in a method of its own before step(): SAM's
# first_step() and an extragradient's extrapolate() move the weights with it and clear
# it; the step that follows uses the next backward's gradient. So a call, after the
# backward, of a public method of an optimizer other than step() and zero_grad() (and
# the bookkeeping below, which touches no gradient) counts as the end of that gradient's
# use, as zero_grad() does: the loss is not meant to train through the later step.
_NOT_UPDATES = frozenset(
    {"state_dict", "load_state_dict", "add_param_group", "synchronize", "skip_synchronize", "train", "eval"}
)


def may_update(method: str) -> bool:
    return not method.startswith("_") and not method.startswith("register_") and method not in _NOT_UPDATES


def _update_kind(tree: ast.Module, method: str) -> str | None:
    """How an optimizer's own ``method``, defined in the file, uses the gradient: ``"step"`` when it calls a
    ``step()`` (SAM's second_step() runs its base optimizer's), else ``"zero_grad"`` (it moves the weights with
    the gradient and the later step does not use it); None when the file does not define it."""
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == method:
                steps = any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
                    for n in ast.walk(fn)
                )
                return "step" if steps else "zero_grad"
    return None


def _calls(statements: list[ast.stmt]) -> Iterator[tuple[str, str, int]]:
    """``(receiver source, method, line)`` of each ``X.step()``/``X.zero_grad()`` call, in order.

    A call on the variable of a ``for`` loop over a container (``for opt in optimizers: opt.step()``) has the
    receiver ``optimizers[*]``: every element of it (``intent_after`` expands it in the frame).
    """
    for st in statements:
        found = [
            n
            for n in ast.walk(st)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and (n.func.attr in ("step", "zero_grad") or may_update(n.func.attr))
            and not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        over: dict[int, str] = {}  # id of a call on a loop variable -> the container it runs over
        for loop in (n for n in ast.walk(st) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)):
            assert isinstance(loop.target, ast.Name)
            for inner in ast.walk(loop):
                func = inner.func if isinstance(inner, ast.Call) else None
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == loop.target.id
                ):
                    over[id(inner)] = ast.unparse(loop.iter)
        for n in sorted(found, key=lambda c: (c.lineno, c.col_offset)):
            assert isinstance(n.func, ast.Attribute)
            receiver = f"{over[id(n)]}[*]" if id(n) in over else ast.unparse(n.func.value)
            yield receiver, n.func.attr, n.lineno


def _elements(container: str, namespace: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The elements of the container ``container`` names, each with the expression that names it
    (``optimizers[0]``, ``opts['g']``); ``x.values()`` is ``x``'s values. Empty if it names none."""
    base = container[: -len(".values()")] if container.endswith(".values()") else container
    value = namespace.get(base) if base in namespace else _resolve(base, namespace)
    if isinstance(value, (list, tuple)):
        return [(f"{base}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [(f"{base}[{k!r}]", v) for k, v in value.items()]
    return []


def _containers(namespace: Mapping[str, object], optimizers: dict[str, frozenset[int]]) -> None:
    """Add the optimizers kept in the frame's lists, tuples and dicts, by index or key (``optimizers[0]``)."""
    for key, value in namespace.items():
        if isinstance(key, str) and not key.startswith("_") and isinstance(value, (list, tuple, dict)):
            for name, inner in _elements(key, namespace):
                if isinstance(inner, torch.optim.Optimizer):
                    optimizers.setdefault(name, frozenset(id(p) for g in inner.param_groups for p in g["params"]))


_MISSING = object()


def _resolve(expr: str, namespace: Mapping[str, Any]) -> Any:
    """The object ``expr`` (``opt`` or ``self.opt_g``) names in ``namespace``, or None (nothing is evaluated)."""
    parts = expr.split(".")
    if not all(p.isidentifier() for p in parts) or parts[0] not in namespace:
        return None
    value = namespace[parts[0]]
    for part in parts[1:]:
        value = getattr(value, part, None)
    return value


def modules_of(params: frozenset[int], modules: Mapping[str, frozenset[int]]) -> tuple[str, ...]:
    """The user's modules whose parameters ``params`` hold (a module inside another named one is left out)."""
    hits = {name for name, ids in modules.items() if ids & params}
    # keep the largest: a container holding a named submodule names it already
    return tuple(sorted(n for n in hits if not any(o != n and modules[n] < modules[o] for o in hits)))


def intent_after(
    source: str,
    lineno: int,
    namespace: Mapping[str, Any],
    modules: Mapping[str, frozenset[int]] | None = None,
) -> LoopIntent:
    """What the optimizers called after the backward at ``lineno`` do with its gradient (NOTE [Reading the loop]).

    ``namespace`` resolves the optimizers' variables (the frame's names, or a
    mapping of name -> optimizer); ``modules`` maps the user's module names to
    the ids of their parameters (default: the ``nn.Module`` values of ``namespace``).
    """
    tree = parse(source)
    if tree is None:
        return LoopIntent()
    if modules is None:
        modules = {
            k: frozenset(id(p) for p in v.parameters())
            for k, v in namespace.items()
            if isinstance(v, nn.Module) and not k.startswith("_")
        }
    plans: list[Plan] = []
    seen: set[str] = set()
    calls: list[tuple[str, str, int, Any]] = []
    frozen = _frozen_at(tree, lineno, modules)  # NOTE [A model frozen around a backward]
    for receiver, method, line in _calls(after(tree, lineno)):
        if receiver.endswith("[*]"):  # a loop over a container of optimizers: each of them, in order
            container = receiver[:-3]
            base = container[: -len(".values()")] if container.endswith(".values()") else container
            found = _elements(container, namespace) or [  # a mapping of names (a Site's optimizers)
                (k, v) for k, v in namespace.items() if isinstance(k, str) and k.startswith(base + "[")
            ]
            if found:
                calls += [(name, method, line, v) for name, v in found]
                continue
        calls.append((receiver, method, line, _MISSING))
    for receiver, method, line, given in calls:
        if receiver in seen:
            continue
        if given is not _MISSING:
            value = given
        else:
            value = namespace.get(receiver) if receiver in namespace else _resolve(receiver, namespace)
        if method not in ("step", "zero_grad"):  # NOTE [Updates that use the gradient]: an optimizer's only
            kind = _update_kind(tree, method)
            if kind is None or not isinstance(value, (torch.optim.Optimizer, frozenset)):  # frozenset: a Site's
                continue
            method = kind
        if isinstance(value, frozenset):
            params = value
        elif isinstance(value, torch.optim.Optimizer):
            params = frozenset(id(p) for g in value.param_groups for p in g["params"])
        elif method == "zero_grad" and receiver in modules:
            # netD.zero_grad() clears the module's gradients as its optimizer's zero_grad() would (DCGAN's loop)
            seen.add(receiver)
            plans.append(Plan(receiver, modules_of(modules[receiver], modules), line, False, module=True))
            continue
        else:
            continue
        seen.add(receiver)
        owned = modules_of(params, modules)
        if method == "step":  # a module's zero_grad() before this step: the step does not use its gradient
            cleared = {m for p in plans if p.module for m in p.modules} | frozen
            owned = tuple(m for m in owned if m not in cleared)
        plans.append(Plan(receiver, owned, line, method == "step"))
    return LoopIntent(tuple(_stepped_on_leaving(tree, lineno, plans)))


# NOTE [A model frozen around a backward]
# GAN and cVAE loops switch a model's parameters off before a loss it must not learn
# from and back on after its backward (pix2pix's set_requires_grad(netD, False),
# BicycleGAN's set_requires_grad(netE, False) around the latent-regression loss). A
# parameter that does not require grad when the backward runs gets no gradient from
# it: torch's AccumulateGrad leaves its .grad alone. So the optimizer that steps it
# after that backward does not train it with that loss. A model is frozen at a
# backward when the last statement before it, in its function, that sets its
# parameters' requires_grad sets it off: ``model.requires_grad_(False)``, a loop
# ``for p in model.parameters(): p.requires_grad = False`` (or ``requires_grad_``),
# or a call of a function of the file given the model (alone or in a list) and
# ``False``, whose body sets ``requires_grad`` on parameters.
def _frozen_at(tree: ast.Module, lineno: int, modules: Mapping[str, frozenset[int]]) -> set[str]:
    """The modules whose parameters are switched off before the backward at ``lineno`` (NOTE [A model frozen around
    a backward])."""
    if not modules:
        return set()
    fn: ast.AST = function_of(tree, lineno) or tree
    setters = {
        f.name
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(_sets_requires_grad(n) for n in ast.walk(f))
    }
    state: dict[str, bool] = {}
    nodes = sorted(
        (n for n in own_statements(fn) if isinstance(n, (ast.Expr, ast.For)) and n.lineno < lineno),
        key=lambda n: n.lineno,
    )
    for n in nodes:
        for model, on in _switched(n, setters):
            if model in modules:
                state[model] = on
    return {m for m, on in state.items() if not on}


def _sets_requires_grad(n: ast.AST) -> bool:
    """``p.requires_grad = flag`` or ``p.requires_grad_(flag)``."""
    if isinstance(n, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in n.targets)
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "requires_grad_"


def _flag(node: ast.expr | None) -> bool | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, bool) else None


def _switched(n: ast.stmt, setters: set[str]) -> list[tuple[str, bool]]:
    """The (model, on) pairs statement ``n`` sets requires_grad of."""
    if isinstance(n, ast.For):  # for p in model.parameters(): p.requires_grad = False
        it = n.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "parameters"):
            return []
        for st in n.body:
            if isinstance(st, ast.Assign) and _sets_requires_grad(st) and _flag(st.value) is not None:
                return [(ast.unparse(it.func.value), bool(_flag(st.value)))]
            call = st.value if isinstance(st, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and _sets_requires_grad(call)
                and call.args
                and _flag(call.args[0]) is not None
            ):
                return [(ast.unparse(it.func.value), bool(_flag(call.args[0])))]
        return []
    call = n.value if isinstance(n, ast.Expr) else None
    if not isinstance(call, ast.Call):
        return []
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "requires_grad_":  # model.requires_grad_(False)
        flag = _flag(call.args[0]) if call.args else _flag(next((k.value for k in call.keywords), None))
        return [(ast.unparse(func.value), flag)] if flag is not None else []
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in setters or not call.args:
        return []
    flag = _flag(call.args[1]) if len(call.args) > 1 else _flag(next((k.value for k in call.keywords), None))
    if flag is None:
        return []
    given = call.args[0]
    models = given.elts if isinstance(given, (ast.List, ast.Tuple)) else [given]
    return [(ast.unparse(m), flag) for m in models]


def _stepped_on_leaving(tree: ast.Module, lineno: int, plans: list[Plan]) -> list[Plan]:
    """``plans`` with an optimizer that zeroes before the next backward of the loop marked as stepping, when the
    loop's last backward is followed by its ``step()`` once the loop ends (NOTE [A step after the inner loop])."""
    zeroing = {p.optimizer for p in plans if not p.steps and not p.module}
    if not zeroing:
        return plans
    first: dict[str, str] = {}
    for receiver, method, _line in _calls(leaving(tree, lineno)):
        if method not in ("step", "zero_grad"):  # NOTE [Updates that use the gradient]
            method = _update_kind(tree, method) or ""
        if receiver in zeroing and method in ("step", "zero_grad"):
            first.setdefault(receiver, method)
    return [replace(p, steps=True) if first.get(p.optimizer) == "step" else p for p in plans]


# NOTE [A step after the inner loop]
# A loop of several backward calls, each zeroed before the next (DP-SGD's
# microbatches: each gradient clipped and added up by the code, zero_grad() at the
# top of the loop), and one step() after the loop ends: read in loop order, the
# zero_grad() comes before any step, as if the loss trained nothing. But the last
# backward's gradient is still in .grad when the step runs, and the earlier ones
# reach it through what the code added up; the loss trains what the step holds.


def site_intent(site: Site, lineno: int) -> LoopIntent:
    """:func:`intent_after` for a line of ``site`` (its optimizers and modules as recorded)."""
    return intent_after(site.source, lineno, site.optimizers, site.modules)


# NOTE [A backward in a helper that does not step]
# A trainer splits its step into helpers: ``classification_pass`` backwards one loss, ``feature_pass`` another, and
# the method that calls them steps the optimizer after both. Read at the failing backward, the helper has no
# optimizer call after it, and the loop's intent is unknown; the gradient of that backward goes to the optimizer
# calls after the helper's call in its caller, so the intent is read there (the caller's line, its names). When the
# first iteration fails, the record has seen no step yet, and this is the only reading there is.
def helper_intent(caller: Site | None, caller_line: int | None) -> LoopIntent | None:
    """What the optimizer calls after ``caller_line``, the call of a helper whose backward no optimizer call follows
    in the helper itself, do with that backward's gradient (NOTE [A backward in a helper that does not step]); None
    when the caller's reading is unknown too."""
    if caller is None or caller_line is None:
        return None
    intent = site_intent(caller, caller_line)
    return intent if intent.known else None


# NOTE [Intent from the record]
# Under track() the recorder logs every zero_grad() and step() (of an optimizer or a
# module) with the ids of the parameters it holds, and every backward call. What the
# loop did with one backward's gradient is then known from what ran, not read from
# the source: the optimizer calls after the previous backward at the same line, up to
# the next one, in order. It exists only once the loop has gone round (the failure
# happens after that line's first backward and the calls that followed it); before
# that, the source is read (intent_after). The record counts a branch as it went and
# follows helpers that step; the source cannot. When both are known and disagree,
# the record wins (it is what ran) and the diagnosis says so; except when no step
# ran at all between the two backward calls (DP-SGD's microbatches, each backward
# clipped and zeroed, one step after the inner loop): the record has not yet seen
# the step that uses them, and the source's reading stands.
def recorded_intent(
    calls: Iterable[Any],
    optimizer_calls: Iterable[Any],
    at: Any,
    until: int,
    site: Site,
) -> LoopIntent:
    """What the loop did with the gradient of the previous backward at ``at``'s line (NOTE [Intent from the record]).

    ``calls`` are the recorded backward calls (:class:`gradlab.recorder.BackwardCall`),
    ``optimizer_calls`` the recorded ``zero_grad()``/``step()`` calls
    (:class:`gradlab.recorder.OptimizerCall`), ``at`` the location of the failing
    backward (or of the backward a ``check()`` precedes), ``until`` the number of
    backward calls run so far (the failing call's index). Optimizers are named by
    the frame's variable holding the same parameters, modules by ``site.modules``.
    Empty when the loop has not gone round yet.
    """
    earlier = [
        c for c in calls if c.index < until and c.location is not None and at is not None and c.location.same_call(at)
    ]
    if not earlier:
        return LoopIntent()
    previous = earlier[-1]
    wanted = previous.inputs
    names: dict[frozenset[int], str] = {}
    for name, ids in sorted(site.optimizers.items(), key=lambda kv: "." in kv[0]):
        names.setdefault(ids, name)  # the frame's own variable first (sgd, not lr_sched.optimizer)
    plans: list[Plan] = []
    seen: set[int] = set()
    for e in optimizer_calls:
        if not previous.index < e.after <= until or e.owner in seen:
            continue
        seen.add(e.owner)
        params = e.params & wanted if wanted is not None and e.kind == "step" else e.params
        name = names.get(e.params) or _receiver_of(e.location.code if e.location else "", e.kind) or "optimizer"
        line = e.location.lineno if e.location is not None else 0
        plans.append(Plan(name, modules_of(params, site.modules), line, e.kind == "step"))
    return LoopIntent(tuple(plans))


def _receiver_of(code: str, method: str) -> str | None:
    """``opt_d`` from ``opt_d.step()`` (the line's own name for the optimizer)."""
    m = re.search(r"([A-Za-z_][\w.]*)\." + method + r"\(", code)
    return m[1] if m else None
