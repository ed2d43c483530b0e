"""A backward run only to read the gradient of one tensor (NOTE [A backward run to read a gradient]):
``torch.autograd.grad`` in its place."""

from __future__ import annotations

import ast
import re

from ..context import Context
from ..edits import Edit
from ..fixes import Fix, Proposal, indent_of
from ..i18n import T
from ..source import block_of, called_on, calls_method, function_of, loop_body_of, method_call, names, statement_at

__all__ = ["probe_fix"]


def probe_fix(ctx: Context) -> Proposal | None:
    """``torch.autograd.grad(loss, x, retain_graph=True)`` in place of the failing ``loss.backward()``, when the
    function that runs it steps no optimizer, runs it outside any loop, and reads after it the ``.grad`` of one
    plain name only (a saliency, a gradient norm used as a weight); the reads of ``x.grad`` read the returned
    gradient, and the lines that only set up or clear ``x.grad`` go."""
    site, line = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    if site is None or tree is None or line is None or not site.holds(line) or loop_body_of(tree, line) is not None:
        return None
    st = statement_at(tree, line)
    call = method_call(st, "backward")
    if call is None or st is None or call.args or call.keywords or st.lineno != st.end_lineno:
        return None
    if not isinstance(call.func, ast.Attribute):
        return None
    function = function_of(tree, line)
    if function is None or calls_method(function, ("step",)) or not re.search(r"^import torch$", site.source, re.M):
        return None
    block = block_of(function, st)
    if block is None:
        return None
    rest = block[block.index(st) + 1 :]
    probed = {g for x in rest for n in ast.walk(x) if (g := _grad_of(n)) is not None}
    if len(probed) != 1:
        return None
    x = probed.pop()
    before = block[: block.index(st)]
    retained = [b for b in before if called_on(b, "retain_grad") == x]
    asked = retained or any(called_on(b, "requires_grad_") == x for b in before)
    # a probe: the function asks for x's gradient, and clears it or hands back what it computed from it (a training
    # backward that also logs an activation's gradient is neither)
    if not asked or not (any(_clears(r, x) for r in rest) or _returns_from(rest, x)):
        return None
    taken = names(function, ast.Store) | names(function, ast.Load)
    g = next(n for n in (f"{x}_grad", f"grad_of_{x}", f"probed_{x}_grad") if n not in taken)
    loss = ast.unparse(call.func.value)
    indent = indent_of(site, line)
    edits = [Edit(site.filename, b.lineno, b.lineno, "") for b in retained]
    edits.append(
        Edit(site.filename, line, line, f"{indent}({g},) = torch.autograd.grad({loss}, {x}, retain_graph=True)")
    )
    for r in rest:
        reads = [n for n in ast.walk(r) if isinstance(n, ast.Attribute) and n.attr == "grad"]
        if not reads:
            continue
        if r.lineno != r.end_lineno or any(_grad_of(n) != x for n in reads):
            return None
        if _clears(r, x):  # x.grad = None, x.grad.zero_(): nothing to clear any more
            edits.append(Edit(site.filename, r.lineno, r.lineno, ""))
            continue
        if any(isinstance(n.ctx, ast.Store) for n in reads):
            return None
        text = site.text(r.lineno)
        edits.append(Edit(site.filename, r.lineno, r.lineno, re.sub(rf"(?<![\w.]){re.escape(x)}\.grad\b", g, text)))
    fix = Fix(
        summary=T(
            "read the gradient of {x} with torch.autograd.grad({loss}, {x}, retain_graph=True) in place of "
            "{loss}.backward(): it returns the gradient and writes no .grad, and the graph stays for the "
            "backward calls that still go through {x}",
            x=x,
            loss=loss,
        ),
        trains=T(
            "{loss} trains nothing: its gradient is read at {x} only, and no parameter's .grad gets it for an "
            "optimizer step to use; what the code computes from the gradient of {x} stays the same",
            x=x,
            loss=loss,
        ),
        edits=tuple(sorted(edits, key=lambda e: e.start)),
        claims=((loss, ()), *ctx.other_claims),
    )
    return Proposal(fix, (), False)


def _returns_from(rest: list[ast.stmt], name: str) -> bool:
    """A ``return`` of ``rest`` reads ``name.grad``, or a name bound from a statement that reads it."""
    derived: set[str] = set()
    for st in rest:
        reads_grad = any(_grad_of(n) == name for n in ast.walk(st))
        if isinstance(st, ast.Return) and st.value is not None:
            return reads_grad or bool(names(st.value, ast.Load) & derived)
        if reads_grad or names(st, ast.Load) & derived:
            derived |= names(st, ast.Store)
    return False


def _grad_of(node: ast.AST) -> str | None:
    """The name whose gradient ``node`` is (``x`` of ``x.grad``), else None."""
    if isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.value, ast.Name):
        return node.value.id
    return None


def _clears(st: ast.stmt, name: str) -> bool:
    """``st`` is ``name.grad = None`` or ``name.grad.zero_()``."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1:
        return _grad_of(st.targets[0]) == name and isinstance(st.value, ast.Constant) and st.value.value is None
    return called_on(st, "zero_") == f"{name}.grad"


# NOTE [A backward run to read a gradient]
# A helper backwards a loss only to read the gradient of one tensor it is given
# (a per-sample saliency: the norm of a head's gradient on the shared features,
# used to weight the training loss; a gradient norm for a GradNorm weight): it
# calls x.retain_grad(), loss.backward(), reads x.grad and sets it back to None.
# Called twice on one forward, the second backward meets the graph the first
# freed. retain_graph=True would run, but each probe's backward also writes its
# gradient into every parameter below x, and the optimizer's step then uses it
# with the training loss's: the probes train the model, which a read of x's
# gradient never asked for. torch.autograd.grad(loss, x, retain_graph=True)
# returns that gradient and writes no .grad; the graph stays for the later
# backward through x. Only a backward outside any loop, in a function that
# steps no optimizer, with the .grad of one plain name read after it, is read
# this way, and only when the function asks for that gradient (retain_grad,
# requires_grad_) and clears it or returns what it computed from it: a
# training backward that also logs a gradient is the training, not a probe.
