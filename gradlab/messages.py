"""PyTorch's autograd error messages: the one place that reads them and writes them.

Reading: :func:`find` recognises every wording we know (torch 0.x to 2.15) in an
exception, its text or a pasted traceback, and returns the parts as a
:class:`Message`. Writing: :func:`stale_message` builds the in-place error exactly
as the installed torch prints it. Under saved-tensor hooks torch no longer checks
versions (NOTE [Saved-tensor hooks and the version check] in ``saved.py``), so
gradlab re-checks and must raise torch's own text; that text is read from torch
itself, once per process, by provoking the error in a tiny graph (:func:`wording`),
never copied from one release.

Example::

    >>> m = find("one of the variables needed for gradient computation has been modified "
    ...          "by an inplace operation: [torch.FloatTensor [10, 1]], which is output 0 of "
    ...          "AsStrided, is at version 2; expected version 1 instead.")
    >>> m.kind, m.shape, m.node, m.expected_version, m.current_version
    ('modified_in_place', (10, 1), 'AsStrided', 1, 2)
"""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from .i18n import _t
from .notices import GradlabError, warn_once

__all__ = [
    "Message",
    "MessageKind",
    "Wording",
    "find",
    "closest",
    "is_autograd_error",
    "is_decoded",
    "stale_message",
    "wording",
    "FREED_HEAD",
]

MessageKind = Literal[
    "graph_freed",
    "modified_in_place",
    "no_grad_fn",
    "leaf_in_place",
    "non_scalar_output",
    "unused_input",
    "numpy_requires_grad",
    "multi_view_in_place",
    "detach_view_in_place",
    "inference_saved",
    "hook_no_grad",
    "anomaly_nan",
    "checkpoint_metadata",
    "ddp_ready_twice",
    "ddp_unfinished_reduction",
    "custom_view_in_place",
]

#: The first words of the "graph freed" error, in every release since 0.3.
FREED_HEAD = "Trying to backward through the graph a second time"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# NOTE [graph freed wordings]
# torch 0.1-0.2: "Trying to backward through the graph second time, but the
#   buffers have already been freed. Please specify retain_variables=True ..."
# torch 0.3-1.x: "... a second time, but the buffers have already been freed.
#   Specify retain_graph=True when calling backward the first time."
# torch 1.x:     "... a second time, but the saved intermediate results have
#   already been freed. Specify retain_graph=True ..."
# torch >= 1.10: "... a second time (or directly access saved tensors after
#   they have already been freed). Saved intermediate values ..."
_GRAPH_FREED = re.compile(
    r"Trying to backward through the graph (?:a )?second time"
    r"(?P<tail>[^.]*(?:\.[^.]*){0,2})",
)

# NOTE [in-place wordings]
# saved_variable.cpp builds the message from parts:
#   "one of the variables needed for gradient computation has been modified
#    by an inplace operation: [" + type + " " + sizes + "]"
#   + (", which is output N of NODE," if the saved tensor has a grad_fn)
#   + " is at version C; expected version E instead."
#   + " Hint: ..." (two hints: anomaly mode off / on).
# type is "torch.FloatTensor", "torch.cuda.FloatTensor" or "MPSFloatType";
# sizes is "[10, 1]" or, for nested tensors, the printed size matrix
# " 2  3\n 4  3\n[ torch.LongTensor{2,2} ]". NODE is "TBackward" (torch 1.x),
# "AsStridedBackward0" (1.10 to 2.12) or "AsStrided" (2.13 onwards).
# torch 0.x printed only the first sentence; 2.4-2.10 print the hint without
# check_nan=False (read from each release's libtorch_cpu.so: NOTE [the family's wordings]).
_IN_PLACE = re.compile(
    r"one of the variables needed for gradient computation has been modified"
    r" by an inplace operation"
    r"(?::\s*\[(?P<type>[A-Za-z][\w.]*)\s+"
    r"(?:\[(?P<sizes>[-\d,\s]*)\]|(?P<nested>[-\d\s]*\[\s*[\w.]+\{\d+,\s*\d+\}\s*\]))\]"
    r"(?:,?\s*which is output (?P<nr>\d+) of (?P<node>[\w:.]+),?)?"
    r"\s*is at version (?P<cur>\d+);\s*expected version (?P<exp>\d+)(?: instead)?\.?)?"
    r"(?P<hint>\s*Hint:\s*(?:enable anomaly detection|the backtrace further above)"
    r"[^\n]*?(?:Good luck!|\)\.|\)))?"
)
_NO_GRAD_FN = re.compile(
    r"element (?P<index>\d+) of (?:tensors|variables) does not require grad"
    r" and does not have a grad_fn"
)
_LEAF_IN_PLACE = re.compile(
    r"a (?P<view>view of a )?leaf Variable that requires grad "
    r"(?:is being|has been) used in an in-place operation"
)


