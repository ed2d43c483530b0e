"""Cause ``carried_state``, a cache: a module or a plain object of the user's code keeps a result of a trained forward
to reuse it (a dict of class embeddings, a memo set once), and the next iteration reads it with the freed graph and
the values of the weights before the step; the cache emptied after each backward (NOTE [A cache of a module's
result], NOTE [A result memoised on an object until it is set to None])."""

from __future__ import annotations

import ast
from dataclasses import replace

import torch

from ..claims import term_claims
from ..context import Context
from ..evidence import Facts, from_frame, leaves_of
from ..fixes import Fix, Proposal, all_edits, insert_lines, keeping, source_of
from ..i18n import T, Text
from ..source import block_of, feeding, names, parse, preceding, runs_backward, statement_at
from .class_source import class_tree, mentions, methods_of, self_attr, stores_entry
from .kept_state import tensors_with_graph

__all__ = ["cached_context", "clear_caches", "module_path", "updates_entries"]


#: The attributes every nn.Module has (its parameters, buffers, hooks): never a cache of the user's.
_MODULE_OWN = frozenset(vars(torch.nn.Module()))


def cached_context(base: Context, facts: Facts, roots: dict[str, torch.nn.Module], used: set[str]) -> Context | None:
    """A module that memoises a result of its own in a dict (``self.cache[key] = class_embeds``) holding the graph
    of the forward that computed it: the next iteration reads the entry, whose graph the backward freed and whose
    values the step made stale (NOTE [A cache of a module's result])."""
    found: list[str] = []
    unset: list[str] = []  # memos set back to None rather than emptied
    for name, root in sorted(roots.items(), key=lambda kv: kv[0] not in used):
        for sub, m in root.named_modules():
            path = module_path(name, sub)
            for attr, value in vars(m).items():
                if attr in _MODULE_OWN or not isinstance(value, dict) or path is None:
                    continue
                # an entry may be one tensor or a list of them (the encodings of every layer)
                if any(tensors_with_graph(v) for v in value.values()):
                    if updates_entries(type(m), attr):
                        return None  # a memory (an entry made from its old value), not a cache
                    if _starts_none(type(m), attr):
                        # ``if self.attr is not None: return self.attr[k]``: emptied, it would read no entry; set
                        # back to None, it is computed again only where the class computes it under that test
                        if not _none_memo(type(m), attr):
                            continue
                        unset.append(f"{path}.{attr}")
                    found.append(f"{path}.{attr}")
        if found:
            break
    objects = False
    held = (
        frozenset().union(*facts.site.optimizers.values())
        if facts.site is not None and facts.site.optimizers
        else frozenset()
    )
    if not found:  # a plain object the loop uses (a boundary condition's memo of its values, NOTE [A cache of a
        # module's result]): its dicts too, private ones included
        for name, obj in sorted(facts.namespace.items()):
            if not isinstance(name, str) or name not in used or name.startswith("_"):
                continue
            if isinstance(obj, (torch.nn.Module, torch.Tensor, type)) or not hasattr(obj, "__dict__"):
                continue
            if class_tree(type(obj)) is None:
                continue  # not a class of the user's code
            for attr, value in vars(obj).items():
                graphs = isinstance(value, dict) and any(tensors_with_graph(v) for v in value.values())
                if (
                    graphs
                    and attr.isidentifier()
                    and not updates_entries(type(obj), attr)
                    and _memoises(type(obj), attr)
                ):
                    found.append(f"{name}.{attr}")
                elif _holds_trained_graph(value, held) and _none_memo(type(obj), attr):
                    found.append(f"{name}.{attr}")  # NOTE [A result memoised on an object until it is set to None]
                    unset.append(f"{name}.{attr}")
        objects = bool(found)
    if not found:
        return None
    ctx = from_frame(base, facts, None)
    return replace(
        ctx,
        carried=found[0],
        kept_attrs=tuple("self." + f.rsplit(".", 1)[-1] for f in found),
        caches=tuple(found),
        # emptying a cache keeps what each named term of the loss reaches (NOTE [A loss written as a sum of named
        # losses])
        terms=term_claims(facts.site, facts.namespace, base.loss),
        extra={**ctx.extra, "cache_on_objects": "1" if objects else "", "cache_unset": ",".join(unset)},
    )


def _starts_none(cls: type, attr: str) -> bool:
    """``__init__`` sets ``self.attr = None`` and a method tests ``self.attr is None`` (or ``is not None``): the
    memo's own sign of being unset."""
    found = class_tree(cls)
    if found is None:
        return False
    methods = methods_of(found[0])
    return _made_none(methods, attr) and any(
        isinstance(n, ast.Compare)
        and self_attr(n.left, attr)
        and len(n.ops) == 1
        and isinstance(n.ops[0], (ast.Is, ast.IsNot))
        and isinstance(n.comparators[0], ast.Constant)
        and n.comparators[0].value is None
        for m in methods
        for n in ast.walk(m)
    )


