"""The training orders the course compares, run for a number of steps.

:data:`ORDERS` names each order; :func:`train` runs one on fresh seeded
networks and returns the losses (and the error that stopped it, if any).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch

from gradlab.i18n import _, ljust, width

from .networks import Pair, _int, batches, make_pair
from .questions import Localized
from .words import say, say_t

__all__ = ["ORDERS", "joint_step", "train", "TrainResult", "run_iterations", "compare_parameters"]


def _orders() -> dict[str, str]:
    return {
        "original": _("step 1 before backward 2 (the original loop)"),
        "retain_graph": _("original loop with loss_1.backward(retain_graph=True)"),
        "detach_inside": _("detach inside network 2 (the fix that circulates)"),
        "detach_input": _("n_2(pred_1.detach()): network 2 trains on network 1's output as data"),
        "joint": _("forward both, zero both, (loss_1 + loss_2).backward(), step both"),
    }


#: Each order's id and what it does, in the language in effect (NOTE [Texts in the language in effect]
#: in questions.py).
ORDERS: Mapping[str, str] = Localized(_orders)


def joint_step(pair: Pair, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One iteration of the corrected order in which both losses train network 1.

    Forward both, zero both, one backward of the sum, then step both; returns
    ``(loss_1, loss_2)``. Example::

        >>> pair = make_pair(0)
        >>> x, y = batches(1)[0]
        >>> loss_1, loss_2 = joint_step(pair, x, y)
    """
    if not isinstance(pair, Pair):
        raise TypeError(f"pair must be a Pair, not {type(pair).__name__}; pass pair=gradlab.course.make_pair()")
    pred_1 = pair.n_1(x)
    pred_2 = pair.n_2(pred_1)
    pair.opt_1.zero_grad()
    pair.opt_2.zero_grad()
    loss_1 = pair.criterion(y, pred_1)
    loss_2 = pair.criterion(y, pred_2)
    (loss_1 + loss_2).backward()
    pair.opt_1.step()
    pair.opt_2.step()
    return loss_1, loss_2


@dataclass
class TrainResult:
    """Losses per step, and the error that stopped training (None if it ran to the end)."""

    order: str
    losses_1: list[float] = field(default_factory=list)
    losses_2: list[float] = field(default_factory=list)
    error: str | None = None
    pair: Pair | None = field(default=None, repr=False)


def train(
    order: str = "joint",
    steps: int = 10,
    seed: int = 0,
    softmax: bool = True,
    lr: float = 1e-3,
    target: str | Callable[[torch.Tensor], torch.Tensor] = "2x",
) -> TrainResult:
    """Run one of :data:`ORDERS` for ``steps`` iterations; errors are caught and returned.

    The data are :func:`batches` ``(steps, seed, target=target)``: ``y = 2x`` by
    default; ``target="2|x|"`` (or any function of ``x``) changes what both
    losses fit, not the ``x``. Example::

        >>> train("original", steps=1).error.startswith("Trying to backward")
        True
        >>> len(train("detach_input", steps=3, softmax=False, target="2|x|").losses_2)
        3
    """
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}; pass e.g. order='joint'")
    _int(steps, "steps", 1)
    data = batches(steps, seed, target=target)
    pair = make_pair(seed, softmax=softmax, detach_inside=(order == "detach_inside"), lr=lr)
    n_1, n_2, opt_1, opt_2, criterion = pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion
    result = TrainResult(order, pair=pair)
    try:
        for x, y in data:
            if order == "joint":
                loss_1, loss_2 = joint_step(pair, x, y)
            else:
                pred_1 = n_1(x)
                opt_1.zero_grad()
                loss_1 = criterion(y, pred_1)
                loss_1.backward(retain_graph=(order == "retain_graph"))
                opt_1.step()
                pred_2 = n_2(pred_1.detach() if order == "detach_input" else pred_1)
                opt_2.zero_grad()
                loss_2 = criterion(y, pred_2)
                loss_2.backward()
                opt_2.step()
            result.losses_1.append(loss_1.item())
            result.losses_2.append(loss_2.item())
    except RuntimeError as e:
        result.error = str(e)
    return result


