"""The warnings gradlab gives, as classes users can filter.

Example::

    >>> import warnings
    >>> import gradlab
    >>> warnings.filterwarnings("ignore", category=gradlab.UnusedStepWarning)
"""

from __future__ import annotations

import platform
import sys
import warnings

__all__ = [
    "GradlabWarning",
    "SilentWriteWarning",
    "UnusedStepWarning",
    "GradlabError",
    "warn_once",
    "diagnosis_failed",
    "locating_failed",
    "PREFIX",
    "prefixed",
]

#: What marks gradlab's own words where they follow other text (a traceback, a warning, a terminal).
PREFIX = "gradlab: "


def prefixed(text: str) -> str:
    """``text`` marked as gradlab's: ``gradlab: `` before it. The one place the mark is added.

    Example::

        >>> prefixed("error[GL0001 graph freed]")
        'gradlab: error[GL0001 graph freed]'
    """
    return PREFIX + text


class GradlabWarning(UserWarning):
    """Base class of gradlab's warnings; also: a torch feature gradlab relies on is missing."""


class UnusedStepWarning(GradlabWarning):
    """Inside :func:`gradlab.track`: an ``optimizer.step()`` updated parameters whose
    gradient is ``None`` or all zero, so the step's gradient cannot train them (momentum may still move them).

    Reported once per parameter and tracker. Turn it off with
    ``warnings.filterwarnings("ignore", category=gradlab.UnusedStepWarning)`` or
    ``gradlab.track(warn=False)``; the tracker keeps the notes in ``tracker.notes``.
    """


class SilentWriteWarning(GradlabWarning):
    """Inside :func:`gradlab.track`: a backward used a saved tensor that changed after it was
    saved, through a write that did not move its version counter, so PyTorch raised nothing.

    Such writes come from fused optimizers (``Adam(fused=True)``), writes through
    ``.data``, ``torch.autograd._unsafe_preserve_version_counter``, and (seen with
    ``track(verify_saved=True)``) custom kernels. The backward's gradients use the new
    values. The warning carries gradlab's note (tensor, where it was saved, the write,
    the fixes); ``track(strict=True)`` raises PyTorch's in-place error instead. The
    warning only observes: training runs exactly as without gradlab.
    """


class GradlabError(RuntimeError):
    """An error of gradlab itself (a bug, or a torch it cannot read), never one of the user's code.

    :func:`gradlab.explain` does not decode it as an autograd error, even when
    its message quotes torch's.
    """


_warned: set[str] = set()


def warn_once(key: str, message: str, category: type[Warning] = GradlabWarning, stacklevel: int = 3) -> None:
    """Warn ``message`` the first time ``key`` comes up in this process; later calls do nothing."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, category, stacklevel=stacklevel)


def locating_failed(error: BaseException) -> None:
    """Say once per kind of ``error`` that gradlab could not find the user's lines for a failure: the note then
    carries the message's own explanation, not located (NOTE [Every kind diagnosed] in :mod:`gradlab.kinds`)."""
    from .i18n import _t

    torch = sys.modules.get("torch")
    warn_once(
        f"locating failed: {type(error).__name__}",
        _t(
            "gradlab could not read the lines behind this failure ({kind}: {detail}) on Python {python} with torch "
            "{torch}: its note explains torch's message without them. Please report it with these versions.",
            kind=type(error).__name__,
            detail=str(error)[:200],
            python=platform.python_version(),
            torch=getattr(torch, "__version__", "?"),
        ),
        stacklevel=5,
    )


def diagnosis_failed(error: BaseException) -> None:
    """Say once per kind of ``error`` that gradlab could not diagnose a failing backward.

    The user's own error is raised unchanged (without gradlab's note); this warning
    (:class:`GradlabWarning`) says why the note is missing instead of dropping it
    silently, e.g. when this Python or torch lacks something gradlab reads.
    """
    from .i18n import _t

    kind = type(error).__name__
    torch = sys.modules.get("torch")
    warn_once(
        f"diagnosis failed: {kind}",
        _t(
            "gradlab could not diagnose this failure ({kind}: {detail}) on Python {python} with torch {torch}: "
            "the error is raised as it is, without gradlab's note. Please report it with these versions.",
            kind=kind,
            detail=str(error)[:200],
            python=platform.python_version(),
            torch=getattr(torch, "__version__", "?"),
        ),
        stacklevel=5,
    )
