"""Cause ``stale_forward``, in a constructor: a module's ``__init__`` computes a tensor from parameters once
(``self.scale = self.log_scale.exp()``, ``self.width = torch.exp(nn.Parameter(...))``) and every forward reads it:
the first backward frees that graph and the second fails; its fix (NOTE [A tensor built once in a constructor]).
"""

from __future__ import annotations

import ast
import builtins
import re
import types
from dataclasses import dataclass, replace

import torch

from ..context import Context
from ..edits import Edit
from ..evidence import Facts, Problem, sequence_of
from ..fixes import Fix, Proposal, keeping, source_of
from ..graph import Graph, walk
from ..i18n import T, join
from ..location import Location
from ..source import parse
from .class_source import class_tree, methods_of, self_attr
from .kept_state import graph_attrs, tensors_with_graph

__all__ = ["built_once_context", "built_once_fixes"]

#: Calls that draw random numbers: a value computed with them is not the same at each access.
_RANDOM = frozenset(
    {"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "dropout", "rand_like", "randn_like"}
)

#: The parameter's name for the function that wraps it (``exp(p)`` is a width: ``p`` is its log).
_PREFIX = {"exp": "log_", "softplus": "raw_", "sigmoid": "logit_", "tanh": "raw_", "abs": "raw_"}


@dataclass(frozen=True)
class _Built:
    """One attribute a class computes once in ``__init__``: the statement's span, the registration that replaces
    it (or nothing), the expression its property returns, and the line after ``__init__``."""

    cls: str
    attr: str
    filename: str
    start: int
    end: int
    indent: str  # the indentation of the class's methods
    register: str | None  # ``self.log_width = nn.Parameter(...)``
    keep: str | None  # ``self.eigvecs = eigvecs``: values of __init__'s own the property reads
    value: str  # the property's expression
    after_init: int  # the last line of ``__init__``
    reads: tuple[tuple[int, str], ...] = ()  # NOTE [A parameter keeps its name]: each read line, rewritten


def _parameter_call(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name == "Parameter"


def _wrapper(value: ast.expr, call: ast.Call) -> str | None:
    """The name of the function whose argument ``call`` is (``torch.exp`` of ``nn.Parameter(...)``: ``exp``)."""
    for n in ast.walk(value):
        if isinstance(n, ast.Call) and any(a is call for a in n.args):
            f = n.func
            return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return None


class _Renamed(ast.NodeTransformer):
    """Each read of a name of ``kept`` becomes a read of ``self.<name>``."""

    def __init__(self, kept: set[str]) -> None:
        self.kept = kept

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.kept and isinstance(node.ctx, ast.Load):
            return ast.Attribute(ast.Name("self", ast.Load()), node.id, ast.Load())
        return node


class _Aliased(ast.NodeTransformer):
    """Each read of an argument ``__init__`` keeps on self becomes a read of that attribute (``prior_net`` ->
    ``self.prior_net``)."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            return ast.Attribute(ast.Name("self", ast.Load()), self.aliases[node.id], ast.Load())
        return node


# NOTE [A value built from an argument kept on self]
# A trainer's __init__ keeps its models (self.encoder, self.prior_net = encoder, prior_net) and builds a value from
# one of them once (self.prior = prior_net.distribution()): the value reads an argument of __init__, but the same
# object is on self under a name of its own. The property reads it there (self.prior_net.distribution()), so nothing
# new is kept. Only for an argument __init__ never binds again, stored on self by one top-level statement (a plain
# or a tuple assignment).
def _stored_on_self(init: ast.FunctionDef) -> dict[str, str]:
    """The arguments of ``__init__`` it stores on self unchanged, each with the attribute (``self.net = net``,
    ``self.a, self.b = a, b``), when it never binds them again."""
    args = {a.arg for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]} - {"self"}
    rebound = {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    found: dict[str, str] = {}
    for st in init.body:
        if not isinstance(st, ast.Assign) or len(st.targets) != 1:
            continue
        target, value = st.targets[0], st.value
        pairs = (
            list(zip(target.elts, value.elts))
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts)
            else [(target, value)]
        )
        for t, v in pairs:
            if (
                isinstance(v, ast.Name)
                and v.id in args - rebound
                and isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            ):
                found.setdefault(v.id, t.attr)
    return found


def _bound_after(init: ast.FunctionDef, name: str, line: int) -> bool:
    """``__init__`` binds ``name`` again below ``line`` (the value the statement read is not the last one)."""
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) and n.lineno > line
        for n in ast.walk(init)
    )


def _locals(init: ast.FunctionDef) -> set[str]:
    args = init.args
    found = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    found |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return found | {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _built(cls: type, attr: str) -> _Built | None:
    """``cls`` sets ``self.attr`` once, in ``__init__``, from a value that reads nothing of ``__init__``'s own
    (outside an ``nn.Parameter(...)`` it registers instead), and another method reads it."""
    found = class_tree(cls)
    if found is None:
        return None
    node, filename = found
    methods = methods_of(node)
    init = next((m for m in methods if m.name == "__init__"), None)
    if init is None or any(isinstance(p, ast.Name) and p.id == "property" for m in methods for p in m.decorator_list):
        return None
    stores = [
        (m, st)
        for m in methods
        for st in ast.walk(m)
        if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and any(
            self_attr(t, attr)  # a store of several counts (lstm_out, self.hidden = ...)
            for target in (st.targets if isinstance(st, ast.Assign) else [st.target])
            for t in ast.walk(target)
        )
    ]
    if len(stores) != 1 or stores[0][0] is not init or not isinstance(stores[0][1], ast.Assign):
        return None
    st = stores[0][1]
    if len(st.targets) != 1 or st not in init.body:
        return None  # a tuple target, or a store inside a branch of __init__
    read = any(self_attr(n, attr) for m in methods if m is not init for n in ast.walk(m))
    if not read:
        return None
    calls = [n for n in ast.walk(st.value) if _parameter_call(n)]
    if len(calls) > 1:
        return None
    register = None
    value: ast.expr = st.value
    taken = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    if calls:
        call = calls[0]
        assert isinstance(call, ast.Call)
        name = f"{_PREFIX.get(_wrapper(st.value, call) or '', '')}{attr}"
        name = name if name != attr else f"{attr}_param"
        if name in taken:
            return None
        register = f"self.{name} = {ast.unparse(call)}"
        text = ast.unparse(st.value).replace(ast.unparse(call), f"self.{name}", 1)
        value = ast.parse(text, mode="eval").body
    if any(isinstance(n, ast.Call) and ast.unparse(n.func).rsplit(".", 1)[-1] in _RANDOM for n in ast.walk(value)):
        return None  # a property would draw anew at each access
    own = _locals(init) - {"self"}
    read_names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    # never the attribute itself (self.log_probs = log_probs stores the argument; a property of it would recurse)
    aliased = {k: a for k, a in _stored_on_self(init).items() if k in read_names & own and a != attr}
    if aliased and not isinstance(
        st.value, ast.Name
    ):  # NOTE [A value built from an argument kept on self]: prior_net.distribution() -> self.prior_net...
        text = ast.unparse(_Aliased(aliased).visit(ast.parse(ast.unparse(value), mode="eval")).body)
        value = ast.parse(text, mode="eval").body
        read_names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    kept = sorted(read_names & own)  # values of __init__'s own (an argument, a local): kept on self for the property
    if any(k in taken or _bound_after(init, k, st.lineno) for k in kept):
        return None  # the attribute's name is taken, or __init__ binds the value again after the statement
    called = {
        n.func.id if isinstance(n.func, ast.Name) else ast.unparse(n.func.value)
        for n in ast.walk(value)
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
    }
    if set(kept) & called:
        return None  # a model or a function passed in (encoder(anchors)): kept on self, a module would register it
    if read_names - {"self"} - own - set(dir(builtins)) - _module_names(filename):
        return None
    if "self" not in read_names and not calls and not kept:
        return None  # it reads nothing of the module's
    keep = None
    if kept:
        text = ast.unparse(_Renamed(set(kept)).visit(ast.parse(ast.unparse(value), mode="eval")).body)
        value = ast.parse(text, mode="eval").body
        keep = "\n".join(f"self.{k} = {k}" for k in kept)
    indent = " " * init.col_offset
    reads: tuple[tuple[int, str], ...] = ()
    if calls and not keep and register == f"self.{attr}_param = {ast.unparse(call)}":  # no conventional name
        reads = _applied_where_read(node, init, filename, attr, ast.unparse(st.value), ast.unparse(call))
    if reads:  # NOTE [A parameter keeps its name]
        register = f"self.{attr} = {ast.unparse(call)}"
        value = ast.parse(ast.unparse(st.value).replace(ast.unparse(call), f"self.{attr}", 1), mode="eval").body
    return _Built(
        cls.__name__,
        attr,
        filename,
        st.lineno,
        st.end_lineno or st.lineno,
        indent,
        register,
        keep,
        ast.unparse(value),
        init.end_lineno or init.lineno,
        reads,
    )


# NOTE [A parameter keeps its name]
# self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07)).exp() (CLIP's temperature, with the exp
# taken once): the user named the parameter logit_scale, and a checkpoint of the model the code follows has it
# under that name. When every read of the attribute is in the class's own methods, the fix registers the
# parameter under the user's name and applies the function where it is read (self.logit_scale.exp() in forward):
# the same values, a graph per use, and the state_dict key the user wrote. Only where the function has no
# conventional inverse name: torch.exp(nn.Parameter(...)) stored as self.width registers log_width, the name such
# code gives it, and a property keeps every read; only the invented name (width_param) gives way to the user's.
# When the attribute is read elsewhere in the file (matcher.logit_scale in a log line), those reads would see the
# raw parameter: a property keeps them.
_READ = r"self\.{attr}\b(?!\s*\()"


def _applied_where_read(
    node: ast.ClassDef, init: ast.FunctionDef, filename: str, attr: str, value: str, call: str
) -> tuple[tuple[int, str], ...]:
    """Each line of the class's other methods that reads ``self.<attr>``, with the read replaced by ``value``
    applied to the registered parameter; empty when the attribute is read outside the class (NOTE [A parameter
    keeps its name])."""
    tree = parse(source_of(filename))
    if tree is None:
        return ()
    first, last = node.lineno, node.end_lineno or node.lineno
    if any(isinstance(n, ast.Attribute) and n.attr == attr and not first <= n.lineno <= last for n in ast.walk(tree)):
        return ()
    applied = value.replace(call, f"self.{attr}", 1)
    parsed = ast.parse(applied, mode="eval").body
    if not isinstance(parsed, (ast.Call, ast.Attribute, ast.Subscript, ast.Name)):
        applied = f"({applied})"
    lines = source_of(filename).splitlines()
    rows = sorted(
        {
            n.lineno
            for m in methods_of(node)
            if m is not init
            for n in ast.walk(m)
            if isinstance(n, ast.Attribute) and self_attr(n, attr) and n.lineno == (n.end_lineno or n.lineno)
        }
    )
    out = []
    for row in rows:
        text, count = re.subn(_READ.format(attr=re.escape(attr)), lambda _m: applied, lines[row - 1])
        if count == 0:
            return ()
        out.append((row, text))
    return tuple(out)


def _module_names(filename: str) -> set[str]:
    """The names the module of ``filename`` binds at its top level (imports, classes, functions, globals)."""
    tree = parse(source_of(filename))
    if tree is None:
        return set()
    found: set[str] = set()
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in st.names}
        elif isinstance(st, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            found.add(st.name)
        else:
            found |= {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return found


def _holders(facts: Facts) -> list[object]:
    """The frame's modules and everything they hold, and the frame's objects of classes of the user's code (an
    agent that keeps its networks, optimizers and temperature on attributes), each once."""
    found: dict[int, object] = {}
    for k, v in facts.namespace.items():
        if not isinstance(k, str):
            continue
        if isinstance(v, torch.nn.Module):
            found.update((id(m), m) for _sub, m in v.named_modules())
        elif _plain_graph_attrs(v) or _distributions_with_graph(v):
            found[id(v)] = v
            found.update((id(m), m) for a in vars(v).values() if isinstance(a, torch.nn.Module) for m in a.modules())
    return list(found.values())


def _plain_graph_attrs(obj: object) -> list[str]:
    """The public attributes of an object of a user's class (no module, no tensor) that hold a tensor with a graph."""
    if (
        isinstance(obj, (torch.Tensor, type))
        or type(obj).__module__ in ("builtins", "torch")
        or not hasattr(obj, "__dict__")
    ):
        return []
    return [
        k
        for k, v in vars(obj).items()
        if not k.startswith("_") and isinstance(v, torch.Tensor) and v.grad_fn is not None
    ]


def _distributions_with_graph(obj: object) -> bool:
    """An object of a user's class keeps a torch.distributions object built from tensors with a graph (a trainer's
    prior: ``self.prior = prior_net.distribution()``)."""
    if isinstance(obj, (torch.Tensor, type, types.ModuleType)) or type(obj).__module__ in ("builtins", "torch"):
        return False
    return any(
        isinstance(v, torch.distributions.Distribution)
        and any(isinstance(t, torch.Tensor) and t.grad_fn is not None for t in vars(v).values())
        for k, v in getattr(obj, "__dict__", {}).items()
        if isinstance(k, str) and not k.startswith("_")
    )


def _graph_tensors(m: object) -> list[tuple[str, torch.Tensor]]:
    """The attributes of ``m`` that hold a graph, each with a tensor of it: a tensor with a grad_fn, or a
    torch.distributions object built from one (``Categorical(logits=self.prior_logits)``: its ``logits``)."""
    attrs = graph_attrs(m) if isinstance(m, torch.nn.Module) else _plain_graph_attrs(m)
    found = [(a, t) for a in attrs for t in tensors_with_graph(getattr(m, a))]
    for a, v in vars(m).items() if hasattr(m, "__dict__") and not isinstance(m, type) else ():
        if not a.startswith("_") and isinstance(v, torch.distributions.Distribution):
            found += [(a, t) for t in vars(v).values() if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    return found


def built_once_context(base: Context, p: Problem | None, facts: Facts, graph: Graph) -> Context | None:
    """A module of the frame's models keeps, on an attribute its ``__init__`` alone sets, a tensor whose graph holds
    the node of the freed saved tensor ``p`` (NOTE [A tensor built once in a constructor])."""
    if p is None or p.node_id is None:
        return None
    node = next((n for n in graph.nodes if n.id == p.node_id), None)
    if node is None or node.seq is None:
        return None
    wanted = (node.seq, node.name)
    site = facts.site
    held = frozenset().union(*site.optimizers.values()) if site is not None and site.optimizers else frozenset()
    built: list[_Built] = []
    for m in _holders(facts):
        for attr, t in _graph_tensors(m):
            below = walk([t.grad_fn])
            if not any((sequence_of(f), f.name()) == wanted for f in below):
                continue
            filled = _filled(type(m), attr)
            if filled is not None:  # NOTE [A buffer allocated once and filled by index]
                return replace(base, built_once=filled)
            found = _built(type(m), attr)
            leaves = {id(v) for f in below if (v := getattr(f, "variable", None)) is not None}
            if found is not None and found.register is None and not leaves & held:
                return None  # computed from parameters no optimizer holds: a constant (a detach fixes it)
            if found is None:
                return None  # the freed part is kept on a module some other way: not this cause
            if all((b.cls, b.attr) != (found.cls, found.attr) for b in built):
                built.append(found)
    if not built or len(built) > 1:
        return None
    return replace(base, built_once=built[0])


@dataclass(frozen=True)
class _Filled:
    """A buffer ``__init__`` allocates and one method fills by index: where that method's body starts."""

    cls: str
    attr: str
    filename: str
    method: str
    first: int  # the method's first statement (after its docstring)
    indent: str


# NOTE [A buffer allocated once and filled by index]
# A trainer preallocates a workspace in its constructor (self.profile = torch.zeros(batch, zones)) and its rollout
# writes each zone's output into it by index (self.profile[:, z] = temp), then returns it to the loss. Each write
# records a CopySlices node on top of the buffer's history, so the second rollout's graph reaches into the first
# one's, which the first backward freed. Detaching the buffer where the method starts (self.profile =
# self.profile.detach()) keeps its values and cuts the history: each call's graph holds that call's writes only,
# what allocating it afresh in the method would give when the rollout writes every entry it reads. Offered when
# __init__ sets the attribute once, one other method writes it by index, and no method rebinds it.
def _filled(cls: type, attr: str) -> _Filled | None:
    """``cls`` allocates ``self.attr`` in ``__init__`` and one other method writes it by index (NOTE [A buffer
    allocated once and filled by index]); None otherwise."""
    found = class_tree(cls)
    if found is None:
        return None
    node, filename = found
    methods = methods_of(node)
    rebound = [
        m
        for m in methods
        for st in ast.walk(m)
        if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and any(self_attr(t, attr) for t in (st.targets if isinstance(st, ast.Assign) else [st.target]))
    ]
    filling = {
        m.name: m
        for m in methods
        for st in ast.walk(m)
        if isinstance(st, ast.Assign)
        and any(isinstance(t, ast.Subscript) and self_attr(t.value, attr) for t in st.targets)
    }
    if [m.name for m in rebound] != ["__init__"] or len(filling) != 1 or "__init__" in filling:
        return None
    method = next(iter(filling.values()))
    body = method.body[1:] if ast.get_docstring(method) is not None else method.body
    if not body:
        return None
    text = source_of(filename).splitlines()[body[0].lineno - 1]
    return _Filled(cls.__name__, attr, filename, method.name, body[0].lineno, text[: len(text) - len(text.lstrip())])


def _filled_fixes(ctx: Context, f: _Filled) -> list[Proposal]:
    """``self.attr = self.attr.detach()`` where the filling method starts (NOTE [A buffer allocated once and filled
    by index])."""
    edit = Edit(f.filename, f.first, f.first - 1, f"{f.indent}self.{f.attr} = self.{f.attr}.detach()")
    return [
        keeping(
            ctx,
            Fix(
                keeps_forward=True,
                summary=T(
                    "detach self.{attr} where {cls}.{method}() starts: it is allocated once, in __init__, and each call "
                    "writes into it by index, so its graph grows from one call to the next and the next backward goes "
                    "through the one before",
                    attr=f.attr,
                    cls=f.cls,
                    method=f.method,
                ),
                trains=T(
                    "{loss} trains through this call's writes into self.{attr} only; the buffer keeps its values, "
                    "without the graph of earlier calls",
                    loss=ctx.l,
                    attr=f.attr,
                ),
                edits=(edit,),
            ),
        )
    ]


def built_once_fixes(ctx: Context) -> list[Proposal]:
    """The tensor computed at each access from the registered parameter, as a property of its class."""
    b = ctx.built_once
    if isinstance(b, _Filled):
        return _filled_fixes(ctx, b)
    if not isinstance(b, _Built):
        return []
    inner = b.indent + "    "
    stored = "\n".join(x for x in (b.keep, b.register) if x)
    prop = "\n".join(
        [
            "",
            f"{b.indent}@property",
            f"{b.indent}def {b.attr}(self):",
            f"{inner}return {b.value}",
        ]
    )
    edits = (
        Edit(b.filename, b.start, b.end, "\n".join(inner + r for r in stored.split("\n")) if stored else ""),
        *(
            (Edit(b.filename, b.after_init + 1, b.after_init, prop),)
            if not b.reads
            else (Edit(b.filename, row, row, text) for row, text in b.reads)
        ),
    )
    where = Location(b.filename, b.start).where
    if b.reads:  # NOTE [A parameter keeps its name]
        summary = T(
            "register self.{attr} as the parameter itself ({register}) and compute {value} where it is read "
            "({wheres}), instead of once in its __init__ ({where}): each use then builds its own graph from the "
            "values the updates wrote, and the parameter keeps your name",
            attr=b.attr,
            register=b.register,
            value=b.value,
            wheres=", ".join(Location(b.filename, row).where for row, _text in b.reads),
            where=where,
        )
    # with the loop's intent known, the trains line is read from it (a loss that reaches models no step uses)
    return [
        replace(
            keeping(
                ctx,
                Fix(
                    keeps_forward=True,
                    summary=summary
                    if b.reads
                    else T(
                        "compute self.{attr} at each access, as a property of {cls} ({value}), instead of once in its "
                        "__init__ ({where}): each use then builds its own graph from the values the updates wrote",
                        attr=b.attr,
                        cls=b.cls,
                        value=b.value,
                        where=where,
                    )
                    if not b.register and not b.keep
                    else T(
                        "store what it reads of __init__'s own on self ({keep}) and compute self.{attr} at each access, as a property of {cls} "
                        "({value}), instead of once in its __init__ ({where}): each use then builds its own graph "
                        "from the values the updates wrote",
                        keep=b.keep.replace("\n", "; ") if b.keep else "",
                        attr=b.attr,
                        cls=b.cls,
                        value=b.value,
                        where=where,
                    )
                    if not b.register
                    else T(
                        "register the parameter self.{attr} is computed from ({register}) and compute self.{attr} at "
                        "each access, as a property of {cls} ({value}), instead of once in its __init__ ({where}): each "
                        "use then builds its own graph from the values the updates wrote",
                        attr=b.attr,
                        register=b.register,
                        cls=b.cls,
                        value=b.value,
                        where=where,
                    ),
                    trains=T(
                        "{loss} trains {models} at every iteration, through the value of self.{attr} each access "
                        "computes",
                        loss=ctx.l,
                        models=join(list(ctx.reach), T(" and ")),
                        attr=b.attr,
                    ),
                    edits=edits,
                ),
            ),
            describe=True,
        )
    ]


# NOTE [A tensor built once in a constructor]
# A module's __init__ computes a tensor from parameters (a width kept as the exp of
# its log, a weight normalised once, a mask times a weight; or a distribution made
# from them, Categorical(logits=self.prior_logits), which normalises its logits) and
# stores it on self; each forward reads it. That tensor's graph was built once: the first
# backward frees it and the second fails; with retain_graph it would run, but the
# value would never follow the optimizer's updates. When the parameter is created
# inline (torch.exp(nn.Parameter(...))), it is not even registered, so no
# optimizer built from model.parameters() holds it. The fix computes the value at
# each access, as a property of the class: the parameter is registered on its own
# attribute (named for the inverse of the function that wraps it: log_width for
# exp, raw_ for softplus, logit_ for sigmoid), the constructor's statement
# becomes that registration (or goes), and every read of self.<attr> is
# unchanged. Offered only when __init__ is the attribute's one store, a top-level
# statement, the value reads nothing of __init__'s own (its arguments) outside
# the registered Parameter call and draws no random numbers, and (unless the
# Parameter is made inline) some tensor below it is held by an optimizer: computed
# from parameters no optimizer holds, the value is a constant of the loop (an
# average latent through a frozen generator), and a detach where it is made is
# the fix.
