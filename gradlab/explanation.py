"""Explain an autograd error message in plain language.

``explain`` reads the text of a PyTorch autograd error (an exception object,
its message, or a whole pasted traceback) and returns an ``Explanation``: what
kind of error it is, what each part of the message means, the likely causes
ranked from most to least common, and the fixes that work.

It only reads text, with regular expressions, so it decodes messages from any
torch release, including tracebacks pasted from a machine you cannot run.

Example::

    >>> from gradlab import explain
    >>> e = explain("RuntimeError: one of the variables needed for gradient "
    ...             "computation has been modified by an inplace operation: "
    ...             "[torch.FloatTensor [10, 1]], which is output 0 of AsStrided, "
    ...             "is at version 2; expected version 1 instead.")
    >>> e.kind, e.shape, e.output_of, e.expected_version, e.current_version
    ('modified_in_place', (10, 1), 'AsStrided', 1, 2)
"""

from __future__ import annotations

import html
import linecache
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch

from . import messages
from .advice import Fix, fixes_for, locating_fix, message_fixes, rewrite_in_place
from .codes import by_code, code_for
from .edits import Edit, check_edits
from .i18n import _, _t, ngettext_
from .location import Location
from .messages import Message
from .notices import GradlabError

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["Explanation", "explain", "explain_code", "explain_message", "no_graph", "located_cut", "KINDS"]

#: Every value ``Explanation.kind`` can take: the kinds of gradlab.codes.CODES, then "not_autograd".
KINDS = (
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
    "ddp_unfinished_reduction",
    "ddp_ready_twice",
    "not_autograd",
)


@dataclass(frozen=True)
class Explanation:
    """What an autograd error message says, why it happens, and how to fix it.

    ``kind`` is one of ``KINDS`` and ``code`` its stable code (``GL0002``; None
    for ``"not_autograd"``, whose ``closest`` names the kind whose words the
    message shares, if any). The tensor fields (``dtype`` to
    ``expected_version``) are filled for ``"modified_in_place"`` messages
    that carry them and are ``None`` otherwise; ``output_of``/``output_nr`` also
    for the messages that name a node (multi-view in place, nan in backward);
    ``parameters`` are the parameters a DDP message names, and ``why`` why DDP's
    backward did not reach them, read from the model and the step's graph
    (:func:`gradlab.ddp.explain_ddp`, under ``gradlab run``).

    Example::

        >>> e = explain("Trying to backward through the graph a second time")
        >>> e.kind
        'graph_freed'
        >>> print(e.details())  # doctest: +ELLIPSIS
        gradlab: error[GL0001 graph freed]
        ...
    """

    kind: str
    summary: str
    message: str | None = None
    torch_wording: str | None = None
    dtype: str | None = None
    tensor_type: str | None = None
    device: str | None = None
    shape: tuple[int, ...] | None = None
    nested_shapes: tuple[tuple[int, ...], ...] | None = None
    output_of: str | None = None
    output_nr: int | None = None
    current_version: int | None = None
    expected_version: int | None = None
    anomaly_mode: bool | None = None
    meaning: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    parameters: tuple[str, ...] = ()
    closest: str | None = None
    cut: str | None = None
    cut_at: Location | None = None
    cut_exact: bool = False
    views_op: str | None = None
    views_at: Location | None = None
    write_op: str | None = None
    write_at: Location | None = None
    why: tuple[str, ...] = ()
    checkpointed: str | None = None
    checkpointed_at: Location | None = None

    def located(self, cut: str, where: Location, exact: bool) -> Explanation:
        """This explanation located at the line that cut the graph (``cut`` is ``.item()``, ``.detach()``, ...).

        ``exact`` says that the cut made the very tensor backward was called on; otherwise it
        is the last cut gradlab saw before the backward.
        """
        causes = tuple(c for c in self.causes if _cut_word(cut) in c) + tuple(
            c for c in self.causes if _cut_word(cut) not in c
        )
        return replace(self, cut=cut, cut_at=where, cut_exact=exact, causes=causes)

    def at_views(
        self, op: str, made: Location, output: int | None, write_op: str, write: Location | None
    ) -> Explanation:
        """This multi-view explanation located: ``op`` (``.split()``) made the views at ``made``; ``write_op`` wrote.

        ``output`` is the index of the view written to (None when the write went to a view
        of one of them). The fixes then name the user's own lines.
        """
        nr = output if output is not None else self.output_nr
        located = replace(self, views_op=op, views_at=made, write_op=write_op, write_at=write, output_nr=nr)
        return replace(located, fixes=_view_fixes(located) or self.fixes)

    def _cut_lines(self) -> list[str]:
        lines: list[str] = []
        if self.cut is not None and self.cut_at is not None:
            if self.cut_exact:
                said = _t("cut: {cut} here made the tensor backward was called on, without a graph", cut=self.cut)
            else:
                said = _t(
                    "cut: {cut} here is the last place gradlab saw the graph cut before this backward", cut=self.cut
                )
            lines += _quoted(self.cut_at, said)
        if self.views_op is not None and self.views_at is not None:
            lines += _quoted(
                self.views_at,
                _t("views: {op} here returned several views of one tensor", op=self.views_op)
                + (_t("; the write went to output {nr}", nr=self.output_nr) if self.output_nr is not None else ""),
            )
        if self.checkpointed is not None and self.checkpointed_at is not None:
            lines += _quoted(
                self.checkpointed_at,
                _t("checkpointed: {function}, run again during backward", function=self.checkpointed),
            )
            lines.append(
                "   = "
                + _(
                    "which op saved it: torch prints every op of both runs with its line inside"
                    " `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):`"
                )
            )
        if self.write_op is not None and self.write_at is not None:
            lines += _quoted(
                self.write_at, _t("write: {op} here wrote in place to that view", op=_op_name(self.write_op))
            )
        return lines

    @property
    def code(self) -> str | None:
        """The kind's stable code (``GL0001`` ...; ``python -m gradlab explain CODE``), None if not decoded."""
        entry = code_for(self.kind)
        return entry.code if entry is not None else None

    def _header(self) -> str:
        entry = code_for(self.kind)
        return "gradlab: " + (entry.header() if entry is not None else _("not decoded"))

    @property
    def writes_since_saved(self) -> int | None:
        """How many in-place writes happened between save and backward."""
        if self.current_version is None or self.expected_version is None:
            return None
        return self.current_version - self.expected_version

    def __str__(self) -> str:
        lines = [_t("{header}: {what}", header=self._header(), what=self.summary), *self._cut_lines()]
        lines += ["   = " + _t("why: {reason}", reason=reason) for reason in self.why]
        if self.closest is not None:
            lines.append("   = " + _t("closest known kind: {title}", title=_closest_title(self.closest)))
        if self.causes:
            lines.append("   = " + _t("likely cause: {cause}", cause=self.causes[0]))
        if self.fixes:
            fix = self.fixes[0]
            lines.append(_t("help: {fix}", fix=fix.lines()[0]))
            if fix.code:
                lines += [f"   |     {line}" for line in fix.code.splitlines()]
            lines.append("   = " + _t("trains: {what}", what=fix.trains))
        if len(self.fixes) > 1 or self.meaning:
            lines.append("   = " + _("more: what each part of the message means, other causes and fixes: .details()"))
        return "\n".join(lines)

    def details(self) -> str:
        """Everything: what each part of the message means, the causes, every fix with what it trains."""
        lines = [self._header(), self.summary, *self._cut_lines()]
        lines += [_t("why: {reason}", reason=reason) for reason in self.why]
        if self.closest is not None:
            lines.append(_t("closest known kind: {title}", title=_closest_title(self.closest)))
        if self.torch_wording:
            lines.append(_t("Wording: {wording}", wording=self.torch_wording))
        if self.meaning:
            lines.append(_("What the message says:"))
            lines += [f"  - {s}" for s in self.meaning]
        if self.causes:
            lines.append(_("Likely causes (most likely first):"))
            lines += [f"  {i}. {s}" for i, s in enumerate(self.causes, 1)]
        if self.fixes:
            lines.append(_("Fixes, by what you want to train:"))
            for i, fix in enumerate(self.fixes, 1):
                fix_lines = fix.lines()
                lines.append(f"  {i}. {fix_lines[0]}")
                lines += [f"     {line}" for line in fix_lines[1:]]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = [
            '<div class="gradlab-explanation">',
            f"<p><b>{esc(self._header().removeprefix('gradlab: '))}</b>: {esc(self.summary)}</p>",
        ]
        if self.torch_wording:
            parts.append(f"<p><i>{esc(_t('Wording: {wording}', wording=self.torch_wording))}</i></p>")
        for title, items, tag in (
            (_("What the message says:"), self.meaning, "ul"),
            (_("Likely causes (most likely first):"), self.causes, "ol"),
            (_("Fixes, by what you want to train:"), tuple(" ".join(f.lines()) for f in self.fixes), "ol"),
        ):
            if items:
                rows = "".join(f"<li>{esc(s)}</li>" for s in items)
                parts.append(f"<p>{esc(title)}</p><{tag}>{rows}</{tag}>")
        parts.append("</div>")
        return "".join(parts)


