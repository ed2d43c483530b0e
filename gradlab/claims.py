"""What each loss of the loop trains as the code stands: the claims a fix keeps for the losses it does not touch.

Read from the record where the loop has gone round (:func:`intent_from_record`), else from the frame's tensors
(the models each loss's graph reaches) and the source (the statements that compute a loss not yet made), limited to
the models whose optimizer steps on that loss. A fix's ``trains:`` line lists them beside its own claim.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import torch

from .evidence import Facts, Failure, calls_into, leaves_of, modules_reached, value_of
from .i18n import T, Words, join
from .location import frame_names
from .loop import LoopIntent, Site, read_site, recorded_intent, site_intent
from .source import calls_method, function_of, loop_body_of, outermost_loop, preceding

__all__ = [
    "claims_of_others",
    "failure_claims",
    "intent_from_record",
    "loop_claims",
    "one_name_each",
    "other_claims",
    "term_claims",
]


def intent_from_record(
    facts: Facts, read: LoopIntent | None, loss: str | None
) -> tuple[LoopIntent | None, Words | None]:
    """The loop's intent from what ran when the loop has gone round, else ``read`` from the source; and a
    sentence when both are known and disagree (NOTE [Intent from the record] in loop.py)."""
    tracker, site = facts.tracker, facts.site
    if tracker is None or site is None:
        return read, None
    failing = facts.failing
    if failing is not None:
        at, until = failing.location, failing.index
    elif facts.backward_line is not None:
        line = facts.backward_line
        at = next(
            (
                c.location
                for c in reversed(tracker.history)
                if c.location is not None and c.location.filename == site.filename and c.location.lineno == line
            ),
            None,
        )
        until = tracker.stats()["backward_calls"]
    else:
        return read, None
    ran = recorded_intent(tracker.history, tracker.optimizer_calls, at, until, site)
    if not ran.known:
        return read, None
    if read is None or not read.known or set(read.trained) == set(ran.trained):
        return ran, None
    if not any(plan.steps for plan in ran.plans) and read.trained:
        # no step ran between the two backward calls: the step comes after an inner loop of several backward calls
        # (microbatches clipped one by one, NOTE [Intent from the record]): what it does is read from the source
        return read, None
    words = {k: join(v, T(" and ")) if v else T("nothing") for k, v in (("ran", ran.trained), ("read", read.trained))}
    note = T(
        "the loop's record and its source disagree on what {loss} trains: its optimizers stepped {ran} on it "
        "when it ran, the source after the backward reads {read}; the fixes follow what ran",
        loss=loss or T("the failing loss"),
        **words,
    )
    return ran, note


def other_claims(facts: Facts, failing_loss: str | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What each other loss the loop backwards trains as the code stands: the models its graph reaches
    whose optimizer steps on it (read as for the failing loss), for the losses still bound in the frame."""
    return claims_of_others(facts.site, facts.backward_line, facts.namespace, failing_loss)


