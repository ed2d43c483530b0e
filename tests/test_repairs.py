"""The checks of the loops a learner repairs without a note (gradlab/course/repairs.py), fed right, equivalent and
wrong answers; and the two hints of older checks that misread a mistake (08's one-batch check, 09's error kind).

A wrong answer must get ✗ with a reason that fits it; above all the loop run "anyway" under identity
saved-tensor hooks, whose parameters can end exactly where the repaired loop's do, and ``.data`` writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
import pytest
import torch

from gradlab import course
from gradlab.course import check_actor_critic, check_carried_state, check_one_batch, check_softmax_loop
from gradlab.course.exercise import _kind_named

pytestmark = pytest.mark.course


def identity_hooks() -> contextlib.AbstractContextManager[None]:
    """Saved-tensor hooks that hand back the tensor itself: autograd's version check never sees a write."""
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


# ---------------------------------------------------------------- the actor-critic


def actor_critic(
    *,
    detach: bool = False,
    data: bool = False,
    retain: bool = False,
    hooks: bool = False,
    joint: bool = False,
    inputs: bool = False,
    actor_first: bool = False,
    recompute: bool = False,
    zero_critic: bool = True,
    detach_value: bool = False,
) -> Callable[..., None]:
    """One step of the notebook's actor-critic, in the variants a learner may write."""

    def step(actor, critic, opt_actor, opt_critic, state, reward):
        with identity_hooks() if hooks else contextlib.nullcontext():
            dist = torch.distributions.Categorical(logits=actor(state))
            action = dist.sample()
            value = critic(state).detach() if detach_value else critic(state)
            advantage = reward - value
            critic_loss = advantage.pow(2).mean()
            weight = advantage.detach() if detach else advantage.data if data else advantage
            actor_loss = -(dist.log_prob(action).unsqueeze(1) * weight).mean()
            if joint:
                opt_actor.zero_grad()
                opt_critic.zero_grad()
                (actor_loss + critic_loss).backward()
                opt_actor.step()
                opt_critic.step()
                return
            if actor_first:
                opt_actor.zero_grad()
                actor_loss.backward(retain_graph=True)
                opt_actor.step()
            if zero_critic:
                opt_critic.zero_grad()
            critic_loss.backward(retain_graph=retain)
            opt_critic.step()
            if actor_first:
                return
            if recompute:
                actor_loss = -(dist.log_prob(action).unsqueeze(1) * (reward - critic(state)).detach()).mean()
            opt_actor.zero_grad()
            actor_loss.backward(inputs=list(actor.parameters()) if inputs else None)
            opt_actor.step()

    return step


@pytest.mark.parametrize(
    "answer",
    [
        actor_critic(detach=True),
        actor_critic(data=True),  # advantage.data: the old spelling of detach, the same values and no history
        actor_critic(detach=True, joint=True),
        actor_critic(retain=True, inputs=True),  # every line in place, actor_loss into the actor only
        actor_critic(detach=True, actor_first=True),
    ],
    ids=["detach", "data", "one backward of the sum", "inputs=", "actor first"],
)
def test_actor_critic_repairs_that_train_what_the_loop_meant_pass(answer) -> None:
    verdict = check_actor_critic(answer)
    assert verdict.passed, verdict.text
    assert "no other gradient reached the critic" in verdict.text


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (actor_critic(retain=True), "A tensor a graph saved was written before that graph's backward"),
        # runs, and the parameters end where the repaired loop's do: only the gradient that arrived tells
        (actor_critic(retain=True, hooks=True), "another backward still sent a gradient into the critic"),
        (actor_critic(joint=True), "critic_loss's gradient plus actor_loss's"),
        (actor_critic(actor_first=True), "another backward still sent a gradient into the critic"),
        (actor_critic(detach=True, recompute=True), "was the advantage computed again"),
        (actor_critic(detach_value=True), "a loss with no graph"),
        (actor_critic(detach=True, zero_critic=False), "added to another one left in .grad"),
    ],
    ids=[
        "as written",
        "identity hooks",
        "sum without detach",
        "actor first",
        "recomputed",
        "critic detached",
        "no zero_grad",
    ],
)
def test_actor_critic_wrong_repairs_are_told_what_they_did(answer, reason: str) -> None:
    verdict = check_actor_critic(answer)
    assert not verdict.passed and reason in verdict.text, verdict.text


