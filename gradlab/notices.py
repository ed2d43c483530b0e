"""The warnings gradlab gives, as classes users can filter.

Example::

    >>> import warnings
    >>> import gradlab
    >>> warnings.filterwarnings("ignore", category=gradlab.UnusedStepWarning)
"""

from __future__ import annotations

__all__ = ["GradlabWarning", "UnusedStepWarning"]


class GradlabWarning(UserWarning):
    """Base class of gradlab's warnings; also: a torch feature gradlab relies on is missing."""


class UnusedStepWarning(GradlabWarning):
    """Inside :func:`gradlab.track`: an ``optimizer.step()`` updated parameters whose
    gradient is ``None`` or all zero, so the step cannot train them.

    Reported once per parameter and tracker. Turn it off with
    ``warnings.filterwarnings("ignore", category=gradlab.UnusedStepWarning)`` or
    ``gradlab.track(warn=False)``; the tracker keeps the notes in ``tracker.notes``.
    """
