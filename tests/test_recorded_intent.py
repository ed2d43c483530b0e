"""The loop's intent read from what ran (NOTE [Intent from the record] in gradlab/loop.py).

Under ``track()`` the recorder logs each ``zero_grad()`` and ``step()`` (of an optimizer or a module)
with the ids of the parameters it holds, and each backward's ``inputs=``. Once the loop has gone round,
what an optimizer did after a backward is known from that record, helpers and branches included; the
diagnosis follows it and says when the source reads otherwise. The record keeps ids only: no graph,
tensor or optimizer stays alive through it, and training is the same with and without the tracker.
"""

from __future__ import annotations

import gc
import sys
import weakref
from typing import Any

import pytest
import torch
from torch import nn

import gradlab
from gradlab import writes
from gradlab.loop import intent_after, read_site, recorded_intent
from gradlab.recorder import OptimizerCall

pytestmark = [pytest.mark.library, pytest.mark.slow]


def _step(opt: torch.optim.Optimizer) -> None:
    opt.step()  # a helper the source reading does not follow


def test_the_record_follows_a_helper_and_a_branch_the_source_cannot() -> None:
    torch.manual_seed(0)
    body, head = nn.Linear(3, 4), nn.Linear(4, 1)
    opt_body, opt_head = torch.optim.SGD(body.parameters(), lr=0.1), torch.optim.SGD(head.parameters(), lr=0.1)
    x = torch.randn(5, 3)
    with gradlab.track() as t:
        for i in range(4):
            opt_body.zero_grad()
            fit = body(x).pow(2).mean()
            fit.backward()
            _step(opt_body)
            opt_head.zero_grad()
            score = head(body(x).detach()).mean()
            score.backward()
            if i % 2 == 1:
                opt_head.step()
        frame = sys._getframe()
        site = read_site(frame)
        recording = t._recorder()
        assert site is not None and recording is not None
        calls = list(recording.history)
        at = next(c.location for c in calls if c.location is not None and "fit.backward()" in c.location.code)
        score_at = next(c.location for c in calls if c.location is not None and "score.backward()" in c.location.code)
        until = recording.stats()["backward_calls"]
        ran = recorded_intent(calls, recording.optimizer_calls, at, until, site)
        last_score = recorded_intent(calls, recording.optimizer_calls, score_at, until, site)
        zero_then_step = [(e.kind, e.params) for e in recording.optimizer_calls][:2]
    assert ran.trained == ("body",)  # _step(opt_body) stepped body on fit's gradient
    read = intent_after(site.source, at.lineno, site.optimizers, site.modules)
    assert "body" not in read.trained  # the source sees opt_body.zero_grad() first: the helper is not followed
    assert last_score.trained == ("head",)  # the last iteration (i == 3) took the branch
    assert zero_then_step == [
        ("zero_grad", frozenset(id(p) for p in body.parameters())),
        ("step", frozenset(id(p) for p in body.parameters())),
    ]


def test_the_diagnosis_follows_what_ran_and_says_where_the_source_reads_otherwise() -> None:
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    error: RuntimeError | None = None
    with gradlab.track():
        pred = net(x)
        try:
            for _epoch in range(3):
                loss = (pred - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                _step(opt)
        except RuntimeError as e:
            error = e
    assert error is not None
    d = gradlab.last_diagnosis(error)
    first = d.fixes[0]
    assert d.cause == "stale_forward" and first.applicability == "machine-applicable"
    assert dict(first.claims) == {"loss": ("net",)}  # what ran: _step(opt) stepped net on loss's gradient
    assert "disagree on what loss trains" in first.trains and "stepped net on it" in first.trains


def test_without_a_first_round_the_source_is_read_and_nothing_is_said_about_the_record() -> None:
    torch.manual_seed(2)
    net = nn.Linear(3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    error: RuntimeError | None = None
    with gradlab.track():
        out = net(x).sum()
        opt.zero_grad()
        out.backward()
        try:
            out.backward()  # the same loss twice, before any step
        except RuntimeError as e:
            error = e
        opt.step()
    assert error is not None
    fix = gradlab.last_diagnosis(error).fixes[0]
    assert "disagree" not in fix.trains


def test_the_record_keeps_ids_only_no_graph_no_tensor_no_optimizer() -> None:
    net = nn.Linear(3, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    extra = torch.zeros(3, requires_grad=True)
    refs: list[weakref.ref[Any]] = []
    with gradlab.track() as t:
        for _ in range(3):
            hidden = net(torch.randn(2, 3)) * extra
            loss = hidden.pow(2).sum()
            refs += [weakref.ref(hidden), weakref.ref(loss)]
            net.zero_grad()
            opt.zero_grad()
            loss.backward(inputs=[extra, *net.parameters()])
            opt.step()
        recording = t._recorder()
        assert recording is not None
        calls = list(recording.optimizer_calls)
        assert calls and all(isinstance(c, OptimizerCall) for c in calls)
        for c in calls:
            assert isinstance(c.owner, int) and all(isinstance(i, int) for i in c.params)
        inputs = recording.history[-1].inputs
        assert inputs == frozenset({id(extra), *(id(p) for p in net.parameters())})
        opt_ref = weakref.ref(opt)
        del hidden, loss, opt
        gc.collect()
        assert all(r() is None for r in refs)  # no graph and no tensor kept alive by the record
        assert opt_ref() is None  # nor the optimizer it names by id


def _train(tracked: bool) -> list[torch.Tensor]:
    torch.manual_seed(3)
    a, b = nn.Linear(4, 4), nn.Linear(4, 1)
    opt_a = torch.optim.Adam(a.parameters(), lr=1e-2)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(8, 4)

    def run() -> None:
        for i in range(4):
            opt_a.zero_grad(set_to_none=i % 2 == 0)
            b.zero_grad()
            loss = b(torch.tanh(a(x))).pow(2).mean()
            loss.backward(inputs=list(a.parameters()) if i == 2 else None)
            opt_a.step()
            opt_b.step()

    if tracked:
        with gradlab.track():
            run()
    else:
        run()
    return [p.detach().clone() for p in (*a.parameters(), *b.parameters())]


def test_recording_zero_grad_and_steps_changes_no_training_result() -> None:
    plain, tracked = _train(False), _train(True)
    assert all(torch.equal(p, q) for p, q in zip(plain, tracked, strict=True))
    # and the wrappers are gone afterwards: zero_grad is torch's own again
    assert "zero_grad" not in {name for _, name in writes.patched()}
    assert "zero_grad" not in vars(torch.optim.SGD) and "zero_grad" in vars(torch.optim.Optimizer)
