"""Compare a freshly executed cell's outputs with the ones stored in the notebook, as nbval does.

The load test runs notebook 01 in every learner's server and must decide whether each
run "completed with the expected outputs". The expected outputs are the ones stored in
the notebook the learner pulled, and the comparison follows ``make test``'s nbval
(nbval 0.11 ``IPyNbCell.compare_outputs``) with the project's sanitize rules
(``tests/nbval_sanitize.cfg``):

- stream outputs of one name are joined and ``\\r`` overwrites applied;
- each output is flattened into keys: ``stdout``/``stderr`` for streams, each MIME type
  of ``data`` for results and displays, ``ename``/``evalue`` for errors;
- ``metadata``, ``traceback``, ``execution_count``, ``output_type``, ``name``, PNG and
  JPEG images and widget views are not compared (nbval's defaults without nbdime);
- every remaining string is sanitized with the same rules before comparing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["SKIPPED", "comparable", "differences", "read_rules"]

SKIPPED = frozenset(
    {
        "metadata",
        "traceback",
        "prompt_number",
        "output_type",
        "name",
        "execution_count",
        "application/vnd.jupyter.widget-view+json",
        "image/png",
        "image/jpeg",
    }
)
_CARRIAGE_RETURN = re.compile(r"^.*\r(?=[^\n])", re.MULTILINE)

Rules = list[tuple[str, str]]


def read_rules(path: Path) -> Rules:
    """The ``regex:``/``replace:`` pairs of a sanitize file, in file order (nbval's parser)."""
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)


def _sanitize(value: Any, rules: Rules) -> Any:
    if not isinstance(value, str):
        return value
    for regex, replace in rules:
        value = re.sub(regex, replace, value)
    return value


def _text(value: Any) -> Any:
    """Notebook files may store multi-line strings as lists of lines."""
    return "".join(value) if isinstance(value, list) else value


def comparable(outputs: list[dict[str, Any]], rules: Rules) -> dict[str, list[Any]]:
    """``{key: [sanitized values in order]}`` of one cell's outputs, the way nbval compares them.

    Example::

        >>> comparable([{"output_type": "stream", "name": "stdout", "text": "a 0x7f3a2c1d5e80\\n"},
        ...             {"output_type": "stream", "name": "stdout", "text": "b\\n"}],
        ...            [("0x[0-9a-fA-F]{6,}", "<address>")])
        {'stdout': ['a <address>\\nb\\n']}
    """
    streams: dict[str, str] = {}
    merged: list[dict[str, Any]] = []
    for output in outputs:
        if output.get("output_type") == "stream":
            name = output.get("name", "stdout")
            if name not in streams:
                merged.append({"output_type": "stream", "name": name})
                streams[name] = ""
            streams[name] += str(_text(output.get("text", "")))
        else:
            merged.append(output)
    flat: dict[str, list[Any]] = defaultdict(list)
    for output in merged:
        if output.get("output_type") == "stream":
            # nbval 0.11 also has a backspace rule, but its loop never runs (it starts with
            # equal lengths), so only carriage-return overwrites take effect.
            text = _CARRIAGE_RETURN.sub("", streams[output["name"]])
            flat[output["name"]].append(_sanitize(text, rules))
            continue
        for key, value in output.items():
            if key in SKIPPED:
                continue
            if key == "data":
                for mime, content in value.items():
                    if mime not in SKIPPED:
                        flat[mime].append(_sanitize(_text(content), rules))
            else:
                flat[key].append(_sanitize(value, rules))
    return dict(flat)


def differences(stored: list[dict[str, Any]], fresh: list[dict[str, Any]], rules: Rules) -> list[str]:
    """What differs between a cell's stored and fresh outputs; empty when nbval would pass the cell."""
    want, got = comparable(stored, rules), comparable(fresh, rules)
    problems = []
    if missing := sorted(want.keys() - got.keys()):
        problems.append(f"missing outputs: {missing}")
    if extra := sorted(got.keys() - want.keys()):
        problems.append(f"unexpected outputs: {extra}")
    for key in sorted(want.keys() & got.keys()):
        if len(want[key]) != len(got[key]):
            problems.append(f"{key}: {len(got[key])} outputs instead of {len(want[key])}")
        else:
            for expected, actual in zip(want[key], got[key]):
                if expected != actual:
                    problems.append(f"{key}: expected {_short(expected)}, got {_short(actual)}")
                    break
    return problems


def _short(value: Any, width: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