def _quoted(where: Location, said: str) -> list[str]:
    """A user's line as a compiler quotes it (``--> file:line``, the code), then what happened there."""
    number = str(where.lineno)
    pad = " " * len(number)
    return [f"{pad}--> {where.where}", f"{pad} |", f"{number} |     {where.code.strip()}", "   = " + said]


def _op_name(op: str) -> str:
    """An in-place op as the user wrote it: ``add_`` -> ``.add_()``, ``__iadd__`` -> ``+=``."""
    augmented = {"__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=", "__setitem__": "x[...] ="}
    return augmented.get(op, op if op.startswith("__") else f".{op}()")


def _view_fixes(e: Explanation) -> tuple[Fix, ...]:
    """The fixes of a located multi-view write, in the user's lines: the out-of-place write, or clone the views."""
    write, made = e.write_at, e.views_at
    if write is None or e.write_op is None or made is None:
        return ()
    trains = _(
        "the same gradients for every use of the views: they flow through the new tensor into the one that was"
        " split; the split tensor itself keeps its old values (the refused write would have changed them too)"
    )
    fixes: list[Fix] = []
    original = linecache.getline(write.filename, write.lineno).rstrip("\n")
    new = rewrite_in_place(original, e.write_op) if original.strip() else None
    edit = None
    if new is not None:
        indent = original[: len(original) - len(original.lstrip())]
        text = "\n".join(indent + line.strip() for line in new.splitlines())
        edit = Edit(write.filename, write.lineno, write.lineno, text)
        source = "".join(linecache.getlines(write.filename))
        names = set(re.findall(r"[A-Za-z_]\w*", original))  # the write ran: every name it reads exists there
        if not source or check_edits(source, [edit], names) is not None:
            edit = None
    where = _t(" at {where}", where=write.where)
    if edit is not None:
        fixes.append(
            Fix(
                summary=_t("use the out-of-place form of {op}{where}", op=_op_name(e.write_op), where=where),
                trains=trains,
                code="\n".join(line.strip() for line in edit.text.splitlines()),
                edits=(edit,),
                applicability="maybe-incorrect",
            )
        )
    else:
        fixes.append(
            Fix(
                summary=_t("use the out-of-place form of {op}{where}", op=_op_name(e.write_op), where=where),
                trains=trains,
            )
        )
    fixes.append(
        Fix(
            summary=_t(
                "or clone the views where {op} makes them ({where}: [t.clone() for t in ...]), so that each write goes"
                " to a tensor of its own",
                op=e.views_op,
                where=made.where,
            ),
            trains=trains,
        )
    )
    return tuple(fixes)


