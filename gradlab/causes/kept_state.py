"""What state a class of module keeps across forwards (read from its source): the attributes a forward reads before
it sets them, how the class resets them, where each is first read and stored; the readings :mod:`.module_state`,
:mod:`.object_state`, :mod:`.built_once` and :mod:`.discarded_detach` share."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import torch

from ..location import Location
from ..source import names
from .class_source import class_tree, mentions, methods_of, self_attr, sets_attr

__all__ = ["Kept", "detach_expr", "graph_attrs", "kept_state", "state_tensors_with_graph", "tensors_with_graph"]


@dataclass(frozen=True)
class Kept:
    """The state one class of module keeps across forwards: its attributes, how it is reset, where it is read."""

    cls: type
    attrs: tuple[str, ...]
    reset: str | None  # a method of the class that sets every attribute back without reading it
    detach_at: tuple[tuple[Location, str], ...]  # for each attribute: the statement of its forward that reads it first
    stored_at: tuple[tuple[Location, str], ...] = ()  # every one-line store into ``self.attr`` outside __init__, reset
    stepwise: bool = False  # some store runs inside a loop of its method: a state over the steps of one input
    memo: bool = False  # no store reads the attribute it sets: a result kept to be reused, not a memory
    training_only: bool = False  # every store runs under ``if self.training:``: a result of training forwards only
    none_reset: bool = False  # every attribute starts as None in __init__ and a method tests ``self.attr is None``
    sums: bool = False  # a sum the forward adds into and returns, started at zeros in __init__ only (NOTE below)
    per_step: bool = False  # the method that stores it runs once per step of another method's loop (NOTE below)


def tensors_with_graph(value: object) -> list[torch.Tensor]:
    """The tensors with a graph ``value`` holds: itself, or the elements of a tuple or list of tensors (an LSTM's
    ``(h, c)``)."""
    if isinstance(value, torch.Tensor):
        return [value] if value.grad_fn is not None else []
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return [v for v in value if v.grad_fn is not None]
    return []


def state_tensors_with_graph(value: object) -> list[torch.Tensor]:
    """:func:`tensors_with_graph`, and for a dict of tensors (a state per layer, ``self.hidden_states[name]``) its
    values' (NOTE [A state kept per layer in a dict])."""
    if isinstance(value, dict) and value and all(isinstance(v, torch.Tensor) for v in value.values()):
        return [v for v in value.values() if v.grad_fn is not None]
    return tensors_with_graph(value)


def graph_attrs(module: torch.nn.Module) -> list[str]:
    """The attributes of ``module`` (plain or buffers) that hold a tensor with a graph, or a tuple or list of tensors
    one of which has a graph; private ones too (``self._cached_emb``: a memo is often kept private), never a
    dunder. torch's own private attributes of a module hold dicts, sets and hooks, never such a tensor."""
    found = [
        k
        for k, v in [*vars(module).items(), *module._buffers.items()]
        if not k.startswith("__") and state_tensors_with_graph(v)
    ]
    return list(dict.fromkeys(found))


def detach_expr(expr: str, kind: str | None = None) -> str:
    """``expr.detach()``; for a state held as a ``kind`` of tensors (``"tuple"``, ``"list"``), the same ``kind`` of
    each detached: ``tuple(t.detach() for t in expr)``; for a ``"dict"`` of tensors, each value detached."""
    if kind == "dict":
        return f"{{k: v.detach() for k, v in {expr}.items()}}"
    return f"{kind}(t.detach() for t in {expr})" if kind else f"{expr}.detach()"


def _first_read(method: ast.FunctionDef, attr: str, made_dict: bool = False) -> ast.stmt | None:
    """The top-level statement of ``method`` that first uses ``self.attr``, when that use reads the kept value
    (not a plain ``self.attr = value``); None when the method sets it before any read, or never uses it."""
    for st in method.body:
        if not mentions(st, attr):
            continue
        # an entry of a dict stored first (``self.recordings["v"] = trace``: a log the forward writes) reads nothing
        # kept; a slice of a tensor written first (a preallocated buffer) leaves the rest of it to be read
        return None if sets_attr(st, attr) or (made_dict and _stores_entry_first(st, attr)) else st
    return None


