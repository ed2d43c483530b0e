"""Exercises that repair a loop nobody handed a fix for, judged by gradients and parameters.

Each check runs the learner's function on fresh, seeded models beside its own
loop that trains what the broken code meant, and records, per parameter, every
gradient that arrives (a tensor hook, so a backward that runs and is thrown away
still counts) and the gradient each optimizer step uses (a step pre-hook). A
repair passes when every step used the gradient the intent gives, nothing else
arrived at a model its loss should not train, and the parameters end where the
intended loop puts them.

NOTE [Why arrivals, not only parameters]
Run "anyway" under identity saved-tensor hooks (or through ``.data``), a loop
computes gradients from saved weights an optimizer step already wrote. In an
actor-critic the actor's loss then sends such a gradient into the critic after
the critic's step, and the next ``zero_grad()`` throws it away: the parameters
end exactly where the repaired loop puts them. The gradient is computed all the
same, from the wrong weights, and its arrival is what tells the two loops apart.

Every answer gets a :class:`~gradlab.course.exercise.Verdict`, never an
exception: an error the function raises is explained by what it means for the
loop (which graph, which write), not by the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial, wraps
from typing import Any

import torch
from torch import nn

from gradlab.i18n import _, _t

from .exercise import Verdict, _is_template, _not_yet, _right, pending

__all__ = ["check_actor_critic", "check_carried_state", "check_softmax_loop", "softmax_loop_data"]


# ---------------------------------------------------------------- recording what a loop does


def _own_generator(check: Callable[..., Verdict]) -> Callable[..., Verdict]:
    """Run ``check`` on a copy of torch's random generator: it seeds its models, the learner's state stays."""

    @wraps(check)
    def run(*args: Any, **kwargs: Any) -> Verdict:
        with torch.random.fork_rng(devices=[]):
            return check(*args, **kwargs)

    return run


@dataclass
class _Record:
    """What a loop did to the watched parameters: the gradients that arrived, the gradients each step used."""

    arrived: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    steps: list[tuple[str, dict[str, torch.Tensor | None]]] = field(default_factory=list)
    inputs: list[tuple[Any, ...]] = field(default_factory=list)

    def mark(self) -> tuple[dict[str, int], int, int]:
        """Where the record stands now, to read what one iteration added (:meth:`since`)."""
        return {name: len(grads) for name, grads in self.arrived.items()}, len(self.steps), len(self.inputs)

    def since(self, mark: tuple[dict[str, int], int, int]) -> _Record:
        arrived, steps, inputs = mark
        return _Record(
            {name: grads[arrived[name] :] for name, grads in self.arrived.items()},
            self.steps[steps:],
            self.inputs[inputs:],
        )


def _arrive(into: list[torch.Tensor], grad: torch.Tensor) -> None:
    into.append(grad.detach().clone())


def _stepping(
    record: _Record, name: str, params: Mapping[str, nn.Parameter], optimizer: object, args: object, kwargs: object
) -> None:
    record.steps.append(
        (name, {p_name: None if p.grad is None else p.grad.detach().clone() for p_name, p in params.items()})
    )


def _hidden_input(record: _Record, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A recurrent module's incoming hidden state: its value (None: none passed) and whether it carries a graph."""
    hidden = args[1] if len(args) > 1 else kwargs.get("hx")
    if isinstance(hidden, torch.Tensor):
        record.inputs.append((hidden.detach().clone(), hidden.grad_fn is not None))
    else:
        record.inputs.append((None, False))