def _holds_trained_graph(value: object, held: frozenset[int]) -> bool:
    """A tensor with a graph that reaches a parameter an optimizer holds."""
    return isinstance(value, torch.Tensor) and value.grad_fn is not None and bool(leaves_of(value) & held)


def _none_memo(cls: type, attr: str) -> bool:
    """The class sets ``self.attr`` only under ``if self.attr is None:`` (a result computed once, then reused), and
    ``__init__`` makes it None."""
    found = class_tree(cls)
    if found is None:
        return False
    stores = [
        st
        for m in methods_of(found[0])
        if m.name != "__init__"
        for st in ast.walk(m)
        if isinstance(st, ast.Assign) and any(self_attr(t, attr) for t in st.targets)
    ]
    guarded = {
        id(st)
        for m in methods_of(found[0])
        for branch in ast.walk(m)
        if isinstance(branch, ast.If)
        and isinstance(branch.test, ast.Compare)
        and self_attr(branch.test.left, attr)
        and isinstance(branch.test.ops[0], ast.Is)
        and isinstance(branch.test.comparators[0], ast.Constant)
        and branch.test.comparators[0].value is None
        for x in branch.body
        for st in ast.walk(x)
    }
    return bool(stores) and _made_none(methods_of(found[0]), attr) and all(id(st) in guarded for st in stores)


def _made_none(methods: list[ast.FunctionDef], attr: str) -> bool:
    """``__init__`` (among ``methods``) sets ``self.attr = None``."""
    init = next((m for m in methods if m.name == "__init__"), None)
    return init is not None and any(
        isinstance(st, ast.Assign)
        and any(self_attr(t, attr) for t in st.targets)
        and isinstance(st.value, ast.Constant)
        and st.value.value is None
        for st in ast.walk(init)
    )


def updates_entries(cls: type, attr: str) -> bool:
    """The class stores an entry of ``self.attr`` computed from the dict's own entries (``self.memory[w] =
    min(self.memory[w], e)``): a memory of earlier batches meant to carry values, not a cache to recompute. True
    too when the class's source cannot be read (no reading is safe then)."""
    found = class_tree(cls)
    tree = parse(source_of(found[1])) if found is not None else None
    if found is None or tree is None:
        return True
    storing = [m for m in methods_of(found[0]) if any(stores_entry(st, attr) for st in ast.walk(m))]
    stored = [st.value for m in storing for st in ast.walk(m) if isinstance(st, ast.Assign) and stores_entry(st, attr)]
    if storing and not any(_reads_entry(m, attr) for m in storing) and not any(map(_runs_own_module, stored)):
        return True  # NOTE [A memory written by one method and read by another]
    for st in ast.walk(found[0]):
        if not isinstance(st, ast.Assign):
            continue
        for target in st.targets:
            if not (isinstance(target, ast.Subscript) and self_attr(target.value, attr)):
                continue
            if mentions(st.value, attr):
                return True
            # through the statements before it on its path: new = min(self.memory[w], e); self.memory[w] = new
            before = {b.lineno: b for b in preceding(tree, st.lineno)}
            if any(mentions(before[n], attr) for n in feeding(list(before.values()), names(st.value, ast.Load))):
                return True
    return False


def _memoises(cls: type, attr: str) -> bool:
    """Some method of ``cls`` both reads an entry of ``self.attr`` and stores one: it computes an entry when it is
    missing, so emptying the dict makes the next read compute it again (a dict filled by one method and only read
    by others would then be missing its keys)."""
    found = class_tree(cls)
    if found is None:
        return False
    return any(
        _reads_entry(m, attr) and any(stores_entry(st, attr) for st in ast.walk(m)) for m in methods_of(found[0])
    )


def _runs_own_module(value: ast.expr) -> bool:
    """``value`` calls something the object holds (``self.encoder(k)``, ``self._compute(k)``): a result it computes,
    a cache's entry."""
    return any(isinstance(n, ast.Call) and ast.unparse(n.func).startswith("self.") for n in ast.walk(value))


def _reads_entry(method: ast.AST, attr: str) -> bool:
    """``method`` reads an entry of ``self.attr`` (``self.attr[key]``, ``self.attr.get(key)``) or tests for one
    (``key in self.attr``)."""
    for n in ast.walk(method):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and self_attr(n.value, attr):
            return True
        if isinstance(n, ast.Attribute) and n.attr in ("get", "setdefault") and self_attr(n.value, attr):
            return True
        if isinstance(n, ast.Compare) and any(self_attr(c, attr) for c in n.comparators):
            return True
    return False


