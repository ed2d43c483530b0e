"""gradlab's own words through gettext: a catalog's translations show up at once, English comes back exactly.

The tests use a small catalog of their own (a temporary copy of ``gradlab/locale``
whose ``zh_CN`` ``gradlab.po`` translates one or more messages of each converted
module), so they do not depend on how far the real translation has got.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch
from conftest import needs_raw_saved
from loading import load_module

import gradlab
from gradlab import i18n
from gradlab.i18n import language, set_language
from gradlab.names import Name, Namer

pytestmark = pytest.mark.library

ROOT = Path(__file__).resolve().parent.parent

#: The modules whose words go through gettext (ipython.py has none of its own: it prints explain()'s).
CONVERTED = (
    "gradlab/explanation.py",
    "gradlab/intent.py",
    "gradlab/grads.py",
    "gradlab/graph.py",
    "gradlab/names.py",
    "gradlab/memory.py",
    "gradlab/course/readiness.py",
    "gradlab/course/exercise.py",
    "gradlab/course/plots.py",
    "gradlab/drawing.py",
    "gradlab/plots.py",
    "gradlab/course/iteration.py",
    "gradlab/course/widgets.py",
    "gradlab/course/questions.py",
    "gradlab/course/training.py",
)

#: msgid -> msgstr, or (msgid, msgid_plural) -> msgstr[0] (zh_CN has one plural form).
TRANSLATIONS: dict[str | tuple[str, str], str] = {
    # explanation.py
    "What the message says:": "消息的意思：",
    "likely cause: {cause}": "可能的原因：{cause}",
    # intent.py
    ("{n} mismatch with what you declared:", "{n} mismatches with what you declared:"): "与声明不符之处 {n} 处：",
    "{loss} sends gradient into {parameters}, declared for {owners} only": "{loss} 把梯度送进了 {parameters}，它们只声明给 {owners}",
    # grads.py
    "parameter": "参数",
    "every parameter has a non-zero gradient": "每个参数都有非零梯度",
    # graph.py
    "autograd graph: {counts}": "自动求导计算图：{counts}",
    "{n} nodes": "{n} 个节点",
    "saved as": "保存为",
    # names.py
    "{name} (transposed view)": "{name}（转置视图）",
    "{name} (view)": "{name}（视图）",
    "output of {op} {shape}": "{op} 的输出 {shape}",
    "leaf tensor {shape}": "叶子张量 {shape}",
    "tensor {shape} (no grad)": "张量 {shape}（无梯度）",
    # memory.py
    "{label}: no steps recorded": "{label}：没有记录任何步骤",
    "training step": "训练步骤",
    # course/readiness.py
    "torch {torch}, gradlab {gradlab}: ready": "torch {torch}，gradlab {gradlab}：就绪",
    "not installed": "未安装",
    # course/exercise.py
    "not yet: {hint}": "还没对：{hint}",
    "… your answer goes in the cell above: replace the ... there, then run this cell again.": "…… 答案写在上面的单元格里。",
    # course/plots.py
    "no step completed": "一步也没有完成",
    "{curve} flat: not learning": "{curve} 平坦：没有在学习",
    # drawing.py
    "legend": "图例",
    "operation\n(backward node)": "运算\n（反向节点）",
    "saved {tensor}, {version}": "已保存 {tensor}，{version}",
    "{node} (shown above)": "{node}（见上文）",
    # plots.py
    "gradient per parameter": "每个参数的梯度",
    "no bars: every gradient is all zero,\nso they cannot train any parameter": "没有柱条：每个梯度都全为零，\n无法训练任何参数",
    # course/iteration.py
    "ran all {n} lines of the iteration": "本次迭代的 {n} 行全部运行",
    "got a gradient": "得到梯度",
    "fix (c): n_1 learns from loss_1 only, n_2 from network 1's output after this step's update": "修复 (c)：n_1 只从 loss_1 学习，n_2 从网络 1 本步更新后的输出学习",
    "recompute n_1 after its step": "在 n_1 的更新之后重新计算",
    # course/widgets.py
    "Run": "运行",
    "Pick a preset or edit the steps, then press Run.": "选择一个预设或编辑步骤，然后按“运行”。",
    # course/questions.py
    "What does torch.softmax(x, dim=1) return for x of shape [10, 1] (one output per row)?": "对形状为 [10, 1] 的 x（每行一个输出），torch.softmax(x, dim=1) 返回什么？",
    "All ones: its gradient is zero, so nothing before it learns": "全是 1：它的梯度为零，所以它之前的层什么也学不到",
    "x unchanged": "原样返回 x",
    "Right: {explanation}": "正确：{explanation}",
    # course/training.py
    "forward both, zero both, (loss_1 + loss_2).backward(), step both": "两个都前向，两个都清零，(loss_1 + loss_2).backward()，两个都更新",
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _po(translations: dict[str | tuple[str, str], str]) -> str:
    entries = [
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: zh_CN\\n"\n'
        '"Plural-Forms: nplurals=1; plural=0;\\n"'
    ]
    for msgid, msgstr in translations.items():
        if isinstance(msgid, tuple):
            singular, plural = msgid
            entries.append(f"msgid {_quote(singular)}\nmsgid_plural {_quote(plural)}\nmsgstr[0] {_quote(msgstr)}")
        else:
            entries.append(f"msgid {_quote(msgid)}\nmsgstr {_quote(msgstr)}")
    return "\n\n".join(entries) + "\n"


@pytest.fixture(autouse=True)
def english_afterwards() -> Iterator[None]:
    """Every test ends in English, so no other test sees another language."""
    yield
    set_language("en")
    i18n._catalog.cache_clear()


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary copy of gradlab/locale whose zh_CN catalog holds :data:`TRANSLATIONS`."""
    locale = tmp_path / "locale"
    shutil.copytree(i18n.LOCALE_DIR, locale)
    (locale / "zh_CN" / "LC_MESSAGES" / "gradlab.po").write_text(_po(TRANSLATIONS), encoding="utf-8")
    monkeypatch.setattr(i18n, "LOCALE_DIR", locale)
    i18n._catalog.cache_clear()
    return locale


