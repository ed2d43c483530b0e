"""track() only observes: training under it gives bitwise the same parameters.

200 steps of the course's corrected loop (forward both, zero both,
(loss_1 + loss_2).backward(), step both), seeded identically, with and without
``gradlab.track()``; every parameter and every optimizer state tensor must be
``torch.equal``. The optimizers cover the single-tensor and the foreach code
paths, since the tracker's hooks see each of them differently.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

import gradlab
from gradlab import course

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
