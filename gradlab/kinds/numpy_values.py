"""``.numpy()`` of a tensor with a graph (GL0007), located and fixed at the line that raised it: the value kept
in torch where it feeds a loss, detached where it is only read (a plot, a log, a metric). The rewrites of numpy
code into torch are :mod:`gradlab.kinds.numpy_in_torch`'s."""

from __future__ import annotations

import ast
import linecache
from dataclasses import replace

import torch

from ..claims import failure_claims
from ..edits import Edit
from ..evidence import Failure, resolve_name
from ..explanation import Explanation
from ..fixes import Fix, Proposal, source_of
from ..i18n import T, Text
from ..location import Location
from ..source import block_of, function_of, parse, statement_at
from .numpy_in_torch import (
    _BACK_TO_TORCH,
    _graph_tensors,
    _in_torch_fix,
    _numpy_aliases,
    _numpy_in_torch,
    _round_trip_in_torch,
    _sibling_terms,
    _spliced,
    _targets,
    _values_read,
)
from .statement import judged_here, located_here

__all__ = ["numpy_located"]


def _numpy(f: Failure) -> Explanation:
    """``x.numpy()`` (or ``x.cpu().numpy()``) on a tensor with a graph: ``.detach()`` before it.

    The ``.numpy()`` calls are found on the statement's tree; ``.detach()`` goes right
    before each one on the raising line that has none on its receiver (the line may be one
    of a longer statement: a metric's lambda in a dict).
    """
    e = located_here(f, lambda: T("here: .numpy() of a tensor that requires grad"))
    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or loc.filename != site.filename:
        return e
    st = statement_at(tree, loc.lineno)
    text = site.text(loc.lineno)
    nodes = list(ast.walk(st)) if st is not None else []
    ends = sorted(
        {
            n.func.value.end_col_offset
            for n in nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "numpy"
            and n.func.value.end_lineno == loc.lineno
            and n.func.value.end_col_offset is not None
            and "detach()" not in ast.unparse(n.func.value)
        }
    )
    comparisons = _compared_in_helper(f)  # NOTE [A helper that only compares with numpy]
    if comparisons is not None:
        edit, function, calls = comparisons
        fix = Fix(
            summary=T(
                "hand {function}() the values only (.detach() where it is called): it reads them with numpy "
                "comparisons ({calls}), whose results carry no gradient",
                function=function,
                calls=", ".join(calls),
            ),
            trains=T(
                "the same as your code: what {function}() returns carries no gradient either way; every loss trains "
                "what it trained",
                function=function,
            ),
            edits=(edit,),
            claims=failure_claims(f),
        )
        return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *e.fixes))
    drawn = bool(ends) and st is not None and _drawn_from(st, tree)  # NOTE [numpy values that set a random draw]
    if _feeds_a_backward(f) and not _in_module_method(f) and not drawn:  # NOTE [numpy values that feed the loss]
        torch_ops = [fix for fix in e.fixes if not fix.code]
        rest = (*torch_ops, *(fix for fix in e.fixes if fix not in torch_ops))
        trip = _round_trip_in_torch(f, st, tree) if st is not None else None
        single = st if st is not None and st.lineno == st.end_lineno else None
        in_torch = _numpy_in_torch(f, single, site.text(loc.lineno)) if single is not None and trip is None else None
        if in_torch is not None:  # NOTE [numpy inside a forward]: numpy's functions on the graph, in torch
            also = _sibling_terms(f, single, tree) if single is not None else ()
            fix = _in_torch_fix(Location(site.filename, loc.lineno), in_torch, also)
            return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *rest))
        constant = _made_constant(f, st, site.text(loc.lineno)) if st is not None and trip is None else None
        if constant is not None:  # NOTE [numpy's result made a constant on its line]
            fix = _numpy_given_values_fix(
                Location(site.filename, loc.lineno),
                constant,
                T(
                    "hand numpy the values only: .detach() the tensors it is given on this line; its result is "
                    "turned back into a tensor without a graph there anyway"
                ),
            )
            return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *rest))
        handed = _handed_outside_torch(f, single) if single is not None and trip is None else None
        if handed is not None:  # NOTE [numpy's values handed to code outside torch]
            fix = _numpy_given_values_fix(
                Location(site.filename, loc.lineno),
                handed,
                T("take the values out of the graph first: .detach() the tensors numpy is given"),
            )
            return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *rest))
        if trip is None:
            return replace(e, fixes=rest)
        fix = Fix(
            summary=T(
                "compute it with torch, on the graph: drop .numpy() and the conversion back to a tensor, and make "
                "numpy's constant arrays tensors of the same dtype"
            ),
            trains=T(
                "the same values, and the gradient flows through them into what they were computed from "
                "(a .detach() would stop that)"
            ),
            edits=trip,
        )
        return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *rest))
    if not ends:
        one_line = st if st is not None and st.lineno == st.end_lineno else None
        in_torch = _numpy_in_torch(f, one_line, text) if one_line is not None and _in_module_method(f) else None
        implicit = _numpy_arguments(f, one_line, text) if one_line is not None else None
        if in_torch is not None:  # NOTE [numpy inside a forward]
            fix = _in_torch_fix(Location(site.filename, loc.lineno), in_torch)
            return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *e.fixes))
        if implicit is None:
            # the list is found by its identity, the statement may span lines (a print's f-string)
            appended = _appended_detached(f, st) if st is not None else None
            if appended is None:
                return e
            edits, names = appended
            fix = Fix(
                summary=T(
                    "keep numbers, not graphs, in {names}: append each value .detach()ed where the list is filled "
                    "(each appended tensor kept its whole graph alive)",
                    names=", ".join(names),
                ),
                trains=T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
                edits=edits,
            )
            return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *e.fixes))
        fix = Fix(
            summary=T("take the values out of the graph first: .detach() the tensors numpy is given"),
            trains=T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
            edits=(Edit(site.filename, loc.lineno, loc.lineno, implicit),),
        )
        return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *e.fixes))
    for end in reversed(ends):  # col offsets are in bytes of the line's UTF-8
        raw = text.encode("utf-8")
        text = (raw[:end] + b".detach()" + raw[end:]).decode("utf-8")
    others = () if drawn else _losses_logged(f, tree, loc.lineno)  # NOTE [Every loss the loop logs with numpy]
    fix = Fix(
        summary=T(
            "take the values out of the graph first: .detach() before .numpy(), here and at each other .numpy() of "
            "the losses this function backwards (lines {lines})",
            lines=", ".join(str(e.start) for e in others),
        )
        if others
        else T("take the values out of the graph first: .detach() before .numpy()"),
        trains=T(
            "the same as intended: the values only set the odds of a random draw, and a draw carries no gradient; "
            "every loss trains what it trained"
        )
        if drawn
        else T("the same as intended: the numbers leave the graph; every loss trains what it trained"),
        edits=tuple(sorted((Edit(site.filename, loc.lineno, loc.lineno, text), *others), key=lambda x: x.start)),
    )
    return replace(e, fixes=(*judged_here(f, [Proposal(fix, None, True)]), *e.fixes))


