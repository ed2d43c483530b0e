"""The Chinese edition is complete, current and consistent.

- every message of gradlab (``gradlab/locale/zh_CN/LC_MESSAGES/gradlab.po``) is translated, keeps
  its placeholders and matches the code (``tools/i18n.py check``);
- every notebook cell with words has a current translation that changes no code
  (``tools/translate_notebooks.py check``);
- ``notebooks/zh/`` is what the build makes of those two sources (so nbval runs the edition a
  learner opens, not an older one);
- the terms of ``translations/zh_CN/GLOSSARY.md`` are used: where an English text uses a term,
  its translation uses the Chinese one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from loading import load_module

pytestmark = pytest.mark.course

ROOT = Path(__file__).resolve().parent.parent
ZH = ROOT / "notebooks" / "zh"
PO = ROOT / "gradlab" / "locale" / "zh_CN" / "LC_MESSAGES" / "gradlab.po"


def _tool(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """tools/<name>.py as a module, registered while the test runs (its dataclasses look themselves up)."""
    monkeypatch.syspath_prepend(str(ROOT / "tools"))
    return load_module(ROOT / "tools" / f"{name}.py", f"gradlab_tools_{name}", monkeypatch)


def test_every_gradlab_message_is_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    i18n = _tool("i18n", monkeypatch)
    messages = i18n.extract()
    problems = i18n.problems(PO.parent.parent, messages)
    assert len(messages) > 300, "the extraction found gradlab's messages"
    assert problems == [], f"{len(problems)} problem(s), e.g. {problems[:5]} (fix: python tools/i18n.py check)"


def test_the_message_check_finds_a_missing_translation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The check above can fail: a catalog with one translation emptied is reported."""
    i18n = _tool("i18n", monkeypatch)
    messages = i18n.extract()
    text = PO.read_text(encoding="utf-8")
    broken = tmp_path / "zh_CN" / "LC_MESSAGES" / "gradlab.po"
    broken.parent.mkdir(parents=True)
    msgid = 'msgid "parameter {shape}"\nmsgstr "'
    assert msgid in text
    start = text.index(msgid) + len(msgid)
    end = text.index('"\n', start)
    broken.write_text(text[:start] + text[end:], encoding="utf-8")
    problems = i18n.problems(broken.parent.parent, messages)
    assert problems == ["gradlab.po: untranslated: 'parameter {shape}'"]


def test_every_notebook_cell_is_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _tool("translate_notebooks", monkeypatch)
    notebooks = tool.course_notebooks()
    assert len(notebooks) == 12
    assert tool.check(notebooks) == []


def test_the_chinese_notebooks_are_built_from_the_current_sources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tool = _tool("translate_notebooks", monkeypatch)
    built = tool.build(tool.course_notebooks(), tmp_path)
    assert [p.name for p in built] == sorted(p.name for p in ZH.glob("[0-9][0-9]_*.ipynb")), (
        "notebooks/zh has one notebook per English one (make notebooks builds them)"
    )
    for path in built:
        fresh = nbformat.read(path, as_version=4)
        committed = nbformat.read(ZH / path.name, as_version=4)
        cells = [(c.cell_type, c.source) for c in committed.cells if not tool.is_generated(c)]
        assert cells == [(c.cell_type, c.source) for c in fresh.cells], (
            f"notebooks/zh/{path.name} is older than its sources: run make notebooks"
        )
        assert committed.metadata.get("language") == "zh_CN"


