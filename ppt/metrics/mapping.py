"""Effective mapping set size N_w and retention ratio (Cape Sec. 5.2.2 and App. B.3).

N_w: the number of distinct tokens a token w is mapped to over repeated perturbation (Cape: 1,000
runs per token); larger means more entropy, more privacy. Retention ratio: the share of perturbations
that return w itself. Two ways to measure:

- :func:`probe`: run the mechanism's per-token kernel (``draw`` + ``perturb_rows``) ``draws`` times on
  chosen rows: the paper's protocol, independent of a corpus;
- :class:`MappingTally`: accumulate (orig_row, new_row) pairs from sanitized records (alignment field
  or the sweep), giving corpus-weighted figures (N_w then grows with how often a word occurs).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from ppt.rng import record_generator


def probe(
    mech, rows: np.ndarray, draws: int = 1000, generator: np.random.Generator | None = None, chunk: int = 200_000
) -> dict:
    """N_w and retention from ``draws`` perturbations of each row (TokenMechanism kernels only).

    Returns {"n_tokens", "draws", "n_w_mean", "n_w_median", "retention", "n_w": [per row]}."""
    if not hasattr(mech, "draw") or not hasattr(mech, "perturb_rows"):
        raise TypeError(f"{getattr(mech, 'name', mech)!r} has no per-token kernel to probe")
    rows = np.asarray(rows, dtype=np.int64)
    g = generator if generator is not None else record_generator(0, "probe")
    flat = np.repeat(rows, draws)
    new = np.empty_like(flat)
    for s in range(0, flat.size, chunk):
        part = torch.from_numpy(flat[s : s + chunk])
        rand = mech.draw(part.numel(), g)
        out, _ = mech.perturb_rows(
            part.to(mech.device), {k: torch.as_tensor(v).to(mech.device) for k, v in rand.items()}
        )
        new[s : s + chunk] = out.cpu().numpy()
    new = new.reshape(len(rows), draws)
    n_w = [int(np.unique(r).size) for r in new]
    return {
        "n_tokens": len(rows),
        "draws": int(draws),
        "n_w_mean": float(np.mean(n_w)) if n_w else None,
        "n_w_median": float(np.median(n_w)) if n_w else None,
        "retention": float((new == rows[:, None]).mean()) if n_w else None,
        "n_w": n_w,
    }


class MappingTally:
    """Corpus N_w and retention from observed (orig_row, new_row) pairs."""

    def __init__(self) -> None:
        self.targets: dict[int, set[int]] = defaultdict(set)
        self.pairs = 0
        self.retained = 0

    def add(self, orig_rows: np.ndarray, new_rows: np.ndarray) -> dict:
        orig_rows, new_rows = np.asarray(orig_rows), np.asarray(new_rows)
        for o, n in zip(orig_rows.tolist(), new_rows.tolist()):
            self.targets[o].add(n)
        kept = int((orig_rows == new_rows).sum())
        self.pairs += int(orig_rows.size)
        self.retained += kept
        return {
            "pairs": int(orig_rows.size),
            "retained": kept,
            "retention": kept / orig_rows.size if orig_rows.size else None,
        }

    def summary(self) -> dict:
        sizes = [len(s) for s in self.targets.values()]
        return {
            "pairs": self.pairs,
            "distinct_originals": len(sizes),
            "retention": self.retained / self.pairs if self.pairs else None,
            "n_w_mean": float(np.mean(sizes)) if sizes else None,
            "n_w_median": float(np.median(sizes)) if sizes else None,
        }
