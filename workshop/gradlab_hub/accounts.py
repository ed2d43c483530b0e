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
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jupyterhub.auth import Authenticator, LocalAuthenticator
from tornado import web
from traitlets import Integer, Unicode, default

__all__ = ["USERNAME_PATTERN", "LocalWorkshopAuthenticator", "PasswordStore", "WorkshopAuthenticator"]

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

    def verify(self, name: str, password: str) -> bool:
        stored = self._load().get(name)
        if stored is None:
            return False
        _, salt, digest = stored.split("$")
        fresh = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), **_SCRYPT)
        return secrets.compare_digest(fresh, base64.b64decode(digest))


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
    min_password_length = Integer(8, config=True, help="Shortest personal password a learner may choose.")
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

    @property
    def store(self) -> PasswordStore:
        return PasswordStore(Path(self.password_file))

    def name_is_available(self, name: str) -> bool:
        """Whether a new learner may take ``name``; :class:`LocalWorkshopAuthenticator` checks Unix accounts."""
        return True

    async def authenticate(self, handler: Any, data: dict[str, str]) -> dict[str, Any] | None:
        name = self.normalize_username(data.get("username", ""))
        password = data.get("password", "")
        if not self.validate_username(name):
            return None
        if name in self.admin_users:
            ok = bool(self.admin_password) and secrets.compare_digest(password, self.admin_password)
            return {"name": name, "admin": True} if ok else None
        store = self.store
        if name in store:
            ok = await asyncio.to_thread(store.verify, name, password)
            return {"name": name, "admin": False} if ok else None
        async with self._first_use:  # two first sign-ins with one name: only one gets it
            if name in store:
                return None
            code = data.get("otp", "")
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
