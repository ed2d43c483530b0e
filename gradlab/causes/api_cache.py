"""torch APIs that cache a tensor, with its graph, across the iterations of a training loop: found, and the
fix torch documents (writers.WRITERS's rows).

NOTE [A cache entered around the loop]
torch.nn.utils.parametrize.cached() computes each parametrized tensor (a weight under
spectral_norm, orthogonal, a user's parametrization) once, at its first use inside the
context, and keeps it, with its graph, until the context exits. Entered around the
whole training loop, the first backward frees that graph and the second iteration's
forward reads the same cached tensor: "backward through the graph a second time" (and
the weight the step changed would not be read again either). torch's documentation
enters it around one forward; the fix enters it at the top of the innermost loop's body
(the loop around the failing backward, the batches' loop inside the epochs'), the rest
of the block one level less indented: the same forward at the first iteration, and at
every later one the parametrization of the weights as they are now.

NOTE [A transform's cache kept across iterations]
A torch.distributions Transform made with ``cache_size=1`` keeps the last (x, y) pair it
computed and, handed the same tensor again, returns the cached partner instead of
computing it. A normalising flow whose transforms have parameters (Pyro's
TransformModule, a user's Transform that is also an nn.Module) and whose log_prob is
called on the same data tensor at every step gets, from the second step on, the x the
first step computed: its graph was freed by the first backward, and it was computed
from the parameters as they were before the step. Found when a Transform reachable
from the frame caches a tensor whose graph holds the freed node. The fix is Pyro's:
clear the cache after each backward (``flow.clear_cache()``, when an object of the frame
has that method and holds those transforms); otherwise the transforms made with
``cache_size=0`` where the code asks for 1. Either computes each step's log_prob from
the parameters as they are then; the first step's forward is unchanged.

NOTE [A memoised function that returns a tensor]
``@functools.lru_cache`` (or ``@functools.cache``) on a function or method that computes a tensor from
parameters (a loss weight ``exp(-log_var[name])``) returns, from the second call on, the tensor of the first
call, with its graph: the first backward frees that graph and the next fails, and the value is the one from
before the step. Found when the node whose saved tensors were freed was made inside such a function of the
user's code. The fix removes the decorator: the tensor is computed at every call, from the parameters as they
are then; the first iteration's forward is unchanged.

A ``functools.cached_property`` is the same memo read as an attribute: its value is kept in the object's
``__dict__`` at the first read. Its decorator becomes ``@property``, so each read computes the tensor again and
every read in the code stays as it is.

NOTE [A weight a forward pre-hook computes]
The deprecated ``torch.nn.utils.weight_norm`` keeps ``weight_g`` and ``weight_v`` as the
parameters and computes the plain tensor ``module.weight`` from them in a forward pre-hook:
only when the module is called. Code that reads ``conv.weight`` itself (a streaming path
calling ``F.conv1d(x, conv.weight)``, a functional or patched forward) reads the tensor the
hook computed at the module's last call, with that call's graph: the first backward frees it
and the next one fails, and the weight is the one from before the step. Found when a module
of the frame has weight_norm's pre-hook and its computed weight holds the freed node. The
fix is the replacement torch documents, ``torch.nn.utils.parametrizations.weight_norm``,
whose weight is computed at every access: the import or the calls rewritten, the same
values at the first iteration. Not offered when the code reads ``weight_g``, ``weight_v``
or calls ``remove_weight_norm`` (the parametrization names them otherwise).
"""

from __future__ import annotations

import ast
import functools
import gc
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch.distributions import ComposeTransform, Transform, TransformedDistribution
from torch.nn.utils import parametrize

from .. import internals
from ..context import Context
from ..edits import Edit
from ..evidence import Facts, holds_node, value_of
from ..fixes import Fix, Proposal, edit_at, indent_of, insert_lines, keeping, source_of
from ..graph import Graph
from ..i18n import T, join
from ..location import Location, _library_file
from ..loop import Site
from ..source import loop_around, loop_body_of, names, parse, statement_at

