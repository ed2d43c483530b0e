"""The family of autograd errors: each provoked with the installed torch, decoded, coded; older wordings pinned."""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from gradlab import explain
from gradlab.advice import message_fixes
from gradlab.codes import CODES, by_code, code_for, index_markdown
from gradlab.explanation import KINDS, Explanation
from gradlab.kinds import explain_code

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parent.parent


def _raise(build: Callable[[], object]) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            build()
        except (RuntimeError, ValueError) as e:
            return e
    raise AssertionError("torch raised nothing")


def _non_scalar() -> None:
    x = torch.ones(3, requires_grad=True)
    (x * 2).backward()


def _unused() -> None:
    x = torch.ones(3, requires_grad=True)
    torch.autograd.grad((x * 2).sum(), [x, torch.ones(2, requires_grad=True)])


def _numpy() -> None:
    (torch.ones(3, requires_grad=True) * 2).numpy()


def _multi_view() -> None:
    a, _b = (torch.ones(4, requires_grad=True) * 1).split(2)
    a.add_(1)


def _detach_view() -> None:
    (torch.ones(3, requires_grad=True) * 2)[:2].detach_()


def _inference() -> None:
    with torch.inference_mode():
        i = torch.ones(3)
    (torch.ones(3, requires_grad=True) * i).sum().backward()


def _hook() -> None:
    torch.ones(2).register_hook(lambda g: g)


def _nan() -> None:
    with torch.autograd.detect_anomaly():
        y = torch.tensor([0.0], requires_grad=True)
        (y / y).sum().backward()


