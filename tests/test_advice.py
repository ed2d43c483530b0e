"""Fix advice, proven: for each failure pattern, the first fix gradlab prints, what it says it trains,
and that applying it runs AND gives the gradients that intent implies (compared with torch.autograd.grad).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import scenarios
import torch
from torch import nn

import gradlab
from gradlab.edits import apply_edits
from gradlab.rewrite import detach_in, rewrite_in_place

pytestmark = pytest.mark.library


def _failure(names, loop) -> gradlab.Diagnosis:
    """Run ``loop`` under track(); it must fail; return the diagnosis attached to the error."""
    with gradlab.track(names=names, warn=False) as tracker, pytest.raises(RuntimeError) as info:
        loop()
    diagnosis = tracker.diagnosis_for(info.value)
    assert diagnosis is not None
    assert sum(note.lstrip().startswith("gradlab:") for note in info.value.__notes__) == 1
    return diagnosis


def _grads(loss: torch.Tensor, module: nn.Module) -> list[torch.Tensor]:
    return list(torch.autograd.grad(loss, list(module.parameters()), retain_graph=True, allow_unused=True))


def _same(a: list[torch.Tensor | None], b: list[torch.Tensor | None]) -> bool:
    return all(
        (x is None and y is None) or (x is not None and y is not None and torch.allclose(x, y)) for x, y in zip(a, b)
    )


# -- the course loop: both intents -------------------------------------------------------------------


def _course_failure() -> tuple[scenarios.State, gradlab.Diagnosis]:
    """The course's loop with retain_graph=True, written as the course writes it."""
    s = scenarios.fresh(softmax=False)
    n_1, n_2, opt_1, opt_2, criterion = s.pair.n_1, s.pair.n_2, s.pair.opt_1, s.pair.opt_2, s.pair.criterion
    x, y = s.x, s.y

    def loop() -> None:
        pred_1 = n_1(x)
        opt_1.zero_grad()
        loss_1 = criterion(y, pred_1)
        loss_1.backward(retain_graph=True)
        opt_1.step()
        pred_2 = n_2(pred_1)
        opt_2.zero_grad()
        loss_2 = criterion(y, pred_2)
        loss_2.backward()

    return s, _failure(s.names, loop)


def test_course_loop_first_fix_is_detach_at_entry_and_trains_what_the_loop_meant() -> None:
    _, d = _course_failure()
    assert d.cause == "optimizer_step"
    fix = d.fixes[0]
    assert fix.intent == "if loss_2 should not train n_1"
    assert fix.code == "pred_2 = n_2(pred_1.detach())"
    assert fix.trains.startswith("loss_2 trains n_2 only; n_1 learns from loss_1 only: the training your loop would do")
    assert "opt_1.zero_grad() before the next step discards it" in fix.trains
    # Applying it: the loop runs, and the gradients are loss_1's for n_1 and loss_2's for n_2.
    s = scenarios.fresh(softmax=False)
    p = s.pair
    pred_1 = p.n_1(s.x)
    loss_1 = p.criterion(s.y, pred_1)
    want_1 = _grads(loss_1, p.n_1)
    p.opt_1.zero_grad()
    loss_1.backward()
    assert _same([q.grad for q in p.n_1.parameters()], want_1)
    p.opt_1.step()
    pred_2 = p.n_2(pred_1.detach())
    loss_2 = p.criterion(s.y, pred_2)
    want_2 = _grads(loss_2, p.n_2)
    p.opt_2.zero_grad()
    p.opt_1.zero_grad()
    loss_2.backward()
    assert _same([q.grad for q in p.n_2.parameters()], want_2)
    assert all(q.grad is None for q in p.n_1.parameters())  # loss_2 sends nothing into n_1


def test_course_loop_inputs_fix_trains_the_same_as_detaching() -> None:
    _, d = _course_failure()
    fix = d.fixes[1]
    assert fix.code == "loss_2.backward(inputs=list(n_2.parameters()))"
    assert fix.trains.startswith("the same as detaching")
    s = scenarios.fresh(softmax=False)
    p = s.pair
    pred_1 = p.n_1(s.x)
    p.opt_1.zero_grad()
    p.criterion(s.y, pred_1).backward(retain_graph=True)
    p.opt_1.step()
    loss_2 = p.criterion(s.y, p.n_2(pred_1))
    p.opt_2.zero_grad()
    p.opt_1.zero_grad()
    loss_2.backward(inputs=list(p.n_2.parameters()))  # runs: n_1's stale weights are never needed
    assert all(q.grad is None for q in p.n_1.parameters())
    # n_2's gradient is exactly loss_2's, as with the detach
    loss_2_detached = p.criterion(s.y, p.n_2(pred_1.detach()))
    assert _same([q.grad for q in p.n_2.parameters()], _grads(loss_2_detached, p.n_2))