# NOTE [Every loss the loop logs with numpy]
# A training function logs each loss and each of its terms with ``.cpu().numpy()`` (a plot per scale, the total for
# the progress line). The first one raises; a fix of that line alone meets the next at once. ``.detach()`` before
# ``.numpy()`` changes no value and no gradient, so it goes before every ``.numpy()`` of the function whose
# receiver is a name that feeds a name the function backwards (a loss, or a term added into one), on one line each.
def _losses_logged(f: Failure, tree: ast.Module, line: int) -> tuple[Edit, ...]:
    """``.detach()`` before each other ``.numpy()`` (not yet detached, one line) of the function holding ``line``
    whose receiver's name feeds a name that function backwards (NOTE [Every loss the loop logs with numpy])."""
    site = f.site
    fn = function_of(tree, line)
    if site is None or fn is None:
        return ()
    backwarded = {
        ast.unparse(n.func.value)
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
    }
    feeding = {b for b in backwarded if b.isidentifier()}
    grown = True
    while grown:  # the names whose values flow into a backwarded name, by assignment
        grown = False
        for st in ast.walk(fn):
            if isinstance(st, (ast.Assign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                if any(isinstance(t, ast.Name) and t.id in feeding for t in targets):
                    new = {n.id for n in ast.walk(st.value) if isinstance(n, ast.Name)} - feeding
                    if new:
                        feeding |= new
                        grown = True
    ends: dict[int, list[int]] = {}
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "numpy"):
            continue
        receiver = n.func.value
        root = receiver
        while isinstance(root, (ast.Call, ast.Attribute)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if (
            n.lineno == line
            or receiver.end_lineno != n.lineno
            or receiver.end_col_offset is None
            or "detach()" in ast.unparse(receiver)
            or not isinstance(root, ast.Name)
            or root.id not in feeding
        ):
            continue
        ends.setdefault(n.lineno, []).append(receiver.end_col_offset)
    edits = []
    for at, cols in sorted(ends.items()):
        raw = site.text(at).encode("utf-8")
        for end in sorted(set(cols), reverse=True):
            raw = raw[:end] + b".detach()" + raw[end:]
        edits.append(Edit(site.filename, at, at, raw.decode("utf-8")))
    return tuple(edits)


# numpy's random draws (np.random.X and a Generator's methods) whose arguments are probabilities, rates or weights
_DRAWS = frozenset(
    {"binomial", "bernoulli", "choice", "multinomial", "poisson", "geometric", "negative_binomial", "dirichlet"}
)


def _drawn_from(st: ast.stmt, tree: ast.Module) -> bool:
    """The names ``st`` binds are read only as the arguments of a random draw (``rng.binomial(1, probs)``), in the
    statements after it in its block (NOTE [numpy values that set a random draw])."""
    bound = {t.id for t in _targets(st) if isinstance(t, ast.Name)}
    block = block_of(tree, st)
    if not bound or block is None:
        return False
    rest = block[block.index(st) + 1 :]
    reads = [n for x in rest for n in ast.walk(x) if isinstance(n, ast.Name) and n.id in bound]
    drawn = {
        id(a)
        for x in rest
        for c in ast.walk(x)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in _DRAWS
        for arg in (*c.args, *(k.value for k in c.keywords))
        for a in ast.walk(arg)
    }
    return bool(reads) and all(id(n) in drawn for n in reads)


# NOTE [numpy values that set a random draw]
# A gate's keep probabilities converted to numpy to draw a hard mask
# (``probs = gate.keep_prob().cpu().numpy()``, then ``rng.binomial(1, probs)``)
# feed the loss only through the sample: a draw has no gradient in any reading,
# so the values are taken out of the graph (.detach() before .numpy()) and
# nothing any loss trains changes. Only names read as the arguments of numpy's
# draws (binomial, choice, multinomial, ...) after the conversion count.


def _numpy_given_values_fix(at: Location, line: str, summary: Text) -> Fix:
    """The raising line ``at`` replaced by ``line``, where numpy is given the tensors' values only: what numpy
    computes is a constant of the loss either way (NOTE [numpy's result made a constant on its line], NOTE
    [numpy's values handed to code outside torch])."""
    return Fix(
        summary=summary,
        trains=T(
            "the same as your code: what numpy computes is a constant of the loss either way; the tensors' "
            "other uses still train what they reach"
        ),
        edits=(Edit(at.filename, at.lineno, at.lineno, line),),
    )


def _feeds_a_backward(f: Failure) -> bool:
    """The value the raising statement computes flows into a backward: read statement after statement of its
    function (each statement that reads a name holding it binds its own targets to it), and through a ``return``
    to the statement of the user frame that called it, until a statement calls ``.backward(`` on it (NOTE [numpy
    values that feed the loss])."""
    frames = [(f.location.filename, f.location.lineno)] if f.location is not None else []
    frames += [(frame.f_code.co_filename, line) for frame, line in f.outer]
    for filename, line in frames:
        tree = parse("".join(linecache.getlines(filename)))
        st = statement_at(tree, line) if tree is not None else None
        if tree is None or st is None:
            return False
        if isinstance(st, ast.Return):
            continue
        if _calls_backward(st):
            return True
        held = {n.id for t in _targets(st) for n in ast.walk(t) if isinstance(n, ast.Name)}
        function = function_of(tree, line)
        later = sorted(
            (
                s
                for s in ast.walk(function if function is not None else tree)
                if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return))
                and s.lineno > (st.end_lineno or st.lineno)
                and function_of(tree, s.lineno) is function
            ),
            key=lambda s: (s.lineno, s.col_offset),
        )
        returned = False
        for s in later:
            if not _values_read(s) & held:
                continue
            if isinstance(s, ast.Return):
                returned = True
                break
            if _calls_backward(s):
                return True
            held |= {n.id for t in _targets(s) for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not returned:
            return False
    return False


def _calls_backward(st: ast.stmt) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(st)
    )


