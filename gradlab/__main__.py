"""``python -m gradlab``: see :mod:`gradlab.cli` (``python -m gradlab --help``)."""

import sys

from gradlab.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
