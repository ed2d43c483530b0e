"""First-use accounts behind a workshop code, and one Unix account per learner.

JupyterHub's built-in ``SharedPasswordAuthenticator`` lets anyone who knows the
shared password log in as *any* non-admin user, so learners could open each other's
servers. Here the shared secret (the workshop code) only *creates* an account:

1. A learner picks a user name and a password and types the workshop code (the
   login form's extra field). The name is theirs from then on; the password is
   stored as a salted scrypt hash.
2. Later logins need that personal password; the workshop code no longer helps.
3. Admin names (``Authenticator.admin_users``) log in only with the admin password,
   which is separate from the workshop code; learners can never claim them.
4. Failed sign-ins are counted per user name and per address (:class:`SignInThrottle`):
   after ``max_failures_per_user`` (5) failures within ``failure_window`` (15 minutes)
   for one name, or ``max_failures_per_address`` (60) from one address, that name or
   address is locked out for ``lockout_seconds`` (5 minutes, doubling at each new lockout,
   at most an hour), and every attempt meanwhile is refused *before* any scrypt runs.
   A room behind one NAT shares an address, hence the larger count per address. The
   instructor's password reset lifts a learner's lockout.

:class:`WorkshopAuthenticator` works anywhere (also on Zero to JupyterHub, where each
learner is a pod). :class:`LocalWorkshopAuthenticator` adds what one machine needs:
each learner becomes a Unix account in one group, with a home directory only they can
read (mode 0700); a name that already belongs to another Unix account (``root``,
``www-data``, a colleague) is refused.

A learner who forgot their password gets a new one from the instructor (as root, on
the hub's machine; the hub need not restart)::

    python -m gradlab_hub.accounts reset NAME      # prints a new password for NAME
    python -m gradlab_hub.accounts list            # the learners who have an account
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import fcntl
import grp
import hashlib
import ipaddress
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyterhub.auth import Authenticator, LocalAuthenticator
from tornado import web
from traitlets import Integer, List, Unicode, default

__all__ = [
    "USERNAME_PATTERN",
    "LocalWorkshopAuthenticator",
    "PasswordStore",
    "SignInThrottle",
    "WorkshopAuthenticator",
    "client_address",
]

_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}
# Names learners may choose (they become Unix account names): lower case, starts with
# a letter, 2 to 32 characters.
USERNAME_PATTERN = r"^[a-z][a-z0-9_-]{1,31}$"
# Temporary passwords the instructor reads out: no 0/O, 1/l/I, no case to get wrong.
_READABLE = "abcdefghjkmnpqrstuvwxyz23456789"


class PasswordStore:
    """Learners' personal passwords as salted scrypt hashes in one JSON file (mode 0600).

    Example::

        >>> import tempfile
        >>> store = PasswordStore(Path(tempfile.mkdtemp()) / "passwords.json")
        >>> store.set("ada", "correct horse")
        >>> store.verify("ada", "correct horse"), store.verify("ada", "wrong"), store.verify("bob", "x")
        (True, False, False)
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        if not isinstance(data, dict):
            raise ValueError(f"{self.path} is not a JSON object of name: hash")
        return data

    def __contains__(self, name: object) -> bool:
        return name in self._load()

    def names(self) -> list[str]:
        """The accounts that have a password, sorted."""
        return sorted(self._load())

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # The hub and the instructor's reset command may write at the same moment.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def set(self, name: str, password: str) -> None:
        salt = secrets.token_bytes(16)
        digest = hashlib.scrypt(password.encode(), salt=salt, **_SCRYPT)
        with self._locked():
            hashes = self._load()
            hashes[name] = "scrypt$" + base64.b64encode(salt).decode() + "$" + base64.b64encode(digest).decode()
            partial = self.path.with_name(self.path.name + ".new")
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(hashes, out, indent=1, sort_keys=True)
            os.replace(partial, self.path)

    def reset(self, name: str) -> str:
        """Give ``name`` a new random password (12 easy-to-read characters) and return it.

        Only an existing account can be reset, so a typo cannot create one.

        Example::

            >>> import tempfile
            >>> store = PasswordStore(Path(tempfile.mkdtemp()) / "passwords.json")
            >>> store.set("ada", "forgotten one")
            >>> new = store.reset("ada")
            >>> store.verify("ada", new), store.verify("ada", "forgotten one")
            (True, False)
        """
        if name not in self:
            raise KeyError(name)
        password = "".join(secrets.choice(_READABLE) for _ in range(12))
        self.set(name, password)
        return password

    def stamp(self, name: str) -> str | None:
        """The stored hash of ``name`` (no scrypt runs): it changes when the password is reset."""
        return self._load().get(name)

    def verify(self, name: str, password: str) -> bool:
        stored = self._load().get(name)
        if stored is None:
            return False
        _, salt, digest = stored.split("$")
        fresh = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), **_SCRYPT)
        return secrets.compare_digest(fresh, base64.b64decode(digest))


