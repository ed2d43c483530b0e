"""A part of the failing graph that no optimizer steps: where it was made, so that a detach there frees nothing
the training needs (NOTE [A part no optimizer steps], NOTE [A part made before the loop])."""

from __future__ import annotations

import ast
import linecache

import torch

from .evidence import Facts, Problem, freeing_call, roots_of, saved_line, sequence_of
from .graph import Graph, walk
from .location import Location
from .loop import LoopIntent
from .source import function_of, loop_body_of, parse, statement_at

__all__ = ["made_apart", "made_apart_also", "made_outside", "stored_for_others"]


def made_apart(
    graph: Graph,
    p: Problem,
    facts: Facts,
    loss: str | None,
    intent: LoopIntent | None,
    node_id: int | None = None,
) -> tuple[Location, bool] | None:
    """The forward line that made the freed node of ``p`` when what it computes, and everything else the graph
    saved on that line, reaches only parameters that none of the frame's optimizers holds, or (freed by an earlier
    pass of the failing backward itself) none that an optimizer stepping on the failing loss holds (NOTE [A part no
    optimizer steps]); with True when parameters below it are held by optimizers that do not step on that loss.
    None otherwise. ``node_id``: another freed node of the same failure than ``p``'s."""
    site = facts.site
    node_id = p.node_id if node_id is None else node_id
    if node_id is None or site is None or not site.optimizers:
        return None
    # the frame's optimizers, and every one the tracker saw step (a critic's optimizer in the caller's loop)
    stepped = facts.tracker.optimizers.held() if facts.tracker is not None else frozenset()
    held = everything = frozenset().union(*site.optimizers.values(), stepped)
    # and those of the loop that calls the frame's function whose step follows the call with no zero_grad() between:
    # an encoder's optimizer stepped after the updates the loop calls steps on the losses they backward, which may
    # not have stepped yet (NOTE [A part no optimizer steps])
    caller = _stepped_after_call(facts)
    call, failing = freeing_call(p, facts), facts.failing
    # the failing backward's line; check() runs before it: the backward it checks for
    failing_at = (
        (failing.location.filename, failing.location.lineno)
        if failing is not None and failing.location is not None
        else (site.filename, facts.backward_line)
        if failing is None and facts.backward_line is not None
        else None
    )
    own = (
        call is not None and call.location is not None and (call.location.filename, call.location.lineno) == failing_at
    )
    if own and intent is not None and intent.known:
        stepping = [site.optimizers.get(plan.optimizer) for plan in intent.plans if plan.steps]
        if all(ids is not None for ids in stepping):
            held = frozenset().union(*(ids for ids in stepping if ids is not None))
    held |= caller
    roots = roots_of(facts, loss)
    at = saved_line(graph, [node_id])
    if at is None:
        return None
    on_line = {
        s.node_id
        for s in graph.saved
        if s.saved_at is not None and (s.saved_at.filename, s.saved_at.lineno) == (at.filename, at.lineno)
    }
    nodes = {n.id: n for n in graph.nodes}
    wanted = {(nodes[i].seq, nodes[i].name) for i in on_line if i in nodes and nodes[i].seq is not None}
    found = other = False
    for fn in walk(roots):
        if (sequence_of(fn), fn.name()) not in wanted:
            continue
        found = True
        for below in walk([fn]):
            leaf = getattr(below, "variable", None)
            if leaf is not None and (not isinstance(leaf, torch.nn.Parameter) or id(leaf) in held):
                return None  # a parameter an optimizer steps, or an input whose .grad the code may read
            other = other or (leaf is not None and id(leaf) in everything)  # held by an optimizer of other losses
    return (at, other) if found else None


