"""Does each loss train what you meant it to? ``gradlab.check_intent``.

A loop can run without an error and still train the wrong thing: a ``.detach()``
inside a network cuts a layer off, a softmax over a dimension of size 1 makes a
gradient exactly zero, summing two losses in a GAN lets each loss push the other
model. You say which loss should train which models; :func:`check_intent` reads
the graph (and, for zero gradients, computes them with ``torch.autograd.grad``
on a kept graph) and reports every mismatch. It writes no ``.grad``, touches no
optimizer, and leaves the graph usable for your own backward.

NOTE [Passing through a model]
A loss that trains ``G`` through ``D`` (a GAN's generator loss) necessarily sends
gradient into ``D``'s parameters too: they hang off the path to ``G``. That is
not reported (``D``'s optimizer.zero_grad() discards it before ``D``'s next
step), unless one backward of a sum mixes it into ``D``'s own loss (then ``D``'s
step uses it: ``mixed``). A loss reaching parameters *below* the models it
should train (``loss_2`` reaching ``n_1`` through ``n_2``'s input) is reported:
``unwanted``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from . import recorder
from .graph import roots_of, walk
from .i18n import _, _t, ngettext_
from .names import Namer, NamesLike

__all__ = ["IntentReport", "Mismatch", "MismatchKind", "check_intent"]

MismatchKind = Literal["unwanted", "unreachable", "zero", "mixed", "frozen", "no_graph", "unknown_name", "unheld"]


@dataclass(frozen=True)
class Mismatch:
    """One way a loss does not train what it should.

    ``kind``: ``unwanted`` (it sends gradient into parameters declared for other
    losses only, or for none), ``unreachable`` (declared parameters it cannot reach),
    ``zero`` (declared parameters whose gradient from it is exactly zero on this
    batch), ``mixed`` (one backward of a sum adds its gradient to another loss's
    models, whose step then uses it), ``frozen`` (declared parameters with
    ``requires_grad=False``: nothing trains them), ``no_graph`` (the loss has no
    backward graph, e.g. rebuilt from ``.item()``), ``unknown_name`` (a declared
    name matches no parameter; the sentence lists the choices), ``unheld`` (declared
    parameters the loss reaches that none of the loop's ``optimizers=`` holds: no
    step uses their gradient; checked only when they are passed).
    """

    kind: MismatchKind
    loss: str
    parameters: tuple[str, ...]
    sentence: str


@dataclass(frozen=True)
class IntentReport:
    """The answer of :func:`check_intent`: ``ok`` when every loss trains exactly what was declared."""

    mismatches: tuple[Mismatch, ...]
    checked: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no loss trains other than declared (``notes`` are not mismatches)."""
        return not self.mismatches

    def __str__(self) -> str:
        if self.ok:
            return "\n".join([_t("ok: {summary}", summary=self._all_declared()), *(f"  ({n})" for n in self.notes)])
        n = len(self.mismatches)
        lines = [
            ngettext_("{n} mismatch with what you declared:", "{n} mismatches with what you declared:", n).format(n=n)
        ]
        lines += [f"  - [{m.kind}] {m.sentence}" for m in self.mismatches]
        lines += [f"  ({note})" for note in self.notes]
        return "\n".join(lines)

    def _all_declared(self) -> str:
        return ngettext_(
            "{losses} trains what you declared.", "{losses} train what you declared.", len(self.checked)
        ).format(losses=", ".join(self.checked))

    def __repr__(self) -> str:
        return f"IntentReport(ok={self.ok}, mismatches={[m.kind for m in self.mismatches]})"

    def _repr_html_(self) -> str:
        if self.ok:
            return f"<p><b>{html.escape(_('ok'))}</b>: {html.escape(self._all_declared())}</p>"
        items = "".join(f"<li><b>{m.kind}</b>: {html.escape(m.sentence)}</li>" for m in self.mismatches)
        title = html.escape(_("Training does not match what you declared:"))
        return f'<p style="color:#c62828"><b>{title}</b></p><ul>{items}</ul>'


