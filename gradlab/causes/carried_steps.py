"""Cause ``carried_state``'s fixes that move a step, a forward or a restart rather than detach the state: a copy of
the weights carried across iterations, the next input's forward run before the step, a step inside a window of
truncated backpropagation, a state carried within one step (the detach fixes are in :mod:`.carried_state`)."""

from __future__ import annotations

import ast
import textwrap

from ..context import Context
from ..edits import Edit
from ..evidence import calls_into
from ..fixes import (
    Fix,
    Proposal,
    backward_with,
    claim,
    indent_of,
    insert_lines,
    keeping,
)
from ..i18n import T
from ..location import Location
from ..source import (
    called_on,
    calls_method,
    detached,
    loop_around,
    loop_body_of,
    names,
    preceding,
    runs_backward,
)

__all__ = [
    "forward_after_step",
    "into_model",
    "kept_within_step",
    "reads_around",
    "restart_from_weights",
    "step_at_window_end",
]


# NOTE [A copy of the weights carried across iterations]
# Meta-learning code may copy a model's weights before its loop (meta_weights = {n: p.detach().clone()
# .requires_grad_() for n, p in model.named_parameters()}), take a virtual step on the copy inside the loop
# (meta_weights = {n: w - lr * g ...}, reading the copy itself and a gradient autograd.grad took in the body)
# and step the real model too. Carried to the next
# iteration, the copy keeps the graph of the last virtual step, which that iteration's backward freed, and it has
# stopped following the weights the optimizer steps. The copy is meant to start from the model at every
# iteration, as the first one did (Meta-Weight-Net, learning-to-reweight): the statement that makes it moves to
# the top of the loop's body. Offered, first, when the carried name is bound once before the loop by a statement
# that reads a model's parameters (parameters(), named_parameters(), state_dict()) and the loop's body rebinds
# it from itself and such a gradient (an EMA of the weights, blended with them, is a memory, not this).
_WEIGHTS = frozenset({"parameters", "named_parameters", "state_dict"})


def restart_from_weights(ctx: Context) -> Proposal | None:
    """The statement that copies a model's weights before the loop, moved to the top of its body (NOTE [A copy of
    the weights carried across iterations])."""
    site, back = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    loop = loop_around(tree, back) if tree is not None and back is not None else None
    if site is None or tree is None or loop is None or not loop.body:
        return None
    body = loop.body
    # a virtual step: rebound from itself and from a gradient autograd.grad took in the body (w - lr * g), not a
    # blend with the model's weights (an EMA of them, which is meant to carry its values)
    grads = {
        t
        for st in body
        if isinstance(st, ast.Assign) and any(runs_backward(c) for c in ast.walk(st.value) if isinstance(c, ast.Call))
        for t in names(st, ast.Store)
    }
    rebound = {
        t
        for st in body
        if isinstance(st, ast.Assign)
        for t in names(st, ast.Store)
        if t in names(st.value, ast.Load) and names(st.value, ast.Load) & grads
    }
    before = preceding(tree, loop.lineno)
    stepped = {  # NOTE [An object that takes virtual steps]
        name for name in _called_in(body) if _steps_itself(tree, before, name) and name not in rebound
    }
    for name in sorted(rebound | stepped):
        made = [st for st in before if isinstance(st, ast.Assign) and name in names(st, ast.Store)]
        if not made:
            continue
        init = made[-1]
        if name in stepped and any(name in names(st, ast.Store) for st in body):
            continue  # rebound in the loop: not carried from before it
        copied = {
            ast.unparse(c.func.value)
            for c in ast.walk(init.value)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in _WEIGHTS
        }
        if not any(m in site.modules for m in copied) or name in names(init.value, ast.Load):
            continue
        start, end = init.lineno, init.end_lineno or init.lineno
        if not (site.holds(start) and site.holds(end)):
            continue
        readers = [st for st in before if st.lineno > end and name in names(st, ast.Load)]
        text = textwrap.dedent("\n".join(site.text(k) for k in range(start, end + 1)))
        top = insert_lines(ctx, body[0].lineno, text)
        if top is None:
            return None
        edits = [top] if readers else [Edit(site.filename, start, end, ""), top]
        model = sorted(m for m in copied if m in site.modules)[0]
        return keeping(
            ctx,
            Fix(
                summary=T(
                    "start {name} again from {model}'s weights at each iteration: the statement that copies them "
                    "moves to the top of the loop's body; carried, {name} kept the graph of the last iteration's "
                    "update and stopped following the weights the optimizer steps",
                    name=name,
                    model=model,
                ),
                trains=T(
                    "{loss} trains through this iteration's copy of {model}'s weights only; each iteration starts "
                    "the copy from the weights as they are then",
                    loss=ctx.l,
                    model=model,
                ),
                edits=tuple(sorted(edits, key=lambda e: e.start)),
                keeps_forward=False,
            ),
        )
    return None