def test_course_loop_other_intent_is_the_sum_and_says_it_changes_training() -> None:
    _, d = _course_failure()
    (fix,) = [f for f in d.fixes if f.intent == "if loss_2 should also train n_1"]
    # Reordering the loop is no one-line edit: the fix is a sentence, never code that looks runnable.
    assert fix.code is None and fix.edits == () and fix.applicability == "sentence"
    assert "loss_1 and loss_2 both train n_1" in fix.trains and "a different training" in fix.trains
    s = scenarios.fresh(softmax=False)
    p = s.pair
    pred_1 = p.n_1(s.x)
    loss_1, loss_2 = p.criterion(s.y, pred_1), p.criterion(s.y, p.n_2(pred_1))
    want = _grads(loss_1 + loss_2, p.n_1)
    p.opt_1.zero_grad()
    p.opt_2.zero_grad()
    (loss_1 + loss_2).backward()
    assert _same([q.grad for q in p.n_1.parameters()], want)
    assert not _same(want, _grads(p.criterion(s.y, p.n_1(s.x)), p.n_1))  # truly different from loss_1 alone


def test_retain_graph_is_never_offered_for_the_in_place_error() -> None:
    _, d = _course_failure()
    assert all("retain_graph=True" not in (f.summary + (f.code or "")) for f in d.fixes)


# -- a GAN: recompute after the step -----------------------------------------------------------------


def _gan():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    return G, D, torch.optim.Adam(G.parameters(), 1e-3), torch.optim.Adam(D.parameters(), 1e-3), nn.BCEWithLogitsLoss()


def test_gan_first_fix_is_recompute_after_the_step() -> None:
    G, D, opt_g, opt_d, bce = _gan()
    z, real = torch.randn(16, 4), torch.randn(16, 2)

    def loop() -> None:
        fake = G(z)
        out_fake = D(fake)
        d_loss = bce(D(real), torch.ones(16, 1)) + bce(out_fake, torch.zeros(16, 1))
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
        g_loss = bce(out_fake, torch.ones(16, 1))
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()

    d = _failure({"G": G, "D": D}, loop)
    fix = d.fixes[0]
    assert fix.summary.startswith("recompute D's forward after opt_d.step(), and g_loss from it")
    # The code is the edit: the forward line inserted right after the step, in the loop's own function.
    (edit,) = fix.edits
    assert fix.code == "out_fake = D(fake)" and edit.inserts and edit.filename == __file__
    patched = apply_edits(Path(__file__).read_text(), fix.edits).splitlines()
    assert patched[edit.start - 2].strip() == "opt_d.step()" and patched[edit.start - 1] == "        out_fake = D(fake)"
    assert fix.applicability == "machine-applicable" and dict(fix.claims) == {"g_loss": ("G",), "d_loss": ("D",)}
    # the loop has no opt_d.zero_grad() after g_loss.backward(): the trains line says what the code does
    assert fix.trains.startswith("g_loss trains G, as your loop's optimizers ask; its gradient for D is not used")
    assert not any("detach" in f.summary for f in d.fixes)  # detaching would cut G off
    # Applying it: runs, and G's gradient is g_loss's through the stepped D.
    G, D, opt_g, opt_d, bce = _gan()
    fake = G(z)
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake), torch.zeros(16, 1))
    opt_d.zero_grad()
    d_loss.backward(retain_graph=True)
    opt_d.step()
    out_fake = D(fake)
    g_loss = bce(out_fake, torch.ones(16, 1))
    want = _grads(g_loss, G)
    opt_g.zero_grad()
    g_loss.backward()
    assert _same([q.grad for q in G.parameters()], want)


# -- an actor-critic: detach the critic's output in the actor's loss --------------------------------


