"""Benchmark `ppt extract`'s batched generation against one-record-at-a-time generation.

Same model, same inputs (the bundled prompts as raw documents with a canned perturbed generation),
same greedy decoding; the batched run uses left padding with attention masks in batches of
--batch-size, the sequential run batch size 1. Prints generated tokens/s of each and their ratio, and
checks that both produced the same texts (greedy decoding is deterministic up to float rounding).

    python bench/extract.py                                   # smollm2 on CPU (or the GPU when present)
    python bench/extract.py --n 32 --batch-size 16 --max-new-tokens 64 --device cuda
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ppt.stages.extract import Extractor
from ppt.io import Record
from ppt.lm.generate import LocalGenerator, SamplingParams

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


def timed(extractor: Extractor, records: list[Record]) -> tuple[float, int, list[str]]:
    t0 = time.perf_counter()
    outs = extractor.process(records)
    dt = time.perf_counter() - t0
    tokens = sum(o["ppt"]["extract"]["usage"]["completion_tokens"] for o in outs)
    return dt, tokens, [o["extracted"] for o in outs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--n", type=int, default=8, help="records")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default=None)
    args = ap.parse_args()

    import torch

    batched = LocalGenerator.load(args.model, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    single = LocalGenerator(batched.model, batched.tokenizer, name=args.model, batch_size=1)
    params = SamplingParams(max_new_tokens=args.max_new_tokens)
    records = inputs(args.n)
    info = batched.describe()
    threads = torch.get_num_threads() if info["device"] == "cpu" else None
    print(f"model {args.model}  device {info['device']}  dtype {info['dtype']}  cpu threads {threads}  "
          f"records {args.n}  max_new_tokens {args.max_new_tokens}  batch size {args.batch_size}")
    Extractor(batched, params=SamplingParams(max_new_tokens=2)).process(records[:2])  # warm-up

    t_seq, n_seq, seq_texts = timed(Extractor(single, params=params), records)
    t_bat, n_bat, bat_texts = timed(Extractor(batched, params=params), records)
    same = sum(a == b for a, b in zip(seq_texts, bat_texts))
    print(f"{'one at a time':<16} {t_seq:8.2f} s  {n_seq:6d} tokens  {n_seq / t_seq:8.1f} tokens/s")
    print(f"{'batched':<16} {t_bat:8.2f} s  {n_bat:6d} tokens  {n_bat / t_bat:8.1f} tokens/s")
    print(f"ratio batched / one at a time: {(n_bat / t_bat) / (n_seq / t_seq):.2f}x   "
          f"(identical texts: {same}/{len(records)})")


if __name__ == "__main__":
    main()