# NOTE [An object that takes virtual steps]
# The copy of the weights may live on an object of the user's: a differentiable optimizer built before the loop
# from a model's parameters (inner_opt = DifferentiableSGD(classifier.parameters(), step_net)), whose method the
# loop calls takes autograd.grad of a loss and stores the stepped weights in its own state
# (group["params"][i] = p - lr * g). Carried to the next iteration, its state holds the graph of the last inner
# steps, which that iteration's backward freed, and the next episode adapts from the last episode's weights, not
# the model's. As with a name rebound in the loop, the statement that builds the object moves to the top of the
# loop's body (higher's innerloop_ctx, entered once per task, does the same). Offered when the object is built once
# before the loop by a call of a class of the file that reads a model's parameters, the loop calls one of its
# methods and never rebinds it, and that method stores, on self or on what it read from self, a value computed
# from the gradients autograd.grad took there.
def _called_in(body: list[ast.stmt]) -> set[str]:
    """The names whose methods the statements of ``body`` call (``inner_opt`` in ``inner_opt.step(loss)``)."""
    return {
        n.func.value.id
        for st in body
        for n in ast.walk(st)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
    }


def _steps_itself(tree: ast.Module, before: list[ast.stmt], name: str) -> bool:
    """``name`` is built before the loop by a class of the file one of whose methods stores a value computed from
    the gradients autograd.grad took there on self's state (NOTE [An object that takes virtual steps])."""
    made = [st for st in before if isinstance(st, ast.Assign) and name in names(st, ast.Store)]
    call = made[-1].value if made else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return False
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == call.func.id), None)
    if cls is None:
        return False
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        derived = {
            t
            for st in ast.walk(fn)
            if isinstance(st, ast.Assign) and runs_backward(st.value)
            for t in names(st, ast.Store)
        }
        if not derived:
            continue
        own = {"self"}
        for _ in range(2):  # the gradients through loops over them and the values computed from them
            for st in ast.walk(fn):
                if isinstance(st, ast.For) and names(st.iter, ast.Load) & derived:
                    derived |= names(st.target, ast.Store)
                elif isinstance(st, ast.Assign) and all(isinstance(t, ast.Name) for t in st.targets):
                    read = names(st.value, ast.Load)
                    if read & derived:
                        derived |= names(st, ast.Store)
                    elif read & own:
                        own |= names(st, ast.Store)  # group = self.param_groups[0]: self's state
        for st in ast.walk(fn):
            if not isinstance(st, ast.Assign) or not names(st.value, ast.Load) & derived:
                continue
            for t in st.targets:
                root = t
                while isinstance(root, (ast.Subscript, ast.Attribute)):
                    root = root.value
                if t is not root and isinstance(root, ast.Name) and root.id in own:
                    return True
    return False