# NOTE [An inner loop of one step]
# A method that runs one training step may backward in an inner loop (a hint loss per
# student layer) and once more after it (the task loss), then step: the training loop
# is the caller's, and the method's body is one iteration of it. The other losses the
# step uses are read from the whole body, not from the inner loop alone: a fix that keeps
# the inner loop's graph trains with them too.
def claims_of_others(
    site: Site | None,
    line: int | None,
    namespace: Mapping[str, Any],
    failing_loss: str | None,
    *,
    same_steps: bool = False,
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """:func:`other_claims` from the failing function's site, the failing backward's line and the frame's names.

    ``same_steps``: only the losses whose gradients the same optimizer steps use as the failing loss's (no
    ``step()`` or ``zero_grad()`` between the two backward statements): an actor-critic's two losses summed
    into one step, not a shared encoder stepped after each of its losses.
    """
    if site is None or line is None or not site.modules:
        return ()
    tree = site.tree()
    body = loop_body_of(tree, line) if tree is not None else None
    if body is None and tree is not None:
        body = list(tree.body)
    elif not same_steps and tree is not None:  # the training loop's other inner loops too (a GP fitted, then used)
        outer = outermost_loop(tree, line)
        body = outer.body if outer is not None else body
        fn = function_of(tree, line)
        if (  # NOTE [An inner loop of one step]
            outer is not None
            and fn is not None
            and fn.lineno < outer.lineno
            and not calls_method(outer, ("step",))
            and any(calls_method(st, ("step",)) for st in fn.body if st is not outer)
        ):
            body = fn.body
    body = body or []
    here = next((k for k, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
    out: dict[str, tuple[str, ...]] = {}
    for k, st in enumerate(body):
        if same_steps and (
            here is None
            or k == here
            or any(calls_method(b, ("step", "zero_grad")) for b in body[min(k, here) + 1 : max(k, here)])
        ):
            continue
        for n in ast.walk(st):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"):
                continue
            name = ast.unparse(n.func.value)
            value = value_of(name, namespace)
            if name == failing_loss and (same_steps or n.lineno == line):
                continue  # NOTE [One loss backwarded on two lines]: another line's backward of it is claimed too
            if isinstance(value, torch.Tensor) and value.grad_fn is not None:
                reach = modules_reached(site, leaves_of(value))
            elif leaves := _arithmetic_leaves(n.func.value, namespace):  # (w * penalty).backward()
                reach = modules_reached(site, leaves)
            elif value is None and name.isidentifier() and tree is not None:  # not computed yet in this iteration
                reach = _reach_from_source(site, tree, n.lineno, name, namespace)
            else:
                continue
            intent = site_intent(site, n.lineno)
            if intent.known:
                out[name] = tuple(sorted({*out.get(name, ()), *(reach & set(intent.trained))}))
    return tuple(sorted(out.items()))


def _arithmetic_leaves(expr: ast.expr, namespace: Mapping[str, Any]) -> set[int]:
    """The leaves an arithmetic expression of the frame's values reaches (``eik_weight * eikonal``): those of its
    tensors with a graph; empty when it calls anything (reading it must not run the user's code)."""
    allowed = (ast.BinOp, ast.UnaryOp, ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.operator, ast.unaryop)
    if not isinstance(expr, (ast.BinOp, ast.UnaryOp)) or not all(
        isinstance(x, (*allowed, ast.expr_context)) for x in ast.walk(expr)
    ):
        return set()
    leaves: set[int] = set()
    for x in ast.walk(expr):
        if isinstance(x, (ast.Name, ast.Attribute, ast.Subscript)):
            value = value_of(ast.unparse(x), namespace)
            if isinstance(value, torch.Tensor) and value.grad_fn is not None:
                leaves |= leaves_of(value)
    return leaves


def _modules_to_be(tree: ast.Module, line: int, namespace: Mapping[str, Any]) -> set[str]:
    """Names the code binds to a new ``nn.Module`` before ``line``, read from the source: ``model = Net(args)``
    where ``Net`` is a module class of the frame's names (a failure raised while the model is being built
    happens before the frame holds it)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < line
            and isinstance(node.value, ast.Call)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            cls = namespace.get(ast.unparse(node.value.func)) if isinstance(node.value.func, ast.Name) else None
            if isinstance(cls, type) and issubclass(cls, torch.nn.Module):
                found.add(node.targets[0].id)
    return found


def one_name_each(site: Site, models: set[str]) -> tuple[str, ...]:
    """``models`` with one name for each set of parameters: a wrapper that holds no parameter of its own
    (``diffusion = GaussianDiffusion(model)``) and the model it wraps are one model, named as first bound."""
    order = list(site.modules)
    kept: list[str] = []
    for m in sorted(models, key=lambda m: order.index(m) if m in order else len(order)):
        ids = site.modules.get(m)
        if ids is None or all(site.modules.get(k) != ids for k in kept):
            kept.append(m)
    return tuple(sorted(kept))


def loop_claims(
    site: Site | None,
    namespace: Mapping[str, Any],
    line: int,
    feeding_into: tuple[str, frozenset[str]] | None = None,
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What each loss the code backwards after ``line`` trains, as the code stands: ``(loss, modules)``.

    ``feeding_into``: a fix's new data flow, ``(reader, calls)``: a loss that reaches the
    model ``reader`` reaches the models ``calls`` run too (a parameter of ``reader`` written
    with their output, run with the written copy).

    For a fix that changes nothing of the training (a failure raised before the loss's
    backward: in its forward, in the logging after it): each backward statement that runs
    next in the loop (or the function), its loss's reach (the graph of the tensor bound to
    its name, else the user's models the statements computing it call) limited to the
    modules whose optimizer steps on it.
    """
    from .source import after

    tree = site.tree() if site is not None else None
    if site is None or tree is None:
        return ()
    out: dict[str, tuple[str, ...]] = {}
    # every backward the loop runs: those after the line, then those of the loop's body before it (the next
    # iteration runs them; a failure in the actor's forward after the critics' backwards leaves theirs as they are)
    body = loop_body_of(tree, line) or []
    earlier = [st for st in body if (st.end_lineno or st.lineno) < line]
    for st in [*after(tree, line), *earlier]:
        for node in ast.walk(st):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"
            ):
                continue
            whole = ast.unparse(node.func.value)
            terms = summed_names(node.func.value)  # NOTE [A loss written as a sum of named losses]
            for loss in terms or (whole,):
                _claim_of(site, tree, namespace, node, loss, out, feeding_into)
    return tuple(sorted(out.items()))


def summed_names(expr: ast.expr) -> tuple[str, ...]:
    """The names a loss expression adds up, each maybe scaled by a number (``cls_loss + 0.1 * align_loss``:
    ``cls_loss``, ``align_loss``); empty for any other expression, or a single name.

    Example::

        >>> summed_names(ast.parse("a + 0.5 * b - c / 2", mode="eval").body)
        ('a', 'b', 'c')
        >>> summed_names(ast.parse("a * b", mode="eval").body)
        ()
    """
    found: list[str] = []

    def walk(e: ast.expr) -> bool:
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            return walk(e.left) and walk(e.right)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
            number, term = (e.left, e.right) if isinstance(e.left, ast.Constant) else (e.right, e.left)
            return isinstance(number, ast.Constant) and isinstance(number.value, (int, float)) and walk(term)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div) and isinstance(e.right, ast.Constant):
            return walk(e.left)
        if isinstance(e, ast.Name):
            found.append(e.id)
            return True
        return False

    return tuple(dict.fromkeys(found)) if walk(expr) and len(found) > 1 else ()


# NOTE [A loss written as a sum of named losses]
# ``(cls_loss + 0.1 * align_loss).backward()`` trains what each term reaches, each with its own reach: the
# alignment loss may reach the encoder only, the classification loss the classifier too. A claim for the sum
# as one loss would say the alignment loss trains the classifier. So the claims of such a backward are made per
# named term, as if each were backwarded (a number scaling a term changes no reach). Only where the fix keeps
# each term's reach: the loop's claims (a failure before the backward changes no training) and an in-place
# write's fixes (its out-of-place form, a copy); a freed graph's fixes may cut a term's path (a constant
# detached), and what the term reached before the fix says nothing of after it.


def term_claims(
    site: Site | None, namespace: Mapping[str, Any], loss: str | None
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What each named term of ``loss`` reaches, when it is a sum of named losses bound to tensors with a graph
    (NOTE [A loss written as a sum of named losses]); empty otherwise."""
    if site is None or not loss:
        return ()
    try:
        names = summed_names(ast.parse(loss, mode="eval").body)
    except SyntaxError:
        return ()
    out = []
    for name in names:
        value = namespace.get(name)
        if not isinstance(value, torch.Tensor) or value.grad_fn is None:
            return ()
        out.append((name, one_name_each(site, modules_reached(site, leaves_of(value)))))
    return tuple(out)


def _claim_of(
    site: Site,
    tree: ast.Module,
    namespace: Mapping[str, Any],
    node: ast.Call,
    loss: str,
    out: dict[str, tuple[str, ...]],
    feeding_into: tuple[str, frozenset[str]] | None,
) -> None:
    """``out[loss]``: what ``loss``, backwarded by the call ``node``, trains (loop_claims)."""
    value = value_of(loss, namespace) if loss not in out else None
    if isinstance(value, torch.Tensor) and value.grad_fn is not None:
        reach = modules_reached(site, leaves_of(value))
    elif loss in out or not loss.isidentifier():
        return
    else:
        reach = _reach_from_source(site, tree, node.lineno, loss, namespace)
    if feeding_into is not None and any(calls_into(feeding_into[0], m) for m in reach):
        reach |= {m for m in site.modules if any(calls_into(c, m) for c in feeding_into[1])}
    intent = site_intent(site, node.lineno)
    trained = one_name_each(site, reach & set(intent.trained) if intent.known else reach)
    if not trained and not (isinstance(value, torch.Tensor) and value.grad_fn is not None):
        return  # read from the code, nothing found: unknown, not a claim that the loss trains nothing
    out[loss] = trained


def _reach_from_source(site: Site, tree: ast.Module, line: int, loss: str, namespace: Mapping[str, Any]) -> set[str]:
    """The user's models that the statements computing ``loss`` (backwarded at ``line``) call: a loss's reach
    read from the code, for a loss that has no tensor yet (its statements run later in the iteration)."""
    from .source import feeding, names

    before = preceding(tree, line)
    lines = feeding(before, {loss})
    # a loop over a tensor's parts (``for part in net(x):``) feeds the loss through its target
    loops = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.For)
        and n.lineno < line
        and any(n.lineno < k <= (n.end_lineno or n.lineno) for k in lines)
        and names(n.target, ast.Store) & {m for b in before if b.lineno in lines for m in names(b, ast.Load)}
    ]
    if loops:
        lines |= feeding(before, {loss} | {m for n in loops for m in names(n.iter, ast.Load)})
    called = {
        ast.unparse(n.func)
        for b in [*(b for b in before if b.lineno in lines), *(n.iter for n in loops)]
        for n in ast.walk(b)
        if isinstance(n, ast.Call)
    }
    modules = set(site.modules) | _modules_to_be(tree, line, namespace)
    return {m for m in modules if any(calls_into(c, m) for c in called)}


def failure_claims(f: Failure) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What the loop's losses train as the code stands (:func:`loop_claims`), read in the innermost user frame
    of the failure ``f`` that backwards after its line: the failing function, or the loop that called it."""
    if f.location is not None:
        found = loop_claims(f.site, f.namespace, f.location.lineno)
        if found:
            return found
    for frame, line in f.outer:
        site = read_site(frame)
        found = loop_claims(site, frame_names(frame), line)
        if found:
            return found
    return ()