@pytest.fixture
def zh(catalog: Path) -> None:
    assert set_language("zh_CN") == "zh_CN"


# -- what each converted module shows ---------------------------------------------------------------


def _explanation() -> str:
    e = gradlab.explain("RuntimeError: Trying to backward through the graph a second time")
    return str(e) + "\n" + e.details() + "\n" + e._repr_html_()


def _two_models() -> tuple[torch.nn.Linear, torch.nn.Linear, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    n_1, n_2 = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    pred_1 = n_1(torch.ones(4, 1))
    return n_1, n_2, pred_1.pow(2).mean(), n_2(pred_1).pow(2).mean()


def _intent() -> str:
    n_1, n_2, loss_1, loss_2 = _two_models()
    report = gradlab.check_intent(
        {"loss_1": (loss_1, "n_1"), "loss_2": (loss_2, "n_2")}, names={"n_1": n_1, "n_2": n_2}
    )
    return str(report) + "\n" + report._repr_html_()


def _grads() -> str:
    lin = torch.nn.Linear(2, 1)
    lin(torch.ones(1, 2)).sum().backward()
    report = gradlab.grad_report({"lin": lin})
    return str(report) + "\n" + report._repr_html_()


def _graph() -> str:
    x = torch.ones(3, requires_grad=True)
    loss = x.sigmoid().sum()
    return gradlab.collect(loss).summary() + "\n" + gradlab.saved_table(gradlab.saved_tensors(loss, names={"x": x}))


def _names() -> str:
    w = torch.nn.Parameter(torch.ones(2, 3))
    namer = Namer({"w": w})
    tensors = (w.t(), w[0], torch.ones(2, requires_grad=True), torch.ones(2))
    return "\n".join([*(str(namer.describe(t)) for t in tensors), str(namer.describe(w.sigmoid()))])


def _memory() -> str:
    empty = gradlab.MemoryTrace("empty")
    with gradlab.measure_memory("kept") as trace:
        trace.record()
    with _any_font():
        fig = gradlab.plot_memory([trace])
    labels = [ax.get_xlabel() + " " + ax.get_title() for ax in fig.axes]
    return "\n".join([str(empty), str(trace), *labels])


def _readiness() -> str:
    from gradlab.course.readiness import EnvironmentReport

    ready = EnvironmentReport("3.11.9", "2.13.0", "0.2.0", "2.43.0", None)
    return ready.summary() + "\n" + str(ready) + "\n" + ready._repr_html_()


def _exercise() -> str:
    from gradlab.course.exercise import check_running_total, verify

    verdicts = [
        verify(3, expected=4, success="right", hint="count again"),
        verify(..., expected=4, success="right", hint="count again"),
        check_running_total(2.0, [1.0, 2.0], [1, 1]),
    ]
    return "\n".join(v.text for v in verdicts)


def _course_plots() -> str:
    from gradlab.course.plots import plot_losses

    with _any_font():
        fig = plot_losses({"flat": [0.5, 0.5, 0.5], "none": []})
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


@contextmanager
def _any_font() -> Iterator[None]:
    """Pictures translated whatever fonts are installed (tests/test_fonts.py checks the fonts)."""
    from gradlab import plots

    with mock.patch.object(plots, "cjk_family", lambda: "DejaVu Sans"):
        yield


def _drawing() -> str:
    x = torch.ones(3, requires_grad=True)
    y = x.sigmoid()
    with _any_font():
        view = gradlab.draw({"y": y * y}, names={"x": x})
        return view.source + "\n" + view.text()


def _plots() -> str:
    lin = torch.nn.Linear(2, 1)
    (lin(torch.ones(1, 2)) * 0).sum().backward()
    with _any_font():
        fig = gradlab.plot_grads(gradlab.grad_report({"lin": lin}))
    return "\n".join([*(t.get_text() for t in fig.axes[0].texts), fig.axes[0].get_title()])


def _iteration() -> str:
    from gradlab.course import PRESETS, outcome_table, run_order

    outcome = run_order(PRESETS["recompute n_1 after its step"])
    table = outcome_table({"recompute n_1 after its step": PRESETS["recompute n_1 after its step"]})
    return "\n".join([str(outcome), outcome._repr_html_(), table, table.text])


def _widgets() -> str:
    from gradlab.course import playground

    pg = playground()
    return "\n".join([pg.run.description, pg.output_text(), pg.widget.children[0].value])


def _questions() -> str:
    from gradlab.course import QUESTIONS, quiz

    q = QUESTIONS["softmax"]
    widget = quiz("softmax")
    widget.buttons[q.answer].click()
    return "\n".join([str(q), q._repr_html_(), widget.feedback_text()])


def _training() -> str:
    from gradlab.course import ORDERS

    return "\n".join(f"{order}: {what}" for order, what in ORDERS.items())


OUTPUTS: dict[str, tuple[Callable[[], str], tuple[str, ...]]] = {
    "gradlab/explanation.py": (_explanation, ("消息的意思：", "可能的原因：")),
    "gradlab/intent.py": (
        _intent,
        ("与声明不符之处 1 处：", "loss_2 把梯度送进了 n_1.weight, n_1.bias，它们只声明给 loss_1"),
    ),
    "gradlab/grads.py": (_grads, ("参数", "=> 每个参数都有非零梯度", "<th>参数</th>")),
    "gradlab/graph.py": (_graph, ("自动求导计算图：3 个节点", "保存为")),
    "gradlab/names.py": (
        _names,
        ("w（转置视图）", "w（视图）", "叶子张量 [2]", "张量 [2]（无梯度）", "Sigmoid 的输出 [2, 3]"),
    ),
    "gradlab/memory.py": (_memory, ("empty：没有记录任何步骤", "训练步骤")),
    "gradlab/course/readiness.py": (_readiness, ("torch 2.13.0，gradlab 0.2.0：就绪", "未安装")),
    "gradlab/course/exercise.py": (
        _exercise,
        ("✗ 还没对：count again", "…… 答案写在上面的单元格里。", "✗ 还没对：total_loss"),
    ),
    "gradlab/course/plots.py": (_course_plots, ("loss 平坦：没有在学习", "一步也没有完成")),
    "gradlab/drawing.py": (
        _drawing,
        ("图例", "运算<BR/>（反向节点）", 'fontname="DejaVu Sans,DejaVu Sans"', "已保存 result = ", "（见上文）"),
    ),
    "gradlab/plots.py": (_plots, ("每个参数的梯度", "没有柱条：每个梯度都全为零，\n无法训练任何参数")),
    "gradlab/course/iteration.py": (
        _iteration,
        (
            "✓ Success: 本次迭代的 11 行全部运行",
            "<th",
            "得到梯度",
            "修复 (c)：n_1 只从 loss_1 学习",
            "在 n_1 的更新之后重新计算: ",
        ),
    ),
    "gradlab/course/widgets.py": (_widgets, ("运行", "选择一个预设或编辑步骤，然后按“运行”。")),
    "gradlab/course/questions.py": (
        _questions,
        ("对形状为 [10, 1] 的 x", "  c) 原样返回 x", "正确：Each row is normalized over a single value"),
    ),
    "gradlab/course/training.py": (
        _training,
        ("joint: 两个都前向，两个都清零，(loss_1 + loss_2).backward()，两个都更新",),
    ),
}


def _render(path: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return OUTPUTS[path][0]()


def test_every_converted_module_has_an_output_here() -> None:
    assert set(OUTPUTS) == set(CONVERTED)


@pytest.mark.parametrize("path", CONVERTED)
def test_a_translated_message_shows_in_the_output(path: str, zh: None) -> None:
    text = _render(path)
    for expected in OUTPUTS[path][1]:
        assert expected in text, f"{expected!r} not in:\n{text}"


@pytest.mark.parametrize("path", CONVERTED)
def test_english_comes_back_exactly(path: str, catalog: Path) -> None:
    english = _render(path)
    assert set_language("zh_CN") == "zh_CN"
    chinese = _render(path)
    assert chinese != english
    assert set_language("en") == "en"
    assert _render(path) == english


def test_a_translated_quiz_grades_its_translated_options(zh: None) -> None:
    """The buttons show the translated options; each still gives its own explanation, and the answer is right."""
    from gradlab.course import QUESTIONS, quiz

    q = QUESTIONS["softmax"]
    assert q.answer == "全是 1：它的梯度为零，所以它之前的层什么也学不到" and q.answer in q.options
    assert q.options["原样返回 x"].startswith("softmax never returns its input")  # not translated yet: English
    widget = quiz("softmax")
    assert sorted(widget.buttons) == sorted(q.options)
    for option, button in widget.buttons.items():
        button.click()
        verdict = "正确：" if option == q.answer else "Not quite: "
        assert widget.feedback_text() == verdict + q.options[option]
    set_language("en")
    assert "x unchanged" in QUESTIONS["softmax"].options and "原样返回 x" not in QUESTIONS["softmax"].options


def test_quiz_answers_sit_under_the_same_letter_in_both_editions() -> None:
    """Each course question shows its options in the same order in English and in Chinese (a bilingual room,
    or an answer key read aloud, gets the same letters): the order follows the options' written positions.
    Read with the shipped catalog, as both editions of the playground notebook are."""
    from gradlab.course import QUESTIONS, quiz

    i18n._catalog.cache_clear()

    def positions() -> dict[str, list[int]]:
        return {key: [list(q.options).index(o) for o in quiz(key).buttons] for key, q in QUESTIONS.items()}

    def answers() -> dict[str, str]:
        return {key: q.answer for key, q in QUESTIONS.items()}

    set_language("en")
    english, english_answers = positions(), answers()
    try:
        assert set_language("zh_CN") == "zh_CN"
        chinese, chinese_answers = positions(), answers()
    finally:
        set_language("en")
    assert any(english_answers[key] != chinese_answers[key] for key in QUESTIONS)  # the texts are translated
    assert chinese == english
    assert [order.index(0) for order in english.values()] != [0] * len(QUESTIONS)  # still shuffled


def test_untranslated_messages_stay_english(zh: None) -> None:
    """A message the catalog does not translate yet is shown in English, not left out."""
    e = gradlab.explain("RuntimeError: Trying to backward through the graph a second time")
    assert "Likely causes (most likely first):" in e.details()


def test_names_are_data_worded_when_shown(zh: None) -> None:
    """A record keeps the user's name and the view kind; the words follow the language in effect when shown."""
    lin = torch.nn.Linear(2, 1)
    x = torch.ones(4, 2, requires_grad=True)
    with gradlab.track(names={"lin": lin}) as tracker:
        loss = lin(x).sum()
        (weight,) = [s for s in gradlab.saved_tensors(loss, names={"lin": lin}) if s.named]
    assert (weight.name, weight.given, weight.view) == ("lin.weight（转置视图）", "lin.weight", "transposed")
    assert str(Name(weight.given, weight.view)) == "lin.weight（转置视图）"
    (saved,) = [e for e in tracker.events if e.kind == "saved"]
    assert (saved.tensor, saved.given, saved.view) == ("lin.weight（转置视图）", "lin.weight", "transposed")
    set_language("en")
    assert str(Name(weight.given, weight.view)) == "lin.weight (transposed view)"
    (saved,) = [e for e in tracker.events if e.kind == "saved"]  # the log is worded when read
    assert (saved.tensor, saved.given) == ("lin.weight (transposed view)", "lin.weight")
    unnamed = gradlab.saved_tensors(torch.sigmoid(x).sum())
    assert [(s.given, s.view) for s in unnamed] == [(None, None)]


def _chained_step_before_backward() -> tuple[gradlab.Diagnosis, str]:
    torch.manual_seed(0)
    n_1 = torch.nn.Sequential(torch.nn.Linear(1, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4))
    n_2 = torch.nn.Linear(4, 1)
    opt_1 = torch.optim.SGD(n_1.parameters(), lr=0.1)
    pred_1 = n_1(torch.ones(3, 1))
    loss_1 = pred_1.pow(2).mean()
    loss_1.backward(retain_graph=True)
    opt_1.step()
    loss_2 = n_2(pred_1).pow(2).mean()
    d = gradlab.check(loss_2, names={"n_1": n_1, "n_2": n_2})
    return d, str(d)


@needs_raw_saved
def test_the_diagnosis_decides_the_same_in_chinese(catalog: Path) -> None:
    """The tensor's name is a translated view name; the model it belongs to is still found (n_1)."""
    english, english_text = _chained_step_before_backward()
    assert english.problems[0].tensor == "n_1.2.weight (transposed view)"
    set_language("zh_CN")
    chinese, chinese_text = _chained_step_before_backward()
    # words are data, worded when shown: the diagnosis made in English now shows in Chinese too
    assert english.problems[0].tensor == chinese.problems[0].tensor == "n_1.2.weight（转置视图）"
    assert (english.problems[0].given, english.problems[0].view) == ("n_1.2.weight", "transposed")
    assert [p.cause for p in chinese.problems] == [p.cause for p in english.problems] == ["optimizer_step"]
    assert chinese.fixes[0].summary == english.fixes[0].summary  # advice is not in the test catalog: same English
    assert "detach n_1's output where it enters n_2" in chinese.fixes[0].summary
    assert "n_1.2.weight（转置视图）" in chinese_text
    assert "n_1.2.weight (transposed view)" in english_text


# -- choosing the language --------------------------------------------------------------------------


def test_an_unknown_language_is_a_clear_error(catalog: Path) -> None:
    with pytest.raises(ValueError, match=r"no 'xx_YY' catalog; choose one of \['en', 'zh_CN'\]"):
        set_language("xx_YY")
    assert language() == "en"


def test_a_language_code_is_normalised(catalog: Path) -> None:
    assert set_language("zh-cn") == "zh_CN"
    assert set_language("zh") == "zh_CN"
    assert set_language("en_US.UTF-8") == "en"


@pytest.mark.parametrize(
    "lang,expected", [("zh_CN.UTF-8", "zh_CN"), ("C", "en"), ("en_GB.UTF-8", "en"), ("fr_FR.UTF-8", "en")]
)
def test_none_follows_lang(lang: str, expected: str, catalog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", lang)
    assert set_language(None) == expected
    assert language() == expected
    summary = _render("gradlab/graph.py").splitlines()[0]
    assert summary.startswith("自动求导计算图：" if expected == "zh_CN" else "autograd graph: ")


def test_no_language_in_the_environment_is_english(catalog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    assert set_language(None) == "en"


# -- extraction -------------------------------------------------------------------------------------


def _tools_i18n(monkeypatch: pytest.MonkeyPatch) -> Any:
    """tools/i18n.py as a module (registered while the test runs: its dataclass looks itself up)."""
    return load_module(ROOT / "tools" / "i18n.py", "gradlab_tools_i18n", monkeypatch)


def test_extraction_finds_the_messages_of_every_converted_module(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = _tools_i18n(monkeypatch).extract()
    files = {where.rsplit(":", 1)[0] for message in messages.values() for where in message.where}
    missing = [path for path in CONVERTED if path not in files]
    assert not missing, f"no messages extracted from {missing}"
    for msgid in TRANSLATIONS:
        key = msgid[0] if isinstance(msgid, tuple) else msgid
        assert key in messages, f"{key!r} is not extracted"
    plural = messages["{n} mismatch with what you declared:"]
    assert plural.plural == "{n} mismatches with what you declared:"


# -- how Chinese reads: the rules of tools/i18n.py check (NOTE [Chinese style rules]) ----------------

#: rule -> (msgid, a translation the rule flags, one it passes, how the code uses the message)
STYLE_CASES: dict[str, list[tuple[str, str, str, dict[str, Any]]]] = {
    "if-then": [
        # an intent is printed before its fix: "{intent}: {summary}"
        (
            "if {loss} should train {others} against {model} as {step} left it",
            "如果 {loss} 应当对照 {step} 更新后的 {model} 来训练 {others}",
            "如果 {loss} 应该以 {step} 更新后的 {model} 为准来训练 {others}，就",
            {"roles": {"intent"}},
        ),
        (
            "the same, keeping the order and the graph",
            "效果相同，且保留原顺序和计算图：",
            "如果想保留原顺序，就",
            {"roles": {"intent"}},
        ),
        # a bare "if" condition is an intent even where the code does not say so
        (
            "if each step is meant to use the previous iteration's gradient",
            "如果每一步都用上一轮的梯度",
            "如果每一步都用上一轮的梯度，就",
            {},
        ),
        # inside a sentence: 如果 X，就 Y (or 如果 X，它就 Y), not 如果 X：Y or 如果 X，Y
        (
            "if {params} should train: use them in forward",
            "如果 {params} 应该被训练：在 forward 中使用它们",
            "如果 {params} 应该被训练，就在 forward 中使用它们",
            {},
        ),
        (
            "if some inputs are unused, pass allow_unused=True",
            "如果有些输入没有用到，传入 allow_unused=True",
            "如果有些输入没有用到，它们的梯度就是 None",
            {},
        ),
    ],
    "note-word": [
        ("without gradlab's note", "没有 gradlab 的提示", "没有 gradlab 的诊断", {}),
        ("gradlab's notes may be missing", "可能缺少 gradlab 的提示", "可能缺少 gradlab 的诊断", {}),
        # PyTorch's Hint keeps 提示
        (
            "The Hint suggests anomaly mode",
            "提示（Hint）建议打开异常检测；gradlab 的提示",
            "提示（Hint）建议打开异常检测",
            {},
        ),
    ],
    "placeholder-words": [
        ("the failing loss", "（出错的损失）", "出错的损失", {}),
        (
            "call {loss}.backward() once",
            "只调用一次 {loss}.backward()",
            "只对 {loss} 调用一次 backward()",
            {"described": {"loss"}},
        ),
        (
            "backward ({earlier} + {loss}) once",
            "对 ({earlier} + {loss}) 反向传播一次",
            "对 {earlier} 与 {loss} 之和反向传播一次",
            {"described": {"earlier", "loss"}},
        ),
    ],
    "spacing": [
        (
            "DDP's backward did not reach {which}.",
            "DDP 的反向传播没有到达{which}。",
            "DDP 的反向传播没有到达 {which}。",
            {},
        ),
        ("call backward() once", "只调用一次backward()", "只调用一次 backward()", {}),
        ("the graph was freed", "计算图 已被释放", "计算图已被释放", {}),
        ("{intent}: {summary}", "{intent}{summary}", "{intent} {summary}", {}),
        # a field the English glues to a word brings its own separator (" (at x.py:3)" or nothing)
        (
            "use the out-of-place form of {op}{where} now",
            "改用 {op} 的非原地写法{where}现在",
            "改用 {op} 的非原地写法{where} 现在",
            {},
        ),
    ],
    "punctuation": [
        ("the same: {x}", "相同: {x}", "相同：{x}", {}),
        ("a, b (c)", "甲, 乙(丙)", "甲，乙（丙）", {}),
        ("{name}: no steps", "{name}: 没有步骤", "{name}：没有步骤", {}),
    ],
    "colons": [
        ("help: find the write: run it", "建议：先找到那次写入：运行它", "建议：先找到那次写入，即运行它", {}),
        # a fix's trains line follows the label "trains:" (训练：), so it has none of its own
        (
            "unchanged: the values leave the graph",
            "不变：这些数值离开计算图",
            "不变，这些数值离开计算图",
            {"roles": {"trains"}},
        ),
        (
            "run needs a script: SCRIPT.py",
            "run 需要一个脚本：SCRIPT.py",
            "run 需要一个脚本，例如 SCRIPT.py",
            {"roles": {"call:_usage_error"}},
        ),
    ],
}


def _style_cases() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    return [(rule, *case) for rule, cases in STYLE_CASES.items() for case in cases]


@pytest.mark.parametrize("rule,msgid,bad,good,use", _style_cases())
def test_each_chinese_rule_flags_a_bad_entry_and_passes_a_good_one(
    rule: str, msgid: str, bad: str, good: str, use: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = _tools_i18n(monkeypatch)
    message = tools.Message(msgid, None, (), frozenset(use.get("roles", ())), frozenset(use.get("described", ())))
    check = tools.RULES[rule]
    assert check(msgid, bad, message), f"{rule} passes {bad!r}"
    assert check(msgid, good, message) == [], f"{rule} flags {good!r}"


def test_every_rule_has_a_case() -> None:
    tools = load_module(ROOT / "tools" / "i18n.py", "gradlab_tools_i18n_rules")
    assert set(tools.RULES) == set(STYLE_CASES)


def test_check_reports_a_rule_for_a_chinese_catalog_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`check` runs the rules on a zh catalog (and says which rule); another language's catalog is not read as Chinese."""
    tools = _tools_i18n(monkeypatch)
    messages = {"without gradlab's note": tools.Message("without gradlab's note", None, ("gradlab/x.py:1",))}
    for lang in ("zh_CN", "xx_YY"):
        po = tmp_path / lang / "LC_MESSAGES" / "gradlab.po"
        po.parent.mkdir(parents=True)
        po.write_text(_po({"without gradlab's note": "没有 gradlab 的提示"}), encoding="utf-8")
    assert tools.problems(tmp_path / "zh_CN", messages) == [
        "gradlab.po: note-word: \"without gradlab's note\": 提示 is PyTorch's Hint; gradlab's note is 诊断"
    ]
    assert tools.problems(tmp_path / "xx_YY", messages) == []


def test_how_the_code_uses_a_message_is_read_from_the_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The roles the rules depend on: the keyword a message is passed as (also through a variable and into
    another message's field), the function it is passed to, and the fields the code fills with a description."""
    tools = _tools_i18n(monkeypatch)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "causes.py").write_text(
        "def fixes(ctx):\n"
        "    where = T(' (at {where})', where=ctx.where)\n"
        "    summary = T('detach it{where}', where=where)\n"
        "    total = ctx.carried or T('the running total')\n"
        "    return Fix(\n"
        "        intent=T('if {loss} should not train {model}', loss=ctx.l, model=ctx.m),\n"
        "        summary=summary,\n"
        "        trains=T('{name} is kept', name=total),\n"
        "    )\n"
        "\n"
        "def usage():\n"
        "    return _usage_error(T('run needs a script'))\n",
        encoding="utf-8",
    )
    found = tools.extract(package)
    intent = found["if {loss} should not train {model}"]
    assert "intent" in intent.roles and intent.described == {"loss", "model"}
    assert "summary" in found["detach it{where}"].roles
    assert "summary" in found[" (at {where})"].roles  # a part of a summary
    assert found["{name} is kept"].described == {"name"} and "trains" in found["{name} is kept"].roles
    assert "call:_usage_error" in found["run needs a script"].roles
    assert found["the running total"].described == frozenset()


def test_the_shipped_catalog_joins_an_intent_to_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the shipped catalog: an intent ends in "，就" before its fix, with a name or with words for it;
    a fix that starts with code keeps its space; a description reads as words, never in brackets."""
    from gradlab.context import Context
    from gradlab.fixes import Fix
    from gradlab.i18n import T

    i18n._catalog.cache_clear()
    set_language("zh_CN")

    def first_line(ctx: Context, summary: Any) -> str:
        intent = T("if {loss} should not train {model}", loss=ctx.l, model=ctx.m)
        return Fix(summary=summary, trains=T("nothing"), intent=intent).lines()[0]

    named = Context(model="n_1", others=("n_2",), loss="loss_2")
    detach = T("detach {model}'s output where it enters {others}{entry}", model=named.m, others=named.o, entry="")
    assert first_line(named, detach) == "如果 loss_2 不该训练 n_1，就在 n_1 的输出进入 n_2 的地方把它 detach"
    unnamed = Context()
    detach = T("detach {model}'s output where it enters {others}{entry}", model=unnamed.m, others=unnamed.o, entry="")
    assert (
        first_line(unnamed, detach) == "如果出错的损失不该训练上游模型，就在上游模型的输出进入下游模型的地方把它 detach"
    )
    code_first = T(
        "{name} is a constant of the loop (computed once, before it, from weights the loop's own forward also "
        "uses): detach it before the loop",
        name="ref",
    )
    assert first_line(named, code_first).startswith("如果 loss_2 不该训练 n_1，就 ref 是循环里的常量（")
    twice = T(
        "call {loss}.backward() once: delete the second call (the one that failed); the first already "
        "put {loss}'s gradient into .grad",
        loss=unnamed.l,
    )
    assert str(twice).startswith("只对出错的损失调用一次 backward()，删掉第二次调用")


# -- the command line in both languages -----------------------------------------------------------


def _lang(monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", lang)
    i18n._catalog.cache_clear()


@pytest.mark.parametrize(
    "lang,usage,sections",
    [
        ("C.UTF-8", "usage: python -m gradlab run [--verbose]", ("commands:", "options of fix:", "options of run:")),
        ("zh_CN.UTF-8", "用法：python -m gradlab run [--verbose]", ("命令：", "fix 的选项：", "run 的选项：")),
    ],
)
def test_help_follows_lang(
    lang: str,
    usage: str,
    sections: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gradlab.cli import main

    _lang(monkeypatch, lang)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(usage)
    assert all(section in out for section in sections), out
    assert "--explain-only" in out and "python -m gradlab fix [--steps K]" in out  # options and commands as typed


@pytest.mark.parametrize(
    "argv,english,chinese",
    [
        (
            ["run"],
            "gradlab: error: run needs a script (SCRIPT.py) or -m MODULE",
            "gradlab: 错误：run 需要一个脚本（SCRIPT.py）或 -m MODULE",
        ),
        (
            ["run", "--bogus"],
            "gradlab: error: unknown option '--bogus' for run",
            "gradlab: 错误：run 没有选项 '--bogus'",
        ),
        (["run", "-m"], "gradlab: error: -m needs a module name", "gradlab: 错误：-m 后面需要一个模块名"),
        (
            ["explain", "--nope"],
            "gradlab: error: unknown argument '--nope' for explain (use --file F or stdin)",
            "gradlab: 错误：explain 不认识参数 '--nope'（请用 --file F 或标准输入）",
        ),
        (
            ["train.py"],
            "gradlab: error: did you mean: python -m gradlab run train.py",
            "gradlab: 错误：你是想运行 python -m gradlab run train.py 吗？",
        ),
        (["frobnicate"], "gradlab: error: unknown command 'frobnicate'", "gradlab: 错误：没有 'frobnicate' 这个命令"),
        (
            ["fix"],
            "gradlab: error: fix needs a script: python -m gradlab fix SCRIPT.py [ARGS...]",
            "gradlab: 错误：fix 需要一个脚本，例如 python -m gradlab fix SCRIPT.py [ARGS...]",
        ),
    ],
)
def test_usage_errors_follow_lang(
    argv: list[str], english: str, chinese: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradlab.cli import main

    for lang, usage, error in (("en_US.UTF-8", "usage: ", english), ("zh_CN.UTF-8", "用法：", chinese)):
        _lang(monkeypatch, lang)
        assert main(list(argv)) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith(usage + "python -m gradlab run ") and err[-1] == error


def test_python_m_gradlab_help_reads_lang() -> None:
    """The command itself, as a learner types it: LANG=zh_CN.UTF-8 python -m gradlab --help."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    r = subprocess.run(
        [sys.executable, "-m", "gradlab", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "LANG": "zh_CN.UTF-8"},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("用法：python -m gradlab run ") and "命令：" in r.stdout