def _glossary(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(English pattern, Chinese term pattern) for the glossary terms a translation must keep."""
    path = _tool("translate_notebooks", monkeypatch).GLOSSARY
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|", path.read_text(encoding="utf-8"), re.M)
    table = dict(rows)
    # The unambiguous ones: one English phrase, one Chinese term, no second sense in the course.
    chosen = {
        "saved tensor": "保存的张量",
        "version counter": "版本计数器",
        "in-place operation / in place": "原地",
        "gradient": "梯度",
        "optimizer": "优化器",
        "computation graph / graph": "图",
    }
    for english, chinese in chosen.items():
        assert chinese in table[english], f"GLOSSARY.md gives {table[english]!r} for {english!r}"
    return [
        (r"\bsaved tensors?\b", "保存的张量|已保存张量"),  # the second where it modifies a noun (no 的-chain)
        (r"\bversion counters?\b", "版本计数器"),
        # "in place" as an in-place write; not "in place of", "keeps every line in place"
        (r"\bin-place\b|\b(?:modif|writ|wrote|chang|updat|edit|work|happen)\w* in place\b", "原地"),
        (r"\bgradients?\b", "梯度"),
        (r"\boptimi[sz]ers?\b", "优化器"),
        (r"\bcomputation graphs?\b", "图"),
    ]


def _prose(text: str, code: bool = False) -> str:
    """English text without what stays English: code, PyTorch's quoted words, {placeholders}, URLs.

    In a code cell only the comments are prose. In markdown, PyTorch's error text is quoted
    in *italics* or as a > block, and stays English in the translation.
    """
    if code:
        return "\n".join(re.findall(r"#(.*)$", text, re.M))
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"^>.*$", " ", text, flags=re.M)
    text = re.sub(r"(?<![*\w])\*(?!\*)[^*]+?\*(?![*\w])", " ", text)
    text = re.sub(r"\b\w+(?:\.\w+)+(?:\(\))?", " ", text)  # optimizer.step(), torch.optim.SGD
    text = re.sub(r"\{[^}]*\}", " ", text)
    return re.sub(r"\(https?://[^)]*\)|https?://\S+", " ", text)


# Messages that quote PyTorch's own English words (kept English in the translation, as GLOSSARY.md says).
QUOTES_TORCH = {"torch >= 1.10 (or directly access saved tensors ...)"}


def _pairs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str, bool]]:
    """(where, english, chinese, is code) for every translated notebook cell and gradlab message."""
    tool = _tool("translate_notebooks", monkeypatch)
    out = []
    for notebook in tool.course_notebooks():
        kinds = {c.id: c.cell_type for c in nbformat.read(notebook, as_version=4).cells}
        for cell_id, (english, chinese, _, _) in tool.read_catalog(tool.catalog_path(notebook)).items():
            out.append((f"{notebook.name} cell {cell_id}", english, chinese, kinds.get(cell_id) == "code"))
    from gradlab.i18n import _po_entries

    for fields, _ in _po_entries(PO.read_text(encoding="utf-8")):
        english = fields.get("msgid", "")
        chinese = fields.get("msgstr", fields.get("msgstr[0]", ""))
        if english and english not in QUOTES_TORCH:
            out.append((f"gradlab.po {english[:40]!r}", english, chinese, False))
    return out


def test_translations_use_the_glossary_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    terms = _glossary(monkeypatch)
    pairs = _pairs(monkeypatch)
    assert len(pairs) > 400
    misses = []
    for where, english, chinese, code in pairs:
        prose = _prose(english, code)
        for pattern, term in terms:
            if re.search(pattern, prose, re.I) and not re.search(term, chinese):
                misses.append(f"{where}: {pattern} without {term}")
    assert misses == [], f"{len(misses)} translation(s) leave a glossary term out:\n" + "\n".join(misses[:20])


def test_the_glossary_check_finds_a_term_left_out() -> None:
    """The check above can fail: prose that uses a term is caught, code and quoted PyTorch words are not."""
    assert re.search(r"\bsaved tensors?\b", _prose("the saved tensor went stale"))
    assert not re.search(r"\bgradients?\b", _prose("*needed for gradient computation* and `x.grad`"))
    assert not re.search(r"\boptimi[sz]ers?\b", _prose("for optimizer in opts:  # loop", code=True))
    assert re.search(r"\boptimi[sz]ers?\b", _prose("for x in y:  # each optimizer", code=True))
