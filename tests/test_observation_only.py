"""track() only observes: training under it gives bitwise the same parameters.

200 steps of the course's corrected loop (forward both, zero both,
(loss_1 + loss_2).backward(), step both), seeded identically, with and without
``gradlab.track()``; every parameter and every optimizer state tensor must be
``torch.equal``. The optimizers cover the single-tensor and the foreach code
paths, since the tracker's hooks see each of them differently.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from conftest import needs_hooks_stack, needs_raw_saved

import gradlab
from gradlab import course

pytestmark = pytest.mark.library

STEPS = 200

OPTIMIZERS = {
    "sgd": lambda params, foreach: torch.optim.SGD(params, lr=0.05, foreach=foreach),
    "sgd_momentum": lambda params, foreach: torch.optim.SGD(
        params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4, foreach=foreach
    ),
    "adam": lambda params, foreach: torch.optim.Adam(params, lr=1e-2, foreach=foreach),
    "adamw": lambda params, foreach: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, foreach=foreach),
}


def _train(opt_name: str, foreach: bool, tracked: bool, names: bool = False) -> tuple[list, list]:
    pair = course.make_pair(seed=3, softmax=False)
    n_1, n_2 = pair.n_1, pair.n_2
    opt_1 = OPTIMIZERS[opt_name](n_1.parameters(), foreach)
    opt_2 = OPTIMIZERS[opt_name](n_2.parameters(), foreach)
    pair.opt_1, pair.opt_2 = opt_1, opt_2
    data = course.batches(STEPS, seed=5)
    ctx = gradlab.track(names=pair.names if names else None) if tracked else contextlib.nullcontext()
    with ctx:
        for x, y in data:
            course.joint_step(pair, x, y)
    params = [p.detach().clone() for p in (*n_1.parameters(), *n_2.parameters())]
    state = [
        v.clone()
        for opt in (opt_1, opt_2)
        for s in opt.state.values()
        for v in s.values()
        if isinstance(v, torch.Tensor)
    ]
    return params, state


@pytest.mark.parametrize("foreach", [False, True], ids=["single_tensor", "foreach"])
@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_track_gives_bitwise_identical_training(opt_name: str, foreach: bool) -> None:
    plain_params, plain_state = _train(opt_name, foreach, tracked=False)
    tracked_params, tracked_state = _train(opt_name, foreach, tracked=True)
    assert len(plain_params) == len(tracked_params) == 8
    assert all(torch.equal(a, b) for a, b in zip(plain_params, tracked_params))
    assert len(plain_state) == len(tracked_state) > 0 or opt_name == "sgd"
    assert all(torch.equal(a, b) for a, b in zip(plain_state, tracked_state))


def test_track_with_names_gives_bitwise_identical_training() -> None:
    plain_params, _ = _train("adam", False, tracked=False)
    tracked_params, _ = _train("adam", False, tracked=True, names=True)
    assert all(torch.equal(a, b) for a, b in zip(plain_params, tracked_params))


def test_training_actually_moved_the_parameters() -> None:
    """Guard against a vacuous pass: 200 steps change every parameter."""
    start = [p.detach().clone() for p in (*course.make_pair(seed=3, softmax=False).n_1.parameters(),)]
    end, _ = _train("adam", False, tracked=True)
    assert not any(torch.equal(a, b) for a, b in zip(start, end[:4]))


# -- what torch is given and what it says: the same under gradlab ----------------------------------


@contextlib.contextmanager
def _watched(how: str) -> Iterator[None]:
    """Under track(), record_training(), or both."""
    with contextlib.ExitStack() as stack:
        if how in ("track", "both"):
            stack.enter_context(gradlab.track())
        if how in ("record_training", "both"):
            stack.enter_context(gradlab.record_training())
        yield


@pytest.mark.parametrize("how", ["track", "record_training", "both"])
def test_one_shot_iterables_reach_torch_whole(how: str) -> None:
    """autograd.grad(loss, model.parameters()) and backward(inputs=<generator>): torch sees every tensor (NOTE [One-shot arguments])."""

    def penalty_step() -> list[torch.Tensor] | str:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
        loss = model(torch.randn(8, 3)).pow(2).mean()
        grads = torch.autograd.grad(loss, model.parameters(), create_graph=True)
        assert len(grads) == 4
        try:
            (loss + sum(g.pow(2).sum() for g in grads)).backward(inputs=(p for p in model.parameters()))
        except TypeError as e:  # torch 2.4 asks inputs= for its len(): so must it under gradlab
            return f"{type(e).__name__}: {e}"
        return [p.grad for p in model.parameters()]

    plain = penalty_step()
    with _watched(how):
        watched = penalty_step()
    if isinstance(plain, str):
        assert watched == plain == "TypeError: object of type 'generator' has no len()"
        return
    assert not isinstance(watched, str) and all(torch.equal(a, b) for a, b in zip(plain, watched))


def _per_sample_grads() -> dict[str, torch.Tensor]:
    from torch.func import functional_call, grad, vmap

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_fn(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((functional_call(model, p, (x.unsqueeze(0),)) - y) ** 2).mean()

    result: dict[str, torch.Tensor] = vmap(grad(loss_fn), in_dims=(None, 0, 0))(
        params, torch.randn(5, 3), torch.randn(5, 1)
    )
    return result


@needs_hooks_stack
def test_torch_func_runs_under_track_and_gradlab_says_once_what_it_cannot_see(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradlab import writes

    monkeypatch.setattr(writes, "_said", set())
    plain = _per_sample_grads()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with gradlab.track():
            first = _per_sample_grads()
            again = _per_sample_grads()
    assert all(torch.equal(plain[k], first[k]) and torch.equal(plain[k], again[k]) for k in plain)
    said = [w for w in caught if issubclass(w.category, gradlab.GradlabWarning)]
    assert len(said) == 1 and "gradlab steps aside inside torch.func.{grad, vjp, jacrev, hessian}" in str(
        said[0].message
    )
    assert said[0].filename == __file__  # the user's line (here: in _per_sample_grads), not gradlab's


@needs_hooks_stack
def test_torch_func_under_the_users_own_hooks_raises_as_without_gradlab() -> None:
    """gradlab steps aside only for its own hooks: with the user's below, torch refuses as it would anyway."""
    messages = []
    for tracked in (False, True):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            ctx = gradlab.track() if tracked else contextlib.nullcontext()
            with ctx, pytest.raises(RuntimeError) as info:
                _per_sample_grads()
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "don't yet support saved tensor hooks" in messages[0]
    assert torch._C._autograd._top_saved_tensors_default_hooks(True) is None


