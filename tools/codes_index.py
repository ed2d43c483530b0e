"""Write docs/codes.md, the index of gradlab's error codes, from gradlab/codes.py (the one table).

python tools/codes_index.py          # rewrite docs/codes.md
python tools/codes_index.py --check  # exit 1 if docs/codes.md is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradlab.codes import index_markdown  # noqa: E402

TARGET = ROOT / "docs" / "codes.md"


def main(argv: list[str]) -> int:
    text = index_markdown()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print("docs/codes.md is out of date: run python tools/codes_index.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
