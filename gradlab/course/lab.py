"""Open the course in JupyterLab: ``python -m gradlab.course.lab [--port N] [--edition zh] [--no-browser]``.

JupyterLab serves the repository's ``notebooks/`` folder and opens
``00_start_here.ipynb`` (``--edition zh``: the Chinese edition's, ``zh/00_start_here.ipynb``). The server listens on 127.0.0.1 only and always
requires a token; the full URL with the token is printed so the course can
be opened from another browser (or through an SSH tunnel) on a headless
machine.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["EDITIONS", "HOST", "START_NOTEBOOK", "build_argv", "course_url", "main", "port_in_use"]

HOST = "127.0.0.1"
START_NOTEBOOK = "00_start_here.ipynb"
#: Each edition's first notebook, relative to ``notebooks/``.
EDITIONS = {"en": START_NOTEBOOK, "zh": f"zh/{START_NOTEBOOK}"}


def build_argv(
    notebooks_dir: Path,
    port: int,
    *,
    open_browser: bool = True,
    allow_root: bool = False,
    start: str = START_NOTEBOOK,
) -> list[str]:
    """Command line that starts JupyterLab on the course notebooks.

    The token is not part of the command line (other users can read command
    lines with ``ps``); pass it in the ``JUPYTER_TOKEN`` environment variable.

    Args:
        notebooks_dir: folder JupyterLab serves (``notebooks/``).
        port: TCP port on 127.0.0.1; JupyterLab fails instead of trying
            another port, so the printed URL is always right.
        open_browser: open the start notebook in the default browser.
        allow_root: add ``--allow-root`` (JupyterLab refuses root without it).
        start: the notebook to open, relative to ``notebooks_dir`` (one of :data:`EDITIONS`).

    Example::

        >>> argv = build_argv(Path("notebooks"), 8888, open_browser=False)
        >>> argv[1:3]
        ['-m', 'jupyterlab']
    """
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={notebooks_dir}",
        f"--LabApp.default_url=/lab/tree/{start}",
        f"--ServerApp.ip={HOST}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.open_browser={open_browser}",
    ]
    if allow_root:
        argv.append("--allow-root")
    return argv


def course_url(port: int, token: str, start: str = START_NOTEBOOK) -> str:
    """URL of the start notebook, with the token that logs the browser in."""
    return f"http://{HOST}:{port}/lab/tree/{start}?token={token}"


def port_in_use(port: int, host: str = HOST) -> bool:
    """Whether ``host:port`` cannot be bound (another server is listening)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def _default_notebooks_dir() -> Path:
    # The course checkout: gradlab/ sits next to notebooks/ (this file is gradlab/course/lab.py).
    return Path(__file__).resolve().parents[2] / "notebooks"


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _parse_args(args: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gradlab.course.lab",
        description="Open the gradlab course in JupyterLab (127.0.0.1, token required).",
    )
    parser.add_argument("--port", type=int, default=8888, help="port on 127.0.0.1 (default 8888)")
    parser.add_argument(
        "--edition",
        choices=sorted(EDITIONS),
        default="en",
        help="which edition's first notebook to open: en (English, default) or zh (Chinese, notebooks/zh/)",
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--token",
        default=None,
        help="access token (default: $JUPYTER_TOKEN, else a new random token)",
    )
    parser.add_argument(
        "--notebooks-dir",
        type=Path,
        default=None,
        help="folder to serve (default: the checkout's notebooks/)",
    )
    return parser.parse_args(args)


def main(args: Sequence[str] | None = None) -> int:
    """Start JupyterLab on the course; returns an exit status on failure.

    On success the process is replaced by JupyterLab (Ctrl-C stops it), so
    this function only returns when it could not start.
    """
    options = _parse_args(args)
    notebooks_dir = (options.notebooks_dir or _default_notebooks_dir()).resolve()
    start = EDITIONS[options.edition]
    if not (notebooks_dir / start).is_file():
        print(
            f"gradlab.lab: {start} not found in {notebooks_dir}; "
            "pass --notebooks-dir pointing at the course's notebooks/ folder.",
            file=sys.stderr,
        )
        return 2
    if port_in_use(options.port):
        print(
            f"gradlab.lab: port {options.port} on {HOST} is already in use "
            "(is another Jupyter running?).\n"
            f"Pick another port:  make lab PORT={options.port + 2}   "
            f"(or: python -m gradlab.course.lab --port {options.port + 2})",
            file=sys.stderr,
        )
        return 2
    # Token authentication stays on: never start the server without one.
    token = options.token or os.environ.get("JUPYTER_TOKEN") or secrets.token_hex(24)
    os.environ["JUPYTER_TOKEN"] = token
    argv = build_argv(
        notebooks_dir,
        options.port,
        open_browser=not options.no_browser,
        allow_root=_running_as_root(),
        start=start,
    )
    print(
        f"gradlab: starting JupyterLab on {notebooks_dir} (Ctrl-C twice to stop).\n"
        "Open the course at this URL (it contains the access token):\n\n"
        f"    {course_url(options.port, token, start)}\n",
        flush=True,
    )
    # Replace this process so Ctrl-C and signals reach JupyterLab directly.
    os.execv(sys.executable, argv)
    return 1  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
