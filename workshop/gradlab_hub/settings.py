"""What an instructor can set, read from ``GRADLAB_HUB_*`` environment variables and checked.

Every setting has a default that is safe on a shared machine: the hub listens on
127.0.0.1 only; a public address needs HTTPS (a certificate and key) or the explicit
statement that TLS ends in front of the hub (``GRADLAB_HUB_PUBLIC_HTTP=1``). Secrets
(the workshop code learners type once, the instructor's admin password) come from the
environment or from files in the state directory that ``make hub`` creates (mode 0600).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .accounts import USERNAME_PATTERN

WORKSHOP = Path(__file__).resolve().parent.parent
REPO = WORKSHOP.parent
DEFAULT_PREFIX = Path("/opt/gradlab-workshop")
PROXY_COMMAND = WORKSHOP / "node_modules" / ".bin" / "configurable-http-proxy"
LEARNER_ENV_STAMP = "learner-env.json"

WORKSHOP_CODE_FILE = "workshop-code"
ADMIN_PASSWORD_FILE = "admin-password"
MIN_CODE_LENGTH = 8
MIN_ADMIN_PASSWORD_LENGTH = 32  # JupyterHub's SharedPasswordAuthenticator asks the same of admin passwords

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)$", re.IGNORECASE)


class SettingsError(ValueError):
    """A setting cannot work; the message names the variable and what to set."""


def parse_size(text: str) -> int:
    """Bytes in a size such as ``2G``, ``512M`` or ``1048576`` (powers of 1024, like JupyterHub's).

    Example::

        >>> parse_size("2G"), parse_size("512M")
        (2147483648, 536870912)
    """
    match = _SIZE.match(text.strip())
    if not match:
        raise SettingsError(f"{text!r} is not a size; write e.g. 2G or 512M")
    number, unit = match.groups()
    return int(float(number) * 1024 ** "_KMGT".index(unit.upper() or "_"))


@dataclass(frozen=True)
class LearnerEnv:
    """The Python environment learners' servers run in (``make hub-deps`` builds it).

    ``ld_library_path`` is set when the interpreter is a copy whose shared libpython
    must be found next to it (see :mod:`gradlab_hub.learner_env`).
    """

    prefix: Path
    python: Path
    ld_library_path: str | None = None

    @property
    def bin(self) -> Path:
        return self.prefix / "env" / "bin"

    @classmethod
    def load(cls, prefix: Path) -> LearnerEnv | None:
        """The environment recorded in ``prefix``, or None when ``make hub-deps`` has not built it."""
        try:
            stamp = json.loads((prefix / LEARNER_ENV_STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return cls(prefix=prefix, python=Path(stamp["python"]), ld_library_path=stamp.get("ld_library_path"))


@dataclass(frozen=True)
class Settings:
    """The workshop hub's settings; :meth:`from_env` reads and checks them."""

    state_dir: Path
    workshop_code: str
    admin_password: str
    prefix: Path = DEFAULT_PREFIX
    ip: str = "127.0.0.1"
    port: int = 8000
    hub_port: int = 8081
    proxy_api_port: int = 8001
    ssl_cert: Path | None = None
    ssl_key: Path | None = None
    public_http: bool = False
    admin: str = "instructor"
    home_base: Path = Path("/home")
    learner_group: str = "gradlab-learners"
    mem_limit: int = parse_size("2G")
    cpu_limit: float = 1.0
    pids_limit: int = 1024
    disk_quota: int = parse_size("2G")
    max_failures: int = 5
    max_failures_per_address: int = 60
    lockout: int = 300
    trusted_proxies: tuple[str, ...] = ()
    http_redirect_port: int | None = None  # None: 80 when the hub serves HTTPS on a public address
    cull_timeout: int = 3600
    cull_every: int = 300
    kernel_cull_timeout: int = 1200
    kernel_cull_every: int = 60
    max_accounts: int = 40
    max_servers: int = 40
    public_url: str | None = None
    block_metadata: bool = True
    cgroup_name: str = "gradlab-workshop"
    service_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if len(self.workshop_code) < MIN_CODE_LENGTH:
            raise SettingsError(f"GRADLAB_HUB_WORKSHOP_CODE must have at least {MIN_CODE_LENGTH} characters")
        if len(self.admin_password) < MIN_ADMIN_PASSWORD_LENGTH:
            raise SettingsError(f"GRADLAB_HUB_ADMIN_PASSWORD must have at least {MIN_ADMIN_PASSWORD_LENGTH} characters")
        if self.admin_password == self.workshop_code:
            raise SettingsError("the admin password and the workshop code must differ")
        if not re.match(USERNAME_PATTERN, self.admin):
            raise SettingsError(f"GRADLAB_HUB_ADMIN {self.admin!r} must match {USERNAME_PATTERN}")
        if (self.ssl_cert is None) != (self.ssl_key is None):
            raise SettingsError("set both GRADLAB_HUB_SSL_CERT and GRADLAB_HUB_SSL_KEY, or neither")
        if not self.loopback and not self.https and not self.public_http:
            raise SettingsError(
                f"GRADLAB_HUB_IP={self.ip} is reachable from other machines: give the hub a certificate "
                "(GRADLAB_HUB_SSL_CERT and GRADLAB_HUB_SSL_KEY), or, if a reverse proxy in front of it "
                "already serves HTTPS, say so with GRADLAB_HUB_PUBLIC_HTTP=1"
            )
        for name, port in (
            ("PORT", self.port),
            ("INTERNAL_PORT", self.hub_port),
            ("PROXY_API_PORT", self.proxy_api_port),
        ):
            if not 0 < port < 65536:
                raise SettingsError(f"GRADLAB_HUB_{name}={port} is not a TCP port")
        if len({self.port, self.hub_port, self.proxy_api_port}) != 3:
            raise SettingsError("GRADLAB_HUB_PORT, _INTERNAL_PORT and _PROXY_API_PORT must differ")
        if self.cpu_limit <= 0 or self.mem_limit <= 0:
            raise SettingsError("GRADLAB_HUB_MEM_LIMIT and GRADLAB_HUB_CPU_LIMIT must be positive")
        if self.pids_limit < 64:
            raise SettingsError(
                "GRADLAB_HUB_PIDS_LIMIT must be at least 64: a learner's server and kernels run tens of threads"
            )
        if self.disk_quota < 0:
            raise SettingsError("GRADLAB_HUB_DISK_QUOTA must be a size (0: no quota)")
        if self.max_failures < 1 or self.max_failures_per_address < 1 or self.lockout < 1:
            raise SettingsError(
                "GRADLAB_HUB_MAX_FAILURES, _MAX_FAILURES_PER_ADDRESS and _LOCKOUT (seconds) must be at least 1"
            )
        if self.cull_timeout <= 0 or self.cull_every <= 0:
            raise SettingsError("GRADLAB_HUB_CULL_TIMEOUT and GRADLAB_HUB_CULL_EVERY must be positive seconds")
        if self.kernel_cull_timeout <= 0 or self.kernel_cull_every <= 0:
            raise SettingsError(
                "GRADLAB_HUB_KERNEL_CULL_TIMEOUT and GRADLAB_HUB_KERNEL_CULL_EVERY must be positive seconds"
            )
        if self.max_accounts < 1 or self.max_servers < 1:
            raise SettingsError("GRADLAB_HUB_MAX_ACCOUNTS and GRADLAB_HUB_MAX_SERVERS must be at least 1")
        if self.http_redirect_port is not None and not 0 <= self.http_redirect_port < 65536:
            raise SettingsError(f"GRADLAB_HUB_HTTP_REDIRECT_PORT={self.http_redirect_port} is not a TCP port (0: none)")
        if self.public_url is not None:
            check_public_url(self.public_url)
        elif not self.loopback:
            raise SettingsError(
                f"GRADLAB_HUB_IP={self.ip} is not an address learners can type: set GRADLAB_HUB_PUBLIC_URL to the "
                "URL they open, e.g. GRADLAB_HUB_PUBLIC_URL=https://hub.example.org"
            )
        if not re.match(r"^[A-Za-z0-9_.-]+$", self.cgroup_name):
            raise SettingsError(f"GRADLAB_HUB_CGROUP {self.cgroup_name!r} must be a plain directory name")

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the hub."""
        try:
            return ipaddress.ip_address(self.ip).is_loopback
        except ValueError:
            return self.ip == "localhost"

    @property
    def https(self) -> bool:
        return self.ssl_cert is not None

    @property
    def redirect_port(self) -> int:
        """The port of the plain-HTTP redirect to the public URL (0: none); only when the hub serves HTTPS itself."""
        if not self.https or self.public_url is None or self.public_url.startswith("http:"):
            return 0
        if self.http_redirect_port is not None:
            return self.http_redirect_port
        return 0 if self.loopback else 80

    @property
    def url(self) -> str:
        """The address the hub listens on, as a URL (``https`` when the hub has a certificate)."""
        scheme = "https" if self.https else "http"
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{scheme}://{host}:{self.port}/"

    @property
    def learners_url(self) -> str:
        """The URL learners open: ``GRADLAB_HUB_PUBLIC_URL`` when set, else the (loopback) listening address."""
        return self.public_url.rstrip("/") + "/" if self.public_url else self.url

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read ``GRADLAB_HUB_*`` variables; secrets fall back to files in the state directory."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(f"GRADLAB_HUB_{name}")
            return value if value not in (None, "") else None

        def number(name: str, default: float, kind: type = int) -> float:
            text = get(name)
            if text is None:
                return default
            try:
                return kind(text)  # type: ignore[no-any-return]
            except ValueError:
                raise SettingsError(f"GRADLAB_HUB_{name}={text!r} is not a number") from None

        state_dir = Path(get("STATE_DIR") or WORKSHOP / "state").resolve()
        cert, key = get("SSL_CERT"), get("SSL_KEY")
        return cls(
            state_dir=state_dir,
            workshop_code=get("WORKSHOP_CODE")
            or read_secret(state_dir / WORKSHOP_CODE_FILE, "GRADLAB_HUB_WORKSHOP_CODE"),
            admin_password=get("ADMIN_PASSWORD")
            or read_secret(state_dir / ADMIN_PASSWORD_FILE, "GRADLAB_HUB_ADMIN_PASSWORD"),
            prefix=Path(get("PREFIX") or DEFAULT_PREFIX),
            ip=get("IP") or "127.0.0.1",
            port=int(number("PORT", 8000)),
            hub_port=int(number("INTERNAL_PORT", 8081)),
            proxy_api_port=int(number("PROXY_API_PORT", 8001)),
            ssl_cert=Path(cert).resolve() if cert else None,
            ssl_key=Path(key).resolve() if key else None,
            public_http=get("PUBLIC_HTTP") == "1",
            admin=get("ADMIN") or "instructor",
            home_base=Path(get("HOME_BASE") or "/home"),
            learner_group=get("GROUP") or "gradlab-learners",
            mem_limit=parse_size(get("MEM_LIMIT") or "2G"),
            cpu_limit=float(number("CPU_LIMIT", 1.0, float)),
            pids_limit=int(number("PIDS_LIMIT", 1024)),
            disk_quota=parse_size(get("DISK_QUOTA") or "2G"),
            max_failures=int(number("MAX_FAILURES", 5)),
            max_failures_per_address=int(number("MAX_FAILURES_PER_ADDRESS", 60)),
            lockout=int(number("LOCKOUT", 300)),
            http_redirect_port=int(number("HTTP_REDIRECT_PORT", 0)) if get("HTTP_REDIRECT_PORT") else None,
            trusted_proxies=tuple(p.strip() for p in (get("TRUSTED_PROXIES") or "").split(",") if p.strip()),
            cull_timeout=int(number("CULL_TIMEOUT", 3600)),
            cull_every=int(number("CULL_EVERY", 300)),
            kernel_cull_timeout=int(number("KERNEL_CULL_TIMEOUT", 1200)),
            kernel_cull_every=int(number("KERNEL_CULL_EVERY", 60)),
            max_accounts=int(number("MAX_ACCOUNTS", 40)),
            max_servers=int(number("MAX_SERVERS", 40)),
            public_url=get("PUBLIC_URL"),
            block_metadata=get("BLOCK_METADATA") != "0",
            cgroup_name=get("CGROUP") or "gradlab-workshop",
            service_token=get("SERVICE_TOKEN"),
        )


def check_public_url(url: str) -> None:
    """Refuse a ``GRADLAB_HUB_PUBLIC_URL`` learners cannot use, or one that sends passwords in clear text.

    Example::

        >>> check_public_url("https://hub.example.org")
        >>> check_public_url("http://hub.example.org")
        Traceback (most recent call last):
        ...
        gradlab_hub.settings.SettingsError: GRADLAB_HUB_PUBLIC_URL='http://hub.example.org' would send learners' passwords in clear text: use https://
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"GRADLAB_HUB_PUBLIC_URL={url!r} is not a URL; write e.g. https://hub.example.org")
    if parts.query or parts.fragment:
        raise SettingsError(f"GRADLAB_HUB_PUBLIC_URL={url!r} has a query or fragment; give the hub's base URL only")
    try:
        unspecified = ipaddress.ip_address(parts.hostname).is_unspecified
        loopback = ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        unspecified, loopback = False, parts.hostname == "localhost"
    if unspecified:
        raise SettingsError(
            f"GRADLAB_HUB_PUBLIC_URL={url!r} names no machine: give the DNS name learners type, "
            "e.g. https://hub.example.org"
        )
    if parts.scheme == "http" and not loopback:
        raise SettingsError(
            f"GRADLAB_HUB_PUBLIC_URL={url!r} would send learners' passwords in clear text: use https://"
        )


def read_secret(path: Path, variable: str) -> str:
    """A secret from a file ``make hub`` wrote; a clear error when neither file nor variable exists."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise SettingsError(f"set {variable}, or start the hub with 'make hub', which creates {path.name}") from None