if TYPE_CHECKING:
    from ..evidence import Problem

__all__ = [
    "memoised_context",
    "memoised_fixes",
    "cached_around_loop",
    "cached_inside_loop",
    "hooked_weights",
    "transform_cache_context",
    "transform_cache_fixes",
    "weight_norm_fixes",
]


def cached_around_loop(facts: Facts) -> tuple[int, int] | None:
    """``with parametrize.cached():`` entered once around the training loop that holds the failing backward
    (NOTE [A cache entered around the loop]): the line of the ``with`` and that of the innermost loop around the
    backward (the loop it holds, or one inside it), or None."""
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    if tree is None or line is None:
        return None
    for n in ast.walk(tree):
        if not (isinstance(n, ast.With) and len(n.items) == 1 and len(n.body) == 1):
            continue
        loop = n.body[0]
        if not isinstance(loop, (ast.For, ast.While)) or not loop.lineno < line <= (loop.end_lineno or 0):
            continue
        header_end = (loop.iter if isinstance(loop, ast.For) else loop.test).end_lineno
        call = n.items[0].context_expr
        if header_end != loop.lineno or n.items[0].optional_vars is not None or not isinstance(call, ast.Call):
            continue
        inner = loop_around(tree, line)
        if not isinstance(inner, (ast.For, ast.While)):
            continue
        if (inner.iter if isinstance(inner, ast.For) else inner.test).end_lineno != inner.lineno:
            continue
        if value_of(ast.unparse(call.func), facts.namespace) is parametrize.cached:
            return n.lineno, inner.lineno
    return None


def cached_inside_loop(ctx: Context) -> Proposal | None:
    """``with parametrize.cached():`` moved to the top of the innermost loop's body it was entered around (NOTE [A
    cache entered around the loop]): the block rewritten, one level less indented."""
    site = ctx.site
    found = ctx.extra.get("cached_with", "")
    tree = site.tree() if site is not None else None
    if site is None or tree is None or not found:
        return None
    at, inner_line = (int(x) for x in found.split(":"))
    block = next((n for n in ast.walk(tree) if isinstance(n, ast.With) and n.lineno == at), None)
    inner = next((n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While)) and n.lineno == inner_line), None)
    if block is None or inner is None or not inner.body or not (site.holds(at) and site.holds(block.end_lineno or at)):
        return None
    end = block.end_lineno or at
    if inner is block.body[0] and site.holds(inner_line):  # one loop: the two headers swapped, nothing re-indented
        edits = (
            Edit(site.filename, at, at, indent_of(site, at) + site.text(inner_line).strip()),
            Edit(site.filename, inner_line, inner_line, indent_of(site, inner_line) + site.text(at).strip()),
        )
        return _cached_fix(ctx, site, at, edits)
    step = len(indent_of(site, block.body[0].lineno)) - len(indent_of(site, at))
    if step <= 0:
        return None
    lines: list[str] = []
    for k in range(at + 1, end + 1):
        text = site.text(k)
        if text.strip() and not text.startswith(" " * step):
            return None  # a line less indented than the block (a string's continuation): not rewritten
        text = text[step:] if text.strip() else text
        if inner.body[0].lineno <= k <= (inner.end_lineno or k):
            text = " " * step + text if text.strip() else text
        lines.append(text)
        if k == inner.lineno:
            lines.append(indent_of(site, inner.body[0].lineno)[step:] + site.text(at).strip())
    return _cached_fix(ctx, site, at, (Edit(site.filename, at, end, "\n".join(lines)),))


def _cached_fix(ctx: Context, site: Site, at: int, edits: tuple[Edit, ...]) -> Proposal:
    return keeping(
        ctx,
        Fix(
            keeps_forward=True,
            summary=T(
                "enter parametrize.cached() at each iteration, inside the loop (at {where}): it keeps the "
                "parametrized weights, with their graph, until the context exits, and the first backward freed it",
                where=Location(site.filename, at).where,
            ),
            trains=T(
                "{loss} trains what it reaches, at each iteration through the weights as they are then: the same "
                "forward at the first iteration",
                loss=ctx.l,
            ),
            edits=edits,
        ),
    )


