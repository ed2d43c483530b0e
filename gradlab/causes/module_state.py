"""Cause ``carried_state``, kept on modules: a module keeps a tensor on an attribute from one forward to the next
(a spiking neuron's membrane potential, a preallocated key/value cache written in place), and the next
iteration's forward reads it with the previous iteration's freed graph; its fixes (NOTE [State kept on modules]).
"""

from __future__ import annotations

import ast
from dataclasses import replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, from_frame, holds_node, leaves_of, value_of
from ..fixes import Fix, Proposal, all_edits, edit_at, insert_lines, keeping, source_of
from ..graph import GraphNode
from ..i18n import T, Text, join
from ..location import Location
from ..rewrite import detached_value, replace_reads
from ..source import block_of, calls_method, loop_body_of, names, statement_at
from .class_source import class_tree, methods_of, self_attr
from .kept_state import detach_expr, graph_attrs, kept_state, state_tensors_with_graph
from .module_cache import cached_context, clear_caches, module_path, updates_entries
from .recurrent_state import recurrent_state, unstated_fix

__all__ = ["kept_on_modules", "module_state_fixes"]


def _sequences(module: torch.nn.Module, attrs: list[str]) -> dict[str, str]:
    """The attributes of ``attrs`` that hold a tuple or list of tensors rather than one tensor, with that kind."""
    return {
        a: "dict" if isinstance(v, dict) else type(v).__name__
        for a in attrs
        if isinstance(v := getattr(module, a, None), (tuple, list, dict))
    }


def _sequence_state(ctx: Context) -> dict[str, str]:
    """The kept attributes that hold a tuple or list of tensors, with which (read by :func:`kept_on_modules`)."""
    return dict(item.split(":", 1) for item in ctx.extra.get("sequence_state", "").split())


