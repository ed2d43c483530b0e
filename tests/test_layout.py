"""The package boundary: gradlab is the library, gradlab.course the course, and the library never imports the course."""

from __future__ import annotations

import ast
import graphlib
import importlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import gradlab
import gradlab.course

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = sorted(p for p in (ROOT / "gradlab").rglob("*.py") if "course" not in p.relative_to(ROOT / "gradlab").parts)
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


# The library's layers, lowest first (the code review's layout, §7): leaves, the
# records (saved tensors, the recorder, the graph), the analysis, the pictures,
# then the entry points. A module may import only modules before it: not at the
# top, not inside a function, not under TYPE_CHECKING. So there is no circle.
ORDER = (
    # leaves
    "i18n",
    "notices",
    "tracebacks",
    "location",
    "messages",
    "codes",
    "session",
    "edits",
    "names",
    "internals",
    "fingerprint",
    "writes",
    "writers",
    "source",
    "rewrite",
    "activations",
    "rebuild",
    # records
    "saved",
    "events",
    "registry",
    "backwards",
    "steps",
    "silent",
    "cuts",
    "recorder",
    "graph",
    "loop",
    "trained",
    # analysis: what every cause shares, fixes and judging them, the evidence, one module per cause, the dispatcher
    "context",
    "fixes",
    "render",
    "judge",
    "evidence",
    "claims",
    "parts",
    "causes.class_source",
    "causes.inplace_op",
    "causes.untracked_write",
    "causes.same_loss_twice",
    "causes.chained",
    "causes.caller_boundary",
    "causes.gradient_probe",
    "causes.carried_steps",
    "causes.kept_attribute",
    "causes.carried_state",
    "causes.handed_state",
    "causes.recurrent_state",
    "causes.kept_state",
    "causes.module_cache",
    "causes.module_state",
    "causes.object_state",
    "causes.built_once",
    "causes.pruned_weight",
    "causes.frozen_extractor",
    "causes.stale_read",
    "causes.earlier_reach",
    "causes.handed_forward",
    "causes.kept_constant",
    "causes.stale_forward",
    "causes.list_never_cleared",
    "causes.fast_weights",
    "causes.step_before_backward",
    "causes.retained_accumulation",
    "causes.attached_output",
    "causes.closure_step",
    "causes.reentrant_checkpoint",
    "causes.handed_gradient",
    "causes.discarded_detach",
    "causes.api_cache",
    "causes.reset_at_step",
    "causes.out_write",
    "causes.updates_between",
    "causes.caller_reach",
    "candidates",
    "freed_candidates",
    "causes",
    "advice",
    "explanation",
    "kinds.modified_in_place",
    "kinds.graph_freed",
    "kinds.cut_path",
    "kinds.situations",
    "kinds.graphless_calls",
    "kinds.loaded_copies",
    "kinds.leaf_in_place",
    "kinds.family",
    "kinds.inference_saved",
    "kinds.statement",
    "kinds.numpy_in_torch",
    "kinds.numpy_values",
    "kinds.numpy_round_trip",
    "kinds.no_grad_fn",
    "kinds.non_scalar",
    "kinds.at_line",
    "kinds.custom_view",
    "kinds",
    "ddp",
    "diagnosis",
    "grads",
    "intent",
    # pictures
    "plots",
    "drawing",
    "memory",
    # entry points
    "tracker",
    "ipython",
    "scratch",
    "fix",
    "ranks",
    "cli",
    "integrations",
    "integrations._tracking",
    "integrations.lightning",
    "integrations.huggingface",
    "__main__",
    "__init__",
)


def _module_id(path: Path) -> str:
    """A library file's name in ORDER: ``graph`` for gradlab/graph.py, ``causes.chained``, ``causes`` for a package."""
    parts = path.relative_to(ROOT / "gradlab").with_suffix("").parts
    if len(parts) > 1 and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _library_imports(path: Path, source: str | None = None) -> set[str]:
    """The library modules (``graph``, ``causes.chained``, ...) a file of gradlab/ imports, by every kind of import."""
    known = {_module_id(p) for p in LIBRARY}
    found = set()
    for module in _imports(path, source):
        parts = module.split(".")
        if parts[0] != "gradlab":
            continue
        for end in range(len(parts), 1, -1):  # the longest library module the name is in
            name = ".".join(parts[1:end])
            if name in known:
                found.add(name)
                break
    found.discard(_module_id(path))
    return found


def _upward(imports: dict[str, set[str]], order: Sequence[str]) -> list[str]:
    """Each import of a module at or above the importer in ``order``, as ``"low -> high"``."""
    rank = {name: i for i, name in enumerate(order)}
    return sorted(f"{m} -> {d}" for m, deps in imports.items() for d in deps if rank[d] >= rank[m])


def _circle(imports: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules along it, or None."""
    graph = {m: sorted(deps) for m, deps in imports.items()}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


def test_every_library_module_has_its_place_in_the_layers() -> None:
    assert sorted(ORDER) == sorted(_module_id(p) for p in LIBRARY), "add a new module to ORDER, above what it imports"


def test_nothing_imports_upward_not_even_lazily() -> None:
    imports = {_module_id(p): _library_imports(p) for p in LIBRARY}
    assert _upward(imports, ORDER) == []
    assert _circle(imports) is None


@pytest.mark.parametrize(
    "module, source, upward",
    [
        ("session", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .tracker import Tracker", "tracker"),
        ("graph", "def f():\n    from .diagnosis import check_graph", "diagnosis"),
        ("recorder", "def f():\n    from . import graph", "graph"),
        ("writes", "import gradlab.recorder", "recorder"),
    ],
)
def test_the_layer_check_sees_type_only_and_lazy_upward_imports(module: str, source: str, upward: str) -> None:
    """The check above fails for an upward import hidden in a function or under TYPE_CHECKING."""
    imports = {_module_id(p): _library_imports(p) for p in LIBRARY}
    imports[module] = imports[module] | _library_imports(ROOT / "gradlab" / f"{module}.py", source)
    assert f"{module} -> {upward}" in _upward(imports, ORDER)


def test_the_circle_check_finds_a_circle() -> None:
    imports = {_module_id(p): _library_imports(p) for p in LIBRARY}
    assert _circle(imports) is None
    imports["session"] = imports["session"] | {"tracker"}  # tracker -> session -> tracker
    found = _circle(imports)
    assert found is not None and "session" in found and "tracker" in found


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


@pytest.mark.parametrize("path", LIBRARY + COURSE, ids=lambda p: str(p.relative_to(ROOT / "gradlab")))
def test_no_module_is_shadowed_by_a_function_of_its_name(path: Path) -> None:
    package = gradlab.course if path.parent.name == "course" else gradlab
    name = path.stem if package is gradlab.course else _module_id(path)
    if name.startswith("__"):
        return
    assert name.split(".")[0] not in package.__all__, f"{package.__name__}.{name} is both a module and an exported name"
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