# NOTE [A helper that only compares with numpy]
# A helper of the user's code may take a tensor and read it with numpy comparisons only (np.isclose of a
# coordinate against a wall, np.sign, np.argsort): given a tensor that requires grad (coordinates made to require
# grad for a PDE residual), numpy's implicit conversion raises. What such a helper returns is a mask, a sign or a
# ranking: piecewise constant, no gradient through it in any reading of the code. The fix hands the helper the
# values only, .detach() on the argument where the caller passes it (one edit, whatever the helper does with it
# line after line); every loss trains what it trained. Offered when every read of that parameter in the helper
# sits inside such a numpy call, and the caller's line passes it as one argument.
_NO_GRADIENT = frozenset(
    {
        "isclose", "allclose", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "sign",
        "floor", "ceil", "round", "rint", "argmax", "argmin", "argsort", "nonzero", "isnan", "isinf", "isfinite",
        "searchsorted", "digitize", "unique",
    }
)  # fmt: skip


def _compared_in_helper(f: Failure) -> tuple[Edit, str, list[str]] | None:
    """The caller's argument ``.detach()``ed, when the failing function reads that parameter only in numpy
    comparisons (NOTE [A helper that only compares with numpy]); with the function's name and the calls."""

    site, loc = f.site, f.location
    tree = site.tree() if site is not None else None
    if site is None or loc is None or tree is None or not f.outer:
        return None
    function = function_of(tree, loc.lineno)
    if function is None:
        return None
    params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    graphs = [p for p in params if isinstance(v := f.namespace.get(p), torch.Tensor) and v.requires_grad]
    aliases = _numpy_aliases(f.namespace) | {"np", "numpy"}
    if len(graphs) != 1:
        return None
    param = graphs[0]
    inside: set[int] = set()
    calls: list[str] = []
    for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
        func = call.func
        named = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in aliases
        if named and isinstance(func, ast.Attribute) and func.attr in _NO_GRADIENT:
            inside |= {id(n) for n in ast.walk(call)}
            calls.append(f"{ast.unparse(func)}")
    reads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)]
    if not reads or any(id(n) not in inside for n in reads):
        return None
    frame, line = f.outer[0]
    filename = frame.f_code.co_filename
    caller = parse(source_of(filename))
    st = statement_at(caller, line) if caller is not None else None
    index = params.index(param) - (1 if params and params[0] == "self" else 0)
    found = [
        c
        for c in (ast.walk(st) if st is not None else ())
        if isinstance(c, ast.Call)
        and ast.unparse(c.func).rsplit(".", 1)[-1] == function.name
        and len(c.args) > index
        and c.lineno == c.end_lineno == line
    ]
    if len(found) != 1:
        return None
    arg = found[0].args[index]
    text = linecache.getline(filename, line).rstrip("\n")
    if arg.end_col_offset is None or not text:
        return None
    part = ast.unparse(arg)
    simple = isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    new = text[: arg.col_offset] + (f"{part}.detach()" if simple else f"({part}).detach()") + text[arg.end_col_offset :]
    return Edit(filename, line, line, new), function.name, list(dict.fromkeys(calls))