def _short(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    if len(names) <= limit:
        return shown
    return _t("{names} and {n} more", names=shown, n=len(names) - limit)


def _declared(
    loss: str, spec: object, named: dict[str, torch.Tensor], frozen: dict[str, torch.Tensor]
) -> tuple[set[str], list[Mismatch]]:
    """The parameters ``spec`` names, and a mismatch for each name that is frozen or matches nothing."""
    items: Sequence[object] = [spec] if isinstance(spec, str) else spec if isinstance(spec, Sequence) else [None]
    out: set[str] = set()
    problems: list[Mismatch] = []
    for item in items:
        if not isinstance(item, str):
            raise TypeError(
                f"what {loss!r} should train must be a name or a list of names from names= (a module like 'n_2', "
                f"or a parameter like 'n_2.linear_1.weight'), not {type(item).__name__}"
            )
        hits = {n for n in named if n == item or n.startswith(item + ".")}
        cold = sorted(n for n in frozen if n == item or n.startswith(item + "."))
        if cold:
            problems.append(
                Mismatch(
                    "frozen",
                    loss,
                    tuple(cold),
                    _t(
                        "{loss} should train {parameters}, but they have requires_grad=False: no loss can train "
                        "them (set requires_grad=True, or leave them out of what {loss} should train)",
                        loss=loss,
                        parameters=_short(cold),
                    ),
                )
            )
        if not hits and not cold:
            choices = sorted({n.split(".")[0] for n in [*named, *frozen]})
            problems.append(
                Mismatch(
                    "unknown_name",
                    loss,
                    (item,),
                    _t(
                        "{name!r} (what {loss} should train) names no parameter in names=; choose from {choices} "
                        "or full names like {example!r}",
                        name=item,
                        loss=loss,
                        choices=", ".join(choices),
                        example=next(iter(named), "n_1.weight"),
                    ),
                )
            )
        out |= hits
    return out, problems


def _reached(roots: list[Any]) -> set[int]:
    """ids of the leaf tensors a graph accumulates gradient into."""
    return {id(fn.variable) for fn in walk(roots) if hasattr(fn, "variable")}


def _postorder(roots: list[Any]) -> list[Any]:
    """Every node below ``roots``, each after all the nodes it points to (iterative, no recursion)."""
    order: list[Any] = []
    seen: set[Any] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack: list[tuple[Any, int]] = [(root, 0)]
        while stack:
            fn, i = stack.pop()
            children = fn.next_functions
            if i < len(children):
                stack.append((fn, i + 1))
                child = children[i][0]
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, 0))
            else:
                order.append(fn)
    return order


def _passed_through(roots: list[Any], declared_ids: set[int]) -> set[int]:
    """Leaves hanging off a node that lies on a path from the roots to a declared leaf (NOTE [Passing through])."""
    leads: set[Any] = set()
    order = _postorder(roots)
    for fn in order:
        if hasattr(fn, "variable"):
            if id(fn.variable) in declared_ids:
                leads.add(fn)
        elif any(child in leads for child, _ in fn.next_functions if child is not None):
            leads.add(fn)
    out: set[int] = set()
    for fn in order:
        if fn not in leads or hasattr(fn, "variable"):
            continue
        for child, _input_nr in fn.next_functions:
            if child is None or child in leads:
                continue
            if hasattr(child, "variable"):
                out.add(id(child.variable))
            elif len(child.next_functions) == 1:  # a transpose or view of a parameter (Addmm -> T -> weight)
                grandchild = child.next_functions[0][0]
                if grandchild is not None and hasattr(grandchild, "variable"):
                    out.add(id(grandchild.variable))
    return out


