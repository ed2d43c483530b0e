"""Every private torch API gradlab uses, in one place, each one feature-detected.

gradlab reads what autograd keeps for backward, and a few of those facts are only
reachable through underscored torch APIs. Nothing else in gradlab touches them:
every such access goes through a function here. When a torch release renames or
drops one, the function warns once (:class:`gradlab.GradlabWarning`, naming what
gradlab can no longer tell) and returns a neutral answer; gradlab never silently
reports something wrong. ``tests/test_internals.py`` holds one canary test per
access, so a rename fails a test before it reaches a user.

The accesses, and what degrades without each:

=====================================  =============================================
``Tensor._version``                    the version counter (everything; required)
``Tensor._is_view()``                  the "transposed view" wording of torch's message
``torch._C._current_autograd_node()``  which node a backward unpacks for: "freed by"
``Node._sequence_nr()``                which backward freed a node; carried state
``Node._saved_<name>``                 reading saved tensors outside a tracker
``Node._raw_saved_<name>.data``        naming a stale tensor outside a tracker; not
                                       unpacking other hooks' saved tensors
``Node._input_metadata``               the dry run that finds stale tensors (NOTE [Dry run])
``torch._C._nn`` in-place functions    writes by ``F.leaky_relu(inplace=True)`` and kin
``torch._*_`` in-place functions       writes by ``torch._foreach_add_`` and kin
``torch._VF`` in-place functions       writes by ``F.dropout(inplace=True)``, ``F.threshold(inplace=True)``
saved-tensor hooks stack               stepping aside inside ``torch.func`` transforms
(``_top_/_pop_/_push_saved_tensors_``
``default_hooks``)
``_get_sequence_nr()``                 which node a saved tensor's message names
``Transform._cached_x_y``,             a distributions transform's cache that kept a
``Transform._cache_size``              graph across iterations
``Module._forward_pre_hooks``          a weight the deprecated weight_norm's pre-hook
                                       computed at the module's last call
=====================================  =============================================
"""

from __future__ import annotations

import inspect
import operator
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .notices import warn_once

__all__ = [
    "version",
    "is_view",
    "current_node",
    "sequence_nr",
    "node_name",
    "saved_attributes",
    "raw_saved",
    "packed_objects",
    "input_metadata",
    "nn_functions",
    "private_inplace_functions",
    "vf_functions",
    "lift_saved_tensors_hooks",
    "push_saved_tensors_hooks",
    "saved_tensors_hooks_visible",
    "newest_sequence_nr",
    "transform_cache",
    "forward_pre_hooks",
    "check_all",
]

_FUNCTION_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
)


def _missing(feature: str, consequence: str) -> None:
    """Warn once per process that ``feature`` is missing from this torch."""
    warn_once(
        feature,
        f"gradlab: this torch ({torch.__version__}) has no {feature}; {consequence}. "
        "Please report it with your torch version.",
        stacklevel=4,
    )


# -- tensors ---------------------------------------------------------------------------------------

if not hasattr(torch.ones(1), "_version"):  # pragma: no cover - every torch since 0.4 has it
    raise ImportError("gradlab needs Tensor._version (torch's version counter), which this torch lacks")

#: ``t._version``: how many in-place writes the tensor's storage has had (views share it).
version: Callable[[torch.Tensor], int] = operator.attrgetter("_version")


def is_view(t: torch.Tensor) -> bool:
    """Whether ``t`` is a view of another tensor (False when torch cannot tell)."""
    try:
        return bool(t._is_view())
    except AttributeError:
        _missing("Tensor._is_view()", "views are described like other tensors")
        return False


# -- backward nodes --------------------------------------------------------------------------------


def current_node() -> Any | None:
    """The backward node the engine is running on this thread, or None outside a backward."""
    try:
        return torch._C._current_autograd_node()
    except AttributeError:
        _missing("torch._C._current_autograd_node()", "gradlab cannot tell which backward freed a node")
        return None


