"""Seeing in-place writes and backward calls: thin wrappers around torch's entry points.

A tracker must know *who* moved a saved tensor's version counter and *which*
backward call failed. gradlab wraps the entry points where that happens:

* every in-place tensor method (``add_``, ``mul_``, ``__iadd__``, ``__setitem__``,
  ``copy_``, ...), the in-place functions of the ``torch`` namespace (``relu_``,
  ``_foreach_add_``, ...), of ``torch._C._nn`` (what ``F.leaky_relu(inplace=True)``
  and its kin call), of ``torch._VF`` (``F.dropout(inplace=True)``,
  ``nn.Dropout(inplace=True)``, ``F.threshold(inplace=True)``) and the names ``torch.nn.functional``
  binds to them (``F.relu_``, ``F.elu_``); what is left out,
  and why, is :data:`NOT_WRAPPED` (``tests/test_inplace_coverage.py`` holds every
  in-place op of torch against the two);
* ``torch.autograd.backward`` (which ``Tensor.backward`` calls) and ``torch.autograd.grad``,
  for the tracker and for :func:`gradlab.record_training` (:func:`observe_backward`): one
  wrapper, one install count, one restore;
* optimizer steps, through torch's public global step hooks;
* the few entry points that cut a graph (NOTE [Cuts]) and those that return several
  views of one tensor (NOTE [Multi-view ops]);
* ``torch.autograd.graph.disable_saved_tensors_hooks``, so that gradlab steps aside
  inside the ``torch.func`` transforms that refuse saved-tensor hooks (NOTE [Stepping aside]);
* ``warnings._showwarnmsg``, so that a warning torch raises inside a wrapped call keeps
  the user's frame (NOTE [Warnings keep the user's frame]).

NOTE [Wrappers, not a function mode]
A ``TorchFunctionMode`` sees every torch call, but each call through it costs
about 4 microseconds: 1.49x on the course's training step even with an empty
mode (``benchmarks/``). In-place writes and backward calls are a handful per
step, so wrapping only those entry points costs almost nothing: every other op
runs untouched. The wrappers are installed when the first tracker of the process
starts and removed when the last one stops; while installed, a call from a thread
with no active tracker goes straight to torch (one thread-local lookup). They
return torch's result and raise torch's exceptions unchanged. Writes made from
C++ (``out=`` arguments, batch-norm running statistics) are not named; the
version re-check still catches the stale tensor, and the diagnosis then says the
writer is unknown. A fused optimizer step writes from C++ without moving the
counter: the step hooks compare fingerprints instead (:mod:`gradlab.fingerprint`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from . import internals, session
from .i18n import _t
from .location import user_frame
from .notices import GradlabWarning

__all__ = [
    "NOT_WRAPPED",
    "NOT_WRITES",
    "install",
    "uninstall",
    "installed",
    "patched",
    "observe_backward",
    "BackwardObserver",
    "step_closure",
    "with_closure",
]

# In-place operators that do not end in "_".
_INPLACE_DUNDERS = (
    "__setitem__",
    "__iadd__",
    "__isub__",
    "__imul__",
    "__itruediv__",
    "__ifloordiv__",
    "__imod__",
    "__ipow__",
    "__iand__",
    "__ior__",
    "__ixor__",
    "__ilshift__",
    "__irshift__",
    "__imatmul__",
)
#: Ends in "_" but never writes tensor data.
NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "_backward_hooks_"})

#: The in-place entry points gradlab leaves alone on purpose, each with the reason.
NOT_WRAPPED: dict[str, str] = {
    "torch.ops.aten.<op>_": (
        "the dispatcher's own operator handles (what torch.compile, torch.func and custom ops call): "
        "wrapping them would put Python in front of every dispatcher call; the version re-check still "
        "catches a stale tensor they wrote, and the diagnosis says the writer is unknown"
    ),
    "torch._C._VariableFunctions.<op>_": (
        "a read-only class; Python code reaches these functions through torch.<op>_ and torch._VF.<op>_, both wrapped"
    ),
    "aten ops without a Python binding": (
        "reached only from C++ or through torch.ops.aten (above): _no_grad_fill_, _no_grad_normal_, "
        "_no_grad_uniform_, _no_grad_zero_ (the Python functions of torch.nn.init with these names call "
        "wrapped tensor methods), copy_sparse_to_sparse_ (called from C++ by a sparse tensor's copy method, which "
        "is wrapped) and shallow_copy_data_ (torch 2.15: no Python binding, measured)"
    ),
    "requires_grad_, share_memory_, retain_grad_, _backward_hooks_": "their names end in _ but they write no data",
}

_lock = threading.Lock()
_users = 0
_patched: list[tuple[Any, str, Any, Any]] = []  # (owner, name, the owner's own entry or _ABSENT, wrapper)
_hooks: list[Any] = []
_filters: list[tuple[Any, ...]] = []  # the warnings filter install() added (NOTE [Warnings keep the user's frame])

#: What :func:`gradlab.record_training` runs around each ``torch.autograd.backward``:
#: ``observer(original, args, kwargs)`` calls ``original(*args, **kwargs)`` and returns its result.
BackwardObserver = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]
_observers: tuple[BackwardObserver, ...] = ()  # outermost last; process-wide, like the patch they replace


_FUNCTION_TYPES = internals._FUNCTION_TYPES
_BUILTINS = type(len)  # a function of C code (F.relu_); a Python function of F calls wrapped entry points itself
_ABSENT = object()  # the owner's own __dict__ had no such entry: the name was inherited


def _inplace_name(name: str) -> bool:
    return name.endswith("_") and not name.startswith("__") and name not in NOT_WRITES


def _public_inplace(name: str) -> bool:
    return _inplace_name(name) and not name.startswith("_")


def _entry_points() -> Iterator[tuple[Any, str, str]]:
    """``(owner, attribute, label)`` for every in-place entry point we wrap.

    The public ones are found here; the private ones (``torch._foreach_add_``, ...)
    and those of ``torch._C._nn`` through :mod:`gradlab.internals`.
    """
    for name in _INPLACE_DUNDERS:
        if isinstance(inspect.getattr_static(torch.Tensor, name, None), _FUNCTION_TYPES):
            yield torch.Tensor, name, name
    for name in dir(torch.Tensor):
        if _public_inplace(name) and isinstance(inspect.getattr_static(torch.Tensor, name, None), _FUNCTION_TYPES):
            yield torch.Tensor, name, name
    for name in dir(torch):
        if _public_inplace(name) and isinstance(getattr(torch, name, None), _FUNCTION_TYPES):
            yield torch, name, name
    for owner, name in internals.private_inplace_functions():
        if _inplace_name(name):
            yield owner, name, name
    for module, name in internals.nn_functions():
        yield module, name, name
    for module, name in internals.vf_functions():
        if _inplace_name(name):
            yield module, name, name
    # torch.nn.functional binds its own names to torch's in-place builtins (F.relu_ is torch.relu_, F.elu_ is
    # torch._C._nn.elu_) at import: wrapping torch's names leaves those bindings as they were
    functional = torch.nn.functional
    for name in dir(functional):
        if _public_inplace(name) and isinstance(getattr(functional, name, None), _BUILTINS):
            yield functional, name, name


def _inplace_wrapper(original: Callable[..., Any], label: str) -> Callable[..., Any]:
    local = session.thread_state()

    @functools.wraps(original)
    def inplace(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        recorder = local.recorder
        if recorder is None or recorder.in_step:  # no tracker here, or inside optimizer.step()
            return original(*args, **kwargs)
        outer = local.writing
        local.writing = (original, args, kwargs)  # NOTE [The output of an in-place op on a view] in saved.py
        try:
            return recorder.record_inplace(original, label, args, kwargs)
        except RuntimeError as e:  # torch's own error, raised unchanged (a note may be added)
            recorder.inplace_failed(e, label, args, kwargs)
            raise
        finally:
            local.writing = outer

    return inplace


# NOTE [One-shot arguments]
# torch.autograd.grad(loss, model.parameters()) passes a generator: torch turns it into
# a tuple once. A wrapper that reads the inputs first (the recorder, record_training)
# would consume it, and torch would then see nothing ("`inputs` argument to `grad()`
# cannot be empty"). So every one-shot iterator among the arguments is read into a
# tuple before anybody reads it; gradlab reads the tuple, and torch gets a new iterator
# of the same kind over the same tensors (a generator for a generator): what it would
# have got. A torch that refuses a generator (torch 2.4's backward(inputs=...) asks for
# its len()) refuses it under gradlab too, with the same message.
def _reusable(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], dict[int | str, type]]:
    """``args`` and ``kwargs`` with every one-shot iterator read into a tuple, and the kind of each (by place)."""
    kinds: dict[int | str, type] = {}
    if all(type(a) in _NOT_ITERATORS for a in args) and all(type(v) in _NOT_ITERATORS for v in kwargs.values()):
        return args, kwargs, kinds  # the usual call (loss.backward()): no ABC check per argument
    if any(isinstance(a, Iterator) for a in args):
        kinds.update((i, type(a)) for i, a in enumerate(args) if isinstance(a, Iterator))
        args = tuple(tuple(a) if isinstance(a, Iterator) else a for a in args)
    if any(isinstance(v, Iterator) for v in kwargs.values()):
        kinds.update((k, type(v)) for k, v in kwargs.items() if isinstance(v, Iterator))
        kwargs = {k: tuple(v) if isinstance(v, Iterator) else v for k, v in kwargs.items()}
    return args, kwargs, kinds


# Argument types that are surely no one-shot iterator (what loss.backward() passes).
_NOT_ITERATORS = frozenset({torch.Tensor, torch.nn.Parameter, type(None), bool, int, float, tuple, list, dict})
_TUPLE_ITERATOR: type = type(iter(()))
_LIST_ITERATOR: type = type(iter([]))


def _again(items: Any, kind: type) -> Iterator[Any]:
    """A new one-shot iterator over ``items``, of the kind the user passed (a generator for other kinds)."""
    if kind is _TUPLE_ITERATOR:
        return iter(tuple(items))
    if kind is _LIST_ITERATOR:
        return iter(list(items))
    return (item for item in items)


def _handing_back(original: Callable[..., Any], kinds: dict[int | str, type]) -> Callable[..., Any]:
    """``original``, given its one-shot iterators back where the user passed them (NOTE [One-shot arguments])."""
    if not kinds:
        return original

    def handed_back(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        args = tuple(_again(a, kinds[i]) if i in kinds else a for i, a in enumerate(args))
        kwargs = {k: _again(v, kinds[k]) if k in kinds else v for k, v in kwargs.items()}
        return original(*args, **kwargs)

    return handed_back


def _backward_wrapper(original: Callable[..., Any], kind: str) -> Callable[..., Any]:
    local = session.thread_state()

    @functools.wraps(original)
    def backward(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        recorder = local.recorder
        observers = _observers if kind == "autograd.backward" else ()
        if recorder is None and not observers:
            return original(*args, **kwargs)
        args, kwargs, kinds = _reusable(args, kwargs)  # NOTE [One-shot arguments]
        call = _handing_back(original, kinds)
        if recorder is not None and not observers:
            return recorder.record_backward(call, kind, args, kwargs)
        if recorder is not None:
            record = recorder.record_backward
            call = _as_call(lambda inner, a, k: record(inner, kind, a, k), call)
        for observer in observers:  # the tracker's recorder innermost, then each record_training block
            call = _as_call(observer, call)
        return call(*args, **kwargs)

    return backward


def _as_call(observer: BackwardObserver, inner: Callable[..., Any]) -> Callable[..., Any]:
    """``inner`` run through ``observer``, as a plain function of the backward's arguments."""

    def call(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return observer(inner, args, kwargs)

    return call


def observe_backward(observer: BackwardObserver) -> Callable[[], None]:
    """Run ``observer`` around every ``torch.autograd.backward`` of the process until the returned function is called.

    Installs the wrappers as a tracker does (one install count with the trackers:
    whoever exits last restores torch exactly, in any order). The returned
    function removes this observer and undoes its install; calling it again does
    nothing.
    """
    global _observers
    install()
    with _lock:
        _observers = (*_observers, observer)
    done = False

    def remove() -> None:
        global _observers
        nonlocal done
        if done:
            return
        done = True
        with _lock:
            kept = list(_observers)
            for i in range(len(kept) - 1, -1, -1):
                if kept[i] is observer:
                    del kept[i]
                    break
            _observers = tuple(kept)
        uninstall()

    return remove


# NOTE [Cuts]
# The entry points that cut a graph (a result without grad_fn from a tensor that had
# one): .item(), .detach(), torch.tensor(x) and entering no_grad()/inference_mode().
# They are wrapped like the in-place ones, only while a tracker is active, so that
# the note for "element 0 of tensors does not require grad" can name the line.
_CUTS = (
    (torch.Tensor, "item", ".item()"),
    (torch.Tensor, "detach", ".detach()"),
    (torch, "tensor", "torch.tensor(x)"),
    (torch.autograd.grad_mode.no_grad, "__enter__", "torch.no_grad()"),
    (torch.autograd.grad_mode.inference_mode, "__enter__", "torch.inference_mode()"),
)


def _cut_wrapper(original: Callable[..., Any], label: str) -> Callable[..., Any]:
    local = session.thread_state()

    @functools.wraps(original)
    def cut(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        recorder = local.recorder
        if recorder is None or recorder.in_step:  # no tracker here, or inside optimizer.step() (Adam's .item())
            return original(*args, **kwargs)
        grad_before = torch.is_grad_enabled()
        result = original(*args, **kwargs)
        recorder.record_cut(label, args, result, grad_before)
        return result

    return cut


def _zero_grad_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    local = session.thread_state()

    @functools.wraps(original)
    def zero_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder = local.recorder
        if recorder is not None and not recorder.in_step:
            recorder.zero_grad_called(self)  # which parameters the loop zeroes, for the loop's intent
        return original(self, *args, **kwargs)

    return zero_grad


# NOTE [Multi-view ops]
# split, chunk and unbind (also iterating over a tensor: Tensor.__iter__ calls unbind)
# return several views of one tensor; an in-place write to one of them raises "Output N
# of SplitBackward0 is a view and is being modified inplace ... returns multiple views"
# at the write, far from where the views were made. They are wrapped like the cuts, only
# while a tracker is active, so that the note can name both lines. torch.split is Python
# code that calls Tensor.split; tensor_split and its kin return single views (no error).
_MULTI_VIEWS = (
    (torch.Tensor, "split", ".split()"),
    (torch.Tensor, "split_with_sizes", ".split_with_sizes()"),
    (torch.Tensor, "chunk", ".chunk()"),
    (torch.Tensor, "unbind", ".unbind()"),
    (torch, "split_with_sizes", "torch.split_with_sizes()"),
    (torch, "chunk", "torch.chunk()"),
    (torch, "unbind", "torch.unbind()"),
)


def _views_wrapper(original: Callable[..., Any], label: str) -> Callable[..., Any]:
    local = session.thread_state()

    @functools.wraps(original)
    def views(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        recorder = local.recorder
        if recorder is None or recorder.in_step:
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        recorder.record_views(label, result)
        return result

    return views


# NOTE [Stepping aside]
# torch.func.grad, vjp, jacrev and hessian run under
# torch.autograd.graph.disable_saved_tensors_hooks, which raises "torch.func.{grad, vjp,
# jacrev, hessian} don't yet support saved tensor hooks" when any saved-tensor hooks are
# active: a tracker's hooks would make a correct script fail. So while the wrappers are
# installed that context manager is wrapped too: when the only hooks of this thread are
# its tracker's, they are taken off for the transform and put back after it, and gradlab
# warns once that it does not see inside (torch saves there without any hook, so nobody
# records who modifies a tensor saved there). Other hooks (the user's own, those of a
# non-reentrant checkpoint) stay, and torch raises as it would without gradlab.
# torch.compile over a torch.func transform is not covered: dynamo, tracing, calls
# torch's C function for this context manager itself, with gradlab's hooks on the stack.
def _disable_hooks_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    local = session.thread_state()

    @contextlib.contextmanager
    def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
        recorder = local.recorder
        lifted = None
        if recorder is not None and not internals.saved_tensors_hooks_visible():
            _stepped_aside(error_message, can=False)  # torch raises next, as it always did under gradlab
        elif recorder is not None:
            lifted = internals.lift_saved_tensors_hooks(lambda pack: getattr(pack, "__self__", None) is recorder)
        if lifted is not None:
            _stepped_aside(error_message)
        try:
            with original(error_message):
                yield
        finally:
            if lifted is not None:
                internals.push_saved_tensors_hooks(lifted)

    functools.update_wrapper(disable_saved_tensors_hooks, original)
    return disable_saved_tensors_hooks


_said: set[tuple[str, bool]] = set()


def _stepped_aside(error_message: str, can: bool = True) -> None:
    """Say once, at the user's line, what gradlab does not see, or that it cannot step aside (NOTE [Stepping aside])."""
    what = error_message.split(" don't", 1)[0] if " don't" in error_message else error_message
    if (what, can) in _said:
        return
    _said.add((what, can))
    frame = user_frame()
    if can:
        text = _t(
            "gradlab steps aside inside {what}: torch allows no saved-tensor hooks there, so gradlab does not watch "
            "the tensors saved inside and cannot say who modified one of them.",
            what=what,
        )
    else:
        text = _t(
            "gradlab cannot step aside inside {what} on torch {version}, which does not show its saved-tensor "
            "hooks, so torch refuses gradlab's: run this part outside gradlab (torch 2.13 shows them).",
            what=what,
            version=torch.__version__,
        )
    if frame is None:
        warnings.warn(text, GradlabWarning, stacklevel=2)
        return
    try:
        _warn_at(frame, text, GradlabWarning)
    finally:
        del frame


# NOTE [Warnings keep the user's frame]
# A warning torch raises in C++ (TORCH_WARN) is attributed to the Python frame that
# called the C function; one raised by torch's Python code with stacklevel=k, to the
# k-th frame out. With a wrapper in between, the frame that called the C function is
# gradlab's (this file, or the recorder that runs the original), and a walk of k frames
# crosses gradlab's frames and stops short of where Python would stop: a full backward
# hook's warning (stacklevel=5, meant to reach the line that called Tensor.backward)
# lands on torch/_tensor.py. So while the wrappers are installed, a filter lets every
# warning attributed to a gradlab module through ("always": no registry there), and
# warnings._showwarnmsg re-issues a warning at the frame Python would have chosen
# without gradlab: the same walk, counting only frames that are not gradlab's, and
# ending, as Python's does, at "sys:1" ("<sys>:0" from 3.13) when it runs past the user's first frame (the
# runner of `gradlab run` is not the user's program). There Python's filters and
# registry decide, as they would without gradlab; a registry entry the misplaced
# warning made on its way is taken back first. A warning gradlab itself raises at a
# frame it chose stays there. Nothing runs on the wrappers' hot path. The course
# (gradlab.course) is user code here.
_LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_COURSE_DIR = _LIBRARY_DIR + "course" + os.sep
_LIBRARY_MODULES = re.compile(r"gradlab\.(?!course(\.|\Z))[\w.]+\Z")


def _library_frame(filename: str) -> bool:
    return filename.startswith(_LIBRARY_DIR) and not filename.startswith(_COURSE_DIR)


_RUNNER_FILES = (_LIBRARY_DIR + "cli.py", _LIBRARY_DIR + "__main__.py")
_TOP = "top"  # the walk ran past the program's first frame (python says sys:1, or <sys>:0 from 3.13)


def _as_without_gradlab(start: FrameType, filename: str, lineno: int) -> FrameType | str | None:
    """Where Python would have put a warning that ``start`` raised at ``filename:lineno`` had gradlab's frames not
    been on the stack: a frame, :data:`_TOP`, or None when that is where it is already."""
    walked = 0
    frame: FrameType | None = start
    while frame is not None and not (frame.f_code.co_filename == filename and frame.f_lineno == lineno):
        walked += 1
        frame = frame.f_back
    if frame is None:  # a location that is not on the stack (warn_explicit's own): left alone
        return None
    walked += 1
    if _library_frame(start.f_code.co_filename) and not _library_frame(filename):
        return None  # gradlab warned at a frame it chose
    crossed = False
    counted = 0
    frame = start
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_RUNNER_FILES):
            return _TOP
        if _library_frame(name):
            crossed = True
        else:
            counted += 1
            if counted == walked:
                return frame if crossed else None
        frame = frame.f_back
    return _TOP if crossed else None


def _warn_at(frame: FrameType, message: Warning | str, category: type[Warning], source: object = None) -> None:
    """Warn as if ``warnings.warn`` had been called with ``frame`` as the caller's frame.

    No ``module_globals``: ``warnings.warn`` passes none either, and from Python 3.12 ``warn_explicit`` raises
    ValueError for globals whose ``__spec__`` and ``__loader__`` are None (a script run by ``runpy.run_path``, a
    notebook's namespace), where the user's own warning would simply be shown."""
    namespace = frame.f_globals
    registry = namespace.get("__warningregistry__")
    if not isinstance(registry, dict):
        registry = namespace["__warningregistry__"] = {}
    warnings.warn_explicit(
        message,
        category,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=namespace.get("__name__", "<string>"),
        registry=registry,
        source=source,
    )


def _warning_filters() -> list[Any]:
    """``warnings.filters``, the list itself (typeshed calls it a Sequence)."""
    filters: list[Any] = warnings.filters  # type: ignore[assignment]
    return filters


def _showwarnmsg_wrapper(original: Callable[[warnings.WarningMessage], None]) -> Callable[..., None]:
    @functools.wraps(original)
    def showwarnmsg(msg: warnings.WarningMessage) -> None:
        # warnings.warn is C: the frame under this one is the one that warned
        place = _as_without_gradlab(sys._getframe(1), msg.filename, msg.lineno)
        if place is None:
            original(msg)
            return
        try:
            _take_back(msg)
            if isinstance(place, str):
                _warn_at_top(msg.message, msg.category, msg.source)
            else:
                _warn_at(place, msg.message, msg.category, msg.source)
        finally:
            del place

    return showwarnmsg


def _take_back(msg: warnings.WarningMessage) -> None:
    """Undo the once-per-line entry the warning made where it was misplaced (none in gradlab's modules: "always")."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and not (frame.f_code.co_filename == msg.filename and frame.f_lineno == msg.lineno):
        frame = frame.f_back
    if frame is None:
        return
    registry = frame.f_globals.get("__warningregistry__")
    text = str(msg.message) if isinstance(msg.message, Warning) else msg.message
    if isinstance(registry, dict):
        registry.pop((text, msg.category, msg.lineno), None)
    del frame


def _warn_at_top(message: Warning | str, category: type[Warning], source: object = None) -> None:
    """Warn as ``warnings.warn`` does when its stacklevel runs past the first frame: at ``sys:1`` (``<sys>:0`` from
    Python 3.13), with the sys module's registry."""
    namespace = vars(sys)
    registry = namespace.get("__warningregistry__")
    if not isinstance(registry, dict):
        registry = namespace["__warningregistry__"] = {}
    filename, lineno = ("<sys>", 0) if sys.version_info >= (3, 13) else ("sys", 1)
    warnings.warn_explicit(message, category, filename, lineno, module="sys", registry=registry, source=source)


def step_closure(args: Any, kwargs: Any) -> Callable[..., Any] | None:
    """The closure an ``optimizer.step(closure)`` call passes, as a step pre hook sees the call; None without one.

    ``args[0]`` is the optimizer; the closure comes as ``args[1]`` or ``closure=``
    (NOTE [Closure steps] in :mod:`gradlab.steps`).
    """
    closure = kwargs.get("closure") if "closure" in kwargs else (args[1] if len(args) > 1 else None)
    return closure if callable(closure) else None


def with_closure(args: Any, kwargs: Any, closure: Callable[..., Any]) -> tuple[Any, Any]:
    """The step call's ``(args, kwargs)`` with ``closure`` in place of its own (what a step pre hook returns)."""
    if "closure" in kwargs:
        return args, {**kwargs, "closure": closure}
    return (args[0], closure, *args[2:]), kwargs


_thread = session.thread_state()


def _step_pre(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
    recorder = _thread.recorder
    if recorder is None:
        return None
    if len(args) == 1 and not kwargs:  # optimizer.step(): no closure
        recorder.step_started(optimizer)
        return None
    closure = step_closure(args, kwargs)
    wrapped = recorder.step_started(optimizer, closure)
    return None if wrapped is None else with_closure(args, kwargs, wrapped)


def _step_post(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    recorder = _thread.recorder
    if recorder is not None:
        recorder.step_finished(optimizer)


def install() -> None:
    """Wrap the entry points (once per process, however many trackers start)."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        try:
            for owner, name, label in _entry_points():
                _patch(owner, name, _inplace_wrapper(getattr(owner, name), label))
            for owner, name, label in _CUTS:
                _patch(owner, name, _cut_wrapper(getattr(owner, name), label))
            for owner, name, label in _MULTI_VIEWS:
                if hasattr(owner, name):
                    _patch(owner, name, _views_wrapper(getattr(owner, name), label))
            for name, kind in (("backward", "autograd.backward"), ("grad", "autograd.grad")):
                _patch(torch.autograd, name, _backward_wrapper(getattr(torch.autograd, name), kind))
            for owner in (torch.optim.Optimizer, torch.nn.Module):
                _patch(owner, "zero_grad", _zero_grad_wrapper(vars(owner)["zero_grad"]))
            _hooks.append(register_optimizer_step_pre_hook(_step_pre))
            _hooks.append(register_optimizer_step_post_hook(_step_post))
            graph = torch.autograd.graph
            if hasattr(graph, "disable_saved_tensors_hooks"):  # NOTE [Stepping aside]
                _patch(graph, "disable_saved_tensors_hooks", _disable_hooks_wrapper(graph.disable_saved_tensors_hooks))
            if hasattr(warnings, "_showwarnmsg"):  # NOTE [Warnings keep the user's frame]
                _patch(warnings, "_showwarnmsg", _showwarnmsg_wrapper(warnings._showwarnmsg))
                entry = ("always", None, Warning, _LIBRARY_MODULES, 0)
                _warning_filters().insert(0, entry)
                _filters.append(entry)
        except BaseException:
            _restore()
            _users -= 1
            raise


# NOTE [Exact restore]
# Most in-place methods of torch.Tensor are inherited from torch._C.TensorBase:
# they are not in torch.Tensor.__dict__. Setting a wrapper adds an entry there;
# setting back what getattr returned would leave that entry behind (173 of them
# on torch 2.13). So each patch remembers the owner's own entry (or that there
# was none) and the restore puts back that very object, or deletes the entry.
def _patch(owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
    own = vars(owner).get(name, _ABSENT)
    try:
        setattr(owner, name, wrapper)
    except (AttributeError, TypeError):  # a read-only owner: that entry point is not watched
        return
    _patched.append((owner, name, own, wrapper))


def _restore() -> None:
    while _hooks:
        _hooks.pop().remove()
    while _filters:
        entry = _filters.pop()
        kept = _warning_filters()
        for i, item in enumerate(kept):
            if item is entry:  # gone when the user replaced the list (warnings.catch_warnings): nothing to undo
                del kept[i]
                break
    while _patched:
        owner, name, own, wrapper = _patched.pop()
        if vars(owner).get(name) is not wrapper:
            continue  # somebody patched it after us: theirs stays
        if own is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, own)


def uninstall() -> None:
    """Undo one :func:`install`; the last one restores torch exactly as it was."""
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users == 0:
            _restore()


def installed() -> bool:
    """Whether the wrappers are in place now."""
    return bool(_patched)


def patched() -> list[tuple[Any, str]]:
    """``(owner, attribute)`` of every entry point wrapped now (empty when no tracker is active)."""
    return [(owner, name) for owner, name, _, _ in _patched]
