#!/usr/bin/env python
"""Rerun the privacy-utility sweep committed under docs/sweep/ (results.csv, privacy_utility.png,
config.json). Same as `ppt eval sweep --out-dir docs/sweep`; --plot-only redraws the PNG and results.md from the CSV.

    python scripts/run_sweep.py                  # ~15-30 min on a 2-core CPU
    python scripts/run_sweep.py --plot-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=str(ROOT / "docs" / "sweep"))
    ap.add_argument("--plot-only", action="store_true", help="redraw privacy_utility.png and results.md from results.csv")
    ap.add_argument("--mech", action="append", help="mechanism (repeatable; default: all five)")
    ap.add_argument("--eps", action="append", type=float, help="eps (repeatable; default 1, 3, 6, 10)")
    ap.add_argument("--n-docs", type=int, default=100)
    args = ap.parse_args()

    from ppt.experiments.plot import read_csv
    from ppt.experiments.sweep import SweepConfig, run_sweep, write_outputs
    from ppt.log import install_cli_handlers

    install_cli_handlers()  # progress notes as `ppt: note: sweep: ...` on stderr

    out = Path(args.out_dir)
    if args.plot_only:
        write_outputs(read_csv(out / "results.csv"), out)
        return 0
    cfg = SweepConfig(n_docs=args.n_docs)
    if args.mech:
        cfg.mechanisms = args.mech
    if args.eps:
        cfg.eps = args.eps
    rows = run_sweep(cfg, out)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
