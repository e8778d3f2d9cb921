"""Benchmark `ppt extract`'s batched generation: the decode loop (ppt.lm.decode) batched, the same one
record at a time, and the previous implementation (transformers' ``generate`` with a per-row CPU
sampler, ``decoder="generate"``) batched, all in one run.

Same model, same inputs (the bundled prompts as raw documents with a canned perturbed generation),
same greedy decoding. Prints generated tokens/s of each, the ratios, and how many texts equal the
reference's (greedy decoding is deterministic up to float rounding; bf16 on a GPU may flip a few).
``--random-weights`` builds the model from the alias's config and tokenizer alone with seeded random
weights (bench/random_lm.py: no weights are read, so it runs where the packaged weights are not at hand;
it rarely emits EOS, so every record runs to --max-new-tokens); ``--layers`` cuts it to that many layers.
``--batched-only`` times the batched decode loop alone and ``--json PATH`` writes the rates as JSON.

    python bench/extract.py                                   # smollm2 on CPU (or the GPU when present)
    python bench/extract.py --n 1024 --max-new-tokens 64 --device cuda --random-weights --compile
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ppt.io import Record
from ppt.lm.generate import LocalGenerator, SamplingParams
from ppt.stages.extract import Extractor

GENERATIONS = [
    "The symptoms started early in the week. A doctor should check them soon, especially if they get worse.",
    "Thank you for your time on Tuesday. I enjoyed learning about the team and hope to hear from you soon.",
    "The payment was late, and the customer asked to change the due date to the middle of the month.",
    "The plan is to hire more engineers next quarter, with remote work and shares offered to new staff.",
]


def inputs(n: int) -> list[Record]:
    root = Path(__file__).resolve().parent.parent
    docs = [json.loads(x)["text"] for x in (root / "examples" / "prompts.jsonl").read_text().splitlines() if x.strip()]
    out = []
    for i in range(n):
        data = {"id": i, "raw": docs[i % len(docs)], "generation": GENERATIONS[i % len(GENERATIONS)]}
        out.append(Record(line_no=i + 1, id=i, data=data, text=None))
    return out


def timed(extractor: Extractor, records: list[Record]) -> tuple[float, float, int, list[str]]:
    """(wall s, this process's CPU s, generated tokens, texts); CPU time is the steadier figure on a
    machine shared with other jobs."""
    t0, c0 = time.perf_counter(), time.process_time()
    outs = extractor.process(records)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    tokens = sum(o["ppt"]["extract"]["usage"]["completion_tokens"] for o in outs)
    return dt, cpu, tokens, [o["extracted"] for o in outs]


def random_weights(name: str, device: str, dtype: str | None, layers: int | None = None) -> LocalGenerator:
    """The alias's architecture and tokenizer with seeded random weights, from its config alone."""
    from random_lm import random_causal_lm

    from ppt.models.device import resolve_device

    dev = resolve_device(device)
    model, tok = random_causal_lm(
        name, layers=layers, device=dev, dtype=dtype if dtype is not None or dev.type != "cuda" else "auto"
    )
    label = f"{name} (random weights{f', {layers} layers' if layers else ''})"
    return LocalGenerator(model, tok, name=label)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--n", type=int, default=8, help="records (batched runs)")
    ap.add_argument("--single-n", type=int, default=None, help="records one at a time (default: min(n, 8))")
    ap.add_argument("--batch-size", type=int, default=None, help="default: 8 on CPU, 256 on CUDA")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default=None, help="default: bfloat16 on CUDA, the model's own on CPU")
    ap.add_argument("--static-cache", choices=["auto", "on", "off"], default="auto", help="auto: on for CUDA")
    ap.add_argument("--compile", action="store_true", help="torch.compile the one-token step (CUDA + static cache)")
    ap.add_argument("--random-weights", action="store_true", help="the model's shape with random weights")
    ap.add_argument("--layers", type=int, default=None, help="with --random-weights: this many layers")
    ap.add_argument("--batched-only", action="store_true", help="time the batched decode loop alone")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument(
        "--ignore-eos",
        action="store_true",
        help="every record runs to --max-new-tokens (a tiny model then measures per-step overhead)",
    )
    ap.add_argument("--skip-reference", action="store_true", help="leave out the previous implementation")
    args = ap.parse_args()

    import torch

    from ppt.lm.generate import default_batch_size

    if args.random_weights:
        base = random_weights(args.model, args.device, args.dtype, args.layers)
    else:
        base = LocalGenerator.load(args.model, device=args.device, dtype=args.dtype)
    if args.ignore_eos:
        base.model.generation_config.eos_token_id = None
    bs = args.batch_size or default_batch_size(base.device)
    static = None if args.static_cache == "auto" else args.static_cache == "on"

    def variant(batch_size: int, decoder: str = "loop") -> LocalGenerator:
        return LocalGenerator(
            base.model,
            base.tokenizer,
            name=base.name,
            batch_size=batch_size,
            decoder=decoder,
            static_cache=static,
            compile=args.compile,
        )

    batched, single, reference = variant(bs), variant(1), variant(bs, "generate")
    other_cache = LocalGenerator(
        base.model,
        base.tokenizer,
        name=base.name,
        batch_size=bs,
        static_cache=not batched.static_cache,
        compile=args.compile,
    )
    if args.ignore_eos:
        for g in (batched, single, reference, other_cache):
            g.eos_ids = []
    params = SamplingParams(max_new_tokens=args.max_new_tokens)
    records = inputs(args.n)
    few = records[: args.single_n or min(args.n, 8)]
    info = batched.describe()
    threads = torch.get_num_threads() if info["device"] == "cpu" else None
    print(
        f"model {base.name}  device {info['device']}  dtype {info['dtype']}  cpu threads {threads}  "
        f"records {args.n} ({len(few)} one at a time)  max_new_tokens {args.max_new_tokens}  batch size {bs}  "
        f"static cache {batched.static_cache}  compile {batched.compile}"
    )
    if args.batched_only:
        runs = [("batched", batched, records)]
    else:
        runs = [
            ("one at a time", single, few),
            ("batched", batched, records),
            (f"batched, {'static' if other_cache.static_cache else 'dynamic'} cache", other_cache, records),
        ]
        if not args.skip_reference:
            runs.append(("previous batched", reference, records))
    for g in dict.fromkeys(g for _, g, _ in runs):  # warm-up, compile
        warm = g.batch_size if info["device"].startswith("cuda") else 2  # a full batch: the shapes compile sees
        Extractor(g, params=SamplingParams(max_new_tokens=4)).process(records[: min(len(records), warm)])

    rates, texts, result = {}, {}, {}
    for label, g, recs in runs:
        dt, cpu, n, out = timed(Extractor(g, params=params), recs)
        rates[label], texts[label] = n / dt, out
        result[label] = {"seconds": dt, "cpu_seconds": cpu, "tokens": n, "tokens_per_s": n / dt}
        print(
            f"{label:<24} {dt:8.2f} s  {n:7d} tokens  {n / dt:9.1f} tokens/s   "
            f"(cpu {cpu:7.2f} s, {n / max(cpu, 1e-9):9.1f} tokens per cpu-s)"
        )
    if args.json:
        info = {
            "model": base.name,
            "device": info["device"],
            "dtype": str(info["dtype"]),
            "records": args.n,
            "max_new_tokens": args.max_new_tokens,
            "batch_size": bs,
            "static_cache": batched.static_cache,
            "compile": batched.compile,
            "layers": base.model.config.num_hidden_layers,
            "runs": result,
        }
        Path(args.json).write_text(json.dumps(info, indent=1))
    if args.batched_only:
        return
    print(f"ratio batched / one at a time: {rates['batched'] / rates['one at a time']:.2f}x")
    same_single = sum(a == b for a, b in zip(texts["one at a time"], texts["batched"]))
    print(f"identical texts batched vs one at a time: {same_single}/{len(few)}")
    if not args.skip_reference:
        same = sum(a == b for a, b in zip(texts["previous batched"], texts["batched"]))
        print(
            f"ratio batched / previous batched: {rates['batched'] / rates['previous batched']:.2f}x   "
            f"(identical texts: {same}/{len(records)})"
        )
        other = runs[2][0]
        print(f"ratio {other} / previous batched: {rates[other] / rates['previous batched']:.2f}x")


if __name__ == "__main__":
    main()