def _stores_entry_first(st: ast.stmt, attr: str) -> bool:
    """``st`` is ``self.attr[key] = value`` (under an ``if``: ``if self.record: self.attr[key] = value``) whose
    value and key do not read ``self.attr``."""
    if isinstance(st, ast.If) and not st.orelse and len(st.body) == 1 and not mentions(st.test, attr):
        st = st.body[0]
    return (
        isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and isinstance(st.targets[0], ast.Subscript)
        and self_attr(st.targets[0].value, attr)
        and not mentions(st.value, attr)
        and not mentions(st.targets[0].slice, attr)
    )


def _resets(method: ast.FunctionDef, attrs: tuple[str, ...]) -> bool:
    """``method`` takes no argument but ``self`` and sets every attribute of ``attrs`` back when called: not a
    generator or a context manager (``local_scope()`` called alone runs none of its body), not a property."""
    args = method.args
    required = len(args.posonlyargs) + len(args.args) - len(args.defaults)
    if required != 1 or args.vararg or any(d is None for d in args.kw_defaults):
        return False
    wrapped = {ast.unparse(d).rsplit(".", 1)[-1] for d in method.decorator_list}
    if wrapped & {"contextmanager", "asynccontextmanager", "property", "cached_property"}:
        return False
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(method)):
        return False
    if any(  # a memo's getter (``if self._ctx is None: self._ctx = ...; return self._ctx``) sets it, and keeps it
        isinstance(n, ast.Return) and n.value is not None and any(mentions(n.value, a) for a in attrs)
        for n in ast.walk(method)
    ):
        return False
    return all(any(sets_attr(st, a) for st in ast.walk(method)) for a in attrs)


def _tensor_made(node: ast.ClassDef, attr: str) -> bool:
    """Every value the class sets ``self.attr`` to is made by a call (``torch.zeros(...)``), or it is registered as
    a buffer: ``self.attr.detach()`` then never meets a None or a number."""
    registered = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "register_buffer"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and n.args[0].value == attr
        for n in ast.walk(node)
    )
    values = [st.value for st in ast.walk(node) if isinstance(st, ast.Assign) and sets_attr(st, attr)]
    return (registered or bool(values)) and all(isinstance(v, ast.Call) for v in values)


#: Calls that make a new tensor from shapes or values alone: what they return has no graph.
_FACTORIES = frozenset(
    {
        *("zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange"),
        *("zeros_like", "ones_like", "empty_like", "full_like"),
        *("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"),
    }
)


