"""Why a DDP backward did not reach some parameters, or reached one twice: read from the model and the step's graph.

NOTE [DDP's why]
DDP's reducer raises "Expected to have finished reduction in the prior iteration" in the
forward after a backward that did not reach some parameters, and names them by index only
(by name with TORCH_DISTRIBUTED_DEBUG=INFO). gradlab names them from the DDP module in the
traceback (its ``module``'s parameters that require grad, in order: the reducer's indices)
and says why each was not reached, first match first:

* a ``.detach()`` cut it off: under torch.distributed the tracker records, at each
  ``.detach()`` of the user's code, which parameters the detached tensor's graph reached
  (the graph of that step, walked once; ``recorder.Cut.reaches``);
* no graph: the forward calls its module inside ``with torch.no_grad()`` (or inference_mode);
* a branch not taken: the forward uses its module only under an ``if``;
* not used in the forward: the forward never reads ``self.<name>``.

The last three are read from the source of the ``forward`` methods along the parameter's
path (``ast``). A module of torch itself or a container (``nn.Sequential``, ``nn.ModuleList``,
an index such as ``blocks.0``) counts as using its children. "Expected to mark a variable
ready only once" with ``find_unused_parameters=True`` is, for a parameter the forward never
uses, a use outside the forward: DDP marked it ready as unused after the forward, then its
gradient arrived (measured on torch 2.13: ``tests/test_ddp.py``).

Example::

    >>> import torch
    >>> class Net(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.body, self.aux = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    ...     def forward(self, x):
    ...         return self.body(x)
    >>> [r.kind for r in why_unreached(Net(), ["aux.weight", "aux.bias"])]
    ['unused']
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from torch import nn

from .cuts import Cut
from .explanation import Explanation
from .i18n import _, _t
from .kinds import explain_message
from .location import Location
from .messages import find

__all__ = ["Reason", "why_unreached", "ddp_module", "explain_ddp"]

ReasonKind = Literal["detach", "no_grad", "branch", "unused", "not_reached"]


@dataclass(frozen=True)
class Reason:
    """Why DDP's backward did not reach ``parameters`` (their names in the DDP model's module).

    ``kind`` is ``detach``, ``no_grad``, ``branch`` (a branch not taken), ``unused`` (not
    used in the forward) or ``not_reached`` (used, but its output did not reach the loss);
    ``where`` the line it is read from (None when there is no line to name).
    """

    kind: ReasonKind
    parameters: tuple[str, ...]
    sentence: str
    where: Location | None = None


@dataclass(frozen=True)
class _Use:
    line: int
    branch: int | None  # the line of the innermost `if` around the use
    test: str  # its condition, as code
    no_grad: int | None  # the line of the `with torch.no_grad()` around the use


_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict, nn.ParameterList, nn.ParameterDict)
_NO_GRAD = {"no_grad", "inference_mode"}


def _forward_of(cls: type) -> tuple[type, object] | None:
    """The class that defines ``cls``'s forward and that function; None for torch's own modules."""
    for klass in cls.__mro__:
        if "forward" in vars(klass):
            if klass.__module__.split(".")[0] == "torch":
                return None
            return klass, vars(klass)["forward"]
    return None


def _uses(cls: type, attr: str) -> tuple[str, str, list[_Use]] | None:
    """Where ``cls.forward`` reads ``self.<attr>`` (with the ``if``/``no_grad`` around each use), or None if unread."""
    found = _forward_of(cls)
    if found is None:
        return None
    klass, forward = found
    try:
        lines, start = inspect.getsourcelines(forward)  # type: ignore[arg-type]
        filename = inspect.getsourcefile(forward) or ""  # type: ignore[arg-type]
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    uses: list[_Use] = []
    offset = start - 1

    def visit(node: ast.AST, branch: tuple[int, str] | None, no_grad: int | None) -> None:
        if (
            isinstance(node, ast.Attribute)
            and node.attr == attr
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            uses.append(_Use(node.lineno + offset, branch[0] if branch else None, branch[1] if branch else "", no_grad))
        if isinstance(node, (ast.If, ast.IfExp)):
            visit(node.test, branch, no_grad)
            body = node.body if isinstance(node.body, list) else [node.body]
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            for child in (*body, *orelse):
                visit(child, (node.lineno + offset, ast.unparse(node.test)), no_grad)
            return
        if isinstance(node, ast.With) and any(_is_no_grad(item.context_expr) for item in node.items):
            for child in node.body:
                visit(child, branch, node.lineno + offset)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, branch, no_grad)

    visit(tree, None, None)
    return klass.__name__, filename, uses


def _is_no_grad(expr: ast.expr) -> bool:
    call = expr.func if isinstance(expr, ast.Call) else expr
    name = call.attr if isinstance(call, ast.Attribute) else (call.id if isinstance(call, ast.Name) else "")
    return name in _NO_GRAD


def _module_reason(model: nn.Module, name: str) -> tuple[ReasonKind, str, Location | None] | None:
    """Why the forward along ``name``'s path did not use it (kind, sentence, line), or None if it did."""
    parts = name.split(".")
    current: nn.Module = model
    for i, part in enumerate(parts):
        if not isinstance(current, _CONTAINERS) and not part.isdigit():
            read = _uses(type(current), part)
            if read is not None:
                cls, filename, uses = read
                if not uses:
                    sentence = _t("not used in the forward: {cls}.forward never uses self.{attr}", cls=cls, attr=part)
                    return "unused", sentence, None
                if not any(u.branch is None and u.no_grad is None for u in uses):
                    use = uses[0]
                    if use.no_grad is not None:
                        where = Location(filename, use.no_grad)
                        sentence = _t(
                            "no graph: {cls}.forward uses self.{attr} under {code} ({where})",
                            cls=cls,
                            attr=part,
                            code=where.code.strip().rstrip(":"),
                            where=where.where,
                        )
                        return "no_grad", sentence, where
                    where = Location(filename, use.branch if use.branch is not None else use.line)
                    sentence = _t(
                        "a branch not taken in that step: {cls}.forward uses self.{attr} only under `if {test}` ({where})",
                        cls=cls,
                        attr=part,
                        test=use.test,
                        where=where.where,
                    )
                    return "branch", sentence, where
        if i == len(parts) - 1:
            break
        child = getattr(current, part, None)
        if not isinstance(child, nn.Module):
            break
        current = child
    return None


