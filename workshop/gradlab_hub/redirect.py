"""Plain HTTP on port 80 that sends every request to the hub's HTTPS address (301).

When the hub serves HTTPS itself (``GRADLAB_HUB_SSL_CERT``), a learner who types
``hub.example.org`` into a browser, or a QR-code reader that drops the scheme, arrives
on port 80 and finds nothing. ``make hub`` therefore runs this small server as a
service of the hub (it starts and stops with it): ``GET /hub/login`` on port 80 answers
``301 Moved Permanently`` with ``Location: https://hub.example.org/hub/login``. Nothing is
served over plain HTTP, and the redirect never carries a password (the browser sends
none before it reaches HTTPS). ``GRADLAB_HUB_HTTP_REDIRECT_PORT=0`` turns it off (e.g.
while ``certbot --standalone`` needs the port to renew the certificate).

Usage::

    python -m gradlab_hub.redirect --port 80 --to https://hub.example.org
"""

from __future__ import annotations

import argparse
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["RedirectHandler", "location", "serve"]


def location(target: str, path: str) -> str:
    """Where a request for ``path`` goes: the same path and query on ``target``'s HTTPS origin.

    Example::

        >>> location("https://hub.example.org/", "/hub/login?next=%2Fhub%2F")
        'https://hub.example.org/hub/login?next=%2Fhub%2F'
        >>> location("https://hub.example.org", "//evil.example/x")
        'https://hub.example.org/evil.example/x'
    """
    origin = target.rstrip("/")
    return origin + "/" + path.lstrip("/")


class RedirectHandler(BaseHTTPRequestHandler):
    target = "https://localhost"
    server_version = "gradlab-hub-redirect"

    def _redirect(self) -> None:
        self.send_response(301)
        self.send_header("Location", location(self.target, self.path))
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = _redirect

    def log_message(self, format: str, *args: object) -> None:  # one line per request is noise on the day
        pass


def serve(port: int, target: str, host: str = "") -> ThreadingHTTPServer:
    """A redirect server bound to ``host:port`` (not yet serving; call ``serve_forever``)."""
    parts = urlsplit(target)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"--to {target!r} must be the hub's https:// address, e.g. https://hub.example.org")
    handler = type("Handler", (RedirectHandler,), {"target": f"https://{parts.netloc}"})
    return ThreadingHTTPServer((host, port), handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradlab_hub.redirect", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=80)
    parser.add_argument("--host", default="", help="address to listen on (default: all)")
    parser.add_argument("--to", required=True, help="the hub's https:// address")
    options = parser.parse_args(argv)
    try:
        server = serve(options.port, options.to, options.host)
    except (ValueError, OSError) as error:
        print(f"redirect: {error}", file=sys.stderr)
        return 2
    with server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