def kept_on_modules(base: Context, facts: Facts, holding: GraphNode | None = None) -> Context | None:
    """State kept on modules across iterations: a module of the frame's models keeps a tensor with a graph on an
    attribute that its forward reads before it sets it (NOTE [State kept on modules]). ``holding``: only the
    attributes whose tensors hold that node of the failing graph (NOTE [A module's state read by a second forward])."""
    site = facts.site
    if site is None:
        return None
    roots = {
        k: v
        for k, v in facts.namespace.items()
        if isinstance(k, str) and not k.startswith("_") and isinstance(v, torch.nn.Module)
    }
    # and the models plain objects of the frame hold (``self.encoder`` of an agent that is no module)
    roots.update(
        (k, v)
        for k in site.modules
        if "." in k and isinstance(v := value_of(k, facts.namespace), torch.nn.Module) and k.split(".")[0] not in roots
    )
    by_class: dict[type, list[str]] = {}
    holder: dict[type, str] = {}
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None and facts.backward_line else None
    used = {n for st in body or [] for n in names(st, ast.Load)}
    # the models the loop itself calls first: the reset goes through the name the loop uses
    paths: dict[type, list[tuple[str, list[str]]]] = {}  # each module keeping state: its path from the loop's name
    held = frozenset().union(*site.optimizers.values()) if site.optimizers else frozenset()
    trained_reach = False  # some kept tensor was computed from parameters an optimizer steps
    sequences: dict[str, str] = {}  # attributes holding a tuple or list of tensors (an LSTM's (h, c)): which
    instances: dict[type, torch.nn.Module] = {}
    for name, root in sorted(roots.items(), key=lambda kv: kv[0] not in used):
        for sub, m in root.named_modules():
            # a dict of tensors is a state here when its entries are stored from their own values (a state per
            # layer, NOTE [A state kept per layer in a dict]); a dict of results is a cache (NOTE [A cache of a
            # module's result])
            graphs = [a for a in graph_attrs(m) if not isinstance(getattr(m, a), dict) or updates_entries(type(m), a)]
            if holding is not None:
                graphs = [
                    a for a in graphs if any(holds_node(t, holding) for t in state_tensors_with_graph(getattr(m, a)))
                ]
            if not graphs:
                continue
            trained_reach = trained_reach or any(
                bool(leaves_of(t) & held) for a in graphs for t in state_tensors_with_graph(getattr(m, a))
            )
            sequences.update(_sequences(m, graphs))
            instances.setdefault(type(m), m)
            holder.setdefault(type(m), name)
            listed = by_class.setdefault(type(m), [])
            listed += [a for a in graphs if a not in listed]
            path = module_path(name, sub)
            if path is not None and holder[type(m)] == name:
                paths.setdefault(type(m), []).append((path, graphs))
    kept = [k for cls, found in by_class.items() if (k := kept_state(cls, found)) is not None]
    if not kept:
        return cached_context(base, facts, roots, used)
    # NOTE [A state module called in a loop of its parent]: called at each step of its parent's forward, its state is
    # one input's, over those steps
    looped = {
        k.cls
        for k in kept
        if k.per_step  # NOTE [A state kept per layer in a dict]: its method runs once per step of the forward's loop
        or any(_called_in_parent_loop(roots[holder[k.cls]], sub) for sub in _subs(roots[holder[k.cls]], k.cls))
    }
    attrs = tuple(dict.fromkeys(f"self.{a}" for k in kept for a in k.attrs))
    ctx = from_frame(base, facts, None)
    resets = tuple((k.cls.__name__, k.reset) for k in kept if k.reset is not None)
    holders = {holder[k.cls] for k in kept}
    ok_reset = (
        len(resets) == len(kept)
        and len(holders) == 1
        and all(site.names and c in site.names for c, _ in resets)  # the class's name is visible in the loop
    )
    detach = tuple(at for k in kept for at in k.detach_at) if all(k.detach_at for k in kept) else ()
    stored = tuple(at for k in kept for at in k.stored_at) if all(k.stored_at for k in kept) else ()
    at_boundary = tuple(
        f"{path}.{a}" for k in kept for path, graphs in paths.get(k.cls, []) for a in k.attrs if a in graphs
    )
    # NOTE [A model left in eval mode]: the state is stored by training forwards only, and the loop's model is in
    # eval mode (a validation pass's .eval() with no .train() after it): the forward stored nothing this iteration
    evaluating = [
        name
        for name in sorted(holders)
        if name in used and all(k.training_only for k in kept) and not roots[name].training
    ]
    extra = {**ctx.extra, "train_mode": evaluating[0]} if len(evaluating) == 1 and len(holders) == 1 else ctx.extra
    # NOTE [A state reset before the loop]: the loop's function calls a reset itself, outside the loop that
    # backwards (model.init_hidden() at each epoch): the state is meant to run on across the loop's iterations
    # the class's own reset, unless it is one of every module's methods (a cache dropped by ``train()``: a
    # ``model.train()`` before the loop is no reset of a state meant to run on)
    named = {k.reset for k in kept if k.reset and not hasattr(torch.nn.Module, k.reset)} | _RESET_NAMES
    reset_before = (
        tree is not None and facts.backward_line is not None and _reset_outside_loop(tree, facts.backward_line, named)
    )
    extra = {
        **extra,
        "reset_before": "1" if reset_before else "",
        "sequence_state": " ".join(f"{a}:{k}" for a, k in sorted(sequences.items())),
        "looped": "1" if looped else "",
        "sums": "1" if all(k.sums for k in kept) else "",
    }
    if len(kept) == 1 and len(kept[0].attrs) == 1:  # NOTE [A recurrent layer's state kept on its model]
        found = recurrent_state(kept[0].cls, instances[kept[0].cls], kept[0].attrs[0])
        if found is not None:
            extra = {**extra, "unstated": found[0], "unstated_line": str(found[1]), "unstated_text": found[2]}
            extra = {**extra, "per_sequence": "1" if found[3] else ""}
    return replace(
        ctx,
        extra=extra,
        carried=attrs[0],
        kept_attrs=attrs,
        resets=resets if ok_reset else (),
        reset_root=next(iter(holders)) if ok_reset else None,
        detach_at=detach,
        stored_at=stored,
        stepwise=any(k.stepwise or k.cls in looped for k in kept),
        extra_reset=all(k.none_reset for k in kept) and not ok_reset,
        # a result kept to be reused, computed from trained weights: a cache of the forward (NOTE [State kept on modules])
        cached_result=trained_reach and all(k.memo for k in kept),
        kept_paths=at_boundary if all(k.cls in paths for k in kept) else (),
    )


