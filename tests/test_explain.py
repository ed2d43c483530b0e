"""gradlab.explain: decode autograd error messages of every torch wording.

Real messages come from the installed torch at test time; older wordings are
stored as literal strings copied from tracebacks of those releases.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import gradlab
from gradlab.explanation import KINDS, Explanation
from gradlab.kinds import explain

pytestmark = pytest.mark.library


def _raise(fn) -> RuntimeError:
    with pytest.raises(RuntimeError) as info:
        fn()
    return info.value


def _chained_step_before_backward() -> None:
    torch.manual_seed(0)
    n_1 = nn.Sequential(nn.Linear(2, 10), nn.Tanh(), nn.Linear(10, 1))
    n_2 = nn.Linear(1, 1)
    opt_1 = torch.optim.SGD(n_1.parameters(), lr=0.1)
    x = torch.randn(4, 2)
    pred_1 = n_1(x)
    loss_1, loss_2 = pred_1.pow(2).mean(), n_2(pred_1).pow(2).mean()
    loss_1.backward(retain_graph=True)
    opt_1.step()
    loss_2.backward()


def _chained_without_retain() -> None:
    n_1, n_2 = nn.Linear(2, 3), nn.Linear(3, 1)
    pred_1 = n_1(torch.randn(4, 2))
    loss_1, loss_2 = pred_1.tanh().mean(), n_2(pred_1.tanh()).mean()
    loss_1.backward()
    loss_2.backward()


def _relu_inplace_after_sigmoid() -> None:
    x = torch.randn(5, 3)
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.ReLU(inplace=True))
    model(x).sum().backward()


def _leaf_saved_then_stepped() -> None:
    w = torch.ones(3, requires_grad=True)
    y = (w * w).sum()  # mul saves the leaf w itself: no "which is output" part
    with torch.no_grad():
        w.add_(1)
    y.backward()


# -- real messages of the installed torch --------------------------------------


def test_real_in_place_error_of_chained_networks() -> None:
    e = explain(_raise(_chained_step_before_backward))
    assert e.kind == "modified_in_place"
    assert e.shape == (10, 1)
    assert e.dtype == "torch.float32" and e.device == "cpu"
    assert e.output_nr == 0
    assert e.output_of in ("AsStrided", "AsStridedBackward0", "TBackward0", "T")
    assert (e.expected_version, e.current_version) == (1, 2)
    assert e.writes_since_saved == 1
    assert e.anomaly_mode is False
    text = " ".join(map(str, e.meaning))
    assert "weight.t()" in text and "nn.Linear(10, 1)" in text
    assert "optimizer.step()" in e.causes[0]
    assert not any("retain_graph=True" in " ".join(f.lines()) for f in e.fixes)  # never a fix for this error
    # the message alone shows no second model: the first fix finds the writer, the two-network ones follow
    assert "gradlab.track()" in e.fixes[0].summary and e.fixes[0].intent is None
    assert e.fixes[1].intent == "if the failing loss should not train the upstream model"
    assert all(f.trains for f in e.fixes)  # every fix says what it trains


def test_real_graph_freed_error() -> None:
    e = explain(_raise(_chained_without_retain))
    assert e.kind == "graph_freed"
    assert e.shape is None and e.current_version is None
    assert "torch >= 1.10" in (e.torch_wording or "")
    # Without the user's file there is nothing to edit: every fix is a sentence, no placeholder printed as code.
    assert any("backward (the earlier loss + the failing loss) once" in f.summary for f in e.fixes)
    assert all(f.code is None and f.applicability == "sentence" for f in e.fixes)
    # No variable to name: the carried-state fix is words only, not "the carried state.detach()".
    assert any("detach the state carried from one iteration to the next" in f.summary for f in e.fixes)
    assert not any(".detach()" in f.summary for f in e.fixes if "carried" in f.summary)
    assert any("hidden state" in c for c in e.causes)


def test_real_relu_inplace_after_sigmoid() -> None:
    e = explain(_raise(_relu_inplace_after_sigmoid))
    assert e.kind == "modified_in_place"
    assert e.shape == (5, 4)
    assert e.output_of in ("Sigmoid", "SigmoidBackward0")
    assert (e.expected_version, e.current_version) == (0, 1)
    assert "inplace=True" in e.causes[0]


def test_real_leaf_message_has_no_output_part() -> None:
    err = _raise(_leaf_saved_then_stepped)
    assert "which is output" not in str(err)
    e = explain(err)
    assert e.kind == "modified_in_place"
    assert e.shape == (3,) and e.output_of is None and e.output_nr is None
    assert (e.expected_version, e.current_version) == (0, 1)
    assert any("leaf" in m for m in e.meaning)


def test_real_anomaly_mode_hint() -> None:
    def body() -> None:
        x = torch.randn(3, requires_grad=True)
        y = torch.sigmoid(x)
        y.mul_(2)
        y.sum().backward()

    with pytest.warns(UserWarning), torch.autograd.set_detect_anomaly(True):
        err = _raise(body)
    e = explain(err)
    assert e.kind == "modified_in_place" and e.anomaly_mode is True
    assert any("anomaly mode" in m for m in e.meaning)


def test_real_no_grad_fn_and_leaf_in_place() -> None:
    assert explain(_raise(lambda: torch.ones(3).sum().backward())).kind == "no_grad_fn"

    def leaf() -> None:
        w = torch.ones(3, requires_grad=True)
        w += 1

    e = explain(_raise(leaf))
    assert e.kind == "leaf_in_place"
    assert any("torch.no_grad()" in f.summary for f in e.fixes)


def test_cause_chain_is_searched() -> None:
    inner = _raise(_chained_without_retain)
    try:
        raise ValueError("training failed") from inner
    except ValueError as outer:
        assert explain(outer).kind == "graph_freed"


# -- stored wordings of older releases ---------------------------------------------

HINT_1 = (
    "Hint: enable anomaly detection to find the operation that failed to compute its "
    "gradient, with torch.autograd.set_detect_anomaly(True)."
)
ANOMALY_HINT = (
    "Hint: the backtrace further above shows the operation that failed to compute its "
    "gradient. The variable in question was changed in there or anywhere later. Good luck!"
)
HEAD = "one of the variables needed for gradient computation has been modified by an inplace operation: "

OLD_IN_PLACE = [
    # (message, dtype, device, shape, output_of, expected, current, wording contains)
    (
        HEAD + "[torch.FloatTensor [10, 1]], which is output 0 of TBackward, is at version 2; "
        "expected version 1 instead. " + HINT_1,
        "torch.float32",
        "cpu",
        (10, 1),
        "TBackward",
        1,
        2,
        "before 1.10",
    ),
    (
        HEAD + "[torch.FloatTensor [10, 1]], which is output 0 of TBackward0, is at version 2; "
        "expected version 1 instead. " + HINT_1,
        "torch.float32",
        "cpu",
        (10, 1),
        "TBackward0",
        1,
        2,
        "1.10 to 2.x",
    ),
    (
        HEAD + "[torch.cuda.FloatTensor [256]], which is output 0 of AsStridedBackward0, is at "
        "version 1; expected version 0 instead. " + HINT_1,
        "torch.float32",
        "cuda",
        (256,),
        "AsStridedBackward0",
        0,
        1,
        "1.10 to 2.x",
    ),
    (
        HEAD + "[torch.FloatTensor [3]] is at version 1; expected version 0 instead.",
        "torch.float32",
        "cpu",
        (3,),
        None,
        0,
        1,
        "no grad_fn",
    ),
    (
        HEAD + "[torch.cuda.LongTensor [20, 2048]] is at version 21; expected version 0 instead. " + HINT_1,
        "torch.int64",
        "cuda",
        (20, 2048),
        None,
        0,
        21,
        "no grad_fn",
    ),
    (
        HEAD + "[torch.cuda.FloatTensor [3, 4]], which is output 0 of ReluBackward0, is at version 1;"
        " expected version 0 instead. " + ANOMALY_HINT,
        "torch.float32",
        "cuda",
        (3, 4),
        "ReluBackward0",
        0,
        1,
        "1.10 to 2.x",
    ),
    (
        HEAD + "[torch.cuda.FloatTensor [128, 2048, 7, 7]], which is output 0 of "
        "CudnnBatchNormBackward, is at version 2; expected version 0 instead. " + HINT_1,
        "torch.float32",
        "cuda",
        (128, 2048, 7, 7),
        "CudnnBatchNormBackward",
        0,
        2,
        "before 1.10",
    ),
    # Apple GPUs print the ATen type name; pasted text wraps lines.
    (
        "RuntimeError: one of the variables needed for gradient computation\nhas been modified by "
        "an inplace operation: [MPSFloatType [8, 7, 7, 2]], which is output 0 of\n"
        "AsStridedBackward0, is at version 1; expected version 0 instead.",
        "torch.float32",
        "mps",
        (8, 7, 7, 2),
        "AsStridedBackward0",
        0,
        1,
        "1.10 to 2.x",
    ),
    (
        HEAD + "[torch.DoubleTensor []], which is output 0 of SumBackward0, is at version 1; "
        "expected version 0 instead.",
        "torch.float64",
        "cpu",
        (),
        "SumBackward0",
        0,
        1,
        "1.10 to 2.x",
    ),
]


@pytest.mark.parametrize("message,dtype,device,shape,output_of,expected,current,wording", OLD_IN_PLACE)
def test_stored_in_place_wordings(message, dtype, device, shape, output_of, expected, current, wording) -> None:
    e = explain(message)
    assert e.kind == "modified_in_place"
    assert (e.dtype, e.device, e.shape, e.output_of) == (dtype, device, shape, output_of)
    assert (e.expected_version, e.current_version) == (expected, current)
    assert wording in (e.torch_wording or "")
    assert e.anomaly_mode is (True if "Good luck" in message else False if "Hint" in message else None)


def test_transposed_weight_is_decoded() -> None:
    e = explain(OLD_IN_PLACE[0][0])
    text = " ".join(map(str, e.meaning))
    assert "transposed view" in text and "weight.t()" in text
    assert "Expected version 1 is the version when autograd saved the tensor" in text
    assert "version 2 is the version now" in text


def test_nested_tensor_sizes() -> None:
    message = (
        HEAD + "[torch.FloatTensor  2  3\n 4  3\n[ torch.LongTensor{2,2} ]], which is output "
        "0 of Mul, is at version 1; expected version 0 instead."
    )
    e = explain(message)
    assert e.kind == "modified_in_place"
    assert e.shape is None and e.nested_shapes == ((2, 3), (4, 3))
    assert e.output_of == "Mul" and e.current_version == 1


def test_torch_0x_message_without_details() -> None:
    e = explain("RuntimeError: " + HEAD.rstrip(": "))
    assert e.kind == "modified_in_place"
    assert e.shape is None and e.current_version is None
    assert "0.x" in (e.torch_wording or "")


@pytest.mark.parametrize(
    "message,wording",
    [
        (
            "Trying to backward through the graph second time, but the buffers have already been freed. "
            "Please specify retain_variables=True when calling backward for the first time.",
            "0.1-0.2",
        ),
        (
            "Trying to backward through the graph a second time, but the buffers have already been freed. "
            "Specify retain_graph=True when calling backward the first time.",
            "0.3 to 1.x",
        ),
        (
            "Trying to backward through the graph a second time, but the saved intermediate results have "
            "already been freed. Specify retain_graph=True when calling backward the first time.",
            "1.x",
        ),
    ],
)
def test_stored_graph_freed_wordings(message: str, wording: str) -> None:
    e = explain(message)
    assert e.kind == "graph_freed"
    assert wording in (e.torch_wording or "")


def test_pasted_traceback_with_colours_and_chained_errors() -> None:
    pasted = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    loss.backward()\n"
        "\x1b[0;31mRuntimeError\x1b[0m: Trying to backward through the graph a second time\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "    loss_2.backward()\n"
        "RuntimeError: one of the variables needed for gradient computation has been modified\n"
        "by an inplace operation: [torch.FloatTensor [4, 3]], which is output 0 of\n"
        "TBackward0, is at version 3; expected version 1 instead. " + HINT_1 + "\n"
    )
    e = explain(pasted)
    assert e.kind == "modified_in_place"  # the last error is the one raised
    assert e.shape == (4, 3) and e.writes_since_saved == 2
    assert any("The difference is 2" in m for m in e.meaning)


# -- not autograd, bad input, rendering ------------------------------------------------


def test_not_autograd() -> None:
    e = explain(ValueError("n must be >= 0, got -1"))
    assert e.kind == "not_autograd"
    assert "not one of the autograd errors gradlab decodes" in e.summary
    assert e.causes == () and e.fixes == ()
    assert explain("").kind == "not_autograd"


@pytest.mark.parametrize("bad", [None, 3, b"RuntimeError: Trying to backward", ["text"]])
def test_bad_input_types(bad: object) -> None:
    with pytest.raises(TypeError, match="pass an exception or the text of its message"):
        explain(bad)  # type: ignore[arg-type]


def test_str_and_html() -> None:
    e = explain(OLD_IN_PLACE[0][0])
    assert isinstance(e, Explanation) and e.kind in KINDS
    short = str(e)
    assert short.startswith("error[GL0002 modified in place]: ")
    assert "\nhelp: " in short and "\n   = trains: " in short
    text = e.details()
    assert text.startswith("error[GL0002 modified in place]\n")
    for title in ("What the message says:", "Likely causes (most likely first):", "Fixes, by what you want to train:"):
        assert title in text
    page = e._repr_html_()
    assert page.startswith('<div class="gradlab-explanation">') and page.endswith("</div>")
    assert "<b>error[GL0002 modified in place]</b>" in page and "<ol>" in page
    assert "&#x27;which is output 0 of TBackward&#x27;" in page  # text is escaped
    with pytest.raises(AttributeError):
        e.kind = "other"  # type: ignore[misc]


def test_a_cut_found_in_the_source_is_the_explanations_cut_at(tmp_path: Path) -> None:
    """The note's spans and the public record agree: ``cut_at`` is the line where the value left the graph."""
    import runpy

    script = tmp_path / "logged.py"
    script.write_text(
        "import torch\n"
        "w = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)\n"
        "value = (w**2).sum().item()  # for the log\n"
        "loss = torch.tensor(value)\n"
        "loss.backward()\n"
    )
    with pytest.raises(RuntimeError) as info, gradlab.track() as tracker:
        runpy.run_path(str(script))
    found = tracker.explanation_for(info.value)
    assert found is not None and found.cut == ".item()"
    assert found.cut_at is not None and (found.cut_at.filename, found.cut_at.lineno) == (str(script), 3)
    lines = [s.at.lineno for s in found.located_spans()]
    assert lines.count(3) == 1 and 4 in lines  # the cut and the rebuild, each said once
