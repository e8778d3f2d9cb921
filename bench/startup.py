"""Start-up of a one-record `ppt sanitize`, as whole processes, against `python -c "import ppt"`.

    python bench/startup.py                       # this checkout: rantext, santext+, custext+ (median of 10)
    python bench/startup.py --ref /work/main      # and a second checkout, interleaved: before/after in one run
    python bench/startup.py --mechs rantext tem --runs 5

Each run is ``echo '{"text":"hi"}' | python -m ppt.cli.main sanitize --mech M --quiet`` with PYTHONPATH set
to the checkout (so a second checkout is timed under the same interpreter and cache), after one untimed
warm-up run per (checkout, mechanism) that builds or reads the cache tables (warm cache). Runs of the
checkouts are interleaved (this, ref, this, ref, ...) so load from other processes affects both alike.
Printed: the median wall time in seconds of ``--runs`` runs per (checkout, mechanism), ``python -c
"import ppt"`` and ``python -c "import torch"`` as baselines, the ratio to ``import ppt`` and, with
``--ref``, the ratio ref / this. Bytecode: by default compiled once into a temporary PYTHONPYCACHEPREFIX
(as an installed package has it); ``--source-only`` keeps the environment's setting. Nothing here is a
test; the target (issue 13) is <= 1.0 s on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RECORD = '{"text":"hi"}\n'


PYC_ENV: dict[str, str | None] = {}  # set by main(): where compiled bytecode goes (see --source-only)


def timed(cmd: list[str], root: Path, stdin: str = "") -> float:
    env = {**os.environ, "PYTHONPATH": str(root), **{k: v for k, v in PYC_ENV.items() if v is not None}}
    for k, v in PYC_ENV.items():
        if v is None:
            env.pop(k, None)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=root)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {root} (exit {r.returncode}):\n{r.stderr[-2000:]}")
    return dt


def sanitize_cmd(mech: str) -> list[str]:
    return [sys.executable, "-m", "ppt.cli.main", "sanitize", "--mech", mech, "--quiet"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mechs", nargs="+", default=["rantext", "santext+", "custext+"])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per (checkout, mechanism); the median is printed")
    ap.add_argument("--ref", type=Path, default=None, help="a second checkout (e.g. /work/main) timed in the same run")
    ap.add_argument(
        "--source-only",
        action="store_true",
        help="keep this environment's bytecode setting (PYTHONDONTWRITEBYTECODE=1 recompiles every ppt "
        "module on every run); by default bytecode is written under a temporary "
        "PYTHONPYCACHEPREFIX, as an installed package has it (no file is written in either checkout)",
    )
    args = ap.parse_args()
    if not args.source_only:
        import tempfile

        PYC_ENV.update(
            {"PYTHONDONTWRITEBYTECODE": None, "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="ppt-startup-pyc-")}
        )
    here = Path(__file__).resolve().parents[1]
    roots = {"this": here} if args.ref is None else {"this": here, "ref": args.ref.resolve()}
    jobs: dict[tuple[str, str], list[str]] = {}
    for label in roots:
        jobs[(label, "import ppt")] = [sys.executable, "-c", "import ppt"]
        for m in args.mechs:
            jobs[(label, m)] = sanitize_cmd(m)
    jobs[("this", "import torch")] = [sys.executable, "-c", "import torch"]
    times: dict[tuple[str, str], list[float]] = {k: [] for k in jobs}
    for (label, what), cmd in jobs.items():  # warm-up: caches built or read, files in the page cache
        print(f"warm-up {label}: {what}", file=sys.stderr)
        timed(cmd, roots[label], RECORD)
    for i in range(args.runs):
        print(f"run {i + 1}/{args.runs}", file=sys.stderr)
        for what in ["import ppt", "import torch", *args.mechs]:
            for label in roots:
                if (label, what) in jobs:
                    times[(label, what)].append(timed(jobs[(label, what)], roots[label], RECORD))
    med = {k: statistics.median(v) for k, v in times.items()}
    pyc = "source only (no bytecode)" if args.source_only else "bytecode cached"
    print(
        f"one-record start-up, median of {args.runs} runs (s); python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {pyc}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    head = f"{'':14}{'this':>9}{'x import ppt':>14}"
    if args.ref:
        head += f"{'ref':>9}{'x import ppt':>14}{'ref/this':>10}"
    print(head)
    for what in ["import ppt", "import torch", *args.mechs]:
        row = f"{what:14}{med[('this', what)]:9.3f}{med[('this', what)] / med[('this', 'import ppt')]:14.2f}"
        if args.ref and ("ref", what) in med:
            ref = med[("ref", what)]
            row += f"{ref:9.3f}{ref / med[('ref', 'import ppt')]:14.2f}{ref / med[('this', what)]:10.2f}"
        print(row)
    if args.ref:
        print(f"this = {here}, ref = {roots['ref']}")


if __name__ == "__main__":
    main()