def _checkpoint() -> None:
    from torch.utils.checkpoint import checkpoint

    calls = [0]

    def f(a: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return a[: calls[0]].sin()

    checkpoint(f, torch.ones(3, requires_grad=True), use_reentrant=False).sum().backward()


def _no_grad_fn() -> None:
    torch.ones(2).sum().backward()


def _leaf() -> None:
    torch.ones(2, requires_grad=True).add_(1)


def _custom_view() -> None:
    layer = torch.nn.Linear(2, 2)
    layer.register_full_backward_hook(lambda module, grad_in, grad_out: None)
    torch.relu_(layer(torch.ones(1, 2)))


# kind, how to provoke it, the parts explain() reads from torch 2.13's text
PROVOKED = [
    ("non_scalar_output", _non_scalar, {}),
    ("unused_input", _unused, {}),
    ("numpy_requires_grad", _numpy, {}),
    ("multi_view_in_place", _multi_view, {"output_nr": 0}),
    ("detach_view_in_place", _detach_view, {}),
    ("inference_saved", _inference, {}),
    ("hook_no_grad", _hook, {}),
    ("anomaly_nan", _nan, {"output_nr": 1}),
    ("checkpoint_metadata", _checkpoint, {}),
    ("no_grad_fn", _no_grad_fn, {}),
    ("leaf_in_place", _leaf, {}),
    ("custom_view_in_place", _custom_view, {"output_nr": 0, "output_of": "BackwardHookFunction"}),
]


@pytest.mark.parametrize("kind,build,parts", PROVOKED, ids=[p[0] for p in PROVOKED])
def test_each_message_of_the_installed_torch_is_decoded(kind: str, build: Callable[[], None], parts: dict) -> None:
    e = explain(_raise(build))
    assert e.kind == kind
    assert e.code == code_for(kind).code  # type: ignore[union-attr]
    assert str(e).startswith(f"error[{e.code} ")
    assert e.causes and e.fixes and e.meaning
    assert all(f.trains for f in e.fixes)  # every fix says what it trains
    for name, value in parts.items():
        assert getattr(e, name) == value


# torch 2.13's wordings (provoked above) and the older ones, pinned as text: the node names
# of torch 1.10-2.12 (SplitBackward0), "One of the differentiated Tensors" before the index.
OLDER = [
    ("non_scalar_output", "grad can be implicitly created only for real scalar outputs", {}),
    (
        "unused_input",
        "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if "
        "this is the desired behavior.",
        {},
    ),
    (
        "multi_view_in_place",
        "Output 0 of UnbindBackward0 is a view and is being modified inplace. This view is the output of a function "
        "that returns multiple views. Such functions do not allow the output views to be modified inplace. You "
        "should replace the inplace operation by an out-of-place one.",
        {"output_of": "UnbindBackward0", "output_nr": 0},
    ),
    (
        "anomaly_nan",
        "Function 'SqrtBackward0' returned nan values in its 0th output.",
        {"output_of": "SqrtBackward0", "output_nr": 0},
    ),
    (
        "ddp_unfinished_reduction",
        "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
        "that your module has parameters that were not used in producing loss. ...\nParameters which did not receive "
        "grad for rank 1: aux_head.weight, aux_head.bias\nParameter indices which did not receive grad for rank 1: 2 3",
        {"parameters": ("aux_head.weight", "aux_head.bias")},
    ),
    (
        "ddp_ready_twice",
        "Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use "
        "of a module parameter outside the `forward` function. ... Parameter at index 1 with name a.bias has been "
        "marked as ready twice. This means that multiple autograd engine  hooks have fired for this particular "
        "parameter during this iteration.",
        {"parameters": ("a.bias",)},
    ),
]


@pytest.mark.parametrize("kind,text,parts", OLDER, ids=[o[0] for o in OLDER])
def test_older_wordings_are_decoded(kind: str, text: str, parts: dict) -> None:
    e = explain("Traceback (most recent call last):\n  ...\nRuntimeError: " + text)
    assert e.kind == kind
    for name, value in parts.items():
        assert getattr(e, name) == value


def test_ddp_names_the_unused_parameters_in_the_fix() -> None:
    e = explain(OLDER[4][1])
    assert "aux_head.weight, aux_head.bias" in e.summary
    assert "aux_head.weight" in e.fixes[0].summary


def test_every_code_decodes_its_own_example_and_codes_are_stable() -> None:
    assert [c.code for c in CODES] == [f"GL{i:04d}" for i in range(1, len(CODES) + 1)]
    assert [c.kind for c in CODES[:4]] == ["graph_freed", "modified_in_place", "no_grad_fn", "leaf_in_place"]
    assert {c.kind for c in CODES} | {"not_autograd"} == set(KINDS)
    for c in CODES:
        assert explain(c.example).kind == c.kind
        assert explain_code(c.code.lower()).startswith(f"error[{c.code} ")
        if c.kind not in ("graph_freed", "modified_in_place"):
            assert message_fixes(c.kind)


def test_unknown_code_and_kind_say_what_to_pass() -> None:
    with pytest.raises(ValueError, match="GL0001 to GL"):
        by_code("GL9999")
    with pytest.raises(TypeError, match="as a str"):
        by_code(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pass one of the family's kinds"):
        message_fixes("nope")


@pytest.mark.parametrize(
    "text,closest",
    [
        (
            "Output 0 of AsStridedBackward0 is a view and its base or another view of its base has been modified inplace",
            "multi_view_in_place",
        ),
        ("Expected to mark a variable ready twice, or so", "ddp_ready_twice"),
        ("RuntimeError: CUDA out of memory", None),
    ],
)
def test_unknown_message_is_not_decoded_but_named_closest(text: str, closest: str | None) -> None:
    e = explain(text)
    assert e.kind == "not_autograd" and e.code is None
    assert e.closest == closest
    assert str(e).startswith("not decoded: ")
    assert ("closest known kind: " in str(e)) == (closest is not None)


def test_docs_index_does_not_drift() -> None:
    assert (ROOT / "docs" / "codes.md").read_text(encoding="utf-8") == index_markdown()


# -- located: under track() the note names the line that cut the graph ----------------------------


def _note_of(build: Callable[[], None]) -> str:
    import gradlab

    with gradlab.track():
        try:
            build()
        except RuntimeError as e:
            return "\n".join(getattr(e, "__notes__", []))
    raise AssertionError("torch raised nothing")


def test_the_note_names_the_detach_that_cut_the_graph() -> None:
    w = torch.ones(3, requires_grad=True)

    def build() -> None:
        h = (w * 2).detach()  # the cut
        h.sum().backward()

    note = _note_of(build)
    assert "error[GL0003 no grad_fn]" in note
    assert "h = (w * 2).detach()  # the cut" in note and "cut: .detach() here" in note


def test_the_note_names_no_grad_and_torch_tensor_of_an_item() -> None:
    w = torch.ones(3, requires_grad=True)

    def under_no_grad() -> None:
        with torch.no_grad():
            out = (w * 2).sum()
        out.backward()

    assert "with torch.no_grad():" in _note_of(under_no_grad)

    def rebuilt() -> None:
        value = (w * 2).sum().item()
        loss = torch.tensor(value) * 2  # rebuilt from a number
        loss.backward()

    note = _note_of(rebuilt)
    # on the loss's path (NOTE [The cut on the loss's path]): where the value left the graph, where it was rebuilt
    assert "# rebuilt from a number" in note and "cut: .item() here takes the value out of the graph" in note
    assert "rebuilt: torch.tensor() here makes a new tensor from that value" in note


def test_the_exact_cut_is_named_when_it_made_the_loss() -> None:
    w = torch.ones(3, requires_grad=True)

    def build() -> None:
        (w * 3).sum().item()  # an earlier cut
        loss = (w * 2).sum().detach()
        loss.backward()

    note = _note_of(build)
    assert "loss = (w * 2).sum().detach()" in note and "made the tensor backward was called on" in note


def test_no_cut_seen_no_location_and_results_unchanged() -> None:
    import gradlab

    w = torch.ones(3, requires_grad=True)
    with gradlab.track():
        assert (w * 2).sum().item() == 6.0  # the wrappers return torch's results
        d = (w * 2).detach()
        assert d.grad_fn is None and torch.equal(d, torch.full((3,), 2.0))
        try:
            torch.ones(2).sum().backward()  # a constant: no cut made it, but an earlier one is named, as the last
        except RuntimeError as e:
            assert "last place gradlab saw" in "\n".join(getattr(e, "__notes__", []))
    with gradlab.track():
        try:
            torch.ones(2).sum().backward()  # nothing cut under this tracker: located at its line, no cut named
        except RuntimeError as e:
            note = "\n".join(getattr(e, "__notes__", []))
            assert "error[GL0003 no grad_fn]" in note and "raised here" in note and "cut:" not in note


# -- located: the op that made several views, and the write torch refused ------------------------


def _run_tracked(path: Path) -> tuple[BaseException, object]:
    """Run the script at ``path`` under track(): the error it raised (with gradlab's note) and its explanation."""
    import runpy

    import gradlab

    with gradlab.track() as tracker:
        try:
            runpy.run_path(str(path), run_name="__main__")
        except RuntimeError as e:
            return e, tracker.explanation_for(e)
    raise AssertionError("the script raised nothing")


MULTI_VIEW_SCRIPTS = {
    "split": (
        "import torch\n"
        "w = torch.arange(4.0, requires_grad=True)\n"
        "x = w * 2\n"
        "a, b = x.split(2)  # the views\n"
        "a.mul_(3)\n"
        "(a * b).sum().backward()\n",
        "a, b = x.split(2)  # the views",
        ".split()",
        "a.mul_(3)",
        "a = a.mul(3)",
        0,
    ),
    "chunk": (
        "import torch\n"
        "w = torch.arange(4.0, requires_grad=True)\n"
        "parts = torch.chunk(w * 2, 2)\n"
        "second = parts[1]\n"
        "second += 1\n"
        "(parts[0] * second).sum().backward()\n",
        "parts = torch.chunk(w * 2, 2)",
        "torch.chunk()",
        "second += 1",
        "second = second + 1",
        1,
    ),
    "iterating": (
        "import torch\n"
        "w = torch.arange(6.0, requires_grad=True)\n"
        "rows = []\n"
        "for row in (w * 2).view(3, 2):\n"
        "    row += 1\n"
        "    rows.append(row)\n"
        "torch.stack(rows).pow(2).sum().backward()\n",
        "for row in (w * 2).view(3, 2):",
        ".unbind()",
        "row += 1",
        "row = row + 1",
        0,
    ),
}


@pytest.mark.parametrize("case", sorted(MULTI_VIEW_SCRIPTS))
def test_the_note_names_the_views_op_and_the_write_and_its_fix_trains_what_it_says(case: str, tmp_path: Path) -> None:
    from gradlab.edits import apply_edits

    source, views_line, op, write_line, fixed, nr = MULTI_VIEW_SCRIPTS[case]
    script = tmp_path / f"{case}.py"
    script.write_text(source, encoding="utf-8")
    e, explanation = _run_tracked(script)
    note = "\n".join(getattr(e, "__notes__", []))
    assert "error[GL0008 multi-view in place]" in note
    assert views_line in note and f"views: {op} here returned several views" in note
    assert f"the write went to output {nr}" in note
    assert write_line in note and "write: " in note
    assert traceback.extract_tb(e.__traceback__)[-1].filename == str(script)  # it ends at the user's write
    # the fix: its code is the edit; the patched script trains w as the code written out of place by hand
    assert isinstance(explanation, Explanation)
    fix = explanation.fixes[0]
    assert fix.code == fixed and fix.applicability == "maybe-incorrect" and "keeps its old values" in fix.trains
    patched = apply_edits(source, fix.edits)
    ran: dict[str, object] = {}
    exec(compile(patched, str(script), "exec"), ran)  # runs: torch no longer refuses the write
    w = ran["w"]
    assert isinstance(w, torch.Tensor) and w.grad is not None
    # the same gradient as the code written out of place by hand, with torch alone
    expected: dict[str, object] = {}
    exec(compile(source.replace(write_line, fixed), "<by hand>", "exec"), expected)
    assert torch.equal(w.grad, expected["w"].grad)  # type: ignore[union-attr]
    assert "clone the views where" in explanation.fixes[1].summary


def test_a_refused_write_without_recorded_views_keeps_the_plain_note() -> None:
    import gradlab

    x = (torch.ones(4, requires_grad=True) * 1).split(2)  # made before the tracker: not recorded
    with gradlab.track() as tracker, pytest.raises(RuntimeError, match="returns multiple views") as info:
        x[0].add_(1)
    # every kind is diagnosed (NOTE [Every kind diagnosed]): located at the write, without the views' line
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "error[GL0008 multi-view in place]" in note and "x[0].add_(1)" in note and "views:" not in note
    assert tracker.explanation_for(info.value) is not None
    with gradlab.track():
        a, _b = torch.ones(4).split(2)  # no autograd: torch lets the write through, as without gradlab
        a.add_(1)
        assert torch.equal(a, torch.full((2,), 2.0))


# -- check() before the backward: the cut, as the note after the error names it ----------------------


def test_check_before_backward_names_the_same_cut_as_the_note_after() -> None:
    import gradlab

    w = torch.ones(3, requires_grad=True)
    with gradlab.track() as tracker:
        total = (w * 2).sum()
        loss = torch.tensor(total.item()) * 2  # rebuilt from a number
        before = gradlab.check(loss)
        also = tracker.check([loss])
        with pytest.raises(RuntimeError, match="does not require grad") as info:
            loss.backward()
    after = tracker.explanation_for(info.value)
    assert not before.ok and before.kinds == ["no_grad_fn"] and before.problems == []
    assert after is not None and before.located is not None
    assert before.located.located_spans() == after.located_spans()  # the same lines, the same words
    assert [s.at.code for s in after.located_spans()] == [
        "loss = torch.tensor(total.item()) * 2  # rebuilt from a number"
    ]
    assert before.located.causes[0] == after.causes[0] and "torch.tensor(loss.item())" in after.causes[0]
    assert "# rebuilt from a number" in str(before) and str(before).startswith("error[GL0003 no grad_fn]")
    assert str(also) == str(before) and before.fixes == after.fixes


def test_check_names_the_detach_that_made_the_loss_and_says_ok_otherwise() -> None:
    import gradlab

    w = torch.ones(3, requires_grad=True)
    with gradlab.track():
        good = (w * 2).sum()
        cut = (w * 3).sum().detach()
        d = gradlab.check([good, cut])
        assert gradlab.check(good).ok
    assert not d.ok and "made the tensor backward was called on" in str(d) and "cut = (w * 3).sum().detach()" in str(d)
    assert "Element 1 of the tensors" in str(d)  # torch refuses the second, as backward([good, cut]) would
    outside = gradlab.check(torch.ones(2))  # outside a tracker: the cause is not located, the answer still right
    assert not outside.ok and outside.located is not None and not outside.located.located_spans()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        torch.ones(2).backward()  # what check() predicted
    assert w.grad is None  # check() ran no backward


# -- DDP: why a backward did not reach a parameter, read from the model (the torchrun runs: test_ddp.py) -------


class _Inner(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used = torch.nn.Linear(2, 2)
        self.frozen = torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            x = self.frozen(x)
        return self.used(x)


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Inner()
        self.blocks = torch.nn.Sequential(torch.nn.Linear(2, 2))
        self.gate = torch.nn.Linear(2, 2)
        self.old = torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor, gated: bool = False) -> torch.Tensor:
        x = self.blocks(self.inner(x))
        return self.gate(x) if gated else x


def test_why_unreached_reads_unused_branch_and_no_grad_from_the_forwards() -> None:
    from gradlab.ddp import why_unreached

    model = _Outer()
    names = ["old.weight", "gate.weight", "gate.bias", "inner.frozen.weight", "blocks.0.weight"]
    reasons = {r.parameters: r for r in why_unreached(model, names)}
    assert reasons[("old.weight",)].kind == "unused" and "never uses self.old" in reasons[("old.weight",)].sentence
    gate = reasons[("gate.weight", "gate.bias")]
    assert gate.kind == "branch" and "only under `if gated`" in gate.sentence
    frozen = reasons[("inner.frozen.weight",)]
    assert frozen.kind == "no_grad" and "_Inner.forward uses self.frozen under with torch.no_grad()" in frozen.sentence
    assert frozen.where is not None and frozen.where.code.strip() == "with torch.no_grad():"
    assert reasons[("blocks.0.weight",)].kind == "not_reached"  # used: a container's children count as used
    # and what it says is what autograd does: those parameters get no gradient from such a step
    model(torch.ones(1, 2)).sum().backward()
    assert all(dict(model.named_parameters())[n].grad is None for n in names[:4])
    assert model.blocks[0].weight.grad is not None


def test_why_unreached_names_the_detach_whose_graph_reached_the_parameter() -> None:
    import weakref

    from gradlab.cuts import Cut, leaves_reached
    from gradlab.ddp import why_unreached
    from gradlab.location import Location

    model = _Outer()
    feat = model.inner(torch.ones(1, 2))
    reaches = leaves_reached(feat)  # what the tracker records at feat.detach() under torch.distributed
    assert id(model.inner.used.weight) in reaches and id(model.old.weight) not in reaches
    cut = Cut(".detach()", Location(__file__, 1), weakref.ref(feat), None, reaches)
    (reason,) = why_unreached(model, ["inner.used.weight", "inner.used.bias"], [cut])
    assert reason.kind == "detach" and reason.where is cut.location and "a .detach() cut them off" in reason.sentence
    with pytest.raises(TypeError, match="pass the model"):
        why_unreached("model", ["a"])  # type: ignore[arg-type]


def test_ddp_ready_twice_names_a_root_parameter_without_torchs_dot() -> None:
    e = explain(
        "Expected to mark a variable ready only once. ... Parameter at index 0 with name .scale has been marked as "
        "ready twice. This means that multiple autograd engine  hooks have fired for this particular parameter"
    )
    assert e.parameters == ("scale",) and "gradient of scale arrive twice" in e.summary


# -- torch 2.4 to 2.15: the wordings, read from each release -------------------------------------------
#
# Read from the wheel of each release (2.4.1, 2.5.1, 2.6.0, 2.7.1, 2.8.0, 2.9.1, 2.10.0, 2.11.0, 2.12.1,
# 2.13.0, 2.14.1, 2.15.0; 2026-12-02): the string literals of torch/lib/libtorch_cpu.so and
# libtorch_python.so and the Python files that raise the family's messages (torch/autograd/__init__.py,
# torch/_tensor.py, torch/utils/checkpoint.py, torch/nn/parallel/distributed.py). Every phrase gradlab's
# patterns need is in every release, except these, which changed (first and last release that has each):
RELEASE_WORDINGS = {
    "unused_input": [
        ((2, 13), (2, 15), "The differentiated Tensor at index 1 appears to not have been used in the graph"),
        ((2, 4), (2, 12), "One of the differentiated Tensors appears to not have been used in the graph"),
    ],
    "inference_saved": [
        ((2, 9), (2, 15), "Inference tensors cannot be saved for backward. Please do not use Tensors created in"),
        ((2, 4), (2, 8), "Inference tensors cannot be saved for backward. To work around you can make a clone"),
    ],
}
OLD_TEXTS = {  # as the releases before the change print them
    "unused_input": "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True "
    "if this is the desired behavior.",
    "inference_saved": "Inference tensors cannot be saved for backward. To work around you can make a clone to get a "
    "normal tensor and use it in autograd.",
}


def _release() -> tuple[int, int]:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("kind", sorted(RELEASE_WORDINGS))
def test_the_installed_torch_words_it_as_the_release_table_says(kind: str) -> None:
    build = {k: b for k, b, _ in PROVOKED}[kind]
    text = " ".join(str(_raise(build)).split())
    expected = [p for first, last, p in RELEASE_WORDINGS[kind] if first <= _release() <= last]
    assert len(expected) == 1, f"torch {torch.__version__} is outside the releases read (2.4 to 2.15)"
    assert expected[0] in text
    assert all(p not in text for first, last, p in RELEASE_WORDINGS[kind] if not first <= _release() <= last)


@pytest.mark.parametrize("kind", sorted(OLD_TEXTS))
def test_each_releases_wording_is_decoded(kind: str) -> None:
    for _first, _last, phrase in RELEASE_WORDINGS[kind]:
        assert explain(phrase).kind == kind  # the words each range of releases prints
    assert explain(OLD_TEXTS[kind]).kind == kind


EXACT_EXAMPLES = ("non_scalar_output", "unused_input", "numpy_requires_grad", "multi_view_in_place")
EXACT_EXAMPLES += ("detach_view_in_place", "inference_saved", "hook_no_grad", "no_grad_fn", "leaf_in_place")
EXACT_EXAMPLES += ("custom_view_in_place",)


@pytest.mark.parametrize("kind", EXACT_EXAMPLES)
def test_a_codes_example_is_the_message_of_the_installed_torch(kind: str) -> None:
    if _release() != (2, 13):
        pytest.skip("the examples are torch 2.13's messages")
    build = {k: b for k, b, _ in PROVOKED}[kind]
    assert " ".join(str(_raise(build)).split()) == code_for(kind).example  # type: ignore[union-attr]


# -- located: the checkpoint recomputation that differed ---------------------------------------------------

CHECKPOINTED = (
    "import torch\n"
    "from torch.utils.checkpoint import checkpoint\n"
    "calls = [0]\n"
    "\n"
    "\n"
    "class Block(torch.nn.Module):\n"
    "    def forward(self, a):\n"
    "        calls[0] += 1\n"
    "        b = a * 2\n"
    "        return b[: calls[0]].sin()  # the shape depends on a counter\n"
    "\n"
    "\n"
    "x = torch.ones(3, requires_grad=True)\n"
    "DEBUG\n"
    "    checkpoint(Block(), x, use_reentrant=False).sum().backward()\n"
)


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_the_note_names_the_checkpointed_function_and_where_its_op_is_visible(debug: bool, tmp_path: Path) -> None:
    import runpy

    switch = "with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):" if debug else "if True:"
    script = tmp_path / "checkpointed.py"
    script.write_text(CHECKPOINTED.replace("DEBUG", switch), encoding="utf-8")
    with pytest.raises(RuntimeError, match="Recomputed values|non-determinism") as info:
        runpy.run_path(str(script), run_name="__main__")
    e = explain(info.value)  # in debug mode torch raises its log, from the CheckpointError
    assert e.kind == "checkpoint_metadata" and e.checkpointed == "Block.forward"
    assert e.checkpointed_at is not None and (e.checkpointed_at.filename, e.checkpointed_at.lineno) == (str(script), 7)
    assert "checkpointed: Block.forward, run again during backward" in str(e) and "def forward(self, a):" in str(e)
    assert e.meaning[0].startswith("The tensor at position 0 was {'shape': torch.Size([1])")
    assert "when recomputed" in e.meaning[0] and "torch.Size([2])" in e.meaning[0]
    if debug:  # what the note says: torch's debug mode names the op's line inside the function, for both runs
        assert f"{script}:9:forward" in str(info.value) and f"{script}:10:forward" in str(info.value)
    assert explain(str(info.value)).checkpointed is None  # from pasted text: decoded, not located