#: The usual names of a recurrent model's reset (besides its class's own reset method).
_RESET_NAMES = frozenset({"init_hidden", "reset_hidden", "reset_states", "reset_state"})


def _reset_outside_loop(tree: ast.Module, line: int, named: set[str] | frozenset[str]) -> bool:
    """The function holding ``line`` calls a method of ``named`` on a statement of its own that no loop around
    ``line`` holds (NOTE [A state reset before the loop])."""
    fn = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno <= line <= (n.end_lineno or n.lineno)
        ),
        None,
    )
    body = loop_body_of(tree, line)
    if fn is None or body is None:
        return False
    inside = {id(n) for st in body for n in ast.walk(st)}
    return any(
        isinstance(st, ast.Expr) and id(st) not in inside and calls_method(st, tuple(named)) for st in ast.walk(fn)
    )


def _subs(root: torch.nn.Module, cls: type) -> list[str]:
    """The ``named_modules`` names of ``root``'s submodules of class ``cls``."""
    return [sub for sub, m in root.named_modules() if type(m) is cls and sub]


def _called_in_parent_loop(root: torch.nn.Module, sub: str) -> bool:
    """The submodule ``sub`` of ``root`` is called inside a ``for`` or ``while`` loop of a method of its parent's
    class (``for _ in range(k): z = self.leaky(z)``)."""
    parent_path, _, attr = sub.rpartition(".")
    parent = root.get_submodule(parent_path) if parent_path else root
    found = class_tree(type(parent))
    if found is None:
        return False
    for m in methods_of(found[0]):
        for loop in ast.walk(m):
            if isinstance(loop, (ast.For, ast.While)) and any(
                isinstance(n, ast.Call) and self_attr(n.func, attr) for n in ast.walk(loop)
            ):
                return True
    return False


def _reset_edit(ctx: Context) -> Edit | None:
    """``model.apply(lambda m: m.reset() if isinstance(m, Cls) else None)`` after the backward: every module of
    the model, at any depth, reset by its class's method (a lambda: no loop variable left bound to a module)."""
    site = ctx.site
    if site is None or not ctx.resets or ctx.reset_root is None or ctx.backward_line is None:
        return None
    var = next((n for n in ("m", "module", "layer", "sub", "part") if n not in site.names), None)
    if var is None:
        return None
    body = "None"
    for cls, method in reversed(ctx.resets):
        body = f"{var}.{method}() if isinstance({var}, {cls}) else {body}"
    at = _step_after_backward(ctx) or ctx.backward_line
    return insert_lines(ctx, at, f"{ctx.reset_root}.apply(lambda {var}: {body})", after=True)


def _step_after_backward(ctx: Context) -> int | None:
    """The line of the optimizer step that follows the failing backward in its block, when one does: a reset that
    computes the state again from the parameters (an adapter's effective weight) goes after it, so the next forward
    reads the stepped values (NOTE [State kept on modules])."""
    site = ctx.site
    tree = site.tree() if site is not None else None
    back = statement_at(tree, ctx.backward_line) if tree is not None and ctx.backward_line is not None else None
    block = block_of(tree, back) or []
    later = block[block.index(back) + 1 :] if back in block else []
    step = next(
        (st for st in later if isinstance(st, ast.Expr) and calls_method(st, ("step",)) and st.lineno == st.end_lineno),
        None,
    )
    return step.lineno if step is not None else None


