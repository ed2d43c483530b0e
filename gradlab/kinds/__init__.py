"""What each autograd error message says, why it happens, and its fixes: one module per kind, and :func:`explain`.

:func:`explain` reads the text of a PyTorch autograd error (an exception object,
its message, or a whole pasted traceback) and returns an
:class:`~gradlab.explanation.Explanation`: what kind of error it is, what each
part of the message means, the likely causes ranked from most to least common,
and the fixes that work. It only reads text (:mod:`gradlab.messages`), so it
decodes messages from any torch release, including tracebacks pasted from a
machine you cannot run. Each kind of :data:`gradlab.codes.CODES` has its
builder here.

Example::

    >>> e = explain("RuntimeError: one of the variables needed for gradient "
    ...             "computation has been modified by an inplace operation: "
    ...             "[torch.FloatTensor [10, 1]], which is output 0 of AsStrided, "
    ...             "is at version 2; expected version 1 instead.")
    >>> e.kind, e.shape, e.output_of, e.expected_version, e.current_version
    ('modified_in_place', (10, 1), 'AsStrided', 1, 2)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from .. import messages
from ..claims import failure_claims
from ..codes import by_code
from ..evidence import Failure
from ..explanation import Explanation, Span
from ..i18n import T, _t
from ..messages import Message
from ..notices import GradlabError, locating_failed
from . import custom_view, graph_freed, inference_saved, leaf_in_place, modified_in_place, no_grad_fn
from .at_line import LOCATORS as _AT_LINE
from .family import BUILDERS as _FAMILY
from .family import at_checkpoint
from .no_grad_fn import located_cut, no_graph

__all__ = ["explain", "explain_code", "explain_message", "no_graph", "located_cut", "locate", "views_of_leaf"]


#: The builder of each kind's explanation, by kind (the kinds of gradlab.codes.CODES).
_BUILDERS: dict[str, Callable[[Message], Explanation]] = {
    "graph_freed": graph_freed.explain,
    "modified_in_place": modified_in_place.explain,
    "no_grad_fn": no_grad_fn.explain,
    "leaf_in_place": leaf_in_place.explain,
    **_FAMILY,
}


# The last "Name: message" line of a pasted traceback, as python prints it.
_LAST_ERROR = re.compile(r"^([A-Za-z_][\w.]*): ", re.M)


def _is_gradlab_error(error: BaseException | str) -> bool:
    """Whether a pasted traceback ends in gradlab's own :class:`~gradlab.GradlabError`."""
    if not isinstance(error, str):
        return False
    found = _LAST_ERROR.findall(error)
    return bool(found) and found[-1].rsplit(".", 1)[-1] == "GradlabError"


def explain(error: BaseException | str) -> Explanation:
    """Explain an autograd error in plain language.

    ``error`` is an exception, its message, or a whole pasted traceback (hint
    lines, wrapped lines and terminal colours are fine). The messages of any
    torch release are recognised; for anything else the result has
    ``kind == "not_autograd"``.

    Example::

        >>> import torch
        >>> x = torch.ones(3, requires_grad=True)
        >>> y = torch.sigmoid(x)
        >>> y.mul_(2)  # sigmoid saved y for its backward
        tensor([1.4621, 1.4621, 1.4621], grad_fn=<MulBackward0>)
        >>> try:
        ...     y.sum().backward()
        ... except RuntimeError as err:
        ...     e = explain(err)
        >>> e.kind, e.shape, e.expected_version, e.current_version
        ('modified_in_place', (3,), 0, 1)
    """
    if not isinstance(error, (BaseException, str)):
        raise TypeError(
            f"explain() got {type(error).__name__}; pass an exception or the text of its"
            " message (a str, for example a pasted traceback)."
        )
    if isinstance(error, GradlabError) or _is_gradlab_error(error):  # gradlab's own, even if it quotes torch
        return Explanation(
            kind="not_autograd",
            summary=T(
                "This is an error of gradlab itself, not of your code's autograd graph; please report it"
                " with your torch version."
            ),
            message=" ".join(str(error).split())[:500] or None,
        )
    m = messages.find(error)
    if m is not None:
        explanation = _BUILDERS[m.kind](m)
        if m.kind == "checkpoint_metadata" and isinstance(error, BaseException):
            return at_checkpoint(error, explanation)
        return explanation
    text = " ".join(str(error).split())
    # NOTE [never a wrong decoding]: a message that only shares words with a kind is not
    # decoded as that kind; the kind is named as the closest, for the reader to judge.
    return Explanation(
        kind="not_autograd",
        summary=T(
            "This is not one of the autograd errors gradlab decodes (python -m gradlab explain --codes lists them)."
        ),
        message=text[:500] or None,
        closest=messages.closest(error),
    )


