"""Every public function against odd inputs: a correct result or a documented error, never a crash.

A documented error is a TypeError or ValueError whose message names what was
wrong and says what to pass ("pass ...", "... must be ...", "takes ..."), in
gradlab's words (it names the argument). Anything else (an AttributeError, a
RuntimeError from deep inside torch, a bare int() message) fails.

Single odd values are parametrized exhaustively; generated values (texts, keys,
integers, shapes) come from hypothesis, derandomized (the "gradlab" profile
below) so CI is deterministic.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import gradlab
from gradlab import course

pytestmark = pytest.mark.library

settings.register_profile(
    "gradlab",
    deadline=None,
    max_examples=25,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SETTINGS = settings.get_profile("gradlab")

HINT_WORDS = ("pass", "must", "takes")


def _freed() -> torch.Tensor:
    x = torch.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    return y


def _complex() -> torch.Tensor:
    z = torch.ones(2, dtype=torch.complex64, requires_grad=True)
    return (z * z).abs().sum()


def _view() -> torch.Tensor:
    x = torch.ones(4, 3, requires_grad=True)
    return (x * 2).t()[1:]


def _zero_size() -> torch.Tensor:
    return (torch.empty(0, 3, requires_grad=True) * 2).sum()


def _int_leaf_graph() -> torch.Tensor:
    return torch.arange(3) * 2


#: Odd values, built fresh per example (tensors with graphs cannot be shared between examples).
ODD: dict[str, Callable[[], object]] = {
    "int": lambda: 3,
    "negative int": lambda: -1,
    "zero": lambda: 0,
    "bool": lambda: True,
    "float": lambda: 1.5,
    "nan": lambda: float("nan"),
    "str": lambda: "loss",
    "bytes": lambda: b"loss",
    "None": lambda: None,
    "empty list": list,
    "list of junk": lambda: [1, "a", None],
    "tuple of tensors and junk": lambda: (torch.ones(2, requires_grad=True) * 2, 3),
    "dict of junk": lambda: {"a": 3},
    "dict with int key": lambda: {1: nn.Linear(1, 1)},
    "dict of modules": lambda: {"m": nn.Linear(1, 1)},
    "module": lambda: nn.Linear(2, 2),
    "lambda": lambda: lambda: {"a": 3},
    "generator": lambda: (i for i in range(2)),
    "empty tensor": lambda: torch.empty(0),
    "empty leaf": lambda: torch.empty(0, requires_grad=True),
    "zero-size graph": _zero_size,
    "int tensor": lambda: torch.arange(3),
    "int graph-less": _int_leaf_graph,
    "complex graph": _complex,
    "leaf": lambda: torch.ones(3, requires_grad=True),
    "no grad": lambda: torch.ones(3),
    "0-d": lambda: torch.tensor(2.0, requires_grad=True) * 2,
    "freed graph": _freed,
    "view": _view,
    "parameter": lambda: nn.Parameter(torch.ones(2)),
}


def _loss() -> torch.Tensor:
    w = torch.ones(3, requires_grad=True)
    return (w.sigmoid() * 2).sum()


def _call(fn: Callable[[], object], *arg_names: str) -> object:
    """Run ``fn``; allow only a result or a documented TypeError/ValueError naming one of ``arg_names``."""
    try:
        return fn()
    except (TypeError, ValueError) as e:
        msg = str(e)
        assert any(w in msg for w in HINT_WORDS), f"{type(e).__name__} without a hint of what to pass: {msg!r}"
        assert any(a in msg for a in arg_names), f"{type(e).__name__} does not name {arg_names}: {msg!r}"
        return e


# -- inspectors: the output argument -------------------------------------------------------------

OUTPUT_FUNCS: dict[str, Callable[[object], object]] = {
    "check": lambda v: gradlab.check(v),
    "saved_tensors": lambda v: gradlab.saved_tensors(v),
    "collect": lambda v: gradlab.collect(v),
    "grad_report(loss=)": lambda v: gradlab.grad_report({"w": torch.ones(2, requires_grad=True)}, loss=v),
}
if hasattr(gradlab, "draw"):
    OUTPUT_FUNCS["draw"] = lambda v: gradlab.draw(v).source


@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "tracked"])
@pytest.mark.parametrize("func", sorted(OUTPUT_FUNCS))
@pytest.mark.parametrize("value", sorted(ODD))
def test_output_argument(func: str, tracked: bool, value: str) -> None:
    with gradlab.track() if tracked else contextlib.nullcontext():
        _call(lambda: OUTPUT_FUNCS[func](ODD[value]()), "output", "loss", "tensor")


# -- names= ---------------------------------------------------------------------------------------

NAMES_FUNCS: dict[str, Callable[[object], object]] = {
    "check": lambda v: gradlab.check(_loss(), names=v),
    "saved_tensors": lambda v: gradlab.saved_tensors(_loss(), v),
    "collect": lambda v: gradlab.collect(_loss(), v),
    "grad_report": lambda v: gradlab.grad_report(v),
    "track": lambda v: _enter_track(v),
}
if hasattr(gradlab, "draw"):
    NAMES_FUNCS["draw"] = lambda v: gradlab.draw(_loss(), v).source


def _enter_track(names: object) -> object:
    with gradlab.track(names=names) as tracker:
        loss = _loss()
        return tracker.check(loss)


@pytest.mark.parametrize("func", sorted(NAMES_FUNCS))
@pytest.mark.parametrize("value", sorted(ODD))
def test_names_argument(func: str, value: str) -> None:
    _call(lambda: NAMES_FUNCS[func](ODD[value]()), "names")


@pytest.mark.parametrize("func", sorted(NAMES_FUNCS))
@SETTINGS
@given(keys=st.lists(st.text(max_size=8), max_size=4), kind=st.sampled_from(["module", "tensor", "junk"]))
def test_names_with_any_keys(func: str, keys: list[str], kind: str) -> None:
    value = {
        "module": lambda: nn.Linear(1, 1),
        "tensor": lambda: torch.ones(2, requires_grad=True),
        "junk": lambda: object(),
    }[kind]
    _call(lambda: NAMES_FUNCS[func]({k: value() for k in keys}), "names")


def test_module_as_names_says_what_to_pass() -> None:
    """An nn.Module is callable; names=model must not be called as if it were a zero-argument callable."""
    model = nn.Linear(2, 2)
    for func in sorted(NAMES_FUNCS):
        _call(lambda f=NAMES_FUNCS[func]: f(model), "names")


def test_track_with_names_none() -> None:
    with gradlab.track(names=None) as tracker:
        assert tracker.check(_loss()).ok


# -- explain --------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(gradlab, "explain"), reason="gradlab.explain is not exported yet")
@pytest.mark.parametrize("value", sorted(ODD))
def test_explain_odd_values(value: str) -> None:
    _call(lambda: gradlab.explain(ODD[value]()), "explain", "error", "exception")


@pytest.mark.skipif(not hasattr(gradlab, "explain"), reason="gradlab.explain is not exported yet")
@settings(SETTINGS, max_examples=100)
@given(text=st.text(max_size=300))
def test_explain_any_text(text: str) -> None:
    result = gradlab.explain(text)
    assert result.kind
    str(result)


@pytest.mark.skipif(not hasattr(gradlab, "explain"), reason="gradlab.explain is not exported yet")
@settings(SETTINGS, max_examples=50)
@given(
    prefix=st.text(max_size=40),
    cur=st.integers(0, 10**6),
    exp=st.integers(0, 10**6),
    shape=st.lists(st.integers(0, 10**4), max_size=5),
)
def test_explain_mangled_inplace_message(prefix: str, cur: int, exp: int, shape: list[int]) -> None:
    dims = ", ".join(map(str, shape))
    text = (
        f"{prefix}one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.FloatTensor [{dims}]], which is output 0 of AsStrided, is at version {cur}; "
        f"expected version {exp} instead."
    )
    e = gradlab.explain(text)
    assert e.kind == "modified_in_place"
    assert (e.current_version, e.expected_version) == (cur, exp)
    assert e.shape == tuple(shape)


# -- examples: make_pair, batches, train ----------------------------------------------------------


@pytest.mark.parametrize("value", sorted(ODD))
@pytest.mark.parametrize("arg", ["seed", "lr", "softmax", "detach_inside"])
def test_make_pair_args(value: str, arg: str) -> None:
    _call(lambda: course.make_pair(**{arg: ODD[value]()}), arg)


@pytest.mark.parametrize("value", sorted(ODD))
@pytest.mark.parametrize("arg", ["steps", "seed", "size", "target"])
def test_batches_args(value: str, arg: str) -> None:
    result = _call(lambda: course.batches(**{arg: ODD[value]()}), arg)
    if not isinstance(result, Exception):
        assert all(x.shape == y.shape for x, y in result)


@pytest.mark.parametrize("value", sorted(ODD))
@pytest.mark.parametrize("arg", ["order", "steps", "seed", "lr", "softmax", "target"])
def test_train_args(value: str, arg: str) -> None:
    kwargs = {"steps": 2, arg: ODD[value]()}
    _call(lambda: course.train(**kwargs), arg)


@SETTINGS
@given(steps=st.integers(-3, 4), seed=st.integers(-(2**63), 2**63 - 1), size=st.integers(-2, 5))
def test_batches_integers(steps: int, seed: int, size: int) -> None:
    result = _call(lambda: course.batches(steps, seed, size), "steps", "seed", "size")
    if not isinstance(result, Exception):
        assert len(result) == steps


@pytest.mark.parametrize("value", sorted(ODD))
def test_modules_in(value: str) -> None:
    _call(lambda: gradlab.modules_in(ODD[value]()), "modules_in", "namespace", "mapping")


@SETTINGS
@given(keys=st.lists(st.text(max_size=6), max_size=5))
def test_modules_in_any_keys(keys: list[str]) -> None:
    found = gradlab.modules_in({k: nn.Linear(1, 1) for k in keys})
    assert sorted(found) == sorted({k for k in keys if not k.startswith("_")})


# -- graphs: deep, views, dtypes -------------------------------------------------------------------


def _chain(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(n):
        y = y.sigmoid()
    return x, y.sum()


def test_deep_graph_check_and_saved_tensors() -> None:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)  # gradlab walks iteratively: a deep chain needs no recursion
    try:
        _x, loss = _chain(5_000)
        assert gradlab.check(loss).ok
        assert len(gradlab.saved_tensors(loss)) == 5_000
        if hasattr(gradlab, "draw"):
            assert gradlab.draw(loss).source.startswith("digraph")
    finally:
        sys.setrecursionlimit(old)


def test_deep_graph_modified_in_place_is_found() -> None:
    _x, loss = _chain(5_000)
    node = loss.grad_fn
    for _ in range(2_500):
        node = node.next_functions[0][0]
    with torch.no_grad():
        node._saved_result.add_(0)  # bump the version of one saved output halfway down
    d = gradlab.check(loss)
    assert not d.ok and d.kinds == ["modified_in_place"]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@SETTINGS
@given(
    dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64]),
    shape=st.lists(st.integers(0, 3), max_size=3),
    modify=st.booleans(),
)
def test_dtypes_and_zero_sizes_agree_with_backward(dtype: torch.dtype, shape: list[int], modify: bool) -> None:
    w = torch.ones(shape, dtype=dtype, requires_grad=True)
    h = w * 1
    y = h.exp()  # exp saves its output
    loss = (y * y).abs().sum() if dtype.is_complex else (y * y).sum()
    if modify:
        with torch.no_grad():
            y.mul_(1)
    d = gradlab.check(loss)
    try:
        loss.backward()
        ran = True
    except RuntimeError:
        ran = False
    assert d.ok == ran


def test_views_are_named_and_checked() -> None:
    lin = nn.Linear(3, 2)
    x = torch.ones(4, 3, requires_grad=True)
    out = lin(x * 1)[:, 1:].t()  # addmm saves its input and a transposed view of lin.weight
    loss = out.sum()
    names = {s.name for s in gradlab.saved_tensors(loss, {"lin": lin})}
    assert any(n.startswith("lin.weight") for n in names)
    assert gradlab.check(loss, {"lin": lin}).ok


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_grad_report_on_odd_parameters() -> None:
    empty = nn.Parameter(torch.empty(0))
    cplx = nn.Parameter(torch.ones(2, dtype=torch.complex64))
    cplx.grad = torch.zeros(2, dtype=torch.complex64)
    report = gradlab.grad_report({"empty": empty, "cplx": cplx})
    assert report.no_grad == ["empty"] and report.zero == ["cplx"]
    str(report)


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_grad_report_norm_of_complex_grad() -> None:
    p = nn.Parameter(torch.zeros(2, dtype=torch.complex64))
    p.grad = torch.tensor([1j, 0], dtype=torch.complex64)
    (row,) = gradlab.grad_report({"p": p}).rows
    assert row.status == "ok" and row.norm == pytest.approx(1.0)