# NOTE [The next input's forward run before the step]
# A loop may compute, before its optimizer step, the features of the input the next iteration
# works on (an agent's next observation encoded for the next action: state = encode(next_obs)),
# and carry them into the next iteration, whose loss trains through them. The step then rewrites
# the weights that forward saved (or its backward freed the graph), and the next backward fails.
# The value does not read its own earlier value (not a recurrent state: nothing to truncate), so
# its forward can run after the step instead: the statements that compute it, and those that
# derive from it before the step, move to right after the statement that holds the step. The
# next iteration then reads a forward of the weights as they are, and its loss trains through it,
# as it meant to. Offered when nothing that stays before the step reads what moves and nothing
# there rebinds what it reads; first when the carried value goes into a model's call (an input
# of the next forward), else after the detach (a value the loss compares against may be meant
# as a constant).
def into_model(ctx: Context) -> bool:
    """The loop passes the carried value into a call of a model an optimizer steps, or of its method
    (``policy.act(state)``): an input of the next forward, not a target a criterion compares against."""
    site, back = ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    carried = set(ctx.carried_all) | ({ctx.carried} if ctx.carried else set())
    if site is None or tree is None or back is None:
        return False
    for call in (n for st in loop_body_of(tree, back) or [] for n in ast.walk(st) if isinstance(n, ast.Call)):
        passed = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(a, ast.Name) and a.id in carried for a in passed):
            continue
        held = frozenset().union(*site.optimizers.values()) if site.optimizers else frozenset()
        trained = [m for m, ids in site.modules.items() if ids & held]  # a loss module (nn.MSELoss) holds nothing
        if any(calls_into(ast.unparse(call.func), m) for m in trained):
            return True
    return False


def forward_after_step(ctx: Context) -> Proposal | None:
    """The forward of the carried value moved after the optimizer step (NOTE [The next input's forward run before
    the step])."""
    site, back = ctx.site, ctx.backward_line
    carried = set(ctx.carried_all) | ({ctx.carried} if ctx.carried else set())
    tree = site.tree() if site is not None else None
    if site is None or tree is None or back is None or not carried or ctx.kept_at is not None or ctx.boundary:
        return None
    body = loop_body_of(tree, back) or []
    binds = [k for k, st in enumerate(body) if names(st, ast.Store) & carried]
    if len(binds) != 1 or not isinstance(body[binds[0]], ast.Assign):
        return None
    k = binds[0]
    if names(body[k].value, ast.Load) & carried:  # type: ignore[attr-defined]
        return None  # a recurrent state (h = rnn(x, h)): its forward needs the earlier one
    steps = [j for j in range(k + 1, len(body)) if calls_method(body[j], ("step",))]
    if not steps:
        return None
    j = steps[-1]
    moved, stored = [k], set(names(body[k], ast.Store))
    for i in range(k + 1, j):
        b = body[i]
        if not names(b, ast.Load) & stored:
            continue
        if not isinstance(b, (ast.Assign, ast.AnnAssign)) or runs_backward(b) or calls_method(b, ("step",)):
            return None
        moved.append(i)
        stored |= names(b, ast.Store)
    if names(body[j], ast.Load) & stored:
        return None  # the step's own statements read it: moved, they would read another value
    inputs = set().union(*(names(body[i], ast.Load) for i in moved)) - stored
    if any(names(body[i], ast.Store) & inputs for i in range(k + 1, j + 1) if i not in moved):
        return None
    spans = [(body[i].lineno, body[i].end_lineno or body[i].lineno) for i in moved]
    if not all(site.holds(a) and site.holds(b) for a, b in spans):
        return None
    indent = indent_of(site, spans[0][0])
    text = "\n".join(
        indent + line.strip() if n == a else site.text(n)
        for a, b in spans
        for n, line in ((m, site.text(m)) for m in range(a, b + 1))
    )
    end = body[j].end_lineno or body[j].lineno
    edits = [Edit(site.filename, a, b, "") for a, b in spans] + [Edit(site.filename, end + 1, end, text)]
    what = ", ".join(sorted(stored))
    fix = Fix(
        summary=T(
            "compute {what} after the optimizer step, where the next iteration reads it: computed before the step, "
            "the forward it keeps for the next iteration saved the weights the step then changed",
            what=what,
        ),
        trains=T(
            "{loss} trains through {what} at the next iteration, computed from the weights after this iteration's step",
            loss=ctx.l,
            what=what,
        ),
        edits=tuple(sorted(edits, key=lambda e: e.start)),
        keeps_forward=False,
    )
    return keeping(ctx, fix)


