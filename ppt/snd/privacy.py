"""What an ``snd`` stamp may claim, and only that.

Proven: each released token row is eta * d_chi private: for tokens t, t' and any set S of rows,
Pr[x~(t) in S] <= exp(eta * ||E[t] - E[t']||_2) * Pr[x~(t') in S], with E the model's input-embedding
table (the unit of distance); the clip is post-processing. Every vocabulary row lies in the ball of
radius C (the clip bound is the largest row norm), so ||E[t] - E[t']|| <= 2C and the per-token epsilon
is at most 2 * eta * C. A text's rows compose: two texts of the same length n differing in k positions
are within exp(eta * sum of the k distances). The number of tokens is sent in the clear.

What it covers: the noisy rows the server receives, and functions of them alone (``snd_noisy``). The
denoiser is NOT post-processing: it reads the client's noise z beside the noisy rows x~, and x~ - z is the
clean rows, so ``snd_denoised`` (like ``snd_clean`` and the raw text field the record keeps) is a function of
the raw text: local only, and ``ppt query`` refuses to send it. Floating point: the sum and the clip are
float64 and the release is snapped to one grid coarser than every float32 ulp in the clip ball
(:func:`ppt.samplers.dchi.privatize`), so the float32 low-bit channel of x + fl(z) (an output finer than ulp(x)
impossible from x, possible from an x' of smaller magnitude) is closed; the stamp names the grid.
"""

from __future__ import annotations

import math
from typing import Any

NOTION = "eta * d_chi metric LDP per token (multivariate Laplace: one Gamma(d, 1/eta) radius, uniform direction)"


def snd_privacy(eta: float, bound: float, dim: int, model: dict[str, Any]) -> dict[str, Any]:
    """The stamp's privacy description for noise ``eta`` over ``model``'s input-embedding space."""
    from ppt.samplers.dchi import snap_step

    unit = f"L2 distance between token vectors in the input-embedding space of {model.get('id')} (d={dim})"
    if math.isinf(eta):
        return {
            "notion": "none: clean token embeddings were released (eta = inf)",
            "eta": "inf",
            "unit": unit,
            "protected": False,
        }
    return {
        "notion": NOTION,
        "eta": float(eta),
        "unit": unit,
        "clip_bound": float(bound),
        "eps_per_token_at_most": 2.0 * float(eta) * float(bound),
        "eps_per_token_bound_from": "diameter 2C of the clip ball, C = the largest token-embedding norm",
        "composition": "a text's rows compose: eta * (sum over positions of the token distances)",
        "not_hidden": ["the number of tokens"],
        "arithmetic": (
            f"float64 sum and clip, the release snapped to multiples of {snap_step(float(bound)):.3g} (float32's ulp at "
            "the clip radius, coarser than every float32 ulp in the ball): no low-bit channel; the bound holds up to "
            "float64 rounding at a grid midpoint"
        ),
        "protected": True,
    }


def snd_fields(privacy: dict[str, Any], prefix: str, emit: list[str], fmt: str = "jsonl") -> dict[str, Any]:
    """``privacy`` with the fields it covers and those it does not: only the noisy rows (what the server
    received, and functions of them alone) are covered; the denoised and clean vectors and the record's raw
    text field are functions of the raw text, local only (``ppt query`` refuses to send them)."""
    if fmt != "jsonl":
        return {
            **privacy,
            "covers": ["the noisy vectors in the vector files"],
            "local_only": ["the denoised and clean vector files", "the record's text field (raw)"],
        }
    covered = [prefix + k for k in emit if k == "noisy"] if privacy.get("protected") else []
    local = [prefix + k for k in emit if k != "noisy" or not privacy.get("protected")]
    return {**privacy, "covers": covered, "local_only": local, "text_field": "raw (local only)"}