# NOTE [the family's wordings]
# Each pattern below matches the wording of torch 2.13 (provoked here and pinned in
# tests/test_messages.py) and the older wordings we know of (quoted in forums and
# bug trackers from torch 1.x and 2.x), named per group:
# - non_scalar_output: "grad can be implicitly created only for scalar outputs"
#   (complex outputs: "... only for real scalar outputs").
# - unused_input: "One of the differentiated Tensors appears to not have been used
#   in the graph." (up to 2.x) / "The differentiated Tensor at index N appears ..." (2.13).
# - multi_view_in_place: "Output N of UnbindBackward0 is a view and is being modified
#   inplace. This view is the output of a function that returns multiple views." (the
#   node is "SplitBackward0" up to 2.12, "Split" from 2.13 on, like the in-place error).
# - custom_view_in_place: "Output N of BackwardHookFunction is a view and is being modified
#   inplace. This view was created inside a custom Function (or because an input was
#   returned as-is) ..." (the node is the custom Function's class: BackwardHookFunction for
#   a module with a full backward hook). Read in the string literals of 2.13.0 and 2.14.1
#   only (added after the releases below were read); the bug report it was met in
#   (rwightman/efficientdet-pytorch#298, torch 1.x) quotes the same words.
# - anomaly_nan: "Function 'SqrtBackward0' returned nan values in its 0th output."
#   (anomaly mode; "1th" for the second output, torch's own ordinal).
# - ddp_unfinished_reduction: the reducer names the unused parameters' indices
#   ("Parameter indices which did not receive grad for rank 0: 2 3") and, with
#   TORCH_DISTRIBUTED_DEBUG=INFO or DETAIL, their names ("Parameters which did not
#   receive grad for rank 0: aux.weight, aux.bias").
# - ddp_ready_twice: "Expected to mark a variable ready only once. ... Parameter at
#   index 1 with name a.bias has been marked as ready twice." (torch 2.13 printed the
#   name without TORCH_DISTRIBUTED_DEBUG too, with find_unused_parameters=True, and a
#   parameter of the root module as ".scale": read as "scale"; tests/test_ddp.py).
# Verified against every minor release from 2.4 to 2.15 (2.4.1, 2.5.1, 2.6.0, 2.7.1,
# 2.8.0, 2.9.1, 2.10.0, 2.11.0, 2.12.1, 2.13.0, 2.14.1, 2.15.0: the string literals of
# each wheel's libtorch_cpu.so and libtorch_python.so and the Python files that raise
# these messages): every phrase the patterns need is in every one of them. What changed
# is pinned in tests/test_family.py (RELEASE_WORDINGS): unused_input names the index
# from 2.13 on; inference_saved's second sentence is "Please do not use Tensors created
# in inference mode ..." from 2.9 on ("To work around you can make a clone ..." up to
# 2.8); the in-place hint has check_nan=False from 2.11 on (NOTE [in-place wordings]).
_FAMILY: tuple[tuple[MessageKind, re.Pattern[str]], ...] = (
    ("non_scalar_output", re.compile(r"grad can be implicitly created only for (?P<real>real )?scalar outputs")),
    (
        "unused_input",
        re.compile(
            r"(?:One of the differentiated Tensors|The differentiated Tensor at index (?P<index>\d+))"
            r" appears to not have been used in the graph"
        ),
    ),
    ("numpy_requires_grad", re.compile(r"Can't call numpy\(\) on (?:Tensor|Variable) that requires grad")),
    (
        "multi_view_in_place",
        re.compile(
            r"Output (?P<nr>\d+) of (?P<node>[\w:.]+) is a view and is being modified inplace\."
            r" This view is the output of a function that returns multiple views"
        ),
    ),
    (
        "custom_view_in_place",
        re.compile(
            r"Output (?P<nr>\d+) of (?P<node>[\w:.]+) is a view and is being modified inplace\."
            r" This view was created inside a custom Function"
        ),
    ),
    ("detach_view_in_place", re.compile(r"Can't detach views in-place")),
    ("inference_saved", re.compile(r"Inference tensors cannot be saved for backward")),
    ("hook_no_grad", re.compile(r"cannot register a hook on a tensor that doesn't require gradient")),
    (
        "anomaly_nan",
        re.compile(r"Function '(?P<node>[\w:.<>]+)' returned nan values in its (?P<nr>\d+)(?:th|st|nd|rd) output"),
    ),
    (
        "checkpoint_metadata",
        re.compile(r"torch\.utils\.checkpoint: Recomputed values for the following tensors have different metadata"),
    ),
    ("ddp_ready_twice", re.compile(r"Expected to mark a variable ready only once")),
    (
        "ddp_unfinished_reduction",
        re.compile(r"Expected to have finished reduction in the prior iteration before starting a new one"),
    ),
)
_DDP_INDICES = re.compile(r"Parameter indices which did not receive grad for rank (?P<rank>\d+): (?P<indices>[\d ]+)")
_DDP_NAMES = re.compile(r"Parameters which did not receive grad for rank (?P<rank>\d+): (?P<names>[\w.]+(?:, [\w.]+)*)")
_DDP_TWICE = re.compile(
    r"Parameter at index (?P<index>\d+)(?: with name (?P<name>[\w.]+))? has been marked as ready twice"
)
_CHECKPOINT_POSITION = re.compile(r"tensor at position (?P<index>\d+)")

