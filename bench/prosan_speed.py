"""Benchmark: ProSan throughput (prompts/s) of this checkout against the reference design it replaced, on
the same PII-inserted prompts in one run; outputs are checked identical record by record.

    PYTHONPATH=$PWD python bench/prosan_speed.py --prompts 4

Reference design (the code before this change, rebuilt here): torch's intra-op thread count
(``threads=N``, N = torch.get_num_threads() at start), WordNet similarity through NLTK's own
``Synset.path_similarity`` (re-walks both hypernym closures and re-reads the data file's version line on
every call) and a backward pass that also computes the LM weights' gradients. This checkout:
``threads="auto"`` (one thread while the load average >= cores), memoised ancestor maps, frozen weights.
Both run with ``emails=False`` so their outputs must be equal (the e-mail rule changes the plan); the
prompts are ``make_pii(n, seed=0)``, seeded per record, one ``sanitize_batch`` call each, models loaded
before the clock starts. The load average is printed: on a shared machine it decides the ratio.
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import lru_cache
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class NltkSimilarity:
    """The reference WordNet similarity: NLTK's path_similarity per synset pair (memoised per word pair)."""

    source = "wordnet path similarity (NLTK reader)"

    def __init__(self, wn):
        self.wn = wn
        self.pair = lru_cache(maxsize=1 << 18)(self._pair)

    def _synsets(self, w):
        n = self.wn.synsets(w, pos="n")
        return n if n else self.wn.synsets(w)

    def _pair(self, a, b):
        if a == b:
            return 1.0
        return float(
            max((x.path_similarity(y) or 0.0 for x in self._synsets(a) for y in self._synsets(b)), default=0.0)
        )

    def __call__(self, word, cands):
        return [self.pair(word.lower(), c.lower()) for c in cands]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=4)
    args = ap.parse_args()
    from ppt.experiments.pii import make_pii
    from ppt.mechanisms import get_mechanism
    from ppt.mechanisms.prosan import scores as sc
    from ppt.mechanisms.prosan.wordnet import load_wordnet
    from ppt.rng import record_generator

    texts = [r["text"] for r in make_pii(args.prompts, seed=0)]
    n_threads = torch.get_num_threads()
    fb = sc._forward_backward

    def unfrozen(model, *a):  # the reference computes the weights' gradients too
        for p in model.parameters():
            p.requires_grad_(True)
        try:
            return fb(model, *a)
        finally:
            for p in model.parameters():
                p.requires_grad_(False)

    def run(mech, reference: bool) -> tuple[list[str], float]:
        sc._forward_backward = unfrozen if reference else fb
        try:
            t0 = time.perf_counter()
            out = [
                mech.sanitize_batch([t], [record_generator(0, i)], reproducible=True)[0].text
                for i, t in enumerate(texts)
            ]
            return out, time.perf_counter() - t0
        finally:
            sc._forward_backward = fb

    ref = get_mechanism(
        "prosan",
        1.0,
        quiet=True,
        device="cpu",
        emails=False,
        threads=n_threads,
        similarity=NltkSimilarity(load_wordnet()),
    ).prepare()
    new = get_mechanism("prosan", 1.0, quiet=True, device="cpu", emails=False).prepare()
    load0 = os.getloadavg()
    out_ref, t_ref = run(ref, True)
    out_new, t_new = run(new, False)
    load1 = os.getloadavg()
    same = sum(a == b for a, b in zip(out_ref, out_new))
    n = len(texts)
    print(
        f"prompts {n}, cpus {os.cpu_count()}, torch threads {n_threads}, load average {load0[0]:.1f} -> {load1[0]:.1f}"
    )
    print(f"reference: {t_ref:.1f} s ({n / t_ref:.4f} prompts/s)")
    print(f"this:      {t_new:.1f} s ({n / t_new:.4f} prompts/s)")
    print(f"speed-up {t_ref / t_new:.2f}x; identical outputs {same}/{n}")


if __name__ == "__main__":
    main()
