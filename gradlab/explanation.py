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
import re
from dataclasses import dataclass

from . import messages
from .advice import Fix, fixes_for
from .i18n import _, _t, ngettext_
from .messages import Message
from .notices import GradlabError

__all__ = ["Explanation", "explain", "KINDS"]

#: Every value ``Explanation.kind`` can take.
KINDS = (
    "graph_freed",
    "modified_in_place",
    "no_grad_fn",
    "leaf_in_place",
    "not_autograd",
)


@dataclass(frozen=True)
class Explanation:
    """What an autograd error message says, why it happens, and how to fix it.

    ``kind`` is one of ``KINDS``. The tensor fields (``dtype`` to
    ``expected_version``) are filled for ``"modified_in_place"`` messages
    that carry them and are ``None`` otherwise.

    Example::

        >>> e = explain("Trying to backward through the graph a second time")
        >>> e.kind
        'graph_freed'
        >>> print(e.details())  # doctest: +ELLIPSIS
        gradlab: graph_freed
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

    @property
    def writes_since_saved(self) -> int | None:
        """How many in-place writes happened between save and backward."""
        if self.current_version is None or self.expected_version is None:
            return None
        return self.current_version - self.expected_version

    def __str__(self) -> str:
        lines = [f"gradlab: {self.kind}: {self.summary}"]
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
        lines = [f"gradlab: {self.kind}", self.summary]
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
            f"<p><b>{esc(self.kind)}</b>: {esc(self.summary)}</p>",
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

    # The message alone cannot say who wrote: the likeliest cause's fixes first, then the other family's.
    if base in _SAVES_OUTPUT or (base is not None and base not in _VIEW_OPS):
        fixes = (*fixes_for("inplace_op"), *fixes_for("optimizer_step")[:1])
    else:
        fixes = (*fixes_for("optimizer_step"), *fixes_for("inplace_op")[:1])

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
        fixes=(
            Fix(
                summary=_("compute the loss outside no_grad(), from the model's output, without .item() or .detach()"),
                trains=_("the loss then trains every parameter it reaches"),
            ),
            Fix(
                summary=_("check that at least one parameter on the path has requires_grad=True"),
                trains=_("frozen parameters (requires_grad=False) never train"),
            ),
        ),
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
        fixes=(
            Fix(
                summary=_("wrap manual updates in torch.no_grad()"),
                trains=_("the update is not part of the graph: the parameter still trains from its loss"),
                code="with torch.no_grad():\n    w -= lr * w.grad",
            ),
            Fix(
                summary=_("use the nn.init functions, or an out-of-place op on a non-leaf copy"),
                trains=_("unchanged"),
            ),
        ),
    )


_BUILDERS = {
    "modified_in_place": _in_place,
    "graph_freed": _graph_freed,
    "no_grad_fn": _no_grad_fn,
    "leaf_in_place": _leaf_in_place,
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
        return _BUILDERS[m.kind](m)
    text = " ".join(str(error).split())
    return Explanation(
        kind="not_autograd",
        summary=_(
            "This is not one of the autograd errors gradlab decodes (graph freed,"
            " modified by an inplace operation, no grad_fn, leaf used in-place)."
        ),
        message=text[:500] or None,
    )