def _made_fresh(value: ast.expr) -> bool:
    """``value`` is a factory call (``x.new_zeros(b, n)``, ``torch.zeros(...)``): it holds no graph to detach."""
    func = value.func if isinstance(value, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in _FACTORIES


def kept_state(cls: type, attrs: list[str]) -> Kept | None:
    found = class_tree(cls)
    if found is None:
        return None
    node, filename = found
    methods = [m for m in methods_of(node) if m.name != "__init__"]
    carried: list[str] = []
    detach_at: list[tuple[Location, str]] = []
    for attr in attrs:
        made_dict = attr in _made_dicts(node, (attr,))
        reads = [(m, st) for m in methods if (st := _first_read(m, attr, made_dict)) is not None]
        if not reads:
            continue  # only written (an output kept for logging): not carried into the next forward
        carried.append(attr)
        st = next((s for m, s in reads if m.name == "forward"), reads[0][1])
        if _tensor_made(node, attr):
            detach_at.append((Location(filename, st.lineno), attr))
    if not carried:
        return None
    kept = tuple(carried)
    reset = next(
        (m.name for m in methods if m.name != "forward" and not m.name.startswith("__") and _resets(m, kept)), None
    )
    stored: list[tuple[Location, str]] = []
    stepwise = False
    memo = True
    chained: set[str] = set()  # attributes a forward stores from themselves and reads again
    dicts = _made_dicts(node, kept)  # a memory by key: its entries are its stores
    for m in methods:
        if m.name == reset:
            continue
        in_loops = {id(n) for loop in ast.walk(m) if isinstance(loop, (ast.For, ast.While)) for n in ast.walk(loop)}
        for store in ast.walk(m):
            if not (isinstance(store, ast.Assign) and len(store.targets) == 1):
                continue
            # ``self.attr = value``, or ``self.delta, self.zero_point = calibrate(x)``: the elements it stores
            target = store.targets[0]
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names_here = [a for e in elements for a in kept if self_attr(e, a)]
            # ``self.memory[key] = value``: an entry stored (a loop over the keys fills the entries; it is no loop
            # over the steps of one input)
            entry = isinstance(target, ast.Subscript) and not names_here
            if isinstance(target, ast.Subscript) and entry:
                names_here = [a for a in kept if self_attr(target.value, a) and a in dicts]
            if not names_here or isinstance(store.value, ast.Constant):
                continue
            if not entry and all(a in dicts for a in names_here):
                continue  # a memory by key set whole (emptied, or made afresh per layer): a reset, not a store
            stepwise = stepwise or (id(store) in in_loops and not entry)
            memo = (
                memo
                and not any(self_attr(n, a) for a in names_here for n in ast.walk(store.value))
                and not _statistic_of_input(store.value, m)
            )
            detached = isinstance(store.value, ast.Call) and ast.unparse(store.value.func).endswith(".detach")
            if store.lineno == store.end_lineno and not _made_fresh(store.value) and not detached:
                stored += [(Location(filename, store.lineno), a) for a in names_here]
            # stored from its own earlier value and read again after the store by the same method (an evolving
            # weight: _, self.weight = gru(x, self.weight); ... x @ self.weight): the forward trains through it, and
            # a detach where it is stored would cut this forward's own gradient, not only the last iteration's
            end = store.end_lineno or store.lineno
            chained |= {
                a
                for a in names_here
                if any(self_attr(n, a) for n in ast.walk(store.value))
                and any(
                    isinstance(n, ast.Attribute) and self_attr(n, a) and isinstance(n.ctx, ast.Load) and n.lineno > end
                    for n in ast.walk(m)
                )
            }
    stored = [(loc, a) for loc, a in stored if a not in chained]
    stored_all = {a for _loc, a in stored} == set(kept)
    init = next((m for m in methods_of(node) if m.name == "__init__"), None)
    none_reset = init is not None and all(
        any(
            isinstance(st, ast.Assign)
            and any(self_attr(t, a) for t in st.targets)
            and isinstance(st.value, ast.Constant)
            and st.value.value is None
            for st in ast.walk(init)
        )
        and any(
            isinstance(n, ast.Compare)
            and self_attr(n.left, a)
            and len(n.ops) == 1
            and isinstance(n.ops[0], ast.Is)
            and isinstance(n.comparators[0], ast.Constant)
            and n.comparators[0].value is None
            for m in methods
            for n in ast.walk(m)
        )
        for a in kept
    )
    return Kept(
        cls,
        kept,
        reset,
        tuple(detach_at) if len(detach_at) == len(kept) else (),
        tuple(stored) if stored_all else (),
        stepwise,
        memo,
        _training_only(methods, kept),
        none_reset,
        _sums(node, kept),
        _per_step(node, kept),
    )


# NOTE [A state kept per layer in a dict]
# A recurrent stack keeps each layer's state in a dict on the model (``self.hidden_states[layer.name] = h``), and a
# ``step()`` method, called by the forward once per time step, reads and stores it. The state runs over the steps
# of one chunk: detached where ``step()`` reads or stores it, it would cut the gradient between the steps of the
# chunk, which truncated backpropagation means to keep. Such a state is detached at the loop's boundary, every value
# of the dict (NOTE [A state module called in a loop of its parent] orders it so); a dict set whole outside
# ``__init__`` (made afresh per layer) is a reset, not a store to detach.
def _per_step(node: ast.ClassDef, attrs: tuple[str, ...]) -> bool:
    """A method that stores an attribute of ``attrs`` (``self.attr = ...`` or ``self.attr[key] = ...``) is called
    as ``self.method(...)`` inside a loop or a comprehension of another method (NOTE [A state kept per layer in a
    dict])."""
    methods = methods_of(node)
    storing = {
        m.name
        for m in methods
        for st in ast.walk(m)
        if isinstance(st, ast.Assign)
        and any(
            self_attr(t, a) or (isinstance(t, ast.Subscript) and self_attr(t.value, a))
            for t in st.targets
            for a in attrs
        )
    }
    loops = (ast.For, ast.While, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)
    return any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
        and call.func.attr in storing
        and call.func.attr != m.name
        for m in methods
        for loop in ast.walk(m)
        if isinstance(loop, loops)
        for call in ast.walk(loop)
    )


#: Factories of a zero tensor: the start of a sum.
_ZEROS = frozenset({"zeros", "zeros_like", "new_zeros"})


