"""Judge a repaired iteration of the two-network loop by what it trains: the gradient each step used.

The learner writes ``iteration(n_1, n_2, opt_1, opt_2, criterion, x, y)``, one
iteration of a loop. :func:`judge` runs it for a few iterations on fresh seeded
networks (no softmax, so no gradient is zero) and, in every iteration, compares:

1. autograd's version check while the learner's forward ran: a probe in a forward
   pre-hook writes a tensor a tiny graph saved and runs that graph's backward; with
   the check on it raises (or gives the forward's gradient, when hooks keep copies),
   with it off (identity saved-tensor hooks, the "run it anyway" loop) it gives a
   silently wrong gradient;
2. writes the counter missed: the iteration runs under
   ``gradlab.track(verify_saved=True)``, whose ``SilentWriteWarning`` says a backward
   read a saved tensor that a write through ``.data``, a fused step or
   ``_unsafe_preserve_version_counter`` had changed;
3. the gradient each optimizer step used (recorded by a step pre-hook), written as a
   sum of this iteration's loss gradients at the weights the iteration started from,
   plus what the previous step used (a gradient left in ``.grad``): which losses
   trained which network, how many times, and whether ``zero_grad()`` ran;
4. the parameters, against the intended training run beside it.

The first difference is the verdict, told in the learner's terms: a step that never
ran, parameters no gradient reached, a gradient accumulated from the last iteration
or twice in this one, a loss that reached a network it should not (or did not reach
one it should). Nothing the answer does raises out of the check.

NOTE [Components]
At the weights an iteration starts from, the gradient any correct backward of this
iteration can produce for network ``k`` is a sum ``c_1 * g(loss_1) + c_2 * g(loss_2)``,
where ``g(loss)`` is that loss's gradient for ``k``'s parameters, computed on copies of
the networks. Two more terms name common mistakes: ``g(loss_2 on the stepped n_1)``
(``pred_1`` recomputed after ``opt_1.step()``) and the gradient the previous step used
(``zero_grad()`` missing). The recorded gradient is matched against sums with small
coefficients (0, 0.5, 1, 1.5, 2), the intent's first: an exact match (relative 1e-5)
names the training; none means the gradient was computed from something else, a saved
tensor changed before a backward read it.
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

import gradlab

from .exercise import Verdict, _is_template, _not_a_function, _not_yet, _raised, _right, pending
from .networks import Pair, batches, make_pair
from .words import say, say_t

__all__ = [
    "Intent",
    "judge",
    "check_repaired_iteration",
    "check_repaired_loop",
    "check_guided_loop",
    "version_check_probe",
]

NETWORKS = ("n_1", "n_2")
LOSS_1, LOSS_2, AFTER, PREVIOUS = "loss_1", "loss_2", "loss_2 on the stepped n_1", "previous"
_COEFFICIENTS = (0.0, 0.5, 1.0, 1.5, 2.0)
_RTOL, _ATOL = 1e-5, 1e-9
_ARGS = "n_1, n_2, opt_1, opt_2, criterion, x, y"


@dataclass(frozen=True)
class Intent:
    """What one iteration should train: for each network, the loss gradients its optimizer steps with.

    ``n_1={"loss_1": 1.0}, n_2={"loss_2": 1.0}`` is the original loop's intent (fix (a)):
    ``loss_1`` trains ``n_1``, ``loss_2`` trains ``n_2`` on ``n_1``'s output as the forward
    gave it. A loss left out has coefficient 0.
    """

    n_1: Mapping[str, float]
    n_2: Mapping[str, float]

    def of(self, network: str) -> dict[str, float]:
        return dict(self.n_1 if network == "n_1" else self.n_2)


#: The original loop's intent: loss_1 trains n_1, loss_2 trains n_2 (notebooks 01, 06, 11).
ORIGINAL = Intent({LOSS_1: 1.0}, {LOSS_2: 1.0})
#: Notebook 06's guided loop: network 2's loss also trains network 1, at half weight.
GUIDED = Intent({LOSS_1: 1.0, LOSS_2: 0.5}, {LOSS_2: 1.0})


# ---------------------------------------------------------------- the version-check probe


def version_check_probe() -> str:
    """Whether autograd's version check is on for tensors saved now: ``"on"``, ``"copies"`` or ``"off"``.

    A tiny graph saves ``a`` (``a * a`` at ``a = 1``); ``a`` is then written in place and
    the graph's backward runs. ``"on"``: it raised (autograd's check, or hooks that check
    versions as ``gradlab.track`` does). ``"copies"``: it gave the forward's gradient, 2
    (hooks that keep a copy, ``allow_mutation_on_saved_tensors``). ``"off"``: it gave 4,
    the gradient at the written value, silently (identity saved-tensor hooks).

    Example::

        >>> version_check_probe()
        'on'
        >>> with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        ...     version_check_probe()
        'off'
    """
    with torch.enable_grad():
        a = torch.ones(1, requires_grad=True)
        b = (a * a).sum()
        with torch.no_grad():
            a.add_(1)
        try:
            (grad,) = torch.autograd.grad(b, a)
        except RuntimeError:
            return "on"
    return "copies" if math.isclose(grad.item(), 2.0) else "off"


# ---------------------------------------------------------------- recording one iteration


def _flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1).double() for t in tensors])


class _Recorder:
    """Hooks on the learner's pair for one iteration: every gradient a backward computes for a parameter, the
    gradient at each optimizer step, and the version-check probe at the networks' first forward."""

    def __init__(self, pair: Pair, probed: set[str]) -> None:
        self.pair = pair
        self.steps: dict[str, list[list[torch.Tensor | None]]] = {k: [] for k in NETWORKS}
        self.computed: dict[str, list[list[torch.Tensor]]] = {
            k: [[] for _p in pair.names[k].parameters()] for k in NETWORKS
        }
        self.probed = probed  # the networks whose forward ran the probe already (once per judge: it costs a backward)
        self.check_off = False

    def _on_step(self, network: str) -> Callable[..., None]:
        def hook(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            self.steps[network].append([None if p.grad is None else p.grad.detach().clone() for p in params])

        return hook

    def _on_grad(self, network: str, index: int) -> Callable[[torch.Tensor], None]:
        def hook(grad: torch.Tensor) -> None:
            self.computed[network][index].append(grad.detach().clone())

        return hook

    def _on_forward(self, network: str) -> Callable[..., None]:
        def hook(module: torch.nn.Module, args: Any) -> None:
            if network not in self.probed:
                self.probed.add(network)
                self.check_off = self.check_off or version_check_probe() == "off"

        return hook

    @contextmanager
    def active(self) -> Iterator[_Recorder]:
        handles = [
            self.pair.opt_1.register_step_pre_hook(self._on_step("n_1")),
            self.pair.opt_2.register_step_pre_hook(self._on_step("n_2")),
            self.pair.n_1.register_forward_pre_hook(self._on_forward("n_1")),
            self.pair.n_2.register_forward_pre_hook(self._on_forward("n_2")),
        ]
        for k in NETWORKS:
            for index, p in enumerate(self.pair.names[k].parameters()):
                handles.append(p.register_hook(self._on_grad(k, index)))  # type: ignore[no-untyped-call]
        try:
            yield self
        finally:
            for handle in handles:
                handle.remove()


def _components(
    before: tuple[torch.nn.Module, torch.nn.Module], after_1: torch.nn.Module, criterion: Any, x: Any, y: Any
) -> dict[str, dict[str, torch.Tensor]]:
    """Each network's loss gradients at the weights the iteration started from (NOTE [Components])."""
    n_1, n_2 = before
    after_1 = copy.deepcopy(after_1)
    p_1, p_2, p_after = list(n_1.parameters()), list(n_2.parameters()), list(after_1.parameters())
    with torch.enable_grad():
        pred_1 = n_1(x)
        loss_1, loss_2 = criterion(y, pred_1), criterion(y, n_2(pred_1))
        g_1 = torch.autograd.grad(loss_1, p_1, retain_graph=True)
        g_2 = torch.autograd.grad(loss_2, p_1 + p_2)
        g_after = torch.autograd.grad(criterion(y, n_2(after_1(x))), p_after + p_2)
    return {
        "n_1": {
            LOSS_1: _flat(list(g_1)),
            LOSS_2: _flat(list(g_2[: len(p_1)])),
            AFTER: _flat(list(g_after[: len(p_1)])),
        },
        "n_2": {LOSS_2: _flat(list(g_2[len(p_1) :])), AFTER: _flat(list(g_after[len(p_1) :]))},
    }


def _stale(computed: list[tuple[list[torch.Tensor], int]], basis: Mapping[str, torch.Tensor]) -> bool:
    """Whether a gradient a backward computed for one of a network's parameters is no sum of the basis (a stale read)."""
    at = 0
    for grads, size in computed:
        part = {name: b[at : at + size] for name, b in basis.items()}
        at += size
        if any(_match(g.reshape(-1).double(), part, {}) is None for g in grads):
            return True
    return False


def _match(
    grad: torch.Tensor, basis: Mapping[str, torch.Tensor], intended: Mapping[str, float]
) -> dict[str, float] | None:
    """The small coefficients that make ``grad`` from ``basis``, the intended ones tried first; None if none do."""
    names = list(basis)
    first = tuple(intended.get(n, 0.0) for n in names)
    for coefficients in itertools.chain([first], itertools.product(_COEFFICIENTS, repeat=len(names))):
        total = sum((c * basis[n] for n, c in zip(names, coefficients) if c), torch.zeros_like(grad))
        scale = max(float(grad.abs().max()), float(total.abs().max()), 1e-12)
        if torch.allclose(grad, total, rtol=_RTOL, atol=_ATOL * scale):
            return {n: c for n, c in zip(names, coefficients) if c}
    return None


def _sum_text(coefficients: Mapping[str, float]) -> str:
    """``loss_1 + 0.5 × loss_2``, in the language in effect; ``nothing`` for none."""
    if not coefficients:
        return say("no loss")
    parts = []
    for name, c in coefficients.items():
        label = say("the previous step's gradient") if name == PREVIOUS else name
        if name == AFTER:
            label = say("loss_2 on n_1's output after opt_1.step()")
        parts.append(label if c == 1 else f"{c:g} × {label}")
    return " + ".join(parts)


# ---------------------------------------------------------------- the verdict on one network's step


def _step_verdict(
    network: str,
    recorded: list[list[torch.Tensor | None]],
    names: list[str],
    basis: dict[str, torch.Tensor],
    intended: dict[str, float],
    moved: bool,
    iteration: int,
) -> Verdict | None:
    """What is wrong with how ``network``'s optimizer stepped in this iteration, or None."""
    opt = "opt_1" if network == "n_1" else "opt_2"
    if not recorded:
        if moved:
            return _not_yet(
                say_t(
                    "{network} changed in iteration {i}, but {opt}.step() never ran: something wrote its "
                    "parameters directly (through .data, or under torch.no_grad()); train it with its optimizer.",
                    network=network,
                    opt=opt,
                    i=iteration + 1,
                )
            )
        return _not_yet(
            say_t(
                "{opt}.step() never ran in iteration {i}: {network}'s parameters did not change, so {network} "
                "did not learn.",
                network=network,
                opt=opt,
                i=iteration + 1,
            )
        )
    if len(recorded) > 1:
        return _not_yet(
            say_t(
                "{opt}.step() ran {n} times in iteration {i}: one step per iteration, after the backward that "
                "trains {network}.",
                network=network,
                opt=opt,
                n=len(recorded),
                i=iteration + 1,
            )
        )
    grads = recorded[0]
    missing = [name for name, g in zip(names, grads) if g is None or not bool(g.any())]
    if missing:
        return _not_yet(
            say_t(
                "at {opt}.step() in iteration {i}, {names} had no gradient: no backward reached them before the "
                "step (a detach cuts off every layer before it), or zero_grad() ran between the backward and "
                "the step. Their values stay where they were.",
                opt=opt,
                names=", ".join(missing),
                i=iteration + 1,
            )
        )
    flat = torch.cat([g.reshape(-1).double() for g in grads if g is not None])
    found = _match(flat, basis, intended)
    if found is None:
        return _not_yet(
            say_t(
                "{opt}.step() in iteration {i} used a gradient that is no sum of this iteration's loss gradients "
                "at the weights it started from: a backward read a saved tensor that had changed since the "
                "forward (a write through .data, or a step before the backward).",
                opt=opt,
                i=iteration + 1,
            )
        )
    want = {k: v for k, v in intended.items() if v}
    if found == want:
        return None
    if found.get(PREVIOUS):
        return _not_yet(
            say_t(
                "in iteration {i}, {opt}.step() used this iteration's gradient plus the one the previous step "
                "used: {network}'s .grad was not cleared, so gradients accumulated. Call {opt}.zero_grad() "
                "before this iteration's backward.",
                network=network,
                opt=opt,
                i=iteration + 1,
            )
        )
    doubled = [k for k, v in want.items() if v == 1 and found.get(k) == 2]
    if doubled and all(found.get(k, 0.0) in (want.get(k, 0.0), 2 * want.get(k, 0.0)) for k in {*found, *want}):
        return _not_yet(
            say_t(
                "{network} got {loss}'s gradient twice before {opt}.step(): two backward calls through {loss} "
                "reached it, and gradients add up in .grad.",
                network=network,
                opt=opt,
                loss=doubled[0],
            )
        )
    if found.get(AFTER):
        return _not_yet(
            say_t(
                "n_2 learned from n_1's output after opt_1.step() (pred_1 recomputed after the step): the "
                "intent is network 2 on the output this iteration's forward gave. Stepped with: {got}.",
                got=_sum_text(found),
            )
        )
    return _not_yet(
        say_t(
            "{opt}.step() used {got}; the intent is {want}.{why}",
            opt=opt,
            got=_sum_text(found),
            want=_sum_text(want),
            why=_why(network, found, want),
        )
    )


def _why(network: str, found: Mapping[str, float], want: Mapping[str, float]) -> str:
    """One sentence on the likely cause of a wrong mix of losses, or nothing."""
    got_1, got_2 = found.get(LOSS_1, 0.0), found.get(LOSS_2, 0.0)
    want_1, want_2 = want.get(LOSS_1, 0.0), want.get(LOSS_2, 0.0)
    if network == "n_1" and got_2 > want_2 == 0:
        return " " + say(
            "loss_2's backward reached n_1 before opt_1.step(), through pred_1: keep it out of n_1 (a detach where "
            "n_1's output enters n_2, or a backward into n_2's parameters only: inputs=)."
        )
    if network == "n_1" and got_2 > want_2:
        return " " + say(
            "More of loss_2's gradient reached n_1 than the loop means: every backward through loss_2 before "
            "opt_1.step() adds its share to n_1's .grad, and a backward into n_2's parameters only (inputs=) adds "
            "none."
        )
    if network == "n_1" and got_2 == 0 < want_2:
        return " " + say(
            "No gradient of loss_2 reached n_1 before its step: a detach at n_2's input cuts network 1 off from "
            "loss_2 altogether."
        )
    if network == "n_1" and got_1 != want_1:
        return " " + say("n_1's step should use loss_1's gradient once: count the backward calls through loss_1.")
    if network == "n_2" and got_2 != want_2:
        return " " + say(
            "n_2's step should use loss_2's gradient once: count the backward calls that reach n_2 and the weight "
            "each gives loss_2."
        )
    return ""


# ---------------------------------------------------------------- the judge


def _differs(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return not all(torch.allclose(u, v, rtol=1e-5, atol=1e-7) for u, v in zip(a, b))


def _state(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _set_grads(module: torch.nn.Module, flat: torch.Tensor) -> None:
    at = 0
    for p in module.parameters():
        n = p.numel()
        p.grad = flat[at : at + n].reshape(p.shape).to(p.dtype).clone()
        at += n


def judge(
    iteration: object,
    *,
    name: str,
    intent: Intent,
    success: str,
    steps: int = 3,
    seed: int = 0,
    raised: Callable[[BaseException], str] = _raised,
) -> Verdict:
    """Run ``iteration`` ``steps`` times on fresh networks beside ``intent``; ✓ ``success`` or ✗ with the reason.

    ``name`` is the learner's function's name, for the message when it is not a
    function. ``seed`` chooses the batches (:func:`batches`); the networks are
    ``make_pair(0, softmax=False)``. ``raised`` turns an error the answer raised into
    the ✗ line's reason.
    """
    if iteration is Ellipsis or _is_template(iteration):
        return pending()
    if not callable(iteration):
        return _not_a_function(name, _ARGS)
    learner, reference = make_pair(seed=0, softmax=False), make_pair(seed=0, softmax=False)
    names = {k: [f"{k}.{n}" for n, _p in learner.names[k].named_parameters()] for k in NETWORKS}
    previous: dict[str, torch.Tensor | None] = {k: None for k in NETWORKS}
    probed: set[str] = set()
    for i, (x, y) in enumerate(batches(steps, seed=seed)):
        before = (copy.deepcopy(learner.n_1), copy.deepcopy(learner.n_2))
        start = {k: _state(learner.names[k]) for k in NETWORKS}
        recorder = _Recorder(learner, probed)
        try:
            with warnings.catch_warnings(), recorder.active():
                warnings.simplefilter("ignore")  # the learner's warnings are not the verdict
                iteration(learner.n_1, learner.n_2, learner.opt_1, learner.opt_2, learner.criterion, x, y)
        except Exception as error:  # the learner's code: any error is a verdict, never a crash
            return _not_yet(raised(error))
        if recorder.check_off:
            return _not_yet(
                say(
                    "your iteration ran with autograd's version check switched off (saved-tensor hooks that hand "
                    "back the tensor as it is now): its backward read a weight opt_1.step() had already changed "
                    "and computed a silently wrong gradient. Even when no step uses that gradient, the loop "
                    "computes it: change the order or what each backward reaches, not the check."
                )
            )
        basis = _components(before, learner.n_1, learner.criterion, x, y)
        sizes = {k: [p.numel() for p in learner.names[k].parameters()] for k in NETWORKS}
        for k in NETWORKS:
            if _stale(list(zip(recorder.computed[k], sizes[k])), basis[k]):
                return _not_yet(
                    say_t(
                        "a backward in iteration {i} computed a gradient for {network} that no backward at this "
                        "iteration's weights gives: it read a saved tensor written after the forward saved it, a "
                        "write the version counter did not see (.data, a fused step, "
                        "_unsafe_preserve_version_counter). That gradient is silently wrong, used or not: change "
                        "the order or what each backward reaches, not what the counter sees.",
                        network=k,
                        i=i + 1,
                    )
                )
        for k in NETWORKS:
            if previous[k] is not None:
                basis[k][PREVIOUS] = previous[k]  # type: ignore[assignment]
        for k, net in (("n_1", learner.n_1), ("n_2", learner.n_2)):
            moved = _differs(start[k], _state(net))
            verdict = _step_verdict(k, recorder.steps[k], names[k], basis[k], intent.of(k), moved, i)
            if verdict is not None:
                return verdict
            grads = recorder.steps[k][0]
            previous[k] = torch.cat([g.reshape(-1).double() for g in grads if g is not None])
        for k, net, opt in (("n_1", reference.n_1, reference.opt_1), ("n_2", reference.n_2, reference.opt_2)):
            wanted = sum(c * basis[k][loss] for loss, c in intent.of(k).items())
            _set_grads(net, wanted)  # type: ignore[arg-type]
            opt.step()
        for k in NETWORKS:
            if _differs(_state(learner.names[k]), _state(reference.names[k])):
                return _not_yet(
                    say_t(
                        "{network}'s optimizer stepped with the right gradient, but its parameters differ from that "
                        "step's result after iteration {i}: something else wrote them (through .data, or under "
                        "torch.no_grad()).",
                        network=k,
                        i=i + 1,
                    )
                )
    return _right(success)


# ---------------------------------------------------------------- the course's checks


def check_repaired_iteration(one_iteration: object, steps: int = 3) -> Verdict:
    """Exercise (notebook 01): one iteration of the original loop that runs, ``loss_1`` training ``n_1`` and
    ``loss_2`` training ``n_2``.

    ``one_iteration(n_1, n_2, opt_1, opt_2, criterion, x, y)`` runs one iteration; the check
    runs it ``steps`` times (:func:`judge`) and compares each step's gradient with that
    training: ``loss_1``'s for ``n_1``, ``loss_2``'s (on ``n_1``'s output as the forward
    gave it) for ``n_2``. ``n_2(pred_1.detach())`` and ``loss_2.backward(inputs=...)`` pass;
    every other answer gets ✗ with what it trained.

    Example::

        >>> def one_iteration(n_1, n_2, opt_1, opt_2, criterion, x, y):
        ...     pred_1 = n_1(x)
        ...     opt_1.zero_grad()
        ...     loss_1 = criterion(y, pred_1)
        ...     loss_1.backward()
        ...     opt_1.step()
        ...     pred_2 = n_2(pred_1.detach())
        ...     opt_2.zero_grad()
        ...     loss_2 = criterion(y, pred_2)
        ...     loss_2.backward()
        ...     opt_2.step()
        >>> check_repaired_iteration(one_iteration).passed
        True
    """
    return judge(
        one_iteration,
        name="one_iteration",
        intent=ORIGINAL,
        steps=steps,
        seed=1,
        success=say(
            "it runs, and every step used the gradient it should: loss_1's for n_1, loss_2's for n_2 (on n_1's "
            "output as the forward gave it), nothing else, nothing left over."
        ),
    )


def check_repaired_loop(repaired: object, steps: int = 3) -> Verdict:
    """Exercise (playground): repair one iteration of the original loop so it trains what the loop meant.

    ``repaired(n_1, n_2, opt_1, opt_2, criterion, x, y)`` runs one iteration; judged as
    :func:`check_repaired_iteration` is (:func:`judge`): ``n_1`` trained by ``loss_1``
    alone, ``n_2`` by ``loss_2`` on ``n_1``'s output before the step (fix (a)). The loop
    run with the version check off (identity saved-tensor hooks) trains the same
    parameters and still gets ✗: its backward computes a silently wrong gradient.
    """
    return judge(
        repaired,
        name="repaired",
        intent=ORIGINAL,
        steps=steps,
        seed=0,
        success=say_t(
            "over {steps} iterations n_1 learned from loss_1 alone and n_2 from loss_2 on n_1's output, as the "
            "original loop meant, and no backward read a stale tensor.",
            steps=steps,
        ),
    )


def _raised_in_guided(error: BaseException) -> str:
    """The reason for an error in the guided loop, whose first backward is of a sum, not of loss_1."""
    first = str(error).split(". ")[0].split("\n")[0]
    kind = gradlab.explain(error).kind if isinstance(error, RuntimeError) else None
    if kind == "graph_freed":
        return say_t(
            "your iteration raised {type}: {message} (failure 1): a backward ran through what an earlier backward "
            "freed. Can one backward do the work of both, or can the first keep the graph while nothing changes it?",
            type=type(error).__name__,
            message=first,
        )
    if kind == "modified_in_place":
        return say_t(
            "your iteration raised {type}: {message} (failure 2): a step changed a weight that a later backward "
            "needs. Can every backward run before any step?",
            type=type(error).__name__,
            message=first,
        )
    return _raised(error)


def check_guided_loop(iteration: object, steps: int = 3) -> Verdict:
    """Exercise (notebook 06): repair a loop in which network 2's loss also trains network 1, at half weight.

    Intent: ``n_1``'s step uses ``loss_1 + 0.5 * loss_2``'s gradient, ``n_2``'s step
    ``loss_2``'s, both at the weights the iteration started from. Judged by the gradient
    each step used (:func:`judge`).

    Example::

        >>> def iteration(n_1, n_2, opt_1, opt_2, criterion, x, y):
        ...     pred_1 = n_1(x)
        ...     loss_1, loss_2 = criterion(y, pred_1), criterion(y, n_2(pred_1))
        ...     opt_1.zero_grad()
        ...     opt_2.zero_grad()
        ...     (loss_1 + 0.5 * loss_2).backward(inputs=list(n_1.parameters()), retain_graph=True)
        ...     loss_2.backward(inputs=list(n_2.parameters()))
        ...     opt_1.step()
        ...     opt_2.step()
        >>> check_guided_loop(iteration).passed
        True
    """
    return judge(
        iteration,
        name="iteration",
        intent=GUIDED,
        steps=steps,
        seed=0,
        raised=_raised_in_guided,
        success=say(
            "every step used the gradient the loop means: n_1 loss_1 + 0.5 × loss_2, n_2 loss_2, at the weights "
            "the iteration started from, and no backward read a stale tensor."
        ),
    )
