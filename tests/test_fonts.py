"""Pictures in Chinese: the words come from the catalog and every Chinese glyph from a CJK font.

The tests translate a few picture words with a catalog of their own (a temporary
copy of ``gradlab/locale`` whose ``zh_CN`` ``gradlab.po`` holds :data:`TRANSLATIONS`),
then check what matplotlib and Graphviz are told and what they draw: a text's
font family list, the font that has each Chinese glyph, no "Glyph ... missing"
warning when a figure is rendered to PNG, the DOT ``fontname`` and the font
fontconfig picks for the Chinese characters. Without a CJK font (pretended by
replacing :func:`gradlab.plots.cjk_family`) a picture warns once and is drawn in
English, exactly as in the English edition.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless; set before pyplot is imported anywhere in this module

import pytest
import scenarios
import torch
from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.text import Text

import gradlab
from gradlab import course, draw, grad_report, i18n, plot_grads, plots, timeline
from gradlab.i18n import language, set_language

pytestmark = pytest.mark.library

FC_LIST = shutil.which("fc-list")
FC_MATCH = shutil.which("fc-match")
CJK_FONT = bool(
    FC_LIST and subprocess.run([FC_LIST, ":lang=zh", "family"], capture_output=True, text=True).stdout.strip()
)
needs_cjk_font = pytest.mark.skipif(not CJK_FONT, reason="no CJK font: apt-get install fonts-noto-cjk")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")

#: Picture words of each converted file, translated (msgid -> msgstr).
TRANSLATIONS = {
    # plots.py
    "saved (v{version})": "已保存（v{version}）",
    "backward failed:\n{reason}": "反向传播失败：\n{reason}",
    "expected version {expected}, is at version {found}": "期望版本 {expected}，实际版本 {found}",
    "version": "版本",
    "tracker event": "跟踪事件",
    "version counters of the saved tensors": "已保存张量的版本计数器",
    "no bars: every gradient is all zero,\nso they cannot train any parameter": "没有柱条：每个梯度都全为零，\n无法训练任何参数",
    "gradient norm": "梯度范数",
    "gradient per parameter": "每个参数的梯度",
    # drawing.py
    "legend": "图例",
    "parameter\n(name, shape)": "参数\n（名称，形状）",
    "operation\n(backward node)": "运算\n（反向节点）",
    "saved tensor, under the\noperation that saved it\n(shape, version)": "保存的张量，位于\n保存它的运算下方\n（形状，版本）",
    "freed by a backward\n(normal afterwards)": "被反向传播释放\n（之后属正常）",
    "{attribute}: freed": "{attribute}：已释放",
    "output": "输出",
    "Install Graphviz to see this graph drawn: {commands}": "安装 Graphviz 才能画出这张图：{commands}",
    "saved {attribute}: freed": "已保存的 {attribute}：已释放",
    # course/plots.py (texts converted earlier; its fonts are tested here)
    "step": "步数",
    "loss": "损失",
}

HAN = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@pytest.fixture(autouse=True)
def english_afterwards() -> Iterator[None]:
    """Every test ends in English, with the one-time font warning armed again."""
    plots._warn_no_cjk_font.cache_clear()
    yield
    set_language("en")
    i18n._catalog.cache_clear()
    plots._warn_no_cjk_font.cache_clear()


@pytest.fixture
def zh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chinese, from a temporary copy of gradlab/locale whose zh_CN catalog holds :data:`TRANSLATIONS`."""
    locale = tmp_path / "locale"
    shutil.copytree(i18n.LOCALE_DIR, locale)
    header = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: zh_CN\\n"\n'
    entries = [f"msgid {_quote(k)}\nmsgstr {_quote(v)}" for k, v in TRANSLATIONS.items()]
    (locale / "zh_CN" / "LC_MESSAGES" / "gradlab.po").write_text("\n\n".join([header, *entries]) + "\n", "utf-8")
    monkeypatch.setattr(i18n, "LOCALE_DIR", locale)
    i18n._catalog.cache_clear()
    assert set_language("zh_CN") == "zh_CN"