def _cut_word(cut: str) -> str:
    """The word of a cause sentence that names ``cut`` (``.item()`` -> ``item()``)."""
    return {"torch.no_grad()": "no_grad()", "torch.inference_mode()": "inference_mode()"}.get(cut, cut.strip(".")[:8])


def _closest_title(kind: str) -> str:
    entry = code_for(kind)
    return f"{entry.code} {entry.title}" if entry is not None else kind


# --------------------------------------------------------------------------
# Patterns. Text is normalised first: ANSI colours removed, every run of
# whitespace collapsed to one space (pasted tracebacks wrap long lines).
# --------------------------------------------------------------------------

_LEGACY_DTYPES = {
    "Float": "torch.float32",
    "Double": "torch.float64",
    "Half": "torch.float16",
    "BFloat16": "torch.bfloat16",
    "Long": "torch.int64",
    "Int": "torch.int32",
    "Short": "torch.int16",
    "Char": "torch.int8",
    "Byte": "torch.uint8",
    "Bool": "torch.bool",
    "ComplexFloat": "torch.complex64",
    "ComplexDouble": "torch.complex128",
    "ComplexHalf": "torch.complex32",
}

# Forward ops whose backward reuses their own output: an in-place write to
# the output (nn.ReLU(inplace=True), `y += 1`) breaks their backward.
_SAVES_OUTPUT = {
    "Sigmoid",
    "Tanh",
    "Exp",
    "Exp2",
    "Relu",
    "Threshold",
    "Softmax",
    "LogSoftmax",
    "Elu",
    "Sqrt",
    "Rsqrt",
}
_VIEW_OPS = {
    "T",
    "Transpose",
    "Permute",
    "AsStrided",
    "View",
    "Reshape",
    "Expand",
    "Unsqueeze",
    "Squeeze",
    "Select",
    "Slice",
    "Narrow",
    "Split",
    "Unbind",
    "Diagonal",
    "Unfold",
    "Alias",
}


def _base_node(node: str) -> str:
    """``AsStridedBackward0`` -> ``AsStrided``; ``TBackward`` -> ``T``."""
    return re.sub(r"Backward\d*$", "", node.rsplit("::", 1)[-1])


def _type_info(tensor_type: str) -> tuple[str | None, str | None]:
    """Return (dtype, device) for "torch.cuda.FloatTensor" or "MPSFloatType"."""
    m = re.fullmatch(r"torch\.(?:(?P<dev>\w+)\.)?(?P<name>\w+?)Tensor", tensor_type)
    if m:
        return _LEGACY_DTYPES.get(m["name"]), (m["dev"] or "cpu").lower()
    m = re.fullmatch(r"(?P<dev>[A-Z]+[a-z]*?)?(?P<name>[A-Z]\w*?)Type", tensor_type)
    if m:
        for name, dtype in _LEGACY_DTYPES.items():
            if m["name"].endswith(name):
                dev = tensor_type[: len(tensor_type) - len(name) - len("Type")]
                return dtype, (dev or "cpu").lower()
    return None, None


def _nested(text: str) -> tuple[tuple[int, ...], ...] | None:
    m = re.search(r"\{(\d+),\s*(\d+)\}", text)
    if m is None:
        return None
    rows, cols = int(m[1]), int(m[2])
    numbers = [int(n) for n in re.findall(r"-?\d+", text[: text.index("[")])]
    if len(numbers) != rows * cols:
        return None
    return tuple(tuple(numbers[r * cols : (r + 1) * cols]) for r in range(rows))


def _wording(node: str | None, has_details: bool, hint: str) -> str:
    if not has_details:
        return _("torch 0.x (message without tensor details)")
    if node is None:
        family = _("any torch >= 1.x; no node name is printed because the saved tensor has no grad_fn (a leaf)")
    elif re.search(r"Backward$", node):
        family = _("torch 1.x before 1.10 (node names like TBackward)")
    elif re.search(r"Backward\d+$", node):
        family = _("torch 1.10 to 2.x (node names like AsStridedBackward0)")
    else:
        family = _("recent torch 2.x, e.g. 2.13 (node names without 'Backward', like AsStrided)")
    if "check_nan" in hint:
        family = _t("{releases}; the hint mentions check_nan, so torch 2.x", releases=family)
    return family


def _shape_sentence(shape: tuple[int, ...], base: str | None) -> str:
    dims = ", ".join(str(d) for d in shape)
    text = _t("[{dims}] is the shape of the saved tensor.", dims=dims)
    if len(shape) == 2 and base in {"T", "Transpose", "AsStrided", None}:
        a, b = shape
        text += _t(
            " A 2-D shape like this is often a transposed weight: nn.Linear({a}, {b})"
            " has weight of shape [{b}, {a}], and weight.t() of shape [{a}, {b}]"
            " is what Linear's addmm/mm saves for the backward to its input.",
            a=a,
            b=b,
        )
    elif len(shape) == 0:
        text = _("[] means the saved tensor is a scalar (0-dimensional).")
    return text