@contextmanager
def _recording(
    modules: Mapping[str, nn.Module],
    optimizers: Mapping[str, tuple[torch.optim.Optimizer, tuple[str, ...]]],
    recurrent: nn.Module | None = None,
) -> Iterator[_Record]:
    """Record every gradient arriving at the modules' parameters and the ``.grad`` each optimizer step uses.

    ``optimizers`` maps an optimizer's name to the optimizer and the names of the modules it steps.
    ``recurrent``: also record the hidden state each call of that module receives (:func:`_hidden_input`).
    Every hook is removed on exit.
    """
    record = _Record()
    handles: list[Any] = []
    try:
        for module_name, module in modules.items():
            for p_name, p in module.named_parameters():
                name = f"{module_name}.{p_name}"
                record.arrived[name] = []
                handles.append(p.register_hook(partial(_arrive, record.arrived[name])))  # type: ignore[no-untyped-call]
        for opt_name, (optimizer, stepped) in optimizers.items():
            params = {f"{m}.{n}": p for m in stepped for n, p in modules[m].named_parameters()}
            handles.append(optimizer.register_step_pre_hook(partial(_stepping, record, opt_name, params)))
        if recurrent is not None:
            handles.append(recurrent.register_forward_pre_hook(partial(_hidden_input, record), with_kwargs=True))
        yield record
    finally:
        for handle in handles:
            handle.remove()


def _flat(grads: Mapping[str, torch.Tensor | None], names: Sequence[str]) -> torch.Tensor | None:
    """The gradients of ``names`` as one vector, None if any is missing."""
    parts = [grads.get(name) for name in names]
    if any(part is None for part in parts):
        return None
    return torch.cat([part.flatten() for part in parts if part is not None])


def _arrived_total(record: _Record, names: Sequence[str]) -> torch.Tensor | None:
    """Everything that arrived at ``names`` in the record, summed per parameter, as one vector (None: nothing)."""
    if not any(record.arrived[name] for name in names):
        return None
    return torch.cat(
        [
            torch.stack(record.arrived[name]).sum(0).flatten() if record.arrived[name] else torch.zeros(0)
            for name in names
        ]
    )


def _close(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-4, atol=1e-6))


def _zero(a: torch.Tensor | None) -> bool:
    return a is None or not bool(a.abs().max() > 0)


def _state(*modules: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for module in modules for p in module.parameters()]


def _same_state(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.allclose(u, v, rtol=1e-4, atol=1e-6) for u, v in zip(a, b))


def _names(module_name: str, module: nn.Module) -> list[str]:
    return [f"{module_name}.{n}" for n, _ in module.named_parameters()]


def _raised(error: BaseException, where: str) -> Verdict:
    """An error the learner's loop raised, told by what it means for the loop, never by the fix."""
    from gradlab import explain

    first = str(error).strip().split("\n")[0].split(". ")[0]
    kind = explain(error).kind if isinstance(error, RuntimeError) else None
    if kind == "graph_freed":
        return _not_yet(
            _t(
                "{where} raised {type}: {message}. A backward went through a part of a graph that an earlier "
                "backward had freed: which tensor still reaches that graph, and should this loss reach it at all?",
                where=where,
                type=type(error).__name__,
                message=first,
            )
        )
    if kind == "modified_in_place":
        return _not_yet(
            _t(
                "{where} raised {type}: {message}. A tensor a graph saved was written before that graph's backward: "
                "which line wrote it, and should this backward reach it at all?",
                where=where,
                type=type(error).__name__,
                message=first,
            )
        )
    if kind == "leaf_in_place":
        return _not_yet(
            _t(
                "{where} raised {type}: {message}. An update of a tensor that requires grad was recorded as an "
                "operation of the graph: an update is not something to differentiate.",
                where=where,
                type=type(error).__name__,
                message=first,
            )
        )
    if kind == "no_grad_fn":
        return _not_yet(
            _t(
                "{where} raised {type}: {message}. backward() was called on a loss with no graph: everything it "
                "was computed from was detached, or computed under no_grad.",
                where=where,
                type=type(error).__name__,
                message=first,
            )
        )
    return _not_yet(_t("{where} raised {type}: {message}.", where=where, type=type(error).__name__, message=first))


# ---------------------------------------------------------------- the actor-critic (notebook 09)


