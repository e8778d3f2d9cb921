"""Benchmark: full sorted distance table (RANTEXT's precomputation) and top-k neighbours.

Reference design (the published RANTEXT code, re-implemented here for measurement only): a Python loop
over every token pair computing one distance at a time, then per-token sorting and JSON files. We time
it on a subsample of rows and extrapolate linearly to the full table (it is linear in pairs), then time
ppt's chunked GEMM kernel on the full table in the same run and print the ratio.

    python bench/distances.py                     # default space cl100k-minilm (11k x 384)
    python bench/distances.py --topk-space smollm2 --k 100
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def reference_rows(emb: np.ndarray, vocab: list[str], rows: int, out: Path) -> float:
    """The published design for `rows` tokens: per-pair Python loop, sort, JSON dump. Seconds."""
    t0 = time.perf_counter()
    table = {}
    for i in range(rows):
        dists = {}
        for j in range(emb.shape[0]):
            dists[vocab[j]] = float(np.linalg.norm(emb[i] - emb[j]))
        table[vocab[i]] = sorted(dists.items(), key=lambda kv: kv[1])
    out.write_text(json.dumps(table))
    return time.perf_counter() - t0


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="cl100k-minilm")
    ap.add_argument("--ref-rows", type=int, default=20, help="rows of the reference design to time")
    ap.add_argument("--topk-space", default="smollm2", help="space for the top-k run ('' to skip)")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()

    from ppt.models import resolve_device
    from ppt.spaces import distances, load_space

    dev = resolve_device(args.device)
    space = load_space(args.space, device=str(dev), quiet=True)
    n = space.size
    emb_np = space.embeddings.cpu().numpy()
    with tempfile.TemporaryDirectory() as tmp:
        ref_s = reference_rows(emb_np, space.vocab, args.ref_rows, Path(tmp) / "ref.json")
        ref_full = ref_s * n / args.ref_rows
        rss_before = peak_rss_gb()
        t0 = time.perf_counter()
        distances.sorted_rows_to_files(space.embeddings, Path(tmp) / "i.npy", Path(tmp) / "d.npy", space.metric)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        ours = time.perf_counter() - t0
    print(f"device: {dev}  torch threads: {torch.get_num_threads()}")
    print(f"sorted table {args.space}: {n} x {n} = {n * n / 1e6:.0f}M pairs")
    print(
        f"  reference design: {ref_s:.2f} s for {args.ref_rows} rows -> {ref_full / 60:.1f} min extrapolated to the full table"
    )
    print(f"  ppt kernel:       {ours:.2f} s for the full table (peak RSS {max(rss_before, peak_rss_gb()):.2f} GB)")
    print(f"  ratio:            {ref_full / ours:.0f}x")

    if args.topk_space:
        sp = load_space(args.topk_space, device=str(dev), quiet=True)
        t0 = time.perf_counter()
        distances.topk_neighbors(sp.embeddings, args.k, sp.metric)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        tk = time.perf_counter() - t0
        print(f"top-{args.k} {args.topk_space}: {sp.size} x {sp.dim}: {tk:.1f} s (peak RSS {peak_rss_gb():.2f} GB)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