# Looser words per kind: a message that has them but is not matched above is not
# decoded; its closest kind is named (NOTE [never a wrong decoding]).
_NEAR: tuple[tuple[MessageKind, re.Pattern[str]], ...] = (
    ("graph_freed", re.compile(r"backward through the graph", re.I)),
    ("modified_in_place", re.compile(r"modified by an inplace operation|is at version \d+", re.I)),
    ("no_grad_fn", re.compile(r"does not require grad|does not have a grad_fn", re.I)),
    ("leaf_in_place", re.compile(r"leaf Variable", re.I)),
    ("multi_view_in_place", re.compile(r"is a view and (?:is being|its base)|modified inplace", re.I)),
    ("non_scalar_output", re.compile(r"implicitly created only for", re.I)),
    ("unused_input", re.compile(r"not have been used in the graph|allow_unused", re.I)),
    ("numpy_requires_grad", re.compile(r"numpy\(\)", re.I)),
    ("detach_view_in_place", re.compile(r"detach views", re.I)),
    ("inference_saved", re.compile(r"inference tensor|inference mode", re.I)),
    ("hook_no_grad", re.compile(r"register a hook", re.I)),
    ("anomaly_nan", re.compile(r"returned nan values|nan values in", re.I)),
    ("checkpoint_metadata", re.compile(r"torch\.utils\.checkpoint|Recomputed values", re.I)),
    ("ddp_ready_twice", re.compile(r"marked as ready twice|mark a variable ready", re.I)),
    ("ddp_unfinished_reduction", re.compile(r"finished reduction|did not receive grad", re.I)),
)


@dataclass(frozen=True)
class Message:
    """The parts of one autograd error message.

    ``kind`` says which message it is. For ``modified_in_place`` the tensor's
    fields are filled when the message carries them (every release since 1.0);
    ``node`` is the name printed after "which is output N of" (None for a leaf).
    ``text`` is the matched message, whitespace collapsed. For the family's other
    kinds, ``node``/``output_nr`` are the node and output a message names,
    ``index`` the input or parameter index, and for DDP ``rank``, ``parameters``
    (names, printed with TORCH_DISTRIBUTED_DEBUG) and ``parameter_indices``.
    """

    kind: MessageKind
    text: str
    tensor_type: str | None = None
    shape: tuple[int, ...] | None = None
    nested: str | None = None
    output_nr: int | None = None
    node: str | None = None
    current_version: int | None = None
    expected_version: int | None = None
    hint: str = ""
    tail: str = ""
    index: int | None = None
    view: bool = False
    rank: int | None = None
    parameters: tuple[str, ...] = ()
    parameter_indices: tuple[int, ...] = ()

    @property
    def writes(self) -> int | None:
        """How many times the version moved between save and backward."""
        if self.current_version is None or self.expected_version is None:
            return None
        return self.current_version - self.expected_version


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", _ANSI.sub("", text)).strip()


