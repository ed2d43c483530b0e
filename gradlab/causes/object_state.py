"""Cause ``carried_state``, kept on plain objects: an object of the user's code (an integrator's history, an
attention bank, a batch the forward writes into) keeps a tensor with a graph from one iteration to the next; its
class's own reset, or the batch's dicts emptied, after the failing backward (NOTE [State kept on an object with a
reset]). The state a module keeps is :mod:`.module_state`'s."""

from __future__ import annotations

import ast
from dataclasses import replace

import torch

from ..context import Context
from ..evidence import Facts, from_frame
from ..fixes import Fix, Proposal, all_edits, insert_lines, keeping
from ..i18n import T, join
from ..source import enclosing, loop_body_of, names
from .class_source import class_tree, methods_of, self_attr, stores_entry
from .kept_state import Kept, kept_state

__all__ = ["kept_on_objects", "object_reset_fixes"]


def kept_on_objects(base: Context, facts: Facts) -> Context | None:
    """State kept on plain objects of the frame across iterations (NOTE [State kept on an object with a reset]):
    each object of a class of the user's code that holds a graph on an attribute (a tensor, or a list or tuple of
    tensors: a multistep integrator's history, an attention bank) which one of its methods reads, and a method that
    sets every such attribute back; the calls of those methods, after the failing backward."""
    site = facts.site
    if site is None or facts.backward_line is None:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    used = {n for st in body or [] for n in names(st, ast.Load)}
    around = enclosing(tree, facts.backward_line) if tree is not None else []
    batch = {n for loop in around if isinstance(loop, (ast.For, ast.AsyncFor)) for n in names(loop.target, ast.Store)}
    found: list[tuple[str, str, str]] = []  # (the frame's name, its class, the reset method)
    memories: list[tuple[str, Kept]] = []  # objects whose class stores the state without a reset
    for name, obj in sorted(facts.namespace.items()):
        if not isinstance(name, str) or name.startswith("_") or name not in used:
            continue
        if isinstance(obj, (torch.nn.Module, torch.Tensor, type)) or not hasattr(obj, "__dict__"):
            continue
        graphs = [k for k, v in vars(obj).items() if not k.startswith("_") and _holds_graph(v)]
        if not graphs:
            continue
        kept = kept_state(type(obj), graphs)
        if kept is not None and kept.reset is not None:
            found.append((name, type(obj).__name__, kept.reset))
        elif name in batch and all(isinstance(vars(obj)[k], dict) for k in graphs):
            # NOTE [State kept on an object without a reset]
            # A plain object the loop calls (an aligner of moving class centroids, a running prototype bank) keeps on an
            # attribute a tensor its method reads and then stores again from this iteration's features, and its class has no
            # method that sets it back: a memory across iterations, meant to carry values, as a module's kept state is (NOTE
            # [State kept on modules]). It is fixed the same way: detached where the class stores it (each one-line store),
            # else after the backward through the loop's name for the object; the values carry over, the graph does not.

            # NOTE [Features a forward stores on its batch]: the dicts emptied, as each batch was loaded
            found += [(name, type(obj).__name__, f"{k}.clear") for k in graphs]
        elif (
            kept is not None
            and kept.stored_at
            and set(kept.attrs) == set(graphs)
            # stored by a call the loop makes (a memory the loop keeps up), not filled once before it: a detach where
            # a one-time fill stores would stop the loss from training what the fill computed
            and _storing_called(
                [a for a in around if isinstance(a, (ast.For, ast.AsyncFor, ast.While))], name, type(obj), kept.attrs
            )
        ):
            memories.append((name, kept))
    if not found and memories:  # NOTE [State kept on an object without a reset]
        name, kept = memories[0]
        ctx = from_frame(base, facts, None)
        attrs = tuple(f"self.{a}" for a in kept.attrs)
        return replace(
            ctx,
            carried=attrs[0],
            kept_attrs=attrs,
            stored_at=kept.stored_at,
            detach_at=kept.detach_at,
            # the loop's boundary after the backward, unless the loop calls the object again after it (an update()
            # after the step would store this iteration's graph again, after the detach)
            kept_paths=()
            if _called_after(body or [], name, facts.backward_line)
            else tuple(f"{name}.{a}" for a in kept.attrs),
            # a dict of tensors (a memory by key) is detached entry by entry at the loop's boundary
            extra={
                **ctx.extra,
                "sequence_state": " ".join(
                    f"{a}:dict" for a in kept.attrs if isinstance(vars(facts.namespace[name]).get(a), dict)
                ),
            },
        )
    if not found:
        return None
    ctx = from_frame(base, facts, None)
    return replace(
        ctx,
        carried=found[0][0],
        extra={**ctx.extra, "object_resets": ",".join(f"{name}.{reset}" for name, _cls, reset in found)},
    )


