"""Private selection among candidate instructions on the held-out private split.

Correct-counts are monotone with sensitivity 1 (adding a validation record raises some counts by at most
one, lowers none), so report-noisy-max with Gumbel(1/eps) noise is eps-DP (the exponential mechanism for
monotone utilities). Only the chosen index is released; the counts are not.
"""

from __future__ import annotations

import math

import torch


def select(correct: torch.Tensor, eps: float, generator) -> int:
    """The index of one candidate: argmax of counts + Gumbel(1/eps) (exact argmax when eps is infinite).

    ``generator``: a numpy generator (:func:`ppt.rng.record_generator`, 128-bit seeded; what DP-OPT uses)
    or a CPU ``torch.Generator``."""
    from ppt.rng import uniforms

    scores = correct.double()
    if not math.isinf(eps):
        u = torch.from_numpy(uniforms(generator, tuple(scores.shape))).clamp_(1e-300, 1.0)
        scores = scores - torch.log(-torch.log(u)) / eps
    return int(torch.argmax(scores))
