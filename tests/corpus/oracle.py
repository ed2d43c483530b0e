"""The oracle: run a training script for k optimizer steps and record what each step trained.

Independent of gradlab (it imports torch only). :func:`run` starts the script in
a fresh Python process, as ``python script.py`` would run it, with four
observers installed before the script's first line:

- ``torch.optim.Optimizer.__init__`` is wrapped to know every optimizer the script
  creates;
- a global optimizer step pre hook copies every parameter's ``.grad`` as the step
  sees it (the gradient that step uses);
- a global step post hook counts steps and raises a private ``BaseException``
  (:class:`_BudgetReached`) once every optimizer the script created has stepped
  ``steps`` times, or once any one optimizer has stepped ``CAP * steps`` times
  (an optimizer that never steps must not keep the script running);
- ``torch.Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad``
  are wrapped: for each call, the loss's source text (from the caller's source
  position) and which parameters' ``.grad`` it changed (values before and after,
  compared exactly).

"What trained what" is measured, not guessed: a loss *trained* a module when its
backward changed the ``.grad`` of one of the module's parameters and an
optimizer step then used that gradient (no ``zero_grad()`` or ``grad = None`` in
between: a gradient observed to be ``None`` or all zero forgets the losses that
made it). A backward of several named losses (``(actor_loss + 0.5 * critic_loss)``,
``torch.autograd.backward([loss_a, loss_b])``) credits each term with the changed
parameters its own graph reaches.

Names are the script's: a parameter is ``<module var>.<param name>`` from the
script's module-level or function-local ``nn.Module`` variables (one level into
plain objects: ``self.actor``), taking the most specific module that holds it
(``encoder.0.weight`` rather than ``model.encoder.0.weight`` when both variables
exist), outermost scope first; a raw tensor held in a variable is named by it; an
optimizer is named by its variable, else ``optimizer<N>`` in creation order, and
a parameter nobody names is ``<optimizer>.param<J>``. The other names a module
has on the stack (``model`` inside ``train_one_epoch(model, ...)`` for the
``classifier`` of ``main``) are kept as its aliases (:func:`canonical`).

The record is written with ``torch.save`` (plain dicts, lists and tensors, so
``torch.load(weights_only=True)`` reads it) and returned as a :class:`Record`.

Example (from the repository's root)::

    from tests.corpus import oracle
    rec = oracle.run("tests/corpus/cases/gan_no_retain/intended.py")
    oracle.trained(rec)            # {'loss_d': {'disc'}, 'loss_g': {'gen'}}
    oracle.compare(rec, oracle.run("tests/corpus/cases/gan_no_retain/broken.py"))
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "ERROR_KINDS",
    "Record",
    "Step",
    "Backward",
    "run",
    "run_many",
    "compare",
    "trained",
    "loss_terms",
    "canonical",
]

#: An optimizer that steps this many times the budget stops the run even if another never stepped.
CAP = 4

#: The error kinds a case may name, and the words of torch's message that identify each.
ERROR_KINDS = {
    "second-time": "Trying to backward through the graph a second time",
    "inplace": "modified by an inplace operation",
    "no-grad-fn": "does not require grad and does not have a grad_fn",
    "leaf-inplace": "a leaf Variable that requires grad is being used in an in-place operation",
    "inference": "Inference tensors cannot be saved for backward",
    "view-inplace": "is a view and is being modified inplace",
    "non-scalar": "grad can be implicitly created only for scalar outputs",
    "unused-input": "appears to not have been used in the graph",
    "numpy": "Can't call numpy() on Tensor that requires grad",
}

# NOTE [Tolerance]
# Two scripts that train the same thing need not produce bitwise-equal gradients:
# `(a + b).backward()` and `a.backward(retain_graph=True); b.backward()` add the
# same two gradients in a different order; a forward of the whole batch sliced
# afterwards and a forward of the slice run matmuls of different shapes, whose
# float32 blocking differs. Measured on the corpus (a2c_shared_trunk summed,
# epoch_forward_scheduler sliced; tests/test_corpus.py EQUIVALENT): up to 7e-9
# absolute on gradients whose largest entry is 0.02 to 0.05, i.e. 1e-7 to 4e-7 of
# the gradient's scale (more, relative, on entries near zero: hence atol). A wrong
# training differs at its first step by the size of a gradient (1e-2 and more, or
# a gradient missing). rtol=1e-4, atol=1e-6 sits orders of magnitude between the two.
RTOL = 1e-4
ATOL = 1e-6


@dataclass
class Step:
    """One optimizer step: the gradients it used and the losses that made them."""

    optimizer: str
    index: int  # 1 for this optimizer's first step
    grads: dict[str, torch.Tensor | None]
    credit: dict[str, list[str]]  # parameter -> the losses whose gradient this step used


@dataclass
class Backward:
    """One backward call (``kind`` "backward" or "grad") and the parameters whose ``.grad`` it changed."""

    loss: str
    kind: str
    line: str
    changed: list[str]


@dataclass
class Record:
    """What a run of a script did: how it ended, its optimizer steps and its backward calls."""

    script: str
    status: str  # "budget" (stopped after k steps), "finished", "error", "timeout"
    error_type: str | None = None
    error_message: str | None = None
    error_line: str | None = None
    steps: list[Step] = field(default_factory=list)
    backwards: list[Backward] = field(default_factory=list)
    optimizers: dict[str, list[str]] = field(default_factory=dict)  # name -> its parameters' names
    modules: dict[str, str] = field(default_factory=dict)  # parameter name -> module name
    aliases: dict[str, list[str]] = field(default_factory=dict)  # module name -> its other names in the script
    seconds: float = 0.0
    path: str | None = None  # the torch.save file

    def __repr__(self) -> str:  # short: pytest prints it in assertion messages, and tensors print slowly
        return f"Record({Path(self.script).parent.name}/{Path(self.script).name}: {self.summary()})"

    def error_kind(self) -> str | None:
        """The :data:`ERROR_KINDS` key of the error the script raised, or None."""
        if self.error_message is None:
            return None
        return next((k for k, words in ERROR_KINDS.items() if words in self.error_message), None)

    def step_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.steps:
            counts[s.optimizer] = max(counts.get(s.optimizer, 0), s.index)
        return counts

    def summary(self) -> str:
        """One line: how the run ended."""
        counts = ", ".join(f"{k} x{v}" for k, v in sorted(self.step_counts().items())) or "no step"
        end = {"budget": "ran to the step budget", "finished": "finished", "timeout": "timed out"}.get(
            self.status, f"failed with {self.error_type}: {(self.error_message or '').partition(chr(10))[0][:120]}"
        )
        return f"{end} ({counts})"

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Record:
        d = dict(d)
        d["steps"] = [Step(**s) for s in d.get("steps", [])]
        d["backwards"] = [Backward(**b) for b in d.get("backwards", [])]
        return Record(**d)

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("steps", "backwards")},
            "steps": [s.__dict__ for s in self.steps],
            "backwards": [b.__dict__ for b in self.backwards],
        }


# ---------------------------------------------------------------------------------------------
# The parent side


def run(
    script_path: str | os.PathLike[str],
    steps: int = 3,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 60,
    out: str | os.PathLike[str] | None = None,
) -> Record:
    """Run ``script_path`` as ``python script_path`` for ``steps`` steps per optimizer; its :class:`Record`.

    The record is also written to ``out`` when given (its path is then ``Record.path``).
    """
    with tempfile.TemporaryDirectory(prefix="oracle-") as folder:
        rec = run_many([script_path], steps=steps, cwd=cwd, timeout=timeout, out_dir=folder)[0]
        if out is not None and rec.path is not None:
            shutil.copyfile(rec.path, out)
        rec.path = str(out) if out is not None and rec.path is not None else None
    return rec


def run_many(
    scripts: Sequence[str | os.PathLike[str]],
    steps: int = 3,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 60,
    out_dir: str | os.PathLike[str] | None = None,
) -> list[Record]:
    """:func:`run` for several scripts in one process (one torch import), each in a fresh namespace.

    Each script gets ``timeout`` seconds (an alarm in the child). A script that
    kills the process is rerun alone, so one crash does not lose the others.
    The records' files stay in ``out_dir`` when given (``Record.path``); without it
    they go to a temporary folder that is removed before this returns.
    """
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="oracle-") as folder:
            records = run_many(scripts, steps=steps, cwd=cwd, timeout=timeout, out_dir=folder)
        for rec in records:
            rec.path = None
        return records
    if not isinstance(steps, int) or steps < 1:
        raise ValueError("steps must be a positive int: the number of steps each optimizer may take")
    paths = [str(Path(s).resolve()) for s in scripts]
    for p in paths:
        if not Path(p).is_file():
            raise ValueError(f"no script at {p}: pass the path of a Python file")
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    outs = [str(folder / f"{i:03d}-{Path(p).parent.name}-{Path(p).stem}.pt") for i, p in enumerate(paths)]
    args = [sys.executable, str(Path(__file__).resolve()), "--child", str(steps), str(timeout)]
    for p, o in zip(paths, outs):
        args += [p, o]
    try:
        stderr = subprocess.run(
            args,
            cwd=cwd,
            timeout=timeout * len(paths) + 60,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            check=False,
        ).stderr
    except subprocess.TimeoutExpired:  # the child's own alarms failed to stop a script (stuck in C code)
        return [
            Record.from_dict(torch.load(o, weights_only=True)) if Path(o).exists() else Record(p, "timeout")
            for p, o in zip(paths, outs)
        ]
    records = []
    for p, o in zip(paths, outs):
        if not Path(o).exists() and len(paths) > 1:
            records.append(run_many([p], steps=steps, cwd=cwd, timeout=timeout, out_dir=folder)[0])
            continue
        if not Path(o).exists():
            tail = stderr.decode(errors="replace").strip().splitlines()[-3:]
            message = "the oracle's process died" + (": " + " / ".join(tail) if tail else "")
            records.append(Record(script=p, status="error", error_type="crash", error_message=message))
            continue
        rec = Record.from_dict(torch.load(o, weights_only=True))
        rec.path = o
        records.append(rec)
    return records


_BINOPS_KEEP_LEFT = (ast.Div,)


def loss_terms(expr: str) -> list[str]:
    """The named losses in a backward's expression.

    ``a + 0.5 * b`` -> ``["a", "b"]``; ``loss / ACCUM`` -> ``["loss"]``; ``[a, b]`` -> ``["a", "b"]``.
    """
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return [expr.strip()]

    def terms(n: ast.expr) -> list[str]:
        if isinstance(n, (ast.List, ast.Tuple)):  # torch.autograd.backward([loss_a, loss_b])
            return [t for e in n.elts for t in terms(e)]
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
            return terms(n.left) + terms(n.right)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            if isinstance(n.left, ast.Constant):
                return terms(n.right)
            if isinstance(n.right, ast.Constant):
                return terms(n.left)
        if isinstance(n, ast.BinOp) and isinstance(n.op, _BINOPS_KEEP_LEFT):
            return terms(n.left)
        if isinstance(n, ast.UnaryOp):
            return terms(n.operand)
        return [ast.unparse(n)]

    return terms(node)


def trained(record: Record) -> dict[str, set[str]]:
    """What trained what: for each loss, the modules whose parameters an optimizer step changed with its gradient."""
    table: dict[str, set[str]] = {}
    for step in record.steps:
        for param, losses in step.credit.items():
            module = record.modules.get(param, param)
            for loss in losses:
                for term in loss_terms(loss):
                    table.setdefault(term, set()).add(module)
    return table


def canonical(record: Record, module: str) -> str:
    """The name the record uses for a module the script also calls ``module`` (``model`` in a helper -> ``classifier``)."""
    if module in record.aliases:
        return module
    return next((name for name, others in record.aliases.items() if module in others), module)


def optimizer_modules(record: Record) -> dict[str, set[str]]:
    """For each optimizer, the modules whose parameters it holds."""
    return {name: {record.modules.get(p, p) for p in params} for name, params in record.optimizers.items()}


def compare(a: Record, b: Record, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """The differences between two runs, as sentences; empty when every optimizer step used equal gradients.

    Steps are matched by optimizer name and index; gradients with
    ``torch.allclose(rtol, atol)`` (NOTE [Tolerance] says why a tolerance), a NaN equal to a NaN in the same entry
    (a script whose own arithmetic overflows, run twice, computes the same training; a NaN where the other run has a
    number still differs).
    """
    out: list[str] = []
    na, nb = Path(a.script).name, Path(b.script).name
    if a.status != b.status and "error" in (a.status, b.status):
        out.append(f"{na} {a.summary()}; {nb} {b.summary()}")
    ca, cb = a.step_counts(), b.step_counts()
    for opt in sorted(set(ca) | set(cb)):
        if ca.get(opt, 0) != cb.get(opt, 0):
            out.append(f"{opt} stepped {ca.get(opt, 0)} times in {na}, {cb.get(opt, 0)} in {nb}")
    sb = {(s.optimizer, s.index): s for s in b.steps}
    for s in a.steps:
        t = sb.get((s.optimizer, s.index))
        if t is None:
            continue
        where = f"{s.optimizer} step {s.index}"
        for p in sorted(set(s.grads) | set(t.grads)):
            if p not in s.grads or p not in t.grads:
                out.append(f"{where}: {p} is held by the optimizer in only one of {na}, {nb}")
                continue
            ga, gb = s.grads[p], t.grads[p]
            if ga is None or gb is None:
                if (ga is None) != (gb is None):
                    none, has = (na, nb) if ga is None else (nb, na)
                    out.append(f"{where}: {p} has no gradient in {none} but one in {has}")
                continue
            if ga.shape != gb.shape:
                out.append(f"{where}: {p}'s gradient has shape {list(ga.shape)} in {na}, {list(gb.shape)} in {nb}")
            elif not torch.allclose(ga, gb, rtol=rtol, atol=atol, equal_nan=True):
                diff = (ga - gb).nan_to_num(nan=float("inf")).abs().max().item()
                scale = max(ga.abs().max().item(), gb.abs().max().item())
                out.append(f"{where}: {p}'s gradient differs (max |a - b| = {diff:.3g}, largest entry {scale:.3g})")
    return out


# ---------------------------------------------------------------------------------------------
# The child side: run scripts with the observers installed


class _BudgetReached(BaseException):
    """Raised from an optimizer step post hook: every optimizer has used its step budget."""


class _Timeout(BaseException):
    """Raised by the alarm: the script used its time."""


# Values whose attributes are not looked into for modules and optimizers (one level into plain objects, lists,
# tuples and dicts only).
_NOT_HOLDERS = (
    torch.nn.Module,
    torch.optim.Optimizer,
    torch.Tensor,
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
)


class _Observer:
    def __init__(self, script: str, steps: int) -> None:
        self.script = os.path.realpath(script)
        self.budget = steps
        self.optimizers: list[torch.optim.Optimizer] = []
        self.counts: dict[int, int] = {}
        self.pending: dict[int, set[str]] = {}
        self.record = Record(script=script, status="finished")
        self.depth = 0
        self.opt_owner: dict[str, int] = {}  # optimizer name -> the id of the optimizer it names

    # -- names -----------------------------------------------------------------------------
    def _scopes(self) -> list[dict[str, Any]]:
        """The script's namespaces on the stack, outermost first (module globals, then frames outer to inner)."""
        frames = []
        f = sys._getframe(1)
        while f is not None:
            if os.path.realpath(f.f_code.co_filename) == self.script:
                frames.append(f)
            f = f.f_back
        scopes: list[dict[str, Any]] = []
        if frames:
            scopes.append(frames[-1].f_globals)
        scopes += [f.f_locals for f in reversed(frames) if f.f_code.co_name != "<module>"]
        return scopes

    @staticmethod
    def _bindings(scopes: list[dict[str, Any]]) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for scope in scopes:
            for name, value in list(scope.items()):
                if name.startswith("__"):
                    continue
                out.append((name, value))
                if isinstance(value, (list, tuple, dict)):  # optimizers in a list, models in a dict
                    items = value.items() if isinstance(value, dict) else enumerate(value)
                    out += [
                        (f"{name}[{k!r}]", v)
                        for k, v in items
                        if isinstance(v, (torch.nn.Module, torch.optim.Optimizer))
                    ]
                elif not isinstance(value, _NOT_HOLDERS) and hasattr(value, "__dict__"):
                    try:
                        attrs = list(vars(value).items())
                    except TypeError:
                        continue
                    out += [
                        (f"{name}.{k}", v) for k, v in attrs if isinstance(v, (torch.nn.Module, torch.optim.Optimizer))
                    ]
        return out

    def names(self) -> tuple[dict[int, str], dict[int, str], dict[int, str]]:
        """(parameter id -> name, parameter id -> module name, optimizer id -> name), from the stack now."""
        bindings = self._bindings(self._scopes())
        opt_names: dict[int, str] = {}
        best: dict[int, tuple[int, int, str, str, int]] = {}
        bound: dict[int, list[str]] = {}  # module or tensor id -> every name it has on the stack now
        for order, (name, value) in enumerate(bindings):
            if isinstance(value, torch.optim.Optimizer):
                opt_names.setdefault(id(value), name)
            elif isinstance(value, torch.nn.Module):
                bound.setdefault(id(value), []).append(name)
                params = list(value.named_parameters())
                for pname, p in params:
                    cand = (len(params), order, f"{name}.{pname}", name, id(value))
                    if id(p) not in best or cand[:2] < best[id(p)][:2]:
                        best[id(p)] = cand
            elif isinstance(value, torch.Tensor) and value.requires_grad:
                bound.setdefault(id(value), []).append(name)
                cand = (0, order, name, name, id(value))
                if id(value) not in best or cand[:2] < best[id(value)][:2]:
                    best[id(value)] = cand
        for _, _, _, module, owner in best.values():
            known = self.record.aliases.setdefault(module, [])
            known += [n for n in bound.get(owner, []) if n != module and n not in known]
        for i, opt in enumerate(self.optimizers):
            opt_names.setdefault(id(opt), f"optimizer{i}")
            # One name, one optimizer: a loop variable (`for opt in optimizers: opt.step()`) names each
            # optimizer in turn; the second one it named gets its creation-order name instead.
            owner = self.opt_owner.setdefault(opt_names[id(opt)], id(opt))
            if owner != id(opt):
                opt_names[id(opt)] = f"optimizer{i}"
                self.opt_owner.setdefault(opt_names[id(opt)], id(opt))
        pnames = {k: v[2] for k, v in best.items()}
        mnames = {k: v[3] for k, v in best.items()}
        for opt in self.optimizers:
            for j, p in enumerate(self._params(opt)):
                if id(p) not in pnames:
                    pnames[id(p)] = mnames[id(p)] = f"{opt_names[id(opt)]}.param{j}"
        return pnames, mnames, opt_names

    @staticmethod
    def _params(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for g in opt.param_groups for p in g["params"]]

    def _all_params(self) -> dict[int, torch.Tensor]:
        return {id(p): p for opt in self.optimizers for p in self._params(opt)}

    def _forget_cleared(self) -> None:
        for pid, p in self._all_params().items():
            if p.grad is None or not bool(p.grad.any()):
                self.pending[pid] = set()

    # -- hooks -----------------------------------------------------------------------------
    def optimizer_created(self, opt: torch.optim.Optimizer) -> None:
        if all(o is not opt for o in self.optimizers):
            self.optimizers.append(opt)

    def step_pre(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.optimizer_created(opt)
        self._forget_cleared()
        pnames, mnames, onames = self.names()
        name = onames[id(opt)]
        self.counts[id(opt)] = self.counts.get(id(opt), 0) + 1
        params = self._params(opt)
        grads = {pnames[id(p)]: (None if p.grad is None else p.grad.detach().clone()) for p in params}
        credit = {pnames[id(p)]: sorted(self.pending.get(id(p), ())) for p in params}
        self.record.steps.append(Step(name, self.counts[id(opt)], grads, credit))
        self.record.optimizers[name] = [pnames[id(p)] for p in params]
        for p in params:
            self.record.modules[pnames[id(p)]] = mnames[id(p)]

    def step_post(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        done = all(self.counts.get(id(o), 0) >= self.budget for o in self.optimizers)
        if done or max(self.counts.values(), default=0) >= CAP * self.budget:
            raise _BudgetReached

    def caller_expression(self, kind: str) -> tuple[str, str, Any]:
        """(the loss's source text, the caller's line, the caller's frame) of the backward call being made."""
        f = sys._getframe(2)
        while f is not None and os.path.realpath(f.f_code.co_filename) == os.path.realpath(__file__):
            f = f.f_back
        if f is None:
            return "?", "?", None
        where = f"{Path(f.f_code.co_filename).name}:{f.f_lineno}"
        try:
            positions = list(f.f_code.co_positions())[f.f_lasti // 2]
            lines = Path(f.f_code.co_filename).read_text().splitlines()
            l0, l1, c0, c1 = positions
            assert None not in (l0, l1, c0, c1)
            if l0 == l1:
                text = lines[l0 - 1][c0:c1]
            else:
                text = "\n".join([lines[l0 - 1][c0:], *lines[l0 : l1 - 1], lines[l1 - 1][:c1]])
            call = ast.parse(text.strip(), mode="eval").body
        except Exception:
            return "?", where, f
        if isinstance(call, ast.Call):
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "backward" and not _is_torch_autograd(func.value):
                return ast.unparse(func.value), where, f
            first = (
                call.args[0]
                if call.args
                else next((k.value for k in call.keywords if k.arg in ("tensors", "outputs")), None)
            )
            if first is not None:
                return ast.unparse(first), where, f
        return ast.unparse(call), where, f

    def wrap_backward(self, kind: str, fn: Any) -> Any:
        observer = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if observer.depth:
                return fn(*args, **kwargs)
            loss, where, frame = observer.caller_expression(kind)
            reach = _term_leaves(loss, frame)
            del frame
            observer._forget_cleared()
            params = observer._all_params()
            before = {pid: (None if p.grad is None else p.grad.detach().clone()) for pid, p in params.items()}
            observer.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                observer.depth -= 1
                changed = []
                for pid, p in params.items():
                    old, new = before[pid], p.grad
                    if new is None:
                        continue
                    if (old is None and bool(new.any())) or (old is not None and not torch.equal(old, new)):
                        changed.append(pid)
                        credit = [t for t, leaves in reach.items() if pid in leaves] if reach else [loss]
                        observer.pending.setdefault(pid, set()).update(credit)
                pnames = observer.names()[0] if changed else {}
                observer.record.backwards.append(Backward(loss, kind, where, [pnames[pid] for pid in changed]))

        return wrapper


def _term_leaves(loss: str, frame: Any) -> dict[str, set[int]] | None:
    """For a backward of several named losses (``a + 0.5 * b``, ``[a, b]``): the leaf tensors each one reaches.

    One backward call changes the gradients of all its terms at once; the graph
    tells which term reached which parameter. None when there is one term, or a
    term is not a tensor held in a variable of the caller (then the whole
    expression is credited).
    """
    terms = loss_terms(loss)
    if len(terms) < 2 or frame is None:
        return None
    out: dict[str, set[int]] = {}
    for term in terms:
        value = _lookup(term, frame)
        if not isinstance(value, torch.Tensor) or not value.requires_grad:
            return None
        leaves: set[int] = set()
        if value.grad_fn is None:
            leaves.add(id(value))
        seen: set[Any] = set()
        stack = [value.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            variable = getattr(node, "variable", None)
            if isinstance(variable, torch.Tensor):
                leaves.add(id(variable))
            stack.extend(n for n, _ in node.next_functions)
        out[term] = leaves
    return out


def _lookup(term: str, frame: Any) -> Any:
    """The value of a name or an attribute chain (``self.loss``) in ``frame``, without running any code; None if none."""
    try:
        node = ast.parse(term, mode="eval").body
    except SyntaxError:
        return None
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    scopes = (frame.f_locals, frame.f_globals)
    value = next((scope[node.id] for scope in scopes if node.id in scope), None)
    for attr in chain:
        value = vars(value).get(attr) if hasattr(value, "__dict__") else None
    return value


def _is_torch_autograd(node: ast.expr) -> bool:
    return ast.unparse(node) in ("torch.autograd", "autograd")


def _child(steps: int, timeout: float, pairs: list[tuple[str, str]]) -> None:
    import runpy
    import signal
    import traceback

    import torch.optim.optimizer as _optim

    torch.set_num_threads(1)
    # Warm up torch's lazy initialisation (first kernels, the optimizers' modules) before any hook exists,
    # so that the first script's seconds are its own.
    warm = torch.nn.Linear(2, 1)
    warm(torch.ones(1, 2)).sum().backward()
    torch.optim.SGD(warm.parameters(), lr=0.1).step()
    originals = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad, torch.optim.Optimizer.__init__)
    state: dict[str, _Observer] = {}

    def init(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
        originals[3](self, *args, **kwargs)
        if "o" in state:
            state["o"].optimizer_created(self)

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Timeout

    signal.signal(signal.SIGALRM, on_alarm)
    pre = _optim.register_optimizer_step_pre_hook(lambda o, a, k: state["o"].step_pre(o, a, k))
    post = _optim.register_optimizer_step_post_hook(lambda o, a, k: state["o"].step_post(o, a, k))
    for script, out in pairs:
        obs = state["o"] = _Observer(script, steps)
        torch.Tensor.backward = obs.wrap_backward("backward", originals[0])  # type: ignore[method-assign]
        torch.autograd.backward = obs.wrap_backward("backward", originals[1])
        torch.autograd.grad = obs.wrap_backward("grad", originals[2])
        torch.optim.Optimizer.__init__ = init  # type: ignore[method-assign]
        rec = obs.record
        argv, path0, cwd = sys.argv, sys.path[0], os.getcwd()
        sys.argv, sys.path[0] = [script], str(Path(script).parent)
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            runpy.run_path(script, run_name="__main__")
        except _BudgetReached:
            rec.status = "budget"
        except _Timeout:
            rec.status = "timeout"
        except SystemExit as err:
            rec.status = "finished" if err.code in (0, None) else "error"
            if rec.status == "error":
                rec.error_type, rec.error_message = "SystemExit", str(err.code)
        except BaseException as err:
            rec.status, rec.error_type, rec.error_message = "error", type(err).__name__, str(err)
            frames = [
                fs for fs in traceback.extract_tb(err.__traceback__) if os.path.realpath(fs.filename) == obs.script
            ]
            if frames:
                rec.error_line = f"{frames[-1].lineno}: {frames[-1].line}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            rec.seconds = time.perf_counter() - start
            sys.argv, sys.path[0] = argv, path0
            os.chdir(cwd)
            (
                torch.Tensor.backward,  # type: ignore[method-assign]
                torch.autograd.backward,
                torch.autograd.grad,
                torch.optim.Optimizer.__init__,  # type: ignore[method-assign]
            ) = originals
        torch.save(rec.to_dict(), out)
    pre.remove()
    post.remove()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        rest = sys.argv[4:]
        _child(int(sys.argv[2]), float(sys.argv[3]), list(zip(rest[::2], rest[1::2])))
    else:
        for rec in run_many(sys.argv[1:]):
            print(
                json.dumps(
                    {
                        "script": rec.script,
                        "run": rec.summary(),
                        "trained": {k: sorted(v) for k, v in trained(rec).items()},
                        "seconds": round(rec.seconds, 3),
                    }
                )
            )