def explain_message(message: Message) -> Explanation:
    """The explanation of a message already read by :func:`gradlab.messages.find` (its parts may be completed).

    ``gradlab run`` fills in what the message leaves out, e.g. the names of the
    parameters DDP gives only by index.
    """
    return _BUILDERS[message.kind](message)


def explain_code(code: str) -> str:
    """The long form of an error code (``python -m gradlab explain GL0001``, like ``rustc --explain``).

    What torch's message says part by part, the causes and every fix with what it
    trains, decoded from the code's example message; ValueError for an unknown code.

    Example::

        >>> print(explain_code("GL0005"))  # doctest: +ELLIPSIS
        error[GL0005 non-scalar output]
        ...
    """
    entry = by_code(code)
    explanation = explain(entry.example)
    return "\n".join([explanation.details(), "", _t("Example of torch's message: {text}", text=entry.example)])


# NOTE [Every kind diagnosed]
# Under a tracker every autograd error gets a diagnosis, wherever torch raised it: a
# backward (the graph's problems, or a tensor without a graph), an in-place write it
# refused (a leaf, one of several views), a forward that saved an inference tensor,
# ``.numpy()``. Each kind that can be located has a ``locate(failure)`` here: the
# user's lines that explain it, and fixes as edits of those lines, judged like every
# other fix. A kind without one is located at the user's line that raised it.
def _no_graph(failure: Failure) -> Explanation:
    """A tensor without a graph: cut by inference mode under ``enable_grad()`` (NOTE [Inference mode under
    enable_grad] in :mod:`gradlab.kinds.inference_saved`), else located at the cut on its path."""
    found = inference_saved.under_inference(no_grad_fn.explain(failure.message), failure)
    return found if found is not None else no_grad_fn.locate(failure)


_LOCATORS: dict[str, Callable[[Failure], Explanation]] = {
    "no_grad_fn": _no_graph,
    "leaf_in_place": leaf_in_place.locate,
    "inference_saved": inference_saved.locate,
    "custom_view_in_place": custom_view.locate,
    "graph_freed": graph_freed.locate,  # NOTE [Saved tensors read after the backward]
    **_AT_LINE,
}


def locate(failure: Failure) -> Explanation:
    """The explanation of ``failure``, located at the user's lines, with fixes that edit them."""
    locator = _LOCATORS.get(failure.kind)
    try:
        explanation = locator(failure) if locator is not None else explain_message(failure.message)
    except Exception as err:  # a bug in reading the user's lines: the message's explanation, never no diagnosis
        locating_failed(err)
        explanation = explain_message(failure.message)
    if explanation.located_spans() or failure.location is None:
        return explanation
    return replace(explanation, spans=(Span(failure.location, T("raised here")),))


def views_of_leaf(failure: Failure, explanation: Explanation, split: object) -> Explanation:
    """A refused write to one of several views of ``split``: its fixes claim what the loop's losses train now;
    when ``split`` is a leaf that requires grad (a parameter's ``chunk()`` written to at its init), the write
    under ``torch.no_grad()`` comes first."""
    import torch

    from ..context import Context
    from ..judge import judged

    # the out-of-place write and the cloned views keep the training: they claim what the loop's losses train now
    kept = failure_claims(failure)
    explanation = replace(explanation, fixes=tuple(replace(f, claims=f.claims or kept) for f in explanation.fixes))
    if not (isinstance(split, torch.Tensor) and split.is_leaf and split.requires_grad):
        return explanation
    if _in_computation(failure):  # a forward's write (a learned initial state split per layer): no update
        return explanation
    wrap = leaf_in_place.no_grad_fix(failure, None, True)
    if wrap is None:
        return explanation
    fixes = judged([wrap], Context(site=failure.site))
    return replace(explanation, fixes=(*fixes, *explanation.fixes))


def _in_computation(failure: Failure) -> bool:
    """The failing write is in a function that returns a value (a forward): its views are steps of the computation,
    not a parameter's initialisation."""
    from ..source import function_of, returns_value

    site, loc = failure.site, failure.location
    tree = site.tree() if site is not None else None
    if tree is None or loc is None or site is None or loc.filename != site.filename:
        return False
    fn = function_of(tree, loc.lineno)
    return fn is not None and returns_value(fn)