def _detach_edits(ctx: Context) -> tuple[Edit, ...]:
    """``self.attr = self.attr.detach()`` before the statement of the forward that first reads it (or, when that
    statement sets the attribute from itself, ``self.cache = self.cache.to(x)``, its read of the old value
    detached: ``self.cache.detach().to(x)``)."""
    sequences = _sequence_state(ctx)
    by_line: dict[tuple[str, int], tuple[Location, list[str]]] = {}
    for loc, attr in ctx.detach_at:
        by_line.setdefault((loc.filename, loc.lineno), (loc, []))[1].append(attr)
    edits: list[Edit | None] = []
    for loc, attrs in by_line.values():
        lines = source_of(loc.filename).splitlines()
        text = lines[loc.lineno - 1] if 0 < loc.lineno <= len(lines) else ""
        indent = text[: len(text) - len(text.lstrip())]
        line = text.strip()
        if not line:
            edits.append(None)
            continue
        try:
            st = ast.parse(line).body[0]
        except (SyntaxError, IndexError):
            st = None
        if len(attrs) == 1 and st is not None and _self_attr_target(st, attrs[0]) and attrs[0] not in sequences:
            # set from itself (self.m = a * self.m + b * x): its old value detached where it is read, so this
            # forward's own term keeps its gradient (the value detached whole would cut it for the reads after)
            new = replace_reads(line, f"self.{attrs[0]}", f"self.{attrs[0]}.detach()") or detached_value(line)
            edits.append(Edit(loc.filename, loc.lineno, loc.lineno, indent + new) if new else None)
            continue
        if st is None and not line.endswith(":"):
            edits.append(None)  # the first line of a statement that goes on: nothing to put before it alone
            continue
        detach = [f"{indent}self.{a} = {detach_expr(f'self.{a}', sequences.get(a))}" for a in attrs]
        edits.append(Edit(loc.filename, loc.lineno, loc.lineno, "\n".join([*detach, text])))
    return tuple(sorted(all_edits(*edits), key=lambda e: e.start))


def _self_attr_target(st: ast.stmt, attr: str) -> bool:
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and self_attr(st.targets[0], attr)


def _stored_edits(ctx: Context) -> tuple[Edit, ...]:
    """Every ``self.attr = value`` of the kept state (outside ``__init__`` and the reset) as ``value.detach()``;
    a store of several (``self.a, self.b = f(x)``) followed by ``self.a, self.b = self.a.detach(), self.b.detach()``
    at its indentation."""
    sequences = _sequence_state(ctx)
    by_line: dict[tuple[str, int], tuple[Location, list[str]]] = {}
    for loc, attr in ctx.stored_at:
        by_line.setdefault((loc.filename, loc.lineno), (loc, []))[1].append(attr)
    edits: list[Edit | None] = []
    for loc, attrs in by_line.values():
        try:
            st = ast.parse(loc.code.strip()).body[0] if loc.code else None
        except (SyntaxError, IndexError):
            st = None
        tuple_target = isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Tuple)
        if not tuple_target and not set(attrs) & {a for a, kind in sequences.items() if kind != "dict"}:
            edits.append(edit_at(ctx, loc, detached_value(loc.code) if loc.code else None))
            continue
        lines = source_of(loc.filename).splitlines()
        text = lines[loc.lineno - 1] if 0 < loc.lineno <= len(lines) else ""
        indent = text[: len(text) - len(text.lstrip())]
        targets = ", ".join(f"self.{a}" for a in attrs)
        values = ", ".join(detach_expr(f"self.{a}", sequences.get(a)) for a in attrs)
        edits.append(Edit(loc.filename, loc.lineno, loc.lineno, f"{text}\n{indent}{targets} = {values}"))
    return tuple(sorted(all_edits(*edits), key=lambda e: (e.filename, e.start)))


