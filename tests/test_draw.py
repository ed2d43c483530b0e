"""gradlab.draw: deterministic DOT (snapshots in tests/snapshots/*.gv), text fallback, big graphs, bad input.

Regenerate the snapshots after an intended change with
``GRADLAB_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_draw.py`` and review the diff.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import scenarios
import torch

import gradlab
from gradlab import course, draw
from gradlab.drawing import INSTALL_GRAPHVIZ, GraphView

pytestmark = pytest.mark.library

SNAPSHOTS = Path(__file__).parent / "snapshots"
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (sudo apt-get install graphviz)"
)


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("GRADLAB_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing snapshot {name}: run with GRADLAB_UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), (
        f"DOT differs from tests/snapshots/{name}; if intended, rerun with GRADLAB_UPDATE_SNAPSHOTS=1"
    )


def mlp_loss() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    return mlp, mlp(torch.ones(4, 2)).pow(2).mean()


def two_losses(detach_input: bool = False):
    pair = course.make_pair()
    x, y = course.batches(1)[0]
    pred_1 = pair.n_1(x)
    pred_2 = pair.n_2(pred_1.detach() if detach_input else pred_1)
    return pair, pair.criterion(y, pred_1), pair.criterion(y, pred_2)


# -- snapshots ------------------------------------------------------------------------------------


def test_mlp_snapshot():
    mlp, loss = mlp_loss()
    view = draw(loss, {"mlp": mlp})
    assert_snapshot("mlp.gv", view.source)
    assert 'fontname="DejaVu Sans"' in view.source
    assert 'label="mlp.0.weight\\n[3, 2]"' in view.source
    assert "0x" not in view.source


def test_two_networks_shared_graph_snapshot():
    pair, loss_1, loss_2 = two_losses()
    view = draw([loss_1, loss_2], pair.names)
    assert_snapshot("two_networks.gv", view.source)
    assert view.graph.outputs == (0, 1)
    # n_1's softmax is shared: n_2's first Addmm feeds into it.
    assert "output 0" in view.source and "output 1" in view.source


def test_two_networks_labelled_and_grouped_by_module_snapshot():
    pair, loss_1, loss_2 = two_losses(detach_input=True)
    view = draw({"loss_1": loss_1, "loss_2": loss_2}, pair.names, collapse="module")
    assert_snapshot("two_networks_modules.gv", view.source)
    for cluster in ("cluster_n_1", "cluster_n_2", "cluster_n_1.linear_1", "cluster_n_2.linear_2"):
        assert f'"{cluster}"' in view.source or f"{cluster} " in view.source
    assert 'label="loss_1\\n[]"' in view.source
    assert "no grad history<BR/>(data or .detach())" in view.source
    assert "  legend [" in view.source and "gradient stops here" in view.source


def test_freed_after_backward_snapshot_and_no_error():
    mlp, loss = mlp_loss()
    loss.backward()
    view = draw(loss, {"mlp": mlp})
    assert_snapshot("mlp_after_backward.gv", view.source)
    assert "freed" in view.source and 'STYLE="dashed"' in view.source
    assert "5 freed" in repr(view)
    assert "freed by a backward" in view.source  # legend entry


def test_dot_is_identical_on_every_run():
    a = draw({"loss": mlp_loss()[1]}, collapse="module").source
    b = draw({"loss": mlp_loss()[1]}, collapse="module").source
    assert a == b


# -- stale tensors, detach, outputs ---------------------------------------------------------------


def test_stale_weight_after_optimizer_step_is_red():
    with gradlab.track():
        s = scenarios.stepped_before_backward_2()
        view = draw({"loss_1": s.loss_1, "loss_2": s.loss_2}, names=s.names)
    assert "v1 -&gt; v2" in view.source  # the picture reads "v1 -> v2"
    assert "Adam.step()" in view.source
    stale = [line for line in view.source.splitlines() if "v1 -&gt; v2" in line]
    assert stale and all('COLOR="#cc0000"' in line for line in stale)
    assert "modified in place" in repr(view)
    assert "MODIFIED IN PLACE by Adam.step()" in view.text()


def test_explicit_tracker_argument_fills_modified_by():
    w = torch.ones(3, requires_grad=True)
    with gradlab.track(names={"w": w}) as tracker:
        y = (w * w).sum()
        with torch.no_grad():
            w.add_(1)
    view = draw(y, tracker=tracker)
    assert "v0 -&gt; v1" in view.source and "by add_" in view.source


def test_shared_node_is_drawn_once_and_text_refers_to_it():
    pair, loss_1, loss_2 = two_losses()
    view = draw({"loss_1": loss_1, "loss_2": loss_2}, pair.names)
    assert view.source.count(">Softmax</TD>") == 2  # one per network, not one per loss
    assert "(shown above)" in view.text()
    assert view.text().splitlines()[0] == view.graph.summary()


# -- told apart without colour, readable at notebook width -------------------------------------------


def _cells(source: str) -> dict[str, str]:
    """Each saved tensor's cell (from ``<TD BORDER="1" COLOR=`` to its text) by the first word of its text."""
    import re

    found = {}
    for match in re.finditer(
        r'(<TD BORDER="1" COLOR="[^"]+"[^>]*>(?:<TABLE[^>]*><TR><TD>)?<FONT[^>]*>(?:<B>)?)([^<]+)', source
    ):
        found.setdefault(match.group(2), match.group(1))
    return found


