"""LimitedDomain (Durfee & Rogers 2019) top-1 release of a vote histogram, with the noise that a
non-monotone histogram needs.

Why the factor 2: adding or removing one private record changes one subset's meta-prompt, which moves
that subset's vote from one token to another: one count goes down by 1 while another goes up by 1. That
change is not monotone, and report-noisy-max with Gumbel(1/e) noise is only 2e-DP for it (the published
accountant counts it as e). ``release`` therefore runs the monotone mechanism at e = eps0 / 2 (Gumbel
scale 2/eps0 on the counts and on the threshold, threshold slack ln(.)/e), so that each release is
(eps0, delta0)-DP for the neighbouring relation that actually holds (checked exactly, by enumeration, in
tests/dpopt/test_limited_domain.py). ``eps0 = inf`` is the non-private
run of the same code path (no noise, the threshold's slack is 1).

Mechanism: take the top ``k_bar`` counts; the "bottom" candidate scores
``h_(k_bar+1) + 2 + ln(min(Delta0, k_bar, d - k_bar) / delta0) / e`` with Delta0 = 2 counts changed per
record (the +2, not Durfee-Rogers' +1: see MOVE_SLACK); every candidate gets independent Gumbel(1/e) noise; the argmax is released, or None for bottom.
"""

from __future__ import annotations

import math

import torch

DELTA0_COUNTS = 2  # a record changes two counts of the histogram (one down, one up)
# Durfee-Rogers' +1 slack assumes a monotone neighbour; under a moved vote a token that leaves the top-k_bar
# domain can stand 2 above h_(k_bar+1) (h_j <= h'_j + 1 <= h'_(k_bar+1) + 1 <= h_(k_bar+1) + 2), so the
# threshold needs +2 for each dropped token to keep probability <= delta0/m (a second reading measured
# 1.36 delta0 at the defaults, 2.71 delta0 at k_bar 1, with +1)
MOVE_SLACK = 2.0


def _half(eps0: float) -> float:
    """The monotone mechanism's parameter for an (eps0, delta0) release on non-monotone histograms."""
    return eps0 / 2.0


def noise_scale(eps0: float) -> float:
    """Gumbel scale of the counts and of the threshold: 2 / eps0 (0 when eps0 is infinite)."""
    return 0.0 if math.isinf(eps0) else 1.0 / _half(eps0)


def candidates(counts: torch.Tensor, eps0: float, delta0: float, k_bar: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(token ids of the top ``k_bar`` counts, scores with the bottom threshold appended last)."""
    d = counts.numel()
    k = min(k_bar, d)
    top = torch.topk(counts.double(), k)
    below = torch.topk(counts.double(), k + 1).values[-1].item() if d > k else 0.0
    slack = 1.0
    if not math.isinf(eps0):
        m = min(DELTA0_COUNTS, k_bar, max(d - k_bar, 1))
        slack = MOVE_SLACK + math.log(m / delta0) / _half(eps0)
    scores = torch.cat([top.values, torch.tensor([below + slack], dtype=torch.float64)])
    return top.indices, scores


def release_probabilities(
    counts: torch.Tensor, eps0: float, delta0: float, k_bar: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact output distribution (Gumbel-max = softmax of scores / scale): (token ids, P[token]..., P[bottom])."""
    ids, scores = candidates(counts, eps0, delta0, k_bar)
    b = noise_scale(eps0)
    if b == 0:
        p = torch.zeros_like(scores)
        p[int(torch.argmax(scores))] = 1.0
        return ids, p
    return ids, torch.softmax(scores / b, dim=0)


def release(counts: torch.Tensor, eps0: float, delta0: float, k_bar: int, generator) -> int | None:
    """One LimitedDomain release: a token id, or None (bottom: the votes did not agree enough).

    ``generator``: a numpy generator (128-bit seeded, what DP-OPT uses) or a CPU ``torch.Generator``."""
    from ppt.rng import uniforms

    if not (eps0 > 0) or not (0 < delta0 < 1) or k_bar < 1:
        raise ValueError("LimitedDomain needs eps0 > 0, 0 < delta0 < 1 and k_bar >= 1")
    ids, scores = candidates(counts, eps0, delta0, k_bar)
    b = noise_scale(eps0)
    if b > 0:
        u = torch.from_numpy(uniforms(generator, tuple(scores.shape))).clamp_(1e-300, 1.0)
        scores = scores - b * torch.log(-torch.log(u))  # + Gumbel(scale b)
    j = int(torch.argmax(scores))
    return None if j == len(ids) else int(ids[j])