# NOTE [numpy values that feed the loss]
# A .detach() before numpy is right for a metric, a log line or a plot: the
# numbers leave the graph and nothing trained reads them. When the converted
# values go on into the loss (a scaler's inverse_transform applied to the
# model's output before the criterion), detaching would hand the loss numbers
# with no graph: the loss could not train through them, and it is then given a
# numpy array where it expects a tensor. The value is followed statement by
# statement through the raising function and up through each return to the
# user frame that called it; when a statement calls .backward() on what it
# reads, the first fix is to compute the values with torch ops (a sentence:
# which numpy constants become tensors is the user's call), and no .detach()
# is offered as code. Inside a module's method the exact torch form is written
# instead (NOTE [numpy inside a forward]). Values read only as positions (an
# index, argsort's ranking: a retrieval index searched with a query embedding)
# carry no gradient, numpy or not: the value is not followed through them, and
# .detach() is the fix.


def _in_module_method(f: Failure) -> bool:
    """The raising line runs in a method of an ``nn.Module`` (its ``self``)."""
    return isinstance(f.namespace.get("self"), torch.nn.Module)


def _appended_detached(f: Failure, st: ast.stmt) -> tuple[tuple[Edit, ...], list[str]] | None:
    """Each ``xs.append(value)`` that filled a list of graph tensors a numpy call on ``st`` is given, written
    ``xs.append(value.detach())``: found by the list's identity in the failing frame or the user frames around it
    (NOTE [A list of losses kept for a plot])."""

    aliases = _numpy_aliases(f.namespace)
    lists = []
    for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in aliases:
            for arg in call.args:
                while isinstance(arg, ast.Subscript):  # np.log10(losses[-n:]): a slice of the list
                    arg = arg.value
                value = f.namespace.get(arg.id) if isinstance(arg, ast.Name) else None
                if isinstance(value, list) and _graph_tensors(value):
                    lists.append(value)
    if not lists:
        return None
    frames = [(f.site.filename if f.site else None, f.namespace, f.location.lineno if f.location else 0)]
    frames += [(fr.f_code.co_filename, fr.f_locals, line) for fr, line in f.outer]
    edits: dict[tuple[str, int], Edit] = {}
    names: list[str] = []
    for filename, namespace, line in frames:
        if filename is None:
            continue
        held = [k for k, v in namespace.items() if isinstance(k, str) and any(v is x for x in lists)]
        tree = parse(source_of(filename))
        function = function_of(tree, line) if tree is not None and line else None
        scope: ast.AST | None = function if function is not None else tree
        for name in held:
            for n in ast.walk(scope) if scope is not None else ():
                if not (
                    isinstance(n, ast.Expr)
                    and isinstance(n.value, ast.Call)
                    and isinstance(n.value.func, ast.Attribute)
                    and n.value.func.attr == "append"
                    and ast.unparse(n.value.func.value) == name
                    and len(n.value.args) == 1
                    and n.lineno == n.end_lineno
                ):
                    continue
                arg = n.value.args[0]
                if "detach()" in ast.unparse(arg) or isinstance(arg, ast.Constant):
                    continue
                text = linecache.getline(filename, n.lineno).rstrip("\n")
                simple = isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                if arg.end_col_offset is None or arg.lineno != n.lineno:
                    continue
                raw = text.encode("utf-8")  # col offsets are in bytes of the line's UTF-8
                part = raw[arg.col_offset : arg.end_col_offset].decode("utf-8")
                new = f"{part}.detach()" if simple else f"({part}).detach()"
                rewritten = raw[: arg.col_offset].decode("utf-8") + new + raw[arg.end_col_offset :].decode("utf-8")
                edits[(filename, n.lineno)] = Edit(filename, n.lineno, n.lineno, rewritten)
                names.append(name)
    if not edits:
        return None
    return tuple(edits[k] for k in sorted(edits)), list(dict.fromkeys(names))