# NOTE [Custom Function nodes whose output died]
# Before torch 2.13, a custom autograd.Function's node whose output tensor is gone
# answers name(), next_functions and _sequence_nr() with a RuntimeError (2.10-2.12),
# and _sequence_nr() crashes the process on 2.4 (a segfault no except can catch;
# measured with torch 2.4.1). 2.13 keeps the node alive. So on older torch the
# sequence number of a custom node is not asked for at all.
_CUSTOM_NODES_SAFE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


def node_name(fn: Any) -> str:
    """``fn.name()``, or a description when torch cannot answer (see NOTE [Custom Function nodes ...])."""
    try:
        return str(fn.name())
    except RuntimeError:
        return f"{type(fn).__name__} (its output is gone)"


def sequence_nr(fn: Any) -> int | None:
    """The node's sequence number (creation order within a thread), or None."""
    if not _CUSTOM_NODES_SAFE and isinstance(fn, torch.autograd.function.BackwardCFunction):
        return None
    try:
        return int(fn._sequence_nr())
    except AttributeError:
        _missing("Node._sequence_nr()", "gradlab cannot tell which backward freed a node")
        return None
    except (RuntimeError, TypeError):
        return None


_attr_cache: dict[type, tuple[str, ...]] = {}


def saved_attributes(fn: Any) -> tuple[str, ...]:
    """The names of the attributes through which a node hands out what it saved.

    ``_saved_<name>`` for built-in nodes (``_saved_self``, ``_saved_result``, ...);
    ``saved_tensors`` for a custom :class:`torch.autograd.Function`.
    """
    cls = type(fn)
    attrs = _attr_cache.get(cls)
    if attrs is None:
        if isinstance(fn, torch.autograd.function.BackwardCFunction):
            attrs = ("saved_tensors",)
        else:
            attrs = tuple(
                a for a in dir(fn) if a.startswith("_saved_") and not a.endswith(("_sym_sizes", "_sym_strides"))
            )
        _attr_cache[cls] = attrs
    return attrs


def raw_saved(fn: Any, attribute: str) -> list[torch.Tensor | None] | None:
    """The tensors behind a saved attribute, read without torch's version check.

    ``attribute`` is one of :func:`saved_attributes`. The read changes nothing
    (unlike the accessor, it does not refuse a stale tensor), so gradlab can name
    the tensor that was modified. Freed entries are None; None if torch cannot say.
    """
    raw_name = "_raw_saved_tensors" if attribute == "saved_tensors" else "_raw" + attribute
    try:
        raw = getattr(fn, raw_name)
        items = raw if isinstance(raw, (tuple, list)) else [raw]
        return [item.data for item in items]
    except AttributeError:
        _missing(f"Node.{raw_name}[...].data", "outside track(), a stale tensor is named from its shape only")
        return None
    except RuntimeError:
        return None


def packed_objects(fn: Any, attribute: str) -> list[Any] | None:
    """What a node holds for a saved attribute, without unpacking it: a tensor, or what a pack hook returned.

    ``attribute`` is one of :func:`saved_attributes`. Freed entries are None; None
    when torch cannot say (no ``_raw_saved_*``, or the node's buffers are freed).
    Unlike reading the attribute, this runs no unpack hook.
    """
    raw_name = "_raw_saved_tensors" if attribute == "saved_tensors" else "_raw" + attribute
    try:
        raw = getattr(fn, raw_name)
        items = raw if isinstance(raw, (tuple, list)) else [raw]
        return [item.data for item in items]
    except (AttributeError, RuntimeError):
        return None


def input_metadata(fn: Any) -> list[tuple[tuple[int, ...], torch.dtype, torch.device]] | None:
    """Shape, dtype and device of each gradient the node takes, or None if torch does not say."""
    try:
        meta = fn._input_metadata
    except AttributeError:
        _missing("Node._input_metadata", "gradlab cannot dry-run a node to find a stale tensor")
        return None
    except RuntimeError:
        return None
    try:
        return [(tuple(m.shape), m.dtype, m.device) for m in meta]
    except (AttributeError, RuntimeError, TypeError):
        return None


# -- in-place functions outside the torch namespace -----------------------------------------------


