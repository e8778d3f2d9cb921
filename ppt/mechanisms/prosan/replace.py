"""Replacement candidates and their sampling probabilities (papers/prosan.txt, Sec. 5.2, Eqs. 9-10).

Why its own module: the sampler is the part a test checks against its closed form.

* Candidate set C_w (Eq. 9): the masked LM's predictions at the word's mask, over the candidate vocabulary,
  in descending probability, up to and including the first whose cumulative probability reaches ``tau``
  (at most ``max_candidates``; the original word itself is excluded when ``exclude_original``).
* Sampling (Eq. 10): P(c) = exp((K_w - O_w) * scale * s_c) / sum_{c' in C_w} exp((K_w - O_w) * scale * s_c'),
  s_c the similarity of c to the word. The masked LM's probabilities choose the set, not the weights
  (as the paper). ``scale`` = 1 is the paper's formula; the authors' code multiplies the exponent by 10.
* One uniform per word, inverse CDF over its candidates (vectorised over all words of a batch).
"""

from __future__ import annotations

import torch


def candidate_sets(probs: torch.Tensor, tau: float, max_candidates: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(columns [n, C], mask [n, C]) of each row's candidate set under Eq. 9 (``probs`` [n, V], rows sum to 1
    over the allowed columns, 0 elsewhere). The top column is always in the set."""
    k = min(max_candidates, probs.shape[1])
    p, cols = probs.topk(k, dim=1)
    before = p.cumsum(1) - p  # cumulative probability of the columns ranked above
    mask = (before < tau) & (p > 0)
    mask[:, 0] = True
    return cols, mask


def replacement_probs(
    k: torch.Tensor, o: torch.Tensor, sims: torch.Tensor, mask: torch.Tensor, scale: float = 1.0
) -> torch.Tensor:
    """Eq. 10: P [n, C] with P[i, j] ∝ exp((k_i - o_i) * scale * sims[i, j]) over mask[i]."""
    logits = ((k - o) * scale)[:, None].to(sims.dtype) * sims
    logits = logits.masked_fill(~mask, float("-inf"))
    return torch.softmax(logits, dim=1)


def sample_columns(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse CDF: the index j of each row with cdf[j-1] <= u * total < cdf[j] (``u`` uniform in [0, 1))."""
    cdf = probs.double().cumsum(1)
    x = (u.double() * cdf[:, -1]).unsqueeze(1)
    idx = torch.searchsorted(cdf, x, right=True).squeeze(1)
    # never land on a zero-probability column (rounding at the top end)
    last = (probs > 0).long().cumsum(1).argmax(1)
    return torch.minimum(idx, last)


__all__ = ["candidate_sets", "replacement_probs", "sample_columns"]