def _actor_critic_models(seed: int) -> tuple[nn.Module, nn.Module, torch.optim.Optimizer, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    actor = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    critic = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    return actor, critic, torch.optim.Adam(actor.parameters(), lr=1e-2), torch.optim.Adam(critic.parameters(), lr=1e-2)


def _intended_actor_critic(
    actor: nn.Module, critic: nn.Module, state: torch.Tensor, reward: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients the loop meant, at the models' current weights: the actor's, the critic's, and the two
    gradients the actor's loss sends into the critic and a recomputed advantage gives the actor (for the hints).

    The actions are drawn by the caller's seed, as the learner's loop draws them.
    """
    dist = torch.distributions.Categorical(logits=actor(state))
    action = dist.sample()  # type: ignore[no-untyped-call]
    advantage = reward - critic(state)
    critic_loss = advantage.pow(2).mean()
    log_prob = dist.log_prob(action).unsqueeze(1)  # type: ignore[no-untyped-call]
    to_actor = torch.autograd.grad(-(log_prob * advantage.detach()).mean(), list(actor.parameters()), retain_graph=True)
    to_critic = torch.autograd.grad(critic_loss, list(critic.parameters()), retain_graph=True)
    leak = torch.autograd.grad(-(log_prob * advantage).mean(), list(critic.parameters()), retain_graph=True)
    return (
        torch.cat([g.flatten() for g in to_actor]),
        torch.cat([g.flatten() for g in to_critic]),
        torch.cat([g.flatten() for g in leak]),
        log_prob.detach(),
    )


def _set_grads(module: nn.Module, flat: torch.Tensor) -> None:
    at = 0
    for p in module.parameters():
        p.grad = flat[at : at + p.numel()].view_as(p).clone()
        at += p.numel()


@_own_generator
def check_actor_critic(step: object, iterations: int = 3) -> Verdict:
    """Exercise (notebook 09): repair one step of an actor-critic whose critic steps before the actor's backward.

    ``step(actor, critic, opt_actor, opt_critic, state, reward)`` runs one iteration, drawing the actions from
    the actor. The loop meant: the critic learns from ``critic_loss`` (the squared advantage), the actor from
    ``actor_loss``, with the advantage as a weight on its log-probabilities, that is as data, both from this
    batch's forward. The check runs ``iterations`` steps on fresh, seeded models (the actions drawn with the same
    seed as its own loop's) and passes when each optimizer step used exactly that loss's gradient, no other
    gradient arrived at the critic, and the parameters end where that training puts them.

    Example::

        >>> def step(actor, critic, opt_actor, opt_critic, state, reward):
        ...     dist = torch.distributions.Categorical(logits=actor(state))
        ...     action = dist.sample()
        ...     advantage = reward - critic(state)
        ...     critic_loss = advantage.pow(2).mean()
        ...     actor_loss = -(dist.log_prob(action).unsqueeze(1) * advantage.detach()).mean()
        ...     opt_critic.zero_grad()
        ...     critic_loss.backward()
        ...     opt_critic.step()
        ...     opt_actor.zero_grad()
        ...     actor_loss.backward()
        ...     opt_actor.step()
        >>> check_actor_critic(step).passed
        True
    """
    if step is Ellipsis or _is_template(step):
        return pending()
    if not callable(step):
        return _not_yet(
            _t(
                "{name} should be a function: def {name}({example}): ...",
                name="step",
                example="actor, critic, opt_actor, opt_critic, state, reward",
            )
        )
    actor, critic, opt_actor, opt_critic = _actor_critic_models(0)
    ref_actor, ref_critic, ref_opt_actor, ref_opt_critic = _actor_critic_models(0)
    start = _state(actor, critic)
    actor_names, critic_names = _names("actor", actor), _names("critic", critic)
    data = torch.Generator().manual_seed(1)
    last: dict[str, torch.Tensor] = {}
    modules = {"actor": actor, "critic": critic}
    optimizers = {"opt_actor": (opt_actor, ("actor",)), "opt_critic": (opt_critic, ("critic",))}
    with _recording(modules, optimizers) as record:
        for k in range(iterations):
            state, reward = torch.randn(8, 4, generator=data), torch.randn(8, 1, generator=data)
            torch.manual_seed(100 + k)
            want_actor, want_critic, leak, _log_prob = _intended_actor_critic(ref_actor, ref_critic, state, reward)
            mark = record.mark()
            torch.manual_seed(100 + k)
            try:
                step(actor, critic, opt_actor, opt_critic, state, reward)
            except Exception as error:  # the learner's code: any error is an answer to explain
                return _raised(error, _t("step (iteration {k})", k=k + 1))
            done = record.since(mark)
            verdict = _judge_actor_critic(done, k, actor_names, critic_names, want_actor, want_critic, leak, last)
            if verdict is not None:
                return verdict
            for module, opt, want in (
                (ref_actor, ref_opt_actor, want_actor),
                (ref_critic, ref_opt_critic, want_critic),
            ):
                opt.zero_grad()
                _set_grads(module, want)
                opt.step()
    unchanged = [
        name
        for name, before, module in (
            ("actor", start[: len(actor_names)], actor),
            ("critic", start[len(actor_names) :], critic),
        )
        if _same_state(before, _state(module))
    ]
    if unchanged:
        return _not_yet(_t("{names} never changed: no optimizer step moved it.", names=" and ".join(unchanged)))
    if not _same_state(_state(actor, critic), _state(ref_actor, ref_critic)):
        return _not_yet(
            _(
                "every step used the intended gradient, but the parameters end elsewhere: does the loop change "
                "them another way (a second optimizer, a write of its own)?"
            )
        )
    return _right(
        _t(
            "over {n} iterations the critic learned from critic_loss alone and the actor from actor_loss with the "
            "advantage as data, and no other gradient reached the critic.",
            n=iterations,
        )
    )


def _judge_actor_critic(
    done: _Record,
    k: int,
    actor_names: list[str],
    critic_names: list[str],
    want_actor: torch.Tensor,
    want_critic: torch.Tensor,
    leak: torch.Tensor,
    last: dict[str, torch.Tensor],
) -> Verdict | None:
    """The verdict on one iteration of the learner's step, or None when it did what the loop meant.

    ``last`` holds the gradient each model's step used in the iteration before (updated here).
    """
    for opt_name, names, want, model, loss in (
        ("opt_critic", critic_names, want_critic, "critic", "critic_loss"),
        ("opt_actor", actor_names, want_actor, "actor", "actor_loss"),
    ):
        used = [grads for name, grads in done.steps if name == opt_name]
        if len(used) != 1:
            return _not_yet(
                _t(
                    "in iteration {k}, {opt}.step() ran {n} times: once per iteration, after {loss}'s backward.",
                    k=k + 1,
                    opt=opt_name,
                    n=len(used),
                    loss=loss,
                )
            )
        grad = _flat(used[0], names)
        if _zero(grad):
            return _not_yet(
                _t(
                    "in iteration {k}, {opt}.step() found no gradient in the {model}: {loss} does not reach it "
                    "(is the {model}'s own output detached?), or its zero_grad() ran after the backward.",
                    k=k + 1,
                    opt=opt_name,
                    model=model,
                    loss=loss,
                )
            )
        if _close(grad, 2 * want) or (model in last and _close(grad, want + last[model])):
            return _not_yet(
                _t(
                    "in iteration {k}, the {model}'s step used {loss}'s gradient added to another one left in "
                    ".grad (backward adds into .grad): where does the {model}'s .grad get emptied?",
                    k=k + 1,
                    model=model,
                    loss=loss,
                )
            )
        if model == "critic" and _close(grad, want + leak):
            return _not_yet(
                _t(
                    "in iteration {k}, the critic's step used critic_loss's gradient plus actor_loss's: the "
                    "actor's loss trains the critic through the advantage. What is the advantage to the actor?",
                    k=k + 1,
                )
            )
        if not _close(grad, want):
            if model == "actor":
                return _not_yet(
                    _t(
                        "in iteration {k}, the actor's step did not use actor_loss's gradient with this batch's "
                        "advantage: was the advantage computed again, after opt_critic.step() changed the critic? "
                        "The loop's advantage is the one of this batch's forward.",
                        k=k + 1,
                    )
                )
            return _not_yet(
                _t(
                    "in iteration {k}, the critic's step did not use critic_loss's gradient at this batch's forward.",
                    k=k + 1,
                )
            )
        last[model] = want
    extra = _arrived_total(done, critic_names)
    if extra is not None and not _close(extra, want_critic):
        return _not_yet(
            _t(
                "in iteration {k}, the steps used the right gradients, but another backward still sent a "
                "gradient into the critic: actor_loss went through the critic's graph, whose weights "
                "opt_critic.step() had already written (what identity saved-tensor hooks or .data let run). "
                "zero_grad() throws it away; the actor's loss should not reach the critic at all.",
                k=k + 1,
            )
        )
    return None


# ---------------------------------------------------------------- a hidden state carried across batches (notebook 09)


def _rnn_models(seed: int) -> tuple[nn.RNN, nn.Linear, torch.optim.Optimizer, list[tuple[torch.Tensor, torch.Tensor]]]:
    torch.manual_seed(seed)
    rnn = nn.RNN(3, 4, batch_first=True)
    head = nn.Linear(4, 1)
    opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)
    batches = [(torch.randn(2, 5, 3), torch.randn(2, 1)) for _ in range(5)]
    return rnn, head, opt, batches


@_own_generator
def check_carried_state(train: object) -> Verdict:
    """Exercise (notebook 09): repair a loop that carries an RNN's hidden state from one batch to the next.

    ``train(rnn, head, opt, batches)`` runs the whole loop, from a zero hidden state, one optimizer step per batch.
    The loop meant: each batch starts from the hidden state the previous batch ended in (its value: the context),
    and each step trains on the gradient of this batch's loss through this batch's graph (truncated
    backpropagation through time). The check runs it on fresh, seeded models beside that loop and compares, batch
    by batch, the hidden state the RNN received and the gradient each step used; a loop run "anyway" (identity
    saved-tensor hooks, ``retain_graph=True``) steps on gradients that reach back into earlier batches' graphs,
    computed from weights a step already wrote, and gets ✗.

    Example::

        >>> def train(rnn, head, opt, batches):
        ...     hidden = torch.zeros(1, 2, 4)
        ...     for x, y in batches:
        ...         out, hidden = rnn(x, hidden.detach())
        ...         loss = (head(out[:, -1]) - y).pow(2).mean()
        ...         opt.zero_grad()
        ...         loss.backward()
        ...         opt.step()
        >>> check_carried_state(train).passed
        True
    """
    if train is Ellipsis or _is_template(train):
        return pending()
    if not callable(train):
        return _not_yet(
            _t(
                "{name} should be a function: def {name}({example}): ...",
                name="train",
                example="rnn, head, opt, batches",
            )
        )
    rnn, head, opt, batches = _rnn_models(0)
    ref_rnn, ref_head, ref_opt, _same_batches = _rnn_models(0)
    start = _state(rnn, head)
    names = _names("rnn", rnn) + _names("head", head)
    modules = {"rnn": rnn, "head": head}
    with _recording(modules, {"opt": (opt, ("rnn", "head"))}, recurrent=rnn) as record:
        try:
            train(rnn, head, opt, batches)
        except Exception as error:  # the learner's code: any error is an answer to explain
            return _raised(error, "train")
    steps = [grads for _name, grads in record.steps]
    hidden = torch.zeros(1, 2, 4)
    previous = torch.zeros(0)
    for k, (x, y) in enumerate(batches):
        if k >= len(record.inputs):
            return _not_yet(
                _t(
                    "the RNN ran on {n} of the {total} batches: run it on every batch.",
                    n=len(record.inputs),
                    total=len(batches),
                )
            )
        received, with_graph = record.inputs[k]
        if k > 0 and (received is None or not torch.allclose(received, hidden, rtol=1e-4, atol=1e-6)):
            return _not_yet(
                _t(
                    "batch {k} did not start from the hidden state batch {before} ended in: its value is the context "
                    "the loop carries across batches, keep it.",
                    k=k,
                    before=k - 1,
                )
            )
        if with_graph:
            return _not_yet(
                _t(
                    "batch {k}'s hidden state still carries batch {before}'s graph: its backward reaches into "
                    "earlier batches, whose saved weights opt.step() has written since (it runs only with the check "
                    "switched off). Keep the state's value, not its history.",
                    k=k,
                    before=k - 1,
                )
            )
        out, hidden = ref_rnn(x, hidden)
        loss = (ref_head(out[:, -1]) - y).pow(2).mean()
        ref_opt.zero_grad()
        loss.backward()
        want = torch.cat(
            [p.grad.flatten() for p in [*ref_rnn.parameters(), *ref_head.parameters()] if p.grad is not None]
        )
        ref_opt.step()
        hidden = hidden.detach()
        if k >= len(steps):
            return _not_yet(
                _t("opt.step() ran {n} times for {total} batches: once per batch.", n=len(steps), total=len(batches))
            )
        used = _flat(steps[k], names)
        if _zero(used):
            return _not_yet(_t("at batch {k}, opt.step() found no gradient: does the loss still reach the RNN?", k=k))
        if k > 0 and used is not None and _close(used, want + previous):
            return _not_yet(
                _t(
                    "at batch {k}, the step used this batch's gradient added to the last one's, still in .grad "
                    "(backward adds into .grad): where does .grad get emptied?",
                    k=k,
                )
            )
        if not _close(used, want):
            return _not_yet(
                _t(
                    "at batch {k}, the step did not use the gradient of this batch's loss through this batch's graph.",
                    k=k,
                )
            )
        previous = want
    if len(steps) != len(batches):
        return _not_yet(
            _t("opt.step() ran {n} times for {total} batches: once per batch.", n=len(steps), total=len(batches))
        )
    if _same_state(start, _state(rnn, head)) or not _same_state(_state(rnn, head), _state(ref_rnn, ref_head)):
        return _not_yet(
            _(
                "every step used the intended gradient, but the parameters end elsewhere: does the loop change them another way (a second optimizer, a write of its own)?"
            )
        )
    return _right(
        _(
            "each batch started from the previous batch's hidden state, and each step trained on this batch's "
            "gradient alone: truncated backpropagation through time."
        )
    )


# ---------------------------------------------------------------- a loop written by hand (the field guide's errors, notebook 11)


def softmax_loop_data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The classifier of the hand-written loop: weights ``w`` [4, 3] (a leaf that requires grad), 16 inputs
    ``x`` [16, 4] and their class ``labels`` (0, 1 or 2).

    Example::

        >>> w, x, labels = softmax_loop_data()
        >>> w.shape, w.is_leaf and w.requires_grad, x.shape, labels.tolist()[:4]
        (torch.Size([4, 3]), True, torch.Size([16, 4]), [1, 2, 1, 1])
    """
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(4, 3, generator=g).requires_grad_()
    return w, torch.randn(16, 4, generator=g), torch.randint(0, 3, (16,), generator=g)


_LR = 0.5


def _cross_entropy_grad(w: torch.Tensor, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    probe = w.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(torch.nn.functional.cross_entropy(x @ probe, labels), probe)
    return grad


def _snapshot(into: list[tuple[torch.Tensor, torch.Tensor]], w: torch.Tensor, grad: torch.Tensor) -> None:
    into.append((w.detach().clone(), grad.detach().clone()))


@_own_generator
def check_softmax_loop(train: object, steps: int = 5) -> Verdict:
    """Exercise (notebook 11): repair a classifier's loop written by hand: a softmax normalized in place and an
    SGD step written as ``w -= 0.5 * w.grad``.

    ``train(w, x, labels, steps)`` runs ``steps`` iterations on the leaf ``w`` (from :func:`softmax_loop_data`).
    The loop meant: the mean cross-entropy of the softmax of ``x @ w``, and ``w`` moved by ``0.5`` times its
    gradient at every step. The check records, at every backward, ``w`` and the gradient that arrived, and
    compares them with that training, step by step: an error, a gradient computed from a tensor changed where
    autograd did not see it (``.data``, identity saved-tensor hooks), a gradient that accumulates over the steps,
    or an update that never reaches ``w`` each get ✗ and what happened.

    Example::

        >>> def train(w, x, labels, steps):
        ...     for step in range(steps):
        ...         loss = torch.nn.functional.cross_entropy(x @ w, labels)
        ...         loss.backward()
        ...         with torch.no_grad():
        ...             w -= 0.5 * w.grad
        ...         w.grad = None
        >>> check_softmax_loop(train).passed
        True
    """
    if train is Ellipsis or _is_template(train):
        return pending()
    if not callable(train):
        return _not_yet(
            _t("{name} should be a function: def {name}({example}): ...", name="train", example="w, x, labels, steps")
        )
    w, x, labels = softmax_loop_data()
    start = w.detach().clone()
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    handle = w.register_hook(partial(_snapshot, seen, w))  # type: ignore[no-untyped-call]
    try:
        train(w, x, labels, steps)
    except Exception as error:  # the learner's code: any error is an answer to explain
        return _raised(error, "train")
    finally:
        handle.remove()
    if seen and torch.equal(w.detach(), start):
        return _not_yet(
            _(
                "a gradient reached w, but w never changed: the update went to another tensor (w = w - ... "
                "binds a new one to the name inside the function) or ran on a copy."
            )
        )
    if len(seen) != steps:
        return _not_yet(
            _t(
                "a gradient reached w {n} times in {steps} steps: one backward of the loss per step.",
                n=len(seen),
                steps=steps,
            )
        )
    want = start.clone()
    total = torch.zeros_like(start)
    for k, (at, grad) in enumerate(seen):
        if not torch.allclose(at, want, rtol=1e-4, atol=1e-6):
            if k > 0 and torch.allclose(at, seen[k - 1][0] - _LR * total, rtol=1e-4, atol=1e-6):
                return _not_yet(
                    _t(
                        "step {k} moved w by 0.5 times the sum of every gradient so far, not by this step's: "
                        "backward adds into w.grad, and nothing emptied it after the update.",
                        k=k,
                    )
                )
            return _not_yet(_t("before step {k}, w is not where w - 0.5 * w.grad after each step puts it.", k=k + 1))
        expected = _cross_entropy_grad(at, x, labels)
        if not torch.allclose(grad, expected, rtol=1e-4, atol=1e-6):
            return _not_yet(
                _t(
                    "at step {k} the backward ran, but its gradient is not the cross-entropy's: it read a tensor "
                    "that was changed after the forward saved it, by a write autograd did not see (.data, or "
                    "saved-tensor hooks that skip the check).",
                    k=k + 1,
                )
            )
        total = total + grad
        want = want - _LR * expected
    if not torch.allclose(w.detach(), want, rtol=1e-4, atol=1e-6):
        return _not_yet(_("after the last step, w is not where w - 0.5 * w.grad puts it."))
    if not (w.is_leaf and w.requires_grad):
        return _not_yet(_("w no longer requires grad: the next backward would not reach it."))
    return _right(
        _t(
            "over {steps} steps each gradient was the cross-entropy's at that step's w, and each update moved w by "
            "0.5 times it.",
            steps=steps,
        )
    )