def test_the_identity_hook_loop_ends_where_the_repaired_one_does() -> None:
    """Why the actor-critic check reads the gradients that arrive: the parameters alone cannot tell."""
    ends = []
    for answer in (actor_critic(detach=True), actor_critic(retain=True, hooks=True)):
        torch.manual_seed(0)
        actor = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        critic = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        opts = torch.optim.Adam(actor.parameters(), lr=1e-2), torch.optim.Adam(critic.parameters(), lr=1e-2)
        data = torch.Generator().manual_seed(1)
        for k in range(3):
            state, reward = torch.randn(8, 4, generator=data), torch.randn(8, 1, generator=data)
            torch.manual_seed(100 + k)
            answer(actor, critic, *opts, state, reward)
        ends.append([p.detach().clone() for p in (*actor.parameters(), *critic.parameters())])
    assert all(torch.allclose(a, b) for a, b in zip(*ends))


def test_the_checks_leave_the_learners_random_generator_alone() -> None:
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    check_actor_critic(actor_critic(detach=True))
    check_carried_state(carried_state("detach"))
    check_softmax_loop(softmax_loop("right"))
    assert torch.equal(torch.rand(3), expected)


def test_unanswered_and_non_functions_get_a_verdict() -> None:
    def template(*args): ...

    for check in (check_actor_critic, check_carried_state, check_softmax_loop):
        assert check(...).pending and check(template).pending
        verdict = check(3)
        assert not verdict.passed and "should be a function" in verdict.text


# ---------------------------------------------------------------- the RNN's carried hidden state


def carried_state(mode: str) -> Callable[..., None]:
    def train(rnn, head, opt, batches):
        hidden = torch.zeros(1, 2, 4)
        with identity_hooks() if mode == "hooks" else contextlib.nullcontext():
            for x, y in batches:
                if mode == "detach":
                    incoming = hidden.detach()
                elif mode == "data":
                    incoming = hidden.data
                elif mode == "zeros":
                    incoming = torch.zeros(1, 2, 4)
                elif mode == "none":
                    incoming = None
                else:
                    incoming = hidden
                out, hidden = rnn(x, incoming)
                loss = (head(out[:, -1]) - y).pow(2).mean()
                if mode != "no zero_grad":
                    opt.zero_grad()
                loss.backward(retain_graph=mode in ("retain", "hooks"))
                opt.step()
                if mode in ("no zero_grad", "detach after"):
                    hidden = hidden.detach()

    return train


@pytest.mark.parametrize("mode", ["detach", "data", "detach after"])
def test_carried_state_repairs_pass(mode: str) -> None:
    verdict = check_carried_state(carried_state(mode))
    assert verdict.passed, verdict.text


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("as written", "an earlier backward had freed"),
        ("retain", "A tensor a graph saved was written"),
        ("hooks", "batch 1's hidden state still carries batch 0's graph"),
        ("zeros", "did not start from the hidden state batch 0 ended in"),
        ("none", "did not start from the hidden state batch 0 ended in"),
        ("no zero_grad", "added to the last one's"),
    ],
)
def test_carried_state_wrong_repairs_are_told_what_they_did(mode: str, reason: str) -> None:
    verdict = check_carried_state(carried_state(mode))
    assert not verdict.passed and reason in verdict.text, verdict.text


# ---------------------------------------------------------------- the hand-written classifier loop


def softmax_loop(mode: str) -> Callable[..., None]:
    def train(w, x, labels, steps):
        for _step in range(steps):
            with identity_hooks() if mode == "hooks" else contextlib.nullcontext():
                p = torch.exp(x @ w)
                if mode in ("as written", "hooks", "no_grad only"):
                    p /= p.sum(dim=1, keepdim=True)
                elif mode == "data":
                    p.data /= p.data.sum(dim=1, keepdim=True)
                else:
                    p = p / p.sum(dim=1, keepdim=True)
                loss = -p[torch.arange(len(labels)), labels].log().mean()
                if mode == "cross_entropy":
                    loss = torch.nn.functional.cross_entropy(x @ w, labels)
                loss.backward()
            if mode == "as written":
                w -= 0.5 * w.grad
            elif mode == "w.data":
                w.data -= 0.5 * w.grad
                w.grad = None
            elif mode == "rebound":
                with torch.no_grad():
                    w = w - 0.5 * w.grad
                w.requires_grad_()
            else:
                with torch.no_grad():
                    w -= 0.5 * w.grad
                if mode != "no zeroing":
                    w.grad.zero_()

    return train


