"""A Chinese edition (e.g. notebooks/zh) prints with Chinese labels; its text needs a CJK font.

The build itself needs Chromium and poppler (skipped with the apt line when
missing). Whether the Chinese characters reach the PDF depends on a CJK font
(Debian: fonts-noto-cjk): with one, the text is checked; without, the build
must say which package to install.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from loading import load_module

HANDOUT = Path(__file__).resolve().parent.parent / "tools" / "handout.py"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
POPPLER = shutil.which("pdftotext")
FC_LIST = shutil.which("fc-list")
CJK_FONT = bool(
    FC_LIST and subprocess.run([FC_LIST, ":lang=zh", "family"], capture_output=True, text=True).stdout.strip()
)
TITLES = ["00 · 从这里开始", "01 · 原始循环：失败 1"]
PROMPT = "**预测：** 这个单元格能运行吗？写下*能*或*不能*，以及原因。"

pytestmark = [
    pytest.mark.course,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM and POPPLER),
        reason="needs Chromium and poppler: apt-get install chromium poppler-utils (or make system-deps)",
    ),
]


handout = load_module(HANDOUT, "handout")
import handout_print  # noqa: E402  (tools/ is on sys.path once handout is loaded)


@pytest.fixture(scope="module")
def chinese_edition(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("zh")
    for number, title in enumerate(TITLES):
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [
            nbformat.v4.new_markdown_cell(f"# {title}\n\n**学习目标**\n\n- 读懂第一个错误"),
            nbformat.v4.new_markdown_cell(PROMPT, metadata={"tags": ["predict"]}),
            nbformat.v4.new_markdown_cell("## 小结\n\n- 版本计数器记录原地修改", metadata={"tags": ["summary"]}),
            nbformat.v4.new_markdown_cell("下一章：[原始循环](01_chapter.ipynb)"),
        ]
        nbformat.write(notebook, folder / f"{number:02d}_chapter.ipynb")
    out = tmp_path_factory.mktemp("zh_handout")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = handout.main(["--notebooks", str(folder), "--out", str(out)])
    assert code == 0, stderr.getvalue()
    return out, stderr.getvalue()


def test_the_chinese_edition_is_labelled_in_chinese(chinese_edition: tuple[Path, str]) -> None:
    out, _ = chinese_edition
    index = (out / "index.html").read_text(encoding="utf-8")
    assert '<html lang="zh-Hans">' in index and "练习册" in index
    assert ">课程地图</a>" in (out / "01_chapter.html").read_text(encoding="utf-8"), "the page's link to the map"
    for name, after in [("handout", ["索引"]), ("workbook", [])]:
        top = [title for depth, title, _ in handout_print.outline(out / f"{name}.pdf") if depth == 0]
        assert top == TITLES + after, f"{name}: one bookmark per notebook, in Chinese (and the handout's index)"


@pytest.mark.skipif(not CJK_FONT, reason="no CJK font: apt-get install fonts-noto-cjk")
def test_chinese_text_reaches_the_pdf(chinese_edition: tuple[Path, str]) -> None:
    out, _ = chinese_edition
    text = subprocess.run(["pdftotext", str(out / "workbook.pdf"), "-"], capture_output=True, text=True).stdout
    # pdftotext may order "00 ·" and the Chinese run after it apart (a change of font): check the Chinese
    titles = [title.split(" · ", 1)[1].replace(" ", "") for title in TITLES]
    for expected in [*titles, "预测：这个单元格能运行吗？", "你的预测", "目录"]:
        assert expected in text.replace(" ", ""), expected
    assert "版本计数器记录原地修改" not in text.replace(" ", ""), (
        "the summary is the full handout's, not the workbook's"
    )
    full = subprocess.run(["pdftotext", str(out / "handout.pdf"), "-"], capture_output=True, text=True).stdout
    assert "版本计数器记录原地修改" in full.replace(" ", "")
    second = [page for depth, _, page in handout_print.outline(out / "handout.pdf") if depth == 0][1]
    assert f"下一章：原始循环（第{second}页）" in "".join(full.split()), "a link to a notebook prints its page"


@pytest.mark.skipif(CJK_FONT or not FC_LIST, reason="a CJK font is installed (or no fontconfig to ask)")
def test_a_missing_cjk_font_is_named(chinese_edition: tuple[Path, str]) -> None:
    _, stderr = chinese_edition
    assert "apt-get install fonts-noto-cjk" in stderr
