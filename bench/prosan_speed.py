"""Benchmark: ProSan throughput (prompts/s) of this checkout against the reference design it replaced, on
the same PII-inserted prompts in one run; outputs are checked identical record by record.

    PYTHONPATH=$PWD nice -n 10 python bench/prosan_speed.py --prompts 8

Reference design (before issue 25's change, rebuilt here): per record, HF ``generate`` for the 8-token
greedy response, then a second forward pass over prompt + response with the backward for the importance
(``greedy_responses`` + ``score_batch``). This checkout (``respond_and_score``): one forward pass over the
prompt with a KV cache, the greedy response decoded from a detached copy of it, the response's tokens
forwarded on top of the prompt's cache, one backward. Printed: the reference, this checkout one record per pass (``batching="record"``, the default:
seeded output independent of batch size) and this checkout with ``batching="mixed"`` (the records of a
batch left-padded into one pass; values equal to float rounding). All three at ProSan's defaults otherwise,
models loaded before the clock starts, WordNet's memo cold at each start, seeded per record (``make_pii(n, seed=0)``); "identical" compares
each record's output text with the reference's. The load average is printed beside every figure: on the
shared machine it decides the ratio. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=8, help="records per sanitize_batch call")
    ap.add_argument(
        "--ceiling",
        action="store_true",
        help="also count the model FLOPs per prompt and time this CPU's matmuls at the model's shapes: the "
        "prompts/s no implementation of these passes can beat here",
    )
    args = ap.parse_args()
    import warnings

    from ppt.experiments.pii import make_pii
    from ppt.log import LeakWarning
    from ppt.mechanisms import get_mechanism
    from ppt.mechanisms.prosan import scores as sc
    from ppt.mechanisms.prosan.wordnet import WordNetSimilarity
    from ppt.rng import record_generator

    warnings.simplefilter("ignore", LeakWarning)
    texts = [r["text"] for r in make_pii(args.prompts, seed=0)]
    one_pass = sc.respond_and_score

    def two_passes(model, prompts, words, n_words, n_prefix, n_response, pad, eos):
        resp = sc.greedy_responses(model, prompts, n_response, pad, eos)
        return sc.score_batch(model, prompts, resp, words, n_words, n_prefix), resp

    def run(mech, reference: bool) -> tuple[list[str], float, tuple[float, float]]:
        sc.respond_and_score = two_passes if reference else one_pass
        mech.similarity_fn = WordNetSimilarity(mech.similarity_fn.wn)  # every run starts with a cold memo
        try:
            load0 = os.getloadavg()[0]
            t0 = time.perf_counter()
            out = []
            for s in range(0, len(texts), args.batch_size):
                part = list(range(s, min(s + args.batch_size, len(texts))))
                gens = [record_generator(0, i) for i in part]
                out += [r.text for r in mech.sanitize_batch([texts[i] for i in part], gens, reproducible=True)]
            return out, time.perf_counter() - t0, (load0, os.getloadavg()[0])
        finally:
            sc.respond_and_score = one_pass

    kw = {"quiet": True, "device": "cpu", "batch_size": args.batch_size}
    record = get_mechanism("prosan", 1.0, **kw).prepare()
    mixed = get_mechanism("prosan", 1.0, batching="mixed", **kw).prepare()
    out_ref, t_ref, l_ref = run(record, True)
    out_new, t_new, l_new = run(record, False)
    out_mix, t_mix, l_mix = run(mixed, False)
    n = len(texts)
    print(f"prompts {n}, cpus {os.cpu_count()}, batch {args.batch_size}")
    for name, t, ld in (("reference", t_ref, l_ref), ("record", t_new, l_new), ("mixed", t_mix, l_mix)):
        print(f"{name:9s}: {t:7.1f} s ({n / t:.3f} prompts/s), load average {ld[0]:.1f} -> {ld[1]:.1f}")
    same = sum(a == b for a, b in zip(out_ref, out_new))
    same_mix = sum(a == b for a, b in zip(out_ref, out_mix))
    print(f"speed-up record {t_ref / t_new:.2f}x (identical outputs {same}/{n}); ", end="")
    print(f"mixed {t_ref / t_mix:.2f}x (identical outputs {same_mix}/{n})")
    if args.ceiling:
        ceiling(record, texts, n / t_new, n / t_mix)


def ceiling(mech, texts: list[str], record_rate: float, mixed_rate: float) -> None:
    """The compute bound: the causal LM's FLOPs per prompt against the FLOP/s this CPU reaches on a matmul of
    the prompt's shape (tokens x hidden @ hidden x MLP width), fp32 and bf16. FLOPs: torch's FlopCounterMode
    over one forward of prompt + response, times 2 for the backward to the input embeddings (the weights
    are frozen: one matmul per forward matmul); the masked LM, spaCy and WordNet are not counted, so the
    bound is generous."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    flops, tokens = [], []
    extra = mech.response_tokens
    for t in texts:
        ids = mech.lm_tok(t, return_tensors="pt")["input_ids"]
        ids = torch.cat([ids, ids[:, -1:].repeat(1, int(extra))], dim=1)
        with torch.inference_mode(), FlopCounterMode(display=False) as fc:
            mech.lm(input_ids=ids)
        flops.append(2 * fc.get_total_flops())
        tokens.append(ids.shape[1])
    per_prompt = sum(flops) / len(flops)
    cfg = mech.lm.config
    h, w = cfg.hidden_size, cfg.intermediate_size
    m = int(sum(tokens) / len(tokens)) if tokens else 128
    print(f"model FLOPs per prompt: {per_prompt / 1e9:.1f} G (mean over {len(flops)} prompts; {m} tokens each)")
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(m, h, dtype=dtype), torch.randn(h, w, dtype=dtype)
        for _ in range(3):
            a @ b
        reps, t0 = 200, time.perf_counter()
        for _ in range(reps):
            a @ b
        rate = 2 * m * h * w * reps / (time.perf_counter() - t0)
        print(
            f"matmul {m}x{h} @ {h}x{w} {str(dtype)[6:]}, {torch.get_num_threads()} threads: {rate / 1e9:.0f} GFLOP/s "
            f"-> at most {rate / per_prompt:.2f} prompts/s if every FLOP ran at that rate"
        )
    print(f"measured: record {record_rate:.3f} prompts/s, mixed {mixed_rate:.3f} prompts/s")


if __name__ == "__main__":
    main()