def _node_sentence(node: str, nr: int, base: str, two_d: bool) -> str:
    head = _t(
        "'which is output {nr} of {node}' means the saved tensor was produced"
        " by the operation {base} (its grad_fn is {base}Backward).",
        nr=nr,
        node=node,
        base=base,
    )
    if base in {"T", "Transpose"}:
        return head + _(
            " That is a transpose: the saved tensor is a transposed view,"
            " typically weight.t() of an nn.Linear, saved by addmm/mm."
        )
    if base == "AsStrided":
        text = _(
            " AsStrided is the node autograd puts on a view whose base was modified in place after the view was taken."
        )
        if two_d:
            return (
                head
                + text
                + _(
                    " Here it almost always means a transposed view of a weight (weight.t(),"
                    " which nn.Linear saves via addmm/mm) whose parameter was then changed,"
                    " e.g. by optimizer.step()."
                )
            )
        return (
            head
            + text
            + _(
                " Typically the base is a parameter or buffer that was then changed in place, e.g. by optimizer.step()."
            )
        )
    if base in _VIEW_OPS:
        return head + _t(
            " {base} makes a view, so the in-place write may have gone to the tensor it views, not to the view itself.",
            base=base,
        )
    if base in _SAVES_OUTPUT:
        return head + _t(
            " {base} keeps its own output for backward, so any in-place"
            " write to that output (nn.ReLU(inplace=True), +=, *=, slice"
            " assignment) breaks its backward.",
            base=base,
        )
    return head + _(" A later operation saved this result for its backward, and then something wrote to it in place.")


def _in_place(m: Message) -> Explanation:
    has_details = m.tensor_type is not None
    node = m.node
    base = _base_node(node) if node else None
    nr = m.output_nr
    cur = m.current_version
    exp = m.expected_version
    diff = cur - exp if cur is not None and exp is not None else None
    hint = m.hint
    anomaly: bool | None = None
    if "backtrace further above" in hint:
        anomaly = True
    elif "enable anomaly detection" in hint:
        anomaly = False
    dtype = device = None
    shape: tuple[int, ...] | None = None
    nested = None
    if has_details:
        dtype, device = _type_info(m.tensor_type or "")
        if m.shape is not None:
            shape = m.shape
        elif m.nested is not None:
            nested = _nested(m.nested)

    meaning: list[str] = []
    if has_details:
        what = dtype or m.tensor_type
        if device:
            meaning.append(
                _t(
                    "{type} is the saved tensor's type: {dtype} on {device}.",
                    type=m.tensor_type,
                    dtype=what,
                    device=device,
                )
            )
        else:
            meaning.append(_t("{type} is the saved tensor's type: {dtype}.", type=m.tensor_type, dtype=what))
        if shape is not None:
            meaning.append(_shape_sentence(shape, base))
        elif nested is not None:
            listed = ", ".join(str(list(s)) for s in nested)
            meaning.append(_t("The saved tensor is a nested tensor with components of shapes {shapes}.", shapes=listed))
        if node is not None and nr is not None and base is not None:
            meaning.append(_node_sentence(node, nr, base, shape is not None and len(shape) == 2))
        else:
            meaning.append(
                _(
                    "There is no 'which is output N of ...' part: the saved tensor has no"
                    " grad_fn, so it is a leaf (an nn.Parameter, or a tensor you created"
                    " such as an input batch), saved directly, e.g. by x * w or x @ w."
                )
            )
    if diff is not None:
        meaning.append(
            _t(
                "Every tensor has a version counter that each in-place write increments"
                " (add_, +=, x[i] = ..., and optimizer.step() on parameters)."
                " Expected version {expected} is the version when autograd saved the tensor;"
                " version {current} is the version now, at backward.",
                expected=exp,
                current=cur,
            )
        )
        meaning.append(
            ngettext_(
                "The difference is {n}: {n} in-place write since the save.",
                "The difference is {n}: {n} in-place writes since the save.",
                diff,
            ).format(n=diff)
            + _(
                " One optimizer step writes each parameter once with SGD or Adam, and twice with AdamW"
                " (weight decay, then the update), so the count of writes is not always the count of steps;"
                " each +=, *=, add_ or x[i] = ... writes once."
            )
        )
    if anomaly:
        meaning.append(
            _(
                "The Hint comes from anomaly mode: the extra traceback printed above"
                " the error shows the forward line whose backward failed; the"
                " in-place write happened there or later."
            )
        )
    elif anomaly is False:
        meaning.append(
            _(
                "The Hint suggests torch.autograd.set_detect_anomaly(True): it prints"
                " the forward line whose saved tensor was overwritten, not the line"
                " that wrote to it."
            )
        )

    step = _(
        "optimizer.step() on a network whose output is still used by a graph you have"
        " not backwarded yet (two chained networks, GAN discriminator step before the"
        " generator backward, critic step before the actor backward)."
    )
    aug = _("+=, *= or slice assignment (x[i] = ...) on a tensor that was saved for backward.")
    relu = _(
        "nn.ReLU(inplace=True) (or another inplace=True layer) right after an op that saves"
        " its output, such as sigmoid, tanh or exp."
    )
    data = _(
        "A write through .detach() (or a view) of the saved tensor: it shares memory and the version"
        " counter. (A write through .data shares memory but not the counter: it raises nothing and"
        " silently gives wrong gradients.)"
    )
    if base in _SAVES_OUTPUT:
        causes = (relu, aug, data, step)
    elif base in _VIEW_OPS or (base is None and shape is not None and len(shape) >= 1):
        causes = (step, aug, data, relu)
    else:
        causes = (step, aug, relu, data)

    # The message alone cannot say who wrote: the likeliest cause's fixes first, then the other family's. Nothing
    # in it shows two models: the two-network fixes come after the way to find the writer (locating_fix).
    if base in _SAVES_OUTPUT or (base is not None and base not in _VIEW_OPS):
        fixes = (*fixes_for("inplace_op"), *fixes_for("optimizer_step")[:1])
    else:
        fixes = (locating_fix("modified_in_place"), *fixes_for("optimizer_step"), *fixes_for("inplace_op")[:1])

    if diff is not None:
        size = "x".join(str(d) for d in shape) if shape is not None else _("nested")
        if node:
            where = _t(
                "({size} {dtype}, output {nr} of {node})", size=size, dtype=dtype or m.tensor_type, nr=nr, node=node
            )
        else:
            where = _t("({size} {dtype}, a leaf)", size=size, dtype=dtype or m.tensor_type)
        summary = ngettext_(
            "A tensor autograd saved for backward {where} was written in place {n} time after it was saved"
            " (version {expected} -> {current}), so backward cannot use it.",
            "A tensor autograd saved for backward {where} was written in place {n} times after it was saved"
            " (version {expected} -> {current}), so backward cannot use it.",
            diff,
        ).format(where=where, n=diff, expected=exp, current=cur)
    else:
        summary = _(
            "A tensor autograd saved for backward was modified in place after it was saved, so backward cannot use it."
        )
    return Explanation(
        kind="modified_in_place",
        summary=summary,
        message=m.text,
        torch_wording=_wording(node, has_details, hint),
        dtype=dtype,
        tensor_type=m.tensor_type,
        device=device,
        shape=shape,
        nested_shapes=nested,
        output_of=node,
        output_nr=nr,
        current_version=cur,
        expected_version=exp,
        anomaly_mode=anomaly,
        meaning=tuple(meaning),
        causes=causes,
        fixes=fixes,
    )


