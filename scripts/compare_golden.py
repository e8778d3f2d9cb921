"""Compare golden files against another git revision: record text, alignment and every non-ppt field
must be identical; report stamp sizes (bytes of the ``ppt`` object per record) old vs new.

Usage: python scripts/compare_golden.py [REV]   (default HEAD)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden"


def main(rev: str = "HEAD") -> int:
    bad = 0
    print(f"{'config':22} {'records':>7} {'same text+fields':>16} {'old B/rec':>9} {'new B/rec':>9}")
    for path in sorted(GOLDEN.glob("*.jsonl")):
        rel = path.relative_to(GOLDEN.parent.parent.parent)
        old_text = subprocess.run(["git", "show", f"{rev}:{rel}"], capture_output=True, text=True, check=True).stdout
        old = [json.loads(x) for x in old_text.splitlines()]
        new = [json.loads(x) for x in path.read_text().splitlines()]
        same = len(old) == len(new) and all(
            {k: v for k, v in a.items() if k != "ppt"} == {k: v for k, v in b.items() if k != "ppt"}
            for a, b in zip(old, new)
        )
        bad += not same

        def size(recs):
            return sum(len(json.dumps(r.get("ppt"), separators=(",", ":"), ensure_ascii=False).encode()) for r in recs) / max(1, len(recs))

        print(f"{path.stem:22} {len(new):7d} {str(same):>16} {size(old):9.0f} {size(new):9.0f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
