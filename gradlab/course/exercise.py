"""Exercise checks for the notebooks.

:func:`verify` turns a learner's answer into a :class:`Verdict` that displays
one deterministic line, ``✓ ...`` or ``✗ not yet: ...``; it never raises on a
wrong answer, so *Run All* keeps going.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

__all__ = ["Verdict", "verify"]

_UNSET = object()


@dataclass(frozen=True)
class Verdict:
    """The result of :func:`verify`: ``passed`` and the line shown to the learner.

    Displays as that line (``text/plain``) or as a coloured paragraph
    (``text/html``); ``bool(verdict)`` is ``passed``.
    """

    passed: bool
    text: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        color = "#2e7d32" if self.passed else "#c62828"
        return f'<p style="color:{color}"><b>{html.escape(self.text)}</b></p>'


def _as_condition(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.numel() == 1:
        return bool(value.item())
    if type(value).__name__ == "bool_":  # numpy.bool_, without importing numpy
        return bool(value)
    raise TypeError(
        f"verify() without expected= takes a True/False condition, not {type(value).__name__}; "
        "pass the value and what it should be instead, e.g. verify(answer, expected=4, success=..., hint=...)"
    )


def _close(a: float, b: float, tol: float | None) -> bool:
    if tol is None:
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return math.isclose(a, b, rel_tol=0.0, abs_tol=tol)


def _equal(value: object, expected: object, tol: float | None) -> bool:
    """Whether a learner's ``value`` matches ``expected`` (tensors by shape and values)."""
    if isinstance(value, torch.Tensor) or isinstance(expected, torch.Tensor):
        if not (isinstance(value, torch.Tensor) and isinstance(expected, torch.Tensor)):
            tensor: torch.Tensor
            other: object
            if isinstance(value, torch.Tensor):
                tensor, other = value, expected
            else:
                assert isinstance(expected, torch.Tensor)
                tensor, other = expected, value
            if tensor.numel() != 1 or isinstance(other, (str, bytes)) or not isinstance(other, (int, float, bool)):
                return False
            return _equal(tensor.item(), other, tol)
        if value.shape != expected.shape:
            return False
        if value.is_floating_point() or expected.is_floating_point():
            atol = 1e-12 if tol is None else tol
            rtol = 1e-6 if tol is None else 0.0
            return bool(torch.allclose(value.double(), expected.double(), rtol=rtol, atol=atol))
        return bool(torch.equal(value, expected))
    if isinstance(value, bool) or isinstance(expected, bool):
        return type(value) is type(expected) and value == expected
    if isinstance(value, (int, float)) and isinstance(expected, (int, float)):
        if isinstance(value, float) or isinstance(expected, float):
            return _close(float(value), float(expected), tol)
        return value == expected
    if isinstance(value, Mapping) and isinstance(expected, Mapping):
        return value.keys() == expected.keys() and all(_equal(value[k], expected[k], tol) for k in expected)
    if (
        isinstance(value, Sequence)
        and isinstance(expected, Sequence)
        and not isinstance(value, (str, bytes))
        and not isinstance(expected, (str, bytes))
    ):
        return len(value) == len(expected) and all(_equal(a, b, tol) for a, b in zip(value, expected))
    try:
        return bool(value == expected)
    except (TypeError, ValueError, RuntimeError):
        return False


def verify(value: object, expected: object = _UNSET, *, success: str, hint: str, tol: float | None = None) -> Verdict:
    """Check an exercise answer and return a :class:`Verdict` to display.

    Without ``expected``, ``value`` is a condition (``True``/``False``, or a
    one-element bool tensor). With it, ``value`` must equal ``expected``:
    tensors by shape and values, floats within ``tol`` (default: relative
    1e-6), lists and tuples element by element. An answer left as ``...``
    gets ``✗ not yet`` with a reminder to fill it in.

    Example::

        >>> verify(4, expected=4, success="4 nodes lost their buffers.", hint="count network 1's nodes")
        ✓ 4 nodes lost their buffers.
        >>> verify(3, expected=4, success="4 nodes lost their buffers.", hint="count network 1's nodes")
        ✗ not yet: count network 1's nodes
    """
    for label, text in (("success", success), ("hint", hint)):
        if not isinstance(text, str) or not text.strip():
            raise TypeError(f"verify() needs {label}= as a non-empty sentence, got {text!r}")
    if value is Ellipsis:
        return Verdict(False, f"✗ not yet: replace ... with your answer. {hint}")
    if expected is _UNSET:
        passed = _as_condition(value)
    else:
        if tol is not None and not (isinstance(tol, (int, float)) and tol >= 0):
            raise ValueError(f"tol must be a non-negative number, got {tol!r}")
        passed = _equal(value, expected, tol)
    return Verdict(True, f"✓ {success}") if passed else Verdict(False, f"✗ not yet: {hint}")