def test_statuses_differ_by_more_than_colour_and_the_legend_matches():
    with gradlab.track():
        s = scenarios.stepped_before_backward_2()
        stale_view = draw({"loss_1": s.loss_1, "loss_2": s.loss_2}, names=s.names)
    mlp, loss = mlp_loss()
    loss.backward()
    freed_view = draw(loss, {"mlp": mlp})
    pair, loss_1, loss_2 = two_losses(detach_input=True)
    cut_view = draw({"loss_1": loss_1, "loss_2": loss_2}, pair.names)

    stale = _cells(stale_view.source)["mat2 = n_1.linear_2.weight"]
    ok = _cells(stale_view.source)["mat1 = output of Relu"]
    freed = _cells(freed_view.source)["mat1: freed"]
    cut = _cells(cut_view.source)["mat1 = tensor [10, 1]"]
    assert "STYLE" not in ok and "<TABLE" not in ok  # ok: one thin solid frame
    assert "<TABLE" in stale and "<B>" in stale  # modified in place: a double frame and bold text
    assert 'STYLE="dashed"' in freed and 'STYLE="dotted"' in cut  # freed dashed, no grad history dotted
    # The legend draws each entry exactly like the graph's cells.
    assert _cells(stale_view.source)["modified in place"] == stale
    assert _cells(stale_view.source)["saved tensor, under the"] == ok
    assert _cells(freed_view.source)["freed by a backward"] == freed
    assert _cells(cut_view.source)["input without grad history"] == cut


def test_saved_tensors_sit_under_their_operation_and_the_data_path_is_weighted():
    _, loss_1, loss_2 = two_losses()
    source = draw({"loss_1": loss_1, "loss_2": loss_2}).source
    addmm = [line for line in source.splitlines() if ">Addmm</TD>" in line]
    assert len(addmm) == 4 and all("mat1 = " in line for line in addmm)
    assert " -> s" not in source  # no separate saved-tensor nodes
    parameter_edges = [line for line in source.splitlines() if line.strip().startswith(("n13 ->", "n16 ->"))]
    assert parameter_edges and not any("weight" in line for line in parameter_edges)
    assert '  n12 -> n7 [weight="4"];' in source  # Addmm -> Relu: the data path


def test_long_labels_wrap_between_words_and_keep_brackets_whole():
    from gradlab.drawing import _wrap

    assert _wrap("mat2 = n_1.linear_2.weight (transposed view) [10, 1]") == (
        "mat2 = n_1.linear_2.weight\n(transposed view) [10, 1]"
    )
    assert _wrap("self = tensor [10, 1] (no grad)") == "self = tensor [10, 1]\n(no grad)"
    assert _wrap("short") == "short"
    long_name = "encoder.layers.11.self_attn.out_proj.weight"
    assert _wrap(f"mat2 = {long_name} [768, 768]").splitlines()[1] == long_name


@needs_dot
def test_the_two_network_graph_fits_a_notebook_column():
    import struct

    _, loss_1, loss_2 = two_losses()
    png = draw({"loss_1": loss_1, "loss_2": loss_2}).png()
    width = struct.unpack(">I", png[16:20])[0]
    assert width <= 900, f"{width} px wide: saved-tensor labels would be shrunk below readable size"


# -- rendering and the no-Graphviz fallback ---------------------------------------------------------