def _values_kept(ctx: Context, attrs: Text, summary: Text, edits: tuple[Edit, ...]) -> Proposal:
    """A detach of the kept state that keeps the values each forward stores (where stored, or after the
    backward): the same training, said once."""
    return keeping(
        ctx,
        Fix(
            summary=summary,
            trains=T(
                "at each iteration, {loss} trains through that iteration's graph only; the values each forward "
                "stores in {attrs} are kept, without their graph",
                attrs=attrs,
                loss=ctx.l,
            ),
            edits=edits,
        ),
    )


def _detach_at_boundary(ctx: Context, attrs: Text) -> Proposal | None:
    """``model.recurrent.weight = model.recurrent.weight.detach()`` after the backward, for each module of the
    loop's model that keeps state: the loop's own iteration boundary, whatever the class's code looks like."""
    if not ctx.kept_paths or ctx.site is None or ctx.backward_line is None:
        return None
    sequences = _sequence_state(ctx)
    text = "\n".join(f"{p} = {detach_expr(p, sequences.get(p.rsplit('.', 1)[-1]))}" for p in ctx.kept_paths)
    edit = insert_lines(ctx, ctx.backward_line, text, after=True)
    if edit is None:
        return None
    summary = T("detach the state kept between iterations ({attrs}) after each backward, in the loop", attrs=attrs)
    return _values_kept(ctx, attrs, summary, (edit,))


def _detach_stored(ctx: Context, attrs: Text) -> Proposal | None:
    edits = _stored_edits(ctx) if ctx.stored_at else ()
    if not edits:
        return None
    summary = T("detach the state kept between iterations ({attrs}) where it is stored", attrs=attrs)
    return _values_kept(ctx, attrs, summary, edits)


def _reset_trains(ctx: Context, attrs: Text) -> Text:
    """What a reset of the kept state after each backward trains (the class's reset, or None set back)."""
    return T(
        "each iteration's forward starts {attrs} from the value the reset gives, as the first "
        "iteration did; {loss} trains through that iteration's graph only",
        attrs=attrs,
        loss=ctx.l,
    )


def _none_reset_proposal(ctx: Context, attrs: Text) -> Proposal | None:
    """Each kept attribute set back to None after the backward, through the loop's path to it, when the class starts
    it as None and makes it afresh when it finds None (NOTE [A state module called in a loop of its parent])."""
    if not ctx.extra_reset or not ctx.kept_paths or ctx.backward_line is None:
        return None
    edit = insert_lines(ctx, ctx.backward_line, "\n".join(f"{p} = None" for p in ctx.kept_paths), after=True)
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "reset the state kept between iterations ({attrs}) after each backward: set it back to None, as "
                "__init__ does; the next forward then makes it afresh",
                attrs=attrs,
            ),
            trains=_reset_trains(ctx, attrs),
            edits=(edit,),
            keeps_forward=False,
        ),
    )


def _reset_proposal(ctx: Context, attrs: Text) -> Proposal | None:
    """The class's own reset called on every module of that class after each backward."""
    reset = _reset_edit(ctx)
    if reset is None:
        return _none_reset_proposal(ctx, attrs)
    calls = join([f"{method}()" for _cls, method in ctx.resets], T(" and "))
    classes = join([cls for cls, _method in ctx.resets], T(" and "))
    return keeping(
        ctx,
        Fix(
            summary=T(
                "reset the state kept between iterations ({attrs}) after each optimizer step: call "
                "{calls} on every {classes} of {model}",
                attrs=attrs,
                calls=calls,
                classes=classes,
                model=ctx.reset_root or "",
            )
            if _step_after_backward(ctx) is not None
            else T(
                "reset the state kept between iterations ({attrs}) after each backward: call "
                "{calls} on every {classes} of {model}",
                attrs=attrs,
                calls=calls,
                classes=classes,
                model=ctx.reset_root or "",
            ),
            trains=_reset_trains(ctx, attrs),
            edits=(reset,),
            keeps_forward=False,
        ),
    )


