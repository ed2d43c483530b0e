"""gradlab.writers: each row of the table shown on real torch (the write, what it breaks, torch's documented fix)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import gradlab
from gradlab import internals
from gradlab.writers import WRITERS, Writer, documented

pytestmark = pytest.mark.library

STALE = "modified by an inplace operation"


def _net() -> nn.Sequential:
    """Two layers: the second saves its weight (its input requires grad), as inside any model."""
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def _row(api_start: str) -> Writer:
    return next(w for w in WRITERS if w.api.startswith(api_start))


def test_every_row_is_complete_and_cites_torchs_documentation() -> None:
    assert len({w.api for w in WRITERS}) == len(WRITERS)
    for w in WRITERS:
        assert w.api and w.does and w.fix
        assert w.source.startswith("https://pytorch.org/docs/"), w.api


def test_the_ops_of_the_records_find_their_row_and_nothing_else() -> None:
    assert documented("AdamW.step()") is _row("torch.optim.Optimizer.step()")
    assert documented("LBFGS.step()") is _row("torch.optim.LBFGS")
    assert documented("embedding_renorm_") is _row("nn.Embedding")
    for op in ("normal_", "copy_", "relu_", "__iadd__", "", None):  # also the user's own writes: no row claims them
        assert documented(op) is None


def test_an_optimizer_step_writes_each_parameter_adamw_twice_and_the_documented_order_runs() -> None:
    row = _row("torch.optim.Optimizer.step()")
    assert row.counter
    for make, moves in ((lambda ps: torch.optim.SGD(ps, lr=0.1), 1), (lambda ps: torch.optim.AdamW(ps, lr=0.1), 2)):
        lin = nn.Linear(3, 1)
        opt = make(lin.parameters())
        lin(torch.randn(4, 3)).sum().backward()
        before = lin.weight._version
        opt.step()
        assert lin.weight._version - before == moves
    net = _net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    out = net(torch.randn(4, 3)).pow(2).sum()
    net(torch.randn(4, 3)).pow(2).sum().backward()
    opt.step()  # between the forward of out and its backward
    with pytest.raises(RuntimeError, match=STALE):
        out.backward()
    opt.zero_grad()
    out = net(torch.randn(4, 3)).pow(2).sum()  # the documented order: backward, then step
    out.backward()
    opt.step()


def test_a_fused_step_writes_without_moving_the_counter() -> None:
    row = _row("torch.optim.Adam(..., fused=True)")
    assert not row.counter
    lin = nn.Linear(3, 1)
    opt = torch.optim.Adam(lin.parameters(), lr=0.1, fused=True)
    lin(torch.randn(4, 3)).sum().backward()
    before, values = lin.weight._version, lin.weight.detach().clone()
    opt.step()
    assert lin.weight._version == before and not torch.equal(lin.weight, values)


def test_an_embedding_with_max_norm_renormalises_its_weight_and_the_documented_clone_runs() -> None:
    torch.manual_seed(0)
    emb = nn.Embedding(10, 3, max_norm=1.0)
    emb.weight.data.mul_(5)  # rows longer than max_norm
    ids = torch.tensor([1, 2])
    before = emb.weight._version
    scores = emb.weight @ torch.ones(3, requires_grad=True)  # reads the weight before the lookup
    out = emb(ids)
    assert emb.weight._version > before  # embedding_renorm_ wrote it
    with pytest.raises(RuntimeError, match=STALE):
        (out.sum() + scores.sum()).backward()
    scores = emb.weight.clone() @ torch.ones(3, requires_grad=True)  # torch's documented fix
    (emb(ids).sum() + scores.sum()).backward()
    assert emb.weight.grad is not None


def test_a_batch_norm_updates_its_running_statistics_unseen_by_the_counter_and_a_copy_keeps_the_gradient() -> None:
    assert not _row("nn.BatchNorm").counter
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(3)
    w = torch.ones(3, requires_grad=True)
    x = torch.randn(8, 3) * 3
    old, before = bn.running_var.clone(), bn.running_var._version
    read = bn.running_var * w  # mul saves running_var for w's gradient
    bn(x)  # training mode: running_var updated in place, the counter unmoved
    assert bn.running_var._version == before and not torch.equal(bn.running_var, old)
    read.sum().backward()  # no error: the gradient is computed from the new values
    assert torch.equal(w.grad, bn.running_var) and not torch.equal(w.grad, old)
    w.grad = None
    old = bn.running_var.clone()
    read = bn.running_var.clone() * w  # the copy
    bn(x)
    read.sum().backward()
    assert torch.equal(w.grad, old)  # the values the forward read


def test_nn_init_writes_in_place_under_no_grad() -> None:
    net = _net()
    out = net(torch.randn(4, 3)).sum()
    before = net[2].weight._version
    nn.init.normal_(net[2].weight)  # allowed on a leaf that requires grad: it runs under no_grad()
    assert net[2].weight._version == before + 1
    with pytest.raises(RuntimeError, match=STALE):
        out.backward()


def test_load_state_dict_copies_into_the_parameters() -> None:
    net, other = _net(), _net()
    out = net(torch.randn(4, 3)).sum()
    before = net[2].weight._version
    net.load_state_dict(other.state_dict())
    assert net[2].weight._version > before and torch.equal(net[2].weight, other[2].weight)
    with pytest.raises(RuntimeError, match=STALE):
        out.backward()


def test_an_in_place_activation_writes_its_input_and_inplace_false_runs() -> None:
    x = torch.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError, match=STALE):
        nn.ReLU(inplace=True)(torch.sigmoid(x)).sum().backward()  # sigmoid saved its output
    nn.ReLU(inplace=False)(torch.sigmoid(x)).sum().backward()
    assert x.grad is not None


def test_lbfgs_runs_the_closure_several_times_per_step() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(3, 1)
    opt = torch.optim.LBFGS(lin.parameters(), max_iter=5)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    calls = []

    def closure() -> torch.Tensor:
        calls.append(1)
        opt.zero_grad()
        loss = (lin(x) - y).pow(2).mean()  # the documented fix: a fresh forward inside the closure
        loss.backward()
        return loss

    opt.step(closure)
    assert len(calls) > 1


def test_checkpoint_runs_the_forward_again_during_backward() -> None:
    from torch.utils.checkpoint import checkpoint

    runs = []

    def block(t: torch.Tensor) -> torch.Tensor:
        runs.append(1)
        return torch.sin(t) * 2

    x = torch.randn(4, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False).sum()
    assert len(runs) == 1
    out.backward()
    assert len(runs) == 2


def test_parametrize_cached_keeps_one_weight_until_it_exits_and_entered_per_iteration_it_trains() -> None:
    from torch.nn.utils import parametrizations, parametrize

    torch.manual_seed(0)
    layer = parametrizations.orthogonal(nn.Linear(3, 3))
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    with parametrize.cached():  # around the loop: the second iteration reads the first one's weight and graph
        layer(x).pow(2).sum().backward()
        opt.step()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            layer(x).pow(2).sum().backward()
    before = layer.weight.detach().clone()
    for _ in range(2):  # torch's documented place: around one forward, inside the loop
        with parametrize.cached():
            opt.zero_grad()
            layer(x).pow(2).sum().backward()
            opt.step()
    assert not torch.equal(before, layer.weight.detach())


def test_a_cached_transform_hands_back_the_first_steps_inverse_and_without_the_cache_it_trains() -> None:
    from torch.distributions import AffineTransform, Normal, TransformedDistribution

    torch.manual_seed(0)
    data = torch.randn(32, 2) + 3.0
    for cache_size in (1, 0):
        shift = nn.Parameter(torch.zeros(2))
        flow = TransformedDistribution(
            Normal(torch.zeros(2), torch.ones(2)), [AffineTransform(shift, 1.0, cache_size=cache_size)]
        )
        opt = torch.optim.SGD([shift], lr=0.1)
        (-flow.log_prob(data).mean()).backward()
        opt.step()
        if cache_size == 1:  # the same data tensor again: the cached x of the first step, whose graph is freed
            assert internals.transform_cache(flow.transforms[0])[1] is data
            with pytest.raises(RuntimeError, match="backward through the graph a second time"):
                (-flow.log_prob(data).mean()).backward()
        else:
            opt.zero_grad()
            (-flow.log_prob(data).mean()).backward()
            assert shift.grad is not None and float(shift.grad.abs().sum()) > 0


@pytest.mark.filterwarnings("ignore:.*weight_norm.*:FutureWarning")
def test_weight_norms_hook_computes_the_weight_only_at_a_call_and_the_parametrization_at_every_access() -> None:
    from torch.nn.utils import parametrizations

    torch.manual_seed(0)
    x = torch.randn(4, 3)
    old = nn.utils.weight_norm(nn.Linear(3, 2))
    new = parametrizations.weight_norm(nn.Linear(3, 2))
    new.load_state_dict(
        {
            "bias": old.bias,
            "parametrizations.weight.original0": old.weight_g,
            "parametrizations.weight.original1": old.weight_v,
        }
    )
    assert torch.equal(nn.functional.linear(x, old.weight, old.bias), nn.functional.linear(x, new.weight, new.bias))
    nn.functional.linear(x, old.weight).sum().backward()  # the weight the hook computed when the norm was applied
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        nn.functional.linear(x, old.weight).sum().backward()
    for _ in range(2):  # computed at each access: a fresh graph every time
        nn.functional.linear(x, new.weight).sum().backward()


def test_the_note_says_when_its_fix_is_the_one_torch_documents() -> None:
    torch.manual_seed(0)
    emb = nn.Embedding(10, 3, max_norm=1.0)
    head = nn.Linear(3, 1)
    with pytest.raises(RuntimeError) as info, gradlab.track(names={"emb": emb, "head": head}):
        scores = emb.weight @ head.weight.t()
        out = emb(torch.tensor([1, 2, 4]))
        ((out @ head.weight.t()).sum() + scores.pow(2).mean()).backward()
    first = gradlab.last_diagnosis(info.value).fixes[0]
    assert "read a copy of emb.weight" in str(first.summary)
    assert "torch documents this fix for nn.Embedding(max_norm=...)" in str(first.summary)