@pytest.mark.parametrize("mode", ["right", "cross_entropy", "w.data"])
def test_softmax_loop_repairs_pass(mode: str) -> None:
    verdict = check_softmax_loop(softmax_loop(mode))
    assert verdict.passed, verdict.text


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("as written", "A tensor a graph saved was written"),
        ("hooks", "its gradient is not the cross-entropy's"),
        ("data", "its gradient is not the cross-entropy's"),
        ("rebound", "w never changed"),
        ("no zeroing", "the sum of every gradient so far"),
    ],
)
def test_softmax_loop_wrong_repairs_are_told_what_they_did(mode: str, reason: str) -> None:
    verdict = check_softmax_loop(softmax_loop(mode))
    assert not verdict.passed and reason in verdict.text, verdict.text


def test_the_softmax_loop_as_written_fails_twice_and_then_silently() -> None:
    """The exercise's three layers, in real torch: the in-place normalization, the in-place update, the sum in .grad."""
    w, x, labels = course.softmax_loop_data()
    p = torch.exp(x @ w)
    p /= p.sum(dim=1, keepdim=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (-p[torch.arange(16), labels].log().mean()).backward()
    torch.nn.functional.cross_entropy(x @ w, labels).backward()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w -= 0.5 * w.grad
    first = w.grad.clone()
    torch.nn.functional.cross_entropy(x @ w, labels).backward()
    assert torch.allclose(w.grad, 2 * first), "a second backward adds into .grad"


# ---------------------------------------------------------------- older checks: hints that fit the mistake


def one_batch(mode: str):
    x, y = course.batches(1, seed=0)[0]
    pair = course.make_pair(seed=0, softmax=False, lr=1e-2)
    n_2, opt_2, criterion = pair.n_2, pair.opt_2, pair.criterion
    for _step in range(200 if mode != "short" else 3):
        opt_2.zero_grad()
        if mode == "item":
            loss_2 = torch.tensor(criterion(y, n_2(2 * x)).item(), requires_grad=True)
        elif mode == "another network":
            loss_2 = criterion(y, pair.n_1(2 * x))
        else:
            loss_2 = criterion(y, n_2(2 * x))
        loss_2.backward()
        opt_2.step()
    last = np.float32(loss_2.item()) if mode == "numpy" else loss_2.item()
    return check_one_batch(n_2, x, y, last)


@pytest.mark.parametrize(
    ("mode", "passed", "reason"),
    [
        ("right", True, "it can learn"),
        ("numpy", True, "it can learn"),
        ("item", False, "exactly where make_pair put them"),
        ("another network", False, "exactly where make_pair put them"),
        ("short", False, "train longer"),
    ],
)
def test_one_batch_tells_a_loop_that_trains_nothing_from_one_that_trains_too_little(
    mode: str, passed: bool, reason: str
) -> None:
    verdict = one_batch(mode)
    assert verdict.passed is passed and reason in verdict.text, verdict.text


@pytest.mark.parametrize(
    "answer", ["inplace", "in-place", "modified inplace", "in place", "modified by an inplace operation", "GL0002"]
)
def test_pytorchs_own_word_for_the_error_names_the_kind(answer: str) -> None:
    assert _kind_named(answer) == "modified_in_place"
    verdict = course.check_error_kind(answer, "modified_in_place", success="right.", hint="look again")
    assert verdict.passed


def test_other_kinds_keep_their_names() -> None:
    assert _kind_named("leaf inplace") == "leaf_in_place"
    assert _kind_named("graph freed") == "graph_freed"
    assert _kind_named("inplace op") is None