def _detach_where_read(ctx: Context, attrs: Text) -> Proposal | None:
    """The kept state detached where the forward first reads it."""
    detach = _detach_edits(ctx) if ctx.detach_at else ()
    if not detach:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "detach the state kept between iterations ({attrs}) where the forward starts reading it",
                attrs=attrs,
            ),
            trains=T(
                "at each iteration, {loss} trains through that iteration's graph only; {attrs} keep their "
                "values from the previous iteration, without its graph",
                attrs=attrs,
                loss=ctx.l,
            ),
            edits=detach,
        ),
    )


def _restart_sums(ctx: Context, attrs: Text) -> Proposal | None:
    """Each kept sum started from zeros at the top of the forward, where ``__init__`` started it once
    (NOTE [A sum started in __init__])."""
    if not ctx.extra.get("sums") or not ctx.detach_at:
        return None
    edits: list[Edit | None] = []
    for loc, attr in ctx.detach_at:
        lines = source_of(loc.filename).splitlines()
        text = lines[loc.lineno - 1] if 0 < loc.lineno <= len(lines) else ""
        indent = text[: len(text) - len(text.lstrip())]
        start = f"{indent}self.{attr} = self.{attr}.new_zeros(self.{attr}.shape)"
        edits.append(Edit(loc.filename, loc.lineno, loc.lineno, f"{start}\n{text}") if text.strip() else None)
    if None in edits:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "start the sum kept on the module ({attrs}) from zero in each forward: __init__ sets it to zeros "
                "once, and each forward adds its result to every earlier forward's, with their graphs",
                attrs=attrs,
            ),
            trains=T(
                "{loss} trains on each forward's own sum, from zero, through that forward's graph only; no forward "
                "adds the earlier forwards' results any more",
                loss=ctx.l,
            ),
            edits=tuple(sorted(all_edits(*edits), key=lambda e: e.start)),
            keeps_forward=False,
        ),
    )


def _train_mode(ctx: Context, attrs: Text) -> Proposal | None:
    """``model.train()`` at the top of the loop's body, when the state is a result that only training forwards
    store and the model was left in eval mode (NOTE [A model left in eval mode])."""
    model, site, line = ctx.extra.get("train_mode"), ctx.site, ctx.backward_line
    tree = site.tree() if site is not None else None
    body = loop_body_of(tree, line) if tree is not None and line is not None else None
    if not model or not body:
        return None
    edit = insert_lines(ctx, body[0].lineno, f"{model}.train()")
    if edit is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "put {model} back in training mode at the start of each iteration ({model}.train()): in eval mode "
                "(left by an .eval() in the loop, a validation pass) its forward does not store {attrs}, and the "
                "loss reads the values an earlier iteration stored",
                model=model,
                attrs=attrs,
            ),
            trains=T(
                "{loss} trains on each iteration's own forward, with the values this iteration stores, as in the "
                "iterations before the first .eval()",
                loss=ctx.l,
            ),
            edits=(edit,),
            keeps_forward=False,
        ),
    )