def _texts(error: BaseException | str) -> list[str]:
    """The messages of ``error`` and of the exceptions it was raised from (or the text itself)."""
    if isinstance(error, str):
        return [error]
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(str(current))
        current = current.__cause__ or current.__context__
    return texts


def _in_place(m: re.Match[str]) -> Message:
    sizes = m["sizes"]
    return Message(
        kind="modified_in_place",
        text=m.group(0).strip(),
        tensor_type=m["type"],
        shape=tuple(int(s) for s in re.findall(r"-?\d+", sizes)) if sizes is not None else None,
        nested=m["nested"],
        output_nr=int(m["nr"]) if m["nr"] is not None else None,
        node=m["node"],
        current_version=int(m["cur"]) if m["cur"] is not None else None,
        expected_version=int(m["exp"]) if m["exp"] is not None else None,
        hint=(m["hint"] or "").strip(),
    )


def _family(kind: MessageKind, m: re.Match[str], text: str) -> Message:
    """A message of the family: its matched words and the parts it names."""
    groups = m.groupdict()
    index = groups.get("index")
    nr = groups.get("nr")
    rank: int | None = None
    parameters: tuple[str, ...] = ()
    indices_: tuple[int, ...] = ()
    rest = text[m.start() :]
    if kind == "ddp_unfinished_reduction":
        names = _DDP_NAMES.search(rest)
        indices = _DDP_INDICES.search(rest)
        if names is not None:
            rank, parameters = int(names["rank"]), tuple(names["names"].split(", "))
        if indices is not None:
            rank, indices_ = int(indices["rank"]), tuple(int(i) for i in indices["indices"].split())
    elif kind == "ddp_ready_twice":
        twice = _DDP_TWICE.search(rest)
        if twice is not None:
            index = twice["index"]
            parameters = (twice["name"].lstrip("."),) if twice["name"] else ()  # 2.13: ".scale" at the root
    elif kind == "checkpoint_metadata":
        position = _CHECKPOINT_POSITION.search(rest)
        index = position["index"] if position is not None else None
    return Message(
        kind=kind,
        text=m.group(0),
        node=groups.get("node"),
        output_nr=int(nr) if nr is not None else None,
        index=int(index) if index is not None else None,
        rank=rank,
        parameters=parameters,
        parameter_indices=indices_,
    )


def closest(error: BaseException | str) -> MessageKind | None:
    """The kind whose words ``error`` shares, for a message :func:`find` does not decode (or None).

    Example::

        >>> closest("Output 0 of FooBackward0 is a view and its base has been modified inplace")
        'multi_view_in_place'
    """
    for text in _texts(error):
        text = _normalise(text)
        for kind, pattern in _NEAR:
            if pattern.search(text):
                return kind
    return None


def _find_in(text: str) -> Message | None:
    text = _normalise(text)
    found: list[tuple[int, Message]] = []
    found += [(m.start(), _in_place(m)) for m in _IN_PLACE.finditer(text)]
    found += [
        (m.start(), Message("graph_freed", m.group(0).strip(), tail=m["tail"])) for m in _GRAPH_FREED.finditer(text)
    ]
    found += [(m.start(), Message("no_grad_fn", m.group(0), index=int(m["index"]))) for m in _NO_GRAD_FN.finditer(text)]
    found += [
        (m.start(), Message("leaf_in_place", m.group(0), view=bool(m["view"]))) for m in _LEAF_IN_PLACE.finditer(text)
    ]
    for kind, pattern in _FAMILY:
        found += [(m.start(), _family(kind, m, text)) for m in pattern.finditer(text)]
    if not found:
        return None
    # A pasted traceback may chain several errors; the last one is what was raised.
    return max(found, key=lambda pair: pair[0])[1]


