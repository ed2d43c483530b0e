"""Readable names for tensors: ``n_1.linear_2.weight (transposed view)``, ``output of Sigmoid [3]``."""

from __future__ import annotations

import ast
import types
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import torch
from torch import nn

from .i18n import T, Text, Words

__all__ = [
    "NamesLike",
    "Namer",
    "Name",
    "ViewKind",
    "modules_in",
    "modules_on_objects",
    "attributes_of",
    "frame_namer",
    "held_models",
    "framework_backward",
]

#: How a named tensor's view relates to it: itself (None), a view, or the transpose of a 2-d tensor.
ViewKind = Literal[None, "view", "transposed"]

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
    found: dict[str, nn.Module] = {}
    for k, v in namespace.items():
        if isinstance(k, str) and isinstance(v, nn.Module) and not k.startswith("_"):
            held = held_models(v)
            if held:
                for attr, model in held.items():
                    found.setdefault(attr, model)
            else:
                found[k] = v
    return found


_Held = TypeVar("_Held")

#: Values that are no plain object holding models: nothing of theirs is named.
NOT_HOLDERS = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, torch.Tensor)


def modules_on_objects(namespace: Mapping[str, object], known: Iterable[frozenset[int]] = ()) -> dict[str, nn.Module]:
    """The modules one level into the plain objects of ``namespace`` (``self.hint_proj`` when ``self`` is a trainer
    that is no module), by dotted name, locals first; a module whose parameters are ``known`` (named already, by
    their ids) or were found under another name, or that has none, is left out.

    Example::

        >>> class Trainer:
        ...     def __init__(self) -> None:
        ...         self.head = torch.nn.Linear(2, 1)
        >>> sorted(modules_on_objects({"self": Trainer(), "k": 3}))
        ['self.head']
    """
    seen = set(known)
    found: dict[str, nn.Module] = {}
    for name, inner in attributes_of(namespace, nn.Module, in_modules=False):
        ids = frozenset(id(p) for p in inner.parameters())
        if ids and ids not in seen:
            seen.add(ids)
            found[name] = inner
    return found


def attributes_of(
    namespace: Mapping[str, object], kind: type[_Held], in_modules: bool = True
) -> Iterator[tuple[str, _Held]]:
    """``("key.attr", value)`` for each public attribute of type ``kind`` one level into the public values of
    ``namespace`` (``trainer.t_opt``, ``self.teacher``), locals first; of modules too unless ``in_modules`` is False.

    Example::

        >>> class Trainer:
        ...     def __init__(self) -> None:
        ...         self.steps = 3
        >>> list(attributes_of({"self": Trainer()}, int))
        [('self.steps', 3)]
    """
    for key, value in reversed(list(namespace.items())):
        if not isinstance(key, str) or key.startswith("_") or isinstance(value, NOT_HOLDERS):
            continue
        if not in_modules and isinstance(value, nn.Module):
            continue
        try:
            attrs = list(vars(value).items())
        except TypeError:
            continue
        for attr, inner in attrs:
            if isinstance(attr, str) and not attr.startswith("_") and isinstance(inner, kind):
                yield f"{key}.{attr}", inner


def frame_namer(namer: Namer | None, namespace: Mapping[str, object]) -> Namer | None:
    """``namer`` with the models of a frame added where they name parameters it does not (NOTE [The frame's
    models name what nothing else does]): the frame's models when ``namer`` names nothing, and the modules the
    frame's plain objects hold (``self.adapters`` in a trainer's method); ``namer`` itself when nothing is added."""
    found = modules_in(namespace) if not namer else {}
    named = {id(t) for _n, t in namer.named()} if namer else set()
    named |= {id(p) for m in found.values() for p in m.parameters()}
    held = modules_on_objects(namespace)
    found.update((k, m) for k, m in held.items() if not any(id(p) in named for p in m.parameters()))
    if not found:
        return namer
    return Namer(found, fallback=namer or None)


# NOTE [The frame's models name what nothing else does]
# A failure's note and gradlab.check() name parameters alike: by names= or the tracker's names, else by the failing
# frame's models. A module a plain object of the frame holds (a matcher's self.adapters, no nn.Module itself, or a
# trainer's probe) was named by neither, so a loss's reach left it out and a fix's claims said the loss trained
# less than it does. Its parameters are named by the object's name in the frame, one level in, when no other name
# reaches them; the loop's optimizers read the same modules (gradlab.loop), so a claim and the loop's intent meet.


