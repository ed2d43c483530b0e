"""A recurrent layer's state kept on its model between batches: which of two trainings the code means, and the call
without the state (NOTE [A recurrent layer's state kept on its model]); read by :mod:`gradlab.causes.module_state`."""

from __future__ import annotations

import ast

import torch

from ..context import Context
from ..edits import Edit
from ..fixes import Fix, Proposal, keeping, source_of
from ..i18n import T, Text
from ..location import Location
from .class_source import class_tree, methods_of, self_attr

__all__ = ["recurrent_state", "unstated_fix"]


# NOTE [A recurrent layer's state kept on its model]
# A model may keep its LSTM's or GRU's state on an attribute and pass it to the layer at every forward
# (lstm_out, self.hidden = self.lstm(x, self.hidden), the state made once in __init__): the next batch starts
# from the state the last one ended with, and its backward runs into the last batch's freed graph. Two
# trainings can be meant. A stream cut into consecutive chunks (a language model over one text) carries the
# state on purpose: truncated backpropagation, the state detached. A set of sequences each of which is one
# sample (a window, a clip, a sentence) labelled as a whole has no state to carry from another sample: the
# layer is called without it and starts from zeros, as torch's recurrent layers do by default (the fix the
# reports' maintainers give). The code does not say which is meant, and blind scripts were written both ways;
# the rule reads two signs. The forward reads only the last step of the layer's output (out[:, -1], out[-1]):
# one prediction per sequence. And the state is a tensor __init__ made once, of a fixed batch size (a tutorial's
# init_hidden(), torch.zeros(1, B, H)), that nothing but the recurrent call sets again: no code manages it as a
# carried state. With both, the state is left out first and the detach comes second; a state that starts as
# None, or that the forward makes again when the batch size changes, is carried on purpose: the detach first,
# leaving it out after. Offered when the one kept attribute is passed to a recurrent submodule
# (torch.nn.RNNBase) as its state, on one line of forward.


def _last_step(node: ast.AST) -> bool:
    """``node`` is a subscript whose index holds the constant ``-1`` (``out[:, -1, :]``, ``out[-1]``)."""
    if not isinstance(node, ast.Subscript):
        return False
    index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return any(
        isinstance(i, ast.UnaryOp)
        and isinstance(i.op, ast.USub)
        and isinstance(i.operand, ast.Constant)
        and i.operand.value == 1
        for i in index
    )


def recurrent_state(cls: type, module: torch.nn.Module, attr: str) -> tuple[str, int, str, bool] | None:
    """The line of ``forward`` that passes ``self.attr`` as the state of a recurrent submodule, that line with the
    state left out, and whether the forward reads only the last step of that layer's output (NOTE [A recurrent
    layer's state kept on its model])."""
    found = class_tree(cls)
    forward = next((m for m in methods_of(found[0]) if m.name == "forward"), None) if found is not None else None
    if found is None or forward is None:
        return None
    calls = [
        c
        for c in ast.walk(forward)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id == "self"
        and isinstance(getattr(module, c.func.attr, None), torch.nn.RNNBase)
        and len(c.args) == 2
        and not c.keywords
        and self_attr(c.args[1], attr)
        and c.lineno == c.end_lineno
    ]
    lines = source_of(found[1]).splitlines()
    if len(calls) != 1 or not 0 < calls[0].lineno <= len(lines) or not lines[calls[0].lineno - 1].isascii():
        return None
    call = calls[0]
    assert isinstance(call.func, ast.Attribute)  # the test above
    text = lines[call.lineno - 1]
    first = text[call.args[0].col_offset : call.args[0].end_col_offset]
    new = f"{text[: call.col_offset]}self.{call.func.attr}({first}){text[call.end_col_offset :]}"
    # the statement's first target is the layer's output: read only at its last step (or not at all)
    st = next((n for n in forward.body if any(c is call for c in ast.walk(n))), None)
    target = st.targets[0] if isinstance(st, ast.Assign) else None
    output = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else None
    if not isinstance(output, ast.Name):
        return found[1], call.lineno, new, False
    parents = {id(child): parent for parent in ast.walk(forward) for child in ast.iter_child_nodes(parent)}
    reads = [n for n in ast.walk(forward) if _reads_name(n, output.id)]
    last = all(isinstance(up := parents.get(id(n)), ast.Subscript) and up.value is n and _last_step(up) for n in reads)
    return found[1], call.lineno, new, last and _made_once(found[0], attr, st)


def _made_once(node: ast.ClassDef, attr: str, stored: ast.stmt | None) -> bool:
    """``__init__`` sets ``self.attr`` to a tensor it makes (``self.init_hidden()``, ``torch.zeros(...)``; not None),
    and no statement but ``stored`` (the recurrent call's) sets it again: a state made once, of a fixed size, that
    nothing manages (NOTE [A recurrent layer's state kept on its model])."""
    stores = [
        st
        for m in methods_of(node)
        for st in ast.walk(m)
        if isinstance(st, ast.Assign) and any(self_attr(t, attr) for target in st.targets for t in ast.walk(target))
    ]
    init = [st for st in stores if st is not stored]
    return (
        len(init) == 1
        and isinstance(init[0].value, ast.Call)
        and any(init[0] in ast.walk(m) for m in methods_of(node) if m.name == "__init__")
    )


def _reads_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def unstated_fix(ctx: Context, attrs: Text) -> Proposal | None:
    """The recurrent layer called without the kept state (NOTE [A recurrent layer's state kept on its model])."""
    filename, line, text = ctx.extra.get("unstated"), ctx.extra.get("unstated_line"), ctx.extra.get("unstated_text")
    if not filename or not line or text is None:
        return None
    return keeping(
        ctx,
        Fix(
            summary=T(
                "call the recurrent layer without the state kept on the model ({attrs}) at {where}: each batch's "
                "sequences then start from zeros, the layer's default, instead of from the state the previous batch "
                "ended with",
                attrs=attrs,
                where=Location(filename, int(line)).where,
            ),
            trains=T(
                "{loss} trains through each batch's own sequences, from a zero state; nothing of the previous "
                "batch enters the forward",
                loss=ctx.l,
            ),
            edits=(Edit(filename, int(line), int(line), text),),
            keeps_forward=False,
        ),
    )