# NOTE [A memory written by one method and read by another]
# A cache is read where it is filled: the method that stores an entry first
# looks for it (``if key in self.cache: return self.cache[key]``) and computes it
# only when it is missing. A dict one method fills (``update(emb, ids)`` after
# the step: the last embedding seen of each individual) and another reads (a
# consistency term against those embeddings), from values it is handed (not
# computed by a module it holds: a precomputed cache of ``self.encoder(k)`` is
# a cache), is a memory of earlier batches:
# its values are meant to carry over, so it is not emptied after the backward
# (the next update would fill it with this iteration's graph again); it is
# detached where it is stored, as other memories are (NOTE [State kept on an
# object without a reset]).


def _backwards_before(ctx: Context) -> list[int]:
    """The one-line backward statements of the failing backward's block that run before it."""
    tree = ctx.site.tree() if ctx.site is not None else None
    st = statement_at(tree, ctx.backward_line) if tree is not None and ctx.backward_line is not None else None
    block = block_of(tree, st)
    if block is None or st is None:
        return []
    return [x.lineno for x in block[: block.index(st)] if x.lineno == x.end_lineno and runs_backward(x, grad=False)]


def clear_caches(ctx: Context, attrs: Text) -> Proposal | None:
    if not ctx.caches or ctx.backward_line is None:
        return None
    unset = set(ctx.extra.get("cache_unset", "").split(","))
    lines = "\n".join(f"{c} = None" if c in unset else f"{c}.clear()" for c in ctx.caches)
    # after the failing backward, and after each backward its block runs before it (the one that freed what the
    # cache holds, when the same iteration reads the cache again: two losses stepped one after the other)
    edits = all_edits(
        *(insert_lines(ctx, line, lines, after=True) for line in (*_backwards_before(ctx), ctx.backward_line))
    )
    if not edits:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "set {attrs} back to None after each backward, as the object's constructor does: the next "
                "iteration computes it again, from the stepped parameters",
                attrs=", ".join(ctx.caches),
            )
            if unset >= set(ctx.caches)
            else T(
                "empty the cache kept on {attrs} after each backward: the next iteration computes what it caches "
                "again, from the stepped parameters",
                attrs=", ".join(ctx.caches),
            )
            if ctx.extra.get("cache_on_objects")
            else T(
                "empty the cache the modules keep ({attrs}) after each backward: the next forward computes what it "
                "caches again, with the stepped weights",
                attrs=attrs,
            ),
            trains=T(
                "{loss} trains every module it reaches at each iteration, through what the forward computes then; "
                "the cache still saves the work within an iteration",
                loss=ctx.l,
            ),
            edits=edits,
            keeps_forward=False,
        ),
    )


def module_path(root: str, sub: str) -> str | None:
    """The expression for the submodule ``sub`` (a ``named_modules`` name) of the frame's ``root``:
    ``model.recurrent``, ``net.blocks[2].attn``; None when a part is not a name or an index."""
    out = root
    for part in sub.split(".") if sub else []:
        if part.isidentifier():
            out += f".{part}"
        elif part.isdigit():
            out += f"[{part}]"
        else:
            return None
    return out


# NOTE [A cache of a module's result]
# A module may memoise a result of its own forward in a dict (an open-vocabulary segmentor's text encoder
# caching the class embeddings per data set: self.cache[name] = class_embeds). Trained, the entry keeps the
# graph of the forward that computed it and the values of the weights then: the next iteration reads both.
# Detaching the entry would run, but the module would stop learning from it and the values would stay those
# of the first iteration. The cache is an optimisation of a computation the code means to run (the same
# forward without the cache recomputes it), so the fix empties it after each backward, through the loop's
# path to the module: each iteration computes the entry once, with the weights of that iteration. A dict
# whose entries the class computes from their old values (Flair's pooled word memory: the minimum over a
# word's occurrences) is a memory meant to carry values across batches, not a cache: not emptied. The same
# holds for a plain object of the user's classes that the loop uses, its dicts private or not (a boundary
# condition memoising A * cos(omega * t) by key, A a learned amplitude): emptied through the loop's name. An entry
# may be a list or tuple of tensors (an encoder's outputs of every layer, keyed by a summary of the input's values).
# NOTE [A result memoised on an object until it is set to None]
# A plain object of the user's code (a menu catalogue, a feature store) computes a tensor from a trained model the
# first time it is asked (if self._vectors is None: self._vectors = self.encoder(...)) and returns the kept tensor
# after that. Its __init__ makes the attribute None, and no method sets it again but under that test: a memo. Trained,
# it is a cache of the forward, as a module's dict cache is (NOTE [A cache of a module's result]): the fix sets it
# back to None after each backward, through the loop's name for the object, so that every iteration computes it once,
# with that iteration's weights. Only when its graph reaches parameters an optimizer of the frame holds (a memo of
# something nothing trains is a constant, a detach's business), private attributes included.