def test_actor_critic_first_fix_detaches_the_advantage() -> None:
    torch.manual_seed(0)
    actor, critic = (
        nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)),
        nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)),
    )
    opt_critic = torch.optim.Adam(critic.parameters(), 1e-3)
    state, reward = torch.randn(8, 4), torch.randn(8, 1)
    action = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])

    def loop() -> None:
        log_prob = torch.log_softmax(actor(state), 1).gather(1, action[:, None])
        advantage = reward - critic(state)
        critic_loss = advantage.pow(2).mean()
        actor_loss = -(log_prob * advantage).mean()
        critic_loss.backward(retain_graph=True)
        opt_critic.step()
        actor_loss.backward()

    d = _failure({"actor": actor, "critic": critic}, loop)
    fix = d.fixes[0]
    assert fix.intent == "if actor_loss should not train critic"
    assert fix.code == "actor_loss = -(log_prob * advantage.detach()).mean()"
    assert fix.trains.startswith("actor_loss trains actor only; critic learns from critic_loss only:")
    for q in [*actor.parameters(), *critic.parameters()]:
        q.grad = None
    log_prob = torch.log_softmax(actor(state), 1).gather(1, action[:, None])
    advantage = reward - critic(state)
    actor_loss = -(log_prob * advantage.detach()).mean()
    want = _grads(-(log_prob * (reward - critic(state)).detach()).mean(), actor)
    actor_loss.backward()
    assert _same([q.grad for q in actor.parameters()], want)
    assert all(q.grad is None for q in critic.parameters())


# -- carried state -----------------------------------------------------------------------------------


def test_rnn_hidden_state_first_fix_detaches_it_at_the_iteration_boundary() -> None:
    torch.manual_seed(0)
    rnn, head = nn.RNN(3, 4, batch_first=True), nn.Linear(4, 1)
    opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)
    data = [(torch.randn(2, 5, 3), torch.randn(2, 1)) for _ in range(2)]

    def loop() -> None:
        hidden = torch.zeros(1, 2, 4)
        for x, y in data:
            out, hidden = rnn(x, hidden)
            loss = (head(out[:, -1]) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    d = _failure({"rnn": rnn, "head": head}, loop)
    assert d.cause == "carried_state"
    fix = d.fixes[0]
    assert fix.code == "out, hidden = rnn(x, hidden.detach())"
    assert "truncated backpropagation through time" in fix.summary
    assert fix.trains.startswith("at each iteration, loss trains through that iteration's graph only")
    # Applied: the second batch's gradient is exactly the gradient of that batch alone, from its hidden state.
    hidden = torch.zeros(1, 2, 4)
    for x, y in data:
        start = hidden.detach()
        out, hidden = rnn(x, start)
        loss = (head(out[:, -1]) - y).pow(2).mean()
        want = _grads((head(rnn(x, start)[0][:, -1]) - y).pow(2).mean(), rnn)
        opt.zero_grad()
        loss.backward()
        assert _same([q.grad for q in rnn.parameters()], want)
        opt.step()


def test_running_total_first_fix_keeps_a_number() -> None:
    w = torch.ones(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)

    def loop() -> None:
        total = 0
        for i in range(2):
            loss = (w * (i + 1)).pow(2).sum()
            total = total + loss
            opt.zero_grad()
            total.backward()
            opt.step()

    d = _failure({"w": w}, loop)
    assert d.cause == "carried_state"
    fix = d.fixes[0]
    assert fix.code.splitlines() == ["total = total + loss.item()", "loss.backward()"]
    assert fix.trains.startswith("each iteration's loss trains the model, as intended")
    total = 0.0
    for i in range(2):
        loss = (w * (i + 1)).pow(2).sum()
        want = torch.autograd.grad(loss, w, retain_graph=True)[0]
        opt.zero_grad()
        loss.backward()
        total += loss.item()
        assert torch.allclose(w.grad, want)
        opt.step()


# -- in-place ops in forward code -------------------------------------------------------------------


def test_tanh_then_mul_outside_track_is_an_in_place_op_not_a_step() -> None:
    x = torch.randn(4, requires_grad=True)
    y = torch.tanh(x)
    y.mul_(3)
    d = gradlab.check(y.sum(), names={"x": x})
    assert d.cause == "inplace_op"
    assert not any("step" in f.summary for f in d.fixes[:1])
    assert d.fixes[0].trains.startswith("the same as intended")
    # Applied (out of place): runs, and the gradient is 3 * (1 - tanh(x)^2).
    y = torch.tanh(x)
    y = y.mul(3)
    (g,) = torch.autograd.grad(y.sum(), x)
    assert torch.allclose(g, 3 * (1 - torch.tanh(x) ** 2))


def test_tanh_then_mul_inside_track_names_the_op_and_rewrites_the_line() -> None:
    x = torch.randn(4, requires_grad=True)

    def forward_backward() -> None:
        y = torch.tanh(x)
        y.mul_(3)
        y.sum().backward()

    d = _failure({"x": x}, forward_backward)
    assert d.cause == "inplace_op"
    assert d.problems[0].modified_by == "mul_"
    assert d.fixes[0].code == "y = y.mul(3)"


def test_relu_inplace_after_sigmoid_first_fix_drops_inplace() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.ReLU(inplace=True))
    x = torch.randn(5, 3)
    d = _failure({"model": model}, lambda: model(x).sum().backward())
    assert d.cause == "inplace_op" and d.problems[0].modified_by == "relu_"
    assert "without inplace=True" in d.fixes[0].summary
    fixed = nn.Sequential(model[0], nn.Sigmoid(), nn.ReLU())
    want = torch.autograd.grad(torch.relu(torch.sigmoid(model[0](x))).sum(), model[0].weight)[0]
    fixed(x).sum().backward()
    assert torch.allclose(model[0].weight.grad, want)