@pytest.fixture
def no_cjk_font(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend no CJK font is installed."""
    monkeypatch.setattr(plots, "cjk_family", lambda: None)


# -- what a figure draws ----------------------------------------------------------------------------


def failing_tracker() -> gradlab.Tracker:
    """The course's loop with retain_graph=True under track: the version error the timeline explains."""
    s = scenarios.fresh()
    with gradlab.track(names=s.names) as tracker, pytest.raises(RuntimeError, match="is at version 2"):
        scenarios.original_loop(retain_graph=True, state=s)
    return tracker


def zero_grads() -> gradlab.GradReport:
    """The softmax over one output: every gradient is zero, so plot_grads writes its 'no bars' note."""
    pair = course.make_pair(softmax=True)
    x, y = course.batches(1)[0]
    loss = pair.criterion(y, pair.n_2(pair.n_1(x)))
    loss.backward()
    return grad_report(pair.names, loss)


def texts_of(fig: Figure) -> list[Text]:
    """Every text artist of the figure with something written in it (titles, labels, notes, ticks, legends)."""
    fig.canvas.draw()  # ticks and their labels exist once drawn
    found = [t for t in fig.findobj(Text) if isinstance(t, Text) and t.get_text()]
    return list(dict.fromkeys(found))


def png_warnings(fig: Figure) -> list[str]:
    """Render ``fig`` to PNG; the warnings matplotlib gave while doing so."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    assert buffer.getvalue().startswith(b"\x89PNG")
    return [str(w.message) for w in seen]


def glyph_font(char: str, families: list[str], weight: object = "normal") -> str:
    """The family matplotlib draws ``char`` with: the first of ``families`` whose font has the glyph."""
    for family in families:
        prop = font_manager.FontProperties(family=family, weight=weight)  # type: ignore[arg-type]
        path = font_manager.findfont(prop, fallback_to_default=False)
        if ord(char) in font_manager.get_font(path).get_charmap():
            return family
    return "(none: a box)"


def assert_chinese_in_the_cjk_font(fig: Figure) -> list[str]:
    """Each text with Chinese in it has [DejaVu Sans, the CJK family], and each Chinese glyph comes from the CJK font."""
    cjk = plots.cjk_family()
    assert cjk in plots.CJK_FAMILIES
    chinese = [t for t in texts_of(fig) if HAN.search(t.get_text())]
    assert chinese, "no Chinese text in the figure"
    for t in chinese:
        assert t.get_fontfamily() == ["DejaVu Sans", cjk], t.get_text()
        for char in set(HAN.findall(t.get_text())):
            assert glyph_font(char, t.get_fontfamily(), t.get_fontweight()) == cjk, (char, t.get_text())
    assert not [w for w in png_warnings(fig) if "missing from font" in w]
    return [t.get_text() for t in chinese]


# -- matplotlib -------------------------------------------------------------------------------------


@needs_cjk_font
def test_the_cjk_font_is_found_and_has_the_glyphs() -> None:
    cjk = plots.cjk_family()
    assert cjk is not None and cjk.startswith(("Noto Sans CJK", "Source Han Sans", "Noto Sans SC")), cjk
    path = font_manager.findfont(font_manager.FontProperties(family=cjk), fallback_to_default=False)
    assert "DejaVu" not in Path(path).name
    assert glyph_font("梯", ["DejaVu Sans", cjk]) == cjk
    assert glyph_font("g", ["DejaVu Sans", cjk]) == "DejaVu Sans"  # Latin text looks as in English


@needs_cjk_font
def test_timeline_in_chinese_draws_every_chinese_glyph_with_the_cjk_font(zh: None) -> None:
    fig = timeline(failing_tracker())
    shown = assert_chinese_in_the_cjk_font(fig)
    assert "已保存（v1）" in shown
    assert "已保存张量的版本计数器" in shown
    assert any(t.startswith("反向传播失败：期望版本 1，实际版本 2") for t in shown)  # one line, above the row
    assert "n_1.linear_2.weight" in [t.get_text() for t in texts_of(fig)]  # names stay as the user wrote them


@needs_cjk_font
def test_plot_grads_in_chinese_draws_its_bold_note_with_the_cjk_font(zh: None) -> None:
    fig = plot_grads(zero_grads())
    shown = assert_chinese_in_the_cjk_font(fig)
    assert "没有柱条：每个梯度都全为零，\n无法训练任何参数" in shown  # bold: the CJK font's bold face
    assert {"梯度范数", "每个参数的梯度"} <= set(shown)


@needs_cjk_font
def test_the_course_plots_get_the_cjk_font_too(zh: None) -> None:
    fig = course.plot_losses({"joint": [0.9, 0.5, 0.2]})
    assert {"步数", "损失"} <= set(assert_chinese_in_the_cjk_font(fig))
    fig = course.plot_predictions({"n_1": torch.nn.Linear(1, 1)})
    assert all(t.get_fontfamily() == ["DejaVu Sans", plots.cjk_family()] for t in texts_of(fig))


@needs_cjk_font
def test_chinese_plots_change_no_global_state(zh: None) -> None:
    import matplotlib.pyplot as plt

    rc = dict(matplotlib.rcParams)
    figures = plt.get_fignums()
    timeline(failing_tracker())
    plot_grads(zero_grads())
    course.plot_losses({"a": [1.0, 0.5]})
    assert dict(matplotlib.rcParams) == rc  # the CJK family was set for the figures' texts only
    assert plt.get_fignums() == figures


def test_english_pictures_never_look_for_a_cjk_font(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> str:
        raise AssertionError("English looked for a CJK font")

    monkeypatch.setattr(plots, "cjk_family", refuse)
    fig = plot_grads(zero_grads())
    assert all(t.get_fontfamily() == ["sans-serif"] for t in texts_of(fig))
    mlp = torch.nn.Linear(2, 1)
    assert 'fontname="DejaVu Sans"' in draw(mlp(torch.ones(1, 2)).sum(), {"mlp": mlp}).source


# -- Graphviz ---------------------------------------------------------------------------------------


def mlp_graph(backward: bool = False) -> gradlab.GraphView:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    loss = mlp(torch.ones(4, 2)).pow(2).mean()
    if backward:
        loss.backward()
    return draw(loss, {"mlp": mlp})


@needs_cjk_font
def test_the_graph_names_the_cjk_font_after_dejavu_sans(zh: None) -> None:
    view = mlp_graph(backward=True)
    cjk = plots.cjk_family()
    font = f"DejaVu Sans,{cjk}"
    for kind in ("graph", "node", "edge"):
        assert re.search(rf'^  {kind} \[fontname="{re.escape(font)}"', view.source, re.M), kind
    assert "图例" in view.source and "参数<BR/>（名称，形状）" in view.source and "被反向传播释放" in view.source
    assert 'label="输出\\n[]"' in view.source  # the default label of a single output


@needs_cjk_font
@pytest.mark.skipif(FC_MATCH is None, reason="no fontconfig to ask (fc-match)")
def test_fontconfig_gives_the_chinese_glyphs_to_the_cjk_font(zh: None) -> None:
    """What pango (Graphviz) does for each glyph: the best font of the fontname list that has it."""
    cjk, fc_match = plots.cjk_family(), FC_MATCH
    assert fc_match is not None

    def family_for(text: str, fontname: str) -> str:
        charset = " ".join(f"{ord(c):x}" for c in text)
        pattern = f"{fontname}:charset={charset}"
        done = subprocess.run([fc_match, "-f", "%{family}", pattern], capture_output=True, text=True, check=True)
        return done.stdout

    assert cjk in family_for("图例参数", f"DejaVu Sans,{cjk}").split(",")
    assert family_for("legend", f"DejaVu Sans,{cjk}").split(",")[0] == "DejaVu Sans"


@needs_cjk_font
@needs_dot
def test_the_graph_renders_in_chinese(zh: None) -> None:
    view = mlp_graph(backward=True)
    svg = view.svg()
    assert f'font-family="DejaVu Sans,{plots.cjk_family()}"' in svg
    assert "图例" in svg and "被反向传播释放" in svg
    assert view.png().startswith(b"\x89PNG")


@needs_cjk_font
def test_without_graphviz_the_text_tree_picture_has_the_cjk_font(
    zh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = mlp_graph(backward=True)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("dot") is None
    drawn: list[tuple[str, str | None]] = []
    render = gradlab.drawing._render_text_png

    def spy(text: str, cjk: str | None = None) -> bytes | None:
        drawn.append((text, cjk))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            png = render(text, cjk)
        assert not [w for w in seen if "missing from font" in str(w.message)]
        return png

    monkeypatch.setattr(gradlab.drawing, "_render_text_png", spy)
    png = view._repr_mimebundle_()["image/png"]
    assert isinstance(png, bytes) and png.startswith(b"\x89PNG")
    ((text, cjk),) = drawn
    assert cjk == plots.cjk_family()
    assert text.startswith("安装 Graphviz 才能画出这张图：sudo apt-get install graphviz")
    assert "已保存的 " in text and "：已释放" in text  # the text tree, in Chinese


# -- no CJK font: English, and one warning ----------------------------------------------------------


def test_without_a_cjk_font_a_chinese_timeline_warns_once_and_is_english(zh: None, no_cjk_font: None) -> None:
    set_language("en")
    english = [t.get_text() for t in texts_of(timeline(failing_tracker()))]
    set_language("zh_CN")
    with pytest.warns(gradlab.GradlabWarning, match="fonts-noto-cjk") as caught:
        fig = timeline(failing_tracker())
    assert len([w for w in caught if "fonts-noto-cjk" in str(w.message)]) == 1
    assert [t.get_text() for t in texts_of(fig)] == english
    assert all(t.get_fontfamily() == ["sans-serif"] for t in texts_of(fig))  # matplotlib's default, as in English
    assert not any(HAN.search(t) for t in english)
    assert language() == "zh_CN", "the language comes back after the picture"
    with warnings.catch_warnings():
        warnings.simplefilter("error", gradlab.GradlabWarning)  # once: the second picture is quiet
        again = plot_grads(zero_grads())
    assert not any(HAN.search(t.get_text()) for t in texts_of(again))
    assert all(t.get_fontfamily() == ["sans-serif"] for t in texts_of(again))


def test_without_a_cjk_font_a_chinese_graph_is_the_english_one(zh: None, no_cjk_font: None) -> None:
    set_language("en")
    english = mlp_graph(backward=True)
    english_source = english.source
    set_language("zh_CN")
    with pytest.warns(gradlab.GradlabWarning, match="sudo apt-get install fonts-noto-cjk"):
        chinese = mlp_graph(backward=True)
        source = chinese.source
    assert source == english_source
    assert 'fontname="DejaVu Sans"' in source and "图例" not in source
    assert "：已释放" in chinese.text()  # text is no picture: its own words stay Chinese
    assert language() == "zh_CN"
