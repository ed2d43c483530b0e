"""gradlab's inspectors against real torch: each failing pattern and its corrected form."""

from __future__ import annotations

import copy
import gc
import weakref

import pytest
import torch
from conftest import needs_hooks_stack
from torch import nn

import gradlab
from gradlab import check, course, grad_report, saved_tensors, track

pytestmark = pytest.mark.library


def two_nets(seed: int = 0):
    pair = course.make_pair(seed)
    x, y = course.batches(1, seed)[0]
    return pair, x, y


class Raised:
    """A RuntimeError raised under track(), and the diagnosis the tracker attached to it."""

    def __init__(self, tracker, error):
        self.error = error
        self.diagnosis = tracker.diagnosis_for(error)
        self.__notes__ = getattr(error, "__notes__", [])

    def __str__(self):
        return str(self.error)


def raise_inside(tracker_names, fn):
    """Run fn inside track(); return the tracker and the error it raised (with gradlab's diagnosis)."""
    with track(names=tracker_names) as tracker, pytest.raises(RuntimeError) as info:
        fn()
    return tracker, Raised(tracker, info.value)


# -- the course's two chained networks ----------------------------------------------------


def test_original_loop_graph_freed_names_the_first_backward():
    p, x, y = two_nets()

    def loop():
        pred_1 = p.n_1(x)
        p.opt_1.zero_grad()
        loss_1 = p.criterion(y, pred_1)
        loss_1.backward()  # FREES
        p.opt_1.step()
        pred_2 = p.n_2(pred_1)
        p.opt_2.zero_grad()
        loss_2 = p.criterion(y, pred_2)
        loss_2.backward()

    _, err = raise_inside(p.names, loop)
    assert "Trying to backward through the graph a second time" in str(err)
    diag = err.diagnosis
    assert not diag.ok and diag.kinds == ["graph_freed"]
    assert all(pr.where and pr.where.split(":")[0].endswith("test_inspectors.py") for pr in diag.problems)
    assert {pr.code for pr in diag.problems} == {"loss_1.backward()  # FREES"}
    assert any("gradlab:" in note for note in err.__notes__)


def test_retain_graph_in_place_names_weight_step_and_line():
    p, x, y = two_nets()
    assert p.n_1.linear_2.weight._version == 1  # in-place init

    def loop():
        pred_1 = p.n_1(x)
        p.opt_1.zero_grad()
        loss_1 = p.criterion(y, pred_1)
        loss_1.backward(retain_graph=True)
        p.opt_1.step()  # MODIFIES
        pred_2 = p.n_2(pred_1)
        p.opt_2.zero_grad()
        loss_2 = p.criterion(y, pred_2)
        loss_2.backward()

    _, err = raise_inside(p.names, loop)
    assert "is at version 2; expected version 1" in str(err)
    (problem,) = err.diagnosis.problems
    assert problem.kind == "modified_in_place"
    assert problem.node == "AddmmBackward0"
    assert problem.tensor == "n_1.linear_2.weight (transposed view)"
    assert problem.shape == (10, 1)
    assert (problem.saved_version, problem.current_version) == (1, 2)
    assert problem.modified_by == "Adam.step()"
    assert problem.where.split(":")[0].endswith("test_inspectors.py") and problem.code == "p.opt_1.step()  # MODIFIES"


def test_message_inside_track_equals_plain_torch():
    def run(tracked: bool) -> str:
        p, x, y = two_nets()
        ctx = track() if tracked else torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        if not tracked:
            ctx = _null()
        with ctx:
            pred_1 = p.n_1(x)
            loss_1 = p.criterion(y, pred_1)
            loss_1.backward(retain_graph=True)
            p.opt_1.step()
            loss_2 = p.criterion(y, p.n_2(pred_1))
            with pytest.raises(RuntimeError) as info:
                loss_2.backward()
        return str(info.value)

    assert run(True) == run(False)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_check_predicts_without_changing_anything():
    p, x, y = two_nets()
    pred_1 = p.n_1(x)
    loss_1 = p.criterion(y, pred_1)
    loss_1.backward(retain_graph=True)
    p.opt_1.step()
    loss_2 = p.criterion(y, p.n_2(pred_1))
    grads = {n: (q.grad.clone() if q.grad is not None else None) for n, q in p.n_1.named_parameters()}
    params = copy.deepcopy(p.n_1.state_dict())
    opt_state = copy.deepcopy(p.opt_1.state_dict())
    diag = check(loss_2, names=p.names)
    assert not diag.ok
    assert [pr.tensor for pr in diag.problems] == ["n_1.linear_2.weight (transposed view)"]
    assert diag.problems[0].where is None  # outside track() nobody recorded who did it
    for n, q in p.n_1.named_parameters():
        assert (grads[n] is None and q.grad is None) or torch.equal(grads[n], q.grad)
        assert torch.equal(params[n], q)
    assert str(p.opt_1.state_dict()) == str(opt_state)
    # nothing was freed: the real backward still raises the in-place error, not "graph freed"
    with pytest.raises(RuntimeError, match="inplace operation"):
        loss_2.backward()


