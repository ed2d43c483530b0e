"""What to do about an autograd failure, and what each fix trains: gradlab's advice, in one place.

Every text that tells a user how to fix an autograd error is built here:
:class:`gradlab.Diagnosis`, :class:`gradlab.Explanation`, the command line, the
IPython extension, the course's notebooks, playground and cheat sheet render it.

A diagnosis first decides the :data:`Cause` of a failure from what gradlab saw
(who wrote the saved tensor, which backward freed a node, where the models sit in
the graph), then :func:`fixes_for` lists the fixes that fit that cause, the
likeliest intent first. Every :class:`Fix` says in one line what it *trains*:
which loss then sends gradient into which model. A fix that changes what trains
says so; ``retain_graph=True`` is never offered for the in-place error.

The texts speak in the user's names (``n_1``, ``opt_1``, ``loss_2``, ``pred_1``)
when gradlab knows them, from ``names=`` and from the user's own lines, and in
descriptions otherwise (``the model whose weights the step changed``).

Example::

    >>> from gradlab.advice import Context, fixes_for
    >>> fix = fixes_for("inplace_op", Context(tensor="y", op="mul_", code="y.mul_(3)"))[0]
    >>> fix.code
    'y = y.mul(3)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

from .edits import Applicability, Edit
from .i18n import _, _t

__all__ = [
    "Cause",
    "CAUSES",
    "Context",
    "Fix",
    "Pitfall",
    "pitfalls",
    "fixes_for",
    "rewrite_in_place",
    "detach_in",
    "cause_sentence",
]

#: Why a backward fails, as gradlab decides it from what it observed.
Cause = Literal[
    "optimizer_step",  # an optimizer step changed a saved weight between two backward calls
    "inplace_op",  # an in-place op in the forward code (recorded by autograd) changed a saved tensor
    "untracked_write",  # a write under no_grad(), through .detach() or to data changed a saved tensor
    "carried_state",  # state carried from one iteration to the next (RNN hidden state, a running total)
    "shared_graph_freed",  # a second backward through a part of the graph an earlier backward freed
    "same_loss_twice",  # the same loss backwarded twice
    "unknown",
]
CAUSES: tuple[Cause, ...] = (
    "optimizer_step",
    "inplace_op",
    "untracked_write",
    "carried_state",
    "shared_graph_freed",
    "same_loss_twice",
    "unknown",
)


def _cause_sentences() -> dict[Cause, str]:
    return {
        "optimizer_step": _("an optimizer step changed a weight the graph saved, before that graph's backward ran"),
        "inplace_op": _("an in-place operation in the forward code overwrote a tensor autograd saved"),
        "untracked_write": _(
            "a write autograd could not record (under torch.no_grad(), through .detach(), or to data) "
            "overwrote a tensor autograd saved"
        ),
        "carried_state": _("state carried from one iteration to the next keeps the previous iteration's graph"),
        "shared_graph_freed": _("a second backward went through a part of the graph an earlier backward freed"),
        "same_loss_twice": _("the same loss was backwarded twice"),
        "unknown": _("gradlab cannot tell what changed the tensor (it was not watching when it happened)"),
    }


def cause_sentence(cause: Cause) -> str:
    """One sentence saying what the cause means (in the language of :func:`gradlab.set_language`)."""
    return _cause_sentences()[cause]


@dataclass(frozen=True)
class Fix:
    """One way to make the failing backward run, and what it trains.

    ``summary`` says what to do; ``trains`` which loss then sends gradient into
    which model (and whether that differs from what the failing code did);
    ``code`` is the code to write, in the user's names when gradlab knows them;
    ``intent`` the question that picks this fix (``if loss_2 should not train n_1``).

    As data for tools (``gradlab fix``): ``edits`` are the checked edits of the
    user's file that ``code`` prints (:mod:`gradlab.edits`; empty when the fix is
    a sentence), ``applicability`` how sure the fix is (NOTE [Applicability] in
    :mod:`gradlab.edits`), and ``claims`` what ``trains`` says as pairs
    ``(loss, modules)``: after the fix, ``loss``'s gradient reaches exactly those
    modules' parameters (in the user's names; empty when gradlab cannot name them).
    """

    summary: str
    trains: str
    code: str | None = None
    intent: str | None = None
    cost: str | None = None
    edits: tuple[Edit, ...] = ()
    applicability: Applicability = "sentence"
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def lines(self) -> list[str]:
        """The fix as text lines: the summary (with its intent), the code, what it trains."""
        head = (
            _t("{intent}: {summary}", intent=self.intent[0].upper() + self.intent[1:], summary=self.summary)
            if self.intent
            else self.summary
        )
        out = [head]
        if self.code:
            out += [f"    {line}" for line in self.code.splitlines()]
        out.append("  " + _t("trains: {what}", what=self.trains))
        if self.cost:
            out.append("  " + _t("cost: {what}", what=self.cost))
        return out


@dataclass(frozen=True)
class Context:
    """What gradlab knows about a failure, in the user's words (each field may be unknown).

    ``tensor``: the saved tensor's name or description. ``model``: the model that
    owns it (``n_1``). ``others``: the other models the failing loss reaches
    (``("n_2",)``). ``loss``: the failing backward's loss (``loss_2``); ``earlier``:
    the loss of the earlier backward (``loss_1``). ``optimizer``: the stepping
    optimizer's variable (``opt_1``) and ``optimizer_class`` its class. ``entry``:
    the variable holding ``model``'s output where it enters the other models
    (``pred_1``), ``entry_line``/``entry_where``: the line that feeds it in.
    ``op``/``code``/``where``: the in-place op and the user's line that ran it.
    ``judge``: True when the stepped model sits between the failing loss and the
    other models (a GAN's discriminator, a critic the actor trains through).
    ``recompute``: the lines that build the failing loss from ``model``'s forward.
    ``carried``: the variable carried across iterations; ``total``: True when it
    is a running total of losses. ``writes_per_step``: versions one step adds.
    """

    tensor: str | None = None
    model: str | None = None
    others: tuple[str, ...] = ()
    loss: str | None = None
    earlier: str | None = None
    optimizer: str | None = None
    optimizer_class: str | None = None
    entry: str | None = None
    entry_line: str | None = None
    entry_where: str | None = None
    op: str | None = None
    code: str | None = None
    where: str | None = None
    judge: bool = False
    recompute: tuple[str, ...] = ()
    carried: str | None = None
    total: bool = False
    step_between: bool | None = None
    extra: dict[str, str] = field(default_factory=dict)

    # -- the user's names, or descriptions ----------------------------------------------------------
    @property
    def m(self) -> str:
        return self.model or _("the upstream model")

    @property
    def o(self) -> str:
        return _(" and ").join(self.others) if self.others else _("the downstream model")

    @property
    def l(self) -> str:  # noqa: E743 - the failing loss
        return self.loss or _("the failing loss")

    @property
    def e(self) -> str:
        return self.earlier or _("the earlier loss")

    @property
    def opt(self) -> str:
        return self.optimizer or "optimizer"

    @property
    def step(self) -> str:
        return f"{self.optimizer}.step()" if self.optimizer else _("the optimizer step")

    @property
    def zero(self) -> str:
        return f"{self.optimizer}.zero_grad()" if self.optimizer else _("the optimizer's zero_grad()")


# -- code rewriting ------------------------------------------------------------------------------------

_AUGMENTED = {
    "__iadd__": "+",
    "__isub__": "-",
    "__imul__": "*",
    "__itruediv__": "/",
    "__ifloordiv__": "//",
    "__imod__": "%",
    "__ipow__": "**",
    "__imatmul__": "@",
    "__iand__": "&",
    "__ior__": "|",
    "__ixor__": "^",
}
_ACTIVATIONS = {
    "relu_",
    "leaky_relu_",
    "elu_",
    "hardtanh_",
    "relu6_",
    "silu_",
    "hardsigmoid_",
    "hardswish_",
    "mish_",
    "gelu_",
    "threshold_",
    "dropout_",
    "selu_",
    "celu_",
    "rrelu_with_noise_",
}


def rewrite_in_place(code: str, op: str) -> str | None:
    """The out-of-place form of one line that ran the in-place ``op``, or None if gradlab cannot write it.

    Example::

        >>> rewrite_in_place("y.mul_(3)", "mul_")
        'y = y.mul(3)'
        >>> rewrite_in_place("h += x  # step", "__iadd__")
        'h = h + x  # step'
        >>> rewrite_in_place("act = nn.ReLU(inplace=True)", "relu_")
        'act = nn.ReLU()'
    """
    body, comment = _split_comment(code)
    if op in _AUGMENTED:
        m = re.fullmatch(r"(\s*)([\w.\[\]]+)\s*" + re.escape(_AUGMENTED[op]) + r"=\s*(.+?)\s*", body)
        if m:
            return f"{m[1]}{m[2]} = {m[2]} {_AUGMENTED[op]} {m[3]}{comment}"
        return None
    if op == "__setitem__":
        m = re.fullmatch(r"(\s*)([\w.]+)\[(.+)\]\s*=\s*(.+?)\s*", body)
        if m:
            return f"{m[1]}{m[2]} = {m[2]}.clone()\n{m[1]}{m[2]}[{m[3]}] = {m[4]}{comment}"
        return None
    if "inplace=True" in body:
        return re.sub(r",?\s*inplace=True", "", body).replace("(, ", "(") + comment
    if op in _ACTIVATIONS:
        return None
    m = re.fullmatch(r"(\s*)(?:([\w.]+)\s*=\s*)?([\w.\[\]]+)\." + re.escape(op) + r"\((.*)\)\s*", body)
    if m:
        target = m[2] or m[3]
        return f"{m[1]}{target} = {m[3]}.{op[:-1]}({m[4]}){comment}"
    return None


def detach_in(line: str, name: str) -> str | None:
    """``line`` with the first use of ``name`` on its right-hand side detached, or None.

    Example::

        >>> detach_in("pred_2 = n_2(pred_1)", "pred_1")
        'pred_2 = n_2(pred_1.detach())'
        >>> detach_in("out, hidden = rnn(x, hidden)", "hidden")
        'out, hidden = rnn(x, hidden.detach())'
    """
    body, comment = _split_comment(line)
    eq = _assignment(body)
    start = eq + 1 if eq is not None else 0
    m = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w(])").search(body, start)
    if m is None:
        return None
    return body[: m.end()] + ".detach()" + body[m.end() :] + comment


def _assignment(body: str) -> int | None:
    """The index of the ``=`` of a plain assignment in ``body``, if it is one."""
    depth = 0
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "=" and depth == 0:
            before, after = body[i - 1 : i], body[i + 1 : i + 2]
            if before not in "=!<>+-*/%&|^@" and after != "=":
                return i
    return None


def _split_comment(code: str) -> tuple[str, str]:
    m = re.search(r"\s+#.*$", code)
    return (code[: m.start()], code[m.start() :]) if m else (code.rstrip(), "")


def _loss_code(loss: str, call: str) -> str:
    """``loss_2.backward(inputs=...)`` for a loss name, or for an expression."""
    target = loss if re.fullmatch(r"[\w.\[\]]+", loss) else f"({loss})"
    return f"{target}.{call}"


# -- fixes per cause -------------------------------------------------------------------------------------


def _hatch(ctx: Context) -> Fix:
    return Fix(
        summary=_(
            "Or run the code as written inside torch.autograd.graph.allow_mutation_on_saved_tensors(): "
            "autograd keeps a copy of each saved tensor before it is modified in place"
        ),
        trains=_t(
            "what the code says: {loss} sends gradient into {model}, computed with {model}'s weights from before "
            "{step}; in a loop whose {zero} runs before the next step, that gradient is never used (the same "
            "training as detaching)",
            loss=ctx.l,
            model=ctx.m,
            step=ctx.step,
            zero=ctx.zero,
        ),
        code="with torch.autograd.graph.allow_mutation_on_saved_tensors():\n    ...  # " + _("the loop, unchanged"),
        cost=_("a copy of every saved tensor that is modified in place (memory and time)"),
    )


def _same_as_failing(ctx: Context) -> str:
    return _t(
        "{loss} trains {others} only; {model} learns from {earlier} only: the training your loop would do if it "
        "ran, since {loss}'s gradient for {model} would arrive after {step}, too late for that step (and "
        "{zero} before the next step discards it)",
        loss=ctx.l,
        others=ctx.o,
        model=ctx.m,
        earlier=ctx.e,
        step=ctx.step,
        zero=ctx.zero,
    )


def _chained(ctx: Context, freed: bool) -> list[Fix]:
    """An upstream model's output feeds the failing loss's models (two chained networks, actor-critic)."""
    detach_code = None
    if ctx.entry and ctx.entry_line:
        detach_code = detach_in(ctx.entry_line, ctx.entry)
    where = _t(" (at {where})", where=ctx.entry_where) if ctx.entry_where and detach_code else ""
    entry = _t(": feed in {entry}.detach(){where}", entry=ctx.entry, where=where) if ctx.entry else ""
    if ctx.optimizer or not freed:
        trains_same = _same_as_failing(ctx)
    else:
        trains_same = _t(
            "{loss} trains {others} only; {model} learns from {earlier} only",
            loss=ctx.l,
            others=ctx.o,
            model=ctx.m,
            earlier=ctx.e,
        )
    if len(ctx.others) == 1:
        inputs = _loss_code(ctx.l, f"backward(inputs=list({ctx.others[0]}.parameters()))")
    else:
        models = ", ".join(ctx.others) or "model_2"
        inputs = _loss_code(ctx.l, f"backward(inputs=[p for m in ({models},) for p in m.parameters()])")
    step_code = (
        f"{ctx.optimizer}.step()  # " + _("and the other optimizers' steps, after it")
        if ctx.optimizer
        else "optimizer.step()  # " + _("every optimizer, after the one backward")
    )
    fixes = [
        Fix(
            intent=_t("if {loss} should not train {model}", loss=ctx.l, model=ctx.m),
            summary=_t(
                "detach {model}'s output where it enters {others}{entry}", model=ctx.m, others=ctx.o, entry=entry
            ),
            trains=trains_same,
            code=detach_code,
        ),
        Fix(
            intent=_("the same, keeping the order and the graph"),
            summary=_t("backward {loss} into {others}'s parameters only", loss=ctx.l, others=ctx.o),
            trains=_t("the same as detaching: {loss} trains {others} only", loss=ctx.l, others=ctx.o),
            code=inputs,
        ),
        Fix(
            intent=_t("if {loss} should also train {model}", loss=ctx.l, model=ctx.m),
            summary=_t(
                "one backward of the sum, then the steps: zero every optimizer, backward ({earlier} + {loss}) once, "
                "then step every optimizer",
                earlier=ctx.e,
                loss=ctx.l,
            ),
            trains=_t(
                "{earlier} and {loss} both train {model}, and {loss} trains {others}: a different training from the "
                "failing code's, where {model} followed {earlier} only",
                earlier=ctx.e,
                loss=ctx.l,
                model=ctx.m,
                others=ctx.o,
            ),
            code=f"({ctx.e} + {ctx.l}).backward()\n" + step_code,
        ),
    ]
    if freed and ctx.step_between is False:
        fixes.append(
            Fix(
                summary=_t(
                    "or keep two backward calls: {earlier}.backward(retain_graph=True), then {loss}.backward(), "
                    "and only then any optimizer step",
                    earlier=ctx.e,
                    loss=ctx.l,
                ),
                trains=_t(
                    "like the sum: {earlier} and {loss} both train {model}", earlier=ctx.e, loss=ctx.l, model=ctx.m
                ),
                code=_loss_code(ctx.e, "backward(retain_graph=True)"),
            )
        )
    elif not freed:
        fixes.append(_hatch(ctx))
    return fixes


def _judge(ctx: Context, freed: bool) -> list[Fix]:
    """The stepped model sits between the failing loss and the models it trains (GAN discriminator)."""
    code = None
    if ctx.recompute:
        first, *rest = ctx.recompute
        again = _("again: a new graph with the stepped weights")
        code = "\n".join([f"{ctx.opt}.step()", f"{first}  # {again}", *rest])
    fixes = [
        Fix(
            summary=_t(
                "recompute {model}'s forward after {step}, and {loss} from it", model=ctx.m, step=ctx.step, loss=ctx.l
            ),
            trains=_t(
                "{loss} trains {others} through the updated {model} (the usual GAN order); {model} learns from "
                "{earlier} only, since {zero} clears what {loss} leaves in {model}'s .grad",
                loss=ctx.l,
                others=ctx.o,
                model=ctx.m,
                earlier=ctx.e,
                zero=ctx.zero,
            ),
            code=code,
        ),
        Fix(
            summary=_t(
                "or backward {loss} before {step}, into {others}'s parameters only",
                loss=ctx.l,
                step=ctx.step,
                others=ctx.o,
            ),
            trains=_t(
                "{loss} trains {others} through {model} as it was before its step; {model}'s gradient is untouched",
                loss=ctx.l,
                others=ctx.o,
                model=ctx.m,
            ),
            code=_loss_code(ctx.l, f"backward(inputs=list({ctx.others[0]}.parameters()))")
            if len(ctx.others) == 1
            else None,
        ),
    ]
    if not freed:
        fixes.append(_hatch(ctx))
    return fixes


_OP_NAMES = {**{k: f"{v}=" for k, v in _AUGMENTED.items()}, "__setitem__": "x[...] = ..."}


def _in_place(ctx: Context) -> list[Fix]:
    rewritten = rewrite_in_place(ctx.code, ctx.op) if ctx.code and ctx.op else None
    where = _t(" at {where}", where=ctx.where) if ctx.where else ""
    op = _OP_NAMES.get(ctx.op, ctx.op) if ctx.op else _("the in-place op")
    if ctx.op in _ACTIVATIONS:
        summary = _("use the activation without inplace=True (nn.ReLU() rather than nn.ReLU(inplace=True))")
    else:
        summary = _t("use the out-of-place form of {op}{where}", op=op, where=where)
    tensor = ctx.tensor or _("the tensor")
    name = ctx.tensor or "x"
    return [
        Fix(
            summary=summary,
            trains=_t(
                "the same as intended: nothing changes in which loss trains which parameters; {tensor} keeps the "
                "value autograd saved",
                tensor=tensor,
            ),
            code=rewritten,
        ),
        Fix(
            summary=_t("or write to a copy: {name} = {name}.clone() before the in-place write", name=name),
            trains=_("the same as intended (the copy costs one tensor's memory)"),
        ),
    ]


def _untracked(ctx: Context) -> list[Fix]:
    where = _t(" at {where}", where=ctx.where) if ctx.where else ""
    tensor = ctx.tensor or _("the tensor")
    return [
        Fix(
            summary=_t(
                "do not write to {tensor} while a graph that saved it still needs it: move the write{where} after "
                "{loss}.backward(), or write to a copy ({tensor}.clone())",
                tensor=tensor,
                where=where,
                loss=ctx.l,
            ),
            trains=_("the same as intended: the write changed values, not which loss trains which parameters"),
        ),
        Fix(
            summary=_("if the write is meant to be part of the model, make it an out-of-place op with grad enabled"),
            trains=_("the write's result then takes part in backward, so the gradient also flows through it"),
        ),
    ]


def _carried(ctx: Context) -> list[Fix]:
    if ctx.total:
        name = ctx.carried or "total"
        loss = ctx.loss or "loss"
        return [
            Fix(
                summary=_t(
                    "keep the running total as a number: {name} += {loss}.item(), and call backward on each "
                    "iteration's loss",
                    name=name,
                    loss=loss,
                ),
                trains=_t("each iteration's loss trains the model, as intended; {name} is only for logging", name=name),
                code=f"{loss}.backward()\n{name} += {loss}.item()",
            ),
            Fix(
                summary=_t("if {name} should train the model, call {name}.backward() once, after the loop", name=name),
                trains=_("every iteration's loss trains the model through one backward (memory grows with the loop)"),
            ),
        ]
    name = ctx.carried or "h"
    code = detach_in(ctx.entry_line, name) if ctx.entry_line else None
    return [
        Fix(
            summary=_t(
                "detach the carried state at the iteration boundary: {name}.detach() where it enters the next "
                "iteration (truncated backpropagation through time)",
                name=name,
            ),
            trains=_t(
                "each iteration's {loss} trains through the current iteration only; the previous iteration's graph "
                "is released",
                loss=ctx.loss or "loss",
            ),
            code=code or f"{name} = {name}.detach()  # " + _("at the start of each iteration"),
        ),
        Fix(
            summary=_(
                "or backpropagate through the whole sequence: accumulate the losses and call backward once at the end"
            ),
            trains=_(
                "full backpropagation through time: each loss trains through every earlier step (memory grows "
                "with the sequence)"
            ),
        ),
    ]


def _twice(ctx: Context) -> list[Fix]:
    return [
        Fix(
            summary=_t(
                "call {loss}.backward() once; if you need two backward calls through it, pass retain_graph=True to "
                "the first",
                loss=ctx.l,
            ),
            trains=_("unchanged; note that two backward calls add their gradients into .grad"),
            code=_loss_code(ctx.l, "backward(retain_graph=True)  # " + _("the first of the two calls")),
        ),
        Fix(
            summary=_("or recompute the forward before the second backward"),
            trains=_("unchanged, with a fresh graph"),
        ),
    ]


def fixes_for(cause: Cause, ctx: Context | None = None) -> tuple[Fix, ...]:
    """The fixes that fit ``cause``, the likeliest intent first, in the words of ``ctx``."""
    ctx = ctx or Context()
    if cause == "optimizer_step":
        return tuple(_judge(ctx, False) if ctx.judge else _chained(ctx, False))
    if cause == "shared_graph_freed":
        return tuple(_judge(ctx, True) if ctx.judge else _chained(ctx, True))
    if cause == "inplace_op":
        return tuple(_in_place(ctx))
    if cause == "untracked_write":
        return tuple(_untracked(ctx))
    if cause == "carried_state":
        return tuple(_carried(ctx))
    if cause == "same_loss_twice":
        return tuple(_twice(ctx))
    # unknown: the two likeliest families, each with what it trains
    unknown = replace(ctx)
    return (*_in_place(unknown)[:1], *_chained(unknown, False)[:1], *_carried(unknown)[:1])


@dataclass(frozen=True)
class Pitfall:
    """A "fix" that circulates and should not be applied: what people try, and what it really does."""

    attempt: str
    what_it_does: str


def pitfalls() -> tuple[Pitfall, ...]:
    """What gradlab never recommends, and why (the cheat sheet and the course print these)."""
    return (
        Pitfall(
            attempt=_("retain_graph=True for the 'modified by an inplace operation' error"),
            what_it_does=_(
                "keeps the graph, but the saved tensor is still at the wrong version: the error stays. "
                "It only helps the 'backward through the graph a second time' error, when nothing is stepped in "
                "between."
            ),
        ),
        Pitfall(
            attempt=_(".detach() inside a network's forward"),
            what_it_does=_(
                "the errors go away because the gradient is cut there: every layer before the detach "
                "silently stops learning (gradlab.check_intent reports it as unreachable)."
            ),
        ),
        Pitfall(
            attempt=_("adding the losses of two models with opposite goals (a GAN's) and stepping both"),
            what_it_does=_(
                "it runs and check() says ok, but each loss now pushes the other model: the generator's "
                "gradient points the wrong way (gradlab.check_intent reports it)."
            ),
        ),
        Pitfall(
            attempt=_("softmax over a dimension of size 1 (one output per row)"),
            what_it_does=_(
                "every output is exactly 1.0 and every gradient exactly zero: nothing learns, and nothing "
                "raises an error (gradlab.check_intent reports zero gradients)."
            ),
        ),
    )


# NOTE [the family's fixes]
# The fixes for the autograd messages that need no recorded context (explain() prints
# them for a message alone): each says what it trains, like every fix above.
def message_fixes(kind: str, parameters: tuple[str, ...] = ()) -> tuple[Fix, ...]:
    """The fixes for one of the family's message kinds (``gradlab.explanation.KINDS``), each with what it trains.

    ``parameters`` names the parameters the message is about (DDP's unused ones), when known.

    Example::

        >>> message_fixes("non_scalar_output")[0].code
        'loss = out.mean()\\nloss.backward()'
    """
    unused = ", ".join(parameters) if parameters else _("the parameters DDP names")
    table: dict[str, tuple[Fix, ...]] = {
        "no_grad_fn": (
            Fix(
                summary=_("compute the loss outside no_grad(), from the model's output, without .item() or .detach()"),
                trains=_("the loss then trains every parameter it reaches"),
            ),
            Fix(
                summary=_("check that at least one parameter on the path has requires_grad=True"),
                trains=_("frozen parameters (requires_grad=False) never train"),
            ),
        ),
        "leaf_in_place": (
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
        "non_scalar_output": (
            Fix(
                summary=_("reduce the output to one number before backward (mean or sum over the batch)"),
                trains=_(
                    "every parameter the output reaches, by the gradient of that number: mean keeps the step size "
                    "independent of the batch size, sum scales it with the batch"
                ),
                code="loss = out.mean()\nloss.backward()",
            ),
            Fix(
                summary=_("if you want a vector-Jacobian product, pass the weights of each output as gradient="),
                trains=_("the same as backward of (out * weights).sum(): each output element weighted as you say"),
                code="out.backward(gradient=torch.ones_like(out))",
            ),
        ),
        "unused_input": (
            Fix(
                summary=_("check that each tensor you differentiate by is used in the loss (not a copy, not detached)"),
                trains=_("the same loss; every input you listed then gets its gradient"),
            ),
            Fix(
                summary=_("if some inputs really are unused, pass allow_unused=True (their gradient is None)"),
                trains=_("nothing changes for the used inputs; the unused ones get None, not zero"),
                code="torch.autograd.grad(loss, inputs, allow_unused=True)",
            ),
        ),
        "numpy_requires_grad": (
            Fix(
                summary=_("convert a detached copy for printing, plotting or metrics"),
                trains=_("unchanged: the numbers leave the graph, the loss still trains what it reached"),
                code="y.detach().cpu().numpy()",
            ),
            Fix(
                summary=_("if the numpy values feed the loss, compute them with torch ops instead"),
                trains=_("gradient then flows through that computation; through numpy it cannot"),
            ),
        ),
        "multi_view_in_place": (
            Fix(
                summary=_("replace the in-place op on the view by its out-of-place form"),
                trains=_("the same as intended: the views keep their values and gradients flow through each"),
                code="a = a * 2  # not a.mul_(2)",
            ),
            Fix(
                summary=_("or clone the view before writing to it"),
                trains=_("the same as intended; the clone costs one copy of that view"),
                code="a = a.clone()\na.mul_(2)",
            ),
        ),
        "detach_view_in_place": (
            Fix(
                summary=_("use the out-of-place x.detach() and keep the result"),
                trains=_("unchanged: the detached tensor leaves the graph, the view itself stays in it"),
                code="x = x.detach()",
            ),
            Fix(
                summary=_(
                    "for DDP with gradient_as_bucket_view=True, clear gradients with optimizer.zero_grad() "
                    "(set_to_none) instead of grad.detach_()"
                ),
                trains=_("unchanged"),
            ),
        ),
        "inference_saved": (
            Fix(
                summary=_("create the tensor outside torch.inference_mode(), or use torch.no_grad() there"),
                trains=_("unchanged: no_grad tensors can be saved by a later graph; they are still constants in it"),
            ),
            Fix(
                summary=_("clone the inference tensor before using it in a graph"),
                trains=_("unchanged: the clone is a normal tensor (a constant); it costs one copy"),
                code="x = x.clone()",
            ),
        ),
        "hook_no_grad": (
            Fix(
                summary=_(
                    "register the hook on a tensor that requires grad (a parameter, or a result computed from one)"
                ),
                trains=_("unchanged: a hook only reads or rewrites gradients that flow"),
            ),
            Fix(
                summary=_("if the tensor should train, set requires_grad_() on it before the forward"),
                trains=_("that tensor then trains: its gradient is computed and the hook sees it"),
                code="x.requires_grad_()",
            ),
        ),
        "anomaly_nan": (
            Fix(
                summary=_(
                    "guard the forward op whose backward produced nan (sqrt or log of 0, division by 0, "
                    "acos of 1): add an epsilon or clamp its input"
                ),
                trains=_("the same parameters; the gradient at the guarded points becomes finite"),
                code="torch.sqrt(x.clamp_min(1e-12))",
            ),
            Fix(
                summary=_("check the inputs and the learning rate if the values were already huge"),
                trains=_("unchanged"),
            ),
        ),
        "checkpoint_metadata": (
            Fix(
                summary=_(
                    "make the checkpointed function deterministic in shape: no state that changes between the "
                    "forward and its recomputation (counters, random sizes, a mode flag)"
                ),
                trains=_("unchanged: the recomputation then matches the forward"),
            ),
            Fix(
                summary=_("if it cannot be, leave that part out of checkpoint() (it keeps its activations)"),
                trains=_("unchanged; costs the memory checkpointing saved"),
            ),
        ),
        "ddp_unfinished_reduction": (
            Fix(
                summary=_t(
                    "if {params} should not train: remove them from the model, or freeze them "
                    "(requires_grad_(False)) before wrapping it in DDP",
                    params=unused,
                ),
                trains=_("the same as on one process: those parameters never trained; the others train as before"),
            ),
            Fix(
                summary=_t(
                    "if {params} should train: use them in forward so that the loss reaches them", params=unused
                ),
                trains=_("those parameters then train from the loss, which they did not before"),
            ),
            Fix(
                summary=_(
                    "if parameters are unused only in some iterations (a branch), pass find_unused_parameters=True"
                ),
                trains=_(
                    "unchanged: each iteration trains what its forward used; DDP walks the graph to find the rest"
                ),
                code="model = DistributedDataParallel(model, find_unused_parameters=True)",
            ),
        ),
        "ddp_ready_twice": (
            Fix(
                summary=_("use the parameters only inside the DDP model's forward (not model.module.x outside it)"),
                trains=_("unchanged: the gradient of that use then goes through DDP's all-reduce"),
            ),
            Fix(
                summary=_(
                    "for checkpointing or several forwards per backward, use checkpoint(..., use_reentrant=False) "
                    "or model._set_static_graph()"
                ),
                trains=_("unchanged"),
            ),
        ),
    }
    if kind not in table:
        raise ValueError(
            f"message_fixes() got kind={kind!r}; pass one of the family's kinds: {', '.join(sorted(table))}."
        )
    return table[kind]