def _graph_freed(m: Message) -> Explanation:
    text = m.text
    if "retain_variables" in text:
        wording = _("torch 0.1-0.2 (retain_variables)")
    elif "buffers have already been freed" in text:
        wording = _("torch 0.3 to 1.x (buffers have already been freed)")
    elif "saved intermediate results" in text:
        wording = _("torch 1.x (saved intermediate results have already been freed)")
    elif "directly access saved tensors" in text:
        wording = _("torch >= 1.10 (or directly access saved tensors ...)")
    else:
        wording = _("unknown release (first sentence only)")
    return Explanation(
        kind="graph_freed",
        summary=_(
            "A backward went through part of a graph whose saved tensors were already freed"
            " by an earlier backward (or .grad_fn._saved_* was read after backward)."
        ),
        message=text.strip(),
        torch_wording=wording,
        meaning=(
            _("To save memory, backward frees the tensors each node saved as soon as it has used them."),
            _(
                "A second backward that reaches any of those nodes finds nothing to use and stops with"
                " this error, even if only a shared part of the graph is reached twice."
            ),
            _("retain_graph=True on the first backward keeps the saved tensors alive instead."),
        ),
        causes=(
            _(
                "Two losses built on one forward, each with its own backward (two chained networks,"
                " GAN: the generator's fake batch used for the discriminator loss and again for the"
                " generator loss; actor-critic sharing a trunk)."
            ),
            _(
                "A tensor carried across iterations keeps the old graph: an RNN hidden state passed to"
                " the next batch, a running sum of losses, a moving average that is not detached."
            ),
            _("Calling backward twice on the same loss (e.g. once for logging, once for training)."),
            _("Reading grad_fn._saved_* attributes after backward."),
        ),
        fixes=(
            locating_fix("graph_freed"),  # nothing in the message shows two models: find the earlier backward
            *fixes_for("shared_graph_freed")[:3],
            fixes_for("carried_state")[0],
            fixes_for("same_loss_twice")[0],
        ),
    )


def _no_grad_fn(m: Message) -> Explanation:
    return Explanation(
        kind="no_grad_fn",
        summary=_t(
            "Element {index} of the tensors you called backward on has no graph:"
            " it does not require grad, so there is nothing to differentiate.",
            index=m.index,
        ),
        message=m.text,
        torch_wording=_("any torch release"),
        meaning=(
            _("The loss was computed from tensors none of which requires grad, or outside autograd's recording."),
        ),
        causes=(
            _("The forward ran under torch.no_grad() or torch.inference_mode() (e.g. an eval loop)."),
            _("The parameters have requires_grad=False (frozen) or the input was .detach()ed."),
            _("The loss was rebuilt from numbers: torch.tensor(loss.item()) or a numpy round trip."),
        ),
        fixes=message_fixes("no_grad_fn"),
    )


def _leaf_in_place(m: Message) -> Explanation:
    if m.view:
        summary = _(
            "An in-place operation was applied to a view of a leaf tensor that requires grad"
            " (a parameter or a tensor you created with requires_grad=True)."
        )
    else:
        summary = _(
            "An in-place operation was applied to a leaf tensor that requires grad"
            " (a parameter or a tensor you created with requires_grad=True)."
        )
    return Explanation(
        kind="leaf_in_place",
        summary=summary,
        message=m.text,
        torch_wording=_("any torch release"),
        meaning=(
            _(
                "autograd cannot record an in-place change to a leaf: its .grad is defined with"
                " respect to the value you created, so overwriting it is refused."
            ),
        ),
        causes=(
            _("A manual parameter update written as w -= lr * w.grad outside torch.no_grad()."),
            _("Initialising or clipping a parameter in place (w[0] = 0, w.clamp_()) with grad enabled."),
        ),
        fixes=message_fixes("leaf_in_place"),
    )