def stored_for_others(at: Location, facts: Facts) -> bool:
    """The line ``at`` stores the part on an attribute (``self.fake_B = self.netG(...)``) that a function other than
    the storing one and the failing one reads (the generator's loss reading the sample each critic round reads): the
    part is shared with other losses, as a returned value is (NOTE [A part no optimizer steps])."""
    tree = parse("".join(linecache.getlines(at.filename)))
    site, line = facts.site, facts.backward_line
    if tree is None or site is None or line is None or site.filename != at.filename:
        return False
    st = statement_at(tree, at.lineno)
    target = st.targets[0] if isinstance(st, ast.Assign) and len(st.targets) == 1 else None
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return False
    storing, failing = function_of(tree, at.lineno), function_of(tree, line)
    if storing is None or failing is None or storing is failing:
        return False
    return any(
        fn is not storing
        and fn is not failing
        and any(
            isinstance(n, ast.Attribute)
            and isinstance(n.ctx, ast.Load)
            and n.attr == target.attr
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
            for n in ast.walk(fn)
        )
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


def _stepped_after_call(facts: Facts) -> frozenset[int]:
    """The parameters of the caller loop's optimizers whose ``step()`` comes after the line that calls the failing
    function, before any ``zero_grad()`` of theirs: they step on the gradients that function's backward leaves."""
    loop = facts.caller_loop
    tree = loop.site.tree() if loop is not None else None
    fn = function_of(tree, loop.line) if loop is not None and tree is not None else None
    if loop is None or fn is None:
        return frozenset()
    calls = sorted(
        (n.lineno, n.func.attr, ast.unparse(n.func.value))
        for n in ast.walk(fn)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("step", "zero_grad")
        and n.lineno > loop.line
    )
    found: set[int] = set()
    done: set[str] = set()
    for _line, what, name in calls:
        if name in done or name not in loop.site.optimizers:
            continue
        done.add(name)
        if what == "step":
            found |= loop.site.optimizers[name]
    return frozenset(found)


def made_apart_also(
    graph: Graph, p: Problem, facts: Facts, loss: str | None, intent: LoopIntent | None, first: Location
) -> tuple[Location, ...]:
    """The other lines :func:`made_apart` finds for the failure's other freed nodes (a cache of two tensors, each
    made on its own line from the same part): each needs its detach too, or the next backward finds the other.
    Only statements of ``first``'s block that store an attribute as it does (``self._alpha`` beside
    ``self._chol``): a line of a helper both the cache and the training call (a property) is no such sibling."""
    from .source import enclosing_blocks

    tree = parse("".join(linecache.getlines(first.filename)))
    block = next(
        (b for b in (enclosing_blocks(tree) if tree is not None else ()) if any(st.lineno == first.lineno for st in b)),
        None,
    )
    stores = {
        st.lineno
        for st in block or ()
        if isinstance(st, ast.Assign)
        and st.lineno == st.end_lineno
        and all(isinstance(x, ast.Attribute) for x in st.targets)
    }
    if first.lineno not in stores:
        return ()
    found: dict[tuple[str, int], Location] = {}
    freed = {s.node_id for s in graph.saved if s.status == "freed" and s.node_id is not None} - {p.node_id}
    for node_id in sorted(freed):  # each node once (a node saves several tensors)
        made = made_apart(graph, p, facts, loss, intent, node_id=node_id)
        if (
            made is not None
            and made[0].filename == first.filename
            and made[0].lineno != first.lineno
            and made[0].lineno in stores
        ):
            found.setdefault((made[0].filename, made[0].lineno), made[0])
    return tuple(found[k] for k in sorted(found))


def made_outside(
    graph: Graph, p: Problem, facts: Facts, loss: str | None, intent: LoopIntent | None
) -> tuple[tuple[str, str], ...]:
    """A name of the failing function that holds the freed node of ``p`` in its graph (a tensor, or a list or tuple
    of tensors: gradients a function received), bound before the loop and never in its body, whose whole part of
    the graph below ends in parameters none of the optimizers the loop steps holds (``intent``): its name and
    ``tensor``, ``list`` or ``tuple`` (NOTE [A part made before the loop]); every such name, or none."""
    site = facts.site
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if node is None or node.seq is None or site is None or not site.optimizers or facts.backward_line is None:
        return ()
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None else None
    if not body:
        return ()
    bound = {n.id for st in body for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = {n.id for st in body for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if intent is None or not intent.known:
        return ()
    stepping = [site.optimizers.get(plan.optimizer) for plan in intent.plans if plan.steps]
    if not stepping or any(ids is None for ids in stepping):
        return ()
    held = frozenset().union(*(ids for ids in stepping if ids is not None))
    stepped = facts.tracker.optimizers.held() if facts.tracker is not None else frozenset()
    everything = frozenset().union(*site.optimizers.values(), stepped)
    freed = {s.node_id for s in graph.saved if s.status == "freed"} | {node.id}
    wanted = {(n.seq, n.name) for n in graph.nodes if n.id in freed}  # any freed part of the failing graph
    found: list[tuple[str, str]] = []
    for name in sorted(k for k in facts.namespace if isinstance(k, str) and not k.startswith("_")):
        value = facts.namespace[name]
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if (
            name in bound
            or name not in read
            or name == loss
            or not items
            or not all(isinstance(t, torch.Tensor) for t in items)
        ):
            continue
        roots = [t.grad_fn for t in items if t.grad_fn is not None]
        below = walk(roots)
        if not any((sequence_of(fn), fn.name()) in wanted for fn in below):
            continue
        for fn in below:
            leaf = getattr(fn, "variable", None)
            if leaf is not None and (not _trained_leaf(leaf, everything) or id(leaf) in held):
                return ()  # a parameter an optimizer steps, or an input whose .grad the code may read
        found.append((name, "list" if isinstance(value, list) else "tuple" if isinstance(value, tuple) else "tensor"))
    return tuple(found)


def _trained_leaf(leaf: torch.Tensor, held: frozenset[int]) -> bool:
    """``leaf`` is trained by some optimizer: a parameter, or a tensor an optimizer holds (a candidate point a
    search refines with its own optimizer: ``torch.zeros(4, requires_grad=True)`` handed to Adam), not an input whose
    ``.grad`` the code may read (NOTE [A part made before the loop])."""
    return isinstance(leaf, torch.nn.Parameter) or id(leaf) in held


# NOTE [A part made before the loop]
# The loss of each iteration reads a tensor the function was handed, or made before
# its loop, whose graph ends in parameters no optimizer the loop steps holds
# (gradlab.loop's intent): the "gradients" a federated client uploaded, computed
# from its parameters with autograd on, matched by a gradient-inversion attack.
# The first backward frees that part; the second finds it freed. Its line may be
# unknown (a Python number divided into it is saved behind torch's hooks), but the
# name is the frame's: the fix detaches it once, before the loop, which changes no
# value of the forward and no update of the loop's optimizers. The gradient the
# loss sent below it (into the client's parameters) is no longer made: the fix's
# trains line says so, since an optimizer outside the loop could read it. Not
# offered when a leaf below is an input that is no parameter, or a parameter an
# optimizer the loop steps holds. A plain tensor an optimizer holds counts as a
# parameter (a Bayesian-optimisation round refines a candidate with its own Adam,
# and appends it, graph and all, to the observations the surrogate is then fitted
# on: the fit's every step reads that part, and the candidate's optimizer clears
# the gradient the fit would leave before it steps).


# NOTE [A part no optimizer steps]
# A backward fails on a freed node whose whole part of the graph ends in
# parameters no optimizer of the loop holds: an embedding table a plain object
# keeps to encode a column once, a pretrained encoder left requiring grad and
# never handed to an optimizer. Every backward through that part only fills
# .grad fields nothing reads, and the part was made once (before the loop, or by
# an earlier loss), so the second backward through it fails. A .detach() where
# the part was made changes no value of the forward and no update of any
# optimizer: it is offered for any cause of a freed graph. When an earlier pass of
# the failing backward itself freed that part (the same line, an earlier
# iteration: latents an encoder computed once, before a flow prior is fitted on
# them), the parameters below need only be outside the optimizers the loop steps
# on the failing loss (gradlab.loop's intent): the encoder's own optimizer, which
# another loss steps, gets no gradient from this one, as before (its .grad from
# this loss was never used), and the fix says so. Not offered when a
# leaf below is not a parameter (an input whose .grad an attack or a saliency map
# reads), when any node the graph saved on that line reaches a parameter an
# optimizer holds (the line computes something trained as well), or when the
# frame names no optimizer (nothing to tell "held" from "not held"). When the
# part's parameters are held by an optimizer that steps on other losses and the
# part was made in another function (a generator's forward, its sample kept on
# the trainer and read by each critic round and by the generator's own loss), a
# detach where it was made (the forward's return) would cut those losses too (the
# generator would learn nothing): the detach goes where the failing loss's function
# reads the tensor (self.fake_clean.detach() in the critic's loss), when that read
# is one expression of the frame whose value holds the freed node. So is a value a
# method stores on an attribute that a third function reads (the generator's sample
# stored by forward(), read by the critic's loss and by the generator's own loss). A
# value a method stores for the failing loss alone (a bank's refresh from a teacher's
# features) is detached where it is made.
# "Held" counts the optimizers of the loop that calls the failing function too, when
# their step follows that call with no zero_grad() of theirs between (a shared
# encoder's optimizer, stepped after the agents' updates it calls, steps on their
# losses before any step of it ran: the tracker has not seen it step yet).