def find(error: BaseException | str) -> Message | None:
    """The autograd error message in ``error`` (an exception, its text, or a traceback), or None.

    For an exception, its own message is read first, then those it was raised from.
    """
    for text in _texts(error):
        message = _find_in(text)
        if message is not None:
            return message
    return None


def is_autograd_error(error: BaseException | str) -> bool:
    """Whether ``error`` is one of the two errors gradlab diagnoses (graph freed, modified in place)."""
    if isinstance(error, BaseException) and not isinstance(error, RuntimeError):
        return False
    text = str(error)
    if FREED_HEAD not in text and "modified by an inplace operation" not in text:
        return False
    m = _find_in(text)
    return m is not None and m.kind in ("graph_freed", "modified_in_place")


def is_decoded(error: BaseException) -> bool:
    """Whether ``error`` is an autograd error of one of gradlab's kinds, raised by torch (a RuntimeError, not gradlab's own).

    Example::

        >>> is_decoded(RuntimeError("grad can be implicitly created only for scalar outputs")), is_decoded(ValueError("x"))
        (True, False)
    """
    if not isinstance(error, RuntimeError) or isinstance(error, GradlabError):
        return False
    return find(error) is not None


# -- writing torch's in-place message --------------------------------------------------------------


@dataclass(frozen=True)
class Wording:
    """How the installed torch words the in-place error, read from torch itself.

    ``main`` has the fields ``{type}``, ``{shape}``, ``{which}``, ``{cur}``, ``{exp}``
    and ends with the hint; ``which`` (the ", which is output N of X," part) has
    ``{nr}`` and ``{node}``. ``strip`` says whether torch shortens a node's
    ``name()`` when it prints it: ``""`` (2.4 to 2.12: ``AsStridedBackward0``)
    or ``"Backward<N>"`` (2.13 on: a trailing ``Backward0`` is dropped and a
    trailing ``Backward<N>`` becomes ``<N>``: ``AsStrided``, ``LeakyRelu1``;
    a custom Function's trailing ``Backward`` is dropped too).
    """

    main: str
    which: str
    strip: str

    def node_name(self, name: str) -> str:
        """A node's ``name()`` as torch prints it in this message."""
        if self.strip:
            return re.sub(r"Backward(\d*)$", lambda m: "" if m[1] in ("", "0") else m[1], name)
        return name


_probe_lock = threading.Lock()


def _provoke(build: str) -> str:
    """The message torch raises for a stale saved tensor in a fresh thread (no hooks there)."""
    import torch

    result: list[str] = []

    def run() -> None:
        a = torch.ones(2, requires_grad=True)
        # ExpBackward0 saves its own result; so does LeakyReluBackward1 (the in-place form).
        b = a.exp() if build == "exp" else torch.nn.functional.leaky_relu(a * 1, 0.1, inplace=True)
        b.add_(1)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.autograd.backward(b.sum())
        except RuntimeError as e:
            result.append(str(e))

    thread = threading.Thread(target=run, name="gradlab-wording-probe")
    thread.start()
    thread.join()
    if not result:
        raise GradlabError("torch did not raise the in-place error for a modified saved tensor")
    return result[0]


_STRIPS = ("", "Backward<N>")


@cache
def inplace_on_view_node(fn: Any, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]) -> str | None:
    """The node torch's in-place message names for the output ``fn(view, *args, **kwargs)`` saved when a later
    write made it stale (NOTE [The output of an in-place op on a view] in saved.py), as torch prints it; None when
    the probe does not end in that message (another call shape, an op that saves no output).

    Read from torch in a fresh thread (no tracker there), once per call shape.
    """
    import torch

    found: list[str] = []

    def run() -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                base = torch.ones(3, 4, requires_grad=True) * 1
                view = base[:, 1:]
                fn(view, *args, **dict(kwargs))
                view.add_(1)
                torch.autograd.backward(base.sum())
        except Exception as e:  # the message, or any other failure of the probe (then: not known)
            m = re.search(r", which is output \d+ of (.+?), is at version", str(e))
            if m is not None:
                found.append(m[1])

    thread = threading.Thread(target=run, name="gradlab-inplace-view-probe")
    thread.start()
    thread.join()
    return found[0] if found else None


