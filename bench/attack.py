#!/usr/bin/env python
"""Attack kernels, measured side by side in one run (prints times and ratios; not a timed test).

KNN: 100k perturbed tokens against a 30k x 384 vocabulary (MiniLM's size; random unit vectors, since
the ranking cost does not depend on the values):
  - ``KnnAttack.hits``: perturbed tokens are vocabulary rows; distinct rows are ranked once each
    (chunked [1024 x d] @ [d x V] products + topk), then looked up per token;
  - ``nearest_rows`` on 100k *distinct* query vectors (the worst case, e.g. noisy embeddings);
  - a per-token loop (one distance row + topk per token), timed on a sample and extrapolated.
  Target from issue 5: under 60 s for 100k tokens.
MTI: all masked copies of a record in one forward pass vs one forward pass per masked copy, on
splade-tiny (the offline masked LM; 2 layers, so per-pass overhead is all there is to save: ~1x)
and on a BERT-base-sized random model (where batching pays: ~3x here).

    python bench/attack.py [--tokens 100000] [--vocab 30522] [--dim 384]
"""

from __future__ import annotations

import argparse
import re
import time
from types import SimpleNamespace

import numpy as np
import torch


def bench_knn(n_tokens: int, vocab: int, dim: int) -> None:
    from ppt.attacks.knn import KnnAttack, nearest_rows

    g = torch.Generator().manual_seed(0)
    emb = torch.nn.functional.normalize(torch.randn(vocab, dim, generator=g), dim=1)
    space = SimpleNamespace(embeddings=emb, size=vocab, metric="l2", name="bench")
    rng = np.random.default_rng(0)
    # perturbed tokens: Zipf-like over the vocabulary, as words in text are
    ranks = np.minimum(rng.zipf(1.1, n_tokens) - 1, vocab - 1)
    new = rng.permutation(vocab)[ranks]
    orig = rng.integers(0, vocab, n_tokens)
    print(
        f"KNN: {n_tokens:,} perturbed tokens, vocabulary {vocab:,} x {dim}, K = 1 and 10, torch threads {torch.get_num_threads()}"
    )

    t0 = time.perf_counter()
    hits = KnnAttack(space, (1, 10)).hits(orig, new)
    t_rows = time.perf_counter() - t0
    print(
        f"  KnnAttack.hits (distinct rows ranked once: {np.unique(new).size:,}): {t_rows:7.2f} s   hits@10 {hits[:, 1].mean():.4f}"
    )

    q = emb[torch.from_numpy(rng.integers(0, vocab, n_tokens))] + 0.01 * torch.randn(n_tokens, dim, generator=g)
    t0 = time.perf_counter()
    nearest_rows(q, emb, 10, "l2")
    t_all = time.perf_counter() - t0
    print(f"  nearest_rows on {n_tokens:,} distinct queries (worst case):          {t_all:7.2f} s")

    sample = 300
    t0 = time.perf_counter()
    for i in range(sample):
        d = torch.cdist(q[i : i + 1], emb)
        torch.topk(d, 10, largest=False)
    t_loop = (time.perf_counter() - t0) / sample * n_tokens
    print(f"  per-token loop (extrapolated from {sample}):                       {t_loop:7.2f} s")
    print(
        f"  ratio per-token loop / batched worst case: {t_loop / t_all:5.1f}x;  / row-deduplicated: {t_loop / t_rows:5.1f}x"
    )
    print(f"  target < 60 s for {n_tokens:,} tokens: {'met' if max(t_rows, t_all) < 60 else 'NOT met'}")


def _mlm():
    try:
        from ppt.models import load_masked_lm

        model, tok = load_masked_lm("splade-tiny", device="cpu")
        return model, tok, "splade-tiny"
    except Exception:  # noqa: BLE001 - fall back to a random tiny BERT
        import tempfile
        from pathlib import Path

        from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

        d = Path(tempfile.mkdtemp())
        words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [chr(97 + i) * 3 for i in range(26)]
        (d / "vocab.txt").write_text("\n".join(words) + "\n")
        tok = BertTokenizerFast.from_pretrained(str(d))
        cfg = BertConfig(
            vocab_size=len(words), hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512
        )
        return BertForMaskedLM(cfg).eval(), tok, "random tiny BERT"


def _bert_base(tok):
    """A BERT-base-sized masked LM with random weights (speed only) on splade-tiny's tokenizer."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    return BertForMaskedLM(BertConfig(vocab_size=len(tok))).eval()


def bench_mti(records: int = 20, base_records: int = 4) -> None:
    model, tok, name = _mlm()
    _bench_mti_model(model, tok, name, records)
    _bench_mti_model(_bert_base(tok), tok, "BERT-base size, random weights", base_records)


def _bench_mti_model(model, tok, name: str, records: int) -> None:
    from ppt.attacks.mti import MtiAttack

    text = (
        "The quarterly profits at the media giant jumped to record levels for the three months to December "
        "while sales of high speed internet connections and higher advert sales offset a profit dip at the studio "
        "and fewer users for the online service in the same period"
    )
    spans = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z]+", text)]
    words = [text[s:e] for s, e in spans]
    print(f"MTI ({name}): {records} records x {len(spans)} masked positions")
    batched = MtiAttack(model, tok)
    t0 = time.perf_counter()
    for _ in range(records):
        res_b = batched.predict(text, spans, words)
    t_b = time.perf_counter() - t0
    single = MtiAttack(model, tok, max_copies=1)
    t0 = time.perf_counter()
    for _ in range(records):
        res_s = single.predict(text, spans, words)
    t_s = time.perf_counter() - t0
    assert res_b == res_s, "batched and one-at-a-time predictions differ"
    print(f"  one forward pass per record ({batched.forward_passes} passes): {t_b:6.2f} s")
    print(f"  one forward pass per masked copy ({single.forward_passes} passes): {t_s:6.2f} s")
    print(f"  ratio: {t_s / t_b:5.1f}x (same predictions)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=100_000)
    ap.add_argument("--vocab", type=int, default=30_522)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--mti-records", type=int, default=20)
    args = ap.parse_args()
    bench_knn(args.tokens, args.vocab, args.dim)
    bench_mti(args.mti_records)


if __name__ == "__main__":
    main()