# NOTE [Models held by a LightningModule]
# A LightningModule is the training code's container, not a model: a GAN's holds
# `self.generator` and `self.discriminator`, each stepped by its own optimizer. Named
# as one module (`self`, `model`) every loss would "train model". So its models are
# named by their attributes (`generator.0.weight`), as the user's code calls them.
# It is recognised by its class's bases, without importing Lightning.
def held_models(module: nn.Module) -> dict[str, nn.Module]:
    """The models a LightningModule holds, by attribute name; empty for any other module.

    Empty too when the LightningModule has parameters of its own (outside any
    submodule): then it is named as one module, so that every parameter has a name.
    """
    lightning = any(
        c.__name__ == "LightningModule" and c.__module__.startswith(("lightning.", "pytorch_lightning."))
        for c in type(module).__mro__
    )
    if not lightning or any(True for _ in module.parameters(recurse=False)):
        return {}
    return {
        name: child
        for name, child in module.named_children()
        if not name.startswith("_") and any(True for _ in child.parameters())
    }


def _pairs(names: Mapping[str, object]) -> list[tuple[str, torch.Tensor]]:
    out: list[tuple[str, torch.Tensor]] = []
    for key, value in names.items():
        if not isinstance(key, str):
            raise TypeError(f"names= keys must be strings, got {key!r}; pass e.g. names={{'n_1': n_1}}")
        if isinstance(value, nn.Module):
            prefix = f"{key}." if key else ""
            out.extend((f"{prefix}{_compiled(n)}", p) for n, p in value.named_parameters())
            out.extend((f"{prefix}{_compiled(n)}", b) for n, b in value.named_buffers())
        elif isinstance(value, torch.Tensor):
            out.append((key, value))
        else:
            raise TypeError(
                f"names[{key!r}] is a {type(value).__name__}; pass an nn.Module or a tensor for each name, "
                "e.g. names={'n_1': n_1, 'x': x}"
            )
    return out


def framework_backward(func: ast.Attribute) -> bool:
    """Whether calling ``func`` backwards its first argument: Lightning's ``self.manual_backward(loss)``,
    Accelerate's ``accelerator.backward(loss)``, Fabric's ``fabric.backward(loss)`` (the receivers as
    their documentation names them), so the loss is ``loss``, not the receiver.

    Example::

        >>> call = ast.parse("accelerator.backward(head_loss)").body[0].value
        >>> framework_backward(call.func), framework_backward(ast.parse("loss.backward(g)").body[0].value.func)
        (True, False)
    """
    if func.attr == "manual_backward":
        return True
    receiver = ast.unparse(func.value).rsplit(".", 1)[-1]
    return func.attr == "backward" and receiver in ("accelerator", "fabric")


def _compiled(name: str) -> str:
    """A parameter's name without the ``_orig_mod`` that ``torch.compile``'s wrapper puts before it:
    ``encoder.2.weight``, as the user's model calls it, not ``encoder._orig_mod.2.weight``."""
    return ".".join(part for part in name.split(".") if part != "_orig_mod") if "_orig_mod" in name else name


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


@dataclass(frozen=True)
class Name:
    """A tensor's name as data: the name the user gave (``given``) and the kind of view it is of it.

    Worded only when shown (``str(name)``), in the language in effect then
    (NOTE [Names and descriptions]).

    Example::

        >>> str(Name("n_1.weight", "transposed")), Name("n_1.weight").given
        ('n_1.weight (transposed view)', 'n_1.weight')
    """

    given: str
    view: ViewKind = None

    def __str__(self) -> str:
        return str(self.words())

    def words(self) -> Words:
        """The name as a record keeps it: the given name, or the view's words, worded when shown."""
        if self.view is None:
            return self.given
        return view_name(self.given, transposed=self.view == "transposed")


