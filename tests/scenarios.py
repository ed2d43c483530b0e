"""The course's two-network loop, in the states the tests need, written once.

Each function builds fresh seeded networks (``gradlab.course.make_pair``) and
one batch, runs the loop up to a point and returns what a test inspects. The
lines below are the loop as the course writes it, so a test that checks where
gradlab says something happened can read the line back with :func:`line_of`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from gradlab import course


@dataclass
class State:
    """The networks, the batch and the tensors of one iteration."""

    pair: course.Pair
    x: torch.Tensor
    y: torch.Tensor
    pred_1: torch.Tensor | None = None
    loss_1: torch.Tensor | None = None
    loss_2: torch.Tensor | None = None

    @property
    def names(self) -> dict[str, torch.nn.Module]:
        return self.pair.names


def fresh(seed: int = 0, softmax: bool = True) -> State:
    """Seeded networks and optimizers, and the first batch of ``course.batches``."""
    pair = course.make_pair(seed, softmax=softmax)
    x, y = course.batches(1, seed)[0]
    return State(pair, x, y)


def stepped_before_backward_2(seed: int = 0, softmax: bool = True, state: State | None = None) -> State:
    """Failure 2 set up: loss_1 backwarded with retain_graph=True, then opt_1.step(); loss_2 not yet backwarded.

    ``loss_2``'s graph saved ``n_1.linear_2.weight`` (transposed) at version 1;
    the step moved it to version 2. ``state`` continues a :func:`fresh` state
    (e.g. one whose networks a tracker already names).
    """
    s = state or fresh(seed, softmax)
    p = s.pair
    s.pred_1 = p.n_1(s.x)
    p.opt_1.zero_grad()
    s.loss_1 = p.criterion(s.y, s.pred_1)
    s.loss_1.backward(retain_graph=True)
    p.opt_1.step()
    pred_2 = p.n_2(s.pred_1)
    p.opt_2.zero_grad()
    s.loss_2 = p.criterion(s.y, pred_2)
    return s


def freed_before_backward_2(seed: int = 0, softmax: bool = True, state: State | None = None) -> State:
    """Failure 1 set up: the original loop just before ``loss_2.backward()`` (loss_1's backward freed n_1's part)."""
    s = state or fresh(seed, softmax)
    p = s.pair
    s.pred_1 = p.n_1(s.x)
    p.opt_1.zero_grad()
    s.loss_1 = p.criterion(s.y, s.pred_1)
    s.loss_1.backward()
    p.opt_1.step()
    pred_2 = p.n_2(s.pred_1)
    p.opt_2.zero_grad()
    s.loss_2 = p.criterion(s.y, pred_2)
    return s


def original_loop(seed: int = 0, retain_graph: bool = False, softmax: bool = True, state: State | None = None) -> None:
    """One iteration of the original loop; raises failure 1 (or failure 2 with ``retain_graph=True``)."""
    build = stepped_before_backward_2 if retain_graph else freed_before_backward_2
    s = build(seed, softmax, state)
    assert s.loss_2 is not None
    s.loss_2.backward()


def line_of(function: object, code: str) -> int:
    """The line number in this file of the first line of ``function`` that contains ``code``."""
    lines, start = inspect.getsourcelines(function)  # type: ignore[arg-type]
    for i, line in enumerate(lines):
        if code in line:
            return start + i
    raise ValueError(f"{code!r} is not in {function!r}")