def test_torchs_warning_inside_a_wrapped_call_shows_the_users_line() -> None:
    """torch.tensor(t) warns from C++; under track() its caller is gradlab's wrapper (NOTE [Warnings keep the user's frame])."""
    y = torch.ones(3, requires_grad=True) * 2
    seen = {}
    for tracked in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with gradlab.track() if tracked else contextlib.nullcontext():
                line = sys._getframe().f_lineno + 1
                torch.tensor(y)
        seen[tracked] = [(w.filename, w.lineno, w.category, str(w.message)) for w in caught]
    assert seen[False] == [(__file__, line, UserWarning, seen[False][0][3])]
    assert seen[True] == seen[False]
    assert "To copy construct from a tensor" in seen[True][0][3]


def test_a_warning_once_per_line_stays_once_per_line_under_track() -> None:
    """Python shows a warning once per line (the default filter): gradlab's frames must not merge two lines into one."""
    y = torch.ones(3, requires_grad=True) * 2
    counts = []
    for tracked in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            with gradlab.track() if tracked else contextlib.nullcontext():
                for _ in range(3):
                    torch.tensor(y)  # one line, three calls: once
                torch.tensor(y)  # another line: once more
        counts.append(len(caught))
    assert counts == [2, 2]


def test_a_warning_from_inside_the_backward_keeps_the_users_line_under_track() -> None:
    """A full backward hook's warning (stacklevel=5 from the hook) names the line that called backward, once per
    line, as without gradlab: the wrapper around torch.autograd.backward is not counted."""
    m = torch.nn.Linear(3, 2)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    x = torch.randn(4, 3)
    seen = {}
    for tracked in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            with gradlab.track() if tracked else contextlib.nullcontext():
                first = sys._getframe().f_lineno + 2
                for _ in range(2):
                    m(x).sum().backward()
                m(x).pow(2).sum().backward()
        seen[tracked] = [(w.filename, w.lineno, w.category) for w in caught]
    assert seen[False] == [(__file__, first, UserWarning), (__file__, first + 1, UserWarning)]
    assert seen[True] == seen[False]


def _gat_error() -> str:
    torch.manual_seed(0)
    src, dst = torch.randint(0, 5, (12,)), torch.randint(0, 5, (12,))
    h = torch.randn(5, 4, requires_grad=True)

    def attention(h: torch.Tensor) -> torch.Tensor:
        alpha = torch.exp((h[src] * h[dst]).sum(1))
        denom = torch.zeros(5).index_add(0, dst, alpha)  # index_add saves alpha (as an input)
        alpha /= denom[dst] + 1e-16  # alpha's grad_fn is now DivBackward0; alpha itself dies with the function
        return torch.zeros(5, 4).index_add(0, dst, alpha.unsqueeze(1) * h[src])

    with pytest.raises(RuntimeError) as info:
        attention(h).sum().backward()
    return str(info.value)