# NOTE [A step inside a window of truncated backpropagation]
# A loop that detaches its carried state only under a condition (``if end_of_window:
# state = state.detach()``) backpropagates each loss through every iteration since the last
# detach: truncated backpropagation through time over windows, with ``retain_graph`` inside a
# window. An optimizer step at every iteration rewrites the weights the window's graph saved,
# and the next backward inside the window finds them changed. The code's own window says where
# the step belongs: under that condition, where the graph is released, with the window's
# gradients accumulated until then (the statements from the backward to the step, and the
# zero_grad, moved there: step, then zero). Offered first, since the code wrote the window.
def step_at_window_end(ctx: Context) -> Proposal | None:
    """The step (and what runs between the backward and it, and the zero_grad) moved under the condition that
    detaches the carried state (NOTE [A step inside a window of truncated backpropagation])."""
    site, back, carried = ctx.site, ctx.backward_line, set(ctx.carried_all) | ({ctx.carried} if ctx.carried else set())
    tree = site.tree() if site is not None else None
    if site is None or tree is None or back is None or not carried or not ctx.recurrent:
        return None
    body = loop_body_of(tree, back) or []
    here = next((k for k, st in enumerate(body) if st.lineno <= back <= (st.end_lineno or st.lineno)), None)
    window = next(
        (
            (k, st)
            for k, st in enumerate(body)
            if isinstance(st, ast.If)
            and not st.orelse
            and any(_detaches(b, carried) for b in st.body)
            and not any(_detaches(b, carried) for b in body if b is not st)
        ),
        None,
    )
    if here is None or window is None or window[0] < here or not isinstance(body[here], ast.Expr):
        return None
    stepped = next((k for k in range(here + 1, window[0]) if called_on(body[k], "step")), None)
    if stepped is None or any(called_on(b, "step") or called_on(b, "zero_grad") for b in window[1].body):
        return None
    zeroes = [k for k, st in enumerate(body) if k < here and called_on(st, "zero_grad")]
    moved = [*range(here + 1, stepped + 1), *zeroes]
    between = [body[k] for k in range(here + 1, stepped + 1)]
    if not zeroes or any(not isinstance(st, ast.Expr) for st in between):
        return None  # only calls move (a clip, the step): nothing they bind is read before the window ends
    text = "\n".join(ast.get_source_segment(site.source, body[k]) or ast.unparse(body[k]) for k in moved)
    into = insert_lines(ctx, window[1].body[0].lineno, text)
    removed = [Edit(site.filename, body[k].lineno, body[k].end_lineno or body[k].lineno, "") for k in moved]
    if into is None or not all(site.holds(e.start) for e in removed):
        return None
    condition = ast.get_source_segment(site.source, window[1].test) or ast.unparse(window[1].test)
    return Proposal(
        Fix(
            keeps_forward=False,  # inside a window, the next forward runs on the weights before the step
            summary=T(
                "step where the window ends (under `if {condition}:`, where {name} is detached): each backward inside "
                "the window then finds the weights its graph saved, and the window's gradients add up until the step",
                condition=condition,
                name=", ".join(sorted(carried)),
            ),
            trains=T(
                "{loss} trains what it reaches through every iteration of its window (truncated backpropagation "
                "through time, as the code's detach and retain_graph lay it out), one step per window",
                loss=ctx.l,
            ),
            edits=tuple(sorted((*removed, into), key=lambda e: e.start)),
            claims=claim(ctx, ctx.reach),
        ),
        ctx.reach,
        False,
    )