@needs_dot
def test_svg_png_and_save(tmp_path):
    _, loss = mlp_loss()
    view = draw(loss)
    assert view.svg().lstrip().startswith("<?xml")
    assert view.png().startswith(b"\x89PNG")
    for suffix in (".gv", ".dot", ".svg", ".png", ".pdf"):
        path = view.save(tmp_path / f"graph{suffix}")
        assert path.stat().st_size > 0
    assert (tmp_path / "graph.gv").read_text() == view.source
    bundle, metadata = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "image/png"}
    assert bundle["text/plain"] == repr(view)
    # twice the pixels of view.png() (96 dpi), shown at the same size: print gets about 200 ppi
    screen = view.png()
    width, height = (int.from_bytes(screen[i : i + 4], "big") for i in (16, 20))
    drawn = int.from_bytes(bundle["image/png"][16:20], "big")
    assert abs(drawn - 2 * width) <= 2, (drawn, width)
    assert abs(metadata["image/png"]["width"] - width) <= 1 and abs(metadata["image/png"]["height"] - height) <= 1
    with pytest.raises(ValueError, match="Graphviz attributes"):
        view.pipe("png", "-o/tmp/elsewhere")


def test_without_dot_repr_is_identical_and_text_tree_is_shown(tmp_path, monkeypatch):
    mlp, loss = mlp_loss()
    view = draw(loss, {"mlp": mlp})
    found = view._repr_mimebundle_()
    with_dot = (repr(view), (found[0] if isinstance(found, tuple) else found)["text/plain"])
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("dot") is None
    bundle = view._repr_mimebundle_()
    assert (repr(view), bundle["text/plain"]) == with_dot
    assert len(repr(view).splitlines()) == 1
    # Only PNG may differ (nbval skips it): the picture of the text tree and the install line.
    assert set(bundle) <= {"text/plain", "image/png"}
    assert bundle["image/png"].startswith(b"\x89PNG")
    fallback = view._fallback_text()
    assert INSTALL_GRAPHVIZ in fallback and view.text() in fallback
    assert "mlp.0.weight [3, 2]" in view.text()
    with pytest.raises(RuntimeError, match="sudo apt-get install graphviz"):
        view.svg()
    with pytest.raises(RuntimeError, match="brew install graphviz"):
        view.save(tmp_path / "graph.png")
    view.save(tmp_path / "graph.gv")  # DOT text needs no Graphviz


def test_deep_chain_builds_without_recursion():
    t = torch.ones(3, requires_grad=True)
    x = t
    for _ in range(20000):
        x = x * 1.0001
    view = draw(x.sum(), {"t": t})
    assert len(view.graph.nodes) == 20002
    assert "n20001 -> n20000;" in view.source
    assert view.too_large
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain"} and "not drawn automatically" in bundle["text/plain"]
    assert repr(view) == view.graph.summary()
    lines = view.text().splitlines()
    assert len(lines) > 20000 and max(len(line) for line in lines) < 200


# -- drawing reads only -----------------------------------------------------------------------------


def test_draw_changes_nothing():
    mlp, loss = mlp_loss()
    before = repr(gradlab.collect(loss, {"mlp": mlp}))
    view = draw(loss, {"mlp": mlp}, collapse="module")
    _ = view.source, view.text(), repr(view)
    assert all(p.grad is None for p in mlp.parameters())
    assert repr(gradlab.collect(loss, {"mlp": mlp})) == before
    loss.backward()  # still possible: nothing was freed
    assert all(p.grad is not None for p in mlp.parameters())
    grads = [p.grad.clone() for p in mlp.parameters()]
    draw(loss, {"mlp": mlp})
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, mlp.parameters()))


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, error, words",
    [
        (torch.nn.Linear(1, 1), TypeError, "nn.Module"),
        (3, TypeError, "tensor"),
        ("loss", TypeError, "tensor"),
        ([], ValueError, "empty list"),
        ({}, ValueError, "empty dict"),
        ({1: torch.ones(1)}, TypeError, "strings"),
        (torch.ones(2, requires_grad=True), ValueError, "leaf"),
        (torch.ones(2), ValueError, "does not require grad"),
        ([torch.ones(2, requires_grad=True).sum(), 5], TypeError, "only tensors"),
    ],
)
def test_bad_outputs(bad, error, words):
    with pytest.raises(error, match=words):
        draw(bad)


def test_bad_options(tmp_path):
    loss = mlp_loss()[1]
    with pytest.raises(ValueError, match="collapse='module'"):
        draw(loss, collapse="layers")
    with pytest.raises(ValueError, match="collapse"):
        draw(loss, collapse=True)
    with pytest.raises(TypeError, match="max_nodes"):
        draw(loss, max_nodes="400")
    with pytest.raises(ValueError, match="max_nodes"):
        draw(loss, max_nodes=0)
    with pytest.raises(TypeError, match="names"):
        draw(loss, names=[1, 2])
    view = draw(loss)
    with pytest.raises(ValueError, match=".svg"):
        view.save(tmp_path / "graph.txt")
    with pytest.raises(TypeError, match="file path"):
        view.save(3)
    assert isinstance(view, GraphView)
