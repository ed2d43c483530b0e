"""Updates of the weights between two backwards that are not an optimizer's ``step()`` (NOTE [Updates that are not
steps]): SAM's ``first_step()``, a function of the user's file that writes a given model's parameters in place. Read
by :mod:`gradlab.causes` to decide that the forward is to run again after such an update."""

from __future__ import annotations

import ast
import re

from ..evidence import Facts, receiver
from ..location import Location
from ..loop import may_update
from ..recorder import BackwardCall
from ..writes import NOT_WRITES
from .chained import modules_given

__all__ = ["updater", "updates_between", "writes_parameters"]


# NOTE [Updates that are not steps]
# An optimizer may change the weights in a method of its own that is not step(): SAM's
# first_step() moves every parameter to the worst point near it, in place, under no_grad,
# before the second backward. The tracker's step hooks do not see it, and the writes are
# to tensors no live graph saves any more (the first backward freed them), so the record
# has nothing. The source has it: a call, between the freeing backward and the failing
# one in the same function, of a method other than zero_grad() on one of the frame's
# optimizers. Then "keep the graph" (retain_graph=True) is no fix (the second backward
# would meet the changed weights: the in-place error), and the forward is to be run again
# after that call, as after a step. The same holds for a function of the user's file given
# one of the frame's models that writes its parameters in place (a hand-written SAM's
# ascend(model, rho): for p in model.parameters(): p.add_(e)). And for a write under no_grad
# that a method of an object of the file makes (a SAM or weight-perturbation object's
# ascend() over the parameters it was given): the forward of the written model runs again
# after the statement of the failing function that calls it (candidates._write_here).
def writes_parameters(tree: ast.Module, name: str) -> bool:
    """The top-level function ``name`` of ``tree`` loops over a model's ``parameters()`` (or
    ``named_parameters()``) and calls an in-place method (``p.add_(e)``): it writes the weights it is given."""
    fn = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == name), None)
    if fn is None:
        return False
    loops = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.For)
        and any(
            isinstance(c, ast.Call)
            and isinstance(c.func, ast.Attribute)
            and c.func.attr in ("parameters", "named_parameters")
            for c in ast.walk(n.iter)
        )
    ]
    return any(
        isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and c.func.attr.endswith("_")
        and not c.func.attr.startswith("_")
        and c.func.attr not in NOT_WRITES  # p.requires_grad_(False) freezes, it writes no weight
        for loop in loops
        for c in ast.walk(loop)
    )


def updates_between(
    facts: Facts, call: BackwardCall, failing: BackwardCall | None
) -> list[tuple[Location | None, str]]:
    """The first update of the weights in the failing function between the freeing backward ``call`` and the
    failing one (``failing``, or the line ``check()`` runs before): an optimizer's ``step()`` or another updating
    method of one of the frame's optimizers, or a call of a function of the file that writes the parameters of a
    model it is given (NOTE [Updates that are not steps]); as its line and the optimizer's class (or the function's
    name). Empty when there is none, or when the lines say nothing of what ran between."""
    site = facts.site
    if site is None or call.location is None or call.location.filename != site.filename:
        return []
    if not site.holds(call.location.lineno):
        return []  # the freeing backward in another function: its lines say nothing of what ran between
    # the failing backward's line; check() runs before it: the backward it checks for
    if failing is not None and failing.location is not None:
        if failing.location.filename != site.filename:
            return []
        end = failing.location.lineno
    elif facts.backward_line is not None:
        end = facts.backward_line
    else:
        return []
    start = call.location.lineno
    if not start < end:
        return []
    tree = site.tree()
    found: list[tuple[Location | None, str]] = []
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and start < node.lineno < end
            and (node.func.attr == "step" or (node.func.attr != "zero_grad" and may_update(node.func.attr)))
            and ast.unparse(node.func.value) in site.optimizers
            and site.holds(node.lineno)
        ):
            optimizer = facts.namespace.get(ast.unparse(node.func.value))
            found.append((Location(site.filename, node.lineno), type(optimizer).__name__))
        elif (  # a function of the file that writes the parameters of a model it is given (NOTE above)
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and start < node.lineno < end
            and site.holds(node.lineno)
            and modules_given(node, site)
            and tree is not None
            and writes_parameters(tree, node.func.id)
        ):
            found.append((Location(site.filename, node.lineno), node.func.id))
    return sorted(found, key=lambda f: f[0].lineno if f[0] is not None else 0)[:1]


def updater(code: str | None) -> str | None:
    """The optimizer of a step's line: ``opt`` of ``opt.step()``, or of ``opt.first_step(...)`` (NOTE [Updates that
    are not steps])."""
    found = receiver(code, "step")
    if found is None and code:
        m = re.match(r"\s*([\w.\[\]]+)\.\w+\(", code)
        found = m[1] if m else None
    return found