def test_write_under_no_grad_is_an_untracked_write() -> None:
    w = torch.randn(3, requires_grad=True)

    def loop() -> None:
        h = w * 2
        out = (h * h).sum()
        with torch.no_grad():
            h.add_(1)
        out.backward()

    d = _failure({"w": w}, loop)
    assert d.cause == "untracked_write"
    assert d.fixes[0].trains.startswith("the same as intended")


# -- AdamW: writes, not steps -------------------------------------------------------------------------


def test_one_adamw_step_is_two_writes_and_explain_says_so() -> None:
    lin = nn.Linear(1, 10)
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-3, weight_decay=0.1)
    x = torch.ones(4, 1, requires_grad=True)
    out = lin(x).sum()
    out.backward(retain_graph=True)
    opt.step()
    assert lin.weight._version == 3  # one AdamW step: weight decay, then the update
    with pytest.raises(RuntimeError) as info:
        out.backward()
    e = gradlab.explain(info.value)
    assert e.writes_since_saved == 2
    text = e.details()
    assert "2 in-place writes since the save" in text and "twice with AdamW" in text
    assert "2 optimizer steps" not in text and "2 steps" not in text


def test_inside_track_the_writes_are_known_one_by_one() -> None:
    lin = nn.Linear(1, 10)
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-3, weight_decay=0.1)
    x = torch.ones(4, 1, requires_grad=True)
    with gradlab.track(names={"lin": lin}, warn=False) as tracker:
        out = lin(x).sum()
        out.backward(retain_graph=True)
        opt.step()
        d = tracker.check(out)
    (problem,) = d.problems
    assert (problem.saved_version, problem.current_version) == (1, 3)
    assert [(w.op, w.before, w.after) for w in problem.writes] == [("AdamW.step()", 1, 3)]