def module_state_fixes(ctx: Context) -> list[Proposal]:
    """Reset the kept state after each backward with the class's own method; or detach it where the forward
    starts reading it, or where it is stored; or, with no code for either, the sentence.

    A state stored inside a loop of its method (a neuron's potential over the time steps of one input) is reset
    first; a state stored once per forward (a memory of earlier inputs, a queue across frames) keeps its values:
    detached where it is stored, or where the forward reads it, or else after the backward in the loop, before
    any reset (NOTE [State kept on modules])."""
    attrs = join(list(ctx.kept_attrs), T(" and "))
    train = _train_mode(ctx, attrs)
    if train is not None:
        return [train]
    restart = _restart_sums(ctx, attrs)
    if restart is not None:
        return [restart, *(p for p in (_detach_where_read(ctx, attrs),) if p is not None)]
    cleared = clear_caches(ctx, attrs)
    if cleared is not None:
        return [cleared]
    stored = _detach_stored(ctx, attrs)
    boundary = _detach_at_boundary(ctx, attrs)
    reset = _reset_proposal(ctx, attrs)
    read = _detach_where_read(ctx, attrs)
    unstated = unstated_fix(ctx, attrs)
    if unstated is not None and ctx.extra.get("per_sequence"):
        # one prediction per sequence: each sequence a sample of its own, started from zeros
        order = [unstated, stored, read, reset, boundary]
    elif ctx.extra.get("looped"):
        # called at each step of its parent's loop: a detach where it is read or stored would cut the gradient
        # between the steps of one input (NOTE [A state module called in a loop of its parent])
        order = [reset, boundary]
    elif ctx.extra.get("reset_before") and (stored is not None or read is not None or boundary is not None):
        # reset by the loop's own code before the loop: carried on within it, detached (NOTE [A state reset before
        # the loop])
        order = [stored, read, boundary, reset]
    elif ctx.stepwise or (ctx.cached_result and reset is not None):
        # a state over one input's steps, or a result of trained weights kept for reuse: its class's reset is the
        # boundary its author wrote (a detached cache would stop the weights below it from learning)
        order = [reset, read, stored, boundary]
    elif stored is not None or read is not None:  # a memory: the values kept, detached in the class's own code
        order = [stored, read, reset, boundary]
    else:  # no place in the class's code: the loop's own boundary first
        order = [boundary, reset]
    if unstated is not None and unstated not in order:
        order.append(unstated)
    proposals = [p for p in order if p is not None]
    if read is not None and read in proposals and proposals[0] is not read:
        proposals[proposals.index(read)] = replace(read, fix=replace(read.fix, alternative=True))
    if not proposals:
        proposals.append(
            keeping(
                ctx,
                Fix(
                    summary=T(
                        "reset or detach the state kept between iterations ({attrs}) at the iteration boundary",
                        attrs=attrs,
                    ),
                    trains=T(
                        "at each iteration, {loss} trains through that iteration's graph only; the previous "
                        "iteration's graph is released",
                        loss=ctx.l,
                    ),
                ),
            )
        )
    return proposals


# NOTE [A state module called in a loop of its parent]
# A stateful layer (a leaky integrator keeping its membrane on ``self.mem``) may store its state once per call, but
# be called at each step of its parent's forward (``for _ in range(iters): z = self.leaky(z)``): the state is then
# one input's, over those steps, as a spiking layer's is, and the reset between inputs is the boundary (snnTorch's
# ``utils.reset(net)``). A class without a reset method that starts the state as None in ``__init__`` and makes it
# afresh when it finds None is reset by setting the attribute back to None after the backward, through the loop's
# path to it. It changes the later iterations' forward (keeps_forward False), and says so. Without a reset, the
# detach after the backward, in the loop: a detach where the layer reads or stores its state would run at each of
# the parent's steps and cut the gradient between the steps of one input (a reset the loop already calls that
# zeroes the state in place, buf.zero_(), keeps its graph: the detach after the backward is what it lacks).


# NOTE [A model left in eval mode]
# A detector may compute its losses inside forward, only in training mode (`if self.training: self.cross_entropy
# = ...`), and keep them on the module for the loop to read (`loss = net.loss`). A validation pass calls
# net.eval() and nothing calls net.train() after it: the next forward stores nothing, the loop reads the losses
# an earlier iteration stored, and its backward goes into their freed graph. A detach of the kept losses would
# leave nothing that requires grad; the fix is the mode: net.train() at the top of the loop's body. Told by the
# class's code (every store of the kept attributes sits under `if self.training:`) and by the model's mode at
# the failure (its `training` flag is False while its optimizer steps it).


