"""The package boundary: gradlab is the library, gradlab.course the course, and the library never imports the course."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import gradlab
import gradlab.course

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = sorted(p for p in (ROOT / "gradlab").glob("*.py"))
COURSE = sorted((ROOT / "gradlab" / "course").glob("*.py"))


def _imports(path: Path, source: str | None = None) -> list[str]:
    """Every module a file imports, absolute (``from .x import y`` in gradlab/z.py -> ``gradlab.x``)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found.append(module)
            found += [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            found += [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return found


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_the_library_never_imports_the_course(path: Path) -> None:
    course = [m for m in _imports(path) if m == "gradlab.course" or m.startswith("gradlab.course.") or m == ".course"]
    assert course == [], f"{path.name} imports {course}"


@pytest.mark.parametrize(
    "source",
    [
        "from .course import networks",
        "from . import course",
        "import gradlab.course.iteration",
        "from gradlab.course import make_pair",
        "import importlib\nimportlib.import_module('gradlab.course')",
    ],
)
def test_the_import_reader_sees_a_course_import(source: str) -> None:
    """The reader above sees relative, absolute and dynamic imports of the course (else that test could not fail)."""
    found = _imports(ROOT / "gradlab" / "example.py", source)
    assert any(m == "gradlab.course" or m.startswith("gradlab.course.") for m in found), found


@pytest.mark.slow
def test_importing_the_library_loads_neither_the_course_nor_plotting() -> None:
    code = (
        "import sys, gradlab\n"
        "loss = gradlab.check\n"
        "print(sorted(m for m in sys.modules if m.startswith(('gradlab.course', 'matplotlib', 'ipywidgets'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", [gradlab, gradlab.course], ids=["gradlab", "gradlab.course"])
def test_every_exported_name_resolves_and_is_documented(package: object) -> None:
    names = [n for n in package.__all__ if n != "__version__"]  # type: ignore[attr-defined]
    assert len(names) == len(set(names))
    assert set(names) == set(package._EXPORTS)  # type: ignore[attr-defined]
    for name in names:
        value = getattr(package, name)
        assert value is not None
        if callable(value):
            assert value.__doc__, f"{package.__name__}.{name} has no docstring"  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", LIBRARY + COURSE, ids=lambda p: p.name)
def test_no_module_is_shadowed_by_a_function_of_its_name(path: Path) -> None:
    package = gradlab if path.parent.name == "gradlab" else gradlab.course
    name = path.stem
    if name.startswith("__"):
        return
    assert name not in package.__all__, f"{package.__name__}.{name} is both a module and an exported name"
    module = importlib.import_module(f"{package.__name__}.{name}")
    assert module.__name__ == f"{package.__name__}.{name}"


def test_course_names_are_not_in_the_library() -> None:
    for name in ("make_pair", "Net", "train", "playground", "quiz", "verify", "setup", "environment"):
        assert not hasattr(gradlab, name), f"gradlab.{name} belongs to gradlab.course"
        assert hasattr(gradlab.course, name)


def test_unknown_attributes_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gradlab.nope  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gradlab.course.nope  # noqa: B018
