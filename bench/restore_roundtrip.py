#!/usr/bin/env python
"""Surrogate and placeholder restore when nothing rewrites the text (issue 35): each prompt is sanitized with a
mapping, the sanitized text itself is handed to ``ppt restore``, and the restored text must equal the prompt byte
for byte. Prints, per mode and set, how many prompts came back exactly.

    python bench/restore_roundtrip.py [--set freeform|none|outside] [--split tune|report] [-n N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    import pii_sets

    from ppt.rng import record_generator
    from ppt.stages.restore import restore_text
    from ppt.stages.sanitize_spec import DEFAULT_DETECTORS, SanitizeSpec

    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="freeform", choices=("outside", "freeform", "none"))
    ap.add_argument("--split", default="tune", choices=("tune", "report"))
    ap.add_argument("-n", type=int, default=None)
    a = ap.parse_args()
    records, _ = pii_sets.load(a.set, a.split, a.n, None, None)
    texts = [r["text"] for r in records]
    for mech in ("placeholder", "surrogate"):
        spec = SanitizeSpec(mech, protect="detected", detect=DEFAULT_DETECTORS)
        m = spec.build_mechanism(quiet=True)
        m.prepare()
        outs = m.sanitize_batch(texts, [record_generator(7, i) for i in range(len(texts))])
        exact = sum(restore_text(o.text, o.mapping or [])[0] == t for o, t in zip(outs, texts))
        print(f"{a.set} {a.split} {mech}: {exact}/{len(texts)} prompts restored byte for byte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