def test_corrected_orders_are_ok_inside_track():
    p, x, y = two_nets()
    with track(names=p.names) as tracker:
        for x, y in course.batches(3):
            pred_1 = p.n_1(x)
            pred_2 = p.n_2(pred_1)
            p.opt_1.zero_grad()
            p.opt_2.zero_grad()
            loss_1 = p.criterion(y, pred_1)
            loss_2 = p.criterion(y, pred_2)
            total = loss_1 + loss_2
            assert tracker.check(total).ok
            total.backward()
            p.opt_1.step()
            p.opt_2.step()
        pred_1 = p.n_1(x)
        loss_1 = p.criterion(y, pred_1)
        loss_1.backward()
        p.opt_1.step()
        loss_2 = p.criterion(y, p.n_2(pred_1.detach()))
        assert check(loss_2).ok
        loss_2.backward()


# -- the same errors in the wild ------------------------------------------------------------


def test_gan_discriminator_step_before_generator_backward():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 2))
    D = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
    opt_d = torch.optim.Adam(D.parameters())
    bce = nn.BCEWithLogitsLoss()
    z = torch.randn(8, 2)

    def step():
        fake = G(z)
        d_out = D(fake)
        d_loss = bce(d_out, torch.zeros_like(d_out))
        d_loss.backward(retain_graph=True)
        opt_d.step()  # D STEP
        g_loss = bce(d_out, torch.ones_like(d_out))
        g_loss.backward()

    _, err = raise_inside({"G": G, "D": D}, step)
    problems = err.diagnosis.problems
    assert {pr.kind for pr in problems} == {"modified_in_place"}
    assert "D.2.weight (transposed view)" in {pr.tensor for pr in problems}
    assert all(pr.modified_by == "Adam.step()" and pr.code == "opt_d.step()  # D STEP" for pr in problems)


def test_actor_critic_critic_step_before_actor_backward():
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    actor = nn.Linear(3, 2)
    opt_c = torch.optim.SGD(critic.parameters(), lr=0.1)
    s = torch.randn(5, 3)

    def step():
        value = critic(s)
        logp = torch.log_softmax(actor(s), dim=1)[:, 0]
        critic_loss = value.pow(2).mean()
        critic_loss.backward(retain_graph=True)
        opt_c.step()  # CRITIC STEP
        actor_loss = -(logp * value.squeeze(1)).mean()
        actor_loss.backward()

    _, err = raise_inside({"critic": critic, "actor": actor}, step)
    problems = err.diagnosis.problems
    assert "critic.2.weight (transposed view)" in {pr.tensor for pr in problems}
    assert {pr.modified_by for pr in problems} == {"SGD.step()"}
    assert {pr.code for pr in problems} == {"opt_c.step()  # CRITIC STEP"}


def test_rnn_hidden_state_carried_across_batches():
    torch.manual_seed(0)
    rnn = nn.RNN(2, 3, batch_first=True)
    opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
    h = torch.zeros(1, 4, 3)

    def loop():
        nonlocal h
        for _ in range(2):
            out, h = rnn(torch.randn(4, 5, 2), h)
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()  # RNN BACKWARD
            opt.step()

    _, err = raise_inside({"rnn": rnn}, loop)
    diag = err.diagnosis
    assert "graph_freed" in diag.kinds
    freed = [pr for pr in diag.problems if pr.kind == "graph_freed"]
    assert freed and all(pr.code == "loss.backward()  # RNN BACKWARD" for pr in freed)
    # Only the first batch's nodes are the cause; the failing backward freed the second
    # batch's nodes itself (same line, other call) and those are left out.
    freed_nodes = {s.node_id for s in diag.graph.saved if s.status == "freed"}
    assert len({pr.node_id for pr in freed}) < len(freed_nodes)


def test_rnn_fixed_with_detach_is_ok():
    torch.manual_seed(0)
    rnn = nn.RNN(2, 3, batch_first=True)
    h = torch.zeros(1, 4, 3)
    with track(names={"rnn": rnn}):
        for _ in range(2):
            out, h = rnn(torch.randn(4, 5, 2), h.detach())
            loss = out.pow(2).mean()
            diag = check(loss)
            assert diag.ok, str(diag)
            loss.backward()