def run_iterations(
    iteration: Callable[..., object],
    steps: int = 10,
    seed: int = 0,
    softmax: bool = True,
    lr: float = 1e-3,
    target: str | Callable[[torch.Tensor], torch.Tensor] = "2x",
) -> Pair:
    """Run a loop written as one iteration, ``iteration(n_1, n_2, opt_1, opt_2, criterion, x, y)``; return the pair.

    The networks are ``make_pair(seed, softmax=softmax, lr=lr)``, the data
    ``batches(steps, seed, target=target)``: the same as :func:`train` gives its orders,
    so a loop written by hand and an order of :func:`train` can be compared bitwise.
    Errors are the iteration's own: they propagate. Example::

        >>> def fix_a(n_1, n_2, opt_1, opt_2, criterion, x, y):
        ...     pred_1 = n_1(x)
        ...     opt_1.zero_grad()
        ...     criterion(y, pred_1).backward()
        ...     opt_1.step()
        ...     opt_2.zero_grad()
        ...     criterion(y, n_2(pred_1.detach())).backward()
        ...     opt_2.step()
        >>> pair = run_iterations(fix_a, steps=5, softmax=False)
        >>> torch.equal(pair.snapshot()["n_2"], train("detach_input", steps=5, softmax=False).pair.snapshot()["n_2"])
        True
    """
    if not callable(iteration):
        raise TypeError(
            f"iteration must be a function (n_1, n_2, opt_1, opt_2, criterion, x, y), not {type(iteration).__name__}"
        )
    _int(steps, "steps", 1)
    pair = make_pair(seed, softmax=softmax, lr=lr)
    for x, y in batches(steps, seed, target=target):
        iteration(pair.n_1, pair.n_2, pair.opt_1, pair.opt_2, pair.criterion, x, y)
    return pair


def compare_parameters(runs: Mapping[str, Mapping[str, torch.Tensor]], reference: str) -> str:
    """A table: for each run, each network's parameters against the ``reference`` run's.

    ``runs`` maps a label to :meth:`Pair.snapshot` (``{"n_1": vector, "n_2": vector}``).
    A cell says ``bitwise equal`` or how far apart the two are at most; labels are padded
    by display width, so Chinese labels line up. Example::

        >>> a = {"n_1": torch.zeros(2), "n_2": torch.zeros(2)}
        >>> b = {"n_1": torch.zeros(2), "n_2": torch.tensor([0.0, 0.25])}
        >>> print(compare_parameters({"(a)": a, "(b)": b}, reference="(a)"))
        compared with (a)  n_1            n_2
        (a)                bitwise equal  bitwise equal
        (b)                bitwise equal  up to 0.25 apart
    """
    if reference not in runs:
        raise ValueError(f"reference must be one of the runs' labels {list(runs)}, got {reference!r}")
    base = runs[reference]
    networks = list(base)
    head = say_t("compared with {reference}", reference=reference)
    rows = []
    for label, run in runs.items():
        cells = []
        for net in networks:
            if torch.equal(run[net], base[net]):
                cells.append(say("bitwise equal"))
            else:
                cells.append(say_t("up to {gap} apart", gap=f"{(run[net] - base[net]).abs().max().item():.2f}"))
        rows.append((label, cells))
    first = max(width(head), *(width(label) for label, _c in rows))
    columns = [max(width(net), *(width(cells[i]) for _l, cells in rows)) for i, net in enumerate(networks)]
    lines = [ljust(head, first) + "  " + "  ".join(ljust(n, w) for n, w in zip(networks, columns))]
    for label, cells in rows:
        lines.append(ljust(label, first) + "  " + "  ".join(ljust(c, w) for c, w in zip(cells, columns)))
    return "\n".join(line.rstrip() for line in lines)