# NOTE [A list of losses kept for a plot]
# A training loop appends each batch's loss tensor to a list for a learning curve,
# and numpy (np.mean, np.asarray, matplotlib) later converts the list with
# .numpy(), which refuses tensors that require grad. Each appended tensor also kept
# its whole graph alive until then. The list numpy is given is found by identity
# in the failing frame and the user frames around it (a plot helper receives the
# loop's lists), and every one-line xs.append(value) of that frame's function is
# written xs.append(value.detach()): the values stay, the graphs go, no loss trains
# anything else.


def _made_constant(f: Failure, st: ast.stmt, text: str) -> str | None:
    """The raising line with ``.detach()`` on numpy's tensor arguments, when it is one line and each numpy call
    given a tensor with a graph is the argument of ``torch.tensor``/``as_tensor``/``from_numpy`` (NOTE [numpy's
    result made a constant on its line]); None otherwise."""

    if st.lineno != st.end_lineno:
        return None
    aliases = _numpy_aliases(f.namespace)
    torch_name = next((k for k, v in f.namespace.items() if v is torch), None)
    if not aliases or torch_name is None:
        return None
    wrapped: set[int] = set()
    for n in ast.walk(st):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == torch_name
            and n.func.attr in _BACK_TO_TORCH
            and n.args
        ):
            wrapped.add(id(n.args[0]))
    given = _given_graph_tensors(f, st, aliases)
    if not given or any(id(n) not in wrapped for n in given):
        return None
    return _numpy_arguments(f, st, text)


def _given_graph_tensors(f: Failure, st: ast.stmt, aliases: set[str]) -> list[ast.Call]:
    """The numpy calls of ``st`` (``np.<name>(...)``, numpy under any of ``aliases``) given a name that holds a
    tensor with a graph, or a list of them."""
    return [
        n
        for n in ast.walk(st)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in aliases
        and any(isinstance(a, ast.Name) and _graph_tensors(f.namespace.get(a.id)) for a in n.args)
    ]