def _transforms(value: object, depth: int = 0) -> Iterator[Transform]:
    """The torch.distributions transforms ``value`` holds: itself, a module's submodules, a distribution's
    transforms, a composition's parts, the items of a list, tuple or dict (three levels deep)."""
    if depth > 3:
        return
    if isinstance(value, Transform):
        yield value
        if isinstance(value, ComposeTransform):
            for part in value.parts:
                yield from _transforms(part, depth + 1)
    if isinstance(value, torch.nn.Module):
        for m in list(value.modules())[1:256]:
            yield from _transforms(m, depth + 1)
    elif isinstance(value, TransformedDistribution):
        for t in value.transforms:
            yield from _transforms(t, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value[:64]:
            yield from _transforms(v, depth + 1)
    elif isinstance(value, dict):
        for v in list(value.values())[:64]:
            yield from _transforms(v, depth + 1)


def _caching(namespace: Mapping[str, Any], node: Any) -> list[Transform]:
    """The transforms of the frame whose cache (``cache_size=1``) holds a tensor whose graph holds ``node``."""
    found: dict[int, Transform] = {}
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("__"):
            continue
        for t in _transforms(value):
            if any(holds_node(x, node) for x in internals.transform_cache(t)):
                found[id(t)] = t
    return list(found.values())


def transform_cache_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """A transform's cache that kept the freed graph from one iteration to the next (NOTE [A transform's cache kept
    across iterations]): the calls that clear it, or the lines that ask for the cache, in ``extra``."""
    site = facts.site
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if site is None or node is None or node.seq is None:
        return None
    caching = _caching(facts.namespace, node)
    if not caching:
        return None
    tree = site.tree()
    body = loop_body_of(tree, facts.backward_line) if tree is not None and facts.backward_line else None
    used = {n for st in body or [] for n in names(st, ast.Load)}
    ids = {id(t) for t in caching}
    clears = [
        name
        for name, value in sorted(facts.namespace.items(), key=lambda kv: (kv[0] not in used, str(kv[0])))
        if isinstance(name, str)
        and not name.startswith("_")
        and not isinstance(value, (Transform, type))
        and callable(getattr(value, "clear_cache", None))
        and ids <= {id(t) for t in _transforms(value)}
    ]
    asked = _cache_requests(site, caching)
    if not clears and not asked:
        return None
    extra = {**base.extra, "transform_cache": clears[0] if clears else "", "cache_size": ",".join(asked)}
    return replace(base, extra=extra)


def _user_file(cls: type) -> str | None:
    """The file of the user's code that defines ``cls``; None for torch's classes and builtins. A class of code run
    by ``exec`` (its module has no file) is found by its methods' code."""
    try:
        filename: str | None = inspect.getsourcefile(cls)
    except (TypeError, OSError):
        methods = [v for v in vars(cls).values() if inspect.isfunction(v)]
        filename = methods[0].__code__.co_filename if methods else None
    return filename if filename and not _library_file(filename) else None


def _cache_requests(site: Site, caching: list[Transform]) -> list[str]:
    """Where the code asks for the caches that kept the graph: each ``cache_size=1`` of a call that makes one of the
    caching transforms' classes (``AffineTransform(..., cache_size=1)``) or of one inside such a class (its
    ``__init__``'s ``Transform.__init__(self, cache_size=1)``), in the failing file or the classes' files, as the
    keyword's ``file:line`` (a call may span lines)."""
    classes = {c.__name__ for t in caching for c in type(t).__mro__ if c not in (Transform, object)}
    files = {site.filename}
    for t in caching:
        files |= {f for cls in type(t).__mro__ if (f := _user_file(cls)) is not None}
    found: list[str] = []
    for filename in sorted(files):
        tree = site.tree() if filename == site.filename else parse(source_of(filename))
        inside: set[int] = set()  # the calls inside the caching classes' definitions
        for n in ast.walk(tree) if tree is not None else ():
            if isinstance(n, ast.ClassDef) and n.name in classes:
                inside |= {id(m) for m in ast.walk(n)}
        for n in ast.walk(tree) if tree is not None else ():
            if not isinstance(n, ast.Call) or not (
                id(n) in inside or ast.unparse(n.func).rsplit(".", 1)[-1] in classes
            ):
                continue
            for k in n.keywords:
                if k.arg == "cache_size" and isinstance(k.value, ast.Constant) and k.value.value == 1:
                    found.append(f"{filename}:{k.value.lineno}")
    return sorted(set(found))


def transform_cache_fixes(ctx: Context) -> list[Proposal]:
    """The cache cleared after each backward, or not asked for (NOTE [A transform's cache kept across
    iterations])."""
    found: list[Proposal] = []
    clear = ctx.extra.get("transform_cache", "")
    trains = T(
        "{loss} trains what it reaches, at each iteration through the transforms' parameters as they are then: the "
        "same forward at the first iteration",
        loss=ctx.l,
    )
    edit = insert_lines(ctx, ctx.backward_line, f"{clear}.clear_cache()", after=True) if clear else None
    if edit is not None:
        found.append(
            keeping(
                ctx,
                Fix(
                    keeps_forward=True,
                    summary=T(
                        "call {call} right after the backward of {loss}: the transforms cache their last (x, y) "
                        "pair (cache_size=1), and the next iteration reads the cached tensor, whose graph this "
                        "backward freed, instead of computing it",
                        call=f"{clear}.clear_cache()",
                        loss=ctx.l,
                    ),
                    trains=trains,
                    edits=(edit,),
                ),
            )
        )
    edits: list[Edit] = []
    for item in (x for x in ctx.extra.get("cache_size", "").split(",") if x):
        filename, _, line = item.rpartition(":")
        text = source_of(filename).splitlines()[int(line) - 1]
        if text.count("cache_size=1") != 1:
            return found
        # the whole statement (a call may span lines), only the keyword's line changed
        tree = parse(source_of(filename))
        st = statement_at(tree, int(line)) if tree is not None else None
        if st is None:
            return found
        lines = source_of(filename).splitlines()[st.lineno - 1 : st.end_lineno or st.lineno]
        lines[int(line) - st.lineno] = text.replace("cache_size=1", "cache_size=0")
        edits.append(Edit(filename, st.lineno, st.end_lineno or st.lineno, "\n".join(lines)))
    if edits:
        found.append(
            keeping(
                ctx,
                Fix(
                    keeps_forward=True,
                    summary=T(
                        "make the transforms with cache_size=0 ({where}): with cache_size=1 they keep their last "
                        "(x, y) pair, and the next iteration reads the cached tensor, whose graph the backward "
                        "freed, instead of computing it",
                        where=join([Location(e.filename, e.start).where for e in edits]),
                    ),
                    trains=trains,
                    edits=tuple(edits),
                ),
            )
        )
    return found


def _weight_norm_hook(m: torch.nn.Module) -> Any | None:
    """The deprecated weight_norm's pre-hook on ``m`` (it has ``name`` and ``dim``), or None."""
    for hook in internals.forward_pre_hooks(m):
        cls = type(hook)
        if cls.__name__ == "WeightNorm" and cls.__module__ == "torch.nn.utils.weight_norm":
            return hook
    return None


def hooked_weights(facts: Facts, graph: Graph, p: Problem) -> list[str]:
    """The files that apply the deprecated weight_norm to a module whose computed weight holds the freed node (NOTE
    [A weight a forward pre-hook computes]): the failing file, and those of the modules' classes."""
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if node is None or node.seq is None:
        return []
    files: set[str] = set()
    seen: set[int] = set()
    hooked = False
    for value in list(facts.namespace.values()):
        if not isinstance(value, torch.nn.Module) or id(value) in seen:
            continue
        for owner in list(value.modules())[:512]:
            seen.add(id(owner))
            for m in list(owner.children())[:64] if owner is not value else [value, *list(value.children())[:64]]:
                hook = _weight_norm_hook(m)
                weight = getattr(m, hook.name, None) if hook is not None else None
                if weight is None or not holds_node(weight, node):
                    continue
                if any(v is weight for v in facts.namespace.values()):
                    return []  # the weight bound to a name before the loop: the parametrization would not help
                hooked = True
                files |= {f for cls in (type(owner), type(value)) if (f := _user_file(cls)) is not None}
    if not hooked:
        return []
    if facts.site is not None:  # a module made in the script itself (conv = weight_norm(nn.Conv1d(...)))
        files.add(facts.site.filename)
    return sorted(files)


_PARAMETRIZED = "torch.nn.utils.parametrizations"


def weight_norm_fixes(ctx: Context) -> list[Proposal]:
    """The deprecated weight_norm replaced by the parametrization torch documents (NOTE [A weight a forward pre-hook
    computes]): ``from torch.nn.utils import weight_norm`` and ``nn.utils.weight_norm(`` calls rewritten."""
    files = [f for f in ctx.extra.get("weight_norm", "").split(",") if f]
    edits: list[Edit] = []
    for filename in files:
        source = source_of(filename)
        tree = parse(source)
        if tree is None:
            return []
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        used |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        if used & {"weight_g", "weight_v", "remove_weight_norm"}:  # the parametrization names them otherwise
            return []
        for k, text in enumerate(source.splitlines(), start=1):
            new = text
            stripped = text.strip()
            if stripped.startswith("from torch.nn.utils import weight_norm") and "," not in stripped:
                new = text.replace("from torch.nn.utils import", f"from {_PARAMETRIZED} import", 1)
            elif "utils.weight_norm(" in text and not stripped.startswith(("#", "def ", "import ")):
                new = text.replace("torch.nn.utils.weight_norm(", f"{_PARAMETRIZED}.weight_norm(")
                new = new.replace("nn.utils.weight_norm(", "nn.utils.parametrizations.weight_norm(")
            if new != text:
                e = edit_at(ctx, Location(filename, k), new)
                if e is None:
                    return []
                edits.append(e)
    if not edits:
        return []
    fix = Fix(
        keeps_forward=True,
        summary=T(
            "use torch.nn.utils.parametrizations.weight_norm in place of the deprecated torch.nn.utils.weight_norm "
            "({where}): the old one computes the weight in a forward pre-hook, only when the module is called, so "
            "code that reads the weight itself gets the last call's, whose graph the backward freed",
            where=join([Location(e.filename, e.start).where for e in edits]),
        ),
        trains=T(
            "{loss} trains what it reaches, through the weight as it is at each access: the same values at the first "
            "iteration",
            loss=ctx.l,
        ),
        edits=tuple(edits),
    )
    return [keeping(ctx, fix)]


_MEMOISERS = frozenset({"lru_cache", "cache", "cached_property"})


def _memo_values(wrapper: Any) -> list[Any]:
    """The values a ``functools.lru_cache`` wrapper keeps: its cache dict is among its garbage-collector referents
    (CPython's C implementation has no public reader); [] when none is found."""
    try:
        return [v for r in gc.get_referents(wrapper) if isinstance(r, dict) for v in r.values()]
    except Exception:  # NOTE [Hooks fail open]: an interpreter without gc referents
        return []


def _memoised_holding(facts: Facts, node: Any) -> Location | None:
    """Where the memoised function of the frame (a global, or a method of an object's class) whose cache holds a
    tensor whose graph holds ``node`` is defined (its first line: a decorator's), or None."""
    wrappers: dict[int, Any] = {}
    for value in list(facts.namespace.values()):
        for candidate in (value, *vars(type(value)).values()):
            if isinstance(candidate, functools._lru_cache_wrapper):
                wrappers[id(candidate)] = candidate
    for wrapper in wrappers.values():
        if any(holds_node(v, node) for v in _memo_values(wrapper)):
            code = getattr(getattr(wrapper, "__wrapped__", None), "__code__", None)
            if code is not None and not _library_file(code.co_filename):
                return Location(code.co_filename, code.co_firstlineno)
    for value in list(facts.namespace.values()):  # a cached_property keeps its value in the object's __dict__
        found = getattr(value, "__dict__", None) if not isinstance(value, type) else None
        kept: dict[str, Any] = found if isinstance(found, dict) else {}
        for name, prop in vars(type(value)).items() if kept else ():
            if isinstance(prop, functools.cached_property) and name in kept and holds_node(kept[name], node):
                code = getattr(prop.func, "__code__", None)
                if code is not None and not _library_file(code.co_filename):
                    return Location(code.co_filename, code.co_firstlineno)
    return None


def memoised_context(base: Context, p: Problem, facts: Facts, graph: Graph) -> Context | None:
    """The freed node was made inside a function of the user's code decorated with ``functools.lru_cache`` or
    ``functools.cache`` (NOTE [A memoised function that returns a tensor]): the decorator's line in ``extra``. Read
    from the record (where the node was made) or, without one, from the caches of the frame's memoised functions."""
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    held = _memoised_holding(facts, node) if node is not None and node.seq is not None else None
    for loc in (p.saved_at, held):
        found = _memoised_at(loc) if loc is not None and not _library_file(loc.filename) else None
        if found is not None:
            where, function = found
            return replace(base, extra={**base.extra, "memoised": where, "memoised_function": function})
    return None


def _memoised_at(loc: Location) -> tuple[str, str] | None:
    """The memoising decorator (``file:line``) of the innermost function around ``loc`` (its decorators counted
    in), with the function's name; None without one."""
    tree = parse(source_of(loc.filename))
    scope = None
    for n in ast.walk(tree) if tree is not None else ():
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([n.lineno, *(d.lineno for d in n.decorator_list)])
            if first <= loc.lineno <= (n.end_lineno or n.lineno) and (scope is None or n.lineno > scope.lineno):
                scope = n  # the innermost function around the line
    if scope is None:
        return None
    for dec in scope.decorator_list:
        called = dec.func if isinstance(dec, ast.Call) else dec
        if ast.unparse(called).rsplit(".", 1)[-1] in _MEMOISERS and dec.lineno == dec.end_lineno:
            return f"{loc.filename}:{dec.lineno}", scope.name
    return None


def memoised_fixes(ctx: Context) -> list[Proposal]:
    """The memoising decorator removed (NOTE [A memoised function that returns a tensor])."""
    where = ctx.extra.get("memoised", "")
    if not where:
        return []
    filename, _, line = where.rpartition(":")
    lineno = int(line)
    text = source_of(filename).splitlines()[lineno - 1]
    decorator = text.strip()
    function = ctx.extra.get("memoised_function", "")
    at = Location(filename, lineno).where
    if decorator.rsplit(".", 1)[-1] == "cached_property":  # read as an attribute: a plain property, computed each time
        edit = Edit(filename, lineno, lineno, text[: len(text) - len(text.lstrip())] + "@property")
        summary = T(
            "make {function} a plain @property at {where}, not {decorator}: from its second read on it is the tensor "
            "of its first read, whose graph the first backward freed, computed from the parameters as they were then",
            decorator=decorator,
            function=function,
            where=at,
        )
        trains = T(
            "{loss} trains what it reaches, at each read through {function} computed from the parameters as they "
            "are then: the same forward at the first iteration",
            loss=ctx.l,
            function=function,
        )
    else:
        edit = Edit(filename, lineno, lineno, "")
        summary = T(
            "remove {decorator} from {function}() at {where}: from its second call on it returns the tensor of its "
            "first call, whose graph the first backward freed, computed from the parameters as they were then",
            decorator=decorator,
            function=function,
            where=at,
        )
        trains = T(
            "{loss} trains what it reaches, at each call through {function}()'s result computed from the parameters "
            "as they are then: the same forward at the first iteration",
            loss=ctx.l,
            function=function,
        )
    return [keeping(ctx, Fix(keeps_forward=True, summary=summary, trains=trains, edits=(edit,)))]
