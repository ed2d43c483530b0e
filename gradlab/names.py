"""Readable names for tensors: ``n_1.linear_2.weight (transposed view)``, ``output of Sigmoid [3]``."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import torch
from torch import nn

from .i18n import _, _t

__all__ = ["NamesLike", "Namer", "modules_in"]

NamesLike = Mapping[str, nn.Module | torch.Tensor] | nn.Module | Callable[[], Mapping[str, object]] | None


def storage_key(t: torch.Tensor) -> int | None:
    """An integer that views of one storage share (``None`` for tensors without storage)."""
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def modules_in(namespace: Mapping[str, object]) -> dict[str, nn.Module]:
    """The ``nn.Module`` objects bound to public names in ``namespace`` (e.g. ``globals()``).

    Example::

        >>> n_1 = torch.nn.Linear(1, 1)
        >>> sorted(modules_in({"n_1": n_1, "_x": n_1, "k": 3}))
        ['n_1']
    """
    if not isinstance(namespace, Mapping):
        raise TypeError(f"modules_in() takes a mapping such as globals(), not {type(namespace).__name__}")
    return {
        k: v for k, v in namespace.items() if isinstance(k, str) and isinstance(v, nn.Module) and not k.startswith("_")
    }


def _pairs(names: Mapping[str, object]) -> list[tuple[str, torch.Tensor]]:
    out: list[tuple[str, torch.Tensor]] = []
    for key, value in names.items():
        if not isinstance(key, str):
            raise TypeError(f"names= keys must be strings, got {key!r}; pass e.g. names={{'n_1': n_1}}")
        if isinstance(value, nn.Module):
            prefix = f"{key}." if key else ""
            out.extend((f"{prefix}{n}", p) for n, p in value.named_parameters())
            out.extend((f"{prefix}{n}", b) for n, b in value.named_buffers())
        elif isinstance(value, torch.Tensor):
            out.append((key, value))
        else:
            raise TypeError(
                f"names[{key!r}] is a {type(value).__name__}; pass an nn.Module or a tensor for each name, "
                "e.g. names={'n_1': n_1, 'x': x}"
            )
    return out


def resolve(names: NamesLike | Mapping[str, object]) -> Mapping[str, object]:
    """Turn ``names=`` (mapping, zero-argument callable or None) into a mapping."""
    if names is None:
        return {}
    if isinstance(names, nn.Module):
        return {"": names}  # one module: its parameters keep their own names
    if callable(names) and not isinstance(names, Mapping):
        names = names()
    if not isinstance(names, Mapping):  # a callable may return anything
        raise TypeError(
            f"names= must be a mapping of name to nn.Module or tensor (e.g. {{'n_1': n_1}}), not {type(names).__name__}"
        )
    return names


class Namer:
    """Looks up tensors by identity and by shared storage; holds only weak references.

    ``fallback`` is asked for what these names do not cover (the names of an
    enclosing tracker).
    """

    def __init__(self, names: NamesLike | Mapping[str, object] = None, fallback: Namer | None = None) -> None:
        self._by_id: dict[int, tuple[str, weakref.ref[torch.Tensor]]] = {}
        self._by_storage: dict[int, list[tuple[str, weakref.ref[torch.Tensor]]]] = {}
        self.fallback = fallback
        for name, t in _pairs(resolve(names)):
            ref = weakref.ref(t)
            self._by_id.setdefault(id(t), (name, ref))
            key = storage_key(t)
            if key:
                self._by_storage.setdefault(key, []).append((name, ref))

    def __bool__(self) -> bool:
        return bool(self._by_id) or bool(self.fallback)

    def covers(self, key: int | None) -> bool:
        """Whether some named tensor lives in the storage ``key`` (see :func:`storage_key`)."""
        if key is None:
            return False
        return key in self._by_storage or (self.fallback is not None and self.fallback.covers(key))

    def named(self) -> list[tuple[str, torch.Tensor]]:
        """The named tensors still alive, in the order given (then the fallback's)."""
        out = []
        seen = set()
        for name, ref in self._by_id.values():
            t = ref()
            if t is not None:
                out.append((name, t))
                seen.add(id(t))
        if self.fallback is not None:
            out.extend((n, t) for n, t in self.fallback.named() if id(t) not in seen)
        return out

    def name_of(self, t: torch.Tensor) -> str | None:
        """The given name of ``t``, or of the named tensor ``t`` is a view of."""
        own = self._own_name(t)
        if own is None and self.fallback is not None:
            return self.fallback.name_of(t)
        return own

    def _own_name(self, t: torch.Tensor) -> str | None:
        hit = self._by_id.get(id(t))
        if hit is not None and hit[1]() is t:
            return hit[0]
        key = storage_key(t)
        for name, ref in self._by_storage.get(key, ()) if key else ():
            base = ref()
            if base is None:
                continue
            if base.shape == t.shape and base.stride() == t.stride():
                return name if base.storage_offset() == t.storage_offset() else view_name(name)
            transposed = tuple(t.shape) == tuple(base.shape)[::-1] and t.stride() == base.stride()[::-1]
            if t.dim() == 2 and base.dim() == 2 and transposed:
                return view_name(name, transposed=True)
            return view_name(name)
        return None

    def describe(self, t: torch.Tensor, grad_fn_name: str | None = None) -> str:
        """``name_of(t)`` or a description from the op that made it and its shape."""
        name = self.name_of(t)
        if name is not None:
            return name
        shape = list(t.shape)
        op = grad_fn_name if grad_fn_name is not None else (t.grad_fn.name() if t.grad_fn is not None else None)
        if op:
            return output_description(op, shape)
        if t.requires_grad:
            return _t("leaf tensor {shape}", shape=shape)
        return _t("tensor {shape} (no grad)", shape=shape)


# NOTE [Names and descriptions]
# A tensor is shown by the name the user gave it (``n_1.linear_2.weight``), the
# name of the named tensor it is a view of (``n_1.linear_2.weight (transposed
# view)``), or, when it has no name, a description (``output of Sigmoid [3]``).
# Views and descriptions are written in the language in effect, so code that
# needs the user's name back (which model a tensor belongs to, the variable to
# write in a fix) asks :func:`given_name` rather than looking for English words:
# it recognises this module's texts in the language in effect and in English
# (texts other modules still write in English, e.g. ``its saved 'x'``).


def view_name(name: str, *, transposed: bool = False) -> str:
    """The name of a view of the named tensor ``name``: ``w (view)``, ``w (transposed view)``.

    Example::

        >>> view_name("n_1.weight", transposed=True)
        'n_1.weight (transposed view)'
    """
    if transposed:
        return _t("{name} (transposed view)", name=name)
    return _t("{name} (view)", name=name)


def output_description(node_name: str, shape: Sequence[int]) -> str:
    """An unnamed tensor described by the op that made it: ``output of Sigmoid [3]``.

    Example::

        >>> output_description("SigmoidBackward0", (3,))
        'output of Sigmoid [3]'
    """
    return _t("output of {op} {shape}", op=op_name(node_name), shape=list(shape))


def _view_templates() -> tuple[str, ...]:
    return (_("{name} (transposed view)"), _("{name} (view)"), "{name} (transposed view)", "{name} (view)")


def _description_templates() -> tuple[str, ...]:
    return (
        _("output of {op} {shape}"),
        _("leaf tensor {shape}"),
        _("tensor {shape} (no grad)"),
        _("tensor {shape}"),
        _("its saved {attribute}"),
    )


# English descriptions, including those other modules write (``leaf [3]``, ``its saved 'x'``).
_ENGLISH_DESCRIPTIONS = ("output of ", "leaf ", "tensor ", "its saved ")


@lru_cache(maxsize=64)
def _pattern(template: str) -> re.Pattern[str]:
    """A template's text as a regular expression: each ``{field}`` a named group (a repeated one must match again)."""
    out, seen = [], set()
    for i, part in enumerate(re.split(r"\{(\w+)\}", template)):
        if i % 2 == 0:
            out.append(re.escape(part))
        else:
            out.append(f"(?P={part})" if part in seen else f"(?P<{part}>.+?)")
            seen.add(part)
    return re.compile("".join(out), re.S)


def base_name(text: str) -> str:
    """The named tensor a view's name refers to (``w (transposed view)`` -> ``w``); other texts unchanged.

    Example::

        >>> base_name("n_1.weight (view)"), base_name("n_1.weight")
        ('n_1.weight', 'n_1.weight')
    """
    for template in _view_templates():
        m = _pattern(template).fullmatch(text)
        if m is not None:
            return m["name"]
    return text


def given_name(text: str | None) -> str | None:
    """The user's name in a tensor's name, without a view's suffix; None for a description (NOTE [Names and descriptions]).

    Example::

        >>> given_name("n_1.linear_2.weight (transposed view)"), given_name("output of Sigmoid [3]")
        ('n_1.linear_2.weight', None)
    """
    if not text or text.startswith(_ENGLISH_DESCRIPTIONS):
        return None
    if any(_pattern(t).fullmatch(text) for t in _description_templates()):
        return None
    return base_name(text)


def op_name(node_name: str) -> str:
    """``SigmoidBackward0`` -> ``Sigmoid``; ``torch::autograd::AccumulateGrad`` -> ``AccumulateGrad``."""
    name = node_name.rsplit("::", 1)[-1]
    for suffix in ("Backward0", "Backward1", "Backward"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