# NOTE [Fail open]
# A torch release may word the in-place error differently, or the probe may fail
# for a reason of its own. Then gradlab must not refuse to run the user's code:
# wording() warns once and answers with the wording of the last torch gradlab
# knows (2.13), so a stale saved tensor is still reported, in those words, and
# track() and `gradlab run` go on.
_KNOWN = Wording(
    main="one of the variables needed for gradient computation has been modified by an inplace operation: "
    "[{type} [{shape}]]{which} is at version {cur}; expected version {exp} instead. Hint: enable anomaly "
    "detection to find the operation that failed to compute its gradient, with "
    "torch.autograd.set_detect_anomaly(True, check_nan=False).",
    which=", which is output {nr} of {node},",
    strip="Backward<N>",
)


@cache
def wording(anomaly: bool) -> Wording:
    """The in-place message's wording in the installed torch, with anomaly mode on or off.

    Read once per process and anomaly state, by provoking the error in a
    fresh thread (saved-tensor hooks are per thread, so none are active there).
    ``anomaly`` must match the current state (torch's hint depends on it). When
    the message cannot be read, warns once and returns the wording of torch 2.13
    (NOTE [Fail open]).
    """
    try:
        return _read_wording()
    except Exception as e:
        import torch

        warn_once(
            "wording",
            _t(
                "gradlab cannot read how this torch ({version}) words the in-place error ({error}); it reports a "
                "modified saved tensor in the words of torch 2.13 and may not decode some of torch's errors. "
                "Your code runs as usual.",
                version=torch.__version__,
                error=e,
            ),
            stacklevel=4,
        )
        return _KNOWN


def _read_wording() -> Wording:
    with _probe_lock:
        exp_text = _provoke("exp")
        leaky_text = _provoke("leaky")
    m = _find_in(exp_text)
    leaky = _find_in(leaky_text)
    if m is None or m.node is None or m.tensor_type is None or leaky is None or leaky.node is None:
        raise GradlabError(f"gradlab cannot read torch's in-place message: {exp_text!r}")
    strip = next(
        (
            s
            for s in _STRIPS
            if Wording("", "", s).node_name("ExpBackward0") == m.node
            and Wording("", "", s).node_name("LeakyReluBackward1") == leaky.node
        ),
        "",
    )
    raw = exp_text.strip()
    # Replace each variable part of the probe's text with a field, keeping torch's own words around them.
    which_match = re.search(r", which is output 0 of " + re.escape(m.node) + ",", raw)
    if which_match is None:
        raise GradlabError(f"gradlab cannot read torch's in-place message: {exp_text!r}")
    which = which_match.group(0).replace("output 0", "output {nr}").replace(m.node, "{node}")
    main = raw[: which_match.start()] + "{which}" + raw[which_match.end() :]
    main = main.replace("{", "{{").replace("}", "}}")
    main = main.replace("{{which}}", "{which}")
    main = main.replace(f"[{m.tensor_type} [2]]", "[{type} [{shape}]]", 1)
    main = main.replace(f"is at version {m.current_version}", "is at version {cur}", 1)
    main = main.replace(f"expected version {m.expected_version}", "expected version {exp}", 1)
    if "{type}" not in main or "{cur}" not in main or "{exp}" not in main:
        raise GradlabError(f"gradlab cannot read torch's in-place message: {exp_text!r}")
    return Wording(main=main, which=which, strip=strip)


def stale_message(
    tensor_type: str, shape: tuple[int, ...], node: str | None, output_nr: int, current: int, expected: int
) -> str:
    """The in-place error exactly as the installed torch words it.

    ``node`` is the ``name()`` of the node torch would print (the saved tensor's
    grad_fn, or the saving node for an op's own output), None for a leaf.
    """
    import torch

    w = wording(torch.is_anomaly_enabled())
    which = w.which.format(nr=output_nr, node=w.node_name(node)) if node else ""
    return w.main.format(
        type=tensor_type, shape=", ".join(str(s) for s in shape), which=which, cur=current, exp=expected
    )
