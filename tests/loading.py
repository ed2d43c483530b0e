"""Loading a script of the repository (``tools/``, ``benchmarks/``, ``workshop/``) as a module, written once.

Those scripts are not in a package; a test imports one from its file. The module
is registered in ``sys.modules`` under ``name`` before it runs, because a
dataclass looks its module up there by name. With ``monkeypatch`` the
registration is undone when the test ends; without, it stays for the session
(for scripts a test file loads once, at import).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def load_module(path: Path, name: str, monkeypatch: pytest.MonkeyPatch | None = None) -> ModuleType:
    """The script at ``path`` run as the module ``name`` (registered in ``sys.modules`` first)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"{path} is not a Python file"
    module = importlib.util.module_from_spec(spec)
    if monkeypatch is not None:
        monkeypatch.setitem(sys.modules, name, module)
    else:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