def _handed_outside_torch(f: Failure, st: ast.stmt) -> str | None:
    """The raising line with ``.detach()`` on numpy's tensor arguments, when each numpy call given a tensor with a
    graph is the argument of a call into code outside torch (``sim.step(np.array(actions))``, a simulator's method;
    NOTE [numpy's values handed to code outside torch]); None otherwise."""

    aliases = _numpy_aliases(f.namespace)
    if not aliases:
        return None
    outside: set[int] = set()
    for n in ast.walk(st):
        if not isinstance(n, ast.Call) or not n.args:
            continue
        root = n.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in aliases:
            continue  # numpy's own call
        target = resolve_name(n.func, f.namespace)
        owner = getattr(target, "__self__", None)
        module = getattr(type(owner) if owner is not None else target, "__module__", "") or ""
        if target is not None and not module.startswith(("torch", "numpy")) and not isinstance(owner, torch.nn.Module):
            outside.update(id(a) for a in n.args)
    given = _given_graph_tensors(f, st, aliases)
    if not given or any(id(n) not in outside for n in given):
        return None
    return _numpy_arguments(f, st, f.site.text(st.lineno) if f.site is not None else "", lists=True)


# NOTE [numpy's values handed to code outside torch]
# ``reward = sim.step(np.array(actions))``: numpy's result goes into the user's own code (a simulator, an
# environment) that is not torch: what comes back is made of numpy's numbers, a constant of any loss built from it,
# whatever torch does. ``np.array([t.detach() for t in actions])`` computes exactly what the code asks for, and
# the actions' other uses (the critic's input, the actor's loss) keep their gradient.


# NOTE [numpy's result made a constant on its line]
# ``zl = torch.tensor(np.dot(w, z))`` in a helper whose result feeds the loss: numpy refuses ``z`` because it
# requires grad, but what numpy returns is made a tensor without a graph on the same line, so the code as written
# asks for a constant there. ``np.dot(w, z.detach())`` computes exactly that, and ``z``'s other uses in the
# helper keep their gradient. (Detaching at the helper's call, or computing with torch on the graph, train
# otherwise: the first cuts every use, the second makes ``zl`` a path of the gradient.)


def _numpy_arguments(f: Failure, st: ast.stmt, text: str, lists: bool = False) -> str | None:
    """The line with ``.detach()`` on the tensors a numpy function is given (``np.sum([x * y for x, y in
    zip(n, losses)])`` converts each tensor with ``.numpy()`` inside numpy): a name that holds a tensor with a
    graph, or the element of a comprehension over one, or with ``lists``, a name that holds a list of such
    tensors (each item detached); None when there is none to detach."""

    aliases = _numpy_aliases(f.namespace)
    spots: list[tuple[int, int, str]] = []  # (start, end, replacement) in the line's columns
    for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in aliases):
            continue
        for arg in call.args:
            if (
                isinstance(arg, ast.Name)
                and _graph_tensors(f.namespace.get(arg.id))
                and isinstance(f.namespace.get(arg.id), torch.Tensor)
            ):
                spots.append((arg.col_offset, arg.end_col_offset or 0, f"{arg.id}.detach()"))
            elif (
                lists  # a list kept across steps is better fixed where it is filled (NOTE [A list of losses kept
                # for a plot]); one handed to code outside torch, here
                and isinstance(arg, ast.Name)
                and isinstance(f.namespace.get(arg.id), (list, tuple))
                and _graph_tensors(f.namespace.get(arg.id))
                and all(isinstance(v, torch.Tensor) for v in f.namespace[arg.id])
            ):  # a list of tensors: numpy converts each; each item detached
                item = next(n for n in ("t", "item", "x_") if n not in f.namespace)
                spots.append((arg.col_offset, arg.end_col_offset or 0, f"[{item}.detach() for {item} in {arg.id}]"))
            elif isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
                iters = {n.id for g in arg.generators for n in ast.walk(g.iter) if isinstance(n, ast.Name)}
                if any(_graph_tensors(f.namespace.get(name)) for name in iters):
                    elt = arg.elt
                    part = ast.unparse(elt)
                    simple = isinstance(elt, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                    spots.append(
                        (
                            elt.col_offset,
                            elt.end_col_offset or 0,
                            f"{part}.detach()" if simple else f"({part}).detach()",
                        )
                    )
    return _spliced(text, spots)


numpy_located = _numpy