def check_intent(
    intent: Mapping[str, tuple[torch.Tensor, str | Sequence[str]]],
    names: NamesLike,
    *,
    backward: torch.Tensor | Sequence[torch.Tensor] | None = None,
    optimizers: Sequence[torch.optim.Optimizer] | None = None,
) -> IntentReport:
    """Report every way the losses do not train what you declared.

    ``intent`` maps a label to ``(loss, what it should train)``: a name from
    ``names`` (a module like ``"n_2"``, a submodule ``"n_2.linear_1"`` or a
    parameter ``"n_2.linear_1.weight"``) or a list of them. ``backward`` is the
    tensor your loop calls backward on, when it is not each loss separately
    (e.g. ``loss_D + loss_G``): then gradient that one loss leaves in another
    loss's models is reported as ``mixed``. Assumes plain ``loss.backward()``
    (``inputs=`` narrows what a backward trains). ``optimizers``, the loop's
    optimizers: then declared parameters that none of them holds are reported as
    ``unheld`` (a layer unfrozen or replaced after the optimizer was built).

    Reads only: no ``.grad`` is written, and the graph stays usable (the zero
    check runs ``torch.autograd.grad`` with ``retain_graph=True``).

    Example::

        >>> import torch
        >>> n_1, n_2 = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        >>> pred_1 = n_1(torch.ones(4, 1))
        >>> loss_1, loss_2 = pred_1.pow(2).mean(), n_2(pred_1).pow(2).mean()
        >>> report = check_intent({"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")},
        ...                       names={"n_1": n_1, "n_2": n_2})
        >>> [m.kind for m in report.mismatches]
        ['unwanted']
        >>> report.mismatches[0].parameters
        ('n_1.weight', 'n_1.bias')
    """
    if not isinstance(intent, Mapping) or not intent:
        raise TypeError(
            "check_intent() takes a dict of label -> (loss, what it should train), e.g. "
            "{'loss_1': (loss_1, 'n_1'), 'loss_2': (loss_2, 'n_2')}"
        )
    if names is None:
        raise TypeError("check_intent() needs names= (e.g. {'n_1': n_1, 'n_2': n_2}): the declared names refer to it")
    if optimizers is not None and (
        isinstance(optimizers, torch.optim.Optimizer)
        or not isinstance(optimizers, Sequence)
        or not all(isinstance(o, torch.optim.Optimizer) for o in optimizers)
    ):
        raise TypeError("optimizers= takes a list of the loop's optimizers, e.g. optimizers=[opt_1, opt_2]")
    namer = Namer(names)
    everything = namer.named()
    if not everything:
        raise ValueError("names= holds no tensor; pass the models, e.g. {'n_1': n_1, 'n_2': n_2}")
    named = {name: t for name, t in everything if t.requires_grad}
    frozen = {name: t for name, t in everything if not t.requires_grad}
    by_id = {id(t): name for name, t in named.items()}
    losses: dict[str, tuple[torch.Tensor, list[Any], set[str]]] = {}
    mismatches: list[Mismatch] = []
    for label, value in intent.items():
        if not isinstance(label, str):
            raise TypeError(f"intent labels must be strings such as 'loss_1', not {label!r}")
        if not (isinstance(value, tuple) and len(value) == 2):
            raise TypeError(f"intent[{label!r}] must be a pair (loss, what it should train), e.g. (loss_1, 'n_1')")
        loss, spec = value
        if isinstance(loss, torch.Tensor) and loss.grad_fn is None:
            declared, problems = _declared(label, spec, named, frozen)
            mismatches += problems
            mismatches.append(
                Mismatch(
                    "no_graph",
                    label,
                    tuple(sorted(declared, key=list(named).index)),
                    _t(
                        "{loss} has no backward graph (a tensor rebuilt from .item(), or computed under "
                        "torch.no_grad()): it trains nothing; build it from the model's outputs",
                        loss=label,
                    ),
                )
            )
            continue
        roots = roots_of(loss, f"intent[{label!r}]'s loss")
        if loss.numel() != 1:
            raise ValueError(f"intent[{label!r}]'s loss has shape {list(loss.shape)}; pass a scalar loss")
        declared, problems = _declared(label, spec, named, frozen)
        mismatches += problems
        losses[label] = (loss, roots, declared)

    notes: list[str] = []
    declared_anywhere = set().union(*(d for _, _, d in losses.values()))
    reached_by: dict[str, set[str]] = {}
    for label, (loss, roots, declared) in losses.items():
        reached = {by_id[i] for i in _reached(roots) if i in by_id}
        reached_by[label] = reached
        through = {by_id[i] for i in _passed_through(roots, {id(named[n]) for n in declared}) if i in by_id}
        unwanted = sorted(reached - declared - through, key=list(named).index)
        if unwanted:
            owners = sorted({o for o, (_, _, d) in losses.items() if o != label and set(unwanted) & d})
            if owners:
                sentence = _t(
                    "{loss} sends gradient into {parameters}, declared for {owners} only",
                    loss=label,
                    parameters=_short(unwanted),
                    owners=_(" and ").join(owners),
                )
            elif not set(unwanted) & declared_anywhere:
                sentence = _t(
                    "{loss} sends gradient into {parameters}, declared for no loss",
                    loss=label,
                    parameters=_short(unwanted),
                )
            else:
                sentence = _t(
                    "{loss} sends gradient into {parameters}, not declared for it",
                    loss=label,
                    parameters=_short(unwanted),
                )
            mismatches.append(Mismatch("unwanted", label, tuple(unwanted), sentence))
        unreachable = sorted(declared - reached, key=list(named).index)
        if unreachable:
            mismatches.append(
                Mismatch(
                    "unreachable",
                    label,
                    tuple(unreachable),
                    _t(
                        "{loss} cannot reach {parameters}: no gradient path leads there (a .detach(), or the "
                        "parameter is not used), so they never learn from it",
                        loss=label,
                        parameters=_short(unreachable),
                    ),
                )
            )
        zero = _zero(loss, [named[n] for n in sorted(declared & reached, key=list(named).index)])
        if zero is None:
            mismatches.append(
                Mismatch(
                    "zero",
                    label,
                    (),
                    _t(
                        "{loss}: gradients could not be computed (the graph was freed or a saved tensor changed: "
                        "see gradlab.check)",
                        loss=label,
                    ),
                )
            )
        elif zero:
            zero_names = [by_id[id(t)] for t in zero]
            by_form = _by_form(loss, zero_names, named, declared)
            if by_form:
                notes.append(
                    _t(
                        "{loss} cannot train {parameters} by its form: their gradient is exactly zero while the "
                        "rest of their layer learns (a bias that cancels in a difference such as "
                        "mean(real) - mean(fake)); not a mismatch",
                        loss=label,
                        parameters=_short(by_form),
                    )
                )
                zero_names = [n for n in zero_names if n not in by_form]
            if not zero_names:
                continue
            mismatches.append(
                Mismatch(
                    "zero",
                    label,
                    tuple(zero_names),
                    _t(
                        "{loss}'s gradient for {parameters} is exactly zero on this batch: they will not learn "
                        "(look for an op whose output cannot change, e.g. a softmax over a dimension of size 1)",
                        loss=label,
                        parameters=_short(zero_names),
                    ),
                )
            )
    if (
        optimizers is not None
    ):  # the parameters a loss trains must be held by an optimizer, or no step uses their gradient
        held = {id(p) for o in optimizers for g in o.param_groups for p in g["params"]}
        for label, (_loss, _roots, declared) in losses.items():
            unheld = [n for n in named if n in declared and n in reached_by[label] and id(named[n]) not in held]
            if unheld:
                mismatches.append(
                    Mismatch(
                        "unheld",
                        label,
                        tuple(unheld),
                        _t(
                            "{loss} reaches {parameters}, but none of your optimizers holds them: no step uses "
                            "their gradient, so they never learn (a layer unfrozen or replaced after the optimizer "
                            "was built: add it with add_param_group(), or build the optimizer after)",
                            loss=label,
                            parameters=_short(unheld),
                        ),
                    )
                )
    if backward is not None:
        reported = {(m.loss, p) for m in mismatches if m.kind == "unwanted" for p in m.parameters}
        for m in _mixed(backward, losses, reached_by):
            kept = tuple(p for p in m.parameters if (m.loss, p) not in reported)
            if kept:
                mismatches.append(
                    Mismatch(m.kind, m.loss, kept, m.sentence.replace(_short(list(m.parameters)), _short(list(kept))))
                )
    return IntentReport(tuple(mismatches), tuple(losses), tuple(notes))