def _sums(node: ast.ClassDef, attrs: tuple[str, ...]) -> bool:
    """NOTE [A sum started in __init__]: every attribute of ``attrs`` is a sum the forward builds and returns:
    ``__init__`` sets it to zeros (``self.out = torch.zeros(b, 1)``, or registers such a buffer), no other method
    sets it, the forward only adds into it (``self.out += member(x)``) and returns what it reads of it. Its author
    meant each forward's own sum, started from zero; kept on the module, each forward adds to the previous ones'
    results and their graphs."""
    methods = {m.name: m for m in methods_of(node)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return False

    def zeros(value: ast.expr | None) -> bool:
        func = value.func if isinstance(value, ast.Call) else None
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in _ZEROS

    for attr in attrs:
        started = any(
            (isinstance(st, ast.Assign) and any(self_attr(t, attr) for t in st.targets) and zeros(st.value))
            or (
                isinstance(st, ast.Call)
                and isinstance(st.func, ast.Attribute)
                and st.func.attr == "register_buffer"
                and len(st.args) >= 2
                and isinstance(st.args[0], ast.Constant)
                and st.args[0].value == attr
                and zeros(st.args[1])
            )
            for st in ast.walk(init)
        )
        set_elsewhere = any(
            isinstance(st, ast.Assign) and any(self_attr(n, attr) for t in st.targets for n in ast.walk(t))
            for name, m in methods.items()
            if name != "__init__"
            for st in ast.walk(m)
        )
        adds = [st for st in ast.walk(forward) if isinstance(st, ast.AugAssign) and self_attr(st.target, attr)]
        returned = any(
            isinstance(st, ast.Return) and st.value is not None and mentions(st.value, attr) for st in ast.walk(forward)
        )
        if not (started and not set_elsewhere and adds and all(isinstance(a.op, ast.Add) for a in adds) and returned):
            return False
    return True


# Reductions that make a statistic of the data they are given (a calibration's scale, a batch's mean).
_REDUCTIONS = frozenset({"amax", "amin", "max", "min", "mean", "std", "var", "norm", "quantile", "median"})


def _statistic_of_input(value: ast.expr, method: ast.FunctionDef) -> bool:
    """``value`` reduces an argument of ``method`` (``x.abs().amax() / self.qmax``, ``torch.std(x)``): a statistic
    of the data the forward is given, kept as a memory (a fake quantiser's scale calibrated on the first batch),
    not a result of the weights kept for reuse (NOTE [State kept on modules])."""
    given = {a.arg for a in (*method.args.posonlyargs, *method.args.args[1:], *method.args.kwonlyargs)}
    for n in ast.walk(value):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _REDUCTIONS:
            read = names(n.func.value, ast.Load) | set().union(set(), *(names(a, ast.Load) for a in n.args))
            if read & given:
                return True
    return False


def _made_dicts(node: ast.ClassDef, attrs: tuple[str, ...]) -> set[str]:
    """The attributes of ``attrs`` that ``__init__`` sets to a dict (``self.memory = {}``, ``dict()``)."""
    init = next((m for m in methods_of(node) if m.name == "__init__"), None)
    return {
        a
        for a in attrs
        for st in (ast.walk(init) if init is not None else ())
        if isinstance(st, ast.Assign)
        and any(self_attr(t, a) for t in st.targets)
        and (
            isinstance(st.value, ast.Dict)
            or (isinstance(st.value, ast.Call) and ast.unparse(st.value.func).split(".")[-1] in _DICT_TYPES)
        )
    }


_DICT_TYPES = frozenset({"dict", "defaultdict", "OrderedDict"})


def _training_only(methods: list[ast.FunctionDef], attrs: tuple[str, ...]) -> bool:
    """Every statement of ``methods`` that stores a value into ``self.attr`` (a plain or a tuple target, for each
    of ``attrs``) runs in the body of an ``if`` that tests ``self.training``, and there is such a store."""
    guarded: set[int] = set()
    for m in methods:
        for branch in ast.walk(m):
            if isinstance(branch, ast.If) and any(self_attr(n, "training") for n in ast.walk(branch.test)):
                if isinstance(branch.test, ast.UnaryOp):
                    continue  # ``if not self.training``: its body runs in eval mode
                guarded |= {id(n) for st in branch.body for n in ast.walk(st)}
    stores = [
        st
        for m in methods
        for st in ast.walk(m)
        if isinstance(st, ast.Assign)
        and not isinstance(st.value, ast.Constant)
        and any(self_attr(t, a) for target in st.targets for t in ast.walk(target) for a in attrs)
    ]
    return bool(stores) and all(id(st) in guarded for st in stores)
