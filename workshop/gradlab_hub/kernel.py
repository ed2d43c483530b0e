"""A Jupyter kernel in a learner's server, driven over the Jupyter kernel protocol.

What JupyterLab does in a learner's browser, without the browser: open a session for a
notebook (``POST /user/{name}/api/sessions``, so the kernel starts in the notebook's
folder), connect to the kernel's websocket (``/api/kernels/{id}/channels``, through the
hub's proxy, with the learner's token), send one ``execute_request`` per code cell and
collect the outputs the kernel publishes for it until it is idle again, the same loop
nbval runs.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import requests
import websocket

__all__ = ["Execution", "RemoteKernel"]

_OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")


@dataclass
class Execution:
    """One code cell's run: its outputs (notebook format) and the reply's status."""

    outputs: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""
    seconds: float = 0.0


class RemoteKernel:
    """A kernel started for ``path`` in the server at ``server_url`` (``.../user/{name}/``)."""

    def __init__(self, server_url: str, token: str, path: str, *, timeout: float = 120) -> None:
        self.server_url = server_url.rstrip("/") + "/"
        self.headers = {"Authorization": f"token {token}"}
        response = requests.post(
            self.server_url + "api/sessions",
            headers=self.headers,
            json={"path": path, "name": path.rsplit("/", 1)[-1], "type": "notebook", "kernel": {"name": "python3"}},
            timeout=timeout,
        )
        response.raise_for_status()
        model = response.json()
        self.session_id: str = model["id"]
        self.kernel_id: str = model["kernel"]["id"]
        self.client_session = uuid.uuid4().hex
        url = self.server_url.replace("http", "ws", 1) + f"api/kernels/{self.kernel_id}/channels"
        self.socket = websocket.create_connection(
            f"{url}?session_id={self.client_session}",
            header=[f"{key}: {value}" for key, value in self.headers.items()],
            timeout=timeout,
        )
        self.wait_ready(timeout)

    def _send(self, msg_type: str, content: dict[str, Any], channel: str = "shell") -> str:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "username": "gradlab-loadtest",
            "session": self.client_session,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "version": "5.3",
        }
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": channel}
        self.socket.send(json.dumps(message))
        return msg_id

    def _receive(self, deadline: float) -> dict[str, Any]:
        self.socket.settimeout(max(0.1, deadline - time.monotonic()))
        message: dict[str, Any] = json.loads(self.socket.recv())
        return message

    def wait_ready(self, timeout: float) -> None:
        """Ask for ``kernel_info`` until the kernel answers (it may still be starting)."""
        deadline = time.monotonic() + timeout
        while True:
            msg_id = self._send("kernel_info_request", {})
            try:
                while True:
                    message = self._receive(min(deadline, time.monotonic() + 5))
                    if message.get("parent_header", {}).get("msg_id") == msg_id and message["channel"] == "shell":
                        return
            except websocket.WebSocketTimeoutException:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"kernel {self.kernel_id} did not answer within {timeout:.0f} s") from None

    def execute(self, code: str, *, timeout: float = 300) -> Execution:
        """Run ``code``; return once the reply and the kernel's return to idle have arrived."""
        started = time.monotonic()
        deadline = started + timeout
        msg_id = self._send(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": False,
            },
        )
        result = Execution()
        idle = False
        while not (idle and result.status):
            try:
                message = self._receive(deadline)
            except websocket.WebSocketTimeoutException:
                raise TimeoutError(f"a cell did not finish within {timeout:.0f} s") from None
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["header"]["msg_type"], message["content"]
            if kind == "execute_reply":
                result.status = content["status"]
            elif kind == "status":
                idle = content["execution_state"] == "idle"
            elif kind == "clear_output":
                result.outputs.clear()
            elif kind in _OUTPUT_TYPES:
                output = {"output_type": kind, **content}
                output.pop("transient", None)
                result.outputs.append(output)
        result.seconds = time.monotonic() - started
        return result

    def close(self) -> None:
        """Close the websocket and delete the session (the server stops the kernel)."""
        try:
            self.socket.close()
        finally:
            requests.delete(self.server_url + f"api/sessions/{self.session_id}", headers=self.headers, timeout=60)