def test_relu_inplace_after_sigmoid():
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    act = nn.ReLU(inplace=True)
    x = torch.randn(2, 3)

    def forward_backward():
        s = torch.sigmoid(lin(x))
        out = act(s)  # RELU INPLACE
        out.sum().backward()

    _, err = raise_inside({"lin": lin}, forward_backward)
    (problem,) = err.diagnosis.problems
    assert problem.kind == "modified_in_place"
    assert problem.node == "SigmoidBackward0"
    assert problem.tensor == "output of Sigmoid [2, 3]"
    assert problem.modified_by == "relu_"  # nn.ReLU(inplace=True) calls torch.relu_
    assert problem.code == "out = act(s)  # RELU INPLACE"


@pytest.mark.parametrize("write", ["iadd", "imul", "setitem", "zero_", "detach_view"])
def test_user_in_place_writes_are_named(write):
    w = torch.randn(3, requires_grad=True)
    with track(names={"w": w}) as tracker:
        y = (w * w).sum()
        with torch.no_grad():
            if write == "iadd":
                w += 1
            elif write == "imul":
                w *= 2
            elif write == "setitem":
                w[0] = 5.0
            elif write == "zero_":
                w.zero_()
        if write == "detach_view":
            w.detach().add_(1)
        problems = tracker.check(y).problems
    assert len(problems) == 2  # w * w saves w twice: self and other
    expected = {"iadd": "add_", "imul": "mul_", "setitem": "__setitem__", "zero_": "zero_", "detach_view": "add_"}
    for problem in problems:
        assert problem.tensor == "w"
        assert expected[write] in problem.modified_by
        assert problem.where.split(":")[0].endswith("test_inspectors.py")


def test_data_writes_do_not_bump_the_version_but_track_records_them():
    w = torch.randn(3, requires_grad=True)
    with track(names={"w": w}) as tracker:
        y = (w * w).sum()
        w.data.add_(1)  # a different version counter: autograd cannot see this, gradlab's wrapper can
        assert w._version == 0
        d = tracker.check(y)
        assert not d.ok and d.problems[0].counter_missed and d.problems[0].modified_by == "add_"
        assert [(e.op, e.version_before, e.version_after) for e in tracker.writes] == [("add_", 0, 0)] * 2


def test_saved_tensors_statuses():
    p, x, y = two_nets()
    loss_1 = p.criterion(y, p.n_1(x))
    rows = saved_tensors(loss_1, names=p.names)
    assert {r.status for r in rows} == {"ok"}
    assert "n_1.linear_2.weight (transposed view)" in {r.name for r in rows}
    assert all(r.saved_version == r.current_version for r in rows)
    loss_1.backward()
    rows = saved_tensors(loss_1, names=p.names)
    assert {r.status for r in rows} == {"freed"}


def test_custom_function_is_checked_without_running_user_backward():
    calls = []

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            (a,) = ctx.saved_tensors
            return 2 * a * g

    a = torch.randn(3, requires_grad=True)
    b = a * 1
    out = Square.apply(b).sum()
    assert check(out).ok
    with torch.no_grad():
        b.add_(1)
    diag = check(out)
    assert not diag.ok and diag.problems[0].node == "SquareBackward"
    assert calls == []


# -- grad_report: both silent bugs ------------------------------------------------------------


def test_grad_report_shows_cut_layer_and_zero_gradients():
    pair = course.make_pair(0, detach_inside=True)
    x, y = course.batches(1)[0]
    pred_1 = pair.n_1(x)
    loss_2 = pair.criterion(y, pair.n_2(pred_1.detach()))
    loss_2.backward()
    report = grad_report(pair.names, loss=loss_2)
    assert set(report.unreached) >= {"n_2.linear_1.weight", "n_2.linear_1.bias"}
    assert "n_2.linear_1.weight" in report.no_grad
    # softmax over a size-1 dimension: every reached gradient is exactly zero
    assert set(report.zero) == {"n_2.linear_2.weight", "n_2.linear_2.bias"}
    assert "all-zero gradient" in str(report) and "not reached by the loss" in str(report)


def test_grad_report_healthy_network():
    pair = course.make_pair(0, softmax=False)
    x, y = course.batches(1)[0]
    loss = pair.criterion(y, pair.n_1(x))
    loss.backward()
    report = grad_report({"n_1": pair.n_1}, loss=loss)
    assert report.no_grad == [] and report.zero == [] and report.unreached == []
    assert "every parameter has a non-zero gradient" in str(report)


# -- bad input, cleanup ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, exc",
    [
        (None, TypeError),
        (3, TypeError),
        ("loss", TypeError),
        (nn.Linear(1, 1), TypeError),
        (torch.ones(2), ValueError),
        (torch.ones(2, requires_grad=True), ValueError),
    ],
)
def test_bad_inputs_get_clear_errors(bad, exc):
    # check() answers for a tensor without graph instead: backward would fail (GL0003, tests/test_family.py)
    answers = isinstance(bad, torch.Tensor) and not bad.requires_grad
    for fn in (saved_tensors, gradlab.collect) if answers else (check, saved_tensors, gradlab.collect):
        with pytest.raises(exc, match="pass"):
            fn(bad)