def _node_wording(node: str | None) -> str:
    if node is None:
        return _("any torch release")
    if re.search(r"Backward\d+$", node):
        return _("torch 1.10 to 2.12 (node names like SplitBackward0)")
    return _("torch 2.13 or later (node names without 'Backward', like Split)")


# NOTE [Fixed texts]: the kinds whose message has no part to read (no index, node or name)
# differ only in their sentences, so one builder reads them from this table (built per call:
# the sentences are in gradlab's language of the moment).
def _fixed_texts() -> dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(summary, torch's wording, what the message says, likely causes) of each kind with fixed texts."""
    return {
        "non_scalar_output": (
            _(
                "backward() was called without gradient= on a tensor with more than one element, so autograd does"
                " not know how to weigh its elements."
            ),
            _("any torch release ('real scalar outputs' for a complex output)"),
            (
                _(
                    "'implicitly created' is the gradient of the output with respect to itself: for a scalar loss it"
                    " is 1; for a vector autograd would need one weight per element (a vector-Jacobian product)."
                ),
            ),
            (
                _("The loss was not reduced: a per-sample loss (reduction='none') or the model's output itself."),
                _("A reduction over the wrong dimension left a vector (loss.mean(dim=0) of a 2-D loss)."),
            ),
        ),
        "numpy_requires_grad": (
            _(
                ".numpy() was called on a tensor that is part of a graph: numpy arrays cannot carry gradients, so"
                " torch refuses to drop them silently."
            ),
            _("any torch release"),
            (_("'requires grad' means the tensor is a parameter or was computed from one in a graph."),),
            (
                _("Printing, plotting or logging a model output or a loss (plt.plot(pred), np.mean(loss))."),
                _("A metric or a loss term computed in numpy (that part could not train anything)."),
            ),
        ),
        "detach_view_in_place": (
            _("detach_() was called on a view; a view shares its base's graph, so it cannot leave the graph in place."),
            _("any torch 1.x or 2.x release (the DDP sentence since 1.7)"),
            (_("detach_() changes the tensor itself; detach() returns a new tensor and works on views."),),
            (
                _("x[:n].detach_() or a slice of a hidden state detached in place."),
                _("Under DDP with gradient_as_bucket_view=True: p.grad.detach_() in a hand-written zero_grad."),
            ),
        ),
        "inference_saved": (
            _(
                "A tensor created under torch.inference_mode() was used by an op that saves it for backward;"
                " inference tensors have no version counter, so autograd cannot save them."
            ),
            _("torch 1.9 or later (inference_mode)"),
            (
                _(
                    "Inference tensors are cheaper than no_grad tensors because autograd keeps no bookkeeping for them;"
                    " that is also why they cannot take part in a graph later."
                ),
            ),
            (
                _(
                    "Data or features precomputed under inference_mode() (a cache, a frozen encoder) then used in training."
                ),
                _("A tensor returned by an evaluation function decorated with @torch.inference_mode()."),
            ),
        ),
        "hook_no_grad": (
            _(
                "register_hook() was called on a tensor that does not require grad: no gradient will ever reach it,"
                " so a hook there could never run."
            ),
            _("any torch release"),
            (_("A tensor hook runs when its gradient is computed; without requires_grad there is none."),),
            (
                _("The tensor was computed under torch.no_grad(), or was .detach()ed, or is an input batch."),
                _("The parameter was frozen (requires_grad=False) before the hook was registered."),
            ),
        ),
    }


def _fixed(m: Message) -> Explanation:
    """The explanation of a message with fixed texts (NOTE [Fixed texts])."""
    summary, wording, meaning, causes = _fixed_texts()[m.kind]
    return Explanation(
        kind=m.kind,
        summary=summary,
        message=m.text,
        torch_wording=wording,
        meaning=meaning,
        causes=causes,
        fixes=message_fixes(m.kind),
    )


def _unused_input(m: Message) -> Explanation:
    which = _t("the input at index {index}", index=m.index) if m.index is not None else _("one of the inputs")
    return Explanation(
        kind="unused_input",
        summary=_t(
            "torch.autograd.grad() was asked for the gradient with respect to {which}, but the output does not"
            " depend on it through the graph.",
            which=which,
        ),
        message=m.text,
        torch_wording=_("torch 2.13 or later (names the index)")
        if m.index is not None
        else _("torch 1.x to 2.12 (One of the differentiated Tensors)"),
        meaning=(
            _(
                "'differentiated Tensors' are the inputs= of torch.autograd.grad(); the index counts them from 0,"
                " in the order you passed them."
            ),
            _("allow_unused=True returns None for such inputs instead of raising."),
        ),
        causes=(
            _("The input was replaced before use: a copy, .detach(), .to(device) or a re-created tensor was used."),
            _("The parameter belongs to a layer the forward did not call (a branch not taken, an unused head)."),
        ),
        fixes=message_fixes("unused_input"),
    )


def _multi_view_in_place(m: Message) -> Explanation:
    base = _base_node(m.node) if m.node else None
    return Explanation(
        kind="multi_view_in_place",
        summary=_t(
            "An in-place write went to output {nr} of {base}, one of several views that one op returned;"
            " autograd cannot rebase such views, so it refuses the write.",
            nr=m.output_nr,
            base=base,
        ),
        message=m.text,
        torch_wording=_node_wording(m.node),
        output_of=m.node,
        output_nr=m.output_nr,
        meaning=(
            _t(
                "'Output {nr} of {node}' is the view the write went to: the {nr}th result of {base}"
                " (split, chunk, unbind and similar return several views of one tensor).",
                nr=m.output_nr,
                node=m.node,
                base=base,
            ),
            _(
                "A write to one view changes the memory the others share; autograd can record it for a single"
                " view, not for an op that returned several."
            ),
        ),
        causes=(
            _("x.split()/chunk()/unbind() (or a, b = x) followed by an in-place op on one part (a += 1, a.relu_())."),
            _("An inplace=True layer applied to one chunk."),
        ),
        fixes=message_fixes("multi_view_in_place"),
    )


def _anomaly_nan(m: Message) -> Explanation:
    base = _base_node(m.node) if m.node else None
    return Explanation(
        kind="anomaly_nan",
        summary=_t(
            "Anomaly mode found nan in the gradient that the backward of {base} computed (its output {nr}).",
            base=base,
            nr=m.output_nr,
        ),
        message=m.text,
        torch_wording=_node_wording(m.node),
        output_of=m.node,
        output_nr=m.output_nr,
        anomaly_mode=True,
        meaning=(
            _t(
                "'{node}' is the backward node whose result is nan; its forward op is {base}, and anomaly mode"
                " printed the forward line that created it above the error.",
                node=m.node,
                base=base,
            ),
            _t(
                "'its {nr}th output' counts the gradients that node returns, one per input of {base}, from 0"
                " (torch writes 1th for the second).",
                nr=m.output_nr,
                base=base,
            ),
        ),
        causes=(
            _(
                "A function whose derivative is infinite at the point reached: sqrt(0), log(0), x / 0, pow(0, "
                "fractional), acos(1), norm of a zero vector."
            ),
            _("The forward was already inf or nan (too large a learning rate, an overflow)."),
        ),
        fixes=message_fixes("anomaly_nan"),
    )


def _checkpoint_metadata(m: Message) -> Explanation:
    where = _t("the tensor at position {index}", index=m.index) if m.index is not None else _("a saved tensor")
    return Explanation(
        kind="checkpoint_metadata",
        summary=_t(
            "torch.utils.checkpoint recomputed the forward during backward and {where} came out with a"
            " different shape, dtype or device than in the first forward.",
            where=where,
        ),
        message=m.text,
        torch_wording=_("torch 2.1 or later (non-reentrant checkpoint)"),
        meaning=(
            _(
                "'position' counts the tensors the checkpointed function saved for backward, in the order it"
                " saved them; 'saved metadata' is the first forward's, 'recomputed metadata' the recomputation's."
            ),
        ),
        causes=(
            _("The function reads state that changed in between: a counter, a flag set by the training loop."),
            _("Randomness that decides a shape (random crop, dropout of whole tokens) without preserve_rng_state."),
        ),
        fixes=message_fixes("checkpoint_metadata"),
    )


def _ddp_unfinished(m: Message) -> Explanation:
    if m.parameters:
        which = ", ".join(m.parameters)
    elif m.parameter_indices:
        which = _t("the parameters at indices {indices}", indices=", ".join(str(i) for i in m.parameter_indices))
    else:
        which = _("some parameters")
    meaning = [
        _(
            "DDP all-reduces each parameter's gradient when backward reaches it; a new iteration started before"
            " the previous one's reduction finished, because some parameters never got a gradient."
        ),
    ]
    if m.parameter_indices:
        meaning.append(
            _t(
                "'Parameter indices which did not receive grad for rank {rank}' counts list(model.parameters()) from"
                " 0 on that process; TORCH_DISTRIBUTED_DEBUG=INFO prints their names.",
                rank=m.rank,
            )
        )
    return Explanation(
        kind="ddp_unfinished_reduction",
        summary=_t("DDP's backward did not reach {which}, so its gradient reduction never finished.", which=which),
        message=m.text,
        torch_wording=_("torch 1.x and 2.x"),
        meaning=tuple(meaning),
        causes=(
            _("A layer defined in __init__ but not used in forward (an auxiliary head, an old layer)."),
            _("A branch not taken in this iteration (if/else in forward), so its parameters got no gradient."),
            _("A .detach() (or no_grad) on the path cut the parameters off from the loss."),
        ),
        fixes=message_fixes("ddp_unfinished_reduction", m.parameters),
        parameters=m.parameters,
    )


def _ddp_ready_twice(m: Message) -> Explanation:
    which = (
        m.parameters[0]
        if m.parameters
        else (_t("the parameter at index {index}", index=m.index) if m.index is not None else _("a parameter"))
    )
    return Explanation(
        kind="ddp_ready_twice",
        summary=_t(
            "DDP saw the gradient of {which} arrive twice in one iteration; it reduces each parameter once per backward.",
            which=which,
        ),
        message=m.text,
        torch_wording=_("torch 1.x and 2.x"),
        meaning=(
            _(
                "'mark a variable ready' is DDP's hook on a parameter's gradient; twice means two autograd paths"
                " reached it in one backward that DDP did not plan for."
            ),
        ),
        causes=(
            _("A parameter used outside the DDP model's forward (model.module.weight in the loss)."),
            _("Reentrant checkpointing (use_reentrant=True) over the same layers, or two forwards per backward."),
        ),
        fixes=message_fixes("ddp_ready_twice"),
        parameters=m.parameters,
    )


_BUILDERS = {
    "modified_in_place": _in_place,
    "graph_freed": _graph_freed,
    "no_grad_fn": _no_grad_fn,
    "leaf_in_place": _leaf_in_place,
    "non_scalar_output": _fixed,
    "unused_input": _unused_input,
    "numpy_requires_grad": _fixed,
    "multi_view_in_place": _multi_view_in_place,
    "detach_view_in_place": _fixed,
    "inference_saved": _fixed,
    "hook_no_grad": _fixed,
    "anomaly_nan": _anomaly_nan,
    "checkpoint_metadata": _checkpoint_metadata,
    "ddp_unfinished_reduction": _ddp_unfinished,
    "ddp_ready_twice": _ddp_ready_twice,
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
            summary=_(
                "This is an error of gradlab itself, not of your code's autograd graph; please report it"
                " with your torch version."
            ),
            message=" ".join(str(error).split())[:500] or None,
        )
    m = messages.find(error)
    if m is not None:
        explanation = _BUILDERS[m.kind](m)
        if m.kind == "checkpoint_metadata" and isinstance(error, BaseException):
            return _at_checkpoint(error, explanation)
        return explanation
    text = " ".join(str(error).split())
    # NOTE [never a wrong decoding]: a message that only shares words with a kind is not
    # decoded as that kind; the kind is named as the closest, for the reader to judge.
    return Explanation(
        kind="not_autograd",
        summary=_(
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


_METADATA = re.compile(
    r"tensor at position (?P<index>\d+):\s*saved metadata: (?P<saved>\{.*?\})\s*recomputed metadata: (?P<again>\{.*?\})"
)


def _at_checkpoint(error: BaseException, explanation: Explanation) -> Explanation:
    """A checkpoint's recomputation that differed, located: the checkpointed function, the tensor's two metadata.

    The function is read from torch's own frame in the traceback (the recompute
    function's closure); the metadata from the message.
    """
    found = _checkpointed_function(error)
    chain: list[BaseException] = [error]
    while len(chain) < 8 and (chain[-1].__cause__ or chain[-1].__context__) is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]
    # in debug mode torch raises its log, from the CheckpointError that has the metadata
    metadata = next((m for x in chain if (m := _METADATA.search(" ".join(str(x).split()))) is not None), None)
    meaning = explanation.meaning
    if metadata is not None:
        meaning = (
            _t(
                "The tensor at position {index} was {saved} in the forward and {again} when recomputed.",
                index=metadata["index"],
                saved=metadata["saved"],
                again=metadata["again"],
            ),
            *meaning,
        )
    if found is None:
        return replace(explanation, meaning=meaning)
    name, where = found
    return replace(explanation, meaning=meaning, checkpointed=name, checkpointed_at=where)


def _checkpointed_function(error: BaseException) -> tuple[str, Location] | None:
    """The user's function torch.utils.checkpoint ran again, from the frames of ``error``'s traceback."""
    from .location import _library_file

    tb = error.__traceback__
    while tb is not None:
        recompute = getattr(tb.tb_frame.f_locals.get("frame"), "recompute_fn", None)
        for cell in getattr(recompute, "__closure__", None) or ():
            try:
                fn = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            target = type(fn).forward if isinstance(fn, torch.nn.Module) else getattr(fn, "__func__", fn)
            code = getattr(target, "__code__", None)
            if code is not None and not _library_file(code.co_filename):
                return getattr(target, "__qualname__", code.co_name), Location(code.co_filename, code.co_firstlineno)
        tb = tb.tb_next
    return None


def located_cut(explanation: Explanation, tensors: Sequence[object], recorder: Recorder | None) -> Explanation | None:
    """``explanation`` located at the cut a tracker saw behind a backward on ``tensors``, or None if it saw none.

    The one rule for the note after the error and for :func:`gradlab.check` before the backward.
    """
    found = recorder.cuts.cut_for(tensors) if recorder is not None else None
    if found is None:
        return None
    cut, exact = found
    return explanation.located(cut.label, cut.location, exact)


def no_graph(tensors: Sequence[object], recorder: Recorder | None = None) -> Explanation | None:
    """Why a backward on ``tensors`` would fail for want of a graph (GL0003), before it runs; None if it would not.

    torch refuses the first tensor that does not require grad ("element i of tensors does
    not require grad and does not have a grad_fn"); under a tracker (``recorder``) the
    explanation names the line that cut the graph, as the note after the error does.

    Example::

        >>> w = torch.ones(2, requires_grad=True)
        >>> no_graph([(w * 2).sum().detach()]).code
        'GL0003'
        >>> no_graph([(w * 2).sum()]) is None
        True
    """
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor) and not t.requires_grad:
            text = f"element {i} of tensors does not require grad and does not have a grad_fn"  # torch's words
            explanation = explain_message(Message("no_grad_fn", text, index=i))
            return located_cut(explanation, tensors, recorder) or explanation
    return None


def explain_code(code: str) -> str:
    """The long form of an error code (``python -m gradlab explain GL0001``, like ``rustc --explain``).

    What torch's message says part by part, the causes and every fix with what it
    trains, decoded from the code's example message; ValueError for an unknown code.

    Example::

        >>> print(explain_code("GL0005"))  # doctest: +ELLIPSIS
        gradlab: error[GL0005 non-scalar output]
        ...
    """
    entry = by_code(code)
    explanation = explain(entry.example)
    return "\n".join([explanation.details(), "", _t("Example of torch's message: {text}", text=entry.example)])
