"""`python -m gradlab.lab` starts JupyterLab on 127.0.0.1 with a required token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gradlab.course import lab

pytestmark = [pytest.mark.course, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((lab.HOST, 0))
        return int(s.getsockname()[1])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None  # surface 3xx as HTTPError instead of following it


def _status(url: str) -> int:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _lab_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("JUPYTER_TOKEN", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    # Keep the server's runtime files (cookies secret, server info) out of ~.
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "data")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path / "workspaces")
    return env


@pytest.fixture
def notebooks(tmp_path: Path) -> Path:
    """A minimal course folder: just an empty start notebook."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / lab.START_NOTEBOOK).write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    return folder


def test_build_argv_is_local_with_fixed_port() -> None:
    argv = lab.build_argv(Path("notebooks"), 8890, open_browser=False, allow_root=False)
    assert argv[:3] == [sys.executable, "-m", "jupyterlab"]
    assert "--ServerApp.ip=127.0.0.1" in argv
    assert "--ServerApp.port=8890" in argv
    assert "--ServerApp.port_retries=0" in argv
    assert "--ServerApp.root_dir=notebooks" in argv
    assert "--LabApp.default_url=/lab/tree/00_start_here.ipynb" in argv
    assert "--ServerApp.open_browser=False" in argv
    assert "--allow-root" not in argv
    assert not any("token" in arg.lower() for arg in argv), "token must not be visible in ps"
    assert "--allow-root" in lab.build_argv(Path("notebooks"), 8890, allow_root=True)


def test_port_in_use_is_reported_with_a_fix(notebooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind((lab.HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert lab.port_in_use(port)
        status = lab.main(["--port", str(port), "--no-browser", "--notebooks-dir", str(notebooks)])
    assert status != 0
    message = capsys.readouterr().err
    assert f"port {port}" in message and "make lab PORT=" in message
    assert not lab.port_in_use(port)


def test_missing_notebooks_dir_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lab.main(["--no-browser", "--notebooks-dir", str(tmp_path)]) != 0
    assert "00_start_here.ipynb" in capsys.readouterr().err


@pytest.mark.slow
def test_lab_serves_only_with_token(tmp_path: Path, notebooks: Path) -> None:
    port, token = _free_port(), "gradlab-test-token"
    command = [
        sys.executable,
        "-m",
        "gradlab.course.lab",
        "--port",
        str(port),
        "--no-browser",
        "--token",
        token,
        "--notebooks-dir",
        str(notebooks),
    ]
    server = subprocess.Popen(
        command, env=_lab_env(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://{lab.HOST}:{port}"
        deadline = time.monotonic() + 90
        status = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                status = _status(f"{base}/lab?token={token}")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.25)  # not listening yet
        assert server.poll() is None, "JupyterLab exited early"
        assert status == 200, f"/lab with token gave {status}"
        without = _status(f"{base}/lab")
        assert without == 403 or 300 <= without < 400, f"/lab without token gave {without}"
        assert _status(f"{base}/api/contents/{lab.START_NOTEBOOK}") == 403
        assert _status(f"{base}/api/contents/{lab.START_NOTEBOOK}?token=wrong") == 403
    finally:
        server.terminate()
        try:
            output, _ = server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            output, _ = server.communicate()
    assert lab.course_url(port, token) in output, "the URL with token is printed"


def test_the_chinese_edition_opens_its_own_first_notebook() -> None:
    argv = lab.build_argv(Path("notebooks"), 8890, open_browser=False, start=lab.EDITIONS["zh"])
    assert "--LabApp.default_url=/lab/tree/zh/00_start_here.ipynb" in argv
    assert (
        lab.course_url(8890, "t", lab.EDITIONS["zh"]) == "http://127.0.0.1:8890/lab/tree/zh/00_start_here.ipynb?token=t"
    )
    for start in lab.EDITIONS.values():
        assert (Path(lab.__file__).resolve().parents[2] / "notebooks" / start).is_file(), f"{start} is committed"


def test_an_edition_without_its_notebooks_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / lab.START_NOTEBOOK).write_text("{}", encoding="utf-8")
    assert lab.main(["--no-browser", "--edition", "zh", "--notebooks-dir", str(tmp_path)]) != 0
    assert "zh/00_start_here.ipynb not found" in capsys.readouterr().err
