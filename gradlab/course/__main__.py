"""``python -m gradlab.course COMMAND``: the course's command line.

Commands:
  lab             open the course in JupyterLab (``python -m gradlab.course lab --help``)
  workshop-link   print an nbgitpuller link that puts the course into each learner's
                  JupyterHub home (``python -m gradlab.course workshop-link --help``)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

_COMMANDS = {"lab": "gradlab.course.lab", "workshop-link": "gradlab.course.workshop"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the return value is the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if args else 2
    command, rest = args[0], args[1:]
    module = _COMMANDS.get(command)
    if module is None:
        print(f"gradlab.course: unknown command {command!r}; choose one of {', '.join(_COMMANDS)}", file=sys.stderr)
        return 2
    result: int = importlib.import_module(module).main(rest)
    return result


if __name__ == "__main__":
    sys.exit(main())