def test_the_stale_message_names_the_node_torch_names() -> None:
    """NOTE [Which node torch names]: for a saved input, its grad_fn as the backward finds it (Div), not Exp."""
    plain = _gat_error()
    assert re.search(r"which is output 0 of Div(Backward0)?,", plain)  # torch 2.4: DivBackward0
    with gradlab.track():
        assert _gat_error() == plain


WRITES_THAT_GIVE_HISTORY = {
    "copy into the saved tensor": (False, lambda buf, view, h: buf.copy_(h)),
    "multiply the saved tensor": (False, lambda buf, view, h: buf.mul_(h)),
    "copy into a view of it": (False, lambda buf, view, h: view.copy_(h[1:])),
    "copy into the base of a saved view": (True, lambda buf, view, h: buf.copy_(h)),
    "clamp after an add": (False, lambda buf, view, h: buf.add_(h).clamp_(0, 1)),
    "a write without history": (False, lambda buf, view, h: buf.add_(1)),
}


def _saved_without_history_error(save_view: bool, write: Callable[..., object]) -> str:
    h = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, 4, requires_grad=True)
    buf = torch.zeros(4, 4)  # no history when it is saved
    view = buf[1:]
    saved = view if save_view else buf
    out = (w[: len(saved)] * saved).sum()  # mul saves `saved`
    write(buf, view, h)
    with pytest.raises(RuntimeError) as info:
        out.backward()
    return str(info.value)


@pytest.mark.parametrize("case", list(WRITES_THAT_GIVE_HISTORY))
def test_a_tensor_saved_without_history_is_named_as_torch_names_it(case: str) -> None:
    """NOTE [Which node torch names]: a tensor saved with no grad_fn that a later write gives one (a memory slot
    written back with copy_) is named by its grad_fn as the backward finds it ("output 0 of AsStrided" for a view
    of such a base, from torch 2.13); a write without history leaves it unnamed."""
    save_view, write = WRITES_THAT_GIVE_HISTORY[case]
    plain = _saved_without_history_error(save_view, write)
    assert ("which is output 0 of" in plain) is (case != "a write without history")
    with gradlab.track():
        assert _saved_without_history_error(save_view, write) == plain


@needs_raw_saved
def test_a_diagnosis_never_runs_a_checkpointed_function_again() -> None:
    """NOTE [Other hooks' saved tensors]: reading a non-reentrant checkpoint's saved tensors would run the user's code."""
    from torch.utils.checkpoint import checkpoint

    calls = []
    lin = torch.nn.Linear(4, 4)

    def block(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return lin(torch.relu(x))

    def failing() -> None:
        z = torch.sigmoid(checkpoint(block, torch.randn(3, 4, requires_grad=True), use_reentrant=False))
        z.mul_(2)  # sigmoid saved z
        z.sum().backward()

    counts = []
    for tracked in (False, True):
        calls.clear()
        with gradlab.track() if tracked else contextlib.nullcontext(), pytest.raises(RuntimeError) as info:
            failing()
        counts.append(len(calls))
    assert counts == [1, 1]  # the forward, and no recomputation: the backward failed before reaching the block
    assert "output of Sigmoid [3, 4] was changed by mul_" in str(info.value.__notes__)
    y = checkpoint(block, torch.randn(3, 4, requires_grad=True), use_reentrant=False)
    calls.clear()
    assert gradlab.check(y.sum()).ok
    assert calls == []


def test_a_warning_from_a_script_run_by_runpy_is_shown_as_without_gradlab(tmp_path: Path) -> None:
    """runpy.run_path gives the script globals whose __spec__ and __loader__ are None; re-attributing torch's
    warning to its line must not make Python 3.12+ raise ValueError there (NOTE [Warnings keep the user's frame])."""
    script = tmp_path / "copies_a_tensor.py"
    script.write_text("import torch\ny = torch.ones(3, requires_grad=True) * 2\nz = torch.tensor(y)\n")
    seen = {}
    for tracked in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with gradlab.track() if tracked else contextlib.nullcontext():
                runpy.run_path(str(script), run_name="__main__")
        seen[tracked] = [(w.filename, w.lineno, w.category) for w in caught]
    assert seen[False] == [(str(script), 3, UserWarning)]
    assert seen[True] == seen[False]