def nn_functions() -> Iterator[tuple[Any, str]]:
    """``(torch._C._nn, name)`` for each in-place function there (``leaky_relu_``, ``elu_``, ...).

    ``torch.nn.functional`` calls these for ``inplace=True`` activations.
    """
    module = getattr(torch._C, "_nn", None)
    if module is None:
        _missing("torch._C._nn", "in-place writes of F.leaky_relu(inplace=True) and similar are not named")
        return
    for name in dir(module):
        if name.endswith("_") and not name.startswith("_") and callable(getattr(module, name, None)):
            yield module, name


def private_inplace_functions() -> Iterator[tuple[Any, str]]:
    """``(owner, name)`` for each private in-place function of ``torch`` and ``torch.Tensor``.

    ``torch._foreach_add_``, ``torch._amp_update_scale_``, ``Tensor._coalesced_``, ...:
    underscored, so any torch release may rename or drop them; what is there is
    found by name (an underscore first, one last) and kind (a function), never
    listed. Without any ``torch._foreach_*_`` function, gradlab warns once.
    """
    foreach = False
    for owner in (torch, torch.Tensor):
        for name in dir(owner):
            if not (name.startswith("_") and name.endswith("_")) or name.startswith("__"):
                continue
            if isinstance(inspect.getattr_static(owner, name, None), _FUNCTION_TYPES):
                foreach = foreach or name.startswith("_foreach_")
                yield owner, name
    if not foreach:
        _missing(
            "torch._foreach_*_ functions", "in-place writes by foreach ops are not named (the stale tensor still is)"
        )


def vf_functions() -> Iterator[tuple[Any, str]]:
    """``(torch._VF, name)`` for each in-place function there (``dropout_``, ``threshold_``, ...).

    ``torch.nn.functional`` calls ``_VF.dropout_`` (and ``alpha_dropout_``,
    ``feature_dropout_``, ``feature_alpha_dropout_``, ``threshold_``) for
    ``inplace=True``: ``torch._VF`` is a module that hands out the functions of
    ``torch._C._VariableFunctions``, not those of ``torch``, so wrapping
    ``torch.dropout_`` does not see them. An attribute set on ``torch._VF`` is
    found before that lookup, and deleting it restores the module exactly.
    """
    module = sys.modules.get("torch._VF")
    functions = getattr(torch._C, "_VariableFunctions", None)
    if module is None or functions is None:
        _missing("torch._VF", "in-place writes of F.dropout(inplace=True) and similar are not named")
        return
    for name in dir(functions):
        if name.endswith("_") and not name.startswith("__") and callable(getattr(functions, name, None)):
            yield module, name


# -- the saved-tensor hooks of this thread --------------------------------------------------------


def lift_saved_tensors_hooks(ours: Callable[[Any], bool]) -> tuple[Any, Any] | None:
    """Take this thread's saved-tensor hooks off when they are gradlab's and the only ones; return them.

    ``ours(pack_hook)`` says whether a pack hook is gradlab's. None (and nothing
    changed) when the top hooks are somebody else's or when other hooks lie below
    gradlab's. Give the result back to :func:`push_saved_tensors_hooks`. Raises
    AttributeError when this torch does not show its stack (torch 2.4:
    :func:`saved_tensors_hooks_visible` is False).
    """
    autograd = torch._C._autograd
    top = autograd._top_saved_tensors_default_hooks(True)
    if top is None or not ours(top[0]):
        return None
    autograd._pop_saved_tensors_default_hooks()
    if autograd._top_saved_tensors_default_hooks(True) is not None:  # the user's hooks below: torch decides
        autograd._push_saved_tensors_default_hooks(*top)
        return None
    return (top[0], top[1])


def saved_tensors_hooks_visible() -> bool:
    """Whether this torch shows a thread's saved-tensor hooks (``_top_saved_tensors_default_hooks``: 2.13 does, 2.4 not)."""
    return hasattr(torch._C._autograd, "_top_saved_tensors_default_hooks")


def push_saved_tensors_hooks(hooks: tuple[Any, Any]) -> None:
    """Put back the hooks :func:`lift_saved_tensors_hooks` took off."""
    torch._C._autograd._push_saved_tensors_default_hooks(*hooks)


_get_sequence_nr: Callable[[], int] | None = getattr(torch._C._autograd, "_get_sequence_nr", None)


