"""The workshop code ``make hub`` generates: an adjective, an animal and two digits, e.g. ``amber-otter-42``.

The instructor reads it aloud and writes it on the first slide; learners type it once,
to create their account. So it is made of words a room can say and spell: 256
adjectives (``words/adjectives.txt``) and 256 animals (``words/animals.txt``), both
committed, lower case, no two alike, and two digits from 2 to 9 (no 0/O, no 1/l),
chosen with :mod:`secrets`.

Entropy: 8 + 8 + 6 = **22 bits** (4,194,304 codes). That is enough for what the code
guards: it creates an account (at most ``GRADLAB_HUB_MAX_ACCOUNTS``), it never opens an
existing one, and every wrong guess counts against the guesser's address, which is
locked out after 60 failures in 15 minutes, for 5 minutes doubling up to an hour
(:class:`gradlab_hub.accounts.SignInThrottle`): from one address, about 1,600 guesses a
day, so on average some 1,300 address-days to find the code, which the instructor
changes once the room is in (RUNSHEET.md). An instructor who wants more sets
``GRADLAB_HUB_WORKSHOP_CODE`` to a code of their own.
"""

from __future__ import annotations

import math
import secrets
from pathlib import Path

__all__ = ["ADJECTIVES", "ANIMALS", "DIGITS", "bits", "words", "workshop_code"]

WORDS = Path(__file__).resolve().parent / "words"
DIGITS = "23456789"


def words(name: str) -> list[str]:
    """The committed word list ``words/{name}.txt`` (comment lines start with ``#``)."""
    lines = (WORDS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


ADJECTIVES = words("adjectives")
ANIMALS = words("animals")


def workshop_code() -> str:
    """A new code, e.g. ``amber-otter-42``."""
    number = secrets.choice(DIGITS) + secrets.choice(DIGITS)
    return f"{secrets.choice(ADJECTIVES)}-{secrets.choice(ANIMALS)}-{number}"


def bits() -> float:
    """The code's entropy in bits (every part chosen uniformly and independently).

    Example::

        >>> bits()
        22.0
    """
    return math.log2(len(ADJECTIVES) * len(ANIMALS) * len(DIGITS) ** 2)
