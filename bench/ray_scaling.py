#!/usr/bin/env python
"""Records/s of `ppt sanitize --engine ray` with 1, 2, 4, 8 actors against the local single process, in one
run (prints times and ratios; not a timed test).

The same seeded job (default custext+ eps 3 on its cached default space, --batch-size 64) over N records
built from examples/prompts.jsonl, split into S JSONL shards:
  - local: ``run_stream`` in this process over the concatenated shards (what ``--engine local`` runs);
  - ray: ``run_stage_on_ray`` on one local cluster started once (``ray.init(num_cpus=max(actors))``, so 8
    actors get 8 logical CPU slots even on a 2-core machine), end to end: line counting, actor start-up
    (each actor imports torch and loads the space and tables), processing and the ordered write.
Each ray run's output is checked byte for byte against the local one. Cluster start-up is printed apart;
"first results after" is when the driver got its first results in input order (line counting, actors
starting and preparing, and the first block). At a few thousand records the fixed start-up (each actor
imports torch and loads its tables) dominates; give --records enough for minutes of work to see scaling.
Ray sets OMP_NUM_THREADS=1 in its workers; the local process keeps torch's default threads.

    python bench/ray_scaling.py [--records 4000] [--shards 8] [--actors 1,2,4,8] [--mech custext+ --eps 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_shards(directory: Path, n: int, shards: int) -> bytes:
    prompts = [json.loads(x) for x in (ROOT / "examples" / "prompts.jsonl").read_text().splitlines() if x.strip()]
    per = -(-n // shards)
    for s in range(shards):
        rows = [
            json.dumps({"id": i, "text": f"{prompts[i % len(prompts)]['text']} Ticket {i}."})
            for i in range(s * per, min(n, (s + 1) * per))
        ]
        (directory / f"shard-{s:03d}.jsonl").write_text("".join(r + "\n" for r in rows))
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.jsonl")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=4000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--actors", default="1,2,4,8")
    ap.add_argument("--mech", default="custext+")
    ap.add_argument("--eps", type=float, default=3.0)
    ap.add_argument("--batch-size", type=int, default=64)
    a = ap.parse_args()
    actor_counts = [int(x) for x in a.actors.split(",")]

    import logging

    import ray
    import torch

    from ppt.exec.ray import RayOptions, run_stage_on_ray
    from ppt.exec.recipes import SanitizeRecipe
    from ppt.io import StreamArgs, run_stream

    recipe = SanitizeRecipe(a.mech, a.eps, seed=1)
    args = StreamArgs(batch_size=a.batch_size, quiet=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in"
        src.mkdir()
        data = make_shards(src, a.records, a.shards)
        print(
            f"{a.records:,} records ({len(data) / 1e6:.1f} MB) in {a.shards} shards; {a.mech} eps {a.eps:g}, "
            f"batch {a.batch_size}; {os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f}), "
            f"torch threads {torch.get_num_threads()}"
        )

        t0 = time.perf_counter()
        stage = recipe()
        out = io.BytesIO()
        code = run_stream(
            dataclasses.replace(args, input="-", output="-"),
            stage,
            desc="sanitize",
            _stdin=io.BytesIO(data),
            _stdout=out,
            _stderr=io.StringIO(),
        )
        t_local = time.perf_counter() - t0
        assert code == 0
        expected = out.getvalue()
        rate_local = a.records / t_local
        print(f"local single process      {t_local:7.1f} s  {rate_local:8.1f} rec/s  1.00x")

        t0 = time.perf_counter()
        ray.init(num_cpus=max(actor_counts), include_dashboard=False, log_to_driver=False)
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        print(f"(ray cluster start-up     {time.perf_counter() - t0:7.1f} s, not counted below)")
        try:
            for n in actor_counts:
                dest = Path(tmp) / f"out-{n}"
                t0 = time.perf_counter()
                code = run_stage_on_ray(
                    dataclasses.replace(args, input=str(src), output=str(dest)),
                    recipe,
                    options=RayOptions(actors=n),
                    desc="sanitize",
                    _stderr=io.StringIO(),
                )
                dt = time.perf_counter() - t0
                got = b"".join(p.read_bytes() for p in sorted(dest.glob("part-*.jsonl")))
                same = "identical" if code == 0 and got == expected else "DIFFERENT"
                first = json.loads((dest / "summary.json").read_text())["first_result_seconds"]
                print(
                    f"ray, {n} actor{'s' if n > 1 else ' '}            {dt:7.1f} s  {a.records / dt:8.1f} rec/s  "
                    f"{t_local / dt:4.2f}x  (output {same}; first results after {first:.1f} s)"
                )
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
