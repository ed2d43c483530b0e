"""A class of the user's code read from its source: its definition, its methods, what they do with ``self.attr``
(the reading the causes that look at a module's or an object's kept state share)."""

from __future__ import annotations

import ast
import inspect

from ..fixes import source_of
from ..location import _INSTALLED, _library_file
from ..source import parse

__all__ = ["class_tree", "mentions", "methods_of", "self_attr", "sets_attr"]


def class_tree(cls: type) -> tuple[ast.ClassDef, str] | None:
    """The class's definition in the user's code, and its file: found through its methods' code (their file and
    first line), so a class defined in a script run by exec or in a notebook cell is found too."""
    codes = [v.__code__ for v in vars(cls).values() if inspect.isfunction(v)]
    if not codes:
        return None
    filename, line = codes[0].co_filename, codes[0].co_firstlineno
    if _library_file(filename) or filename.startswith(_INSTALLED):
        return None
    tree = parse(source_of(filename))
    if tree is None:
        return None
    return next(
        (
            (n, filename)
            for n in ast.walk(tree)
            if isinstance(n, ast.ClassDef) and n.name == cls.__name__ and n.lineno <= line <= (n.end_lineno or n.lineno)
        ),
        None,
    )


def self_attr(node: ast.AST, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def mentions(node: ast.AST, attr: str) -> bool:
    return any(self_attr(n, attr) for n in ast.walk(node))


def sets_attr(st: ast.AST, attr: str) -> bool:
    """``st`` is ``self.attr = value`` with a value that does not read ``self.attr``."""
    return (
        isinstance(st, ast.Assign)
        and len(st.targets) == 1
        and self_attr(st.targets[0], attr)
        and not mentions(st.value, attr)
    )


def stores_entry(st: ast.AST, attr: str) -> bool:
    """``st`` is ``self.attr[key] = value``."""
    return isinstance(st, ast.Assign) and any(
        isinstance(t, ast.Subscript) and self_attr(t.value, attr) for t in st.targets
    )


def methods_of(node: ast.ClassDef) -> list[ast.FunctionDef]:
    return [f for f in node.body if isinstance(f, ast.FunctionDef)]