def _relation(base: torch.Tensor, shape: tuple[int, ...], stride: tuple[int, ...], offset: int) -> ViewKind:
    """How a tensor of ``shape``/``stride``/``offset`` in ``base``'s storage relates to ``base``."""
    if tuple(base.shape) == shape and tuple(base.stride()) == stride:
        return None if base.storage_offset() == offset else "view"
    transposed = shape == tuple(base.shape)[::-1] and stride == tuple(base.stride())[::-1]
    if len(shape) == 2 and base.dim() == 2 and transposed:
        return "transposed"
    return "view"


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
        """The given name of ``t``, or of the named tensor ``t`` is a view of, worded (see :meth:`lookup`)."""
        found = self.lookup(t)
        return str(found) if found is not None else None

    def lookup(self, t: torch.Tensor) -> Name | None:
        """The :class:`Name` of ``t``: its given name, or the named tensor it is a view of, and which view."""
        try:
            key = t.untyped_storage().data_ptr()
            stride, offset = tuple(t.stride()), int(t.storage_offset())
        except (RuntimeError, NotImplementedError):  # no storage, no strides: only its identity can name it
            key, stride, offset = 0, (), 0
        return self.lookup_kept(id(t), key or None, tuple(t.shape), stride, offset)

    def lookup_kept(
        self, tensor_id: int, key: int | None, shape: tuple[int, ...], stride: tuple[int, ...], offset: int
    ) -> Name | None:
        """:meth:`lookup` from what was kept of a tensor (NOTE [Lazy names] in :mod:`gradlab.recorder`).

        A named tensor alive now whose id is ``tensor_id`` is that tensor (both were
        alive when the facts were taken); views are told apart by geometry.
        """
        namer: Namer | None = self
        while namer is not None:
            hit = namer._by_id.get(tensor_id)
            if hit is not None:
                base = hit[1]()
                if base is not None and id(base) == tensor_id:
                    return Name(hit[0])
            for name, ref in namer._by_storage.get(key, ()) if key else ():
                base = ref()
                if base is not None:
                    return Name(name, _relation(base, shape, stride, offset))
            namer = namer.fallback
        return None

    @classmethod
    def chained(cls, namers: Sequence[Namer]) -> Namer:
        """One namer asking ``namers[-1]`` first, then the ones before it (their own names, not their fallbacks)."""
        chain: Namer | None = None
        for own in namers:
            link = cls()
            link._by_id, link._by_storage, link.fallback = own._by_id, own._by_storage, chain
            chain = link
        return chain or cls()

    def describe(self, t: torch.Tensor, grad_fn_name: str | None = None) -> Words:
        """``name_of(t)`` or a description from the op that made it and its shape (worded when shown)."""
        name = self.name_of(t)
        if name is not None:
            return name
        shape = list(t.shape)
        op = grad_fn_name if grad_fn_name is not None else (t.grad_fn.name() if t.grad_fn is not None else None)
        if op:
            return output_description(op, shape)
        if t.requires_grad:
            return T("leaf tensor {shape}", shape=shape)
        return T("tensor {shape} (no grad)", shape=shape)


# NOTE [Names and descriptions]
# A tensor is shown by the name the user gave it (``n_1.linear_2.weight``), the
# name of the named tensor it is a view of (``n_1.linear_2.weight (transposed
# view)``), or, when it has no name, a description (``output of Sigmoid [3]``).
# The records carry the name as data (a :class:`Name`: ``given`` and ``view``,
# as ``SavedTensor``, ``Event``, ``Problem`` and ``GraphNode`` do), and views and
# descriptions are worded in the language in effect when shown. Code that needs
# the user's name (which model a tensor belongs to, the variable to write in a
# fix) reads ``given``; it never parses a display name back.


def view_name(name: str, *, transposed: bool = False) -> Text:
    """The name of a view of the named tensor ``name``: ``w (view)``, ``w (transposed view)``.

    Example::

        >>> view_name("n_1.weight", transposed=True)
        'n_1.weight (transposed view)'
    """
    if transposed:
        return T("{name} (transposed view)", name=name)
    return T("{name} (view)", name=name)


def output_description(node_name: str, shape: Sequence[int]) -> Text:
    """An unnamed tensor described by the op that made it: ``output of Sigmoid [3]``.

    Example::

        >>> output_description("SigmoidBackward0", (3,))
        'output of Sigmoid [3]'
    """
    return T("output of {op} {shape}", op=op_name(node_name), shape=list(shape))


def op_name(node_name: str) -> str:
    """``SigmoidBackward0`` -> ``Sigmoid``; ``torch::autograd::AccumulateGrad`` -> ``AccumulateGrad``."""
    name = node_name.rsplit("::", 1)[-1]
    for suffix in ("Backward0", "Backward1", "Backward"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