# NOTE [A module's state read by a second forward]
# A module keeps its output on an attribute that its next forward reads (a recurrent encoder's
# self.state = h), and one function runs it twice: the first forward's loss is backwarded and
# stepped, then a second forward of the same module feeds another loss (a shared encoder under
# a value head, then under a force head). The second forward reads the state the first one
# stored, whose graph the first backward freed: the failure is a second backward through a
# graph of the same iteration, not of the last one, and a recompute of the second forward's
# output (the shared-encoder fix) runs the same read again. When a kept attribute of a module
# the frame's models hold (also one level into a plain object: an agent's self.encoder) holds
# the freed node, the state is the cause, with its fixes: the detach where it is stored comes
# first, and the values carry over as the author meant.

# NOTE [State kept on modules]
# A module may keep a tensor on an attribute from one forward to the next: a spiking neuron's membrane
# potential (self.v, carried over the time steps of one input and meant to be reset between inputs), a
# preallocated key/value cache written in place (self.cache_k[:b, s:e] = k) and read back. Trained, the
# attribute holds the graph of the forward that wrote it, and the next iteration's forward reads it: its
# backward goes into the freed graph. The state is found on the objects, not in the names of the code: every
# module of the frame's models is looked at for public attributes (plain or buffers) holding a tensor with a
# graph (or a tuple or list of tensors, one with a graph: an LSTM's (h, c), detached as
# tuple(t.detach() for t in ...)), and its class (in the user's files) must read the attribute in a method before setting it (an
# attribute only written, an output kept for logging, carries nothing). Two fixes, each checked and run:
# - the class's own reset (a method without arguments that sets every such attribute back without reading
#   it): called on each module of that class after the backward, so each iteration starts where the first
#   one did (a spiking net's reset between samples); it changes the forward of the later iterations
#   (keeps_forward False) and says so;
# - a detach where the forward first reads the attribute, only when the class always sets it to a made
#   tensor (a cache allocated with torch.zeros, a buffer): the values carry over, the graph does not (a
#   cache that the forward writes before it reads the same positions computes what it did).
# - a detach where the class stores the attribute (every one-line `self.attr = value` outside __init__ and
#   the reset whose value is not a constant or a factory call; a store of several, `self.centre, self.spread =
#   stats(x)`, is followed by their detach): the values each forward stores carry over, their graph does not
#   (a queue of the previous frames' features, a memory of earlier batches, statistics fitted on the first
#   batch);
# - a detach after the backward, in the loop, through the loop's path to each module that keeps state
#   (model.recurrent.weight = model.recurrent.weight.detach()): for any class, whatever its code looks like
#   (a store over several lines, a state set to None in __init__); first only when the class's code gives no
#   other detach.
# Which comes first follows how the class stores the state. Stored inside a loop of its method (over the
# time steps of one input: a neuron's potential), it is a state of one input, and its class's reset is the
# boundary its author wrote: the reset first. Stored once per forward, it is a memory of earlier inputs that
# the forward is meant to read (a streaming detector's memory queue, with a reset for a new video the
# training loop never calls): resetting it would change what every later forward computes, so the detach
# where it is stored comes first and the reset second.
# A result kept to be reused (no store reads the attribute: `self.adj = normalize(edges)` set once and returned
# while it is there) and computed from weights an optimizer steps is a cache of the forward, not a memory: a
# detached copy would keep the first iteration's values and the weights below it would learn nothing from the
# later ones, so the class's own reset (release the cache) comes first there too. A reduction of the method's
# own argument (`self.scale = x.abs().amax() / self.qmax`, a fake quantiser calibrated on the first batch) is a
# statistic of the data, a memory like the others: detached where it is stored, first.
# The reset is called after the optimizer's step when one follows the backward in its block: a reset that builds
# the state again from the parameters (an adapter's refresh(): base + up @ down) would otherwise give the next
# forward the weights of before the step.