def test_bad_names():
    y = torch.ones(2, requires_grad=True).sigmoid().sum()
    with pytest.raises(TypeError, match="pass an nn.Module or a tensor"):
        check(y, names={"a": 3})
    with pytest.raises(TypeError, match="mapping"):
        check(y, names=[1, 2])
    with pytest.raises(TypeError, match="mapping"), track(names=5):
        pass
    with pytest.raises(TypeError, match="names"):
        grad_report(None)


@needs_hooks_stack
def test_track_releases_everything_on_exit():
    lin = nn.Linear(4, 4)
    with track(names={"lin": lin}) as tracker:
        s = torch.sigmoid(lin(torch.randn(2, 4)))
        loss = s.sum()
        diag = tracker.check(loss)
        assert diag.ok
    refs = [weakref.ref(loss), weakref.ref(s), weakref.ref(lin)]
    del loss, s, lin, diag
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
    assert tracker.stats()["registry_records"] == 0
    assert torch.overrides._get_current_function_mode_stack() == []
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None  # our hooks are popped
    x = torch.ones(2, requires_grad=True)
    (x.sigmoid().sum()).backward()  # plain torch works after exit


def test_hooks_outlive_the_context_and_still_check():
    w = torch.randn(3, requires_grad=True)
    with track():
        y = (w * w).sum()
    with torch.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.backward()


def test_ipython_extension_adds_diagnosis(ipython, capsys):
    ip = ipython
    ip.run_cell("%load_ext gradlab")
    try:
        ip.run_cell(
            "import torch, gradlab\n"
            "from gradlab import course\n"
            "pair = course.make_pair(0)\n"
            "n_1 = pair.n_1\n"
            "x, y = course.batches(1)[0]\n"
            "pred_1 = n_1(x)\n"
            "loss_1 = pair.criterion(y, pred_1)\n"
            "loss_1.backward(retain_graph=True)\n"
            "pair.opt_1.step()\n"
            "pair.criterion(y, pair.n_2(pred_1)).backward()\n"
        )
        out = capsys.readouterr()
        text = out.out + out.err
        assert "is at version 2; expected version 1" in text  # the original traceback stays
        assert "n_1.linear_2.weight (transposed view)" in text
        assert "Adam.step()" in text
    finally:
        ip.run_cell("%unload_ext gradlab")
    assert torch.overrides._get_current_function_mode_stack() == []


# -- the premise of skipping the dry run (NOTE [Dry run] in saved.py) ----------------------

PREMISE_OPS = {
    "mm": lambda a, b: a @ b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "sigmoid (saves its output)": lambda a, b: a.sigmoid(),
    "exp (saves its output)": lambda a, b: a.exp(),
    "sin": lambda a, b: a.sin(),
    "pow": lambda a, b: a.pow(2),
    "linear (saves weight.t())": lambda a, b: torch.nn.functional.linear(a, b),
    "softmax": lambda a, b: a.softmax(1),
    "mse_loss": lambda a, b: torch.nn.functional.mse_loss(a, b),
}


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("op", sorted(PREMISE_OPS))
def test_accessors_refuse_stale_tensors_whenever_backward_would(op, which):
    """If no _saved_* accessor of a node raises, its backward does not raise the in-place error."""
    a = torch.randn(3, 3, requires_grad=True) * 1
    b = torch.randn(3, 3, requires_grad=True) * 1
    out = PREMISE_OPS[op](a, b)
    fn = out.grad_fn
    with torch.no_grad():
        (a, b)[which].add_(1)
    refused = False
    for attr in dir(fn):
        if attr.startswith("_saved_") and not attr.endswith(("_sym_sizes", "_sym_strides")):
            try:
                getattr(fn, attr)
            except RuntimeError:
                refused = True
    diagnosis = check(out)
    fails = False
    try:
        out.sum().backward()
    except RuntimeError as e:
        fails = "inplace operation" in str(e)
    assert refused == fails
    assert diagnosis.ok == (not fails)


def test_problems_alike_are_decided_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # NOTE [Problems decided once]: a graph unrolled over forty steps, freed by one backward, has forty freed nodes
    # saved by one line; they are decided once and every problem carries that decision
    import gradlab.diagnosis as diagnosis

    calls = []
    real = diagnosis.decide

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(diagnosis, "decide", counted)
    w = torch.full((3,), 1.01, requires_grad=True)
    h = w
    for _ in range(40):
        h = torch.sin(h) * w
    loss = h.sum()
    loss.backward()
    d = check(loss, names={"w": w, "h": h, "loss": loss})
    assert not d.ok and len(d.problems) >= 40
    assert 1 <= len(calls) < 4
    assert {(p.cause, p.fixes) for p in d.problems} == {(d.problems[0].cause, d.problems[0].fixes)}
