"""Benchmark: SanText+ / CusText+ table build times, sampling throughput from cached tables, and the
kept share / mean embedding distance per eps (the quantities of InferDPT's Tables IV-V).

    python bench/sanitize_tables.py                     # glove-6b-50d (random 20000x50 if unavailable)
    python bench/sanitize_tables.py --random --eps 1 3  # a random space, two eps values
    python bench/sanitize_tables.py --cache DIR         # keep the tables (default: a temporary cache)

Tokens are drawn from a Zipf law over the space's frequency ranks (p ~ 1/(rank+1)), a stand-in for
running text. "sampler" times draw() per record + perturb_rows() for the whole batch (the mechanism
proper); "pipeline" times sanitize_batch() on synthetic texts of those words (tokenize, policies,
detokenize: Python-bound). SanText+ has no table (its rows are computed per batch from the embeddings:
build 0 s, 0 MB); its sampler figure includes that computation.
Prints to stdout; needs no GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppt.cache import Cache, dir_size  # noqa: E402
from ppt.mechanisms.custext import CusTextPlus  # noqa: E402
from ppt.mechanisms.policy import stopwords_en  # noqa: E402
from ppt.mechanisms.santext import SanTextPlus  # noqa: E402
from ppt.rng import record_generator  # noqa: E402


def get_space(args, cache: Cache):
    if not args.random:
        try:
            from ppt.spaces import load_space

            sp = load_space(args.space, device="cpu", quiet=True)
            sp.cache = cache  # derived tables go to the bench cache
            return sp, args.space
        except Exception as e:  # offline models not installed: fall back, say so
            print(
                f"# {args.space} unavailable ({type(e).__name__}: {e}); using a random 20000x50 space", file=sys.stderr
            )
    from ppt.spaces import space_from_arrays

    rng = np.random.default_rng(0)
    emb = rng.normal(size=(20_000, 50)).astype(np.float32)
    vocab = [
        "w" + np.base_repr(i, 26).lower().translate(str.maketrans("0123456789", "qrstuvwxyz")) for i in range(20_000)
    ]
    return space_from_arrays("random-20000x50", vocab, emb, cache=cache), "random 20000x50"


def zipf_rows(sp, n: int, seed: int = 0) -> torch.Tensor:
    order = np.argsort(sp.freq_rank, kind="stable")
    p = 1.0 / np.arange(1, sp.size + 1)
    p /= p.sum()
    ranks = np.random.default_rng(seed).choice(sp.size, size=n, p=p)
    return torch.from_numpy(order[ranks])


def time_sampler(mech, rows: torch.Tensor, rec_len: int = 128, repeat: int = 3) -> float:
    """tokens/s of draw() per record + one perturb_rows() per batch of 64 records."""
    n = rows.numel()
    batch = 64 * rec_len
    best = float("inf")
    for r in range(repeat):
        t0 = time.perf_counter()
        for s in range(0, n, batch):
            chunk = rows[s : s + batch]
            draws = [
                mech.draw(min(rec_len, chunk.numel() - o), record_generator(r, s + o))
                for o in range(0, chunk.numel(), rec_len)
            ]
            rand = {k: np.concatenate([np.asarray(d[k]) for d in draws]) for k in draws[0]}
            mech.perturb_rows(chunk, rand)
        best = min(best, time.perf_counter() - t0)
    return n / best


def time_pipeline(mech, rows: torch.Tensor, rec_len: int = 100, repeat: int = 3) -> float:
    vocab = mech.space.vocab
    words = [vocab[i] for i in rows.tolist()]
    texts = [" ".join(words[s : s + rec_len]) + "." for s in range(0, len(words), rec_len)]
    mech.sanitize_batch(texts[:8], [record_generator(1, i) for i in range(min(8, len(texts)))])  # warm up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for s in range(0, len(texts), 64):
            chunk = texts[s : s + 64]
            mech.sanitize_batch(chunk, [record_generator(1, s + i) for i in range(len(chunk))])
        best = min(best, time.perf_counter() - t0)
    return len(words) / best


def table_stats(mech, rows: torch.Tensor, keep_rows: torch.Tensor | None, seed: int = 0) -> tuple[float, float, float]:
    """(share of tokens unchanged, mean L2 distance original -> output, share unchanged among the
    positions the mechanism itself decides, i.e. without policy-kept stopwords) over the token sample."""
    g = torch.Generator().manual_seed(seed)
    out = torch.empty_like(rows)
    rec = 4096
    for s in range(0, rows.numel(), rec):
        chunk = rows[s : s + rec]
        o, _ = mech.perturb_rows(chunk, mech.draw(chunk.numel(), g))
        out[s : s + rec] = o
    policy_kept = torch.zeros_like(rows, dtype=torch.bool)
    if keep_rows is not None:  # the policy keeps these words before the mechanism sees them
        policy_kept = torch.isin(rows, keep_rows)
        out[policy_kept] = rows[policy_kept]
    e = mech.space.embeddings
    dist = (e[rows] - e[out]).norm(dim=1)
    same = out == rows
    return float(same.float().mean()), float(dist.mean()), float(same[~policy_kept].float().mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="glove-6b-50d")
    ap.add_argument("--random", action="store_true", help="use a random 20000x50 space")
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0, 6.0, 10.0])
    ap.add_argument("--tokens", type=int, default=200_000, help="tokens per throughput measurement")
    ap.add_argument("--cache", type=Path, default=None, help="cache dir for the tables (default: temporary)")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(torch.get_num_threads(), os.cpu_count() or 1)))

    tmp = None
    if args.cache is None:
        tmp = tempfile.TemporaryDirectory(prefix="ppt-bench-")
        args.cache = Path(tmp.name)
    cache = Cache(args.cache)
    sp, label = get_space(args, cache)
    print(f"# space: {label} ({sp.size} x {sp.dim}), threads: {torch.get_num_threads()}, tokens/measure: {args.tokens}")
    rows = zipf_rows(sp, args.tokens)
    stop = torch.tensor([i for i, w in enumerate(sp.vocab) if w in stopwords_en()], dtype=torch.long)

    results = []
    for eps in args.eps:
        row = {"eps": eps}
        for name, cls in (("santext+", SanTextPlus), ("custext+", CusTextPlus)):
            t0 = time.perf_counter()
            arts = cls(eps, space=sp, quiet=True).precompute()
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            mech = cls(eps, space=sp, quiet=True)
            mech.precompute()  # from the cache: verify + map
            load = time.perf_counter() - t0
            mb = sum(dir_size(a.path) for a in arts) / 2**20
            row[name] = {"build_s": build, "load_s": load, "MB": mb}
            row[name]["sampler_tok_s"] = time_sampler(mech, rows)
            row[name]["pipeline_tok_s"] = time_pipeline(mech, rows[: min(50_000, rows.numel())])
            keep = stop if mech.policy.stopwords == "keep" else None
            row[name]["kept"], row[name]["dist"], row[name]["kept_mech"] = table_stats(mech, rows, keep)
            del mech
        results.append(row)

    print("\n## build (first construction: groups/table built and cached) and load (second construction)")
    print(
        f"{'eps':>5} | {'mechanism':9} | {'build s':>8} | {'load s':>7} | {'table MB':>9} | {'sampler tok/s':>13} | {'pipeline tok/s':>14}"
    )
    for r in results:
        for name in ("santext+", "custext+"):
            m = r[name]
            print(
                f"{r['eps']:>5g} | {name:9} | {m['build_s']:8.2f} | {m['load_s']:7.2f} | {m['MB']:9.1f} | {m['sampler_tok_s']:13,.0f} | {m['pipeline_tok_s']:14,.0f}"
            )
    print("\n## InferDPT Tables IV-V quantities (Zipf token sample; CusText+ keeps stopwords)")
    print("# kept = share of tokens unchanged; dist = mean L2 distance original -> output (kept tokens count 0);")
    print("# CusText+ kept w/o stop = share unchanged among the words CusText+ perturbs (stopwords excluded)")
    print(
        f"{'eps':>5} | {'SanText+ kept':>13} | {'SanText+ dist':>13} | {'CusText+ kept':>13} | {'CusText+ dist':>13} | {'CusText+ kept w/o stop':>22}"
    )
    for r in results:
        s, c = r["santext+"], r["custext+"]
        print(
            f"{r['eps']:>5g} | {s['kept']:13.3f} | {s['dist']:13.3f} | {c['kept']:13.3f} | {c['dist']:13.3f} | {c['kept_mech']:22.3f}"
        )
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
