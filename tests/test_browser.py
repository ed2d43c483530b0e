"""The playground in a real browser: JupyterLab + Chromium, driven by Playwright (``make test-browser``).

The test starts its own JupyterLab (127.0.0.1, a free port, a random token) on
a temporary copy of ``notebooks/`` (autosave rewrites notebooks) with HOME and
every Jupyter directory in a temporary folder, runs all cells of
``11_playground.ipynb``, uses the playground widget, and saves screenshots to
``artifacts/``. Server and browser are always stopped.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gradlab.course.lab import HOST, build_argv

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"
NOTEBOOK = "11_playground.ipynb"
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Settings JupyterLab reads from <app_settings_dir>/overrides.json (jupyterlab_server
# settings_utils._get_overrides): render every cell (no windowing), start the notebook's
# kernel without the "Select Kernel" dialog, no news requests.
OVERRIDES = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none", "autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
FREED = "Trying to backward through the graph a second time"
JOINT = "joint backward (both losses train n_1)"

pytestmark = [
    pytest.mark.course,
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no chromium: install Debian's chromium (apt-get install chromium) to run: make test-browser",
    ),
]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes], base: str, token: str) -> None:
    """Ask the server to shut down (it stops its kernels); signal its process group if it does not."""
    if proc.poll() is None:
        try:
            request = urllib.request.Request(
                f"{base}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
            )
            urllib.request.urlopen(request, timeout=5).close()
        except OSError:
            pass
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            try:
                os.killpg(proc.pid, sig)  # the server and its kernels: the group this test started
            except ProcessLookupError:
                break
        try:
            proc.wait(timeout=15)
            break
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def jupyterlab(tmp: Path) -> Iterator[tuple[str, str]]:
    """A JupyterLab on a copy of notebooks/, isolated in ``tmp``; yields (base URL, token)."""
    root = tmp / "notebooks"
    shutil.copytree(REPO / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    settings = tmp / "app-settings"
    settings.mkdir()
    (settings / "overrides.json").write_text(json.dumps(OVERRIDES), encoding="utf-8")
    token = secrets.token_hex(16)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "HOME": str(tmp / "home"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    argv = build_argv(root, port, open_browser=False, allow_root=hasattr(os, "geteuid") and os.geteuid() == 0)
    argv.append(f"--LabApp.app_settings_dir={settings}")
    log = tmp / "jupyterlab.log"
    base = f"http://{HOST}:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(proc, f"{base}/api/status?token={token}", log)
        yield base, token
    finally:
        _stop(proc, base, token)


@contextmanager
def lab_page(tmp: Path, failure: str) -> Iterator[tuple[Any, str, str]]:
    """A Chromium page beside a fresh JupyterLab: ``(page, base, token)``.

    If the block raises, a full-page screenshot goes to ``artifacts/<failure>``.
    """
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    with jupyterlab(tmp) as (base, token), sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            try:
                yield page, base, token
            except Exception:
                page.screenshot(path=ARTIFACTS / failure, full_page=True)
                raise
        finally:
            browser.close()


def run_all_cells(page: Any) -> None:
    """Wait for the kernel to be idle, then Run > Run All Cells."""
    page.get_by_text(re.compile(r"Python 3 \(ipykernel\) \| Idle")).first.wait_for()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def test_playground_in_jupyterlab(tmp_path: Path) -> None:
    with lab_page(tmp_path, "playground-failure.png") as (page, base, token):
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
        run_all_cells(page)

        widget = page.locator(".gradlab-playground")
        widget.wait_for()
        output = widget.locator(".gradlab-output")
        widget.locator(".gradlab-preset select").select_option(label="original loop")
        widget.locator("button.gradlab-run").click()
        output.get_by_text(FREED).first.wait_for()
        widget.screenshot(path=ARTIFACTS / "playground-original-loop.png")

        widget.locator(".gradlab-preset select").select_option(label=JOINT)
        widget.locator("button.gradlab-run").click()
        output.get_by_text("✓ Success").first.wait_for()
        assert FREED not in output.inner_text()
        widget.screenshot(path=ARTIFACTS / "playground-joint.png")

        first_quiz = page.locator(".gradlab-quiz").first
        first_quiz.scroll_into_view_if_needed()
        first_quiz.locator("button", has_text="opt_1.step() deleted the graph").click()
        first_quiz.get_by_text("✗ Not quite").wait_for()
        first_quiz.screenshot(path=ARTIFACTS / "quiz.png")
        assert page.get_by_text("Error displaying widget").count() == 0


def test_the_chinese_edition_in_jupyterlab(tmp_path: Path) -> None:
    """notebooks/zh/11_playground.ipynb: Chinese markdown rendered, the playground in Chinese, PyTorch's error in English."""
    with lab_page(tmp_path, "zh-failure.png") as (page, base, token):
        fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout.strip()
        assert fonts, (
            "no CJK font: apt-get install fonts-noto-cjk (make system-deps installs it); Chinese would show as boxes"
        )
        page.goto(f"{base}/lab/tree/zh/{NOTEBOOK}?token={token}")
        heading = page.locator(".jp-RenderedMarkdown h1", has_text="实验场与小测验").first
        heading.wait_for()
        # A glyph the page's fonts cannot draw would take the width of a box, whatever the character;
        # drawn Chinese characters are as wide as each other and wider than a Latin "i".
        widths = page.evaluate(
            """(el) => { const c = document.createElement('canvas').getContext('2d');
                         c.font = getComputedStyle(el).font;
                         return ['实', '验', 'i'].map(t => c.measureText(t).width); }""",
            heading.element_handle(),
        )
        assert widths[0] == widths[1] > 1.5 * widths[2], f"Chinese glyph widths {widths}"
        run_all_cells(page)

        widget = page.locator(".gradlab-playground")
        widget.wait_for()
        widget.locator(".gradlab-preset select").select_option(label="原始循环")
        widget.locator("button.gradlab-run", has_text="运行").click()
        output = widget.locator(".gradlab-output")
        output.get_by_text(FREED).first.wait_for()  # PyTorch's words stay as PyTorch prints them
        assert re.search(r"[\u4e00-\u9fff]", output.inner_text()), "gradlab's words in Chinese"
        heading.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "zh-notebook.png")
        widget.screenshot(path=ARTIFACTS / "zh-playground.png")
        assert page.get_by_text("Error displaying widget").count() == 0