def _by_form(loss: torch.Tensor, zero: list[str], named: dict[str, torch.Tensor], declared: set[str]) -> list[str]:
    """The zero-gradient biases whose layer's weight gets a gradient from ``loss``: the loss's form cancels them."""
    out = []
    for name in zero:
        if not name.endswith(".bias"):
            continue
        weight = name[: -len("bias")] + "weight"
        if weight in named and weight in declared and weight not in zero:
            out.append(name)
    return out


def _zero(loss: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """The parameters whose gradient from ``loss`` is exactly zero; None if it cannot be computed."""
    if not params:
        return []
    try:
        with recorder.internal():  # this backward is gradlab's own: not logged, not annotated
            grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    except RuntimeError:
        return None
    return [p for p, g in zip(params, grads) if g is None or not bool(g.ne(0).any())]


def _mixed(
    backward: torch.Tensor | Sequence[torch.Tensor],
    losses: dict[str, tuple[torch.Tensor, list[Any], set[str]]],
    reached_by: dict[str, set[str]],
) -> list[Mismatch]:
    roots = roots_of(backward, "backward")
    nodes = set(walk(roots))
    inside = [label for label, (_, lroots, _) in losses.items() if all(r in nodes for r in lroots)]
    out = []
    for label in inside:
        for other in inside:
            if other == label:
                continue
            shared = sorted(reached_by[label] & (losses[other][2] - losses[label][2]))
            if shared:
                out.append(
                    Mismatch(
                        "mixed",
                        label,
                        tuple(shared),
                        _t(
                            "one backward of the sum adds {loss}'s gradient for {parameters} to {other}'s: the step "
                            "of {other}'s models will use both",
                            loss=label,
                            parameters=_short(shared),
                            other=other,
                        ),
                    )
                )
    return out