# -- code rewriting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "op", "expected"),
    [
        ("y.mul_(3)", "mul_", "y = y.mul(3)"),
        ("z = y.add_(1)  # note", "add_", "z = y = y.add(1)  # note"),  # y changes too, as in place
        ("x /= a + b", "__itruediv__", "x = x / (a + b)"),
        ("h *= 1 + gamma if film else 1.0", "__imul__", "h = h * (1 + gamma if film else 1.0)"),
        ("x -= lr * g", "__isub__", "x = x - lr * g"),
        ("x[:, 1] += v", "__iadd__", "x_copy = x.clone()\nx_copy[:, 1] = x[:, 1] + v\nx = x_copy"),
        ("w.fill_(0.5)", "fill_", "w_copy = w.clone()\nw_copy.fill_(0.5)\nw = w_copy"),
        ("F.relu(h, inplace=True)", "relu_", "h = F.relu(h)"),
        ("torch.sigmoid_(z)", "sigmoid_", "z = torch.sigmoid(z)"),
        ("h.masked_fill_(mask, 0.0)", "masked_fill_", "h = h.masked_fill(mask, 0.0)"),
        ("x += residual", "__iadd__", "x = x + residual"),
        ("x[0] = 5", "__setitem__", "x_copy = x.clone()\nx_copy[0] = 5\nx = x_copy"),
        ("self.act = nn.ReLU(inplace=True)", "relu_", "self.act = nn.ReLU()"),
        ("out = self.act(out)", "relu_", None),
        # a temporary: nothing else holds it, so its twin is exact; alone, the statement computes nothing
        ("out = self.fc(x).relu_()", "relu_", "out = self.fc(x).relu()"),
        ("self.fc(x).relu_()", "relu_", None),
        # a write into part of a tensor goes into a copy of the whole, which the name then holds
        (
            "logp = probs[a].log_()",
            "log_",
            "probs_copy = probs.clone()\nlogp = probs_copy[a].log_()\nprobs = probs_copy",
        ),
        # ... and so does a write through a view of it
        (
            "p.view(-1, d).renorm_(2, 0, 1.0)",
            "renorm_",
            "p_copy = p.clone()\np_copy.view(-1, d).renorm_(2, 0, 1.0)\np = p_copy",
        ),
        # a chain of in-place links all writes its receiver; bound to another name, every link goes out of place
        ("std = logvar.mul_(0.5).exp_()", "mul_", "std = logvar.mul(0.5).exp()"),
        ("std = logvar.mul_(0.5).exp_()", "exp_", "std = logvar.mul(0.5).exp()"),
        ("z = x.add_(1).sum()", "add_", None),  # later reads of x need the write: not a rewrite of one line
        ("a = a.squeeze_(0)", "squeeze_", "a = a.squeeze(0)"),  # the name bound once
    ],
)
def test_rewrite_in_place(code: str, op: str, expected: str | None) -> None:
    assert rewrite_in_place(code, op) == expected


def test_a_write_into_part_of_a_tensor_rewritten_into_a_copy_gives_torch_s_gradient() -> None:
    """The copy rewrite of ``probs[a].log_()`` runs where the original fails, with the out-of-place gradient."""
    new = rewrite_in_place("logp = probs[a].log_()", "log_")
    assert new is not None
    logits = torch.randn(5, requires_grad=True)
    ns: dict[str, object] = {"probs": torch.softmax(logits, 0), "a": 2}
    exec(new, ns)
    (-ns["logp"]).backward()  # type: ignore[operator]
    got = logits.grad.clone()  # type: ignore[union-attr]
    logits.grad = None
    (-torch.softmax(logits, 0)[2].log()).backward()
    assert torch.equal(got, logits.grad)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):  # as written, it fails
        (-torch.softmax(logits, 0)[2].log_()).backward()


def test_a_chain_of_in_place_links_rewritten_gives_the_intended_gradient() -> None:
    """``logvar.mul_(0.5).exp_()`` on a chunk fails at the write; its rewrite gives ``mul(0.5).exp()``'s gradient."""
    new = rewrite_in_place("std = logvar.mul_(0.5).exp_()", "mul_")
    assert new is not None
    params = torch.randn(4, 6, requires_grad=True)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        params.chunk(2, dim=1)[1].mul_(0.5).exp_()
    ns: dict[str, object] = {"logvar": params.chunk(2, dim=1)[1]}
    exec(new, ns)
    ns["std"].sum().backward()  # type: ignore[attr-defined]
    got = params.grad.clone()  # type: ignore[union-attr]
    params.grad = None
    params.chunk(2, dim=1)[1].mul(0.5).exp().sum().backward()
    assert torch.equal(got, params.grad)


@pytest.mark.parametrize(
    ("line", "name", "expected"),
    [
        ("pred_2 = n_2(pred_1)", "pred_1", "pred_2 = n_2(pred_1.detach())"),
        ("out, hidden = rnn(x, hidden)", "hidden", "out, hidden = rnn(x, hidden.detach())"),
        ("loss = f(pred_10, pred_1)", "pred_1", "loss = f(pred_10, pred_1.detach())"),
        ("y = g(x)", "pred_1", None),
    ],
)
def test_detach_in(line: str, name: str, expected: str | None) -> None:
    assert detach_in(line, name) == expected