def _detaches(st: ast.stmt, names: set[str]) -> bool:
    """``st`` is ``name = name.detach()`` (or ``name.detach_()``) for one of ``names``."""
    if isinstance(st, ast.Expr):
        call = st.value
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "detach_"
            and ast.unparse(call.func.value) in names
        )
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or ast.unparse(st.targets[0]) not in names:
        return False
    taken = detached(st.value)
    return taken is not None and ast.unparse(taken) == ast.unparse(st.targets[0])


def kept_within_step(ctx: Context) -> Proposal | None:
    """The graph kept by the backward that freed it (``retain_graph=True``), when no optimizer step ran between
    it and the failing one: the losses of one step, each backwarded in turn through the state the loop built (NOTE
    [A state carried within one step])."""
    site, line = ctx.site, ctx.extra.get("one_step")
    if site is None or not line or ctx.total or not ctx.loss:
        return None
    at = int(line)
    edit = backward_with(ctx, at, "retain_graph=True")
    if edit is None:
        return None
    if not ctx.carried:  # no state carried: the losses are parts of one forward made before the loop
        return keeping(
            ctx,
            Fix(
                summary=T(
                    "keep the graph each backward at {where} frees (retain_graph=True): each {loss} is a part of one "
                    "forward computed before this loop, the first backward freed that forward's graph, and no "
                    "optimizer step runs between these backward calls",
                    where=Location(site.filename, at).where,
                    loss=ctx.l,
                ),
                trains=T(
                    "each {loss} trains through the one forward it is a part of, with the values it has now; the "
                    "gradient each backward leaves is used as your code uses it",
                    loss=ctx.l,
                ),
                cost=T("that forward's graph stays in memory until the last of these backward calls"),
                edits=(edit,),
            ),
        )
    return keeping(
        ctx,
        Fix(
            summary=T(
                "keep the graph each backward at {where} frees (retain_graph=True): no optimizer step runs between "
                "these backward calls, so each loss goes on training through the state the loop carries, "
                "as the code asks",
                where=Location(site.filename, at).where,
            ),
            trains=T(
                "each {loss} trains through every earlier iteration's graph that the carried state holds; the "
                "gradients add up into the one step, the gradient of the losses' sum",
                loss=ctx.l,
            ),
            cost=T("every earlier iteration's graph stays in memory, and is gone through again, until the step"),
            edits=(edit,),
        ),
    )


# NOTE [A state carried within one step]
# A loop inside one training step (the frames of one clip, the segments of one sequence) backwards each
# iteration's loss as it goes, and carries a state built from the earlier iterations' graphs (a memory of the
# clip's frames, concatenated). The step comes after the loop. The code as written asks for each loss's
# gradient through the whole state: that is what the earlier iterations' graphs are kept in the state for, and
# with no step in between the gradients add up into the gradient of the losses' sum. retain_graph=True on
# the backward gives exactly that; a detach would stop the later losses from training what built the state
# (an encoder that writes the memory). Offered first when the record shows no step and no other update
# between the backward that freed the graph and the failing one, and the state is not passed through a
# module call that returns its update (an RNN's hidden state, a recurrent memory: there a detach is the
# truncation such loops are written for, and comes first).


def reads_around(ctx: Context) -> tuple[int | None, bool]:
    """The first statement of the loop body above the store that reads the carried state (None if none), and
    whether a statement below the store reads it too (the iteration's own loss on the new value)."""
    site, name, line = ctx.site, ctx.carried, ctx.entry_lineno
    tree = site.tree() if site is not None else None
    if tree is None or name is None or line is None:
        return None, False
    first: int | None = None
    after = False
    for st in loop_body_of(tree, line) or []:
        reads = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(st))
        if st.lineno < line and reads and first is None:
            first = st.lineno
        after = after or (st.lineno > line and reads)
    return first, after
