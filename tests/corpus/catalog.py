"""The corpus's cases: each folder of ``cases/`` with a ``case.toml``, a ``broken.py`` and its ``intended*.py``.

A case's intent names, for each optimizer (by its variable in the script), the
losses meant to train it and the modules whose parameters it holds. From it,
:meth:`Case.expected_trained` is the "what trained what" table an intended run
must measure: each loss trains the modules of the optimizers it is meant for.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import oracle

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"


@dataclass(frozen=True)
class Case:
    """One failing script, what its author meant, and the readings written as ``intended*.py``."""

    name: str
    folder: Path
    description: str
    error: str  # a key of oracle.ERROR_KINDS
    intent: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]  # optimizer -> (losses, modules)
    variants: dict[str, str]  # "intended", "intended_x" -> which reading it is
    trains: dict[str, tuple[str, ...]] | None = None  # loss -> modules, where one optimizer's losses differ

    @property
    def broken(self) -> Path:
        return self.folder / "broken.py"

    def variant_path(self, variant: str) -> Path:
        return self.folder / f"{variant}.py"

    def expected_trained(self) -> dict[str, set[str]]:
        """For each loss, the modules it trains: ``[trains]`` when the case has one (two heads under one optimizer,
        each loss training its own head and the shared trunk), else every module of each optimizer it feeds."""
        if self.trains is not None:
            return {loss: set(modules) for loss, modules in self.trains.items()}
        table: dict[str, set[str]] = {}
        for losses, modules in self.intent.values():
            for loss in losses:
                table.setdefault(loss, set()).update(modules)
        return table

    def expected_modules(self) -> dict[str, set[str]]:
        return {opt: set(modules) for opt, (_, modules) in self.intent.items()}


def load(folder: Path) -> Case:
    """The case in ``folder`` (read from its case.toml; its variants are its intended*.py files)."""
    data = tomllib.loads((folder / "case.toml").read_text())
    if data["error"] not in oracle.ERROR_KINDS:
        raise ValueError(f"{folder.name}: error must be one of {sorted(oracle.ERROR_KINDS)}, not {data['error']!r}")
    described = data.get("variants", {})
    variants = {}
    for path in sorted(folder.glob("intended*.py")):
        if path.stem != "intended" and path.stem not in described:
            raise ValueError(f"{folder.name}: say in case.toml [variants] which reading {path.name} is")
        variants[path.stem] = described.get(path.stem, "what the author meant")
    if "intended" not in variants:
        raise ValueError(f"{folder.name}: a case needs an intended.py")
    intent = {opt: (tuple(v["losses"]), tuple(v["modules"])) for opt, v in data["intent"].items()}
    trains = {loss: tuple(m) for loss, m in data["trains"].items()} if "trains" in data else None
    return Case(folder.name, folder, data["description"], data["error"], intent, variants, trains)


def all_cases(root: Path = CASES) -> list[Case]:
    """Every case under ``root`` (the corpus's ``cases/`` by default; a blind batch's folder), by name."""
    return [load(d) for d in sorted(root.iterdir()) if (d / "case.toml").is_file()]