def _methods_called(nodes: list[ast.stmt], name: str) -> set[str]:
    """The methods of ``name`` that ``nodes`` call (``tracker.update(emb)``: ``update``), and ``"()"`` when they
    call the object itself (``aligner(x, y)``)."""
    found = set()
    for n in (n for node in nodes for n in ast.walk(node)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
            if n.func.value.id == name:
                found.add(n.func.attr)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name:
            found.add("()")
    return found


def _called_after(body: list[ast.stmt], name: str, line: int) -> bool:
    """A statement of the loop's ``body`` after ``line`` calls a method of ``name`` (``tracker.update(emb)``)."""
    return bool(_methods_called([st for st in body if st.lineno > line], name) - {"()"})


def _storing_called(loops: list[ast.stmt], name: str, cls: type, attrs: tuple[str, ...]) -> bool:
    """One of ``loops`` (those around the failing backward) calls a method of ``name`` (of class ``cls``) that
    stores one of ``attrs``: an epoch loop's ``refresh()`` as well as the batch loop's ``update()``."""
    found = class_tree(cls)
    if found is None:
        return False
    storing = {
        m.name
        for m in methods_of(found[0])
        for st in ast.walk(m)
        for a in attrs
        if (
            isinstance(st, ast.Assign)
            # ``self.h, self.load = h, load`` stores both
            and any(self_attr(e, a) for t in st.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t]))
        )
        or stores_entry(st, a)
    }
    called = _methods_called(loops, name)
    return bool(called & storing) or ("()" in called and "__call__" in storing)


def _holds_graph(value: object) -> bool:
    """A tensor with a graph, or a list, tuple or dict holding one."""
    if isinstance(value, torch.Tensor):
        return value.grad_fn is not None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return any(isinstance(v, torch.Tensor) and v.grad_fn is not None for v in items)


def object_reset_fixes(ctx: Context) -> list[Proposal]:
    """Each object's reset method called right after the failing backward (NOTE [State kept on an object with a
    reset])."""
    calls = [c for c in ctx.extra.get("object_resets", "").split(",") if c]
    edit = insert_lines(ctx, ctx.backward_line, "\n".join(f"{c}()" for c in calls), after=True) if calls else None
    if edit is None:
        return []
    return [
        keeping(
            ctx,
            Fix(
                summary=T(
                    "call {calls} right after the backward of {loss}: the state those objects keep holds this "
                    "iteration's graph, which the backward freed, and the next iteration reads it",
                    calls=join([f"{c}()" for c in calls], T(" and ")),
                    loss=ctx.l,
                ),
                trains=T(
                    "{loss} trains what it reaches, each iteration from its own forward: nothing kept from an earlier "
                    "iteration enters it",
                    loss=ctx.l,
                ),
                edits=all_edits(edit),
            ),
        )
    ]


# NOTE [State kept on an object with a reset]
# A plain object the loop uses (a linear multistep integrator that keeps its last derivative
# evaluations, a reader and a writer of attention banks) keeps tensors with a graph on an
# attribute that one of its methods reads at the next call, and its class has a method that
# sets that attribute back (reset(), clear()) which the loop does not call at each iteration
# (never, or only when it steps, under gradient accumulation). The next forward reads the
# earlier iteration's tensors, whose graph the backward freed. The fix calls the class's own
# reset right after the backward, so that every forward starts from an empty state, as each
# rollout or micro-batch is meant to; a reset the code already makes elsewhere then finds
# the state empty.


# NOTE [Features a forward stores on its batch]
# A batch the loop iterates over may be an object of the user's code that the forward writes into: a
# molecular or social graph whose node data (a dict, as DGL's ndata) the message-passing layers fill
# with messages and aggregates, and read back. The data set keeps the object, so the next epoch's forward
# of the same batch reads what the last one stored, with its freed graph. Such a dict is scratch space of
# one forward, not a memory across batches: a memory would live on the model, not on each batch (a
# batch's own methods, as a local_scope that restores the dict, say so too). The fix empties each such
# dict right after the backward, so every forward starts from the batch as it was loaded. Only dicts,
# and only on a name the loop binds to its batches: any other object needs a reset of its own class.
