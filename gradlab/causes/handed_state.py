"""Cause ``carried_state``, handed to an object: the loop reads a state from a plain object and hands the new one
back to it to keep (``model(x, stream.state)``, then ``stream.remember(new_state)``); detached where it is handed
over (NOTE [A state handed to an object to keep]). The fix itself is :func:`.carried_state.carried_fixes`'s."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from ..context import Context
from ..evidence import Facts, graph_kinds
from ..location import Location
from ..source import loop_body_of, names
from .carried_state import detached_state
from .class_source import class_tree, methods_of

__all__ = ["handed_to_object"]


def handed_to_object(base: Context, facts: Facts) -> Context | None:
    """A state the loop hands to a plain object to keep (NOTE [A state handed to an object to keep]): a statement of
    the failing loop's body reads ``obj.attr``, which holds a graph, and a later one stores a name the body binds
    into it, as ``obj.attr = name`` or ``obj.method(name)`` whose method sets ``self.attr`` to its parameter. The
    context's ``kept_at`` is that statement, and ``extra["handed"]`` the statement with the name detached."""
    site = facts.site
    tree = site.tree() if site is not None else None
    body = loop_body_of(tree, facts.backward_line) if tree is not None and facts.backward_line else None
    if site is None or not body:
        return None
    kept: dict[str, str] = {}  # obj.attr -> its kind (tensor, tuple, list)
    for name, obj in facts.namespace.items():
        if not isinstance(name, str) or name.startswith("_") or isinstance(obj, (torch.nn.Module, torch.Tensor, type)):
            continue
        for attr, value in getattr(obj, "__dict__", {}).items():
            kind = graph_kinds({attr: value}).get(attr)
            if kind is not None:
                kept[f"{name}.{attr}"] = kind
    bound = set().union(*(names(st, ast.Store) for st in body))
    read: set[str] = set()
    for st in body:
        found = _hands_over(st, kept, read & set(kept), bound, facts.namespace)
        if found is not None and site.holds(st.lineno):
            path, value = found
            line = site.text(st.lineno).strip()
            cut = line.index("=" if isinstance(st, ast.Assign) else "(")  # the value, or the method's argument
            new = line[:cut] + re.sub(
                rf"(?<![\w.]){re.escape(value)}(?![\w(])", detached_state(value, kept[path], False), line[cut:], count=1
            )
            if new == line:
                return None
            loc = Location(site.filename, st.lineno)
            return replace(
                base,
                carried=path,
                carried_kind=kept[path],
                kept_at=loc,
                entry_line=loc.code,
                entry_where=loc.where,
                extra={**base.extra, "handed": new},
            )
        read |= {ast.unparse(n) for n in ast.walk(st) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    return None


def _hands_over(
    st: ast.stmt, kept: Mapping[str, str], read: set[str], bound: set[str], namespace: Mapping[str, Any]
) -> tuple[str, str] | None:
    """``(obj.attr, name)`` when the one-line statement ``st`` stores the name ``name`` into ``obj.attr``, one of
    ``read`` (:func:`handed_to_object`)."""
    if st.lineno != st.end_lineno:
        return None
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Name):
        path = ast.unparse(st.targets[0])
        return (path, st.value.id) if path in read and st.value.id in bound else None
    call = st.value if isinstance(st, ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id in bound
    ):
        return None
    obj = namespace.get(call.func.value.id)
    found = class_tree(type(obj)) if obj is not None else None
    method = next((m for m in methods_of(found[0]) if m.name == call.func.attr), None) if found is not None else None
    if method is None or len(method.args.args) != 2:
        return None
    param = method.args.args[1].arg
    for x in ast.walk(method):
        if (
            isinstance(x, ast.Assign)
            and len(x.targets) == 1
            and isinstance(x.targets[0], ast.Attribute)
            and isinstance(x.targets[0].value, ast.Name)
            and x.targets[0].value.id == "self"
            and isinstance(x.value, ast.Name)
            and x.value.id == param
        ):
            path = f"{call.func.value.id}.{x.targets[0].attr}"
            if path in read:
                return path, call.args[0].id
    return None


# NOTE [A state handed to an object to keep]
# A loop may keep its recurrent state on a plain object rather than in a name: a
# stream that serves consecutive windows reads its state into the model
# (model(x, stream.state)) and gets the new one back (stream.remember(new_state),
# or stream.state = new_state). No statement both reads and binds one name, so
# the loop's own carried-state rules see nothing, and the line torch saved is in
# the model's forward. When a statement of the failing loop's body reads obj.attr,
# holding a graph now, and a later one-line statement stores a name the body binds
# into that attribute (an assignment, or a one-argument method of the object's
# class that sets self.attr to its parameter), that is the state. The fix detaches
# the name where it is handed over, element-wise for a tuple or list: the values
# carry over, each window trains through its own graph (truncated
# backpropagation), as the RNN tutorials' h_state = h_state.data does.