@dataclass
class _Record:
    failures: deque[float] = field(default_factory=deque)
    locked_until: float = 0.0
    lockouts: int = 0
    stamp: str | None = None  # the user's password hash when locked: a reset lifts the lockout


class SignInThrottle:
    """Failed sign-ins per user name and per address, and the lockouts they earn.

    Example::

        >>> now = [0.0]
        >>> throttle = SignInThrottle(per_user=2, per_address=3, window=60, lockout=10, clock=lambda: now[0])
        >>> throttle.failed("ada", "10.0.0.1"); throttle.wait("ada", "10.0.0.1")
        0.0
        >>> throttle.failed("ada", "10.0.0.1"); throttle.wait("ada", "10.0.0.2")  # ada is locked, from anywhere
        10.0
        >>> throttle.failed("bob", "10.0.0.1"); throttle.wait("cy", "10.0.0.1")  # the address's 3rd failure
        10.0
        >>> now[0] = 10.0; throttle.wait("ada", "10.0.0.2"), throttle.wait("cy", "10.0.0.1")
        (0.0, 0.0)
    """

    def __init__(
        self,
        *,
        per_user: int = 5,
        per_address: int = 60,
        window: float = 900,
        lockout: float = 300,
        max_lockout: float = 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = {"user": per_user, "address": per_address}
        self.window, self.lockout, self.max_lockout = window, lockout, max_lockout
        self.clock = clock
        self.records: dict[tuple[str, str], _Record] = {}

    def _keys(self, name: str | None, address: str | None) -> Iterable[tuple[str, str]]:
        if name:
            yield ("user", name)
        if address:
            yield ("address", address)

    def wait(self, name: str | None, address: str | None, stamp: str | None = None) -> float:
        """Seconds until ``name`` and ``address`` may try again (0: now); ``stamp``: the user's current hash."""
        now, longest = self.clock(), 0.0
        for key in self._keys(name, address):
            record = self.records.get(key)
            if record is None or record.locked_until <= now:
                continue
            if key[0] == "user" and stamp is not None and record.stamp is not None and stamp != record.stamp:
                self.records.pop(key)  # the instructor reset the password
                continue
            longest = max(longest, record.locked_until - now)
        return longest

    def failed(self, name: str | None, address: str | None, stamp: str | None = None) -> None:
        """Count one failed sign-in against ``name`` and ``address``; lock out whichever reached its limit."""
        now = self.clock()
        if len(self.records) > 10_000:  # many addresses: forget what no longer counts
            self.records = {
                k: r
                for k, r in self.records.items()
                if r.locked_until > now or (r.failures and r.failures[-1] > now - self.window)
            }
        for key in self._keys(name, address):
            record = self.records.setdefault(key, _Record())
            record.failures.append(now)
            while record.failures and record.failures[0] <= now - self.window:
                record.failures.popleft()
            if len(record.failures) >= self.limits[key[0]]:
                record.lockouts += 1
                record.locked_until = now + min(self.lockout * 2 ** (record.lockouts - 1), self.max_lockout)
                record.failures.clear()
                record.stamp = stamp

    def succeeded(self, name: str) -> None:
        """A right password: the name's failures and lockouts are forgotten (the address's are not)."""
        self.records.pop(("user", name), None)


def client_address(handler: Any, trusted: Iterable[str] = ()) -> str | None:
    """The sign-in's client address, as the proxies in front of the hub saw it; None without a request.

    JupyterHub's proxy appends the address of whoever connected to it to
    ``X-Forwarded-For``, so the list is read from its right end: addresses of proxies
    on this machine (loopback) and of ``trusted`` ones are skipped, and the first other
    one is the client. Entries to its left, and ``X-Real-Ip``, come from the client
    and are not believed.
    """
    request = getattr(handler, "request", None)
    if request is None:
        return None
    hops = [_plain(hop) for hop in request.headers.get("X-Forwarded-For", "").split(",") if hop.strip()]
    skip = {_plain(hop) for hop in trusted}
    for hop in reversed(hops):
        if hop in skip or _loopback(hop):
            continue
        return hop
    return hops[0] if hops else getattr(request, "remote_ip", None)


def _plain(hop: str) -> str:
    """An address as one spelling: ``::ffff:203.0.113.7`` (IPv4 on a dual-stack socket) is ``203.0.113.7``."""
    hop = hop.strip()
    try:
        address = ipaddress.ip_address(hop)
    except ValueError:
        return hop
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def _loopback(hop: str) -> bool:
    try:
        return ipaddress.ip_address(hop).is_loopback
    except ValueError:
        return hop == "localhost"


class WorkshopAuthenticator(Authenticator):  # type: ignore[misc]
    """First-use accounts: the workshop code creates an account, a personal password keeps it."""

    workshop_code = Unicode(
        "", config=True, help="Shared code a learner types once, to create their account (8+ characters)."
    )
    admin_password = Unicode(
        "", config=True, help="Password of the admin_users (32+ characters); learners never get it."
    )
    password_file = Unicode(
        "workshop-passwords.json", config=True, help="Where learners' password hashes are kept (mode 0600)."
    )
    min_password_length = Integer(12, config=True, help="Shortest personal password a learner may choose.")
    max_failures_per_user = Integer(
        5, config=True, help="Failed sign-ins for one name within failure_window before it is locked out."
    )
    max_failures_per_address = Integer(
        60, config=True, help="Failed sign-ins from one address within failure_window before it is locked out."
    )
    failure_window = Integer(900, config=True, help="Seconds over which failed sign-ins are counted.")
    lockout_seconds = Integer(
        300, config=True, help="First lockout, in seconds; each further one doubles, up to an hour."
    )
    trusted_proxies = List(
        Unicode(), config=True, help="Addresses of reverse proxies in front of the hub (loopback ones always are)."
    )
    max_accounts = Integer(
        40, config=True, help="Most accounts the workshop code may create; beyond, first sign-ins are refused."
    )

    @default("request_otp")
    def _request_otp(self) -> bool:
        return True  # the login form's extra field carries the workshop code

    @default("otp_prompt")
    def _otp_prompt(self) -> str:
        return "Workshop code (first sign-in only):"

    @default("allow_all")
    def _allow_all(self) -> bool:
        return True  # anyone with the workshop code may create an account; that is the point

    @default("username_pattern")
    def _username_pattern(self) -> str:
        return USERNAME_PATTERN

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.username_regex is None and self.username_pattern:
            # Authenticator compiles the pattern only when it is *set*; ours is a default.
            self.username_regex = re.compile(self.username_pattern)
        self._first_use = asyncio.Lock()
        self.throttle = SignInThrottle(
            per_user=self.max_failures_per_user,
            per_address=self.max_failures_per_address,
            window=self.failure_window,
            lockout=self.lockout_seconds,
        )

    @property
    def store(self) -> PasswordStore:
        return PasswordStore(Path(self.password_file))

    def name_is_available(self, name: str) -> bool:
        """Whether a new learner may take ``name``; :class:`LocalWorkshopAuthenticator` checks Unix accounts."""
        return True

    async def authenticate(self, handler: Any, data: dict[str, str]) -> dict[str, Any] | None:
        name = self.normalize_username(data.get("username", ""))
        password = data.get("password", "")
        address = client_address(handler, self.trusted_proxies)
        if not self.validate_username(name):
            self.throttle.failed(None, address)
            return None
        store = self.store
        admin = name in self.admin_users
        stamp = None if admin else store.stamp(name)
        # An admin name is never locked by its own failures (anyone could lock the instructor
        # out); its password is 32+ random characters, and the address lockout still applies.
        wait = self.throttle.wait(None if admin else name, address, stamp)
        if wait:
            self.log.warning("Sign-in as %r from %s refused: locked out for %.0f s more", name, address, wait)
            raise web.HTTPError(
                429,
                f"Too many failed sign-ins: try again in {max(1, round(wait / 60))} minute(s), "
                "or ask your instructor to reset your password.",
            )
        result = await self._check(name, password, data.get("otp", ""), store, admin)
        if result is None:
            self.throttle.failed(None if admin else name, address, stamp)
        elif not admin:
            self.throttle.succeeded(name)
        return result

    async def _check(
        self, name: str, password: str, code: str, store: PasswordStore, admin: bool
    ) -> dict[str, Any] | None:
        """The sign-in itself, once the throttle let it through: the user, or None for a wrong secret."""
        if admin:
            ok = bool(self.admin_password) and secrets.compare_digest(password, self.admin_password)
            return {"name": name, "admin": True} if ok else None
        if name in store:
            ok = await asyncio.to_thread(store.verify, name, password)
            return {"name": name, "admin": False} if ok else None
        async with self._first_use:  # two first sign-ins with one name: only one gets it
            if name in store:
                return None
            if not (self.workshop_code and secrets.compare_digest(code, self.workshop_code)):
                self.log.warning("First sign-in as %r without the right workshop code", name)
                return None
            if len(store.names()) >= self.max_accounts:
                self.log.warning("First sign-in as %r refused: %d accounts exist already", name, self.max_accounts)
                raise web.HTTPError(
                    403, f"This workshop is full ({self.max_accounts} accounts); ask your instructor for help."
                )
            if len(password) < self.min_password_length:
                raise web.HTTPError(403, f"Choose a password of at least {self.min_password_length} characters.")
            if not self.name_is_available(name):
                raise web.HTTPError(403, f"The name {name!r} is taken on this machine; choose another one.")
            await asyncio.to_thread(store.set, name, password)
            self.log.info("New learner account %r", name)
            return {"name": name, "admin": False}


class LocalWorkshopAuthenticator(LocalAuthenticator, WorkshopAuthenticator):  # type: ignore[misc]
    """First-use accounts that are Unix accounts, so learners cannot read each other's files.

    Each learner (and the admin) gets a Unix account in ``learner_group`` with the home
    directory ``{home_base}/{name}``, mode 0700. Names of existing Unix accounts outside
    that group are refused; an existing home directory without its account is never
    handed to a new one.
    """

    learner_group = Unicode("gradlab-learners", config=True, help="Unix group of the accounts this hub creates.")
    home_base = Unicode("/home", config=True, help="Directory that holds the learners' home directories.")

    @default("create_system_users")
    def _create_system_users(self) -> bool:
        return True

    def is_workshop_account(self, name: str) -> bool:
        try:
            entry = pwd.getpwnam(name)
            group = grp.getgrnam(self.learner_group)
        except KeyError:
            return False
        return group.gr_gid in os.getgrouplist(name, entry.pw_gid)

    def name_is_available(self, name: str) -> bool:
        try:
            pwd.getpwnam(name)
        except KeyError:
            return True
        return self.is_workshop_account(name)

    async def add_user(self, user: Any) -> None:
        if self.system_user_exists(user) and not self.is_workshop_account(user.name):
            raise ValueError(f"{user.name!r} is a Unix account this hub did not create; it cannot be a learner")
        await super().add_user(user)

    def add_system_user(self, user: Any) -> None:
        name = user.name
        home = Path(self.home_base) / name
        if home.exists():
            raise RuntimeError(
                f"{home} exists but no Unix account {name!r} does: restore that account or remove the directory"
            )
        try:
            grp.getgrnam(self.learner_group)
        except KeyError:
            self._run(["groupadd", self.learner_group])
        Path(self.home_base).mkdir(mode=0o755, parents=True, exist_ok=True)
        self._run(
            [
                "useradd",
                "--create-home",
                "--home-dir",
                str(home),
                "--shell",
                shutil.which("bash") or "/bin/sh",
                "--user-group",
                "--groups",
                self.learner_group,
                "--comment",
                "gradlab workshop",
                "--key",
                "HOME_MODE=0700",
                name,
            ]
        )
        os.chmod(home, 0o700)  # whatever useradd's defaults say, only the learner reads their home
        self.log.info("Created Unix account %s (home %s, mode 0700)", name, home)

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    """``python -m gradlab_hub.accounts reset NAME`` and ``list``: the instructor's account commands."""
    default_file = Path(os.environ.get("GRADLAB_HUB_STATE_DIR") or Path(__file__).resolve().parent.parent / "state")
    parser = argparse.ArgumentParser(prog="python -m gradlab_hub.accounts", description=main.__doc__)
    parser.add_argument(
        "--password-file",
        type=Path,
        default=default_file / "workshop-passwords.json",
        help="the hub's password file (default: %(default)s)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    reset = commands.add_parser("reset", help="give a learner who forgot their password a new one, and print it")
    reset.add_argument("name")
    commands.add_parser("list", help="the learners who have an account")
    options = parser.parse_args(argv)
    store = PasswordStore(options.password_file)
    if not options.password_file.exists():
        print(f"accounts: no password file at {options.password_file}; pass --password-file", file=sys.stderr)
        return 2
    if options.command == "list":
        print("\n".join(store.names()))
        return 0
    try:
        password = store.reset(options.name)
    except KeyError:
        print(
            f"accounts: no account {options.name!r}; the learners with an account: "
            f"{', '.join(store.names()) or 'none'}",
            file=sys.stderr,
        )
        return 2
    print(f"new password for {options.name}: {password}")
    print("(they sign in with it, without the workshop code; their files are unchanged)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