def why_unreached(model: nn.Module, names: Sequence[str], cuts: Sequence[Cut] = ()) -> list[Reason]:
    """Why a backward did not reach the parameters ``names`` of ``model`` (NOTE [DDP's why]), grouped by reason.

    ``cuts`` are the cuts a tracker recorded (``.detach()`` with the parameters its
    graph reached). Every name gets a reason; ``not_reached`` when none is seen.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"why_unreached() got {type(model).__name__}; pass the model (DDP's .module), an nn.Module")
    parameters = dict(model.named_parameters())
    grouped: dict[tuple[ReasonKind, str], tuple[list[str], Location | None]] = {}
    for name in names:
        p = parameters.get(name)
        cut = next((c for c in reversed(cuts) if p is not None and id(p) in c.reaches), None)
        if cut is not None:
            key: tuple[ReasonKind, str] = (
                "detach",
                _t(
                    "a .detach() cut them off from the loss ({where}: {code})",
                    where=cut.location.where,
                    code=cut.location.code.strip(),
                ),
            )
            where: Location | None = cut.location
        else:
            found = _module_reason(model, name)
            if found is None:
                key = ("not_reached", _("used in the forward, but no graph from them reached the loss"))
                where = None
            else:
                key, where = (found[0], found[1]), found[2]
        grouped.setdefault(key, ([], where))[0].append(name)
    return [Reason(kind, tuple(ps), sentence, where) for (kind, sentence), (ps, where) in grouped.items()]


def ddp_module(error: BaseException, namespace: Mapping[str, object] | None = None) -> nn.Module | None:
    """The DistributedDataParallel model of ``error``: the one whose forward raised, or a variable of its frames
    (or of ``namespace``, the user's frame where a tracker saw the error, before it reached the user's frames)."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return None
    tb = error.__traceback__
    frames = []
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, DistributedDataParallel):
            return owner  # its forward raised (unfinished reduction)
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in frames:  # its hook raised inside backward (ready twice): the model is a variable of the user's
        for value in (*frame.f_locals.values(), *frame.f_globals.values()):
            if isinstance(value, DistributedDataParallel):
                return value
    for value in (namespace or {}).values():
        if isinstance(value, DistributedDataParallel):
            return value
    return None


def _names_of(ddp: nn.Module) -> list[str]:
    """The parameter names in the reducer's index order: the module's parameters that require grad."""
    module = getattr(ddp, "module", ddp)
    return [n for n, p in module.named_parameters() if p.requires_grad]


def explain_ddp(
    error: BaseException,
    explanation: Explanation,
    cuts: Sequence[Cut] = (),
    namespace: Mapping[str, object] | None = None,
) -> Explanation:
    """``explanation`` of a DDP error with the parameters named and why DDP's backward missed them (NOTE [DDP's why]).

    For another kind, or without the DDP model in the traceback, ``explanation`` unchanged.
    """
    if explanation.kind not in ("ddp_unfinished_reduction", "ddp_ready_twice"):
        return explanation
    ddp = ddp_module(error, namespace)
    m = find(error)
    if ddp is None or m is None:
        return explanation
    module = getattr(ddp, "module", ddp)
    if not isinstance(module, nn.Module):
        return explanation
    names = list(m.parameters)
    if m.kind == "ddp_unfinished_reduction" and not names and m.parameter_indices:
        order = _names_of(ddp)
        if all(i < len(order) for i in m.parameter_indices):
            names = [order[i] for i in m.parameter_indices]
    names = [n.lstrip(".") for n in names]  # torch 2.13 prints ".scale" for a parameter of the root module
    if not names:
        return explanation
    if tuple(names) != explanation.parameters:
        explanation = explain_message(replace(m, parameters=tuple(names)))
    reasons = why_unreached(module, names, cuts)
    if m.kind == "ddp_unfinished_reduction":
        why = tuple(_t("{parameters}: {why}", parameters=", ".join(r.parameters), why=r.sentence) for r in reasons)
        return replace(explanation, why=why)
    said = tuple(
        _t(
            "{parameters} is used outside the forward (the forward never uses it); with"
            " find_unused_parameters=True DDP marked it ready as unused after the forward, then its gradient"
            " arrived from that use",
            parameters=", ".join(r.parameters),
        )
        for r in reasons
        if r.kind == "unused" and getattr(ddp, "find_unused_parameters", False)
    )
    return replace(explanation, why=said)
