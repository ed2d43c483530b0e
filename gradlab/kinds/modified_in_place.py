"""GL0002 ``modified_in_place``: the in-place error's message, part by part (its type, shape, node and versions)."""

from __future__ import annotations

import re

from ..advice import locating_fix
from ..causes import fixes_for
from ..explanation import Explanation
from ..i18n import N, T, Words
from ..messages import Message

__all__ = ["explain", "base_node"]


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


def base_node(node: str) -> str:
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


def _wording(node: str | None, has_details: bool, hint: str) -> Words:
    if not has_details:
        return T("torch 0.x (message without tensor details)")
    if node is None:
        family = T("any torch >= 1.x; no node name is printed because the saved tensor has no grad_fn (a leaf)")
    elif re.search(r"Backward$", node):
        family = T("torch 1.x before 1.10 (node names like TBackward)")
    elif re.search(r"Backward\d+$", node):
        family = T("torch 1.10 to 2.x (node names like AsStridedBackward0)")
    else:
        family = T("recent torch 2.x, e.g. 2.13 (node names without 'Backward', like AsStrided)")
    if "check_nan" in hint:
        family = T("{releases}; the hint mentions check_nan, so torch 2.x", releases=family)
    return family


def _shape_sentence(shape: tuple[int, ...], base: str | None) -> Words:
    dims = ", ".join(str(d) for d in shape)
    text = T("[{dims}] is the shape of the saved tensor.", dims=dims)
    if len(shape) == 2 and base in {"T", "Transpose", "AsStrided", None}:
        a, b = shape
        text += T(
            " A 2-D shape like this is often a transposed weight: nn.Linear({a}, {b})"
            " has weight of shape [{b}, {a}], and weight.t() of shape [{a}, {b}]"
            " is what Linear's addmm/mm saves for the backward to its input.",
            a=a,
            b=b,
        )
    elif len(shape) == 0:
        text = T("[] means the saved tensor is a scalar (0-dimensional).")
    return text


def _node_sentence(node: str, nr: int, base: str, two_d: bool) -> Words:
    head = T(
        "'which is output {nr} of {node}' means the saved tensor was produced"
        " by the operation {base} (its grad_fn is {base}Backward).",
        nr=nr,
        node=node,
        base=base,
    )
    if base in {"T", "Transpose"}:
        return head + T(
            " That is a transpose: the saved tensor is a transposed view,"
            " typically weight.t() of an nn.Linear, saved by addmm/mm."
        )
    if base == "AsStrided":
        text = T(
            " AsStrided is the node autograd puts on a view whose base was modified in place after the view was taken."
        )
        if two_d:
            return (
                head
                + text
                + T(
                    " Here it almost always means a transposed view of a weight (weight.t(),"
                    " which nn.Linear saves via addmm/mm) whose parameter was then changed,"
                    " e.g. by optimizer.step()."
                )
            )
        return (
            head
            + text
            + T(
                " Typically the base is a parameter or buffer that was then changed in place, e.g. by optimizer.step()."
            )
        )
    if base in _VIEW_OPS:
        return head + T(
            " {base} makes a view, so the in-place write may have gone to the tensor it views, not to the view itself.",
            base=base,
        )
    if base in _SAVES_OUTPUT:
        return head + T(
            " {base} keeps its own output for backward, so any in-place"
            " write to that output (nn.ReLU(inplace=True), +=, *=, slice"
            " assignment) breaks its backward.",
            base=base,
        )
    return head + T(" A later operation saved this result for its backward, and then something wrote to it in place.")


def explain(m: Message) -> Explanation:
    has_details = m.tensor_type is not None
    node = m.node
    base = base_node(node) if node else None
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

    meaning: list[Words] = []
    if has_details:
        what = dtype or m.tensor_type
        if device:
            meaning.append(
                T(
                    "{type} is the saved tensor's type: {dtype} on {device}.",
                    type=m.tensor_type,
                    dtype=what,
                    device=device,
                )
            )
        else:
            meaning.append(T("{type} is the saved tensor's type: {dtype}.", type=m.tensor_type, dtype=what))
        if shape is not None:
            meaning.append(_shape_sentence(shape, base))
        elif nested is not None:
            listed = ", ".join(str(list(s)) for s in nested)
            meaning.append(T("The saved tensor is a nested tensor with components of shapes {shapes}.", shapes=listed))
        if node is not None and nr is not None and base is not None:
            meaning.append(_node_sentence(node, nr, base, shape is not None and len(shape) == 2))
        else:
            meaning.append(
                T(
                    "There is no 'which is output N of ...' part: the saved tensor has no"
                    " grad_fn, so it is a leaf (an nn.Parameter, or a tensor you created"
                    " such as an input batch), saved directly, e.g. by x * w or x @ w."
                )
            )
    if diff is not None:
        meaning.append(
            T(
                "Every tensor has a version counter that each in-place write increments"
                " (add_, +=, x[i] = ..., and optimizer.step() on parameters)."
                " Expected version {expected} is the version when autograd saved the tensor;"
                " version {current} is the version now, at backward.",
                expected=exp,
                current=cur,
            )
        )
        meaning.append(
            N(
                "The difference is {n}: {n} in-place write since the save.",
                "The difference is {n}: {n} in-place writes since the save.",
                diff,
            )
            + T(
                " One optimizer step writes each parameter once with SGD or Adam, and twice with AdamW"
                " (weight decay, then the update), so the count of writes is not always the count of steps;"
                " each +=, *=, add_ or x[i] = ... writes once."
            )
        )
    if anomaly:
        meaning.append(
            T(
                "The Hint comes from anomaly mode: the extra traceback printed above"
                " the error shows the forward line whose backward failed; the"
                " in-place write happened there or later."
            )
        )
    elif anomaly is False:
        meaning.append(
            T(
                "The Hint suggests torch.autograd.set_detect_anomaly(True): it prints"
                " the forward line whose saved tensor was overwritten, not the line"
                " that wrote to it."
            )
        )

    step = T(
        "optimizer.step() on a network whose output is still used by a graph you have"
        " not backwarded yet (two chained networks, GAN discriminator step before the"
        " generator backward, critic step before the actor backward)."
    )
    aug = T("+=, *= or slice assignment (x[i] = ...) on a tensor that was saved for backward.")
    relu = T(
        "nn.ReLU(inplace=True) (or another inplace=True layer) right after an op that saves"
        " its output, such as sigmoid, tanh or exp."
    )
    data = T(
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
        size = "x".join(str(d) for d in shape) if shape is not None else T("nested")
        if node:
            where = T(
                "({size} {dtype}, output {nr} of {node})", size=size, dtype=dtype or m.tensor_type, nr=nr, node=node
            )
        else:
            where = T("({size} {dtype}, a leaf)", size=size, dtype=dtype or m.tensor_type)
        summary = N(
            "A tensor autograd saved for backward {where} was written in place {n} time after it was saved"
            " (version {expected} -> {current}), so backward cannot use it.",
            "A tensor autograd saved for backward {where} was written in place {n} times after it was saved"
            " (version {expected} -> {current}), so backward cannot use it.",
            diff,
            where=where,
            expected=exp,
            current=cur,
        )
    else:
        summary = T(
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