def newest_sequence_nr() -> int | None:
    """The sequence number of the newest backward node created in this thread, or None.

    A tensor saved while its own ``grad_fn`` has this number is the output of the
    node being built (NOTE [Which node torch names] in gradlab/saved.py). Called on
    every save under a tracker: the function is looked up once.
    """
    if _get_sequence_nr is None:
        _missing("torch._C._autograd._get_sequence_nr()", "gradlab may name a stale tensor's node as it was when saved")
        return None
    return _get_sequence_nr() - 1


def saved_facts(t: torch.Tensor, fn: Any) -> tuple[int | None, bool]:
    """For a save under a tracker, in one call: ``fn``'s sequence number, and whether ``t`` is the output of the node being built.

    ``fn`` is ``t.grad_fn`` (not None). The same answers as :func:`sequence_nr` and
    :func:`newest_sequence_nr` (whose fallbacks it takes when torch lacks either).
    """
    if _get_sequence_nr is not None and _CUSTOM_NODES_SAFE:
        try:
            seq = int(fn._sequence_nr())
            return seq, seq == _get_sequence_nr() - 1
        except (AttributeError, RuntimeError, TypeError):
            pass
    seq_or_none = sequence_nr(fn)
    return seq_or_none, seq_or_none is None or seq_or_none == newest_sequence_nr()


def transform_cache(t: Any) -> tuple[Any, ...]:
    """The (x, y) pair a torch.distributions Transform made with ``cache_size=1`` keeps, or ``()`` (no cache).

    A user's Transform that skipped ``Transform.__init__`` has neither attribute, so a missing
    one is not warned about here: the canary test (:func:`check_all`) catches a rename.
    """
    pair = getattr(t, "_cached_x_y", None)
    return pair if getattr(t, "_cache_size", None) == 1 and isinstance(pair, tuple) else ()


def forward_pre_hooks(m: torch.nn.Module) -> list[Any]:
    """The forward pre-hooks registered on ``m`` (``register_forward_pre_hook``), in order; [] without that dict."""
    hooks = getattr(m, "_forward_pre_hooks", None)
    if hooks is None:
        _missing("Module._forward_pre_hooks", "it cannot tell a weight computed by weight_norm's hook")
        return []
    return list(hooks.values())


def check_all() -> dict[str, bool]:
    """Whether each private access works on this torch (used by the canary tests)."""
    x = torch.ones(2, 2, requires_grad=True)
    y = x.t().exp()
    seen: list[bool] = []

    def unpack(t: torch.Tensor) -> torch.Tensor:
        seen.append(current_node() is not None)
        return t

    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        z = (x * x).sum()
    torch.autograd.backward(z)
    fn = y.grad_fn
    return {
        "version": version(x) == 0,
        "is_view": is_view(x.t()) and not is_view(x),
        "current_node": bool(seen) and all(seen),
        "sequence_nr": sequence_nr(fn) is not None,
        "saved_attributes": "_saved_result" in saved_attributes(fn),
        "raw_saved": (raw_saved(fn, "_saved_result") or [None])[0] is not None,
        "input_metadata": input_metadata(fn) == [((2, 2), torch.float32, torch.device("cpu"))],
        "nn_functions": any(name == "leaky_relu_" for _, name in nn_functions()),
        "private_inplace_functions": (torch, "_foreach_add_") in set(private_inplace_functions()),
        "vf_functions": any(name == "dropout_" for _, name in vf_functions()),
        "transform_cache": _transform_cache_works(),
        "forward_pre_hooks": _pre_hooks_work(),
    }


def _pre_hooks_work() -> bool:
    m = torch.nn.Linear(1, 1)

    def hook(module: Any, args: Any) -> None:
        return None

    m.register_forward_pre_hook(hook)
    return forward_pre_hooks(m) == [hook]


def _transform_cache_works() -> bool:
    from torch.distributions import ExpTransform

    t, x = ExpTransform(cache_size=1), torch.ones(2)
    y = t(x)
    pair = transform_cache(t)
    return len(pair) == 2 and pair[0] is x and pair[1] is y and transform_cache(ExpTransform()) == ()
